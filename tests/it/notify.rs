//! `XSET.NOTIFY`: members that expire are appended to a stream exactly
//! once, with their removal, under active and lazy expiry, across
//! replication, restarts, `kill -9` and failover; explicit removals are
//! not delivered; the setting travels with the set.

use crate::harness::*;
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// An entry of an `XREADGROUP` reply: its ID and fields.
type StreamItem = (String, Vec<(String, String)>);

/// One stream entry as xset writes it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    id: String,
    key: String,
    member: String,
    deadline: u64,
}

/// Every entry of `stream`, in ID order (`XRANGE - +`).
fn entries(c: &mut Connection, stream: &str) -> Vec<Entry> {
    let raw: Vec<(String, Vec<(String, String)>)> = q(c, c!["XRANGE", stream, "-", "+"]);
    raw.into_iter()
        .map(|(id, fields)| {
            let get = |name: &str| {
                fields
                    .iter()
                    .find(|(f, _)| f == name)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| panic!("entry {id} has no {name}: {fields:?}"))
            };
            assert_eq!(fields.len(), 3, "entry {id}: {fields:?}");
            Entry {
                key: get("key"),
                member: get("member"),
                deadline: get("deadline").parse().expect("a deadline"),
                id: id.clone(),
            }
        })
        .collect()
}

/// The delivered members of `entries`, each once: fails on a duplicate.
fn once(entries: &[Entry]) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for e in entries {
        assert!(
            seen.insert(e.member.clone(), e.deadline).is_none(),
            "{} delivered twice",
            e.member
        );
    }
    seen
}

fn delivered(c: &mut Connection) -> i64 {
    info_i64(c, "xset", "xset_delivered")
}

fn xlen(c: &mut Connection, stream: &str) -> usize {
    q(c, c!["XLEN", stream])
}

/// Members `m<i>` for `i < n`, member `i` due at `first_ms + i * span_ms /
/// n`: spread evenly over `span_ms`.
fn due_over(n: usize, first_ms: u64, span_ms: u64) -> BTreeMap<String, u64> {
    named_due_over("m", n, first_ms, span_ms)
}

/// [`due_over`] with members named `<prefix><i>`.
fn named_due_over(prefix: &str, n: usize, first_ms: u64, span_ms: u64) -> BTreeMap<String, u64> {
    (0..n)
        .map(|i| {
            (
                format!("{prefix}{i}"),
                first_ms + i as u64 * span_ms / n as u64,
            )
        })
        .collect()
}

/// Adds `members` (member, absolute deadline) to `key`, 500 a command.
fn add_all(c: &mut Connection, key: &str, members: &BTreeMap<String, u64>) {
    for chunk in members.iter().collect::<Vec<_>>().chunks(500) {
        let mut args: Vec<Vec<u8>> = vec![
            b"XSET.ADDEX".to_vec(),
            key.as_bytes().to_vec(),
            b"PXAT".to_vec(),
            b"MEMBERS".to_vec(),
            chunk.len().to_string().into_bytes(),
        ];
        for (m, at) in chunk {
            args.push(m.as_bytes().to_vec());
            args.push(at.to_string().into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        q::<Value>(c, &refs);
    }
}

/// [`due_over`] added to `key`.
fn add_due(
    c: &mut Connection,
    key: &str,
    n: usize,
    first_ms: u64,
    span_ms: u64,
) -> BTreeMap<String, u64> {
    let members = due_over(n, first_ms, span_ms);
    add_all(c, key, &members);
    members
}

#[test]
fn a_consumer_group_gets_every_expired_member_once_from_the_active_cycle() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    assert_eq!(
        q::<String>(
            &mut c,
            c!["XSET.NOTIFY", "leases", "STREAM", "leases:expired"]
        ),
        "OK"
    );
    assert_eq!(
        q::<String>(
            &mut c,
            c!["XGROUP", "CREATE", "leases:expired", "workers", "$"]
        ),
        "OK"
    );
    let now = server_ms(&mut c);
    // 2000 members due over 400 ms, 500 that stay.
    let want = add_due(&mut c, "leases", 2000, now + 100, 400);
    let far: Vec<String> = (0..500).map(|i| format!("far{i}")).collect();
    for m in &far {
        q::<i64>(&mut c, c!["XSET.ADD", "leases", m.as_str(), "3600"]);
    }
    // Another set, without a delivery, expires alongside and adds nothing.
    add_due(&mut c, "plain", 300, now + 100, 300);
    let mut got: Vec<(String, String)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < want.len() {
        assert!(Instant::now() < deadline, "only {} delivered", got.len());
        let reply: Value = q(
            &mut c,
            c![
                "XREADGROUP",
                "GROUP",
                "workers",
                "w1",
                "COUNT",
                "300",
                "BLOCK",
                "200",
                "STREAMS",
                "leases:expired",
                ">"
            ],
        );
        let Value::Array(streams) = reply else {
            continue;
        };
        let batch: Vec<(String, Vec<StreamItem>)> =
            redis::from_redis_value(Value::Array(streams)).expect("an XREADGROUP reply");
        for (_, items) in batch {
            for (id, fields) in items {
                let member = fields
                    .iter()
                    .find(|(f, _)| f == "member")
                    .map(|(_, v)| v.clone())
                    .expect("a member field");
                q::<i64>(&mut c, c!["XACK", "leases:expired", "workers", id.as_str()]);
                got.push((id, member));
            }
        }
    }
    let members: BTreeSet<&String> = got.iter().map(|(_, m)| m).collect();
    assert_eq!(members.len(), got.len(), "no member delivered twice");
    assert_eq!(members, want.keys().collect::<BTreeSet<_>>());
    // The entries hold the set's name and each member's exact deadline.
    let all = entries(&mut c, "leases:expired");
    assert_eq!(all.len(), want.len());
    assert!(all.iter().all(|e| e.key == "leases"));
    assert_eq!(once(&all), want);
    // Nothing more comes; the far members stay; the plain set added nothing.
    let more: Value = q(
        &mut c,
        c![
            "XREADGROUP",
            "GROUP",
            "workers",
            "w1",
            "BLOCK",
            "300",
            "STREAMS",
            "leases:expired",
            ">"
        ],
    );
    assert_eq!(more, Value::Nil);
    assert_eq!(q::<usize>(&mut c, c!["XSET.CARD", "leases"]), far.len());
    assert_eq!(delivered(&mut c), want.len() as i64);
    wait_until("the plain set to expire", Duration::from_secs(10), || {
        q::<i64>(&mut c, c!["EXISTS", "plain"]) == 0
    });
    assert_eq!(delivered(&mut c), want.len() as i64);
}

#[test]
fn writes_deliver_what_they_reclaim_and_reads_only_hide() {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    let now = server_ms(&mut c);
    // More than one write reclaims (1024 at most each).
    let want = add_due(&mut c, "k", 2500, now + 50, 0);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "stays", "3600"]);
    wait_past(&mut c, now + 50);
    // Reads hide due members and deliver nothing.
    assert_eq!(q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "k"]), ["stays"]);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "m1"]), 0);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    assert_eq!(xlen(&mut c, "s"), 0);
    // Each write reclaims up to 1024 and delivers them, in deadline order.
    let mut lens = Vec::new();
    for _ in 0..3 {
        q::<i64>(&mut c, c!["XSET.ADD", "k", "stays", "3600"]);
        lens.push(xlen(&mut c, "s"));
    }
    assert_eq!(lens, [1024, 2048, 2500]);
    let all = entries(&mut c, "s");
    assert_eq!(once(&all), want);
    assert_eq!(info_i64(&mut c, "xset", "xset_expired_members_lazy"), 2500);
    assert_eq!(delivered(&mut c), 2500);
}

#[test]
fn explicit_removals_are_not_delivered() {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    q::<i64>(
        &mut c,
        c![
            "XSET.ADD", "k", "a", "100", "b", "200", "c", "300", "d", "400", "e", "500"
        ],
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.REM", "k", "a"]), 1);
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.POP", "k", "1", "SOONEST"]),
        ["b"]
    );
    // MAXLEN trims the soonest; a past time removes; EXPIRE 0 removes.
    q::<Value>(
        &mut c,
        c!["XSET.ADDEX", "k", "MAXLEN", "3", "MEMBERS", "1", "f", "600"],
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 3);
    q::<Value>(
        &mut c,
        c!["XSET.ADDEX", "k", "PXAT", "MEMBERS", "1", "d", "1000"],
    );
    q::<i64>(&mut c, c!["XSET.EXPIRE", "k", "0", "e"]);
    assert_eq!(q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "k"]), ["f"]);
    // A STORE overwrites the whole key, its delivery too.
    q::<i64>(&mut c, c!["XSET.ADD", "other", "z", "100"]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.UNIONSTORE", "k", "1", "other"]),
        1
    );
    assert_eq!(q::<Value>(&mut c, c!["XSET.NOTIFY", "k"]), Value::Nil);
    assert_eq!(xlen(&mut c, "s"), 0);
    assert_eq!(delivered(&mut c), 0);
    // A set emptied by explicit removals stays while it has a delivery.
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    assert_eq!(q::<i64>(&mut c, c!["XSET.REM", "k", "z"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 1);
    assert_eq!(q::<String>(&mut c, c!["TYPE", "k"]), "xset-type");
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 0);
    assert_eq!(xlen(&mut c, "s"), 0);
}

#[test]
fn the_setting_and_an_empty_set_that_has_one_survive_every_move() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    // On a missing key: an empty set, and an empty stream.
    q::<String>(
        &mut c,
        c!["XSET.NOTIFY", "e", "STREAM", "es", "MAXLEN", "~", "10"],
    );
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "e", "es"]), 2);
    assert_eq!(q::<String>(&mut c, c!["TYPE", "es"]), "stream");
    assert_eq!(xlen(&mut c, "es"), 0);
    q::<i64>(&mut c, c!["XSET.ADD", "f", "m", "3600"]);
    q::<String>(&mut c, c!["XSET.NOTIFY", "f", "STREAM", "fs"]);
    let notify = |c: &mut Connection, k: &str| q::<Option<String>>(c, c!["XSET.NOTIFY", k]);
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    assert_eq!(notify(&mut c, "e").as_deref(), Some("es"));
    assert_eq!(notify(&mut c, "f").as_deref(), Some("fs"));
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "f"]), 1);
    // DUMP/RESTORE, COPY, RENAME, MOVE.
    let dump: Vec<u8> = q(&mut c, c!["DUMP", "e"]);
    q::<String>(
        &mut c,
        c![b"RESTORE".as_slice(), b"e2", b"0", dump.as_slice()],
    );
    assert_eq!(notify(&mut c, "e2").as_deref(), Some("es"));
    assert_eq!(q::<i64>(&mut c, c!["COPY", "f", "f2"]), 1);
    assert_eq!(notify(&mut c, "f2").as_deref(), Some("fs"));
    q::<String>(&mut c, c!["RENAME", "f2", "f3"]);
    assert_eq!(notify(&mut c, "f3").as_deref(), Some("fs"));
    assert_eq!(q::<i64>(&mut c, c!["MOVE", "e2", "1"]), 1);
    q::<String>(&mut c, c!["SELECT", "1"]);
    assert_eq!(notify(&mut c, "e2").as_deref(), Some("es"));
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "e2"]), 0);
    q::<String>(&mut c, c!["SELECT", "0"]);
    // The digest sees the setting.
    let with: Vec<String> = q(&mut c, c!["DEBUG", "DIGEST-VALUE", "f"]);
    q::<String>(&mut c, c!["XSET.NOTIFY", "f", "OFF"]);
    let without: Vec<String> = q(&mut c, c!["DEBUG", "DIGEST-VALUE", "f"]);
    assert_ne!(with, without);
    // OFF keeps a set with members, deletes an empty one; DEL deletes.
    assert_eq!(notify(&mut c, "f"), None);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "f"]), 1);
    q::<String>(&mut c, c!["XSET.NOTIFY", "e", "OFF"]);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "e"]), 0);
    assert_eq!(q::<i64>(&mut c, c!["DEL", "f3"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "f3"]), 0);
    // Changing the setting and asking on a missing key.
    q::<String>(
        &mut c,
        c!["XSET.NOTIFY", "f", "STREAM", "fs", "MAXLEN", "5"],
    );
    q::<String>(&mut c, c!["XSET.NOTIFY", "f", "STREAM", "gs"]);
    assert_eq!(notify(&mut c, "f").as_deref(), Some("gs"));
    assert_eq!(notify(&mut c, "nothing"), None);
    assert_eq!(
        q::<String>(&mut c, c!["XSET.NOTIFY", "nothing", "OFF"]),
        "OK"
    );
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "nothing"]), 0);
}

#[test]
fn the_setting_survives_an_aof_rewrite_and_reload() {
    let s = Server::start(&["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]);
    let mut c = s.conn();
    q::<String>(
        &mut c,
        c!["XSET.NOTIFY", "e", "STREAM", "es", "MAXLEN", "7"],
    );
    q::<i64>(&mut c, c!["XSET.ADD", "f", "m", "3600"]);
    q::<String>(&mut c, c!["XSET.NOTIFY", "f", "STREAM", "fs"]);
    let before = |c: &mut Connection, k: &str| q::<Vec<String>>(c, c!["DEBUG", "DIGEST-VALUE", k]);
    let (e, f) = (before(&mut c, "e"), before(&mut c, "f"));
    q::<String>(&mut c, c!["BGREWRITEAOF"]);
    wait_rewrite_done(&mut c);
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "LOADAOF"]), "OK");
    assert_eq!(before(&mut c, "e"), e);
    assert_eq!(before(&mut c, "f"), f);
    assert_eq!(
        q::<Option<String>>(&mut c, c!["XSET.NOTIFY", "e"]).as_deref(),
        Some("es")
    );
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "e", "es", "fs"]), 3);
}

#[test]
fn bad_input_changes_nothing() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "m", "100"]);
    q::<String>(&mut c, c!["SET", "str", "x"]);
    for (args, want) in [
        (
            c!["XSET.NOTIFY", "k", "STREAM", "k"],
            "ERR the STREAM must be another key",
        ),
        (
            c!["XSET.NOTIFY", "k", "STREEM", "s"],
            "ERR syntax error: unknown option 'STREEM'",
        ),
        (
            c!["XSET.NOTIFY", "k", "STREAM"],
            "ERR syntax error: value missing after 'STREAM'",
        ),
        (
            c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN"],
            "ERR syntax error: value missing after 'MAXLEN'",
        ),
        (
            c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "0"],
            "ERR MAXLEN must be a positive integer",
        ),
        (
            c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "x"],
            "ERR value is not an integer",
        ),
        (
            c![
                "XSET.NOTIFY",
                "k",
                "STREAM",
                "s",
                "MAXLEN",
                "1",
                "MAXLEN",
                "2"
            ],
            "ERR syntax error: 'MAXLEN' given twice",
        ),
        (
            c!["XSET.NOTIFY", "k", "STREAM", "s", "LIMIT", "2"],
            "ERR syntax error: unknown option 'LIMIT'",
        ),
        (
            c!["XSET.NOTIFY", "k", "OFF", "now"],
            "ERR syntax error: unknown option 'now'",
        ),
        (c!["XSET.NOTIFY", "k", "STREAM", "str"], "WRONGTYPE"),
        (c!["XSET.NOTIFY", "str", "STREAM", "s"], "WRONGTYPE"),
        (c!["XSET.NOTIFY", "str"], "WRONGTYPE"),
    ] {
        let e = err(&mut c, args);
        assert!(e.starts_with(want), "{args:?}: {e}");
    }
    assert_eq!(q::<Value>(&mut c, c!["XSET.NOTIFY", "k"]), Value::Nil);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "s"]), 0);
}

#[test]
fn a_stream_of_another_type_counts_and_a_missing_one_defers() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    // Another type: the members still expire, the failure is counted and
    // logged once.
    q::<i64>(&mut c, c!["DEL", "s"]);
    q::<String>(&mut c, c!["SET", "s", "not a stream"]);
    let now = server_ms(&mut c);
    add_due(&mut c, "k", 10, now + 50, 0);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "stays", "3600"]);
    wait_until(
        "the failures to be counted",
        Duration::from_secs(10),
        || info_i64(&mut c, "xset", "xset_delivery_failures") == 10,
    );
    let now = server_ms(&mut c);
    add_due(&mut c, "k", 10, now + 50, 0);
    wait_until(
        "the second failures to be counted",
        Duration::from_secs(10),
        || info_i64(&mut c, "xset", "xset_delivery_failures") == 20,
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    assert_eq!(q::<String>(&mut c, c!["GET", "s"]), "not a stream");
    assert_eq!(
        s.log().matches("were not delivered").count(),
        1,
        "{}",
        s.log()
    );
    // Missing: due members wait, hidden, until the stream exists.
    q::<i64>(&mut c, c!["DEL", "s"]);
    let now = server_ms(&mut c);
    let want = add_due(&mut c, "k", 50, now + 50, 0);
    wait_until("a deferred reclaim", Duration::from_secs(10), || {
        info_i64(&mut c, "xset", "xset_delivery_deferred") > 0
    });
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "s"]), 0);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "m0"]), 0);
    q::<String>(&mut c, c!["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    wait_until("the deferred members", Duration::from_secs(10), || {
        xlen(&mut c, "s") == want.len()
    });
    assert_eq!(once(&entries(&mut c, "s")), want);
    assert_eq!(delivered(&mut c), 50);
}

#[test]
fn maxlen_trims_the_stream_about_as_xadd_does() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<String>(
        &mut c,
        c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "100"],
    );
    let now = server_ms(&mut c);
    add_due(&mut c, "k", 1000, now + 50, 0);
    wait_until("every member delivered", Duration::from_secs(10), || {
        delivered(&mut c) == 1000
    });
    // Whole nodes of 100 entries go, as with XADD MAXLEN ~ 100.
    let len = xlen(&mut c, "s");
    assert!((100..=200).contains(&len), "{len} entries");
    let all = entries(&mut c, "s");
    assert_eq!(all.last().map(|e| e.member.as_str()), Some("m999"));
}

/// A primary with active expiry on, its replica linked, both connected.
fn active_primary_and_replica() -> (Server, Server, Connection, Connection) {
    let p = Server::start(&[
        "--repl-diskless-sync",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let r = Server::start(&[]);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    let port = p.port.to_string();
    let _: String = q(&mut rc, c!["REPLICAOF", "127.0.0.1", port.as_str()]);
    wait_link_up(&mut pc, &mut rc);
    (p, r, pc, rc)
}

#[test]
fn a_replicas_stream_equals_the_primarys_entry_for_entry() {
    let (_p, _r, mut pc, mut rc) = active_primary_and_replica();
    q::<String>(
        &mut pc,
        c!["XSET.NOTIFY", "k", "STREAM", "s", "MAXLEN", "1500"],
    );
    let now = server_ms(&mut pc);
    let want = add_due(&mut pc, "k", 2000, now + 100, 500);
    q::<i64>(&mut pc, c!["XSET.ADD", "k", "stays", "3600"]);
    wait_until("every member delivered", Duration::from_secs(20), || {
        delivered(&mut pc) == want.len() as i64
    });
    wait_replicated(&mut pc);
    let ours = entries(&mut pc, "s");
    assert!(ours.len() < want.len(), "MAXLEN trimmed");
    assert_eq!(entries(&mut rc, "s"), ours);
    assert_eq!(snapshot(&mut rc, "k"), snapshot(&mut pc, "k"));
    let digest = |c: &mut Connection| q::<Vec<String>>(c, c!["DEBUG", "DIGEST-VALUE", "k", "s"]);
    assert_eq!(digest(&mut rc), digest(&mut pc));
    assert_eq!(delivered(&mut rc), 0, "a replica never delivers");
    // XSET.NOTIFY is a write command, even asked: a replica refuses it
    // (its digest above includes the setting).
    assert!(err(&mut rc, c!["XSET.NOTIFY", "k"]).starts_with("READONLY"));
}

#[test]
fn kill_9_with_appendfsync_always_loses_and_duplicates_nothing() {
    let dir = scratch("kill");
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let s = start_in(&dir, &aof);
    let mut c = s.conn();
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    let now = server_ms(&mut c);
    // 20000 members due over 2 s: the kill falls while they expire.
    let want = add_due(&mut c, "k", 20_000, now + 200, 2000);
    wait_until("some members delivered", Duration::from_secs(20), || {
        delivered(&mut c) >= 2000
    });
    drop(c);
    drop(s); // SIGKILL
    let s = start_in(&dir, &aof);
    let mut c = s.conn();
    assert!(
        q::<i64>(&mut c, c!["XLEN", "s"]) >= 2000,
        "the delivered entries are kept"
    );
    wait_until("every member delivered", Duration::from_secs(30), || {
        xlen(&mut c, "s") >= want.len() && q::<i64>(&mut c, c!["XSET.CARD", "k"]) == 0
    });
    let all = entries(&mut c, "s");
    assert_eq!(all.len(), want.len(), "no entry lost or duplicated");
    assert_eq!(once(&all), want);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn members_due_while_the_server_was_down_are_delivered_once_after_restart() {
    let dir = scratch("restart");
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    q::<String>(&mut c, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    q::<String>(&mut c, c!["CONFIG", "SET", "xset.active-expire", "no"]);
    let now = server_ms(&mut c);
    let first = add_due(&mut c, "k", 100, now + 20, 0);
    wait_past(&mut c, now + 20);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "stays", "3600"]);
    assert_eq!(xlen(&mut c, "s"), 100);
    let now = server_ms(&mut c);
    let later = named_due_over("later", 300, now + 300, 0);
    add_all(&mut c, "k", &later);
    drop(c);
    s.shutdown("SAVE");
    // The server is down while `later` falls due.
    let until = later.values().max().copied().unwrap_or_default();
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
        <= until
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    wait_until(
        "the members due while down",
        Duration::from_secs(10),
        || xlen(&mut c, "s") == 400,
    );
    let mut want = first;
    want.extend(later);
    assert_eq!(once(&entries(&mut c, "s")), want);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failover_during_expiry_delivers_each_member_once() {
    let (p, r, mut pc, mut rc) = active_primary_and_replica();
    q::<String>(&mut pc, c!["XSET.NOTIFY", "k", "STREAM", "s"]);
    let now = server_ms(&mut pc);
    let want = add_due(&mut pc, "k", 6000, now + 200, 1500);
    wait_until("some members delivered", Duration::from_secs(20), || {
        delivered(&mut pc) >= 500
    });
    // FAILOVER pauses writes, waits for the replica to catch up, and
    // swaps the roles.
    assert_eq!(q::<String>(&mut pc, c!["FAILOVER"]), "OK");
    wait_until(
        "the replica to be promoted",
        Duration::from_secs(20),
        || {
            q::<String>(&mut rc, c!["INFO", "replication"]).contains("role:master")
                && q::<String>(&mut pc, c!["INFO", "replication"]).contains("role:slave")
        },
    );
    wait_until("every member delivered", Duration::from_secs(30), || {
        xlen(&mut rc, "s") >= want.len()
    });
    let all = entries(&mut rc, "s");
    assert_eq!(all.len(), want.len(), "no entry lost or duplicated");
    assert_eq!(once(&all), want);
    let by_old = delivered(&mut pc);
    let by_new = delivered(&mut rc);
    assert!(by_old >= 500 && by_new > 0, "{by_old} then {by_new}");
    assert_eq!(
        by_old + by_new,
        want.len() as i64,
        "each member by one primary"
    );
    drop((p, r));
}

/// The node of `nodes` that serves `key`'s slot, from `CLUSTER SLOTS`.
fn owner_of(c: &mut Connection, nodes: &[Server], key: &str) -> usize {
    let slot: i64 = q(c, c!["CLUSTER", "KEYSLOT", key]);
    let slots: Vec<Value> = q(c, c!["CLUSTER", "SLOTS"]);
    for range in slots {
        let Value::Array(r) = range else { continue };
        let (Some(Value::Int(a)), Some(Value::Int(b)), Some(Value::Array(node))) =
            (r.first(), r.get(1), r.get(2))
        else {
            continue;
        };
        if (*a..=*b).contains(&slot)
            && let Some(Value::Int(port)) = node.get(1)
        {
            return nodes
                .iter()
                .position(|n| i64::from(n.port) == *port)
                .expect("a node of the cluster");
        }
    }
    panic!("no node serves slot {slot}");
}

#[test]
fn a_cluster_refuses_cross_slot_and_a_reshard_delivers_each_member_once() {
    let nodes = start_cluster(3, 0);
    let mut conns: Vec<Connection> = nodes.iter().map(Server::conn).collect();
    let (set, stream) = ("{t}set", "{t}s");
    let src = owner_of(&mut conns[0], &nodes, set);
    let dst = (src + 1) % nodes.len();
    // The stream must share the set's slot.
    let e = err(
        &mut conns[src],
        c!["XSET.NOTIFY", set, "STREAM", "elsewhere"],
    );
    assert!(e.starts_with("CROSSSLOT"), "{e}");
    assert_eq!(q::<i64>(&mut conns[src], c!["EXISTS", set]), 0);
    q::<String>(&mut conns[src], c!["XSET.NOTIFY", set, "STREAM", stream]);
    // Due before the reshard: delivered on the source.
    let now = server_ms(&mut conns[src]);
    let mut want = named_due_over("before", 200, now + 50, 200);
    add_all(&mut conns[src], set, &want);
    wait_until(
        "the first members delivered",
        Duration::from_secs(10),
        || xlen(&mut conns[src], stream) == 200,
    );
    // Due after: delivered on the target.
    let now = server_ms(&mut conns[src]);
    let after = named_due_over("after", 300, now + 1500, 300);
    add_all(&mut conns[src], set, &after);
    // Due while the set has moved and its stream has not: they wait on
    // the target until the stream arrives.
    let between = named_due_over("between", 50, now + 200, 0);
    add_all(&mut conns[src], set, &between);
    let slot: i64 = q(&mut conns[src], c!["CLUSTER", "KEYSLOT", set]);
    let slot = slot.to_string();
    let src_id: String = q(&mut conns[src], c!["CLUSTER", "MYID"]);
    let dst_id: String = q(&mut conns[dst], c!["CLUSTER", "MYID"]);
    let _: String = q(
        &mut conns[dst],
        c![
            "CLUSTER",
            "SETSLOT",
            slot.as_str(),
            "IMPORTING",
            src_id.as_str()
        ],
    );
    let _: String = q(
        &mut conns[src],
        c![
            "CLUSTER",
            "SETSLOT",
            slot.as_str(),
            "MIGRATING",
            dst_id.as_str()
        ],
    );
    let dst_port = nodes[dst].port.to_string();
    let migrate = |c: &mut Connection, key: &str| {
        let _: String = q(
            c,
            c![
                "MIGRATE",
                "127.0.0.1",
                dst_port.as_str(),
                "",
                "0",
                "5000",
                "KEYS",
                key
            ],
        );
    };
    migrate(&mut conns[src], set);
    wait_until(
        "a deferred reclaim on the target",
        Duration::from_secs(10),
        || info_i64(&mut conns[dst], "xset", "xset_delivery_deferred") > 0,
    );
    migrate(&mut conns[src], stream);
    for c in &mut conns {
        let _: String = q(
            c,
            c!["CLUSTER", "SETSLOT", slot.as_str(), "NODE", dst_id.as_str()],
        );
    }
    want.extend(between);
    want.extend(after);
    wait_until(
        "every member delivered on the target",
        Duration::from_secs(20),
        || xlen(&mut conns[dst], stream) >= want.len(),
    );
    let all = entries(&mut conns[dst], stream);
    assert_eq!(all.len(), want.len(), "no entry lost or duplicated");
    assert_eq!(once(&all), want);
    assert!(all.iter().all(|e| e.key == set));
    let left: i64 = q(
        &mut conns[src],
        c!["CLUSTER", "COUNTKEYSINSLOT", slot.as_str()],
    );
    assert_eq!(left, 0);
    assert_eq!(
        q::<Option<String>>(&mut conns[dst], c!["XSET.NOTIFY", set]).as_deref(),
        Some(stream)
    );
    // A set restored under a name in another slot than its stream: its
    // members still expire, and the failure is counted.
    let payload: Vec<u8> = q(&mut conns[dst], c!["DUMP", set]);
    let moved = "{u}moved";
    let home = owner_of(&mut conns[0], &nodes, moved);
    let failures = |c: &mut Connection| info_i64(c, "xset", "xset_delivery_failures");
    let before = failures(&mut conns[home]);
    q::<String>(
        &mut conns[home],
        c![
            b"RESTORE".as_slice(),
            moved.as_bytes(),
            b"0",
            payload.as_slice()
        ],
    );
    let now = server_ms(&mut conns[home]);
    add_all(
        &mut conns[home],
        moved,
        &named_due_over("x", 5, now + 50, 0),
    );
    wait_until(
        "the failures to be counted",
        Duration::from_secs(10),
        || failures(&mut conns[home]) == before + 5,
    );
    assert_eq!(q::<i64>(&mut conns[home], c!["XSET.CARD", moved]), 0);
}
