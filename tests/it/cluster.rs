//! Redis Cluster: 3 primaries + 3 replicas on loopback, the module in every
//! node. Keys spread over all slots keep every member and exact deadline
//! through a reshard (MIGRATE moves values through the RDB callbacks) and a
//! primary failover; the promoted replica expires members actively; MOVED
//! and CROSSSLOT behave as for native types. Meanwhile a cluster-aware
//! writer (ours, over plain connections) keeps writing to the slots being
//! moved, then to the failing primary's slots, following ASK and MOVED:
//! every acknowledged write keeps its exact deadline through both.

use crate::harness::*;
use redis::{Connection, RedisResult, Value};
use std::collections::{BTreeMap, HashMap, HashSet, hash_map::Entry};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, sleep};
use std::time::{Duration, Instant};

const SLOTS: usize = 16384;

/// Slot ranges `(first, last, primary port)` from a `CLUSTER SLOTS` reply.
fn parse_slots(slots: Vec<Value>) -> Vec<(i64, i64, u16)> {
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
    ranges
}

/// A tiny cluster-aware router: slot ranges to node ports, from CLUSTER
/// SLOTS, refreshed on demand.
struct Router {
    ranges: Vec<(i64, i64, u16)>,
}

impl Router {
    fn load(c: &mut Connection) -> Router {
        Router {
            ranges: parse_slots(q(c, c!["CLUSTER", "SLOTS"])),
        }
    }

    fn owner(&self, slot: u16) -> u16 {
        let slot = i64::from(slot);
        self.ranges
            .iter()
            .find(|(a, b, _)| (*a..=*b).contains(&slot))
            .map(|r| r.2)
            .expect("slot covered")
    }

    fn port_of(&self, c: &mut Connection, key: &str) -> u16 {
        let slot: u16 = q(c, c!["CLUSTER", "KEYSLOT", key]);
        self.owner(slot)
    }
}

/// The slot of `key`, hash tags included: the core's, which the test checks
/// against `CLUSTER KEYSLOT`.
fn key_slot(key: &str) -> u16 {
    xset_core::key_slot(key.as_bytes())
}

/// A hash tag for each slot of `slots`: keys `{tag}...` land on that slot.
fn tags_for(slots: &[u16]) -> HashMap<u16, String> {
    let wanted: HashSet<u16> = slots.iter().copied().collect();
    let mut tags = HashMap::new();
    let mut n = 0u64;
    while tags.len() < wanted.len() {
        let tag = format!("w{n}");
        let slot = key_slot(&tag);
        if wanted.contains(&slot) {
            tags.entry(slot).or_insert(tag);
        }
        n += 1;
    }
    tags
}

/// The port in a `MOVED`/`ASK` error (`MOVED 3999 127.0.0.1:6381`).
fn redirect_port(e: &redis::RedisError) -> u16 {
    e.redirect_node()
        .and_then(|(addr, _)| addr.rsplit(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("a redirect with an address: {e}"))
}

/// A minimal cluster client over plain connections, so that the test
/// handles, and counts, every redirect itself: a slot table from `CLUSTER
/// SLOTS`; `MOVED` updates it and retries on the new owner; `ASK` sends
/// `ASKING` and the command once to the importing node, leaving the table
/// alone; `TRYAGAIN` and `CLUSTERDOWN` retry after a short wait, and so do
/// connection errors, with the table reloaded from any node that answers.
struct ClusterClient {
    seeds: Vec<u16>,
    owner: Vec<u16>,
    conns: HashMap<u16, Connection>,
    moved: u64,
    ask: u64,
    waits: u64,
}

impl ClusterClient {
    fn new(seeds: &[u16]) -> ClusterClient {
        let mut client = ClusterClient {
            seeds: seeds.to_vec(),
            owner: vec![0; SLOTS],
            conns: HashMap::new(),
            moved: 0,
            ask: 0,
            waits: 0,
        };
        assert!(client.reload(), "a node answers CLUSTER SLOTS");
        client
    }

    /// Reloads the slot table from the first node that answers.
    fn reload(&mut self) -> bool {
        self.reload_from(&self.seeds.clone())
    }

    /// Reloads the slot table from the first of `ports` that answers.
    fn reload_from(&mut self, ports: &[u16]) -> bool {
        for &port in ports {
            let reply = self
                .conn(port)
                .and_then(|c| try_q::<Vec<Value>>(c, c!["CLUSTER", "SLOTS"]));
            match reply {
                Ok(slots) => {
                    for (a, b, owner) in parse_slots(slots) {
                        self.owner[a as usize..=b as usize].fill(owner);
                    }
                    return true;
                }
                Err(_) => {
                    self.conns.remove(&port);
                }
            }
        }
        false
    }

    fn conn(&mut self, port: u16) -> RedisResult<&mut Connection> {
        match self.conns.entry(port) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(v) => {
                let c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?
                    .get_connection_with_timeout(Duration::from_secs(1))?;
                c.set_read_timeout(Some(Duration::from_secs(5)))?;
                Ok(v.insert(c))
            }
        }
    }

    /// Runs `args`, whose key is `key`, on the key's owner, following
    /// redirects; gives up (None) when `stop()` says so before a retry.
    /// Returns the port that replied and the reply.
    fn run(&mut self, key: &str, args: &[&[u8]], stop: &dyn Fn() -> bool) -> Option<(u16, Value)> {
        let slot = key_slot(key) as usize;
        let give_up = Instant::now() + Duration::from_secs(30);
        let mut ask_to = None;
        for attempt in 0.. {
            if attempt > 0 && stop() {
                return None;
            }
            assert!(
                Instant::now() < give_up,
                "no reply to {} {key} in 30 s",
                String::from_utf8_lossy(args[0])
            );
            let (port, asking) = match ask_to.take() {
                Some(port) => (port, true),
                None => (self.owner[slot], false),
            };
            let reply = self.conn(port).and_then(|c| {
                if asking {
                    try_q::<Value>(c, c!["ASKING"])?;
                }
                try_q::<Value>(c, args)
            });
            let e = match reply {
                Ok(v) => return Some((port, v)),
                Err(e) => e,
            };
            match e.code() {
                Some("MOVED") => {
                    self.moved += 1;
                    self.owner[slot] = redirect_port(&e);
                }
                Some("ASK") => {
                    self.ask += 1;
                    ask_to = Some(redirect_port(&e));
                }
                Some("TRYAGAIN" | "CLUSTERDOWN") => {
                    self.waits += 1;
                    sleep(Duration::from_millis(10));
                }
                Some(_) => panic!("{} {key} on {port}: {e}", String::from_utf8_lossy(args[0])),
                None => {
                    // The node is gone or the link broke: another node
                    // knows who serves the slot now.
                    self.conns.remove(&port);
                    self.waits += 1;
                    sleep(Duration::from_millis(20));
                    self.reload();
                }
            }
        }
        unreachable!()
    }

    /// Whether the replica of the node on `port` has every write made on
    /// this client's link to it (`WAIT 1`).
    fn replicated(&mut self, port: u16) -> bool {
        match self
            .conn(port)
            .and_then(|c| try_q::<i64>(c, c!["WAIT", "1", "2000"]))
        {
            Ok(n) => n == 1,
            Err(_) => {
                self.conns.remove(&port);
                false
            }
        }
    }
}

/// An acknowledged write: `member` of `key` with the absolute deadline
/// `at`, acknowledged by the node on `port`.
#[derive(Debug)]
struct Ack {
    key: String,
    member: String,
    at: i64,
    port: u16,
}

/// What a writer is to do.
struct Plan {
    seeds: Vec<u16>,
    /// The slots to write to.
    slots: Vec<u16>,
    /// Every other write goes to the lowest of `slots` that the writer
    /// still maps to this node: the slot being migrated right now, as
    /// `redis-cli --cluster reshard` moves a node's slots in ascending
    /// order, so that writes meet it half-moved (ASK), not only moved
    /// (MOVED). The other writes, to random slots of `slots`, pause 200 µs
    /// each: a rate limit, so that the writer does not halve the speed of
    /// the reshard on two busy cores.
    follow_from: Option<u16>,
    /// A write to this node counts only once `WAIT 1` confirms that its
    /// replica has it: replication is asynchronous, and a primary that
    /// dies may take acknowledged but unreplicated writes with it.
    replicated_on: Option<u16>,
    /// Member `m<i>` gets the deadline `base_ms + i`, i from `first`.
    first: u64,
    base_ms: u64,
}

/// What a writer did.
#[derive(Debug)]
struct Report {
    attempted: u64,
    moved: u64,
    ask: u64,
    waits: u64,
    /// Applied, but `WAIT` did not confirm the replica had them.
    unconfirmed: u64,
}

/// A thread writing one member per `XSET.ADDEX ... PXAT` through its own
/// [`ClusterClient`] until stopped.
struct Writer {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<Vec<Ack>>>,
    handle: JoinHandle<Report>,
}

impl Writer {
    fn start(plan: Plan) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::new()));
        let (stop2, acked2) = (stop.clone(), acked.clone());
        let handle = std::thread::spawn(move || write_until_stopped(plan, &stop2, &acked2));
        Writer {
            stop,
            acked,
            handle,
        }
    }

    /// Waits until at least `n` acknowledged writes satisfy `which`.
    fn wait_acked(&self, what: &str, n: usize, which: impl Fn(&Ack) -> bool) {
        wait_until(what, Duration::from_secs(20), || {
            assert!(!self.handle.is_finished(), "the writer stopped early");
            let acked = self.acked.lock().expect("acked");
            acked.iter().filter(|a| which(a)).count() >= n
        });
    }

    fn finish(self) -> (Vec<Ack>, Report) {
        self.stop.store(true, Ordering::Relaxed);
        let report = self.handle.join().expect("the writer did not panic");
        let acked = std::mem::take(&mut *self.acked.lock().expect("acked"));
        (acked, report)
    }
}

fn write_until_stopped(plan: Plan, stop: &AtomicBool, acked: &Mutex<Vec<Ack>>) -> Report {
    let tags = tags_for(&plan.slots);
    let mut client = ClusterClient::new(&plan.seeds);
    let stopped = || stop.load(Ordering::Relaxed);
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut unconfirmed = 0;
    // The frontier slot's key is a new one after each write its old owner
    // took: a key the migrating node lacks, so that while the slot is
    // migrating every write to it is redirected with ASK.
    let mut generation: HashMap<u16, u32> = HashMap::new();
    let mut i = plan.first;
    while !stopped() {
        let frontier = plan
            .follow_from
            .filter(|_| i.is_multiple_of(2))
            .and_then(|from| {
                plan.slots
                    .iter()
                    .copied()
                    .find(|&s| client.owner[s as usize] == from)
            });
        let (slot, suffix) = match frontier {
            Some(slot) => (slot, format!("f{}", generation.get(&slot).unwrap_or(&0))),
            None => {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let slot = plan.slots[(rng % plan.slots.len() as u64) as usize];
                (slot, "r".to_string())
            }
        };
        let key = format!("{{{}}}:{suffix}", tags[&slot]);
        let member = format!("m{i}");
        let at = plan.base_ms + i;
        let at_arg = at.to_string();
        i += 1;
        let moved_before = client.moved;
        let reply = client.run(
            &key,
            c![
                "XSET.ADDEX",
                key.as_str(),
                "PXAT",
                "MEMBERS",
                "1",
                member.as_str(),
                at_arg.as_str()
            ],
            &stopped,
        );
        let Some((port, reply)) = reply else {
            break;
        };
        // 0 when a retry follows a lost reply to a write that was applied.
        assert!(
            matches!(reply, Value::Int(0 | 1)),
            "XSET.ADDEX replied {reply:?}"
        );
        if let (Some(_), Some(from)) = (frontier, plan.follow_from) {
            if port == from {
                *generation.entry(slot).or_default() += 1;
            } else if client.moved > moved_before {
                // The frontier moved on: catch up with redis-cli at once
                // (the node giving the slots away knows best which it
                // still has), not one MOVED per slot behind it.
                client.reload_from(&[from]);
            }
        }
        if plan.replicated_on == Some(port) && !client.replicated(port) {
            unconfirmed += 1;
            continue;
        }
        acked.lock().expect("acked").push(Ack {
            key,
            member,
            at: at as i64,
            port,
        });
        if frontier.is_none() {
            sleep(Duration::from_micros(200));
        }
    }
    Report {
        attempted: i - plan.first,
        moved: client.moved,
        ask: client.ask,
        waits: client.waits,
        unconfirmed,
    }
}

/// Checks through `client`, from the nodes that own the keys now, that
/// every acknowledged member exists with exactly its deadline; returns the
/// number of `MOVED` followed while reading.
fn check_acked(client: &mut ClusterClient, acked: &[Ack], when: &str) -> u64 {
    let moved_before = client.moved;
    let mut by_key: BTreeMap<&str, Vec<&Ack>> = BTreeMap::new();
    for a in acked {
        by_key.entry(a.key.as_str()).or_default().push(a);
    }
    for (key, acks) in by_key {
        // The first member through the redirect-following path finds the
        // owner; the others go to it in one pipeline.
        let member = acks[0].member.as_str();
        let args = c!["XSET.PEXPIRETIME", key, member];
        let (port, first) = client.run(key, args, &|| false).expect("a reply");
        assert!(
            matches!(first, Value::Int(at) if at == acks[0].at),
            "{when}: {key} {} acknowledged by {} with deadline {}, now {first:?} on {port}",
            acks[0].member,
            acks[0].port,
            acks[0].at
        );
        if acks.len() > 1 {
            let mut pipe = redis::pipe();
            for a in &acks[1..] {
                pipe.cmd("XSET.PEXPIRETIME").arg(key).arg(&a.member);
            }
            let got: Vec<i64> = pipe
                .query(client.conn(port).expect("the owner"))
                .unwrap_or_else(|e| panic!("{when}: {key} on {port}: {e}"));
            for (a, got) in acks[1..].iter().zip(got) {
                assert_eq!(
                    got, a.at,
                    "{when}: {key} {} acknowledged by {} with deadline {}, now on {port}",
                    a.member, a.port, a.at
                );
            }
        }
    }
    client.moved - moved_before
}

fn conn_to(port: u16) -> Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
        .expect("connect to node")
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
    let nodes = start_cluster(6, 1);
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
    // Set algebra is routed by all its keys: CROSSSLOT across two slots
    // (inputs, or destination and inputs), MOVED to the owner, and it runs
    // within one hash tag.
    q::<i64>(&mut c, c!["XSET.ADD", ka, "m", "1000", "n", "1000"]);
    q::<i64>(&mut c, c!["XSET.ADD", kb, "m", "1000"]);
    for args in [
        c!["XSET.INTER", "2", ka, kb],
        c!["XSET.INTERCARD", "2", ka, kb],
        c!["XSET.UNIONSTORE", "{a}dest", "2", ka, kb],
        c!["XSET.DIFFSTORE", kb, "1", ka],
    ] {
        let e = err(&mut c, args);
        assert!(e.starts_with("CROSSSLOT"), "{args:?}: {e}");
    }
    let ka2 = "{a}z";
    q::<i64>(&mut c, c!["XSET.ADD", ka2, "m", "1000"]);
    assert_eq!(
        q::<i64>(&mut c, c!["XSET.DIFFSTORE", "{a}dest", "2", ka, ka2]),
        1
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, c!["XSET.MEMBERS", "{a}dest"]),
        ["n"]
    );
    let away = primaries
        .iter()
        .copied()
        .find(|&p| p != home)
        .expect("another primary");
    let e = err(&mut conn_to(away), c!["XSET.UNION", "2", ka, ka2]);
    assert!(e.starts_with("MOVED"), "{e}");
    for k in [ka, kb, ka2, "{a}dest"] {
        q::<i64>(&mut c, c!["DEL", k]);
    }

    // Reshard 1000 slots from one primary to another with MIGRATE while a
    // writer adds members to keys over exactly those slots: they are the
    // first 1000 of `from`, which redis-cli moves in ascending order.
    let (from, to) = (primaries[0], primaries[1]);
    let (from_id, to_id) = (node_id(from), node_id(to));
    let seeds: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let base_ms = server_ms(&mut any) + 36_000_000;
    let moving: Vec<u16> = (0..SLOTS as u16)
        .filter(|&s| router.owner(s) == from)
        .take(1000)
        .collect();
    let probe = format!("{{{}}}:f", tags_for(&moving[..1])[&moving[0]]);
    assert_eq!(
        q::<u16>(&mut any, c!["CLUSTER", "KEYSLOT", probe.as_str()]),
        key_slot(&probe),
        "our key slots are the server's"
    );
    let writer = Writer::start(Plan {
        seeds: seeds.clone(),
        slots: moving,
        follow_from: Some(from),
        replicated_on: None,
        first: 0,
        base_ms,
    });
    writer.wait_acked("writes before the reshard", 200, |_| true);
    // A reader that, like any client connected before the reshard, has a
    // stale slot table afterwards: its reads follow MOVED.
    let mut reader = ClusterClient::new(&seeds);
    let started = Instant::now();
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
    let reshard_time = started.elapsed();
    let (mut acked, report) = writer.finish();
    let by_to = acked.iter().filter(|a| a.port == to).count();
    println!(
        "reshard of 1000 slots in {reshard_time:?}: {} writes acknowledged \
         ({by_to} by the importing node) of {}, {} MOVED and {} ASK followed, \
         {} waits",
        acked.len(),
        report.attempted,
        report.moved,
        report.ask,
        report.waits
    );
    assert!(
        report.moved > 0 && report.ask > 0,
        "the writer met slots moved (MOVED) and half-moved (ASK): {report:?}"
    );
    assert!(by_to > 0, "writes reached the importing node");
    wait_until("cluster ok after reshard", Duration::from_secs(20), || {
        nodes.iter().all(|n| cluster_ok(n.port))
    });
    let router = Router::load(&mut any);
    let after = read_all(&router, &mut any, &keys);
    assert_eq!(
        after, before,
        "every member and exact deadline after the reshard"
    );
    let moved = check_acked(&mut reader, &acked, "after the reshard");
    println!(
        "after the reshard: every acknowledged member has its deadline \
         ({moved} MOVED followed reading)"
    );

    // Fail a primary while a writer adds members to keys over its slots;
    // there a write counts once its replica has it (WAIT).
    let victim = primaries[2];
    let victim_slots: Vec<u16> = (0..SLOTS as u16)
        .filter(|&s| router.owner(s) == victim)
        .step_by(50)
        .collect();
    let writer = Writer::start(Plan {
        seeds: seeds.clone(),
        slots: victim_slots,
        follow_from: None,
        replicated_on: Some(victim),
        first: report.attempted,
        base_ms,
    });
    writer.wait_acked("replicated writes before the failover", 50, |_| true);

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

    // Kill the primary: its replica takes over with everything.
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
    writer.wait_acked("writes acknowledged after the failover", 50, |a| {
        a.port != victim
    });
    let (acked_failover, report) = writer.finish();
    println!(
        "failover: {} writes acknowledged ({} before the kill, replicated) of {}, \
         {} unconfirmed, {} MOVED and {} ASK followed, {} waits",
        acked_failover.len(),
        acked_failover.iter().filter(|a| a.port == victim).count(),
        report.attempted,
        report.unconfirmed,
        report.moved,
        report.ask,
        report.waits
    );
    acked.extend(acked_failover);
    let moved = check_acked(&mut reader, &acked, "after the failover");
    println!(
        "after the failover: all {} acknowledged members have their deadline \
         ({moved} MOVED followed reading)",
        acked.len()
    );

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
