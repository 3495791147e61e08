//! Every command through `XSetCommands`, `AsyncXSetCommands` and `cmd` in a
//! pipeline, against a real server, under RESP2 and RESP3: the same typed
//! values either way. Deadlines are absolute (2100-01-01) or hours away, so
//! no value depends on the moment; TTLs in milliseconds are checked within
//! 5 s below what was set. One test lets a member expire and waits (blocking
//! reads of a consumer group, until a deadline) for it in its stream.

mod server;

use redis::streams::{StreamId, StreamReadOptions, StreamReadReply};
use redis::{Commands, ConnectionLike};
use server::Server;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use xset_client::{
    AddOptions, AsyncXSetCommands, Bound, ExpireCondition, MembersOptions, ScanOptions, Unit,
    WithTtl, XSetCommands, cmd,
};

const Y2100_MS: i64 = 4_102_444_800_000;

fn near(ms: i64, seconds: i64) -> bool {
    seconds * 1000 - 5000 < ms && ms <= seconds * 1000
}

fn flush(c: &mut impl ConnectionLike) {
    redis::cmd("FLUSHALL").query::<()>(c).expect("FLUSHALL");
}

/// Every command once, with its expected reply.
fn every_command(c: &mut impl ConnectionLike) {
    flush(c);
    let a = "a";
    // adding
    assert_eq!(c.xset_add(a, &[("m1", 3600), ("m2", 7200)]).unwrap(), 2);
    assert_eq!(c.xset_add(a, &[("m1", 3600)]).unwrap(), 0);
    let nx = AddOptions::new().nx();
    assert_eq!(
        c.xset_addex_codes(a, &[("m3", 100)], &nx).unwrap(),
        Some(vec![1])
    );
    assert_eq!(
        c.xset_addex_codes(a, &[("m3", 100), ("m4", 100)], &nx)
            .unwrap(),
        Some(vec![0, 1])
    );
    let pxat = AddOptions::new().unit(Unit::PxAt);
    assert_eq!(
        c.xset_addex(a, &[("m5", Y2100_MS)], &pxat).unwrap(),
        Some(1)
    );
    let cap = AddOptions::new().cap(2);
    assert_eq!(
        c.xset_addex("otp", &[("c1", 300), ("c2", 300)], &cap)
            .unwrap(),
        Some(2)
    );
    assert_eq!(c.xset_addex("otp", &[("c3", 300)], &cap).unwrap(), None);
    assert_eq!(
        c.xset_addex_codes("otp", &[("c3", 300)], &cap).unwrap(),
        None
    );
    let all = AddOptions::new().xx().gt().unit(Unit::Px).maxlen(5);
    assert_eq!(
        c.xset_addex("otp", &[("c1", 300_000)], &all).unwrap(),
        Some(0)
    );
    assert!(
        c.xset_addex("otp", &[("c1", 1)], &AddOptions::new().nx().xx())
            .is_err()
    );
    // reading
    assert!(c.xset_has(a, "m1").unwrap());
    assert!(!c.xset_has(a, "nobody").unwrap());
    assert_eq!(
        c.xset_mhas(a, &["m1", "nobody", "m5"]).unwrap(),
        [true, false, true]
    );
    assert_eq!(c.xset_card(a).unwrap(), 5);
    assert_eq!(c.xset_card("missing").unwrap(), 0);
    assert_eq!(
        c.xset_count(a, Bound::Inclusive(Y2100_MS), Bound::PosInf)
            .unwrap(),
        1
    );
    assert_eq!(
        c.xset_count(a, Bound::NegInf, Bound::Exclusive(Y2100_MS))
            .unwrap(),
        4
    );
    let all_members: Vec<String> = c.xset_members(a, &MembersOptions::new()).unwrap();
    assert_eq!(all_members, ["m3", "m4", "m1", "m2", "m5"]);
    let newest: Vec<String> = c
        .xset_members(a, &MembersOptions::new().rev().limit(0, 2))
        .unwrap();
    assert_eq!(newest, ["m5", "m2"]);
    let window = MembersOptions::new().by_deadline(Bound::Inclusive(Y2100_MS), Bound::PosInf);
    let late: Vec<Vec<u8>> = c.xset_members(a, &window).unwrap();
    assert_eq!(late, [b"m5".to_vec()]);
    let none: Vec<(String, i64)> = c
        .xset_members_with_ttl("missing", &MembersOptions::new())
        .unwrap();
    assert!(none.is_empty());
    let first: Vec<(String, i64)> = c
        .xset_members_with_ttl(a, &MembersOptions::new().limit(0, 2))
        .unwrap();
    assert_eq!(
        first.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["m3", "m4"]
    );
    assert!(first.iter().all(|p| near(p.1, 100)), "{first:?}");
    assert!((3595..=3600).contains(&c.xset_ttl(a, "m1").unwrap()));
    assert!(near(c.xset_pttl(a, "m2").unwrap(), 7200));
    assert_eq!(c.xset_pexpiretime(a, "m5").unwrap(), Y2100_MS);
    assert_eq!(c.xset_expiretime(a, "m5").unwrap(), Y2100_MS / 1000);
    assert_eq!(
        c.xset_expiretime_many(a, &["m5", "nobody"]).unwrap(),
        [Y2100_MS / 1000, -2]
    );
    assert_eq!(c.xset_pexpiretime_many(a, &["m5"]).unwrap(), [Y2100_MS]);
    let pttls = c.xset_pttl_many(a, &["m1", "m2"]).unwrap();
    assert!(near(pttls[0], 3600) && near(pttls[1], 7200), "{pttls:?}");
    // deadlines
    assert_eq!(c.xset_persist(a, "m2").unwrap(), 1);
    assert_eq!(c.xset_persist_many(a, &["m2", "nobody"]).unwrap(), [-1, -2]);
    let last: Vec<(String, i64)> = c
        .xset_members_with_ttl(a, &MembersOptions::new().rev().limit(0, 1))
        .unwrap();
    assert_eq!(last, [("m2".to_string(), -1)]);
    assert_eq!(c.xset_ttl_many(a, &["m2", "nobody"]).unwrap(), [-1, -2]);
    assert_eq!(c.xset_expire(a, 600, None, "m3").unwrap(), 1);
    let nx = Some(ExpireCondition::Nx);
    assert_eq!(
        c.xset_expire_many(a, 600, nx, &["m3", "m2", "nobody"])
            .unwrap(),
        [0, 1, -2]
    );
    assert_eq!(
        c.xset_pexpire_many(a, 700_000, Some(ExpireCondition::Xx), &["m2"])
            .unwrap(),
        [1]
    );
    assert_eq!(
        c.xset_pexpire(a, 700_000, Some(ExpireCondition::Nx), "m2")
            .unwrap(),
        0
    );
    assert_eq!(c.xset_expireat(a, Y2100_MS / 1000, None, "m4").unwrap(), 1);
    assert_eq!(
        c.xset_expireat_many(a, Y2100_MS / 1000, None, &["m4"])
            .unwrap(),
        [1]
    );
    assert_eq!(
        c.xset_pexpireat(a, Y2100_MS, Some(ExpireCondition::Lt), "m4")
            .unwrap(),
        0
    );
    let gt = Some(ExpireCondition::Gt);
    assert_eq!(
        c.xset_pexpireat_many(a, Y2100_MS + 1000, gt, &["m4"])
            .unwrap(),
        [1]
    );
    assert_eq!(c.xset_expire(a, 0, None, "m1").unwrap(), 2);
    // removing
    assert_eq!(c.xset_rem(a, &["m4", "nobody"]).unwrap(), 1);
    assert_eq!(c.xset_card(a).unwrap(), 3);
    assert_eq!(
        c.xset_add("q", &[("j1", 10), ("j2", 20), ("j3", 30)])
            .unwrap(),
        3
    );
    let popped: Vec<String> = c.xset_pop_count("q", 2, true).unwrap();
    assert_eq!(popped, ["j1", "j2"]);
    assert_eq!(
        c.xset_pop::<_, String>("q", false).unwrap().as_deref(),
        Some("j3")
    );
    assert_eq!(c.xset_pop::<_, String>("q", false).unwrap(), None);
    assert!(
        c.xset_pop_count::<_, String>("q", 1, false)
            .unwrap()
            .is_empty()
    );
    // random and scan
    assert_eq!(c.xset_add("one", &[("only", 3600)]).unwrap(), 1);
    assert_eq!(c.xset_persist("one", "only").unwrap(), 1);
    assert_eq!(
        c.xset_randmember::<_, String>("one").unwrap().as_deref(),
        Some("only")
    );
    assert_eq!(c.xset_randmember::<_, String>("missing").unwrap(), None);
    assert_eq!(
        c.xset_randmember_count::<_, String>("one", 2).unwrap(),
        ["only"]
    );
    assert_eq!(
        c.xset_randmember_count::<_, String>("one", -2).unwrap(),
        ["only", "only"]
    );
    let with: Vec<(String, i64)> = c.xset_randmember_with_ttl("one", 1).unwrap();
    assert_eq!(with, [("only".to_string(), -1)]);
    let step: (u64, Vec<String>) = c.xset_scan("one", 0, &ScanOptions::new()).unwrap();
    assert_eq!(step, (0, vec!["only".to_string()]));
    let opts = ScanOptions::new().pattern("o*").count(10);
    let step: (u64, Vec<(String, i64)>) = c.xset_scan_with_ttl("one", 0, &opts).unwrap();
    assert_eq!(step, (0, vec![("only".to_string(), -1)]));
    // set algebra
    assert_eq!(c.xset_add("{s}1", &[("x", 100), ("y", 200)]).unwrap(), 2);
    assert_eq!(c.xset_add("{s}2", &[("x", 300), ("z", 10)]).unwrap(), 2);
    let keys = ["{s}1", "{s}2"];
    assert_eq!(c.xset_inter::<_, String>(&keys).unwrap(), ["x"]);
    assert_eq!(c.xset_union::<_, String>(&keys).unwrap(), ["z", "y", "x"]);
    assert_eq!(c.xset_diff::<_, String>(&keys).unwrap(), ["y"]);
    let inter: Vec<(String, i64)> = c.xset_inter_with_ttl(&keys).unwrap();
    assert!(inter.len() == 1 && inter[0].0 == "x" && near(inter[0].1, 100));
    let union: Vec<(String, i64)> = c.xset_union_with_ttl(&keys).unwrap();
    let secs = [("z", 10), ("y", 200), ("x", 300)];
    assert!(
        union.len() == 3
            && union
                .iter()
                .zip(secs)
                .all(|(p, s)| p.0 == s.0 && near(p.1, s.1))
    );
    let diff: Vec<(String, i64)> = c.xset_diff_with_ttl(&keys).unwrap();
    assert!(diff.len() == 1 && diff[0].0 == "y" && near(diff[0].1, 200));
    assert_eq!(c.xset_interstore("{s}d", &keys).unwrap(), 1);
    assert_eq!(c.xset_unionstore("{s}d", &keys).unwrap(), 3);
    assert_eq!(
        c.xset_diffstore("{s}d", &["{s}1", "{s}2", "{s}missing"])
            .unwrap(),
        1
    );
    assert_eq!(c.xset_intercard(&keys, None).unwrap(), 1);
    assert_eq!(c.xset_intercard(&["{s}1", "{s}1"], Some(1)).unwrap(), 1);
    // delivery of expired members (an_expired_member_arrives_in_the_stream
    // waits for one)
    assert_eq!(c.xset_notify_stream::<_, String>("n").unwrap(), None);
    c.xset_notify("n", "n:expired", Some(1000)).unwrap();
    assert_eq!(
        c.xset_notify_stream::<_, String>("n").unwrap().as_deref(),
        Some("n:expired")
    );
    c.xset_notify("n", "n:expired", None).unwrap();
    assert_eq!(c.xset_card("n").unwrap(), 0);
    let err = c.xset_notify("n", "n", None).unwrap_err();
    assert!(
        err.to_string().contains("another key than the set"),
        "{err}"
    );
    c.xset_notify_off("n").unwrap();
    assert_eq!(c.xset_notify_stream::<_, Vec<u8>>("n").unwrap(), None);
    c.xset_notify_off("missing").unwrap();
    // a server error is the server's
    redis::cmd("SET")
        .arg("plain")
        .arg("v")
        .query::<()>(c)
        .unwrap();
    let err = c.xset_card("plain").unwrap_err();
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
}

#[test]
fn every_command_resp2_and_resp3() {
    let server = Server::start();
    for protocol in [2, 3] {
        let mut c = server.client(protocol).get_connection().unwrap();
        every_command(&mut c);
    }
}

#[test]
fn scan_steps_visit_every_member() {
    let server = Server::start();
    for protocol in [2, 3] {
        let mut c = server.client(protocol).get_connection().unwrap();
        flush(&mut c);
        let items: Vec<(String, u64)> = (0..500).map(|i| (format!("user:{i}"), 3600)).collect();
        assert_eq!(c.xset_add("big", &items).unwrap(), 500);
        let mut seen = std::collections::BTreeSet::new();
        let mut cursor = 0;
        loop {
            let opts = ScanOptions::new().count(50);
            let (next, pairs): (u64, Vec<(String, i64)>) =
                c.xset_scan_with_ttl("big", cursor, &opts).unwrap();
            assert!(pairs.iter().all(|p| near(p.1, 3600)));
            seen.extend(pairs.into_iter().map(|p| p.0));
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        assert_eq!(seen.len(), 500);
    }
}

#[test]
fn a_pipeline_of_cmd_builders() {
    let server = Server::start();
    for protocol in [2, 3] {
        let mut c = server.client(protocol).get_connection().unwrap();
        flush(&mut c);
        let (added, has, refused, members, pairs): (
            usize,
            bool,
            Option<usize>,
            Vec<String>,
            WithTtl<String>,
        ) = redis::pipe()
            .atomic()
            .add_command(cmd::xset_add("p", &[("a", 60), ("b", 120)]))
            .add_command(cmd::xset_has("p", "a"))
            .add_command(cmd::xset_addex(
                "p",
                &[("c", 60)],
                &AddOptions::new().cap(2),
            ))
            .add_command(cmd::xset_members("p", &MembersOptions::new()))
            .add_command(cmd::xset_members_with_ttl(
                "p",
                &MembersOptions::new().rev(),
            ))
            .query(&mut c)
            .unwrap();
        assert_eq!((added, has, refused), (2, true, None));
        assert_eq!(members, ["a", "b"]);
        assert_eq!(
            pairs.0.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["b", "a"]
        );
        assert!(near(pairs.0[0].1, 120) && near(pairs.0[1].1, 60));
        let ((), stream): ((), Option<String>) = redis::pipe()
            .atomic()
            .add_command(cmd::xset_notify("p", "p:expired", Some(10)))
            .add_command(cmd::xset_notify_stream("p"))
            .query(&mut c)
            .unwrap();
        assert_eq!(stream.as_deref(), Some("p:expired"));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn async_commands_resp2_and_resp3() {
    let server = Server::start();
    for protocol in [2, 3] {
        let mut c = server
            .client(protocol)
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        redis::cmd("FLUSHALL")
            .query_async::<()>(&mut c)
            .await
            .unwrap();
        assert_eq!(
            c.xset_add("a", &[("m1", 3600), ("m2", 7200)])
                .await
                .unwrap(),
            2
        );
        assert!(c.xset_has("a", "m1").await.unwrap());
        assert_eq!(c.xset_mhas("a", &["m1", "x"]).await.unwrap(), [true, false]);
        let cap = AddOptions::new().cap(2);
        assert_eq!(c.xset_addex("a", &[("m3", 60)], &cap).await.unwrap(), None);
        let pairs: Vec<(String, i64)> = c
            .xset_members_with_ttl("a", &MembersOptions::new())
            .await
            .unwrap();
        assert_eq!(pairs.len(), 2);
        assert!(pairs[0].0 == "m1" && near(pairs[0].1, 3600) && near(pairs[1].1, 7200));
        assert_eq!(
            c.xset_persist_many("a", &["m2", "x"]).await.unwrap(),
            [1, -2]
        );
        assert_eq!(c.xset_ttl("a", "m2").await.unwrap(), -1);
        let popped: Option<String> = c.xset_pop("a", true).await.unwrap();
        assert_eq!(popped.as_deref(), Some("m1"));
        let (cursor, rest): (u64, Vec<(String, i64)>) = c
            .xset_scan_with_ttl("a", 0, &ScanOptions::new())
            .await
            .unwrap();
        assert_eq!((cursor, rest), (0, vec![("m2".to_string(), -1)]));
        assert_eq!(c.xset_intercard(&["a", "a"], None).await.unwrap(), 1);
        c.xset_notify("a", "a:expired", Some(10)).await.unwrap();
        let stream: Option<String> = c.xset_notify_stream("a").await.unwrap();
        assert_eq!(stream.as_deref(), Some("a:expired"));
        c.xset_notify_off("a").await.unwrap();
        assert_eq!(c.xset_notify_stream::<_, String>("a").await.unwrap(), None);
    }
}

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

/// The first entries a consumer group reads from `stream`, waited for by
/// blocking reads until 20 s have passed.
fn read_group(c: &mut redis::Connection, stream: &str) -> Vec<StreamId> {
    let opts = StreamReadOptions::default()
        .group("workers", "w1")
        .count(10)
        .block(2000);
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let reply: Option<StreamReadReply> = c.xread_options(&[stream], &[">"], &opts).unwrap();
        let ids: Vec<StreamId> = reply
            .into_iter()
            .flat_map(|r| r.keys)
            .flat_map(|k| k.ids)
            .collect();
        if !ids.is_empty() {
            return ids;
        }
    }
    panic!("nothing arrived in {stream}");
}

/// `XSET.NOTIFY` end to end: a member whose deadline passes arrives in the
/// stream, once, with its key and deadline; one removed by hand does not.
#[test]
fn an_expired_member_arrives_in_the_stream() {
    let server = Server::start();
    let (set, stream) = ("{leases}", "{leases}:expired");
    for protocol in [2, 3] {
        let mut c = server.client(protocol).get_connection().unwrap();
        flush(&mut c);
        c.xset_notify(set, stream, Some(1000)).unwrap();
        // XSET.NOTIFY made the stream: the group starts at its end.
        let () = c.xgroup_create(stream, "workers", "$").unwrap();
        let deadline = now_ms() + 300;
        let items = [("seat-14", deadline), ("seat-15", deadline + 3_600_000)];
        let pxat = AddOptions::new().unit(Unit::PxAt);
        assert_eq!(c.xset_addex(set, &items, &pxat).unwrap(), Some(2));
        let got = read_group(&mut c, stream);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].get::<String>("key").as_deref(), Some(set));
        assert_eq!(got[0].get::<String>("member").as_deref(), Some("seat-14"));
        assert_eq!(got[0].get::<i64>("deadline"), Some(deadline));
        let acked: usize = c.xack(stream, "workers", &[&got[0].id]).unwrap();
        assert_eq!(acked, 1);
        let left: Vec<String> = c.xset_members(set, &MembersOptions::new()).unwrap();
        assert_eq!(left, ["seat-15"]);
        // Removed by hand: not delivered. The set stays, empty, while it
        // delivers, and goes when delivery stops.
        assert_eq!(c.xset_rem(set, &["seat-15"]).unwrap(), 1);
        assert_eq!(c.xset_card(set).unwrap(), 0);
        assert!(c.exists::<_, bool>(set).unwrap());
        c.xset_notify_off(set).unwrap();
        assert!(!c.exists::<_, bool>(set).unwrap());
        assert_eq!(c.xlen::<_, usize>(stream).unwrap(), 1);
    }
}

/// Every command of the command reference (docs/commands/, generated from
/// the module's command table) has its method: a command added to the
/// module fails this until the crate gains it.
#[test]
fn a_method_per_command() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut commands = 0;
    for entry in std::fs::read_dir(root.join("../../docs/commands")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(verb) = name
            .strip_prefix("xset.")
            .and_then(|n| n.strip_suffix(".md"))
        else {
            continue;
        };
        commands += 1;
        let method = format!("fn xset_{}<", verb.replace('-', "_"));
        assert!(
            source.contains(&method),
            "no method for XSET.{}",
            verb.to_uppercase()
        );
    }
    assert!(commands >= 27);
}
