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

use crate::harness::*;
use redis::{Connection, Value};
use std::collections::{BTreeMap, BTreeSet};

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

/// splitmix64: small, self-contained, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
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

/// A key's exact state, as the harness's `snapshot` reads it, with the
/// deadlines read a `MEMBERS` block at a time: checkpoints read sets of
/// thousands of members on two servers, one round trip per member would
/// dominate the run. A member a scan returns twice (the reference allows
/// it) is kept once.
fn state(c: &mut Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    let mut members = BTreeSet::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, batch): (String, Vec<Vec<u8>>) =
            q(c, c!["XSET.SCAN", key, cursor.as_str(), "COUNT", "1000"]);
        members.extend(batch);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let members: Vec<Vec<u8>> = members.into_iter().collect();
    let mut out = Vec::with_capacity(members.len());
    for chunk in members.chunks(1000) {
        let n = chunk.len().to_string();
        let mut args: Vec<&[u8]> = vec![
            b"XSET.PEXPIRETIME".as_slice(),
            key.as_bytes(),
            b"MEMBERS".as_slice(),
            n.as_bytes(),
        ];
        args.extend(chunk.iter().map(|m| m.as_slice()));
        let times: Vec<i64> = q(c, &args);
        out.extend(chunk.iter().cloned().zip(times));
    }
    out
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

    /// `XSET.ADDEX key [NX|XX] [GT|LT] PXAT [MAXLEN n] [CAP n] [CODES]
    /// MEMBERS n ...`, options in random order.
    /// A `plain` add takes no condition and no cap, so that it surely
    /// grows the set.
    fn addex(&mut self, k: usize, pairs: Vec<(Vec<u8>, u64)>, plain: bool) {
        let key = self.keys[k].clone();
        let presence = match self.rng.below(10) {
            _ if plain => Presence::Any,
            0 | 1 => Presence::Nx,
            2 | 3 => Presence::Xx,
            _ => Presence::Any,
        };
        let compare = match self.rng.below(10) {
            _ if plain || presence == Presence::Nx => Compare::Any,
            0 | 1 => Compare::Gt,
            2 | 3 => Compare::Lt,
            _ => Compare::Any,
        };
        let codes = self.rng.chance(50);
        let before = self.model.get(&key).cloned().unwrap_or_default();
        let mut after = before.clone();
        // A member named twice counts once, its last pair wins; the pairs
        // before it are untouched (code 0).
        let mut reply = vec![0; pairs.len()];
        for (i, (m, d)) in pairs.iter().enumerate() {
            if pairs[i + 1..].iter().any(|(o, _)| o == m) {
                continue;
            }
            reply[i] = add_one(&mut after, m, *d, self.now, presence, compare);
        }
        let added = reply.iter().filter(|&&c| c == 1).count() as i64;
        // CAP refuses an add that would leave more than `cap` live members
        // (counted before any MAXLEN trim).
        let cap = self
            .rng
            .chance(if plain { 0 } else { 8 })
            .then(|| (after.len() as i64 + self.rng.below(5) as i64 - 2).max(1) as usize);
        let refused = cap.is_some_and(|c| after.len() > c);
        let mut max_len = None;
        if !refused && !plain && self.rng.chance(12) && !after.is_empty() {
            let m = (after.len() as i64 - self.rng.below(4) as i64).max(1) as usize;
            if cut_is_exact(&after, after.len().saturating_sub(m)) {
                max_len = Some(m);
                self.note("MAXLEN given");
                if after.len() > m {
                    self.note("MAXLEN trimmed");
                    let k = after.len() - m;
                    take_soonest(&mut after, k);
                }
            }
        }
        let mut options: Vec<Vec<Vec<u8>>> = vec![vec![b"PXAT".to_vec()]];
        match presence {
            Presence::Nx => options.push(vec![b"NX".to_vec()]),
            Presence::Xx => options.push(vec![b"XX".to_vec()]),
            Presence::Any => {}
        }
        match compare {
            Compare::Gt => options.push(vec![b"GT".to_vec()]),
            Compare::Lt => options.push(vec![b"LT".to_vec()]),
            Compare::Any => {}
        }
        if let Some(m) = max_len {
            options.push(vec![b"MAXLEN".to_vec(), m.to_string().into_bytes()]);
        }
        if let Some(c) = cap {
            options.push(vec![b"CAP".to_vec(), c.to_string().into_bytes()]);
        }
        if codes {
            options.push(vec![b"CODES".to_vec()]);
        }
        for i in (1..options.len()).rev() {
            let j = self.rng.index(i + 1);
            options.swap(i, j);
        }
        let mut args = vec![b"XSET.ADDEX".to_vec(), key.clone().into_bytes()];
        args.extend(options.into_iter().flatten());
        args.push(b"MEMBERS".to_vec());
        args.push(pairs.len().to_string().into_bytes());
        for (m, d) in pairs {
            args.push(m);
            args.push(d.to_string().into_bytes());
        }
        let expect = if refused {
            Expect::Nil
        } else if codes {
            Expect::Codes(reply)
        } else {
            Expect::Int(added)
        };
        if !refused {
            self.set_model(&key, after);
        } else {
            self.names.insert(key.clone());
        }
        self.emit(args, expect);
    }

    fn random_addex(&mut self, k: usize) {
        let most = if self.rng.chance(20) { 16 } else { 5 };
        let n = 1 + self.rng.index(most);
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            // Now and then the same member twice in one command.
            let m = if !pairs.is_empty() && self.rng.chance(8) {
                let i = self.rng.index(pairs.len());
                let (m, _): &(Vec<u8>, u64) = &pairs[i];
                m.clone()
            } else {
                self.pick(k)
            };
            let cur = self
                .model
                .get(&self.keys[k])
                .and_then(|s| s.get(&m))
                .copied();
            let d = self.time(cur, false);
            pairs.push((m, d));
        }
        self.addex(k, pairs, false);
    }

    fn rem(&mut self, k: usize, members: Vec<Vec<u8>>) {
        let key = self.keys[k].clone();
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let removed = members.iter().filter(|m| set.remove(*m).is_some()).count();
        let mut args = vec![b"XSET.REM".to_vec(), key.clone().into_bytes()];
        args.extend(members);
        self.set_model(&key, set);
        self.emit(args, Expect::Int(removed as i64));
    }

    /// `XSET.PEXPIREAT` or `XSET.PERSIST` on one member (integer reply) or
    /// a `MEMBERS` block (array of codes), members applied in order.
    fn expire_or_persist(&mut self, k: usize, persist: bool) {
        let key = self.keys[k].clone();
        let n = 1 + self.rng.index(6);
        let members: Vec<Vec<u8>> = (0..n).map(|_| self.pick(k)).collect();
        let block = n > 1 || self.rng.chance(50);
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let mut args;
        let mut codes = Vec::with_capacity(n);
        if persist {
            args = vec![b"XSET.PERSIST".to_vec(), key.clone().into_bytes()];
            for m in &members {
                codes.push(match set.get(m).copied() {
                    None => -2,
                    Some(NONE) => -1,
                    Some(_) => {
                        set.insert(m.clone(), NONE);
                        1
                    }
                });
            }
        } else {
            let cur = set.get(&members[0]).copied();
            let t = self.time(cur, true);
            let cond = ["", "NX", "XX", "GT", "LT"][self.rng.index(5)];
            args = vec![
                b"XSET.PEXPIREAT".to_vec(),
                key.clone().into_bytes(),
                t.to_string().into_bytes(),
            ];
            if !cond.is_empty() {
                args.push(cond.as_bytes().to_vec());
            }
            for m in &members {
                codes.push(match set.get(m).copied() {
                    None => -2,
                    Some(cur) => {
                        let allowed = match cond {
                            "NX" => cur == NONE,
                            "XX" => cur != NONE,
                            "GT" => t > cur,
                            "LT" => t < cur,
                            _ => true,
                        };
                        if !allowed {
                            0
                        } else if t <= self.now {
                            set.remove(m);
                            2
                        } else {
                            set.insert(m.clone(), t);
                            1
                        }
                    }
                });
            }
        }
        if block {
            args.push(b"MEMBERS".to_vec());
            args.push(n.to_string().into_bytes());
        }
        args.extend(members);
        self.set_model(&key, set);
        let expect = if block {
            Expect::Codes(codes)
        } else {
            Expect::Int(codes[0])
        };
        self.emit(args, expect);
    }

    /// `XSET.POP key count SOONEST`, with a count whose cut is exact (else
    /// nothing is sent).
    fn pop(&mut self, k: usize, count: usize) {
        let key = self.keys[k].clone();
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let mut count = count.max(1);
        while count > 1 && !cut_is_exact(&set, count) {
            count -= 1;
        }
        if !cut_is_exact(&set, count) {
            return;
        }
        let popped = take_soonest(&mut set, count);
        self.set_model(&key, set);
        self.emit(
            vec![
                b"XSET.POP".to_vec(),
                key.into_bytes(),
                count.to_string().into_bytes(),
                b"SOONEST".to_vec(),
            ],
            Expect::Popped(popped),
        );
    }

    /// `XSET.POP key [count [SOONEST]]` where the reply decides the model:
    /// a random pop, or a soonest-first pop whose cut falls among equal
    /// deadlines. Sent alone (after the pending batch), the reply checked
    /// to be one of the outcomes the reference allows, then the members it
    /// names leave the model. Which members that is varies from run to run
    /// (a large set's hash is keyed at random), so these pops come last in
    /// a seed, where no later choice of the generator depends on them.
    fn pop_checked(&mut self, k: usize) {
        self.flush();
        self.step += 1;
        let key = self.keys[k].clone();
        let mut set = self.model.get(&key).cloned().unwrap_or_default();
        let form = self.rng.below(3);
        let count = 1 + self.rng.index(8);
        let mut args = vec![b"XSET.POP".to_vec(), key.clone().into_bytes()];
        if form > 0 {
            args.push(count.to_string().into_bytes());
        }
        if form == 2 {
            args.push(b"SOONEST".to_vec());
        }
        let at = format!(
            "seed {:#x} step {}: `{}`",
            self.seed,
            self.step,
            show_cmd(&args)
        );
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let reply: Value = q(self.pc, &refs);
        let popped: Vec<Vec<u8>> = match (form, reply) {
            (0, Value::Nil) if set.is_empty() => Vec::new(),
            (0, Value::BulkString(m)) => vec![m],
            (_, Value::Array(items)) if form > 0 => items
                .into_iter()
                .map(|v| match v {
                    Value::BulkString(m) => m,
                    v => panic!("{at} replied {v:?} among its members"),
                })
                .collect(),
            (_, v) => panic!("{at} replied {v:?} for a set of {} members", set.len()),
        };
        let want = if form == 0 { 1 } else { count };
        assert_eq!(
            popped.len(),
            want.min(set.len()),
            "{at}: popped {} of {} members",
            popped.len(),
            set.len()
        );
        let order = sorted_by_deadline(&set);
        let soonest: Vec<u64> = order.iter().take(popped.len()).map(|&(_, d)| d).collect();
        let mut deadlines = Vec::with_capacity(popped.len());
        for m in &popped {
            let d = set.remove(m).unwrap_or_else(|| {
                panic!(
                    "{at} popped '{}', not a member (or popped twice)",
                    show_bytes(m)
                )
            });
            deadlines.push(d);
        }
        if form == 2 {
            assert_eq!(
                deadlines, soonest,
                "{at}: SOONEST popped these deadlines, not the soonest ones in order"
            );
        }
        self.note(format!("xset.pop checked, form {form}"));
        self.set_model(&key, set);
    }

    /// `XSET.UNIONSTORE|INTERSTORE|DIFFSTORE dst n key ...`: union keeps a
    /// member's latest deadline, intersection its earliest, difference the
    /// first key's (no deadline is the latest of all).
    fn store(&mut self) {
        let i = self.key_op();
        let dst = self.keys[i].clone();
        let n = 1 + self.rng.index(3);
        let srcs: Vec<String> = (0..n)
            .map(|_| {
                let i = self.key_op();
                self.keys[i].clone()
            })
            .collect();
        let sets: Vec<Set> = srcs
            .iter()
            .map(|s| self.model.get(s).cloned().unwrap_or_default())
            .collect();
        let which = self.rng.index(3);
        let mut out = Set::new();
        match which {
            0 => {
                for s in &sets {
                    for (m, &d) in s {
                        let e = out.entry(m.clone()).or_insert(d);
                        *e = (*e).max(d);
                    }
                }
            }
            1 => {
                for (m, &d) in &sets[0] {
                    let mut earliest = d;
                    if sets[1..].iter().all(|s| {
                        s.get(m).is_some_and(|&o| {
                            earliest = earliest.min(o);
                            true
                        })
                    }) {
                        out.insert(m.clone(), earliest);
                    }
                }
            }
            _ => {
                for (m, &d) in &sets[0] {
                    if sets[1..].iter().all(|s| !s.contains_key(m)) {
                        out.insert(m.clone(), d);
                    }
                }
            }
        }
        let name = ["XSET.UNIONSTORE", "XSET.INTERSTORE", "XSET.DIFFSTORE"][which];
        let mut args = vec![
            name.as_bytes().to_vec(),
            dst.clone().into_bytes(),
            n.to_string().into_bytes(),
        ];
        args.extend(srcs.into_iter().map(String::into_bytes));
        let len = out.len() as i64;
        self.set_model(&dst, out);
        self.emit(args, Expect::Int(len));
    }

    fn random_op(&mut self) {
        let k = self.key_op();
        let key = self.keys[k].clone();
        match self.rng.below(100) {
            0..=39 => self.random_addex(k),
            40..=54 => {
                let n = 1 + self.rng.index(5);
                let members = (0..n).map(|_| self.pick(k)).collect();
                self.rem(k, members);
            }
            55..=69 => self.expire_or_persist(k, false),
            70..=79 => self.expire_or_persist(k, true),
            80..=84 => {
                let count = 1 + self.rng.index(6);
                self.pop(k, count);
            }
            85..=88 => self.store(),
            91..=92 => {
                let existed = self.model.contains_key(&key);
                self.set_model(&key, Set::new());
                self.emit(
                    vec![b"DEL".to_vec(), key.into_bytes()],
                    Expect::Int(existed as i64),
                );
            }
            89 => {
                let i = self.key_op();
                let dst = self.keys[i].clone();
                let replace = self.rng.chance(50);
                if dst != key {
                    let copied = match self.model.get(&key).cloned() {
                        Some(set) if replace || !self.model.contains_key(&dst) => {
                            self.set_model(&dst, set);
                            1
                        }
                        _ => 0,
                    };
                    let mut args = vec![b"COPY".to_vec(), key.into_bytes(), dst.into_bytes()];
                    if replace {
                        args.push(b"REPLACE".to_vec());
                    }
                    self.emit(args, Expect::Int(copied));
                }
            }
            90 => {
                let i = self.key_op();
                let dst = self.keys[i].clone();
                if dst != key && self.model.contains_key(&key) {
                    let set = self.model.remove(&key).expect("source");
                    self.set_model(&dst, set);
                    self.emit(
                        vec![b"RENAME".to_vec(), key.into_bytes(), dst.into_bytes()],
                        Expect::Okay,
                    );
                }
            }
            _ => {
                let len = self.model.get(&key).map_or(0, |s| s.len());
                self.emit(
                    vec![b"XSET.CARD".to_vec(), key.into_bytes()],
                    Expect::Int(len as i64),
                );
            }
        }
    }

    /// Grows key `k` by `extra` new members, a hundred per add.
    fn grow(&mut self, k: usize, extra: usize) {
        let mut left = extra;
        while left > 0 {
            let n = left.min(100);
            let pairs = (0..n)
                .map(|_| {
                    let mut m = self.member();
                    // Longer members make a collision with an existing one
                    // rare, so the set really grows.
                    m.extend_from_slice(&self.rng.next().to_le_bytes()[..4]);
                    m.truncate(24);
                    let d = if self.rng.chance(10) {
                        self.now + HOUR + 60_000 * self.rng.below(60)
                    } else {
                        self.now + HOUR + self.rng.below(HOUR)
                    };
                    (m, d)
                })
                .collect();
            self.addex(k, pairs, true);
            left -= n;
        }
    }

    /// Shrinks key `k` to about `keep` members: mostly `XSET.REM` of a
    /// hundred at a time, with past-time `XSET.PEXPIREAT` blocks and
    /// `XSET.POP` mixed in.
    fn shrink(&mut self, k: usize, keep: usize) {
        let key = self.keys[k].clone();
        loop {
            let len = self.model.get(&key).map_or(0, |s| s.len());
            if len <= keep {
                break;
            }
            let n = (len - keep).min(100);
            let members: Vec<Vec<u8>> = {
                let set = &self.model[&key];
                let all: Vec<&Vec<u8>> = set.keys().collect();
                let start = self.rng.index(all.len());
                (0..n)
                    .map(|i| all[(start + i) % all.len()].clone())
                    .collect()
            };
            match self.rng.below(10) {
                0 => self.pop(k, n),
                1 => {
                    let mut set = self.model[&key].clone();
                    let mut args = vec![
                        b"XSET.PEXPIREAT".to_vec(),
                        key.clone().into_bytes(),
                        (self.now - 1).to_string().into_bytes(),
                        b"MEMBERS".to_vec(),
                        members.len().to_string().into_bytes(),
                    ];
                    let codes = members
                        .iter()
                        .map(|m| if set.remove(m).is_some() { 2 } else { -2 })
                        .collect();
                    args.extend(members);
                    self.set_model(&key, set);
                    self.emit(args, Expect::Codes(codes));
                }
                _ => self.rem(k, members),
            }
            // A few random writes in between, while the set is large.
            for _ in 0..3 {
                self.random_op();
            }
        }
    }

    /// Checks the primary against the model, then the replica against the
    /// primary.
    fn checkpoint(&mut self, what: &str) {
        self.flush();
        let at = format!("seed {:#x} after step {} ({what})", self.seed, self.step);
        let names: Vec<String> = self.names.iter().cloned().collect();
        let mut primary = Vec::with_capacity(names.len());
        for key in &names {
            let want = as_snapshot(self.model.get(key));
            let got = state(self.pc, key);
            assert!(
                got == want,
                "{at}: the primary's {key} differs from the model: {}",
                diff(&want, &got)
            );
            let exists: i64 = q(self.pc, c!["EXISTS", key]);
            let kind: String = q(self.pc, c!["TYPE", key]);
            let expected = if self.model.contains_key(key) {
                (1, "xset-type")
            } else {
                (0, "none")
            };
            assert_eq!(
                (exists, kind.as_str()),
                expected,
                "{at}: EXISTS and TYPE of {key} on the primary (an emptied set must not exist)"
            );
            // The one exactly documented order: by deadline, no deadline
            // last, equal deadlines in byte order.
            let order: Vec<Vec<u8>> = self
                .model
                .get(key)
                .map(|s| {
                    sorted_by_deadline(s)
                        .into_iter()
                        .map(|(m, _)| m.clone())
                        .collect()
                })
                .unwrap_or_default();
            let listed: Vec<Vec<u8>> = q(self.pc, c!["XSET.MEMBERS", key]);
            assert!(
                listed == order,
                "{at}: XSET.MEMBERS {key} on the primary is not in (deadline, bytes) order"
            );
            primary.push(got);
        }
        wait_replicated(self.pc);
        for (key, theirs) in names.iter().zip(&primary) {
            let got = state(self.rc, key);
            assert!(
                got == *theirs,
                "{at}: the replica's {key} differs from the primary's: {}",
                diff(theirs, &got)
            );
            let listed: Vec<Vec<u8>> = q(self.rc, c!["XSET.MEMBERS", key]);
            let mut order = theirs.clone();
            order.sort_by_key(|(m, d)| (*d as u64, m.clone()));
            assert!(
                listed.iter().eq(order.iter().map(|(m, _)| m)),
                "{at}: XSET.MEMBERS {key} on the replica is not in (deadline, bytes) order"
            );
            let exists: i64 = q(self.rc, c!["EXISTS", key]);
            assert_eq!(
                exists,
                self.model.contains_key(key) as i64,
                "{at}: EXISTS {key} on the replica"
            );
        }
        let digest = |c: &mut Connection| q::<String>(c, c!["DEBUG", "DIGEST"]);
        assert_eq!(
            digest(self.rc),
            digest(self.pc),
            "{at}: DEBUG DIGEST of the replica and the primary"
        );
    }

    /// `DEBUG RELOAD` and `DEBUG LOADAOF` keep every key as it was, and
    /// `DUMP` + `RESTORE` of each key into a new name gives the same set (on
    /// the replica too).
    fn reload_and_restore(&mut self) {
        self.flush();
        let at = format!("seed {:#x} at the end", self.seed);
        let names: Vec<String> = self.model.keys().cloned().collect();
        let before: Vec<_> = names.iter().map(|k| snapshot(self.pc, k)).collect();
        let digest_before: String = q(self.pc, c!["DEBUG", "DIGEST"]);
        // LOADAOF twice: the AOF rewritten mid-seed plus the commands
        // appended since, then an AOF rewritten from the final state.
        for how in ["RELOAD", "LOADAOF", "BGREWRITEAOF, LOADAOF"] {
            if how.starts_with("BGREWRITEAOF") {
                let _: Value = q(self.pc, c!["BGREWRITEAOF"]);
                wait_rewrite_done(self.pc);
            }
            let debug = how.rsplit(' ').next().expect("word");
            assert_eq!(q::<String>(self.pc, c!["DEBUG", debug]), "OK");
            for (key, was) in names.iter().zip(&before) {
                let now = snapshot(self.pc, key);
                assert!(
                    now == *was,
                    "{at}: {key} changed across DEBUG {how}: {}",
                    diff(was, &now)
                );
            }
            assert_eq!(
                q::<String>(self.pc, c!["DEBUG", "DIGEST"]),
                digest_before,
                "{at}: DEBUG DIGEST across DEBUG {how}"
            );
        }
        for (key, was) in names.iter().zip(&before) {
            let dump: Vec<u8> = q(self.pc, c!["DUMP", key]);
            let copy = format!("{key}:restored");
            let _: Value = q(self.pc, c!["RESTORE", copy, "0", dump]);
            let got = snapshot(self.pc, &copy);
            assert!(
                got == *was,
                "{at}: RESTORE of DUMP {key} differs: {}",
                diff(was, &got)
            );
            let set = self.model[key].clone();
            self.set_model(&copy, set);
        }
        self.checkpoint("after DEBUG RELOAD and DUMP/RESTORE");
    }
}

fn run_seed(seed: u64, pc: &mut Connection, rc: &mut Connection) {
    let mut rng = Rng(seed);
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
