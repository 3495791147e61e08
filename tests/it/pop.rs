//! `XSET.RANDMEMBER` and `XSET.POP` against a real server: every count
//! case in both encodings, `WITHTTL`, `SOONEST` order, missing keys and
//! wrong types, expired members never returned (also when more are due
//! than one command reclaims, and on a replica, which never reclaims), the
//! key deleted when popped empty, the replication stream (a pop propagates
//! `XSET.REM` of exactly what it returned) and a replica that converges
//! after a mix of pops.

use crate::harness::*;
use redis::{Connection, FromRedisValue, Value};
use std::collections::BTreeSet;

/// `n` members `m0`..: every fifth without a deadline, the others with
/// deadlines 100 s, 101 s, ... away.
fn fill(c: &mut Connection, key: &str, n: usize) -> BTreeSet<Vec<u8>> {
    let mut all = BTreeSet::new();
    for i in 0..n {
        let m = format!("m{i}");
        let ttl = (100 + i).to_string();
        q::<i64>(c, c!["XSET.ADD", key, m.as_str(), ttl.as_str()]);
        if i % 5 == 0 {
            q::<i64>(c, c!["XSET.PERSIST", key, m.as_str()]);
        }
        all.insert(m.into_bytes());
    }
    all
}

fn set_of(v: &[Vec<u8>]) -> BTreeSet<Vec<u8>> {
    v.iter().cloned().collect()
}

#[test]
fn randmember_follows_srandmember_count_rules() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        let all = fill(&mut c, "k", 10);
        // No count: one member, as a bulk string.
        for _ in 0..20 {
            let one: Vec<u8> = q(&mut c, c!["XSET.RANDMEMBER", "k"]);
            assert!(all.contains(&one));
        }
        // A positive count: distinct members, all of them at most.
        for count in [1usize, 3, 9, 10, 11, 1000] {
            let n = count.to_string();
            let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", n.as_str()]);
            assert_eq!(got.len(), count.min(10), "count {count}");
            assert_eq!(set_of(&got).len(), got.len(), "distinct");
            assert!(set_of(&got).is_subset(&all));
        }
        // A negative count: exactly that many, repeats allowed.
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "-25"]);
        assert_eq!(got.len(), 25);
        assert!(set_of(&got).is_subset(&all));
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "-1"]);
        assert_eq!(got.len(), 1);
        // Zero: an empty array.
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "0"]);
        assert!(got.is_empty());
        // Over many draws, every member shows up.
        let mut seen = BTreeSet::new();
        for _ in 0..30 {
            let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "-10"]);
            seen.extend(got);
        }
        assert_eq!(seen, all, "draws cover the set");
        // Nothing changed.
        assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 10);
    }
}

#[test]
fn randmember_withttl_follows_each_member_with_its_ttl() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        let all = fill(&mut c, "k", 10);
        for count in ["4", "-7", "50"] {
            let flat: Vec<Value> = q(&mut c, c!["XSET.RANDMEMBER", "k", count, "WITHTTL"]);
            let want = match count {
                "4" => 4,
                "-7" => 7,
                _ => 10,
            };
            assert_eq!(flat.len(), 2 * want, "count {count}");
            for pair in flat.chunks(2) {
                let m: Vec<u8> = FromRedisValue::from_redis_value(pair[0].clone()).expect("member");
                let ttl: i64 = FromRedisValue::from_redis_value(pair[1].clone()).expect("ttl");
                assert!(all.contains(&m));
                let i: i64 = String::from_utf8_lossy(&m[1..]).parse().expect("index");
                if i % 5 == 0 {
                    assert_eq!(ttl, -1, "no deadline");
                } else {
                    let full = (100 + i) * 1000;
                    assert!(ttl > full - 10_000 && ttl <= full, "{ttl} for m{i}");
                }
            }
        }
        // Lower-case keyword too.
        let flat: Vec<Value> = q(&mut c, c!["XSET.RANDMEMBER", "k", "1", "withttl"]);
        assert_eq!(flat.len(), 2);
    }
}

#[test]
fn missing_keys_wrong_types_and_bad_arguments() {
    let (_s, mut c) = server_with_encoding(false);
    assert_eq!(
        q::<Value>(&mut c, c!["XSET.RANDMEMBER", "nokey"]),
        Value::Nil
    );
    for count in ["5", "-5", "0"] {
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "nokey", count]);
        assert!(got.is_empty());
        let got: Vec<Value> = q(&mut c, c!["XSET.RANDMEMBER", "nokey", count, "WITHTTL"]);
        assert!(got.is_empty());
    }
    assert_eq!(q::<Value>(&mut c, c!["XSET.POP", "nokey"]), Value::Nil);
    assert_eq!(
        q::<Value>(&mut c, c!["XSET.POP", "nokey", "SOONEST"]),
        Value::Nil
    );
    for args in [&["3"][..], &["0"][..], &["3", "SOONEST"][..]] {
        let mut cmd = vec![&b"XSET.POP"[..], b"nokey"];
        cmd.extend(args.iter().map(|a| a.as_bytes()));
        let got: Vec<Vec<u8>> = q(&mut c, &cmd);
        assert!(got.is_empty());
    }
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "nokey"]), 0);

    let _: String = q(&mut c, c!["SET", "str", "x"]);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for args in [
        c!["XSET.RANDMEMBER", "str"],
        c!["XSET.RANDMEMBER", "str", "3"],
        c!["XSET.RANDMEMBER", "str", "-3", "WITHTTL"],
        c!["XSET.POP", "str"],
        c!["XSET.POP", "str", "2"],
        c!["XSET.POP", "str", "SOONEST"],
    ] {
        assert_eq!(err(&mut c, args), wrongtype, "{args:?}");
    }
    assert_eq!(q::<String>(&mut c, c!["GET", "str"]), "x");

    q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100"]);
    let not_integer = "ERR value is not an integer or out of range";
    for (args, want) in [
        (c!["XSET.RANDMEMBER", "k", "WITHTTL"], not_integer),
        (c!["XSET.RANDMEMBER", "k", "1.5"], not_integer),
        (c!["XSET.RANDMEMBER", "k", "+1"], not_integer),
        (
            c!["XSET.RANDMEMBER", "k", "1", "WITHTTLS"],
            "ERR syntax error: unknown option 'WITHTTLS'",
        ),
        (
            c!["XSET.RANDMEMBER", "k", "1", "WITHTTL", "x"],
            "ERR syntax error: unknown option 'x'",
        ),
        (
            c!["XSET.RANDMEMBER", "k", "-1048577"],
            "ERR value is out of range",
        ),
        (
            c!["XSET.POP", "k", "-1"],
            "ERR value is out of range, must be positive",
        ),
        (c!["XSET.POP", "k", "x"], not_integer),
        (c!["XSET.POP", "k", "SOONES"], not_integer),
        (
            c!["XSET.POP", "k", "1", "SOONES"],
            "ERR syntax error: unknown option 'SOONES'",
        ),
        (
            c!["XSET.POP", "k", "1", "SOONEST", "x"],
            "ERR syntax error: unknown option 'x'",
        ),
        (
            c!["XSET.POP", "k", "SOONEST", "1"],
            "ERR syntax error: unknown option '1'",
        ),
        (
            c!["XSET.RANDMEMBER"],
            "ERR wrong number of arguments for 'xset.randmember' command",
        ),
        (
            c!["XSET.POP"],
            "ERR wrong number of arguments for 'xset.pop' command",
        ),
    ] {
        assert_eq!(err(&mut c, args), want, "{args:?}");
    }
    // The largest negative count allowed works.
    let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "-1048576"]);
    assert_eq!(got.len(), 1 << 20);
    // A rejected command changed nothing.
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 1);
}

#[test]
fn pop_at_random_removes_what_it_returns_and_the_key_when_empty() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        let all = fill(&mut c, "k", 10);
        let one: Vec<u8> = q(&mut c, c!["XSET.POP", "k"]);
        assert!(all.contains(&one));
        assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", &one]), 0);
        let three: Vec<Vec<u8>> = q(&mut c, c!["XSET.POP", "k", "3"]);
        assert_eq!(set_of(&three).len(), 3);
        assert!(!three.contains(&one));
        for m in &three {
            assert!(all.contains(m));
            assert_eq!(q::<i64>(&mut c, c!["XSET.HAS", "k", m]), 0);
        }
        let none: Vec<Vec<u8>> = q(&mut c, c!["XSET.POP", "k", "0"]);
        assert!(none.is_empty());
        assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 6);
        let rest: Vec<Vec<u8>> = q(&mut c, c!["XSET.POP", "k", "100"]);
        assert_eq!(rest.len(), 6);
        let mut popped = set_of(&rest);
        popped.extend(three);
        popped.insert(one);
        assert_eq!(popped, all, "every member popped exactly once");
        assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0, "key deleted");
        assert_eq!(q::<Value>(&mut c, c!["XSET.POP", "k"]), Value::Nil);
        // A single pop of the last member deletes the key too.
        q::<i64>(&mut c, c!["XSET.ADD", "k", "last", "100"]);
        assert_eq!(q::<Vec<u8>>(&mut c, c!["XSET.POP", "k"]), b"last");
        assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
    }
}

#[test]
fn pop_soonest_takes_the_earliest_deadlines_and_members_without_one_last() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                "k",
                "PX",
                "MEMBERS",
                "5",
                "d",
                "40000",
                "b",
                "20000",
                "e",
                "50000",
                "a",
                "10000",
                "c",
                "30000"
            ],
        );
        q::<i64>(&mut c, c!["XSET.ADD", "k", "forever", "10"]);
        q::<i64>(&mut c, c!["XSET.PERSIST", "k", "forever"]);
        assert_eq!(q::<Vec<u8>>(&mut c, c!["XSET.POP", "k", "SOONEST"]), b"a");
        assert_eq!(
            q::<Vec<String>>(&mut c, c!["XSET.POP", "k", "2", "soonest"]),
            ["b", "c"]
        );
        assert_eq!(
            q::<Vec<String>>(&mut c, c!["XSET.POP", "k", "10", "SOONEST"]),
            ["d", "e", "forever"]
        );
        assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
    }
}

#[test]
fn expired_members_are_never_returned() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                "k",
                "PX",
                "MEMBERS",
                "3",
                "x1",
                "30",
                "x2",
                "30",
                "x3",
                "30"
            ],
        );
        q::<i64>(&mut c, c!["XSET.ADD", "k", "a", "100", "b", "100"]);
        wait_ttl_out(&mut c, 30);
        let live: BTreeSet<Vec<u8>> = [b"a".to_vec(), b"b".to_vec()].into();
        for _ in 0..20 {
            let one: Vec<u8> = q(&mut c, c!["XSET.RANDMEMBER", "k"]);
            assert!(live.contains(&one));
        }
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "10"]);
        assert_eq!(set_of(&got), live);
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "-30"]);
        assert!(set_of(&got).is_subset(&live));
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.POP", "k", "10", "SOONEST"]);
        assert_eq!(set_of(&got), live);
        assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
    }
}

/// More members due than one command reclaims (1024): the rest stay stored
/// (and fill most of the slab) but are still never returned.
#[test]
fn expired_members_beyond_the_reclaim_limit_are_never_returned() {
    for soonest in [false, true] {
        let (_s, mut c) = server_with_encoding(false);
        // Four commands each reclaim 1024, leaving 404 for the fifth.
        let mut args: Vec<String> = ["XSET.ADDEX", "k", "PX", "MEMBERS", "4500"]
            .map(String::from)
            .to_vec();
        for i in 0..4500 {
            args.push(format!("x{i}"));
            args.push("30".into());
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        q::<i64>(&mut c, &refs);
        q::<i64>(
            &mut c,
            c!["XSET.ADD", "k", "a", "100", "b", "100", "c", "100"],
        );
        wait_ttl_out(&mut c, 30);
        let live: BTreeSet<Vec<u8>> = [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()].into();
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "-50"]);
        assert!(set_of(&got).is_subset(&live), "{:?}", set_of(&got));
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.RANDMEMBER", "k", "2"]);
        assert!(set_of(&got).is_subset(&live));
        let got: Vec<Vec<u8>> = if soonest {
            q(&mut c, c!["XSET.POP", "k", "2", "SOONEST"])
        } else {
            q(&mut c, c!["XSET.POP", "k", "2"])
        };
        assert_eq!(got.len(), 2);
        assert!(set_of(&got).is_subset(&live));
        let got: Vec<Vec<u8>> = q(&mut c, c!["XSET.POP", "k", "10"]);
        assert_eq!(got.len(), 1);
        assert!(live.contains(&got[0]));
        assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "k"]), 0);
        assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
    }
}

fn rem_of(key: &str, members: &[String]) -> Vec<String> {
    let mut want = vec!["XSET.REM".to_string(), key.to_string()];
    want.extend(members.iter().cloned());
    want
}

#[test]
fn pop_propagates_the_removal_of_exactly_the_members_it_returned() {
    let s = replication_primary();
    let mut c = s.conn();
    let mut r = ReplStream::connect(s.port);
    q::<i64>(
        &mut c,
        c![
            "XSET.ADD", "k", "a", "100", "b", "200", "c", "300", "d", "400", "e", "500", "f", "600"
        ],
    );
    assert_eq!(r.next()[0], "XSET.ADDEX");
    let one: String = q(&mut c, c!["XSET.POP", "k"]);
    assert_eq!(r.next(), rem_of("k", std::slice::from_ref(&one)));
    let two: Vec<String> = q(&mut c, c!["XSET.POP", "k", "2"]);
    assert_eq!(r.next(), rem_of("k", &two));
    let soonest: Vec<String> = q(&mut c, c!["XSET.POP", "k", "1", "SOONEST"]);
    assert_eq!(r.next(), rem_of("k", &soonest));
    // Reads and pops that remove nothing propagate nothing.
    let _: Value = q(&mut c, c!["XSET.RANDMEMBER", "k", "-5", "WITHTTL"]);
    let _: Value = q(&mut c, c!["XSET.RANDMEMBER", "k"]);
    let _: Vec<String> = q(&mut c, c!["XSET.POP", "k", "0"]);
    let _: Value = q(&mut c, c!["XSET.POP", "nokey"]);
    let _: Vec<String> = q(&mut c, c!["XSET.POP", "nokey", "3", "SOONEST"]);
    marker(&mut c, &mut r, 1);
    // A due member is reclaimed first (its own XSET.REM), then the pop
    // propagates only what it returned, in one transaction.
    q::<i64>(
        &mut c,
        c!["XSET.ADDEX", "k", "PX", "MEMBERS", "1", "x", "30"],
    );
    r.next();
    wait_ttl_out(&mut c, 30);
    let rest: Vec<String> = q(&mut c, c!["XSET.POP", "k", "10", "SOONEST"]);
    assert_eq!(rest.len(), 2);
    assert_eq!(r.next(), ["MULTI"]);
    assert_eq!(r.next(), rem_of("k", &["x".to_string()]));
    assert_eq!(r.next(), rem_of("k", &rest));
    assert_eq!(r.next(), ["EXEC"]);
    // Popped empty: the key is gone, and nothing more was propagated.
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "k"]), 0);
    marker(&mut c, &mut r, 2);
}

#[test]
fn a_replica_converges_after_pops_and_never_shows_expired_members() {
    let (_p, _r, mut pc, mut rc) = primary_and_replica();
    fill(&mut pc, "small", 50);
    fill(&mut pc, "large", 400);
    fill(&mut pc, "gone", 5);
    for key in ["small", "large"] {
        for _ in 0..5 {
            let _: Value = q(&mut pc, c!["XSET.POP", key]);
            let _: Value = q(&mut pc, c!["XSET.POP", key, "3"]);
            let _: Value = q(&mut pc, c!["XSET.POP", key, "SOONEST"]);
            let _: Value = q(&mut pc, c!["XSET.POP", key, "2", "SOONEST"]);
            let _: Value = q(&mut pc, c!["XSET.RANDMEMBER", key, "-3"]);
        }
    }
    let _: Vec<String> = q(&mut pc, c!["XSET.POP", "gone", "5"]);
    assert_eq!(q::<i64>(&mut pc, c!["WAIT", "1", "5000"]), 1);
    for key in ["small", "large"] {
        assert_eq!(snapshot(&mut rc, key), snapshot(&mut pc, key), "{key}");
        let digest = |c: &mut Connection| q::<Vec<String>>(c, c!["DEBUG", "DIGEST-VALUE", key]);
        assert_eq!(digest(&mut rc), digest(&mut pc), "{key}");
    }
    assert_eq!(q::<i64>(&mut pc, c!["XSET.CARD", "small"]), 50 - 5 * 7);
    assert_eq!(q::<i64>(&mut pc, c!["XSET.CARD", "large"]), 400 - 5 * 7);
    assert_eq!(q::<i64>(&mut rc, c!["EXISTS", "gone"]), 0);
    // The replica never reclaims on its own clock, but hides what expired.
    q::<i64>(
        &mut pc,
        c![
            "XSET.ADDEX",
            "large",
            "PX",
            "MEMBERS",
            "2",
            "x1",
            "30",
            "x2",
            "30"
        ],
    );
    assert_eq!(q::<i64>(&mut pc, c!["WAIT", "1", "5000"]), 1);
    wait_ttl_out(&mut rc, 30);
    let on_replica = q::<Vec<Vec<u8>>>(&mut rc, c!["XSET.RANDMEMBER", "large", "1000"]);
    assert_eq!(on_replica.len(), 400 - 5 * 7);
    assert!(
        on_replica.iter().all(|m| !m.starts_with(b"x")),
        "expired member on the replica"
    );
    for _ in 0..50 {
        let one: Vec<u8> = q(&mut rc, c!["XSET.RANDMEMBER", "large"]);
        assert!(!one.starts_with(b"x"));
        let some: Vec<Vec<u8>> = q(&mut rc, c!["XSET.RANDMEMBER", "large", "-5"]);
        assert!(some.iter().all(|m| !m.starts_with(b"x")));
    }
}

#[test]
fn pops_emit_xset_rem_then_del_and_reads_emit_nothing() {
    let s = Server::start_with_module_args(
        &["--notify-keyspace-events", "Kgd"],
        &["active-expire", "no"],
    );
    let mut c = s.conn();
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    listen(&mut ps, "__keyspace@0__:k");
    q::<i64>(
        &mut c,
        c!["XSET.ADD", "k", "a", "100", "b", "100", "c", "100"],
    );
    let _: Value = q(&mut c, c!["XSET.RANDMEMBER", "k", "2", "WITHTTL"]);
    let _: Value = q(&mut c, c!["XSET.POP", "k", "0"]);
    let _: Value = q(&mut c, c!["XSET.POP", "k"]);
    let _: Value = q(&mut c, c!["XSET.POP", "k", "5", "SOONEST"]);
    let got: Vec<String> = drain(&mut ps, &mut c)
        .iter()
        .map(|(_, p)| String::from_utf8_lossy(p).into_owned())
        .collect();
    assert_eq!(got, ["xset.add", "xset.rem", "xset.rem", "del"]);
}

/// The server's resident memory (`VmRSS`) and its high-water mark
/// (`VmHWM`) in KiB.
fn rss_and_peak_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// How far the server's resident memory rose (KiB) while it answered
/// `cmd`, on a fresh server holding the same 128 members of 8 KiB as an
/// xset `x` and a plain set `s`: the high-water mark is reset (Linux
/// `clear_refs` 5) just before, and the client reads the whole reply.
fn rss_rise_kib(cmd: &[&str]) -> u64 {
    let s = Server::start(&[]);
    let mut c = s.conn();
    for i in 0..128 {
        let member = format!("{i:08}{}", "m".repeat(8184));
        q::<i64>(&mut c, c!["XSET.ADD", "x", member.as_str(), "1000"]);
        q::<i64>(&mut c, c!["SADD", "s", member.as_str()]);
    }
    let pid = u32::try_from(info_i64(&mut c, "server", "process_id")).expect("pid");
    let _: redis::RedisResult<Value> = try_q(&mut c, c!["MEMORY", "PURGE"]);
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset the peak RSS");
    let (before, _) = rss_and_peak_kib(pid);
    let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
    let reply: Vec<Vec<u8>> = q(&mut c, &args);
    assert_eq!(reply.len(), 8192);
    let (_, peak) = rss_and_peak_kib(pid);
    peak.saturating_sub(before)
}

#[test]
fn a_huge_negative_randmember_costs_what_srandmember_costs() {
    // A 64 MiB reply: 8192 draws of 8 KiB members.
    let theirs = rss_rise_kib(&["SRANDMEMBER", "s", "-8192"]);
    let ours = rss_rise_kib(&["XSET.RANDMEMBER", "x", "-8192"]);
    assert!(
        theirs > 32 * 1024,
        "SRANDMEMBER raised RSS by {theirs} KiB only"
    );
    assert!(
        ours * 2 <= theirs * 3,
        "RSS rose by {ours} KiB for XSET.RANDMEMBER, {theirs} KiB for SRANDMEMBER"
    );
}
