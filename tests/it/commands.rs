//! Command behaviour against a real redis-server: the card's use cases,
//! expiry at the millisecond edge, frozen time, odd member bytes, key-level
//! operations, a 100k-member set, a big set churning while it grows and the
//! panic guard.

use crate::harness::*;
use redis::{Connection, Value};
use std::thread::sleep;
use std::time::Duration;

#[test]
fn card_form_adds_counts_and_refreshes() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100", "b", "200"]),
        2
    );
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "300", "c", "10"]),
        1
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 3);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "zz"]), 0);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "nokey", "a"]), 0);
    assert_eq!(
        q::<Vec<i64>>(&mut c, c!["XSET.MHAS", "k", "a", "zz", "c"]),
        vec![1, 0, 1]
    );
    let ttl: i64 = q(&mut c, c!["XSET.TTL", "k", "a"]);
    assert!((299..=300).contains(&ttl), "refreshed ttl {ttl}");
    let m: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "k"]);
    assert_eq!(m, vec!["c", "b", "a"], "soonest first");
    let m: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "k", "REV", "LIMIT", "0", "2"]);
    assert_eq!(m, vec!["a", "b"], "latest first, limited");
    assert_eq!(q::<i64>(&mut c, c!["XSET.REM", "k", "a", "zz"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 2);
}

#[test]
fn type_name_is_stable() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    assert_eq!(q::<String>(&mut c, c!["TYPE", "k"]), "xset-type");
}

#[test]
fn members_expire_at_the_millisecond_edge() {
    // Lazy semantics alone: the timer is off.
    let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
    let mut c = s.conn();
    let now = server_ms(&mut c);
    let at = now + 300;
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PXAT",
            "MEMBERS",
            "2",
            "a",
            at.to_string(),
            "b",
            (at + 100_000).to_string()
        ],
    );
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.PEXPIRETIME", "k", "a"]),
        at as i64
    );
    // Poll until the edge: before it the member is there, from it on it is
    // gone for every command, never to come back.
    let mut seen_gone_at = None;
    for _ in 0..2000 {
        let before = server_ms(&mut c);
        let has: i64 = q(&mut c, c!["XSET.HAS", "k", "a"]);
        let after = server_ms(&mut c);
        if has == 0 {
            assert!(after >= at, "gone at {after} before its deadline {at}");
            seen_gone_at = Some(before);
            break;
        }
        assert!(before < at, "still there at {before}, deadline {at}");
        sleep(Duration::from_millis(1));
    }
    assert!(seen_gone_at.is_some(), "member never expired");
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "k", "a"]), -2);
    let m: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "k"]);
    assert_eq!(m, vec!["b"]);
    let info: String = q(&mut c, c!["INFO", "xset"]);
    assert!(info.contains("expired_members_lazy:1"), "{info}");
    assert!(info.contains("expired_members_active:0"), "{info}");
}

#[test]
fn last_member_expiring_deletes_the_key() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "PX", "MEMBERS", "1", "a", "50"],
    );
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 1);
    wait_ttl_out(&mut c, 50);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 0);
    assert_eq!(
        q::<i64>(&mut c, c!["EXISTS", "k"]),
        0,
        "an empty set does not exist"
    );
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    q::<i64>(&mut c, c!["XSET.REM", "k", "a"]);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
}

#[test]
fn expired_member_is_absent_for_rem_and_add() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "k",
            "PX",
            "MEMBERS",
            "2",
            "a",
            "30",
            "b",
            "30"
        ],
    );
    q::<i64>(&mut c, c!["XSET.ADD", "k", "keep", "100"]);
    wait_ttl_out(&mut c, 30);
    assert_eq!(q::<i64>(&mut c, c!["XSET.REM", "k", "a"]), 0);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.ADD", "k", "b", "100"]),
        1,
        "re-adding counts as new"
    );
    let ttl: i64 = q(&mut c, c!["XSET.TTL", "k", "b"]);
    assert!((99..=100).contains(&ttl), "new deadline only: {ttl}");
}

#[test]
fn options_form_conditions_and_units() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let k = "k";
    assert_eq!(
        q::<i64>(
            &mut c,
            c!["XSET.ADDEX", k, "XX", "MEMBERS", "1", "a", "100"]
        ),
        0
    );
    assert_eq!(
        q::<i64>(&mut c, c!["EXISTS", k]),
        0,
        "XX on a missing key creates nothing"
    );
    assert_eq!(
        q::<i64>(
            &mut c,
            c!["XSET.ADDEX", k, "NX", "MEMBERS", "1", "a", "100"]
        ),
        1
    );
    assert_eq!(
        q::<i64>(
            &mut c,
            c!["XSET.ADDEX", k, "NX", "MEMBERS", "1", "a", "500"]
        ),
        0
    );
    assert!(q::<i64>(&mut c, c!["XSET.TTL", k, "a"]) <= 100);
    q::<i64>(&mut c, c!["XSET.ADDEX", k, "GT", "MEMBERS", "1", "a", "50"]);
    assert!(
        q::<i64>(&mut c, c!["XSET.TTL", k, "a"]) > 50,
        "GT refused an earlier deadline"
    );
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", k, "GT", "MEMBERS", "1", "a", "200"],
    );
    assert!(q::<i64>(&mut c, c!["XSET.TTL", k, "a"]) > 150);
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", k, "LT", "XX", "MEMBERS", "1", "a", "20"],
    );
    assert!(q::<i64>(&mut c, c!["XSET.TTL", k, "a"]) <= 20);
    // Units.
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", k, "PX", "MEMBERS", "1", "px", "5000"],
    );
    let pttl: i64 = q(&mut c, c!["XSET.PTTL", k, "px"]);
    assert!((4000..=5000).contains(&pttl), "{pttl}");
    let now = server_ms(&mut c);
    let at_s = now / 1000 + 1000;
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            k,
            "EXAT",
            "MEMBERS",
            "1",
            "exat",
            at_s.to_string()
        ],
    );
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.EXPIRETIME", k, "exat"]),
        at_s as i64
    );
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.PEXPIRETIME", k, "exat"]),
        (at_s * 1000) as i64
    );
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            k,
            "PXAT",
            "MEMBERS",
            "1",
            "pxat",
            (now + 123_456).to_string()
        ],
    );
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.PEXPIRETIME", k, "pxat"]),
        (now + 123_456) as i64
    );
    // An absolute time in the past removes an existing member.
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", k, "PXAT", "MEMBERS", "1", "pxat", "1"],
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", k, "pxat"]), 0);
}

#[test]
fn maxlen_keeps_the_latest_deadlines() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    for (i, page) in ["p1", "p2", "p3", "p4", "p5"].iter().enumerate() {
        let ttl = (1000 + i).to_string();
        q::<i64>(
            &mut c,
            c!["XSET.ADDEX", "rv", "MAXLEN", "3", "MEMBERS", "1", page, ttl],
        );
    }
    // Re-viewing p3 refreshes it to the front.
    q::<i64>(
        &mut c,
        c![
            "XSET.ADDEX",
            "rv",
            "MAXLEN",
            "3",
            "MEMBERS",
            "1",
            "p3",
            "2000"
        ],
    );
    let m: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "rv", "REV"]);
    assert_eq!(m, vec!["p3", "p5", "p4"]);
}

#[test]
fn duplicate_member_counts_once_last_deadline_wins() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    assert_eq!(
        q::<i64>(
            &mut c,
            c!["XSET.ADD", "k", "a", "100", "a", "5000", "b", "1"]
        ),
        2
    );
    let ttl: i64 = q(&mut c, c!["XSET.TTL", "k", "a"]);
    assert!((4999..=5000).contains(&ttl), "{ttl}");
    assert_eq!(
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                "k",
                "NX",
                "MEMBERS",
                "2",
                "n",
                "9",
                "n",
                "7000"
            ]
        ),
        1
    );
    let ttl: i64 = q(&mut c, c!["XSET.TTL", "k", "n"]);
    assert!(
        (6999..=7000).contains(&ttl),
        "last wins under NX too: {ttl}"
    );
}

#[test]
fn members_named_like_keywords_numbers_empty_and_binary() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let odd: [&[u8]; 6] = [b"NX", b"100", b"", b"\x00\xff\r\n", b"MEMBERS", b"px"];
    for m in odd {
        let added: i64 = q(&mut c, &[b"XSET.ADDEX", b"k", b"MEMBERS", b"1", m, b"100"]);
        assert_eq!(added, 1, "{m:?}");
        assert_eq!(q::<i64>(&mut c, &[b"XSET.HAS", b"k", m]), 1, "{m:?}");
    }
    // The card form takes any member that is not an option word first.
    assert_eq!(
        q::<i64>(&mut c, &[b"XSET.ADD", b"k2", b"100", b"5", b"", b"7"]),
        2
    );
    assert_eq!(q::<i64>(&mut c, &[b"XSET.HAS", b"k2", b""]), 1);
    let mut all: Vec<Vec<u8>> = q(&mut c, c!["XSET.MEMBERS", "k"]);
    all.sort();
    let mut want: Vec<Vec<u8>> = odd.iter().map(|m| m.to_vec()).collect();
    want.sort();
    assert_eq!(all, want);
    assert_eq!(
        q::<i64>(&mut c, &[b"XSET.REM", b"k", b"\x00\xff\r\n", b""]),
        2
    );
    assert_eq!(
        q::<Vec<i64>>(&mut c, &[b"XSET.PTTL", b"k", b"MEMBERS", b"2", b"NX", b""]).len(),
        2
    );
}

#[test]
fn expire_persist_codes_and_ttls() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100", "b", "100"]);
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.EXPIRE", "k", "500", "MEMBERS", "3", "a", "b", "zz"],
    );
    assert_eq!(codes, vec![1, 1, -2]);
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.EXPIRE", "k", "50", "GT", "MEMBERS", "1", "a"],
    );
    assert_eq!(codes, vec![0]);
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.PEXPIRE", "k", "50000", "LT", "MEMBERS", "1", "a"],
    );
    assert_eq!(codes, vec![1]);
    let pttl: i64 = q(&mut c, c!["XSET.PTTL", "k", "a"]);
    assert!((49_000..=50_000).contains(&pttl));
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.PERSIST", "k", "MEMBERS", "3", "a", "a", "zz"],
    );
    assert_eq!(codes, vec![1, -1, -2]);
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "k", "a"]), -1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.EXPIRETIME", "k", "a"]), -1);
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.EXPIRE", "k", "10", "XX", "MEMBERS", "1", "a"],
    );
    assert_eq!(codes, vec![0], "XX: a has no deadline");
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.EXPIRE", "k", "10", "NX", "MEMBERS", "1", "a"],
    );
    assert_eq!(codes, vec![1]);
    let now = server_ms(&mut c);
    let at = (now / 1000 + 3600).to_string();
    let codes: Vec<i64> = q(
        &mut c,
        c!["XSET.EXPIREAT", "k", at.as_str(), "MEMBERS", "1", "b"],
    );
    assert_eq!(codes, vec![1]);
    assert_eq!(q::<String>(&mut c, c!["XSET.EXPIRETIME", "k", "b"]), at);
    let codes: Vec<i64> = q(&mut c, c!["XSET.PEXPIREAT", "k", "1", "MEMBERS", "1", "b"]);
    assert_eq!(codes, vec![2], "a past time removes");
    let codes: Vec<i64> = q(&mut c, c!["XSET.EXPIRE", "k", "0", "MEMBERS", "1", "a"]);
    assert_eq!(codes, vec![2]);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0, "emptied by expiry");
    let codes: Vec<i64> = q(&mut c, c!["XSET.PERSIST", "nokey", "MEMBERS", "1", "a"]);
    assert_eq!(codes, vec![-2]);
}

#[test]
fn persistent_members_sort_last_and_show_minus_one() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(
        &mut c,
        c!["XSET.ADD", "k", "a", "100", "p", "10", "b", "200"],
    );
    q::<Vec<i64>>(&mut c, c!["XSET.PERSIST", "k", "MEMBERS", "1", "p"]);
    let all = members_with_ttl(&mut c, "k");
    assert_eq!(
        all.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>(),
        vec![b"a".to_vec(), b"b".to_vec(), b"p".to_vec()]
    );
    assert_eq!(all[2].1, -1);
    // GT treats "no deadline" as infinitely far.
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "GT", "MEMBERS", "1", "p", "999"],
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.TTL", "k", "p"]), -1);
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "LT", "MEMBERS", "1", "p", "999"],
    );
    assert!(q::<i64>(&mut c, c!["XSET.TTL", "k", "p"]) > 0);
}

#[test]
fn scan_visits_every_stable_member_while_deadlines_change() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let mut args: Vec<Vec<u8>> = vec![b"XSET.ADD".to_vec(), b"k".to_vec()];
    for i in 0..500 {
        args.push(format!("m{i}").into_bytes());
        args.push(b"1000".to_vec());
    }
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    q::<i64>(&mut c, &refs);
    let mut seen = std::collections::HashMap::<Vec<u8>, u32>::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let (next, batch): (String, Vec<Vec<u8>>) =
            q(&mut c, c!["XSET.SCAN", "k", cursor.as_str(), "COUNT", "37"]);
        for m in batch {
            *seen.entry(m).or_default() += 1;
        }
        round += 1;
        // Churn between calls: move deadlines, add and remove others.
        let ttl = (2000 + round).to_string();
        q::<Vec<i64>>(
            &mut c,
            c![
                "XSET.EXPIRE",
                "k",
                ttl.as_str(),
                "MEMBERS",
                "2",
                "m1",
                "m499"
            ],
        );
        q::<i64>(&mut c, c!["XSET.ADD", "k", format!("tmp{round}"), "100"]);
        q::<i64>(&mut c, c!["XSET.REM", "k", format!("tmp{}", round - 1)]);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    for i in 0..500 {
        assert!(seen.contains_key(format!("m{i}").as_bytes()), "m{i} missed");
    }
    let (_, matched): (String, Vec<String>) = q(
        &mut c,
        c!["XSET.SCAN", "k", "0", "MATCH", "m4?", "COUNT", "1000"],
    );
    let mut matched = matched;
    matched.sort();
    assert_eq!(
        matched,
        (40..50).map(|i| format!("m{i}")).collect::<Vec<_>>()
    );
    let (next, none): (String, Vec<String>) = q(&mut c, c!["XSET.SCAN", "nokey", "0"]);
    assert_eq!((next.as_str(), none.len()), ("0", 0));
}

#[test]
fn key_level_operations_work_as_for_any_type() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    assert_eq!(q::<i64>(&mut c, c!["PEXPIRE", "k", "50"]), 1);
    wait_ttl_out(&mut c, 50);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0, "key-level expiry");
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    assert_eq!(q::<String>(&mut c, c!["RENAME", "k", "k2"]), "OK");
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k2", "a"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "a"]), 0);
    assert_eq!(q::<i64>(&mut c, c!["DEL", "k2"]), 1);
    q::<i64>(&mut c, c!["XSET.ADD", "k3", "a", "100"]);
    assert_eq!(q::<i64>(&mut c, c!["UNLINK", "k3"]), 1);
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k3"]), 0);
    q::<i64>(&mut c, c!["XSET.ADD", "k4", "a", "100"]);
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    let ttl: i64 = q(&mut c, c!["XSET.TTL", "k4", "a"]);
    assert!((99..=100).contains(&ttl));
}

#[test]
fn command_getkeys_and_flags() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let cmds: [&[&str]; 16] = [
        &["XSET.ADD", "key", "a", "1"],
        &["XSET.HAS", "key", "a"],
        &["XSET.MHAS", "key", "a", "b"],
        &["XSET.MEMBERS", "key"],
        &["XSET.REM", "key", "a"],
        &["XSET.CARD", "key"],
        &["XSET.TTL", "key", "a"],
        &["XSET.PTTL", "key", "a"],
        &["XSET.EXPIRETIME", "key", "a"],
        &["XSET.PEXPIRETIME", "key", "a"],
        &["XSET.EXPIRE", "key", "1", "MEMBERS", "1", "a"],
        &["XSET.PEXPIRE", "key", "1", "MEMBERS", "1", "a"],
        &["XSET.EXPIREAT", "key", "1", "MEMBERS", "1", "a"],
        &["XSET.PEXPIREAT", "key", "1", "MEMBERS", "1", "a"],
        &["XSET.PERSIST", "key", "MEMBERS", "1", "a"],
        &["XSET.SCAN", "key", "0"],
    ];
    for cmd in cmds {
        let mut args: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS"];
        args.extend(cmd.iter().map(|a| a.as_bytes()));
        let keys: Vec<String> = q(&mut c, &args);
        assert_eq!(keys, vec!["key"], "{cmd:?}");
    }
    let info: Value = q(&mut c, c!["COMMAND", "INFO", "XSET.ADD", "XSET.HAS"]);
    let text = format!("{info:?}");
    assert!(text.contains("denyoom") && text.contains("fast"), "{text}");
}

#[test]
fn a_hundred_thousand_members() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    for chunk in 0..100 {
        let mut args: Vec<Vec<u8>> = vec![b"XSET.ADD".to_vec(), b"big".to_vec()];
        for i in 0..1000 {
            let n = chunk * 1000 + i;
            args.push(format!("member:{n:08}").into_bytes());
            args.push((1000 + n % 7).to_string().into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        assert_eq!(q::<i64>(&mut c, &refs), 1000);
    }
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "big"]), 100_000);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.HAS", "big", "member:00099999"]),
        1
    );
    let first: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "big", "LIMIT", "0", "3"]);
    assert_eq!(first.len(), 3);
    assert_eq!(snapshot(&mut c, "big").len(), 100_000);
    let usage: i64 = q(&mut c, c!["MEMORY", "USAGE", "big"]);
    assert!(usage > 100_000 * 16, "MEMORY USAGE counts members: {usage}");
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "big"]), 100_000);
}

/// One `XSET.MHAS` over `members`.
fn mhas(c: &mut Connection, key: &str, members: &[Vec<u8>]) -> Vec<i64> {
    let mut args: Vec<&[u8]> = vec![b"XSET.MHAS", key.as_bytes()];
    args.extend(members.iter().map(Vec::as_slice));
    q(c, &args)
}

#[test]
fn a_big_set_churning_while_its_table_grows_loses_nothing() {
    // Adds one member per command (so the hash table grows, and moves its
    // old buckets, in small steps between commands), removes every third
    // member and re-adds half of those, then checks every member's presence
    // before and after a reload.
    let s = Server::start(&[]);
    let mut c = s.conn();
    let n = 60_000;
    let name = |i: usize| format!("m{i:07}").into_bytes();
    for start in (0..n).step_by(500) {
        let mut pipe = redis::pipe();
        for i in start..start + 500 {
            pipe.cmd("XSET.ADD").arg("churn").arg(name(i)).arg(3600);
        }
        pipe.query::<()>(&mut c).expect("adds");
        // A sample spread over everything added so far, often in the middle
        // of a growth: members not yet moved must be found too.
        let added = start + 500;
        let sample: Vec<Vec<u8>> = (0..added).step_by(added / 2000 + 1).map(name).collect();
        assert!(
            mhas(&mut c, "churn", &sample).iter().all(|&h| h == 1),
            "after {added}"
        );
    }
    let mut pipe = redis::pipe();
    for i in (0..n).filter(|i| i % 3 == 0) {
        pipe.cmd("XSET.REM").arg("churn").arg(name(i));
        if i % 2 == 0 {
            pipe.cmd("XSET.ADD").arg("churn").arg(name(i)).arg(7200);
        }
    }
    pipe.query::<()>(&mut c).expect("removals and re-adds");
    let present = |i: usize| !i.is_multiple_of(3) || i.is_multiple_of(2);
    let expected = (0..n).filter(|&i| present(i)).count() as i64;
    for round in 0..2 {
        assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "churn"]), expected);
        for chunk in (0..n).collect::<Vec<_>>().chunks(5000) {
            let names: Vec<Vec<u8>> = chunk.iter().map(|&i| name(i)).collect();
            let want: Vec<i64> = chunk.iter().map(|&i| i64::from(present(i))).collect();
            assert_eq!(mhas(&mut c, "churn", &names), want, "round {round}");
        }
        if round == 0 {
            assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
        }
    }
}

#[test]
fn a_panic_in_a_command_is_an_error_not_a_crash() {
    let mut s = Server::start(&[]);
    let mut c = s.conn();
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    let e = err(&mut c, c!["XSET.DEBUG-PANIC"]);
    assert!(e.starts_with("ERR internal error"), "{e}");
    assert!(s.alive());
    assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", "a"]), 1, "data intact");
}

#[test]
fn encoding_conversions_are_invisible() {
    let s = Server::start_with_module_args(
        &[],
        &["small-max-members", "4", "small-max-member-bytes", "8"],
    );
    let mut c = s.conn();
    let mut want = Vec::new();
    for i in 0..10 {
        let m = format!("m{i}");
        q::<i64>(
            &mut c,
            c!["XSET.ADD", "k", m.as_str(), (100 + i).to_string()],
        );
        want.push(m);
        let mut got: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "k"]);
        got.sort();
        let mut w = want.clone();
        w.sort();
        assert_eq!(got, w, "after {} adds", i + 1);
    }
    let before = snapshot(&mut c, "k");
    q::<String>(&mut c, c!["DEBUG", "RELOAD"]);
    assert_eq!(snapshot(&mut c, "k"), before);
    // Shrink back below half the limit, then a long member converts again.
    q::<i64>(
        &mut c,
        c![
            "XSET.REM", "k", "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"
        ],
    );
    let m: Vec<String> = q(&mut c, c!["XSET.MEMBERS", "k", "REV"]);
    assert_eq!(m, vec!["m9", "m8"]);
    q::<i64>(&mut c, c!["XSET.ADD", "k", "a-member-longer-than-8", "50"]);
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 3);
    let (cursor, all): (String, Vec<String>) = q(&mut c, c!["XSET.SCAN", "k", "0", "COUNT", "100"]);
    assert_eq!((cursor.as_str(), all.len()), ("0", 3));
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 3);
}

#[test]
fn a_scan_that_spans_a_reload_misses_nothing() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    // Insertion order differs from deadline order, so a reload (which
    // rebuilds the layout in deadline order) moves members around.
    let mut args: Vec<Vec<u8>> = vec![b"XSET.ADD".to_vec(), b"k".to_vec()];
    for i in 0..2000u32 {
        args.push(format!("m{i}").into_bytes());
        args.push((100_000 - i).to_string().into_bytes());
    }
    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    q::<i64>(&mut c, &refs);
    let (mut cursor, first): (String, Vec<String>) =
        q(&mut c, c!["XSET.SCAN", "k", "0", "COUNT", "1000"]);
    let mut seen: std::collections::HashSet<String> = first.into_iter().collect();
    assert_eq!(q::<String>(&mut c, c!["DEBUG", "RELOAD"]), "OK");
    while cursor != "0" {
        let (next, batch): (String, Vec<String>) = q(
            &mut c,
            c!["XSET.SCAN", "k", cursor.as_str(), "COUNT", "1000"],
        );
        seen.extend(batch);
        cursor = next;
    }
    assert_eq!(seen.len(), 2000);
    // Any unsigned cursor is accepted, as SCAN accepts it.
    let (_, _): (String, Vec<String>) = q(&mut c, c!["XSET.SCAN", "k", "18446744073709551615"]);
}
