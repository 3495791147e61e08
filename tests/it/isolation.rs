//! Resource and isolation rules as Redis's own: a write that changes
//! nothing signals no modification (a `WATCH` on the key survives it, as it
//! survives `SREM` of an absent member or `ZADD NX` of a present one), a
//! write that changes the set does abort it, and so does expiry.

use crate::harness::*;
use redis::Connection;
use std::time::Duration;

/// Runs `other` on a second connection between `WATCH key` and `EXEC` on
/// the first; whether the transaction ran.
fn watch_survives(s: &Server, key: &str, other: &[&str]) -> bool {
    let mut c = s.conn();
    let mut o = s.conn();
    let _: () = redis::cmd("WATCH").arg(key).query(&mut c).expect("WATCH");
    let args: Vec<&[u8]> = other.iter().map(|a| a.as_bytes()).collect();
    let _: redis::Value = q(&mut o, &args);
    let r: Option<Vec<i64>> = redis::pipe()
        .atomic()
        .cmd("EXISTS")
        .arg(key)
        .query(&mut c)
        .expect("EXEC");
    r.is_some()
}

fn setup(c: &mut Connection) {
    q::<i64>(c, c!["XSET.ADD", "k", "a", "100", "b", "200"]);
    q::<i64>(c, c!["SADD", "native", "a"]);
}

#[test]
fn writes_that_change_nothing_keep_a_watch() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    setup(&mut c);
    // The native baseline: a no-op SREM keeps the WATCH.
    assert!(watch_survives(&s, "native", &["SREM", "native", "zz"]));
    for noop in [
        &["XSET.REM", "k", "absent"][..],
        &["XSET.ADDEX", "k", "NX", "MEMBERS", "1", "a", "999"],
        &["XSET.ADDEX", "k", "XX", "MEMBERS", "1", "absent", "999"],
        &["XSET.ADDEX", "k", "GT", "MEMBERS", "1", "b", "1"],
        &["XSET.EXPIRE", "k", "50", "NX", "a"],
        &["XSET.EXPIRE", "k", "50", "absent"],
        &["XSET.PERSIST", "k", "absent"],
        &["XSET.REM", "missing", "a"],
        &["XSET.ADDEX", "missing", "XX", "MEMBERS", "1", "a", "10"],
    ] {
        assert!(watch_survives(&s, "k", noop), "{noop:?} aborted a WATCH");
    }
    assert_eq!(snapshot(&mut c, "k").len(), 2);
}

#[test]
fn writes_that_change_the_set_abort_a_watch() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    setup(&mut c);
    for change in [
        &["XSET.ADD", "k", "c", "10"][..],
        &["XSET.ADD", "k", "a", "500"],
        &["XSET.EXPIRE", "k", "700", "b"],
        &["XSET.PERSIST", "k", "b"],
        &["XSET.REM", "k", "c"],
        &["XSET.ADDEX", "k", "MAXLEN", "1", "MEMBERS", "1", "d", "900"],
    ] {
        assert!(!watch_survives(&s, "k", change), "{change:?} kept a WATCH");
    }
    // Creating and deleting the key count too.
    assert!(!watch_survives(&s, "new", &["XSET.ADD", "new", "x", "10"]));
    assert!(!watch_survives(&s, "new", &["XSET.REM", "new", "x"]));
}

#[test]
fn expiry_aborts_a_watch() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "PX", "MEMBERS", "1", "a", "30"],
    );
    q::<i64>(&mut c, c!["XSET.ADD", "k", "keep", "100"]);
    let _: () = redis::cmd("WATCH").arg("k").query(&mut c).expect("WATCH");
    // Active expiry reclaims `a` while the WATCH is held.
    let mut o = s.conn();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while info_i64(&mut o, "xset", "xset_expired_members_active") == 0 {
        assert!(std::time::Instant::now() < deadline, "nothing expired");
        std::thread::sleep(Duration::from_millis(10));
    }
    let r: Option<Vec<i64>> = redis::pipe()
        .atomic()
        .cmd("XSET.CARD")
        .arg("k")
        .query(&mut c)
        .expect("EXEC");
    assert!(r.is_none(), "expiry kept the WATCH");
}
