//! Replication: the exact commands a primary propagates (read from a raw
//! replication stream), and a real primary + replica pair that converges
//! after churn and expiry.

use crate::harness::*;
use std::time::Duration;

#[test]
fn writes_propagate_in_absolute_form_and_no_ops_not_at_all() {
    let s = replication_primary();
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    let before = server_ms(&mut c);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    let add = r.next();
    let after = server_ms(&mut c);
    assert_eq!(
        &add[..5],
        &["XSET.ADDEX", "k", "PXAT", "MEMBERS", "1"].map(String::from)
    );
    assert_eq!(add[5], "a");
    let at: u64 = add[6].parse().expect("absolute deadline");
    assert!(
        at >= before + 100_000 && at <= after + 100_000,
        "{at} vs {before}..{after}"
    );
    // No-ops propagate nothing.
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "NX", "MEMBERS", "1", "a", "5"],
    );
    q::<i64>(&mut c, c!["XSET.REM", "k", "nothere"]);
    q::<Vec<i64>>(
        &mut c,
        c!["XSET.EXPIRE", "k", "5", "GT", "MEMBERS", "1", "a"],
    );
    q::<Vec<i64>>(&mut c, c!["XSET.PERSIST", "k", "MEMBERS", "1", "nothere"]);
    q::<i64>(&mut c, c!["XSET.HAS", "k", "a"]);
    marker(&mut c, &mut r, 1);
    // EXPIRE becomes PEXPIREAT with the absolute time; PERSIST and REM as is.
    let now = server_ms(&mut c);
    q::<Vec<i64>>(
        &mut c,
        c!["XSET.PEXPIRE", "k", "50000", "MEMBERS", "2", "a", "nothere"],
    );
    let exp = r.next();
    assert_eq!(exp[0], "XSET.PEXPIREAT");
    let at: u64 = exp[2].parse().expect("absolute");
    assert!((now + 50_000..now + 51_000).contains(&at));
    assert_eq!(&exp[3..], &["MEMBERS", "1", "a"].map(String::from));
    q::<Vec<i64>>(&mut c, c!["XSET.PERSIST", "k", "MEMBERS", "1", "a"]);
    r.expect(&[&["XSET.PERSIST", "k", "MEMBERS", "1", "a"]]);
    q::<i64>(&mut c, c!["XSET.REM", "k", "a"]);
    r.expect(&[&["XSET.REM", "k", "a"]]);
    // A past absolute time removes, and propagates the removal.
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PXAT",
            "MEMBERS",
            "2",
            "b",
            "1",
            "c",
            (now + 9_000_000).to_string().as_str()
        ],
    );
    let add = r.next();
    assert_eq!(
        &add[..7],
        &[
            "XSET.ADDEX",
            "k",
            "PXAT",
            "MEMBERS",
            "1",
            "c",
            &(now + 9_000_000).to_string()
        ]
        .map(String::from)
    );
    marker(&mut c, &mut r, 2);
}

/// One-member adds propagate their deadline as a string the module keeps
/// from one add to the next while the deadline repeats: each add still
/// carries its own deadline, also when a transaction holds several of them
/// until `EXEC` and the deadline changes and comes back in between.
#[test]
fn one_member_adds_each_propagate_their_own_deadline() {
    let s = replication_primary();
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    let far = server_ms(&mut c) + 9_000_000;
    let deadlines = [far, far, far + 1, far, far + 12_345, far + 12_345];
    for (i, at) in deadlines.iter().enumerate() {
        add_at(&mut c, "k", &format!("m{i}"), *at);
    }
    q::<String>(&mut c, c!["MULTI"]);
    for (i, at) in deadlines.iter().enumerate() {
        add_at(&mut c, "k", &format!("t{i}"), *at);
    }
    q::<Vec<i64>>(&mut c, c!["EXEC"]);
    let want = |prefix: &str| -> Vec<Vec<String>> {
        deadlines
            .iter()
            .enumerate()
            .map(|(i, at)| {
                ["XSET.ADDEX", "k", "PXAT", "MEMBERS", "1"]
                    .map(String::from)
                    .into_iter()
                    .chain([format!("{prefix}{i}"), at.to_string()])
                    .collect()
            })
            .collect()
    };
    for w in want("m") {
        assert_eq!(r.next(), w);
    }
    // The transaction's writes, between its MULTI and EXEC.
    assert_eq!(r.next()[0].to_ascii_uppercase(), "MULTI");
    for w in want("t") {
        assert_eq!(r.next(), w);
    }
    assert_eq!(r.next()[0].to_ascii_uppercase(), "EXEC");
    marker(&mut c, &mut r, 1);
}

/// The words of a one-member add of `member` to `k` propagated with its
/// absolute deadline, which lies `ttl_ms` after a time in `from..=to`.
fn assert_absolute_add(add: &[String], member: &str, ttl_ms: u64, from: u64, to: u64) {
    assert_eq!(
        &add[..6],
        &["XSET.ADDEX", "k", "PXAT", "MEMBERS", "1", member].map(String::from),
        "propagated in absolute form"
    );
    let at: u64 = add[6].parse().expect("absolute deadline");
    assert!(
        (from + ttl_ms..=to + ttl_ms).contains(&at),
        "{at} vs {from}..{to}"
    );
}

/// With no replica, backlog or AOF, a one-member add propagates nothing
/// but still counts as a change for the save points; a replica that syncs
/// later gets the adds after it asked in absolute form.
#[test]
fn adds_nothing_listens_to_count_as_changes_and_a_later_replica_gets_absolute_ones() {
    let s = replication_primary();
    let mut c = s.conn();
    let changes = info_i64(&mut c, "persistence", "rdb_changes_since_last_save");
    for m in ["a", "b", "c"] {
        q::<i64>(&mut c, c!["XSET.ADD", "k", m, "100"]);
    }
    assert_eq!(
        info_i64(&mut c, "persistence", "rdb_changes_since_last_save"),
        changes + 3
    );
    let mut r = ReplStream::connect(s.port);
    let before = server_ms(&mut c);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "d", "100"]);
    let after = server_ms(&mut c);
    assert_absolute_add(&r.next(), "d", 100_000, before, after);
    marker(&mut c, &mut r, 1);
}

/// An AOF turned on at run time gets the adds after it in absolute form.
#[test]
fn an_aof_turned_on_later_gets_absolute_adds() {
    let dir = scratch("aof-later");
    let s = start_in(&dir, &[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    q::<String>(&mut c, c!["CONFIG", "SET", "appendonly", "yes"]);
    wait_rewrite_done(&mut c);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "b", "100"]);
    let text = aof_part(&dir, ".incr.aof");
    assert!(
        text.contains("XSET.ADDEX"),
        "the add in absolute form: {text:?}"
    );
    assert!(!text.contains("\r\n100\r\n"), "no relative TTL: {text:?}");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A primary restarted from an RDB written while it had a backlog restores
/// that backlog, and the adds after the restart go into it in absolute
/// form, for a replica that resumes the stream.
#[test]
fn a_restored_backlog_gets_absolute_adds() {
    let dir = scratch("backlog-restart");
    let extra = [
        "--repl-diskless-sync",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ];
    let p = start_in(&dir, &extra);
    drop(ReplStream::connect(p.port));
    let mut c = p.conn();
    wait_until("the fake replica to leave", Duration::from_secs(10), || {
        info_i64(&mut c, "replication", "connected_slaves") == 0
    });
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    let _ = std::fs::remove_dir_all(p.shutdown("SAVE"));
    let p = start_in(&dir, &extra);
    let mut c = p.conn();
    assert_eq!(info_i64(&mut c, "replication", "repl_backlog_active"), 1);
    assert_add_reaches_backlog(&mut c, p.port);
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The replication stream id and offset a primary is at.
fn stream_position(c: &mut redis::Connection) -> (String, i64) {
    let info: String = q(c, c!["INFO", "replication"]);
    let replid = info
        .lines()
        .find_map(|l| l.strip_prefix("master_replid:"))
        .expect("master_replid")
        .trim()
        .to_string();
    let offset = info_text_i64(&info, "master_repl_offset").expect("master_repl_offset");
    (replid, offset)
}

/// Adds `b` to `k` on the primary at `port` and reads its backlog from
/// just before: the add is there in absolute form.
fn assert_add_reaches_backlog(c: &mut redis::Connection, port: u16) {
    let (replid, offset) = stream_position(c);
    let before = server_ms(c);
    q::<i64>(c, c!["XSET.ADD", "k", "b", "100"]);
    let after = server_ms(c);
    let mut r = ReplStream::resume(port, &replid, offset + 1);
    assert_absolute_add(&r.next(), "b", 100_000, before, after);
}

/// A replica promoted to primary keeps its backlog, and the adds after
/// the promotion go into it in absolute form, also when the server had
/// propagated nothing before it became a replica.
#[test]
fn a_promoted_replica_gets_absolute_adds() {
    let p = replication_primary();
    let s = replication_primary();
    let (mut pc, mut sc) = (p.conn(), s.conn());
    q::<i64>(&mut sc, c!["XSET.ADD", "k", "a", "100"]);
    let port = p.port.to_string();
    q::<String>(&mut sc, c!["REPLICAOF", "127.0.0.1", port.as_str()]);
    wait_link_up(&mut pc, &mut sc);
    q::<String>(&mut sc, c!["REPLICAOF", "NO", "ONE"]);
    assert_add_reaches_backlog(&mut sc, s.port);
}

/// Where `PSYNC` goes by another name (`rename-command`), the command
/// filter cannot see a replica ask to sync by it: every add propagates.
#[test]
fn a_renamed_psync_leaves_every_add_propagated() {
    let s = Server::start_with_module_args(
        &[
            "--rename-command",
            "PSYNC",
            "psync-renamed",
            "--repl-diskless-sync",
            "no",
        ],
        &[],
    );
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    let mut r = ReplStream::connect_as(s.port, "psync-renamed");
    let before = server_ms(&mut c);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "b", "100"]);
    let after = server_ms(&mut c);
    assert_absolute_add(&r.next(), "b", 100_000, before, after);
}

/// `MODULE LOAD` during `CLIENT PAUSE ALL`, with a `PSYNC` held back after
/// it: when the pause ends both run in order, the `PSYNC` without passing
/// the command filter that the load registered (Redis 7.2 and later filter
/// a command only when it first arrives). An add between them must not
/// take the server for one nothing listens to.
#[test]
fn a_psync_held_back_across_module_load_is_not_missed() {
    use std::io::Write;
    use std::net::TcpStream;
    let s = Server::start_without_module(&[
        "--enable-module-command",
        "yes",
        "--repl-diskless-sync",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut c = s.conn();
    // Long enough for both clients below to be read and held back.
    q::<String>(&mut c, c!["CLIENT", "PAUSE", "2000", "ALL"]);
    let module = module_path();
    let module = module.to_str().expect("utf-8 path");
    let mut loader = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    let load = resp(&["MODULE", "LOAD", module]) + &resp(&["XSET.ADD", "k", "a", "100"]);
    loader.write_all(load.as_bytes()).expect("send");
    wait_read_by_server(s.port, loader.local_addr().expect("port").port());
    let syncer = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
    let port = syncer.local_addr().expect("port").port();
    let sync = std::thread::spawn(move || ReplStream::full_sync(syncer, "PSYNC"));
    wait_read_by_server(s.port, port);
    // The pause ends; the load, the add and the sync run.
    let mut r = sync.join().expect("the sync");
    let mut c = s.conn();
    let before = server_ms(&mut c);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "b", "100"]);
    let after = server_ms(&mut c);
    assert_absolute_add(&r.next(), "b", 100_000, before, after);
    drop(loader);
}

#[test]
fn lazy_expiry_propagates_explicit_removals() {
    let s = replication_primary();
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PX",
            "MEMBERS",
            "3",
            "a",
            "30",
            "b",
            "30",
            "keep",
            "60000"
        ],
    );
    r.next();
    wait_ttl_out(&mut c, 30);
    // A read on the primary reclaims and propagates the removal.
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    let mut rem = r.next();
    rem[2..].sort();
    assert_eq!(rem, ["XSET.REM", "k", "a", "b"].map(String::from));
    marker(&mut c, &mut r, 1);
    // A write meeting an expired member reclaims it first, then writes.
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "PX", "MEMBERS", "1", "x", "30"],
    );
    r.next();
    wait_ttl_out(&mut c, 30);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "x", "100"]);
    r.expect(&[&["MULTI"], &["XSET.REM", "k", "x"]]);
    let add = r.next();
    assert_eq!(
        &add[..6],
        &["XSET.ADDEX", "k", "PXAT", "MEMBERS", "1", "x"].map(String::from)
    );
    r.expect(&[&["EXEC"]]);
    // The last member expiring deletes the key on the replica too.
    q::<Vec<i64>>(
        &mut c,
        c!["XSET.PEXPIRE", "k", "20", "MEMBERS", "2", "keep", "x"],
    );
    r.next();
    wait_ttl_out(&mut c, 20);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "keep"]), 0);
    let mut rem = r.next();
    rem[2..].sort();
    assert_eq!(rem, ["XSET.REM", "k", "keep", "x"].map(String::from));
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
}

#[test]
fn active_expiry_propagates_removals() {
    let s = replication_primary();
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "PX", "MEMBERS", "1", "a", "30"],
    );
    r.next();
    q::<String>(&mut c, c!["CONFIG", "SET", "xset.active-expire", "yes"]);
    r.expect(&[&["XSET.REM", "k", "a"]]);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
}

#[test]
fn replica_converges_after_churn_and_expiry_and_hides_expired_members() {
    let p = Server::start(&["--repl-diskless-sync-delay", "0"]);
    let mut pc = p.conn();
    // Data present before the sync travels in the RDB.
    q::<i64>(&mut pc, c!["XSET.ADD", "pre", "a", "1000", "b", "2000"]);
    let port = p.port.to_string();
    let rep = Server::start(&["--replicaof", "127.0.0.1", port.as_str()]);
    let mut rc = rep.conn();
    wait_link_up(&mut pc, &mut rc);
    q::<String>(&mut pc, c!["CONFIG", "SET", "xset.active-expire", "no"]);
    // Churn: adds with conditions, removals, expires, persists, short TTLs.
    for round in 0..30u32 {
        let k = format!("k{}", round % 5);
        let m = format!("m{}", round % 7);
        let ttl = (100 + round * 37 % 400).to_string();
        q::<i64>(
            &mut pc,
            c!["XSET.ADD", k.as_str(), m.as_str(), ttl.as_str(), "x", "900"],
        );
        q::<i64>(
            &mut pc,
            c![
                "XSET.ADDEX",
                k.as_str(),
                "GT",
                "PX",
                "MEMBERS",
                "1",
                m.as_str(),
                "40"
            ],
        );
        q::<i64>(
            &mut pc,
            c![
                "XSET.ADDEX",
                k.as_str(),
                "PX",
                "MEMBERS",
                "1",
                format!("short{round}"),
                "40"
            ],
        );
        if round % 3 == 0 {
            q::<i64>(&mut pc, c!["XSET.REM", k.as_str(), "x"]);
        }
        if round % 4 == 0 {
            q::<Vec<i64>>(
                &mut pc,
                c!["XSET.PERSIST", k.as_str(), "MEMBERS", "1", m.as_str()],
            );
        }
        q::<i64>(
            &mut pc,
            c![
                "XSET.ADDEX",
                k.as_str(),
                "MAXLEN",
                "6",
                "MEMBERS",
                "1",
                format!("cap{round}"),
                "500"
            ],
        );
    }
    wait_replicated(&mut pc);
    wait_ttl_out(&mut pc, 40);
    // Short members are due now. The replica hides them but keeps them.
    let rcard: i64 = q(&mut rc, c!["XSET.CARD", "k0"]);
    let stored_before: i64 = q(&mut rc, c!["MEMORY", "USAGE", "k0"]);
    let pcard: i64 = q(&mut pc, c!["XSET.CARD", "k0"]);
    assert_eq!(rcard, pcard, "replica hides expired members on reads");
    assert_eq!(q::<i64>(&mut rc, c!["XSET.HAS", "k0", "short25"]), 0);
    // Touch every key on the primary: lazy removals flow to the replica.
    for k in 0..5 {
        q::<i64>(&mut pc, c!["XSET.CARD", format!("k{k}")]);
    }
    wait_replicated(&mut pc);
    let stored_after: i64 = q(&mut rc, c!["MEMORY", "USAGE", "k0"]);
    assert!(
        stored_after <= stored_before,
        "removals reached the replica"
    );
    let pd: String = q(&mut pc, c!["DEBUG", "DIGEST"]);
    let rd: String = q(&mut rc, c!["DEBUG", "DIGEST"]);
    assert_eq!(pd, rd, "primary and replica hold the same data");
    for k in ["pre", "k0", "k1", "k2", "k3", "k4"] {
        assert_eq!(snapshot(&mut pc, k), snapshot(&mut rc, k), "{k}");
    }
    let info: String = q(&mut rc, c!["INFO", "xset"]);
    assert!(
        info.contains("expired_members_lazy:0"),
        "replicas never reclaim: {info}"
    );
}

/// Redis 7.0 aborts if anything is propagated while clients are paused for
/// writes; a paused primary must hide due members without reclaiming, then
/// reclaim once the pause ends.
#[test]
fn a_write_pause_never_crashes_and_reclaims_after() {
    let mut s = Server::start(&[
        "--repl-diskless-sync",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PX",
            "MEMBERS",
            "2",
            "a",
            "50",
            "keep",
            "60000"
        ],
    );
    r.next();
    let due = server_ms(&mut c) + 50;
    q::<String>(&mut c, c!["CLIENT", "PAUSE", "400", "WRITE"]);
    wait_past(&mut c, due);
    // A read and the active timer both meet due members during the pause
    // (the timer ticks through the rest of it, while the REM is awaited).
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "a"]), 0);
    assert!(s.alive(), "server aborted during the pause:\n{}", s.log());
    // After the pause the primary reclaims and propagates.
    let rem = r.next();
    assert_eq!(rem, ["XSET.REM", "k", "a"].map(String::from));
    assert!(s.alive());
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
}
