//! `XSET.ADDEX ... CAP n` (a limit that refuses, all or nothing) and
//! `CODES` (one code per pair given) against a real server.

use crate::harness::*;
use redis::{Connection, Value};

fn repl_offset(c: &mut Connection) -> i64 {
    info_i64(c, "replication", "master_repl_offset")
}

#[test]
fn cap_refuses_the_whole_add_and_changes_nothing() {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "otp", "a", "300", "b", "300"]);
    let before = snapshot(&mut c, "otp");
    let offset = repl_offset(&mut c);
    // Two new members would make 4 > 3: nothing is added, not even one.
    let r: Value = q(
        &mut c,
        c![
            "XSET.ADDEX",
            "otp",
            "CAP",
            "3",
            "MEMBERS",
            "2",
            "c",
            "300",
            "d",
            "300"
        ],
    );
    assert_eq!(r, Value::Nil);
    assert_eq!(snapshot(&mut c, "otp"), before);
    assert_eq!(
        repl_offset(&mut c),
        offset,
        "a refused add propagates nothing"
    );
    // A refresh is live already and counts once.
    assert_eq!(
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                "otp",
                "CAP",
                "3",
                "MEMBERS",
                "2",
                "a",
                "600",
                "c",
                "300"
            ]
        ),
        1
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "otp", "a"]), 600);
    // At the cap, refreshing still works; adding does not.
    let refresh = c!["XSET.ADDEX", "otp", "CAP", "3", "MEMBERS", "1", "b", "900"];
    assert_eq!(q::<i64>(&mut c, refresh), 0);
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "otp", "b"]), 900);
    let more = c!["XSET.ADDEX", "otp", "CAP", "3", "MEMBERS", "1", "d", "300"];
    assert_eq!(q::<Value>(&mut c, more), Value::Nil);
    // Under XX nothing is brought in: only what the set already holds
    // counts against the cap.
    let xx = c![
        "XSET.ADDEX",
        "otp",
        "XX",
        "CAP",
        "3",
        "MEMBERS",
        "1",
        "a",
        "50"
    ];
    assert_eq!(q::<i64>(&mut c, xx), 0);
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "otp", "a"]), 50);
    let over = c![
        "XSET.ADDEX",
        "otp",
        "XX",
        "CAP",
        "1",
        "MEMBERS",
        "1",
        "a",
        "70"
    ];
    assert_eq!(q::<Value>(&mut c, over), Value::Nil);
    // A missing key: the cap counts the new members alone.
    let fresh = c![
        "XSET.ADDEX",
        "new",
        "CAP",
        "1",
        "MEMBERS",
        "2",
        "x",
        "9",
        "y",
        "9"
    ];
    assert_eq!(q::<Value>(&mut c, fresh), Value::Nil);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "new"]), 0);
    // A live member that a time in the past removes makes room.
    q::<i64>(&mut c, c!["XSET.ADD", "two", "a", "100", "b", "100"]);
    let swap = c![
        "XSET.ADDEX",
        "two",
        "PXAT",
        "CAP",
        "2",
        "MEMBERS",
        "2",
        "a",
        "1",
        "c",
        "4102444800000"
    ];
    assert_eq!(q::<i64>(&mut c, swap), 1);
    let mut left: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "two"]);
    left.sort();
    assert_eq!(left, ["b", "c"]);
    // A member named twice counts once.
    let twice = c![
        "XSET.ADDEX",
        "new",
        "CAP",
        "1",
        "MEMBERS",
        "2",
        "x",
        "9",
        "x",
        "8"
    ];
    assert_eq!(q::<i64>(&mut c, twice), 1);
}

#[test]
fn cap_counts_live_members_only() {
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PX",
            "MEMBERS",
            "2",
            "gone1",
            "30",
            "gone2",
            "30"
        ],
    );
    q::<i64>(&mut c, c!["XSET.ADD", "k", "live", "100"]);
    wait_ttl_out(&mut c, 30);
    // Two expired members do not count: 1 live + 2 new = 3.
    let add = c![
        "XSET.ADDEX",
        "k",
        "CAP",
        "3",
        "MEMBERS",
        "2",
        "n1",
        "100",
        "gone1",
        "100"
    ];
    assert_eq!(q::<i64>(&mut c, add), 2);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 3);
}

#[test]
fn cap_and_maxlen_and_errors() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100", "b", "200"]);
    // CAP is checked first, then MAXLEN trims.
    let both = c![
        "XSET.ADDEX",
        "k",
        "MAXLEN",
        "2",
        "CAP",
        "3",
        "MEMBERS",
        "1",
        "c",
        "300"
    ];
    assert_eq!(q::<i64>(&mut c, both), 1);
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "k"]),
        ["b", "c"]
    );
    let before = snapshot(&mut c, "k");
    for (cmd, want) in [
        (
            &["XSET.ADDEX", "k", "CAP", "0", "MEMBERS", "1", "d", "10"][..],
            "CAP must be a positive integer",
        ),
        (
            &["XSET.ADDEX", "k", "CAP", "-1", "MEMBERS", "1", "d", "10"],
            "CAP must be a positive integer",
        ),
        (
            &["XSET.ADDEX", "k", "CAP", "x", "MEMBERS", "1", "d", "10"],
            "not an integer",
        ),
        (
            &[
                "XSET.ADDEX",
                "k",
                "CAP",
                "2",
                "CAP",
                "3",
                "MEMBERS",
                "1",
                "d",
                "10",
            ],
            "syntax error",
        ),
        (
            &[
                "XSET.ADDEX",
                "k",
                "CODES",
                "CODES",
                "MEMBERS",
                "1",
                "d",
                "10",
            ],
            "syntax error",
        ),
        (
            &["XSET.ADDEX", "k", "CAP", "MEMBERS", "1", "d", "10"],
            "not an integer",
        ),
    ] {
        let bytes: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        let e = err(&mut c, &bytes);
        assert!(e.contains(want), "{cmd:?}: {e}");
        assert_eq!(snapshot(&mut c, "k"), before, "{cmd:?} changed the set");
    }
}

#[test]
fn codes_say_what_happened_to_each_pair_given() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c!["XSET.ADD", "k", "old", "100", "same", "100", "gone", "100"],
    );
    let same_at: i64 = q(&mut c, c!["XSET.PEXPIRETIME", "k", "same"]);
    let same_at = same_at.to_string();
    let codes: Vec<i64> = q(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PXAT",
            "CODES",
            "MEMBERS",
            "6",
            "new",
            "4102444800000",
            "old",
            "4102444800000",
            "same",
            same_at.as_str(),
            "gone",
            "1",
            "dup",
            "4102444800000",
            "dup",
            "4102444800001"
        ],
    );
    // new added, old changed, same untouched, gone removed, the first dup
    // superseded by the second, which is added.
    assert_eq!(codes, [1, 2, 0, 3, 0, 1]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.PEXPIRETIME", "k", "dup"]),
        4_102_444_800_001
    );
    // Conditions: NX leaves live members alone; GT refuses an earlier time.
    let nx: Vec<i64> = q(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "NX",
            "CODES",
            "MEMBERS",
            "2",
            "new",
            "9",
            "fresh",
            "9"
        ],
    );
    assert_eq!(nx, [0, 1]);
    let gt: Vec<i64> = q(
        &mut c,
        c!["XSET.ADDEX", "k", "GT", "CODES", "MEMBERS", "1", "old", "9"],
    );
    assert_eq!(gt, [0]);
    // MAXLEN trims after: a member added and trimmed at once still says 1.
    let trimmed: Vec<i64> = q(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "MAXLEN",
            "1",
            "CODES",
            "MEMBERS",
            "1",
            "brief",
            "1"
        ],
    );
    assert_eq!(trimmed, [1]);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "brief"]), 0);
}
