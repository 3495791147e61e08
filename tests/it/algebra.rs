//! Set algebra against a real server: `XSET.INTER`, `XSET.UNION`,
//! `XSET.DIFF`, their `*STORE` forms and `XSET.INTERCARD`, over xsets in
//! both encodings, plain sets and missing keys. Deadlines aggregate exactly
//! (earliest, latest, the first key's), replies are in deadline order,
//! `*STORE` overwrites or deletes its destination and propagates the result
//! with absolute deadlines, bad input changes nothing, and a replica fed a
//! random mix of them holds what the primary holds.

use crate::harness::*;
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Members with their absolute deadlines (-1: none), from `XSET.PEXPIRETIME`.
fn deadlines(c: &mut Connection, key: &str) -> BTreeMap<String, i64> {
    snapshot(c, key)
        .into_iter()
        .map(|(m, at)| (String::from_utf8(m).expect("utf-8"), at))
        .collect()
}

/// A flat `member, ttl, ...` reply as pairs.
fn pairs(flat: Vec<Value>) -> Vec<(String, i64)> {
    flat.chunks(2)
        .map(|p| match (&p[0], &p[1]) {
            (Value::BulkString(m), Value::Int(t)) => (String::from_utf8_lossy(m).into_owned(), *t),
            other => panic!("not a member and a TTL: {other:?}"),
        })
        .collect()
}

#[test]
fn deadlines_aggregate_and_replies_come_in_deadline_order() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        let base = server_ms(&mut c) + 1_000_000;
        // a: x@+300 y@never z@+100; b: x@+200 y@+500 w@+50; p: plain {x, v}.
        add_at(&mut c, "a", "x", base + 300);
        add_at(&mut c, "a", "y", base + 900);
        q::<i64>(&mut c, c!["XSET.PERSIST", "a", "y"]);
        add_at(&mut c, "a", "z", base + 100);
        add_at(&mut c, "b", "x", base + 200);
        add_at(&mut c, "b", "y", base + 500);
        add_at(&mut c, "b", "w", base + 50);
        q::<i64>(&mut c, c!["SADD", "p", "x", "v"]);

        let at = |d: u64| i64::try_from(d).expect("fits");
        let _: i64 = q(&mut c, c!["XSET.INTERSTORE", "i", "2", "a", "b"]);
        assert_eq!(
            deadlines(&mut c, "i"),
            BTreeMap::from([("x".into(), at(base + 200)), ("y".into(), at(base + 500))]),
            "intersection: the earliest deadline, none being the latest"
        );
        let _: i64 = q(&mut c, c!["XSET.UNIONSTORE", "u", "3", "a", "b", "p"]);
        assert_eq!(
            deadlines(&mut c, "u"),
            BTreeMap::from([
                ("w".into(), at(base + 50)),
                ("z".into(), at(base + 100)),
                ("x".into(), -1),
                ("y".into(), -1),
                ("v".into(), -1),
            ]),
            "union: the latest deadline; a plain set's members never expire"
        );
        let _: i64 = q(&mut c, c!["XSET.DIFFSTORE", "d", "2", "a", "p"]);
        assert_eq!(
            deadlines(&mut c, "d"),
            BTreeMap::from([("y".into(), -1), ("z".into(), at(base + 100))]),
            "difference: the first key's deadlines"
        );

        // Replies: soonest first, no deadline last, ties by bytes.
        let names: Vec<String> = q(&mut c, c!["XSET.UNION", "3", "a", "b", "p"]);
        assert_eq!(names, ["w", "z", "v", "x", "y"]);
        let with: Vec<Value> = q(&mut c, c!["XSET.INTER", "2", "b", "a", "WITHTTL"]);
        let got = pairs(with);
        assert_eq!(
            got.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
        assert!(
            (199_000..=200_000 + 1_000_000).contains(&got[0].1),
            "{got:?}"
        );
        assert!(got[0].1 < got[1].1, "{got:?}");
        let names: Vec<String> = q(&mut c, c!["XSET.DIFF", "3", "b", "a", "p"]);
        assert_eq!(names, ["w"]);
        let names: Vec<String> = q(&mut c, c!["XSET.INTER", "2", "a", "p"]);
        assert_eq!(names, ["x"]);
        assert_eq!(q::<i64>(&mut c, c!["XSET.INTERCARD", "2", "a", "b"]), 2);
        assert_eq!(
            q::<i64>(&mut c, c!["XSET.INTERCARD", "3", "a", "b", "p"]),
            1
        );
        assert_eq!(
            q::<i64>(&mut c, c!["XSET.INTERCARD", "2", "a", "b", "LIMIT", "1"]),
            1
        );
        assert_eq!(
            q::<i64>(&mut c, c!["XSET.INTERCARD", "2", "a", "b", "limit", "0"]),
            2,
            "LIMIT 0 is no limit"
        );
    }
}

#[test]
fn missing_keys_and_wrong_types() {
    let (_s, mut c) = server_with_encoding(false);
    q::<i64>(&mut c, c!["XSET.ADD", "a", "x", "100", "y", "100"]);
    assert!(q::<Vec<String>>(&mut c, c!["XSET.INTER", "2", "a", "nope"]).is_empty());
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.UNION", "2", "nope", "a"]),
        ["x", "y"]
    );
    assert!(q::<Vec<String>>(&mut c, c!["XSET.DIFF", "2", "nope", "a"]).is_empty());
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.DIFF", "2", "a", "nope"]),
        ["x", "y"]
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.INTERCARD", "1", "nope"]), 0);

    q::<String>(&mut c, c!["SET", "str", "v"]);
    q::<i64>(&mut c, c!["RPUSH", "list", "x"]);
    q::<i64>(&mut c, c!["HSET", "hash", "x", "1"]);
    q::<i64>(&mut c, c!["ZADD", "zset", "1", "x"]);
    q::<i64>(&mut c, c!["SADD", "dest", "keep"]);
    for wrong in ["str", "list", "hash", "zset"] {
        for cmd in ["XSET.INTER", "XSET.UNION", "XSET.DIFF", "XSET.INTERCARD"] {
            assert!(
                err(&mut c, c![cmd, "2", "a", wrong]).starts_with("WRONGTYPE"),
                "{cmd} {wrong}"
            );
            assert!(err(&mut c, c![cmd, "2", wrong, "nope"]).starts_with("WRONGTYPE"));
        }
        for cmd in ["XSET.INTERSTORE", "XSET.UNIONSTORE", "XSET.DIFFSTORE"] {
            assert!(err(&mut c, c![cmd, "dest", "2", "a", wrong]).starts_with("WRONGTYPE"));
        }
    }
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["SMEMBERS", "dest"]),
        ["keep"],
        "a refused store left its destination alone"
    );
}

#[test]
fn bad_arguments_are_errors_and_change_nothing() {
    let (_s, mut c) = server_with_encoding(false);
    q::<i64>(&mut c, c!["XSET.ADD", "a", "x", "100"]);
    q::<i64>(&mut c, c!["SADD", "dest", "keep"]);
    let cases: &[(&[&str], &str)] = &[
        (
            &["XSET.INTER", "0", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["XSET.UNION", "-1", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["XSET.DIFF", "x", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["XSET.INTER", "01", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["XSET.INTER", "3", "a", "b"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (
            &["XSET.INTER", "1", "a", "WITHSCORES"],
            "ERR syntax error: unknown option 'WITHSCORES'",
        ),
        (
            &["XSET.INTER", "1", "a", "WITHTTL", "WITHTTL"],
            "ERR syntax error: 'WITHTTL' given twice",
        ),
        (
            &["XSET.INTERCARD", "1", "a", "LIMIT"],
            "ERR syntax error: value missing after 'LIMIT'",
        ),
        (
            &["XSET.INTERCARD", "1", "a", "LIMIT", "-1"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["XSET.INTERCARD", "1", "a", "LIMIT", "x"],
            "ERR LIMIT can't be negative",
        ),
        (
            &["XSET.INTERCARD", "1", "a", "LIMIT", "1", "LIMIT", "2"],
            "ERR syntax error: 'LIMIT' given twice",
        ),
        (
            &["XSET.INTERCARD", "1", "a", "WITHTTL"],
            "ERR syntax error: unknown option 'WITHTTL'",
        ),
        (
            &["XSET.INTERSTORE", "dest", "1", "a", "WITHTTL"],
            "ERR syntax error: unknown option 'WITHTTL'",
        ),
        (
            &["XSET.UNIONSTORE", "dest", "0", "a"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["XSET.DIFFSTORE", "dest", "2", "a"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (
            &["XSET.INTER", "1"],
            "ERR wrong number of arguments for 'xset.inter' command",
        ),
        (
            &["XSET.INTERSTORE", "dest", "1"],
            "ERR wrong number of arguments for 'xset.interstore' command",
        ),
    ];
    for (args, want) in cases {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let got = err(&mut c, &args);
        assert!(got.starts_with(want), "{args:?}: {got}");
    }
    assert_eq!(q::<Vec<String>>(&mut c, c!["SMEMBERS", "dest"]), ["keep"]);
    assert_eq!(q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "a"]), ["x"]);
}

#[test]
fn store_overwrites_any_type_drops_its_ttl_and_deletes_on_empty() {
    let (_s, mut c) = server_with_encoding(false);
    q::<i64>(&mut c, c!["XSET.ADD", "a", "x", "100", "y", "200"]);
    q::<i64>(&mut c, c!["XSET.ADD", "b", "y", "300"]);
    q::<String>(&mut c, c!["SET", "dest", "old", "EX", "1000"]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.UNIONSTORE", "dest", "2", "a", "b"]),
        2
    );
    assert_eq!(q::<i64>(&mut c, c!["TTL", "dest"]), -1, "the key TTL went");
    assert_eq!(q::<i64>(&mut c, c!["XSET.CARD", "dest"]), 2);
    // The destination among the inputs.
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.INTERSTORE", "a", "2", "a", "b"]),
        1
    );
    assert_eq!(q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "a"]), ["y"]);
    // An empty result deletes the destination, whatever it was.
    q::<i64>(&mut c, c!["XSET.ADD", "x", "m", "100"]);
    for dest in ["dest", "x"] {
        assert_eq!(
            q::<i64>(&mut c, c!["XSET.DIFFSTORE", dest, "2", "a", "b"]),
            0
        );
        assert_eq!(q::<i64>(&mut c, c!["EXISTS", dest]), 0);
    }
    q::<i64>(&mut c, c!["RPUSH", "list", "v"]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.INTERSTORE", "list", "1", "nope"]),
        0
    );
    assert_eq!(q::<i64>(&mut c, c!["EXISTS", "list"]), 0);
    // A stored plain set's members have no deadline.
    q::<i64>(&mut c, c!["SADD", "p", "s1", "s2"]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.UNIONSTORE", "fromplain", "1", "p"]),
        2
    );
    assert_eq!(q::<String>(&mut c, c!["TYPE", "fromplain"]), "xset-type");
    assert_eq!(
        q::<Vec<i64>>(
            &mut c,
            c!["XSET.PTTL", "fromplain", "MEMBERS", "2", "s1", "s2"]
        ),
        [-1, -1]
    );
}

/// Waits until `member` of `key` is no longer live (its deadline passed).
fn wait_expired(c: &mut Connection, key: &str, member: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while q::<i64>(c, c!["XSET.PTTL", key, member]) != -2 {
        assert!(Instant::now() < deadline, "{member} never expired");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn expired_members_take_no_part() {
    let (_s, mut c) = server_with_encoding(false);
    let now = server_ms(&mut c);
    // Active expiry is off: "gone" stays stored, only hidden.
    add_at(&mut c, "a", "gone", now + 30);
    add_at(&mut c, "a", "kept", now + 1_000_000);
    add_at(&mut c, "b", "gone", now + 1_000_000);
    add_at(&mut c, "b", "kept", now + 2_000_000);
    wait_expired(&mut c, "a", "gone");
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.INTER", "2", "a", "b"]),
        ["kept"]
    );
    assert_eq!(q::<i64>(&mut c, c!["XSET.INTERCARD", "2", "a", "b"]), 1);
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.DIFF", "2", "b", "a"]),
        ["gone"],
        "an expired member of a later key removes nothing"
    );
    let at: i64 = q(&mut c, c!["XSET.PEXPIRETIME", "b", "kept"]);
    let _: i64 = q(&mut c, c!["XSET.UNIONSTORE", "u", "2", "a", "b"]);
    assert_eq!(
        deadlines(&mut c, "u"),
        BTreeMap::from([
            ("gone".into(), i64::try_from(now + 1_000_000).expect("fits")),
            ("kept".into(), at)
        ])
    );
}

/// The members of a generated set and their deadlines: the client-side
/// model the server's answers are compared with.
type Model = BTreeMap<String, i64>;

#[test]
fn large_inputs_match_a_client_side_model() {
    for large in [false, true] {
        let (_s, mut c) = server_with_encoding(large);
        let base = server_ms(&mut c) + 1_000_000;
        let mut models: Vec<Model> = Vec::new();
        for (k, step) in [(0usize, 2usize), (1, 3), (2, 5)] {
            let key = format!("k{k}");
            let mut model = Model::new();
            let mut args: Vec<String> = vec!["XSET.ADDEX".into(), key.clone(), "PXAT".into()];
            let mut pairs = Vec::new();
            for i in (0..600).step_by(step) {
                let at = base + ((i * 7 + k * 13) % 97) as u64 * 1000;
                pairs.push((format!("m{i}"), at));
                model.insert(format!("m{i}"), at as i64);
            }
            args.push("MEMBERS".into());
            args.push(pairs.len().to_string());
            for (m, at) in pairs {
                args.push(m);
                args.push(at.to_string());
            }
            let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            q::<i64>(&mut c, &argv);
            models.push(model);
        }
        let keys = ["k0", "k1", "k2"];
        let inter: Model = models[0]
            .iter()
            .filter_map(|(m, &d)| {
                let d1 = models[1].get(m)?;
                let d2 = models[2].get(m)?;
                Some((m.clone(), d.min(*d1).min(*d2)))
            })
            .collect();
        let mut union = Model::new();
        for model in &models {
            for (m, &d) in model {
                let e = union.entry(m.clone()).or_insert(d);
                *e = (*e).max(d);
            }
        }
        let diff: Model = models[0]
            .iter()
            .filter(|(m, _)| !models[1].contains_key(*m) && !models[2].contains_key(*m))
            .map(|(m, &d)| (m.clone(), d))
            .collect();
        for (cmd, want) in [
            ("XSET.INTERSTORE", &inter),
            ("XSET.UNIONSTORE", &union),
            ("XSET.DIFFSTORE", &diff),
        ] {
            let n: usize = q(&mut c, c![cmd, "out", "3", keys[0], keys[1], keys[2]]);
            assert_eq!(n, want.len(), "{cmd}");
            assert_eq!(&deadlines(&mut c, "out"), want, "{cmd} (large: {large})");
        }
        let got: Vec<String> = q(&mut c, c!["XSET.INTER", "3", keys[0], keys[1], keys[2]]);
        let mut by_deadline: Vec<(&i64, &String)> = inter.iter().map(|(m, d)| (d, m)).collect();
        by_deadline.sort();
        assert_eq!(
            got,
            by_deadline
                .into_iter()
                .map(|(_, m)| m.clone())
                .collect::<Vec<_>>()
        );
        assert_eq!(
            q::<usize>(&mut c, c!["XSET.INTERCARD", "3", keys[0], keys[1], keys[2]]),
            inter.len()
        );
    }
}

#[test]
fn store_propagates_the_result_with_absolute_deadlines() {
    let p = replication_primary();
    let mut c = p.conn();
    let mut s = ReplStream::connect(p.port);
    let base = server_ms(&mut c) + 1_000_000;
    add_at(&mut c, "a", "x", base + 1);
    add_at(&mut c, "b", "x", base + 2);
    q::<i64>(&mut c, c!["SADD", "p", "x", "y"]);
    s.next();
    s.next();
    s.next();
    marker(&mut c, &mut s, 1);

    // Reads propagate nothing.
    let _: Vec<String> = q(&mut c, c!["XSET.INTER", "2", "a", "b"]);
    let _: Vec<String> = q(&mut c, c!["XSET.UNION", "2", "a", "p", "WITHTTL"]);
    let _: i64 = q(&mut c, c!["XSET.INTERCARD", "2", "a", "b"]);
    marker(&mut c, &mut s, 2);

    // A new destination: the rebuilt set, no DEL.
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.INTERSTORE", "d", "2", "a", "b"]),
        1
    );
    let x_at = (base + 1).to_string();
    s.expect(&[&["XSET.ADDEX", "d", "PXAT", "MEMBERS", "1", "x", &x_at]]);
    marker(&mut c, &mut s, 3);

    // An existing destination: DEL first, all in one transaction; members
    // without a deadline are persisted after their add.
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.UNIONSTORE", "d", "2", "a", "p"]),
        2
    );
    let far = i64::MAX.to_string();
    let words = s.next();
    assert_eq!(words, ["MULTI"]);
    assert_eq!(s.next(), ["DEL", "d"]);
    let add = s.next();
    assert_eq!(add[..5], ["XSET.ADDEX", "d", "PXAT", "MEMBERS", "2"]);
    let mut got: BTreeSet<(String, String)> = BTreeSet::new();
    for pair in add[5..].chunks(2) {
        got.insert((pair[0].clone(), pair[1].clone()));
    }
    assert_eq!(
        got,
        BTreeSet::from([("x".into(), far.clone()), ("y".into(), far.clone())])
    );
    let persist = s.next();
    assert_eq!(persist[..4], ["XSET.PERSIST", "d", "MEMBERS", "2"]);
    assert_eq!(s.next(), ["EXEC"]);
    marker(&mut c, &mut s, 4);

    // An empty result: just the DEL. A missing destination and an empty
    // result: nothing at all.
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.DIFFSTORE", "d", "2", "a", "b"]),
        0
    );
    s.expect(&[&["DEL", "d"]]);
    marker(&mut c, &mut s, 5);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.DIFFSTORE", "d", "2", "a", "b"]),
        0
    );
    marker(&mut c, &mut s, 6);
}

#[test]
fn a_replica_holds_what_the_primary_stores() {
    let (_p, _r, mut pc, mut rc) = primary_and_replica();
    let base = server_ms(&mut pc) + 1_000_000;
    // A fixed pseudo-random mix of every write: adds (with CAP, CODES,
    // MAXLEN), removals, persists, random and soonest pops, stores into keys
    // that are also inputs, in both encodings.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let keys = ["s0", "s1", "s2", "s3"];
    for _ in 0..400 {
        let k = keys[next(4) as usize];
        let m = format!("m{}", next(200));
        match next(13) {
            0..=3 => add_at(&mut pc, k, &m, base + next(50) * 1000),
            4 => {
                q::<i64>(&mut pc, c!["XSET.PERSIST", k, m.as_str()]);
            }
            5 => {
                q::<i64>(&mut pc, c!["XSET.REM", k, m.as_str()]);
            }
            6 => {
                let _: Value = q(&mut pc, c!["XSET.POP", k, "2"]);
            }
            7 => {
                let _: Value = q(&mut pc, c!["XSET.POP", k, "1", "SOONEST"]);
            }
            8 => {
                let at = (base + next(50) * 1000).to_string();
                let _: Value = q(
                    &mut pc,
                    c![
                        "XSET.ADDEX",
                        k,
                        "CAP",
                        "30",
                        "CODES",
                        "PXAT",
                        "MEMBERS",
                        "1",
                        m.as_str(),
                        at.as_str()
                    ],
                );
            }
            9 => {
                let _: Value = q(
                    &mut pc,
                    c![
                        "XSET.ADDEX",
                        k,
                        "MAXLEN",
                        "20",
                        "MEMBERS",
                        "1",
                        m.as_str(),
                        "100"
                    ],
                );
            }
            op => {
                let cmd =
                    ["XSET.INTERSTORE", "XSET.UNIONSTORE", "XSET.DIFFSTORE"][op as usize - 10];
                let (a, b) = (keys[next(4) as usize], keys[next(4) as usize]);
                let _: i64 = q(&mut pc, c![cmd, k, "2", a, b]);
            }
        }
    }
    wait_replicated(&mut pc);
    for key in keys {
        let digest = |c: &mut Connection| q::<Vec<String>>(c, c!["DEBUG", "DIGEST-VALUE", key]);
        assert_eq!(digest(&mut rc), digest(&mut pc), "{key}");
        assert_eq!(snapshot(&mut rc, key), snapshot(&mut pc, key), "{key}");
    }
}

#[test]
fn stores_notify_their_destination() {
    let (s, mut c) = server_with_encoding(false);
    let _: String = q(&mut c, c!["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = s.conn();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyspace@0__:d").expect("psubscribe");
    pubsub
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    q::<i64>(&mut c, c!["XSET.ADD", "a", "x", "100"]);
    let _: i64 = q(&mut c, c!["XSET.INTERSTORE", "d", "1", "a"]);
    let _: i64 = q(&mut c, c!["XSET.UNIONSTORE", "d", "1", "a"]);
    let _: i64 = q(&mut c, c!["XSET.DIFFSTORE", "d", "2", "a", "a"]);
    let got: Vec<String> = (0..3)
        .map(|_| {
            let msg = pubsub.get_message().expect("event");
            msg.get_payload::<String>().expect("payload")
        })
        .collect();
    assert_eq!(got, ["xset.interstore", "xset.unionstore", "del"]);
}

#[test]
fn keys_are_declared_for_routing_and_acls() {
    let (_s, mut c) = server_with_encoding(false);
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            c!["COMMAND", "GETKEYS", "XSET.INTERSTORE", "d", "2", "a", "b"]
        ),
        ["d", "a", "b"]
    );
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            c![
                "COMMAND",
                "GETKEYS",
                "XSET.UNION",
                "3",
                "a",
                "b",
                "c",
                "WITHTTL"
            ]
        ),
        ["a", "b", "c"]
    );
    assert_eq!(
        q::<Vec<String>>(
            &mut c,
            c![
                "COMMAND",
                "GETKEYS",
                "XSET.INTERCARD",
                "1",
                "a",
                "LIMIT",
                "5"
            ]
        ),
        ["a"]
    );
    // A user who may only read `a*` keys can intersect them, but neither
    // read `b` nor store anywhere.
    let _: String = q(
        &mut c,
        c![
            "ACL",
            "SETUSER",
            "reader",
            "on",
            "nopass",
            "~a*",
            "+xset.inter",
            "+xset.interstore"
        ],
    );
    q::<i64>(&mut c, c!["XSET.ADD", "a1", "x", "100"]);
    let _: String = q(&mut c, c!["AUTH", "reader", "x"]);
    assert_eq!(q::<Vec<String>>(&mut c, c!["XSET.INTER", "1", "a1"]), ["x"]);
    assert!(err(&mut c, c!["XSET.INTER", "2", "a1", "b"]).starts_with("NOPERM"));
    assert!(err(&mut c, c!["XSET.INTERSTORE", "b", "1", "a1"]).starts_with("NOPERM"));
    // The destination is written, not read: a user who may only read `a*`
    // and only write `d*` can store into `d*` and nowhere else; its key
    // spec says `OW` (overwrite), as `SINTERSTORE`'s does.
    let _: String = q(&mut c, c!["AUTH", "default", "x"]);
    let info = format!(
        "{:?}",
        q::<Value>(&mut c, c!["COMMAND", "INFO", "XSET.INTERSTORE"])
    );
    assert!(info.contains("\"OW\""), "{info}");
    let _: String = q(
        &mut c,
        c![
            "ACL", "SETUSER", "storer", "on", "nopass", "%R~a*", "%W~d*", "+@all"
        ],
    );
    let _: String = q(&mut c, c!["AUTH", "storer", "x"]);
    assert_eq!(q::<i64>(&mut c, c!["XSET.INTERSTORE", "d1", "1", "a1"]), 1);
    assert!(err(&mut c, c!["XSET.INTERSTORE", "d2", "1", "d1"]).starts_with("NOPERM"));
    assert!(err(&mut c, c!["XSET.UNIONSTORE", "a2", "1", "a1"]).starts_with("NOPERM"));
}

#[test]
fn a_store_that_panics_is_repaired_on_its_destination() {
    let (_p, _r, mut pc, mut rc) = primary_and_replica();
    q::<i64>(&mut pc, c!["XSET.ADD", "a", "x", "100", "y", "200"]);
    q::<i64>(&mut pc, c!["XSET.ADD", "b", "z", "300"]);
    q::<i64>(&mut pc, c!["XSET.ADD", "d", "old", "400"]);
    q::<String>(&mut pc, c!["XSET.DEBUG-FAULT", "write-midway"]);
    // The stored set is in place but unpropagated when the panic hits: the
    // guard re-sends the destination whole.
    let e = err(&mut pc, c!["XSET.UNIONSTORE", "d", "2", "a", "b"]);
    q::<String>(&mut pc, c!["XSET.DEBUG-FAULT", "off"]);
    assert!(e.starts_with("ERR internal error"), "{e}");
    assert_eq!(
        q::<Vec<String>>(&mut pc, c!["XSET.MEMBERS", "d"]),
        ["x", "y", "z"]
    );
    wait_replicated(&mut pc);
    let digest = |c: &mut Connection| q::<Vec<String>>(c, c!["DEBUG", "DIGEST-VALUE", "d"]);
    assert_eq!(digest(&mut rc), digest(&mut pc));
    assert_eq!(snapshot(&mut rc, "d"), snapshot(&mut pc, "d"));
}

/// The best wall time of each of `a` and `b` (the client's round trip:
/// both carry the same keys, so sending them costs the same) over nine
/// rounds run alternately, so that a busy moment of a shared machine falls
/// on both.
fn best_of_nine(c: &mut Connection, a: &redis::Cmd, b: &redis::Cmd) -> (Duration, Duration) {
    let mut best = (Duration::MAX, Duration::MAX);
    for _ in 0..9 {
        for (cmd, slot) in [(a, &mut best.0), (b, &mut best.1)] {
            let started = Instant::now();
            let n: i64 = cmd.query(c).expect("intercard");
            assert_eq!(n, 0);
            *slot = (*slot).min(started.elapsed());
        }
    }
    best
}

#[test]
fn many_keys_cost_about_what_sintercard_costs() {
    let (_s, mut c) = server_with_encoding(false);
    let keys: Vec<String> = (1..=20_000).map(|i| format!("key:{i}")).collect();
    let mut ours = redis::cmd("XSET.INTERCARD");
    let mut theirs = redis::cmd("SINTERCARD");
    for cmd in [&mut ours, &mut theirs] {
        cmd.arg(keys.len()).arg(&keys);
    }
    let (ours, theirs) = best_of_nine(&mut c, &ours, &theirs);
    assert!(
        ours <= theirs * 10,
        "20,000 missing keys: XSET.INTERCARD {ours:?}, SINTERCARD {theirs:?}"
    );
}
