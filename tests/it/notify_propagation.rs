//! How a delivery reaches replicas and the AOF: each drain of a set that
//! delivers (`XSET.NOTIFY`) is propagated as one internal `XSET.DELIVERED`
//! (read from the raw replication stream), which a replica, a replica's
//! own AOF and an AOF replay apply to the same stream and set, trim
//! included; a client cannot send it; an AOF written in the earlier form
//! (`XADD` per member, `XSET.REM`, `XTRIM`) still loads.

use crate::harness::*;
use redis::{Connection, Value};
use std::time::Duration;

/// Every propagated command up to the marker `n` (written through `c`).
fn until_marker(c: &mut Connection, r: &mut ReplStream, n: u32) -> Vec<Vec<String>> {
    q::<String>(c, c!["SET", "marker", n.to_string()]);
    let mut out = Vec::new();
    loop {
        let words = r.next();
        if words == ["SET", "marker", &n.to_string()] {
            return out;
        }
        out.push(words);
    }
}

/// `XRANGE stream - +` as (ID, fields).
fn xrange(c: &mut Connection, stream: &str) -> Vec<(String, Vec<String>)> {
    let raw: Vec<(String, Vec<(String, String)>)> = q(c, c!["XRANGE", stream, "-", "+"]);
    raw.into_iter()
        .map(|(id, fields)| (id, fields.into_iter().flat_map(|(f, v)| [f, v]).collect()))
        .collect()
}

/// `ms-seq` as numbers.
fn id_of(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').expect("ms-seq");
    (ms.parse().expect("ms"), seq.parse().expect("seq"))
}

/// What a stream's `XINFO STREAM` says of its length and IDs.
fn stream_state(c: &mut Connection, stream: &str) -> Vec<(String, String)> {
    let info: Value = q(c, c!["XINFO", "STREAM", stream]);
    let items: Vec<Value> = match info {
        Value::Array(items) => items,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        other => panic!("{other:?}"),
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    };
    let wanted = [
        "length",
        "last-generated-id",
        "max-deleted-entry-id",
        "entries-added",
        "recorded-first-entry-id",
    ];
    items
        .chunks(2)
        .filter_map(|kv| {
            let name = text(&kv[0]);
            wanted
                .contains(&name.as_str())
                .then(|| (name, text(&kv[1])))
        })
        .collect()
}

/// Adds `members` to `key`, each due at `at_ms`, in one `XSET.ADDEX`.
fn add_due_at(c: &mut Connection, key: &str, members: &[String], at_ms: u64) {
    let at = at_ms.to_string();
    let count = members.len().to_string();
    let mut args: Vec<&[u8]> = vec![b"XSET.ADDEX", key.as_bytes(), b"PXAT", b"MEMBERS"];
    args.push(count.as_bytes());
    for m in members {
        args.extend([m.as_bytes(), at.as_bytes()]);
    }
    q::<Value>(c, &args);
}

/// The one `XSET.DELIVERED` in `commands`, which hold no `XADD`, `XTRIM`
/// or `XSET.REM`.
fn the_one_delivered(commands: &[Vec<String>]) -> Vec<String> {
    for w in commands {
        assert!(
            !["XADD", "XTRIM", "XSET.REM"].contains(&w[0].as_str()),
            "{w:?} in {commands:?}"
        );
    }
    let delivered: Vec<&Vec<String>> = commands
        .iter()
        .filter(|w| w[0] == "XSET.DELIVERED")
        .collect();
    assert_eq!(delivered.len(), 1, "{commands:?}");
    delivered[0].clone()
}

#[test]
fn a_drain_is_propagated_as_one_xset_delivered() {
    let s = replication_primary();
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    until_marker(&mut c, &mut r, 1);
    let now = server_ms(&mut c);
    let (early, late) = (now + 40, now + 60);
    let first: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    add_due_at(&mut c, "k", &first, early);
    add_due_at(&mut c, "k", &["d".to_string()], late);
    until_marker(&mut c, &mut r, 2);
    wait_past(&mut c, late);
    // A write meets the due members: one drain, then the add.
    q::<i64>(&mut c, c!["XSET.ADD", "k", "stays", "3600"]);
    let commands = until_marker(&mut c, &mut r, 3);
    let delivered = the_one_delivered(&commands);
    let entries = xrange(&mut c, "s");
    assert_eq!(entries.len(), 4);
    let want: Vec<String> = ["XSET.DELIVERED", "k", "s", entries[0].0.as_str(), "-1"]
        .map(String::from)
        .into_iter()
        .chain(
            entries
                .iter()
                .flat_map(|(_, f)| [f[3].clone(), f[5].clone()]),
        )
        .collect();
    assert_eq!(delivered, want);
    // Consecutive IDs from the first, the fields as the command names them.
    let (ms, seq) = id_of(&entries[0].0);
    for (i, (id, fields)) in entries.iter().enumerate() {
        assert_eq!(id_of(id), (ms, seq + i as u64));
        assert_eq!(fields[..2], ["key", "k"]);
        assert_eq!(
            (fields[2].as_str(), fields[4].as_str()),
            ("member", "deadline")
        );
    }
    let mut members: Vec<&str> = entries.iter().map(|(_, f)| f[3].as_str()).collect();
    members.sort_unstable();
    assert_eq!(members, ["a", "b", "c", "d"]);
    assert_eq!(
        commands.last().map(|w| w[0].as_str()),
        Some("EXEC"),
        "{commands:?}"
    );

    // With MAXLEN, the length the approximate trim left.
    q::<String>(
        &mut c,
        c!["XSET.NOTIFY", "t", "STREAM", "u", "MAXLEN", "10"],
    );
    let now = server_ms(&mut c);
    let many: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    add_due_at(&mut c, "t", &many, now + 30);
    until_marker(&mut c, &mut r, 4);
    wait_past(&mut c, now + 30);
    q::<i64>(&mut c, c!["XSET.ADD", "t", "stays", "3600"]);
    let delivered = the_one_delivered(&until_marker(&mut c, &mut r, 5));
    let len: usize = q(&mut c, c!["XLEN", "u"]);
    assert!((10..300).contains(&len), "{len}");
    assert_eq!(delivered[4], len.to_string());
    assert_eq!(delivered.len(), 5 + 2 * 300);
}

#[test]
fn a_client_cannot_send_xset_delivered() {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "m", "3600"]);
    let before = (snapshot(&mut c, "k"), xrange(&mut c, "s"));
    let form = c!["XSET.DELIVERED", "k", "s", "1-1", "-1", "m", "1"];
    let refused = "ERR XSET.DELIVERED is internal";
    assert!(
        err(&mut c, form).starts_with(refused),
        "{}",
        err(&mut c, form)
    );
    // Refused before its arguments are read.
    let bad = c!["XSET.DELIVERED", "k", "k", "0-0", "x", "m", "y"];
    assert!(err(&mut c, bad).starts_with(refused));
    // In a transaction, and from a script.
    q::<String>(&mut c, c!["MULTI"]);
    q::<String>(&mut c, form);
    let exec = format!("{:?}", try_q::<Value>(&mut c, c!["EXEC"]));
    assert!(exec.contains("XSET.DELIVERED is internal"), "{exec}");
    let script = "return redis.call('XSET.DELIVERED', KEYS[1], KEYS[2], '1-1', '-1', 'm', '1')";
    let e = err(&mut c, c!["EVAL", script, "2", "k", "s"]);
    assert!(e.contains("XSET.DELIVERED is internal"), "{e}");
    assert_eq!((snapshot(&mut c, "k"), xrange(&mut c, "s")), before);
    assert_eq!(q::<i64>(&mut c, c!["XLEN", "s"]), 0);
    // Registered all the same, with both keys (cluster routing, ACL).
    let mut getkeys: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS"];
    getkeys.extend_from_slice(form);
    let keys: Vec<String> = q(&mut c, &getkeys);
    assert_eq!(keys, ["k", "s"]);
    let docs = format!(
        "{:?}",
        q::<Value>(&mut c, c!["COMMAND", "DOCS", "xset.delivered"])
    );
    assert!(docs.contains("internal"), "{docs}");
}

/// `args` as a RESP command, as an AOF holds it.
fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

#[test]
fn an_aof_of_the_earlier_form_and_of_this_one_loads() {
    let dir = scratch("old-aof");
    // Deadlines far off, as when the primary wrote them (a past one would
    // be its own removal).
    let at = |n: u64| (32_503_680_000_000 + n).to_string();
    let (a, b, d, e) = (at(0), at(100), at(200), at(300));
    let mut aof = Vec::new();
    let mut push = |words: &[&str]| aof.extend(resp(words));
    push(&["SELECT", "0"]);
    push(&["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "2"]);
    push(&["XADD", "s", "MAXLEN", "0", "1700000000000-0", "key", "k"]);
    push(&[
        "XSET.ADDEX",
        "k",
        "PXAT",
        "MEMBERS",
        "5",
        "a",
        &a,
        "b",
        &b,
        "c",
        &b,
        "d",
        &d,
        "e",
        &e,
    ]);
    // The earlier form of a drain: an XADD per member, the removal, the
    // exact trim.
    push(&["MULTI"]);
    for (i, (m, at)) in [("b", &b), ("c", &b), ("d", &d)].into_iter().enumerate() {
        let id = format!("1700000000500-{i}");
        push(&["XADD", "s", &id, "key", "k", "member", m, "deadline", at]);
    }
    push(&["XSET.REM", "k", "b", "c", "d"]);
    push(&["XTRIM", "s", "MAXLEN", "2"]);
    push(&["EXEC"]);
    // This form: the entry, the trim to 2 and the removal in one command.
    push(&["MULTI"]);
    push(&["XSET.DELIVERED", "k", "s", "1700000000600-0", "2", "e", &e]);
    push(&["EXEC"]);
    std::fs::write(dir.join("appendonly.aof"), &aof).expect("write the AOF");
    let s = start_in(&dir, &["--appendonly", "yes"]);
    let mut c = s.conn();
    let members: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "k"]);
    assert_eq!(members, ["a"]);
    let entries = xrange(&mut c, "s");
    let got: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|(id, f)| (id.as_str(), f[3].as_str(), f[5].as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("1700000000500-2", "d", d.as_str()),
            ("1700000000600-0", "e", e.as_str()),
        ]
    );
    let state = stream_state(&mut c, "s");
    assert!(
        state.contains(&("entries-added".into(), "5".into())),
        "{state:?}"
    );
    assert!(
        state.contains(&("last-generated-id".into(), "1700000000600-0".into())),
        "{state:?}"
    );
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replica_and_its_own_aof_end_with_the_primarys_stream_and_set() {
    let p = Server::start(&[
        "--repl-diskless-sync",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let dir = scratch("replica-aof");
    let r = start_in(&dir, &["--appendonly", "yes"]);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    let port = p.port.to_string();
    let _: String = q(&mut rc, c!["REPLICAOF", "127.0.0.1", port.as_str()]);
    wait_link_up(&mut pc, &mut rc);
    wait_rewrite_done(&mut rc);
    q::<String>(
        &mut pc,
        c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "150"],
    );
    q::<String>(&mut pc, c!["XSET.NOTIFY", "j", "STREAM", "s"]);
    let now = server_ms(&mut pc);
    for (key, n) in [("k", 1500), ("j", 500)] {
        for chunk in 0..n / 250 {
            let members: Vec<String> = (0..250).map(|i| format!("{key}{chunk}-{i}")).collect();
            add_due_at(&mut pc, key, &members, now + 100 + chunk as u64 * 40);
        }
    }
    q::<i64>(&mut pc, c!["XSET.ADD", "k", "stays", "3600"]);
    wait_until("every member delivered", Duration::from_secs(20), || {
        info_i64(&mut pc, "xset", "xset_delivered") == 2000
    });
    wait_replicated(&mut pc);
    let len: usize = q(&mut pc, c!["XLEN", "s"]);
    assert!(len < 2000, "MAXLEN trimmed: {len}");
    let state = |c: &mut Connection| {
        (
            xrange(c, "s"),
            stream_state(c, "s"),
            snapshot(c, "k"),
            snapshot(c, "j"),
            q::<i64>(c, c!["EXISTS", "j"]),
        )
    };
    let digest = |c: &mut Connection| q::<String>(c, c!["DEBUG", "DIGEST"]);
    let primary = state(&mut pc);
    assert_eq!(state(&mut rc), primary);
    assert_eq!(digest(&mut rc), digest(&mut pc));
    assert_eq!(info_i64(&mut rc, "xset", "xset_delivered"), 0);
    // The replica's own AOF holds what it applied: restarted alone from
    // it, it has the same stream and sets.
    drop(rc);
    drop(r);
    let r = start_in(&dir, &["--appendonly", "yes"]);
    let mut rc = r.conn();
    assert_eq!(state(&mut rc), primary);
    assert_eq!(digest(&mut rc), digest(&mut pc));
    drop((rc, r));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replica_emits_the_primarys_events_for_a_drain() {
    let (p, r, mut pc, mut rc) = primary_and_replica();
    for c in [&mut pc, &mut rc] {
        q::<String>(c, c!["CONFIG", "SET", "notify-keyspace-events", "Kgtd"]);
    }
    q::<String>(
        &mut pc,
        c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "5"],
    );
    let now = server_ms(&mut pc);
    let members: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    add_due_at(&mut pc, "k", &members, now + 30);
    wait_replicated(&mut pc);
    let (mut ps_p, mut ps_r) = (p.conn(), r.conn());
    let (mut sub_p, mut sub_r) = (ps_p.as_pubsub(), ps_r.as_pubsub());
    listen(&mut sub_p, "__keyspace@0__:*");
    listen(&mut sub_r, "__keyspace@0__:*");
    wait_past(&mut pc, now + 30);
    q::<i64>(&mut pc, c!["XSET.REM", "k", "none"]);
    wait_replicated(&mut pc);
    let events = |ps: &mut redis::PubSub, c: &mut Connection| -> Vec<String> {
        drain(ps, c)
            .into_iter()
            .map(|(ch, p)| format!("{ch} {}", String::from_utf8_lossy(&p)))
            .collect()
    };
    let ours = events(&mut sub_p, &mut pc);
    assert_eq!(
        ours,
        [
            "__keyspace@0__:s xadd",
            "__keyspace@0__:s xtrim",
            "__keyspace@0__:k xset.expired",
        ]
    );
    assert_eq!(events(&mut sub_r, &mut rc), ours);
    drop((p, r));
}
