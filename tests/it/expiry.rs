//! Active expiry end to end against a real redis-server: members no client
//! touches are reclaimed by the timer, on time, and only those; the switch
//! and the lazy fallback; big sets; the index following keys through
//! RENAME/MOVE/COPY/SWAPDB/RESTORE/reloads/restarts and flushes; keys that
//! leave or change type; a large keyspace; replicas that never expire on
//! their own clock.
//!
//! Every wait is a poll with a generous bound. Before checking that the
//! timer reclaimed something, keys are only looked at with `EXISTS`,
//! `DBSIZE` and `INFO`, which never reclaim members.

// 5. The index follows keys through the keyspace.
mod keyspace;

use crate::harness::*;
use redis::Connection;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// An hour: a deadline nothing in these tests reaches.
const FAR_MS: u64 = 3_600_000;
/// How long after its deadline a member must be gone at the latest.
const GRACE: Duration = Duration::from_secs(2);

/// A numeric field of `INFO xset`, e.g. `xset_expired_members_active`.
fn info_field(c: &mut Connection, field: &str) -> i64 {
    info_i64(c, "xset", field)
}

fn active(c: &mut Connection) -> i64 {
    info_field(c, "xset_expired_members_active")
}

/// Waits (at most [`GRACE`]) until the active cycle has reclaimed `n`
/// members in all; fails with the count and the server's log if not.
fn wait_active(s: &Server, c: &mut Connection, n: i64) {
    assert!(
        wait_until(GRACE, || active(c) == n),
        "active={}; log:\n{}",
        active(c),
        log_tail(s)
    );
}

fn lazy(c: &mut Connection) -> i64 {
    info_field(c, "xset_expired_members_lazy")
}

fn tracked(c: &mut Connection) -> i64 {
    info_field(c, "xset_keys_tracked")
}

/// Polls `cond` every few milliseconds until it holds (true) or `timeout`
/// passes (false).
fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(Duration::from_millis(5));
    }
}

/// `XSET.ADDEX key PXAT MEMBERS n member deadline ...`; returns the reply.
fn add_at<M: AsRef<[u8]>>(c: &mut Connection, key: &str, members: &[(M, u64)]) -> i64 {
    let count = members.len().to_string();
    let deadlines: Vec<String> = members.iter().map(|(_, d)| d.to_string()).collect();
    let mut args: Vec<&[u8]> = vec![
        b"XSET.ADDEX",
        key.as_bytes(),
        b"PXAT",
        b"MEMBERS",
        count.as_bytes(),
    ];
    for ((m, _), d) in members.iter().zip(&deadlines) {
        args.push(m.as_ref());
        args.push(d.as_bytes());
    }
    q(c, &args)
}

fn exists(c: &mut Connection, key: &str) -> bool {
    q::<i64>(c, c!["EXISTS", key]) == 1
}

fn dbsize(c: &mut Connection) -> i64 {
    q(c, c!["DBSIZE"])
}

/// A connection with database `db` selected.
fn conn_db(s: &Server, db: u32) -> Connection {
    let mut c = s.conn();
    let _: String = q(&mut c, c!["SELECT", db.to_string()]);
    c
}

/// The last lines of the server log, for failure messages.
fn log_tail(s: &Server) -> String {
    let log = s.log();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

/// Checks that `key` is gone by the time `EXISTS` first says so, and that
/// this happened no earlier than `deadline` and within [`GRACE`] of it.
fn expect_reclaimed_on_time(s: &Server, c: &mut Connection, key: &str, deadline: u64) {
    let mut gone_at = 0;
    let gone = wait_until(
        Duration::from_millis(deadline.saturating_sub(unix_ms())) + GRACE,
        || {
            if exists(c, key) {
                return false;
            }
            gone_at = server_ms(c);
            true
        },
    );
    assert!(
        gone,
        "{key} (due at {deadline}) still exists {GRACE:?} after its deadline; \
         INFO xset active={} tracked={}; log:\n{}",
        active(c),
        tracked(c),
        log_tail(s)
    );
    assert!(
        gone_at >= deadline,
        "{key} was gone at {gone_at}, before its deadline {deadline}"
    );
}

// ---------------------------------------------------------------------------
// 1. The timer reclaims what no client touches.
// ---------------------------------------------------------------------------

#[test]
fn untouched_members_are_reclaimed_by_the_timer() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let mut due_members = 0;
    for k in 0..5u64 {
        let key = format!("k{k}");
        let members: Vec<(String, u64)> = (0..3u64)
            .map(|i| (format!("m{i}"), now + 100 + 50 * k + 30 * i))
            .collect();
        due_members += members.len() as i64;
        assert_eq!(add_at(&mut c, &key, &members), 3);
    }
    // One key keeps a long-lived member: it must stay, with that member.
    add_at(
        &mut c,
        "mixed",
        &[("soon", now + 300), ("keep", now + FAR_MS)],
    );
    due_members += 1;
    // k4's last member: 100 + 50 * 4 + 30 * 2.
    let last_deadline = now + 360;
    assert_eq!(dbsize(&mut c), 6, "nothing is due yet");
    assert_eq!(tracked(&mut c), 6);

    let mut done_at = 0;
    let ok = wait_until(GRACE + Duration::from_millis(300), || {
        if dbsize(&mut c) != 1 {
            return false;
        }
        done_at = server_ms(&mut c);
        true
    });
    assert!(
        ok,
        "keys left: {}; active={}; log:\n{}",
        dbsize(&mut c),
        active(&mut c),
        log_tail(&s)
    );
    assert!(
        done_at >= last_deadline,
        "all gone at {done_at}, but k4's last member is due at {last_deadline}"
    );
    for k in 0..5 {
        assert!(!exists(&mut c, &format!("k{k}")), "k{k} should be deleted");
    }
    assert!(exists(&mut c, "mixed"));
    assert!(wait_until(GRACE, || active(&mut c) == due_members));
    assert_eq!(lazy(&mut c), 0, "no client touched a key");
    assert!(info_field(&mut c, "xset_active_expire_cycles") > 0);
    assert_eq!(tracked(&mut c), 1, "only `mixed` is left to track");
    // Now read: the survivor is exactly the long-lived member.
    let m: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "mixed"]);
    assert_eq!(m, vec!["keep"]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.PEXPIRETIME", "mixed", "keep"]),
        (now + FAR_MS) as i64
    );
    assert_eq!(lazy(&mut c), 0);
}

// ---------------------------------------------------------------------------
// 2. Only due members go.
// ---------------------------------------------------------------------------

#[test]
fn only_due_members_go() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let soon = now + 200;
    let far = |i: u64| now + FAR_MS + i;
    // i % 4: 0 due only, 1 far only, 2 and 3 one of each.
    let mut due_members = 0;
    for i in 0..200u64 {
        let key = format!("key:{i}");
        let members: Vec<(String, u64)> = match i % 4 {
            0 => vec![("d".into(), soon), ("d2".into(), soon + i)],
            1 => vec![("f".into(), far(i))],
            _ => vec![("d".into(), soon + i), ("f".into(), far(i))],
        };
        due_members += members.iter().filter(|(_, d)| *d < now + FAR_MS).count() as i64;
        add_at(&mut c, &key, &members);
    }
    assert_eq!(dbsize(&mut c), 200);
    let ok = wait_until(GRACE + Duration::from_millis(400), || {
        active(&mut c) == due_members
    });
    assert!(
        ok,
        "active={} of {due_members}; keys={}; log:\n{}",
        active(&mut c),
        dbsize(&mut c),
        log_tail(&s)
    );
    assert_eq!(dbsize(&mut c), 150, "the 50 due-only keys are deleted");
    assert_eq!(lazy(&mut c), 0);
    assert_eq!(tracked(&mut c), 150);
    assert_eq!(info_field(&mut c, "xset_keys_due"), 0);
    for i in 0..200u64 {
        let key = format!("key:{i}");
        if i % 4 == 0 {
            assert!(!exists(&mut c, &key), "{key}");
            continue;
        }
        assert_eq!(
            snapshot(&mut c, &key),
            vec![(b"f".to_vec(), far(i) as i64)],
            "{key} keeps exactly its far member and deadline"
        );
    }
    assert_eq!(lazy(&mut c), 0, "reading found nothing left to reclaim");
}

// ---------------------------------------------------------------------------
// 3. The switch: off means reads hide and nothing is reclaimed actively.
// ---------------------------------------------------------------------------

/// Adds ten due-only keys and one mixed key, waits past their deadline,
/// checks that nothing was reclaimed, then that reads hide expired members.
fn check_switched_off(s: &Server, c: &mut Connection) {
    let now = server_ms(c);
    let due = now + 100;
    for i in 0..10 {
        add_at(c, &format!("d{i}"), &[("a", due), ("b", due + 20)]);
    }
    add_at(c, "mixed", &[("gone", due), ("live", now + FAR_MS)]);
    // Time for the timer to act after the last deadline, were it on.
    wait_past(c, due + 20 + 400);
    assert_eq!(dbsize(c), 11, "nothing reclaimed; log:\n{}", log_tail(s));
    assert_eq!(active(c), 0);
    assert_eq!(lazy(c), 0);
    assert_eq!(tracked(c), 11, "keys stay tracked while switched off");
    assert_eq!(info_field(c, "xset_keys_due"), 11);
    // Reads hide what is expired.
    assert_eq!(q::<i64>(c, c!["XSET.CARD", "mixed"]), 1);
    assert_eq!(q::<i64>(c, c!["XSET.HAS", "mixed", "gone"]), 0);
    assert_eq!(q::<i64>(c, c!["XSET.HAS", "mixed", "live"]), 1);
    assert_eq!(q::<i64>(c, c!["XSET.CARD", "d0"]), 0);
    assert!(!exists(c, "d0"), "the read reclaimed d0 lazily (primary)");
    assert_eq!(lazy(c), 3, "gone, d0.a, d0.b reclaimed by the reads");
    assert_eq!(active(c), 0);
    assert_eq!(dbsize(c), 10);
    // On again: the rest goes without a touch.
    let _: String = q(c, c!["CONFIG", "SET", "xset.active-expire", "yes"]);
    let ok = wait_until(GRACE, || dbsize(c) == 1);
    assert!(
        ok,
        "keys={} active={}; log:\n{}",
        dbsize(c),
        active(c),
        log_tail(s)
    );
    assert!(wait_until(GRACE, || active(c) == 18));
    assert_eq!(lazy(c), 3);
    assert_eq!(q::<i64>(c, c!["XSET.CARD", "mixed"]), 1);
}

#[test]
fn switched_off_by_module_arg_reads_hide_and_switching_on_reclaims() {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    let v: Vec<String> = q(&mut c, c!["CONFIG", "GET", "xset.active-expire"]);
    assert_eq!(v, vec!["xset.active-expire", "no"]);
    check_switched_off(&s, &mut c);
}

#[test]
fn switched_off_by_config_set_reads_hide_and_switching_on_reclaims() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let _: String = q(&mut c, c!["CONFIG", "SET", "xset.active-expire", "no"]);
    check_switched_off(&s, &mut c);
}

// ---------------------------------------------------------------------------
// 4. Whole sets due at once, around the 128-member drain chunk.
// ---------------------------------------------------------------------------

#[test]
fn sets_of_every_size_due_at_once_are_reclaimed_whole() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let sizes = [1u64, 127, 128, 129, 1000, 5000];
    let due = server_ms(&mut c) + 300;
    for n in sizes {
        let members: Vec<(String, u64)> = (0..n).map(|i| (format!("m{i}"), due)).collect();
        assert_eq!(add_at(&mut c, &format!("s{n}"), &members), n as i64);
    }
    assert_eq!(dbsize(&mut c), sizes.len() as i64);
    let total: u64 = sizes.iter().sum();
    let mut gone_at = 0;
    let ok = wait_until(GRACE + Duration::from_millis(300), || {
        if dbsize(&mut c) != 0 {
            return false;
        }
        gone_at = server_ms(&mut c);
        true
    });
    assert!(
        ok,
        "left: {:?}; active={} of {total}; log:\n{}",
        sizes
            .iter()
            .filter(|n| exists(&mut c, &format!("s{n}")))
            .collect::<Vec<_>>(),
        active(&mut c),
        log_tail(&s)
    );
    assert!(gone_at >= due, "reclaimed at {gone_at}, due at {due}");
    assert_eq!(active(&mut c), total as i64);
    assert_eq!(lazy(&mut c), 0);
    assert_eq!(tracked(&mut c), 0);
}

#[test]
fn a_tiny_budget_and_long_period_still_drain_a_backlog_promptly() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    // Each tick may only spend 10 us, and the idle period is a minute:
    // the timer must fire at the deadline and come back after 1 ms while
    // a backlog remains, not after the period.
    const PERIOD_MS: u64 = 60_000;
    let _: String = q(
        &mut c,
        c!["CONFIG", "SET", "xset.active-expire-budget-us", "10"],
    );
    let period = PERIOD_MS.to_string();
    let _: String = q(
        &mut c,
        c![
            "CONFIG",
            "SET",
            "xset.active-expire-period-ms",
            period.as_str()
        ],
    );
    // The timer armed with the old period (100 ms) fires once more, then
    // comes back only after the new one: wait for that tick, so that every
    // cycle counted below is one the backlog caused.
    let idle = info_field(&mut c, "xset_active_expire_cycles");
    assert!(
        wait_until(GRACE, || info_field(&mut c, "xset_active_expire_cycles")
            > idle),
        "the timer never ticked; log:\n{}",
        log_tail(&s)
    );
    // All 20000 members get one relative TTL in one transaction: one
    // deadline however long the adds take to send, and no tick between
    // them. The deadline and the cycle count are read in the same
    // transaction, before any member can be due.
    let mut tx = redis::pipe();
    tx.atomic();
    for k in 0..4 {
        let cmd = tx
            .cmd("XSET.ADDEX")
            .arg(format!("b{k}"))
            .arg("PX")
            .arg("MEMBERS")
            .arg(5000);
        for i in 0..5000 {
            cmd.arg(format!("m{i}")).arg(300);
        }
    }
    tx.cmd("XSET.PEXPIRETIME").arg("b3").arg("m4999");
    tx.cmd("INFO").arg("xset");
    let (a0, a1, a2, a3, due, info): (i64, i64, i64, i64, u64, String) =
        tx.query(&mut c).expect("the adds' transaction");
    assert_eq!([a0, a1, a2, a3], [5000; 4]);
    let cycles = info_text_i64(&info, "xset_active_expire_cycles").expect("cycles in INFO");
    let until_due = Duration::from_millis(due.saturating_sub(unix_ms()));
    assert!(
        wait_until(until_due + GRACE, || active(&mut c) > 0),
        "nothing reclaimed {GRACE:?} after the deadline; log:\n{}",
        log_tail(&s)
    );
    // Draining 20000 members in slices of 10 us takes well under a
    // second; a sixth of the period still tells a timer that came back
    // at once from one that waited for the period.
    let drain = Duration::from_millis(PERIOD_MS / 6);
    let ok = wait_until(until_due + drain, || dbsize(&mut c) == 0);
    assert!(
        ok,
        "keys left {} {drain:?} after the deadline; active={} of 20000; log:\n{}",
        dbsize(&mut c),
        active(&mut c),
        log_tail(&s)
    );
    assert_eq!(active(&mut c), 20_000);
    assert_eq!(lazy(&mut c), 0);
    assert!(
        info_field(&mut c, "xset_active_expire_cycles") - cycles > 1,
        "a 10 us budget cannot reclaim 20000 members in one tick"
    );
    assert_eq!(tracked(&mut c), 0);
}

/// Adds `key` with one member due at `due` and one long-lived `keep`.
fn add_mixed(c: &mut Connection, key: &str, due: u64, far: u64) {
    assert_eq!(add_at(c, key, &[("due", due), ("keep", far)]), 2);
}

/// Checks that `key` (via `c`, whose database is selected) is left with
/// exactly `keep` at `far`.
fn expect_only_keep(c: &mut Connection, key: &str, far: u64) {
    assert!(
        exists(c, key),
        "{key} must survive: it has a long-lived member"
    );
    assert_eq!(
        snapshot(c, key),
        vec![(b"keep".to_vec(), far as i64)],
        "{key}"
    );
}

// ---------------------------------------------------------------------------
// 6. Flushes drop pending work; what is added afterwards still expires.
// ---------------------------------------------------------------------------

#[test]
fn flushes_with_pending_members_then_new_keys_expire_on_time() {
    let mut s = Server::start(&[]);
    let mut c = s.conn();
    let mut c1 = conn_db(&s, 1);
    let flushes: [&[&str]; 5] = [
        &["FLUSHDB"],
        &["FLUSHALL"],
        &["FLUSHALL", "ASYNC"],
        &["FLUSHDB", "ASYNC"],
        // Issued on the db 1 connection: db 0 must keep its keys.
        &["FLUSHDB", "from-db1"],
    ];
    for flush in flushes {
        let all_dbs = flush[0] == "FLUSHALL";
        let before = active(&mut c);
        let now = server_ms(&mut c);
        let (due, far) = (now + 150, now + FAR_MS);
        add_mixed(&mut c, "p0", due, far);
        // Big enough to be freed in the background by the ASYNC forms.
        let big: Vec<(String, u64)> = (0..2000).map(|i| (format!("m{i}"), due)).collect();
        add_at(&mut c, "big", &big);
        add_mixed(&mut c1, "p1", due, far);
        let from_db1 = flush.get(1) == Some(&"from-db1");
        if from_db1 {
            let _: String = q(&mut c1, c!["FLUSHDB"]);
        } else {
            let args: Vec<&[u8]> = flush.iter().map(|a| a.as_bytes()).collect();
            let _: String = q(&mut c, &args);
        }
        assert_eq!(q::<String>(&mut c, c!["PING"]), "PONG", "{flush:?}");
        assert!(s.alive(), "{flush:?} crashed the server:\n{}", log_tail(&s));
        if from_db1 {
            assert_eq!(dbsize(&mut c), 2);
            assert_eq!(dbsize(&mut c1), 0);
            assert_eq!(tracked(&mut c), 2, "{flush:?}");
            // What db 0 still holds expires on time.
            expect_reclaimed_on_time(&s, &mut c, "big", due);
            assert!(
                wait_until(GRACE, || active(&mut c) - before == 2001),
                "{flush:?}: reclaimed {}; log:\n{}",
                active(&mut c) - before,
                log_tail(&s)
            );
            expect_only_keep(&mut c, "p0", far);
            let _: String = q(&mut c, c!["FLUSHALL"]);
            continue;
        }
        assert_eq!(dbsize(&mut c), 0);
        assert_eq!(tracked(&mut c), if all_dbs { 0 } else { 1 }, "{flush:?}");

        let now = server_ms(&mut c);
        let due2 = now + 200;
        add_at(&mut c, "n0", &[("a", due2), ("b", due2)]);
        add_mixed(&mut c, "n1", due2, far);
        expect_reclaimed_on_time(&s, &mut c, "n0", due2);
        // p1 (db 1) outlives a FLUSHDB of db 0 and still expires.
        let expected = 3 + if all_dbs { 0 } else { 1 };
        assert!(
            wait_until(GRACE, || active(&mut c) - before == expected),
            "{flush:?}: reclaimed {} of {expected}; log:\n{}",
            active(&mut c) - before,
            log_tail(&s)
        );
        expect_only_keep(&mut c, "n1", far);
        assert_eq!(exists(&mut c1, "p1"), !all_dbs);
        if !all_dbs {
            expect_only_keep(&mut c1, "p1", far);
        }
        let _: String = q(&mut c, c!["FLUSHALL"]);
        assert_eq!(tracked(&mut c), 0);
    }
    assert_eq!(lazy(&mut c), 0);
}

// ---------------------------------------------------------------------------
// 7. Keys that leave: DEL, UNLINK, key-level expiry.
// ---------------------------------------------------------------------------

#[test]
fn deleted_and_expired_keys_stop_being_tracked() {
    let mut s = Server::start(&[]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let (due, far) = (now + 400, now + FAR_MS);
    add_mixed(&mut c, "del", due, far);
    let big: Vec<(String, u64)> = (0..5000).map(|i| (format!("m{i}"), due)).collect();
    add_at(&mut c, "unlink", &big);
    add_mixed(&mut c, "pexpire", due, far);
    add_mixed(&mut c, "pexpire0", due, far);
    add_at(&mut c, "bystander", &[("a", due)]);
    add_mixed(&mut c, "keyttl", due, far);
    assert_eq!(tracked(&mut c), 6);
    // Redis's own key expiry cycle deletes it: only INFO is polled.
    assert_eq!(q::<i64>(&mut c, c!["PEXPIRE", "keyttl", "20"]), 1);
    assert!(
        wait_until(GRACE, || tracked(&mut c) == 5),
        "a key removed by Redis's expire cycle is still tracked: {}",
        tracked(&mut c)
    );
    assert_eq!(dbsize(&mut c), 5);

    assert_eq!(q::<i64>(&mut c, c!["DEL", "del"]), 1);
    assert!(wait_until(GRACE, || tracked(&mut c) == 4), "after DEL");
    assert_eq!(q::<i64>(&mut c, c!["UNLINK", "unlink"]), 1);
    assert!(wait_until(GRACE, || tracked(&mut c) == 3), "after UNLINK");
    assert_eq!(q::<i64>(&mut c, c!["PEXPIRE", "pexpire0", "0"]), 1);
    assert!(!exists(&mut c, "pexpire0"));
    assert!(
        wait_until(GRACE, || tracked(&mut c) == 2),
        "after PEXPIRE 0"
    );
    assert_eq!(q::<i64>(&mut c, c!["PEXPIRE", "pexpire", "30"]), 1);
    // EXISTS lets Redis expire the key lazily if its own cycle has not.
    assert!(
        wait_until(GRACE, || !exists(&mut c, "pexpire") && tracked(&mut c) == 1),
        "after PEXPIRE: tracked={}",
        tracked(&mut c)
    );
    assert!(s.alive(), "{}", log_tail(&s));
    // The survivor still expires on time; the departed reclaim nothing.
    expect_reclaimed_on_time(&s, &mut c, "bystander", due);
    wait_past(&mut c, due + 200);
    assert_eq!(active(&mut c), 1, "only the bystander's member");
    assert_eq!(tracked(&mut c), 0);
    assert_eq!(dbsize(&mut c), 0);
    assert_eq!(q::<String>(&mut c, c!["PING"]), "PONG");
}

// ---------------------------------------------------------------------------
// 8. A key of another type under a once-tracked name is left alone.
// ---------------------------------------------------------------------------

#[test]
fn other_types_under_a_tracked_name_are_left_alone() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let due = now + 200;
    // DEL then SET.
    add_at(&mut c, "k", &[("a", due)]);
    assert_eq!(q::<i64>(&mut c, c!["DEL", "k"]), 1);
    let _: String = q(&mut c, c!["SET", "k", "v"]);
    // SET straight over it.
    add_at(&mut c, "over", &[("a", due)]);
    let _: String = q(&mut c, c!["SET", "over", "v2"]);
    // RENAME a string onto it.
    add_at(&mut c, "renamed", &[("a", due)]);
    let _: String = q(&mut c, c!["SET", "str", "v3"]);
    let _: String = q(&mut c, c!["RENAME", "str", "renamed"]);
    // Another type after DEL.
    add_at(&mut c, "h", &[("a", due)]);
    assert_eq!(q::<i64>(&mut c, c!["DEL", "h"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["HSET", "h", "f", "x"]), 1);
    // A real one, to see that the timer did run past the deadline.
    add_at(&mut c, "real", &[("a", due)]);
    expect_reclaimed_on_time(&s, &mut c, "real", due);
    let cycles = info_field(&mut c, "xset_active_expire_cycles");
    assert!(wait_until(GRACE, || info_field(
        &mut c,
        "xset_active_expire_cycles"
    ) >= cycles + 2));
    assert_eq!(q::<String>(&mut c, c!["TYPE", "k"]), "string");
    assert_eq!(q::<String>(&mut c, c!["GET", "k"]), "v");
    assert_eq!(q::<String>(&mut c, c!["GET", "over"]), "v2");
    assert_eq!(q::<String>(&mut c, c!["GET", "renamed"]), "v3");
    assert_eq!(q::<String>(&mut c, c!["HGET", "h", "f"]), "x");
    assert_eq!(active(&mut c), 1);
    assert_eq!(tracked(&mut c), 0);
    assert_eq!(dbsize(&mut c), 4);
}

// ---------------------------------------------------------------------------
// 9. A large keyspace does not delay due members.
// ---------------------------------------------------------------------------

#[test]
fn many_unrelated_keys_do_not_delay_expiry() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let _: String = q(&mut c, c!["DEBUG", "POPULATE", "1000000"]);
    assert_eq!(dbsize(&mut c), 1_000_000);
    let due = server_ms(&mut c) + 200;
    add_at(&mut c, "x", &[("a", due), ("b", due)]);
    let mut gone_at = 0;
    let ok = wait_until(Duration::from_millis(200) + GRACE, || {
        if exists(&mut c, "x") {
            return false;
        }
        gone_at = server_ms(&mut c);
        true
    });
    assert!(ok, "x never reclaimed; log:\n{}", log_tail(&s));
    assert!(
        (due..=due + 1000).contains(&gone_at),
        "reclaimed at {gone_at}, due at {due}"
    );
    assert_eq!(dbsize(&mut c), 1_000_000);
    assert_eq!(active(&mut c), 2);
}

// ---------------------------------------------------------------------------
// 10. Replicas never expire on their own clock.
// ---------------------------------------------------------------------------

#[test]
fn replica_does_not_expire_actively_and_follows_the_primary() {
    let primary = Server::start(&["--repl-diskless-sync-delay", "0"]);
    let replica = start_replica(&primary);
    let mut p = primary.conn();
    let mut r = replica.conn();
    let _: String = q(&mut p, c!["CONFIG", "SET", "xset.active-expire", "no"]);
    let now = server_ms(&mut p);
    let (due, far) = (now + 150, now + FAR_MS);
    add_at(&mut p, "r", &[("a", due), ("b", due)]);
    add_mixed(&mut p, "r2", due, far);
    assert_eq!(q::<i64>(&mut p, c!["WAIT", "1", "5000"]), 1);
    assert!(exists(&mut r, "r") && exists(&mut r, "r2"));
    wait_past(&mut p, due + 300);

    // Expired but not reclaimed anywhere: the replica hides it on reads.
    assert!(exists(&mut p, "r"), "the primary is switched off");
    assert!(exists(&mut r, "r"));
    assert_eq!(active(&mut r), 0);
    assert_eq!(lazy(&mut r), 0);
    assert_eq!(q::<i64>(&mut r, c!["XSET.CARD", "r"]), 0);
    assert_eq!(q::<i64>(&mut r, c!["XSET.HAS", "r", "a"]), 0);
    assert_eq!(q::<i64>(&mut r, c!["XSET.CARD", "r2"]), 1);
    assert_eq!(q::<i64>(&mut r, c!["XSET.HAS", "r2", "keep"]), 1);
    // Deadline windows hide them too.
    assert_eq!(q::<i64>(&mut r, c!["XSET.COUNT", "r", "-inf", "+inf"]), 0);
    let window: Vec<String> = q(
        &mut r,
        c!["XSET.MEMBERS", "r", "BYDEADLINE", "-inf", "+inf"],
    );
    assert!(window.is_empty(), "{window:?}");
    assert_eq!(q::<i64>(&mut r, c!["XSET.COUNT", "r2", "-inf", "+inf"]), 1);
    assert!(exists(&mut r, "r"), "replica reads never delete");
    assert_eq!(lazy(&mut r), 0);
    assert_eq!(active(&mut r), 0);

    // The primary reclaims; the replica follows.
    let _: String = q(&mut p, c!["CONFIG", "SET", "xset.active-expire", "yes"]);
    let gone = wait_until(GRACE, || !exists(&mut r, "r"));
    assert!(
        gone,
        "replica still has r; primary active={} exists={}; primary log:\n{}\nreplica log:\n{}",
        active(&mut p),
        exists(&mut p, "r"),
        log_tail(&primary),
        log_tail(&replica)
    );
    assert!(!exists(&mut p, "r"));
    assert!(wait_until(GRACE, || active(&mut p) == 3));
    assert_eq!(lazy(&mut p), 0);
    assert_eq!(
        q::<i64>(&mut p, c!["WAIT", "1", "5000"]),
        1,
        "replica in sync"
    );
    assert_eq!(snapshot(&mut r, "r2"), vec![(b"keep".to_vec(), far as i64)]);
    assert_eq!(active(&mut r), 0, "the replica never expired on its own");
    assert_eq!(lazy(&mut r), 0);
    assert_eq!(dbsize(&mut r), 1);
}

/// Starts a replica of `primary` and waits until both sides see the link:
/// the primary counts a replica in `WAIT` only once it is `online`, which
/// with diskless sync follows the replica's first ACK.
fn start_replica(primary: &Server) -> Server {
    let port = primary.port.to_string();
    let replica = Server::start(&["--replicaof", "127.0.0.1", &port]);
    let mut p = primary.conn();
    let mut r = replica.conn();
    let up = wait_until(Duration::from_secs(10), || {
        let info: String = q(&mut r, c!["INFO", "replication"]);
        let theirs: String = q(&mut p, c!["INFO", "replication"]);
        info.contains("master_link_status:up") && theirs.contains("state=online")
    });
    assert!(up, "replica never linked:\n{}", log_tail(&replica));
    replica
}

#[test]
fn promoted_replica_reclaims_what_it_tracked_as_a_replica() {
    // The primary never reclaims: whatever goes, the replica took.
    let primary = Server::start_with_module_args(
        &["--repl-diskless-sync-delay", "0"],
        &["active-expire", "no"],
    );
    let mut p = primary.conn();
    let now = server_ms(&mut p);
    // The synced deadline is set before the sync starts, so it leaves room
    // for a slow one: Valkey 9.1 notices a finished RDB download on its next
    // cron tick, up to a second later.
    let (due, far) = (now + 1500, now + FAR_MS);
    // Reaches the replica in the full-sync RDB ...
    add_at(&mut p, "synced", &[("a", due), ("b", due)]);
    add_mixed(&mut p, "synced-mixed", due, far);
    let replica = start_replica(&primary);
    let mut r = replica.conn();
    // ... or in the replication stream: due after the synced members, and
    // still in the future however long the link took.
    let due2 = due.max(server_ms(&mut p) + 300) + 20;
    add_at(&mut p, "streamed", &[("a", due2)]);
    add_mixed(&mut p, "streamed-mixed", due2, far);
    assert_eq!(q::<i64>(&mut p, c!["WAIT", "1", "5000"]), 1);
    assert_eq!(dbsize(&mut r), 4);
    assert_eq!(tracked(&mut r), 4, "a replica tracks what it holds");
    let _: String = q(&mut r, c!["REPLICAOF", "NO", "ONE"]);
    expect_reclaimed_on_time(&replica, &mut r, "synced", due);
    expect_reclaimed_on_time(&replica, &mut r, "streamed", due2);
    assert!(
        wait_until(GRACE, || active(&mut r) == 5),
        "promoted replica reclaimed {} of 5; log:\n{}",
        active(&mut r),
        log_tail(&replica)
    );
    assert_eq!(lazy(&mut r), 0);
    expect_only_keep(&mut r, "synced-mixed", far);
    expect_only_keep(&mut r, "streamed-mixed", far);
    // The old primary, switched off, still holds everything.
    assert_eq!(dbsize(&mut p), 4);
    assert_eq!(active(&mut p), 0);
}
