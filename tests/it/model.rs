//! Differential test against a plain Rust model: seeded random xset writes
//! go to a real primary that has a replica, and at checkpoints the
//! primary's exact state (members and absolute deadlines) must equal the
//! model's, the replica's must equal the primary's, and keys must exist
//! exactly when the model holds members for them. Each seed ends with
//! `DEBUG RELOAD`, `DEBUG LOADAOF` (the primary keeps an AOF without an RDB
//! preamble, rewritten once a seed, so the module's rewrite callback and
//! the propagated commands are both replayed) and `DUMP`/`RESTORE` round
//! trips.
//!
//! Only outcomes the command reference states exactly are modelled. Every
//! deadline is an absolute `PXAT` time an hour or more away, or in the
//! past, so nothing falls due while the test runs and no wall-clock timing
//! decides a result. Where the reference leaves a choice open (which member
//! a random `XSET.POP` takes; the order of equal deadlines at the cut of
//! `XSET.POP ... SOONEST` or of a `MAXLEN` trim), a pop is sent alone and
//! its reply checked to be one of the allowed outcomes, and a `MAXLEN`
//! whose cut is ambiguous is not sent.
//!
//! `XSET_MODEL_SEED=<n>` (decimal or `0x` hex) runs that one seed instead of
//! the fixed list; every failure names its seed and step.

mod checks;
mod ops;

use crate::harness::*;
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};
use xset_core::SplitMix64;

/// The model's "no deadline" (what `XSET.PEXPIRETIME` replies as `-1`).
const NONE: u64 = u64::MAX;
const HOUR: u64 = 3_600_000;
/// The seeds run by default: a handful, so the run stays within seconds.
const SEEDS: &[u64] = &[
    1,
    2,
    3,
    0x5eed_cafe,
    20_250_607,
    0xdead_beef_0042,
    0x0123_4567_89ab_cdef,
    u64::MAX,
];
/// Churn keys per seed, and commands per pipelined batch.
const KEYS: usize = 6;
const BATCH: usize = 64;
/// Random commands in each of the two churn phases of a seed.
const CHURN: usize = 800;

/// The same sequence for a seed on every run and server.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

type Set = BTreeMap<Vec<u8>, u64>;

#[derive(Clone, Copy, PartialEq)]
enum Presence {
    Any,
    Nx,
    Xx,
}

#[derive(Clone, Copy, PartialEq)]
enum Compare {
    Any,
    Gt,
    Lt,
}

/// What the primary must reply to one command.
#[derive(Debug)]
enum Expect {
    Int(i64),
    Codes(Vec<i64>),
    Nil,
    Okay,
    /// `XSET.POP ... SOONEST`: exactly these members, in deadline order
    /// (members of equal deadline may come in any order).
    Popped(Set),
}

struct Step {
    n: usize,
    args: Vec<Vec<u8>>,
    expect: Expect,
}

fn show_bytes(b: &[u8]) -> String {
    b.iter()
        .flat_map(|&c| std::ascii::escape_default(c))
        .map(char::from)
        .collect()
}

fn show_cmd(args: &[Vec<u8>]) -> String {
    let mut s = args
        .iter()
        .map(|a| show_bytes(a))
        .collect::<Vec<_>>()
        .join(" ");
    if s.len() > 400 {
        s.truncate(400);
        s.push_str(" ...");
    }
    s
}

/// The model's set as `snapshot` shows a set: sorted `(member, deadline)`,
/// `-1` for no deadline.
fn as_snapshot(set: Option<&Set>) -> Vec<(Vec<u8>, i64)> {
    set.map(|s| {
        s.iter()
            .map(|(m, &d)| (m.clone(), if d == NONE { -1 } else { d as i64 }))
            .collect()
    })
    .unwrap_or_default()
}

/// The first few differences between two snapshots, for a readable failure.
fn diff(want: &[(Vec<u8>, i64)], got: &[(Vec<u8>, i64)]) -> String {
    let w: BTreeMap<_, _> = want.iter().cloned().collect();
    let g: BTreeMap<_, _> = got.iter().cloned().collect();
    let mut out = vec![format!("{} members expected, {} found", w.len(), g.len())];
    if got.len() != g.len() {
        out.push("a member is listed twice".into());
    }
    for m in w.keys().chain(g.keys()).collect::<BTreeSet<_>>() {
        if w.get(m) != g.get(m) {
            out.push(format!(
                "'{}': expected {:?}, found {:?}",
                show_bytes(m),
                w.get(m),
                g.get(m)
            ));
            if out.len() > 6 {
                out.push("...".into());
                break;
            }
        }
    }
    out.join("; ")
}

fn sorted_by_deadline(set: &Set) -> Vec<(&Vec<u8>, u64)> {
    let mut v: Vec<_> = set.iter().map(|(m, &d)| (m, d)).collect();
    v.sort_by_key(|&(m, d)| (d, m.clone()));
    v
}

/// Whether taking the `k` soonest members of `set` is one exact choice: no
/// deadline at the cut is shared across it (the reference leaves the order
/// of equal deadlines to the encoding).
fn cut_is_exact(set: &Set, k: usize) -> bool {
    let v = sorted_by_deadline(set);
    k == 0 || k >= v.len() || v[k - 1].1 != v[k].1
}

/// Removes and returns the `k` soonest members (a cut [`cut_is_exact`]).
fn take_soonest(set: &mut Set, k: usize) -> Set {
    let gone: Vec<Vec<u8>> = sorted_by_deadline(set)
        .into_iter()
        .take(k)
        .map(|(m, _)| m.clone())
        .collect();
    gone.into_iter()
        .map(|m| {
            let d = set.remove(&m).expect("member");
            (m, d)
        })
        .collect()
}

/// The add rule of the reference (`XSET.ADDEX`'s codes): 1 added, 2
/// deadline changed, 3 removed (a time not in the future), 0 untouched.
/// `GT`/`LT` compare with a live member's deadline only; no deadline is
/// infinitely far.
fn add_one(set: &mut Set, m: &[u8], d: u64, now: u64, p: Presence, cmp: Compare) -> i64 {
    match set.get(m).copied() {
        Some(cur) => {
            let allowed = match cmp {
                Compare::Any => true,
                Compare::Gt => d > cur,
                Compare::Lt => d < cur,
            };
            if p == Presence::Nx || !allowed {
                0
            } else if d <= now {
                set.remove(m);
                3
            } else if d == cur {
                0
            } else {
                set.insert(m.to_vec(), d);
                2
            }
        }
        None if p == Presence::Xx || d <= now => 0,
        None => {
            set.insert(m.to_vec(), d);
            1
        }
    }
}

struct Run<'a> {
    seed: u64,
    rng: Rng,
    /// The server's clock when the seed started: every future deadline is
    /// at least an hour after it, every past one before it.
    now: u64,
    pc: &'a mut Connection,
    rc: &'a mut Connection,
    model: BTreeMap<String, Set>,
    /// Every key name this seed has written, to check that the ones the
    /// model holds nothing for do not exist.
    names: BTreeSet<String>,
    keys: Vec<String>,
    pools: Vec<Vec<Vec<u8>>>,
    pending: Vec<Step>,
    step: usize,
    /// How often each modelled outcome occurred, printed per seed: a
    /// generator that never reaches a case tests nothing about it.
    seen: BTreeMap<String, usize>,
}

impl Run<'_> {
    fn member(&mut self) -> Vec<u8> {
        let len = 1 + self.rng.index(24);
        let binary = self.rng.chance(25);
        (0..len)
            .map(|_| {
                if binary {
                    self.rng.below(256) as u8
                } else {
                    b"abcdefgh0123:-_"[self.rng.index(15)]
                }
            })
            .collect()
    }

    /// A member for key `k`: mostly from its pool or the set itself, so
    /// that refreshes and removals meet existing members; sometimes new.
    fn pick(&mut self, k: usize) -> Vec<u8> {
        let roll = self.rng.below(100);
        let set_len = self.model.get(&self.keys[k]).map_or(0, |s| s.len());
        if roll < 25 && set_len > 0 {
            let i = self.rng.index(set_len);
            self.model[&self.keys[k]]
                .keys()
                .nth(i)
                .expect("member")
                .clone()
        } else if roll < 95 {
            let i = self.rng.index(self.pools[k].len());
            self.pools[k][i].clone()
        } else {
            self.member()
        }
    }

    /// A time for a write: mostly a future deadline (some on a coarse grid,
    /// so that equal deadlines occur), sometimes the current one, sometimes
    /// a past time (which removes). `zero_ok` allows 0, which
    /// `XSET.PEXPIREAT` takes and `XSET.ADDEX` refuses.
    fn time(&mut self, current: Option<u64>, zero_ok: bool) -> u64 {
        let roll = self.rng.below(100);
        match roll {
            0..=3 => {
                if zero_ok && self.rng.chance(50) {
                    0
                } else {
                    1
                }
            }
            4..=9 => self.now - 1 - self.rng.below(86_400_000),
            10..=19 if current.is_some_and(|d| d != NONE) => current.expect("current"),
            10..=49 => self.now + HOUR + 60_000 * self.rng.below(60),
            _ => self.now + HOUR + self.rng.below(HOUR),
        }
    }

    fn note(&mut self, what: impl Into<String>) {
        *self.seen.entry(what.into()).or_default() += 1;
    }

    fn emit(&mut self, args: Vec<Vec<u8>>, expect: Expect) {
        let name = String::from_utf8_lossy(&args[0]).to_lowercase();
        match &expect {
            Expect::Int(n) if name == "xset.addex" => {
                self.note(format!("{name} added {}", n.min(&2)))
            }
            Expect::Int(n) if name == "xset.persist" || name == "xset.pexpireat" => {
                self.note(format!("{name} code {n}"))
            }
            Expect::Int(n) if name != "xset.rem" => {
                let size = match n {
                    ..=0 => "0",
                    1..=99 => "1..99",
                    _ => "100+",
                };
                self.note(format!("{name} -> {size}"))
            }
            Expect::Codes(codes) => {
                for c in codes {
                    self.note(format!("{name} code {c}"));
                }
            }
            Expect::Nil => self.note(format!("{name} refused by CAP")),
            Expect::Popped(p) => self.note(format!("{name} of {}", p.len().min(2))),
            _ => self.note(name),
        }
        self.step += 1;
        self.pending.push(Step {
            n: self.step,
            args,
            expect,
        });
        if self.pending.len() >= BATCH {
            self.flush();
        }
    }

    /// Sends the pending commands in one pipeline and checks each reply.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let steps = std::mem::take(&mut self.pending);
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for s in &steps {
            let mut cmd = redis::cmd(std::str::from_utf8(&s.args[0]).expect("name"));
            for a in &s.args[1..] {
                cmd.arg(a.as_slice());
            }
            pipe.add_command(cmd);
        }
        let replies: Vec<Value> = pipe.query(self.pc).unwrap_or_else(|e| {
            panic!(
                "seed {:#x} steps {}..={}: pipeline failed: {e}",
                self.seed, steps[0].n, self.step
            )
        });
        assert_eq!(replies.len(), steps.len(), "one reply per command");
        for (s, got) in steps.iter().zip(replies) {
            let ok = match (&s.expect, &got) {
                (Expect::Int(n), Value::Int(g)) => n == g,
                (Expect::Codes(want), Value::Array(items)) => {
                    items.len() == want.len()
                        && items
                            .iter()
                            .zip(want)
                            .all(|(v, w)| matches!(v, Value::Int(g) if g == w))
                }
                (Expect::Nil, Value::Nil) => true,
                (Expect::Okay, Value::Okay) => true,
                (Expect::Okay, Value::SimpleString(t)) => t == "OK",
                (Expect::Popped(want), Value::Array(items)) => {
                    let mut last = 0;
                    let mut seen = BTreeSet::new();
                    items.len() == want.len()
                        && items.iter().all(|v| {
                            let Value::BulkString(m) = v else {
                                return false;
                            };
                            let Some(&d) = want.get(m) else {
                                return false;
                            };
                            let in_order = d >= last;
                            last = d;
                            in_order && seen.insert(m.clone())
                        })
                }
                _ => false,
            };
            assert!(
                ok,
                "seed {:#x} step {}: `{}` replied {got:?}, the model expects {:?}",
                self.seed,
                s.n,
                show_cmd(&s.args),
                s.expect
            );
        }
    }

    fn key_op(&mut self) -> usize {
        self.rng.index(self.keys.len())
    }

    fn set_model(&mut self, key: &str, set: Set) {
        self.names.insert(key.to_string());
        if set.len() > self.seen.get("largest set").copied().unwrap_or(0) {
            self.seen.insert("largest set".into(), set.len());
        }
        if set.is_empty() {
            if self.model.remove(key).is_some() {
                self.note("set emptied");
            }
        } else {
            self.model.insert(key.to_string(), set);
        }
    }
}

fn run_seed(seed: u64, pc: &mut Connection, rc: &mut Connection) {
    let mut rng = Rng(SplitMix64(seed));
    // Encoding limits per seed, set on both servers (CONFIG SET does not
    // replicate), so that sets cross between the small and large encodings
    // at different sizes, and by member length (0: large from the first
    // member).
    let max_members = ["0", "4", "16", "128"][rng.index(4)];
    let max_bytes = ["12", "64"][rng.index(2)];
    for c in [&mut *pc, &mut *rc] {
        let _: String = q(
            c,
            c!["CONFIG", "SET", "xset.small-max-members", max_members],
        );
        let _: String = q(
            c,
            c!["CONFIG", "SET", "xset.small-max-member-bytes", max_bytes],
        );
    }
    // Each seed starts from an empty database, so that one seed run alone
    // (XSET_MODEL_SEED) is the same run as within the list, and a key a
    // seed never checks cannot fail a digest.
    let _: String = q(pc, c!["FLUSHALL"]);
    let now = server_ms(pc);
    let prefix = format!("model:{seed:x}");
    let keys: Vec<String> = (0..KEYS).map(|i| format!("{prefix}:{i}")).collect();
    let mut run = Run {
        seed,
        rng,
        now,
        pc,
        rc,
        model: BTreeMap::new(),
        names: BTreeSet::new(),
        keys,
        pools: Vec::new(),
        pending: Vec::new(),
        step: 0,
        seen: BTreeMap::new(),
    };
    for _ in 0..KEYS {
        let size = 8 + run.rng.index(40);
        let pool = (0..size).map(|_| run.member()).collect();
        run.pools.push(pool);
    }
    for _ in 0..CHURN {
        run.random_op();
    }
    run.checkpoint("churn");
    let big = [run.key_op(), run.key_op()];
    for &k in &big {
        let extra = 1500 + run.rng.index(2500);
        run.grow(k, extra);
    }
    run.checkpoint("grown");
    // The rewrite captures the sets at their largest; the shrink that
    // follows is replayed from the commands appended after it.
    let _: Value = q(run.pc, c!["BGREWRITEAOF"]);
    wait_rewrite_done(run.pc);
    for &k in &big {
        let keep = 2 + run.rng.index(20);
        run.shrink(k, keep);
    }
    run.checkpoint("shrunk");
    for _ in 0..CHURN {
        run.random_op();
    }
    run.checkpoint("churn again");
    for k in 0..KEYS {
        for _ in 0..3 {
            run.pop_checked(k);
        }
    }
    run.checkpoint("checked pops");
    run.reload_and_restore();
    eprintln!("model: seed {seed:#x}, {} steps: {:?}", run.step, run.seen);
}

fn seeds() -> Vec<u64> {
    match std::env::var("XSET_MODEL_SEED") {
        Ok(s) if !s.is_empty() => {
            let s = s.trim();
            let seed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            vec![seed.unwrap_or_else(|e| panic!("XSET_MODEL_SEED={s}: {e}"))]
        }
        _ => SEEDS.to_vec(),
    }
}

#[test]
fn random_writes_match_the_model_on_primary_and_replica() {
    let (_p, _r, mut pc, mut rc) = primary_and_replica();
    // Without the RDB preamble an AOF rewrite goes through the module's
    // rewrite callback.
    let _: String = q(&mut pc, c!["CONFIG", "SET", "aof-use-rdb-preamble", "no"]);
    let _: String = q(&mut pc, c!["CONFIG", "SET", "appendonly", "yes"]);
    wait_rewrite_done(&mut pc);
    let started = std::time::Instant::now();
    for seed in seeds() {
        run_seed(seed, &mut pc, &mut rc);
    }
    eprintln!("model: seeds {:?} in {:?}", seeds(), started.elapsed());
}
