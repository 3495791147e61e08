//! Redis Cluster: 3 primaries + 3 replicas on loopback, the module in every
//! node. Keys spread over all slots keep every member and exact deadline
//! through a reshard (MIGRATE moves values through the RDB callbacks) and a
//! primary failover; the promoted replica expires members actively; MOVED
//! and CROSSSLOT behave as for native types.

mod common;

use common::*;
use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A tiny cluster-aware router: slot ranges to node ports, from CLUSTER
/// SLOTS, refreshed on demand.
struct Router {
    ranges: Vec<(i64, i64, u16)>,
}

impl Router {
    fn load(c: &mut Connection) -> Router {
        let slots: Vec<Value> = q(c, c!["CLUSTER", "SLOTS"]);
        let mut ranges = Vec::new();
        for entry in slots {
            let Value::Array(parts) = entry else { continue };
            let (Value::Int(a), Value::Int(b), Value::Array(primary)) =
                (&parts[0], &parts[1], &parts[2])
            else {
                continue;
            };
            let Value::Int(port) = primary[1] else {
                continue;
            };
            ranges.push((*a, *b, port as u16));
        }
        Router { ranges }
    }

    fn port_of(&self, c: &mut Connection, key: &str) -> u16 {
        let slot: i64 = q(c, c!["CLUSTER", "KEYSLOT", key]);
        self.ranges
            .iter()
            .find(|(a, b, _)| (*a..=*b).contains(&slot))
            .map(|r| r.2)
            .expect("slot covered")
    }
}

fn conn_to(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
        .expect("connect to node")
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(Duration::from_millis(50));
    }
}

fn cluster_ok(port: u16) -> bool {
    let mut c = conn_to(port);
    let info: String = q(&mut c, c!["CLUSTER", "INFO"]);
    info.contains("cluster_state:ok")
}

/// Whether the node on `port` has a replica in `online` state (`WAIT`
/// counts only those; a first sync takes up to a second on Valkey 9.1).
fn has_online_replica(port: u16) -> bool {
    let info: String = q(&mut conn_to(port), c!["INFO", "replication"]);
    info.contains("state=online")
}

/// Waits until every write made on the node on `port` so far reached its
/// replica.
fn wait_replicated(port: u16) {
    assert_eq!(
        q::<i64>(&mut conn_to(port), c!["WAIT", "1", "5000"]),
        1,
        "the replica of {port} acknowledged every write"
    );
}

fn node_id(port: u16) -> String {
    q(&mut conn_to(port), c!["CLUSTER", "MYID"])
}

fn redis_cli(args: &[&str]) {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("redis-cli");
    assert!(
        out.status.success(),
        "redis-cli {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every key's (member, PEXPIRETIME), read from the node that owns it.
fn read_all(
    router: &Router,
    any: &mut Connection,
    keys: &[String],
) -> BTreeMap<String, Vec<(Vec<u8>, i64)>> {
    keys.iter()
        .map(|k| {
            let mut c = conn_to(router.port_of(any, k));
            (k.clone(), snapshot(&mut c, k))
        })
        .collect()
}

#[test]
fn reshard_and_failover_lose_nothing() {
    let nodes: Vec<Server> = (0..6).map(|_| Server::start_cluster_node(&[])).collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let mut create = vec!["--cluster", "create"];
    create.extend(addrs.iter().map(String::as_str));
    create.extend(["--cluster-replicas", "1", "--cluster-yes"]);
    redis_cli(&create);
    for n in &nodes {
        wait_until("cluster_state:ok", Duration::from_secs(20), || {
            cluster_ok(n.port)
        });
    }
    let mut any = nodes[0].conn();
    let router = Router::load(&mut any);
    let primaries: Vec<u16> = router.ranges.iter().map(|r| r.2).collect();
    assert_eq!(primaries.len(), 3);
    for &p in &primaries {
        wait_until("a replica online", Duration::from_secs(20), || {
            has_online_replica(p)
        });
    }

    // Keys over all slots with long-lived members (and, later, keys whose
    // only members fall due after the failover).
    let now = server_ms(&mut any);
    let keys: Vec<String> = (0..300).map(|i| format!("user:{i}")).collect();
    let short: Vec<String> = (0..60).map(|i| format!("otp:{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        let mut c = conn_to(router.port_of(&mut any, k));
        let far = (now + 3_600_000 + i as u64).to_string();
        let far2 = (now + 7_200_000).to_string();
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                k.as_str(),
                "PXAT",
                "MEMBERS",
                "2",
                "a",
                far.as_str(),
                "b",
                far2.as_str()
            ],
        );
    }
    for &p in &primaries {
        wait_replicated(p);
    }
    let before = read_all(&router, &mut any, &keys);

    // MOVED from a node that does not own the key.
    let k0 = &keys[0];
    let owner = router.port_of(&mut any, k0);
    let other = primaries
        .iter()
        .copied()
        .find(|&p| p != owner)
        .expect("another primary");
    let e = err(&mut conn_to(other), c!["XSET.HAS", k0.as_str(), "a"]);
    assert!(e.starts_with("MOVED"), "{e}");
    // CROSSSLOT for a transaction over two slots of the same node.
    let ka = "{a}x";
    let home = router.port_of(&mut any, ka);
    let kb = (0..)
        .map(|i| format!("{{b{i}}}y"))
        .find(|k| router.port_of(&mut any, k) == home)
        .expect("a key on the same node");
    let kb = kb.as_str();
    let mut c = conn_to(home);
    q::<String>(&mut c, c!["MULTI"]);
    let first: String = q(&mut c, c!["XSET.ADD", ka, "m", "10"]);
    assert_eq!(first, "QUEUED");
    let second = try_q::<Value>(&mut c, c!["XSET.ADD", kb, "m", "10"]);
    let exec = try_q::<Value>(&mut c, c!["EXEC"]);
    let msg = format!("{second:?} {exec:?}");
    assert!(msg.to_uppercase().contains("CROSSSLOT"), "{msg}");
    assert_eq!(
        q::<i64>(&mut c, c!["EXISTS", ka]),
        0,
        "the transaction changed nothing"
    );

    // Reshard 1000 slots from one primary to another with MIGRATE.
    let (from, to) = (primaries[0], primaries[1]);
    let (from_id, to_id) = (node_id(from), node_id(to));
    let entry = format!("127.0.0.1:{from}");
    redis_cli(&[
        "--cluster",
        "reshard",
        &entry,
        "--cluster-from",
        &from_id,
        "--cluster-to",
        &to_id,
        "--cluster-slots",
        "1000",
        "--cluster-yes",
    ]);
    wait_until("cluster ok after reshard", Duration::from_secs(20), || {
        nodes.iter().all(|n| cluster_ok(n.port))
    });
    let router = Router::load(&mut any);
    let after = read_all(&router, &mut any, &keys);
    assert_eq!(
        after, before,
        "every member and exact deadline after the reshard"
    );

    // Members that fall due only after the primary is gone: written just
    // before the kill and synced to the replicas with WAIT.
    for k in &short {
        let mut c = conn_to(router.port_of(&mut any, k));
        q::<i64>(
            &mut c,
            c![
                "XSET.ADDEX",
                k.as_str(),
                "PX",
                "MEMBERS",
                "1",
                "code",
                "1500"
            ],
        );
    }
    for &p in &primaries {
        wait_replicated(p);
    }

    // Fail a primary: its replica takes over with everything.
    let victim = primaries[2];
    let victim_idx = nodes.iter().position(|n| n.port == victim).expect("victim");
    let mut nodes = nodes;
    drop(nodes.remove(victim_idx));
    let survivor = nodes[0].port;
    // Every node, the promoted one included, must see the cluster as up
    // before it serves the slots (each node judges that on its own).
    wait_until("failover", Duration::from_secs(30), || {
        nodes.iter().all(|n| cluster_ok(n.port))
            && Router::load(&mut conn_to(survivor))
                .ranges
                .iter()
                .all(|r| r.2 != victim)
    });
    let mut any = conn_to(survivor);
    let router = Router::load(&mut any);
    let promoted: Vec<u16> = router
        .ranges
        .iter()
        .map(|r| r.2)
        .filter(|p| !primaries.contains(p))
        .collect();
    assert!(!promoted.is_empty(), "a replica was promoted");
    let after = read_all(&router, &mut any, &keys);
    assert_eq!(after, before, "nothing lost in the failover");

    // Members due after the failover are reclaimed actively by the new
    // primary: the short keys vanish without any client reading them.
    wait_until("short keys reclaimed", Duration::from_secs(15), || {
        short.iter().all(|k| {
            let mut c = conn_to(router.port_of(&mut any, k));
            q::<i64>(&mut c, c!["EXISTS", k.as_str()]) == 0
        })
    });
    for p in promoted {
        let info: String = q(&mut conn_to(p), c!["INFO", "xset"]);
        assert!(
            !info.contains("xset_expired_members_active:0\r"),
            "the promoted replica expired actively: {info}"
        );
    }
}
