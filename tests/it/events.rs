//! Keyspace notifications (module class `d`, plus generic `del`) and the
//! opt-in Pub/Sub channel that names the members that expired.

use crate::harness::*;
use redis::Connection;
use std::time::{Duration, Instant};

/// Polls `done` until it holds; panics after 10 s, naming `what`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < give_up, "never {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Members reclaimed by the active expiry timer so far.
fn expired_active(c: &mut Connection) -> i64 {
    info_i64(c, "xset", "xset_expired_members_active")
}

fn payloads(events: &[(String, Vec<u8>)]) -> Vec<String> {
    events
        .iter()
        .map(|(_, p)| String::from_utf8_lossy(p).into_owned())
        .collect()
}

#[test]
fn each_write_emits_its_event_and_no_ops_emit_nothing() {
    let s = Server::start_with_module_args(
        &["--notify-keyspace-events", "Kgd"],
        &["active-expire", "no"],
    );
    let mut c = s.conn();
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    listen(&mut ps, "__keyspace@0__:k");
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100", "b", "100"]);
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "NX", "MEMBERS", "1", "a", "5"],
    );
    q::<i64>(&mut c, c!["XSET.REM", "k", "nothere"]);
    q::<Vec<i64>>(&mut c, c!["XSET.EXPIRE", "k", "500", "MEMBERS", "1", "a"]);
    q::<Vec<i64>>(&mut c, c!["XSET.PERSIST", "k", "MEMBERS", "1", "a"]);
    q::<Vec<i64>>(&mut c, c!["XSET.PERSIST", "k", "MEMBERS", "1", "a"]);
    q::<i64>(&mut c, c!["XSET.REM", "k", "a"]);
    q::<Vec<i64>>(&mut c, c!["XSET.PEXPIRE", "k", "20", "MEMBERS", "1", "b"]);
    wait_ttl_out(&mut c, 20);
    q::<i64>(&mut c, c!["XSET.CARD", "k"]);
    let got = payloads(&drain(&mut ps, &mut c));
    assert_eq!(
        got,
        [
            "xset.add",
            "xset.expire",
            "xset.persist",
            "xset.rem",
            "xset.expire",
            "xset.expired",
            "del"
        ]
    );
}

#[test]
fn active_expiry_emits_one_event_per_key_per_batch() {
    let s = Server::start(&["--notify-keyspace-events", "Kgd"]);
    let mut c = s.conn();
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    listen(&mut ps, "__keyspace@0__:*");
    let mut args: Vec<String> = ["XSET.ADDEX", "big", "PX", "MEMBERS", "100"]
        .map(String::from)
        .to_vec();
    for i in 0..100 {
        args.push(format!("m{i}"));
        args.push("50".into());
    }
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    q::<i64>(&mut c, &refs);
    // EXISTS reclaims no member: only the timer deletes the key.
    wait_for("deleted by the timer", || {
        q::<i64>(&mut c, c!["EXISTS", "big"]) == 0
    });
    let got = payloads(&drain(&mut ps, &mut c));
    assert_eq!(got, ["xset.add", "xset.expired", "del"]);
}

#[test]
fn opt_in_channel_names_each_expired_member() {
    let s = Server::start_with_module_args(&[], &["notify-expired-members", "yes"]);
    let mut c = s.conn();
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    listen(&mut ps, "__xset@*__:expired:*");
    q::<i64>(
        &mut c,
        &[
            b"XSET.ADDEX",
            b"otp",
            b"PX",
            b"MEMBERS",
            b"3",
            b"123456",
            b"30",
            b"\x00bin",
            b"30",
            b"live",
            b"60000",
        ],
    );
    wait_for("two members reclaimed by the timer", || {
        expired_active(&mut c) == 2
    });
    let got = drain(&mut ps, &mut c);
    let mut members: Vec<Vec<u8>> = got.iter().map(|(_, p)| p.clone()).collect();
    members.sort();
    assert_eq!(members, vec![b"\x00bin".to_vec(), b"123456".to_vec()]);
    assert!(
        got.iter().all(|(ch, _)| ch == "__xset@0__:expired:otp"),
        "{got:?}"
    );
    // Off by default, and switchable at run time.
    q::<String>(
        &mut c,
        c!["CONFIG", "SET", "xset.notify-expired-members", "no"],
    );
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "otp", "PX", "MEMBERS", "1", "quiet", "30"],
    );
    wait_for("a third member reclaimed by the timer", || {
        expired_active(&mut c) == 3
    });
    assert!(drain(&mut ps, &mut c).is_empty());
}

/// Events follow `notify-keyspace-events` as it changes at run time: none
/// while it is empty, the module's from the first write after `CONFIG SET`
/// adds `d` (on the keyspace and keyevent channels it names), `del` with
/// `g` alone, and none again once it is emptied.
#[test]
fn events_follow_config_set_at_run_time() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    listen(&mut ps, "__key*@0__:*");
    let set = |c: &mut redis::Connection, flags: &str| {
        let ok: String = q(c, c!["CONFIG", "SET", "notify-keyspace-events", flags]);
        assert_eq!(ok, "OK");
    };
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    q::<i64>(&mut c, c!["XSET.REM", "k", "a"]);
    assert_eq!(
        drain(&mut ps, &mut c),
        [],
        "nothing while the config is empty"
    );

    set(&mut c, "Kd");
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    assert_eq!(
        drain(&mut ps, &mut c),
        [("__keyspace@0__:k".to_string(), b"xset.add".to_vec())],
        "the first write after CONFIG SET"
    );

    set(&mut c, "Ed");
    q::<i64>(&mut c, c!["XSET.ADD", "k", "b", "100"]);
    assert_eq!(
        drain(&mut ps, &mut c),
        [("__keyevent@0__:xset.add".to_string(), b"k".to_vec())]
    );

    set(&mut c, "Kg");
    q::<i64>(&mut c, c!["XSET.REM", "k", "a"]);
    q::<i64>(&mut c, c!["XSET.REM", "k", "b"]);
    assert_eq!(
        drain(&mut ps, &mut c),
        [("__keyspace@0__:k".to_string(), b"del".to_vec())],
        "generic events without the module class"
    );

    set(&mut c, "");
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    q::<i64>(&mut c, c!["DEL", "k"]);
    assert_eq!(drain(&mut ps, &mut c), [], "nothing once emptied again");
}
