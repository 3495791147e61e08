//! Deadline windows against a real redis-server: `XSET.MEMBERS ...
//! BYDEADLINE min max` and `XSET.COUNT key min max`, in both encodings.
//! Bounds (inclusive, exclusive, infinities, equal, empty, min above max),
//! members without a deadline at `+inf`, `REV`/`LIMIT`/`WITHTTL` inside a
//! window, expired members never counted, bad bounds rejected without
//! touching the keyspace, wrong types and missing keys.

use crate::harness::*;
use redis::{Connection, Value};

const MIN_MAX: &str = "ERR min or max is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// 2100-01-01: far enough that nothing of the fixture expires meanwhile.
const B: u64 = 4_102_444_800_000;

fn words(cmd: &str) -> Vec<&[u8]> {
    cmd.split(' ').map(str::as_bytes).collect()
}

fn run<T: redis::FromRedisValue>(c: &mut Connection, cmd: &str) -> T {
    q(c, &words(cmd))
}

fn fails(c: &mut Connection, cmd: &str) -> String {
    err(c, &words(cmd))
}

/// Whether `key` is in the large encoding: only a large set's scan stops
/// before the end after one member (a small set is returned whole).
fn is_large(c: &mut Connection, key: &str) -> bool {
    let (cursor, _): (String, Vec<Vec<u8>>) = q(c, c!["XSET.SCAN", key, "0", "COUNT", "1"]);
    cursor != "0"
}

/// `k` holds a, b, c, d at B, B+1000, B+2000, B+3000 and p without a
/// deadline; in the large encoding when `large`.
fn fixture(c: &mut Connection, large: bool) {
    let limit = if large { "0" } else { "128" };
    run::<()>(c, &format!("CONFIG SET xset.small-max-members {limit}"));
    let add = format!(
        "XSET.ADDEX k PXAT MEMBERS 5 a {B} b {} c {} d {} p {B}",
        B + 1000,
        B + 2000,
        B + 3000
    );
    assert_eq!(run::<i64>(c, &add), 5);
    assert_eq!(run::<i64>(c, "XSET.PERSIST k p"), 1);
    assert_eq!(is_large(c, "k"), large);
}

/// Replaces `B+n` in a bound by its value (`(B+1000` -> `(4102444801000`).
fn bound(s: &str) -> String {
    let (paren, rest) = match s.strip_prefix('(') {
        Some(r) => ("(", r),
        None => ("", s),
    };
    match rest.strip_prefix('B') {
        Some(off) => {
            let off: u64 = off.trim_start_matches('+').parse().unwrap_or(0);
            format!("{paren}{}", B + off)
        }
        None => s.to_string(),
    }
}

#[test]
fn bounds_select_by_deadline_in_both_encodings() {
    let cases: &[(&str, &str, &str)] = &[
        ("B", "B+2000", "a b c"),
        ("(B", "B+2000", "b c"),
        ("B", "(B+2000", "a b"),
        ("(B", "(B+2000", "b"),
        ("B+1000", "B+1000", "b"),
        ("(B+1000", "B+1000", ""),
        ("B+1000", "(B+1000", ""),
        ("(B+1000", "(B+1001", ""),
        ("B+1", "B+999", ""),
        ("B+2000", "B", ""),
        ("-inf", "+inf", "a b c d p"),
        ("-INF", "+Inf", "a b c d p"),
        ("(-inf", "+inf", "a b c d p"),
        ("-inf", "(+inf", "a b c d"),
        ("-inf", "9223372036854775807", "a b c d"),
        ("+inf", "+inf", "p"),
        ("(+inf", "+inf", ""),
        ("+inf", "-inf", ""),
        ("B+3000", "+inf", "d p"),
        ("(B+3000", "+inf", "p"),
        ("(9223372036854775807", "+inf", "p"),
        ("-inf", "-inf", ""),
        ("-inf", "B", "a"),
        ("-9223372036854775808", "B", "a"),
        ("-5", "(B+1000", "a"),
        ("0", "(B", ""),
        ("(0", "1", ""),
    ];
    for large in [false, true] {
        let s = Server::start(&[]);
        let mut c = s.conn();
        fixture(&mut c, large);
        for &(min, max, want) in cases {
            let (min, max) = (bound(min), bound(max));
            let want: Vec<&str> = want.split(' ').filter(|w| !w.is_empty()).collect();
            let fwd: Vec<String> = run(&mut c, &format!("XSET.MEMBERS k BYDEADLINE {min} {max}"));
            assert_eq!(fwd, want, "large={large} {min} {max}");
            let rev: Vec<String> = run(
                &mut c,
                &format!("XSET.MEMBERS k BYDEADLINE {min} {max} REV"),
            );
            let mut want_rev = want.clone();
            want_rev.reverse();
            assert_eq!(rev, want_rev, "large={large} {min} {max} REV");
            let n: usize = run(&mut c, &format!("XSET.COUNT k {min} {max}"));
            assert_eq!(n, want.len(), "large={large} COUNT {min} {max}");
        }
        // Without BYDEADLINE nothing changed.
        let all: Vec<String> = run(&mut c, "XSET.MEMBERS k");
        assert_eq!(all, ["a", "b", "c", "d", "p"]);
        assert_eq!(run::<i64>(&mut c, "XSET.CARD k"), 5);
        // Equal deadlines: both in, in the order XSET.MEMBERS gives them.
        run::<i64>(
            &mut c,
            &format!("XSET.ADDEX k PXAT MEMBERS 1 b2 {}", B + 1000),
        );
        let mut tie: Vec<String> = run(
            &mut c,
            &format!("XSET.MEMBERS k BYDEADLINE {0} {0}", B + 1000),
        );
        let order: Vec<String> = run(&mut c, "XSET.MEMBERS k");
        assert_eq!(tie, order[1..3]);
        tie.sort();
        assert_eq!(tie, ["b", "b2"]);
        assert_eq!(
            run::<i64>(&mut c, &format!("XSET.COUNT k {0} {0}", B + 1000)),
            2
        );
    }
}

#[test]
fn rev_limit_and_withttl_inside_a_window() {
    for large in [false, true] {
        let s = Server::start(&[]);
        let mut c = s.conn();
        fixture(&mut c, large);
        let now = server_ms(&mut c);
        let page: Vec<Value> = run(
            &mut c,
            &format!("XSET.MEMBERS k BYDEADLINE ({B} +inf REV LIMIT 1 2 WITHTTL"),
        );
        let [
            Value::BulkString(m1),
            Value::Int(t1),
            Value::BulkString(m2),
            Value::Int(t2),
        ] = &page[..]
        else {
            panic!("{page:?}");
        };
        assert_eq!((&m1[..], &m2[..]), (&b"d"[..], &b"c"[..]), "large={large}");
        let near = |t: i64, deadline: u64| (deadline as i64 - now as i64 - t).abs() < 2000;
        assert!(near(*t1, B + 3000) && near(*t2, B + 2000), "{t1} {t2}");
        // The first of the reversed window is the member without a deadline.
        let first: Vec<Value> = run(
            &mut c,
            "XSET.MEMBERS k BYDEADLINE -inf +inf REV LIMIT 0 1 WITHTTL",
        );
        assert_eq!(first, [Value::BulkString(b"p".to_vec()), Value::Int(-1)]);
        // Options after the window in any order, any case.
        let w = format!("{} {}", B, B + 3000);
        let x: Vec<String> = run(
            &mut c,
            &format!("xset.members k bydeadline {w} limit 0 -1 rev"),
        );
        assert_eq!(x, ["d", "c", "b", "a"]);
        let y: Vec<String> = run(&mut c, &format!("XSET.MEMBERS k BYDEADLINE {w} LIMIT 1 2"));
        assert_eq!(y, ["b", "c"]);
        let z: Vec<Value> = run(
            &mut c,
            &format!("XSET.MEMBERS k BYDEADLINE {w} WITHTTL LIMIT 3 5 REV"),
        );
        assert_eq!(z.len(), 2);
        assert_eq!(z[0], Value::BulkString(b"a".to_vec()));
        for (limit, want) in [
            ("4 1", 0),
            ("0 0", 0),
            ("-1 5", 0),
            ("0 -5", 4),
            ("2 -1", 2),
        ] {
            let got: Vec<String> = run(
                &mut c,
                &format!("XSET.MEMBERS k BYDEADLINE {w} LIMIT {limit}"),
            );
            assert_eq!(got.len(), want, "LIMIT {limit}");
        }
    }
}

#[test]
fn expired_members_are_never_in_a_window() {
    for large in [false, true] {
        let s = Server::start_with_module_args(&[], &["active-expire", "no"]);
        let mut c = s.conn();
        fixture(&mut c, large);
        let now = server_ms(&mut c);
        run::<i64>(&mut c, "XSET.ADDEX k PX MEMBERS 2 x 30 y 30");
        let near = format!("XSET.COUNT k -inf {}", now + 60_000);
        assert_eq!(run::<i64>(&mut c, &near), 2, "live before");
        wait_ttl_out(&mut c, 30);
        // While writes are paused nothing is reclaimed: the members are still
        // stored and only hidden, so this checks the window itself.
        run::<()>(&mut c, "CLIENT PAUSE 10000 WRITE");
        assert_eq!(run::<i64>(&mut c, &near), 0, "large={large}");
        assert_eq!(
            run::<i64>(&mut c, &format!("XSET.COUNT k {now} {}", now + 60_000)),
            0
        );
        assert_eq!(run::<i64>(&mut c, "XSET.COUNT k -inf +inf"), 5);
        let m: Vec<String> = run(&mut c, &format!("XSET.MEMBERS k BYDEADLINE -inf {}", B));
        assert_eq!(m, ["a"]);
        let m: Vec<String> = run(
            &mut c,
            &format!("XSET.MEMBERS k BYDEADLINE -inf {} REV", now + 60_000),
        );
        assert!(m.is_empty(), "{m:?}");
        run::<()>(&mut c, "CLIENT UNPAUSE");
        // And after the lazy reclaim, the same.
        assert_eq!(run::<i64>(&mut c, &near), 0);
        assert_eq!(run::<i64>(&mut c, "XSET.CARD k"), 5);
        let all: Vec<String> = run(&mut c, "XSET.MEMBERS k BYDEADLINE -inf +inf");
        assert_eq!(all, ["a", "b", "c", "d", "p"]);
    }
}

/// A deterministic spread of deadlines, many per leaf of the large
/// encoding's index, checked window by window against a client-side model.
#[test]
fn counts_and_lists_match_a_model_across_many_leaves() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    run::<()>(&mut c, "CONFIG SET xset.small-max-members 0");
    let mut model: Vec<(String, u64)> = Vec::new();
    let mut x: u64 = 12345;
    for i in 0..2000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        model.push((format!("m{i}"), B + (x >> 33) % 5000));
    }
    for chunk in model.chunks(500) {
        let mut args: Vec<Vec<u8>> = ["XSET.ADDEX", "big", "PXAT", "MEMBERS"]
            .iter()
            .map(|w| w.as_bytes().to_vec())
            .collect();
        args.push(chunk.len().to_string().into_bytes());
        for (m, d) in chunk {
            args.push(m.clone().into_bytes());
            args.push(d.to_string().into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        assert_eq!(q::<usize>(&mut c, &refs), chunk.len());
    }
    assert!(is_large(&mut c, "big"));
    let windows = [
        (0, 5000),
        (0, 10),
        (100, 4900),
        (2500, 2500),
        (4990, 6000),
        (1, 4999),
    ];
    for (lo, hi) in windows {
        for (lo_ex, hi_ex) in [(false, false), (true, false), (false, true), (true, true)] {
            let inside = |d: u64| {
                let (l, h) = (B + lo, B + hi);
                (if lo_ex { d > l } else { d >= l }) && (if hi_ex { d < h } else { d <= h })
            };
            let want: Vec<u64> = {
                let mut v: Vec<u64> = model.iter().map(|p| p.1).filter(|&d| inside(d)).collect();
                v.sort();
                v
            };
            let min = format!("{}{}", if lo_ex { "(" } else { "" }, B + lo);
            let max = format!("{}{}", if hi_ex { "(" } else { "" }, B + hi);
            let n: usize = run(&mut c, &format!("XSET.COUNT big {min} {max}"));
            assert_eq!(n, want.len(), "{min} {max}");
            let listed: Vec<String> =
                run(&mut c, &format!("XSET.MEMBERS big BYDEADLINE {min} {max}"));
            let deadlines: Vec<u64> = listed
                .iter()
                .map(|m| model[m[1..].parse::<usize>().expect("index")].1)
                .collect();
            assert_eq!(deadlines, want, "{min} {max}");
        }
    }
}

#[test]
fn bad_bounds_are_errors_that_change_nothing() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    fixture(&mut c, false);
    run::<()>(&mut c, "SET s v");
    let before = (run::<String>(&mut c, "DEBUG DIGEST"), snapshot(&mut c, "k"));
    let bad = [
        "abc",
        "(",
        "((1",
        "1.5",
        "+1",
        "01",
        "-0",
        "inf",
        "-infinity",
        "+inf(",
        "1e3",
        "0x10",
        "9223372036854775808",
        "(9223372036854775808",
        "-9223372036854775809",
        "(+1",
        "((+inf",
    ];
    for b in bad {
        for cmd in [
            format!("XSET.COUNT k {b} 10"),
            format!("XSET.COUNT k 0 {b}"),
            format!("XSET.COUNT nokey {b} +inf"),
            format!("XSET.COUNT s {b} +inf"),
            format!("XSET.MEMBERS k BYDEADLINE {b} 10"),
            format!("XSET.MEMBERS k BYDEADLINE -inf {b} REV"),
            format!("XSET.MEMBERS nokey BYDEADLINE 0 {b}"),
        ] {
            assert_eq!(fails(&mut c, &cmd), MIN_MAX, "{cmd}");
        }
    }
    // Empty strings and spaces cannot go through `words`.
    for b in [&b""[..], b" 1", b"1 ", b"( 1"] {
        assert_eq!(err(&mut c, &[b"XSET.COUNT", b"k", b, b"10"]), MIN_MAX);
        assert_eq!(
            err(&mut c, &[b"XSET.MEMBERS", b"k", b"BYDEADLINE", b"0", b]),
            MIN_MAX
        );
    }
    let misplaced = format!("{SYNTAX}: 'BYDEADLINE' must come right after the key");
    let missing = |w: &str| format!("{SYNTAX}: value missing after '{w}'");
    for (cmd, want) in [
        ("XSET.MEMBERS k BYDEADLINE", missing("BYDEADLINE")),
        ("XSET.MEMBERS k BYDEADLINE 1", missing("BYDEADLINE")),
        ("XSET.MEMBERS k REV BYDEADLINE 1 2", misplaced.clone()),
        ("XSET.MEMBERS k LIMIT 0 1 BYDEADLINE 1 2", misplaced.clone()),
        ("XSET.MEMBERS k BYDEADLINE 1 2 BYDEADLINE 1 2", misplaced),
        (
            "XSET.MEMBERS k BYDEADLINE 1 2 FOO",
            format!("{SYNTAX}: unknown option 'FOO'"),
        ),
        ("XSET.MEMBERS k BYDEADLINE 1 2 LIMIT 0", missing("LIMIT")),
        (
            "XSET.MEMBERS k BYDEADLINES 1 2",
            format!("{SYNTAX}: unknown option 'BYDEADLINES'"),
        ),
    ] {
        assert_eq!(fails(&mut c, cmd), want, "{cmd}");
    }
    // A missing value is read as the next word: REV is a bad bound.
    assert_eq!(fails(&mut c, "XSET.MEMBERS k BYDEADLINE 1 REV"), MIN_MAX);
    for cmd in [
        "XSET.COUNT",
        "XSET.COUNT k",
        "XSET.COUNT k 1",
        "XSET.COUNT k 1 2 3",
    ] {
        assert_eq!(
            fails(&mut c, cmd),
            "ERR wrong number of arguments for 'xset.count' command",
            "{cmd}"
        );
    }
    let after = (run::<String>(&mut c, "DEBUG DIGEST"), snapshot(&mut c, "k"));
    assert_eq!(after, before);
    assert_eq!(run::<i64>(&mut c, "EXISTS nokey"), 0);
    assert_eq!(run::<String>(&mut c, "GET s"), "v");
}

#[test]
fn wrong_type_and_missing_keys() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    run::<()>(&mut c, "SET s v");
    run::<i64>(&mut c, "RPUSH l x");
    for key in ["s", "l"] {
        assert_eq!(
            fails(&mut c, &format!("XSET.COUNT {key} -inf +inf")),
            WRONGTYPE
        );
        assert_eq!(fails(&mut c, &format!("XSET.COUNT {key} 5 1")), WRONGTYPE);
        let members = format!("XSET.MEMBERS {key} BYDEADLINE -inf +inf REV LIMIT 0 1 WITHTTL");
        assert_eq!(fails(&mut c, &members), WRONGTYPE);
    }
    assert_eq!(run::<i64>(&mut c, "XSET.COUNT nokey -inf +inf"), 0);
    assert_eq!(run::<i64>(&mut c, "XSET.COUNT nokey 5 1"), 0);
    let none: Vec<String> = run(&mut c, "XSET.MEMBERS nokey BYDEADLINE -inf +inf WITHTTL");
    assert!(none.is_empty());
    assert_eq!(run::<i64>(&mut c, "EXISTS nokey"), 0);
    assert_eq!(run::<String>(&mut c, "GET s"), "v");
}

#[test]
fn count_is_a_fast_read_only_command() {
    let s = Server::start(&[]);
    let mut c = s.conn();
    let info: Vec<Value> = run(&mut c, "COMMAND INFO xset.count");
    let Some(Value::Array(fields)) = info.first() else {
        panic!("{info:?}");
    };
    assert_eq!(fields[1], Value::Int(4), "arity");
    let flags: Vec<String> = match &fields[2] {
        Value::Array(f) | Value::Set(f) => f
            .iter()
            .map(|v| match v {
                Value::SimpleString(s) => s.clone(),
                Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                other => format!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    };
    for want in ["readonly", "fast"] {
        assert!(flags.iter().any(|f| f == want), "{flags:?}");
    }
    assert!(!flags.iter().any(|f| f == "write"), "{flags:?}");
}
