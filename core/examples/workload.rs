//! One fixed workload on the core, for instruction counts under callgrind:
//! six phases in a row on one set, each in a function of its own, so that
//! callgrind's inclusive cost of that function is the phase's alone.
//!
//! ```text
//! cargo build --release -p xset-core --example workload
//! valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/examples/workload
//! callgrind_annotate --inclusive=yes cg.out | grep workload::phase_
//! ```
//!
//! The members are 1M of 16 random bytes. `new`: each added with a random
//! TTL of up to a day, into an empty set. `refresh-end`: 1M adds of stored
//! members (at random) to the same TTL from a clock that moves on, the
//! usual refresh. `refresh-random`: 1M adds of stored members to random
//! deadlines. `contains`: 1M lookups of stored members. `drain`: every
//! member drained as due, 1,000 a call. `small`: 10,000 sets of 30 members
//! (300k new adds, then 300k refreshes to the end), each set in the small
//! encoding. Each phase prints its wall time, its time on a processor,
//! and the set's heap bytes per member after it. `workload drain` (any
//! phase's name) runs that phase alone after `new`.

use std::hint::black_box;
use std::time::Instant;
use xset_core::SplitMix64;
use xset_core::{Compare, Presence, XSet};

const N: usize = 1_000_000;
const BASE_MS: u64 = 1_800_000_000_000;
const DAY_MS: u64 = 86_400_000;
/// Sets of 30 members in the `small` phase.
const SMALL_SETS: usize = 10_000;

/// A deterministic pseudo-random sequence.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn member(&mut self) -> [u8; 16] {
        let mut m = [0; 16];
        m[..8].copy_from_slice(&self.next().to_le_bytes());
        m[8..].copy_from_slice(&self.next().to_le_bytes());
        m
    }

    fn deadline(&mut self) -> u64 {
        BASE_MS + 1 + self.next() % DAY_MS
    }

    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

fn add(set: &mut XSet, m: &[u8], d: u64) {
    black_box(set.add(m, d, Presence::Any, Compare::Any, BASE_MS));
}

#[inline(never)]
fn phase_new(set: &mut XSet, members: &[[u8; 16]], rng: &mut Rng) {
    for m in members {
        add(set, m, rng.deadline());
    }
}

#[inline(never)]
fn phase_refresh_end(set: &mut XSet, members: &[[u8; 16]], rng: &mut Rng) {
    for k in 0..N as u64 {
        let m = &members[rng.below(N)];
        add(set, m, BASE_MS + DAY_MS + 1 + k / 16);
    }
}

#[inline(never)]
fn phase_refresh_random(set: &mut XSet, members: &[[u8; 16]], rng: &mut Rng) {
    for _ in 0..N {
        let m = &members[rng.below(N)];
        add(set, m, rng.deadline());
    }
}

#[inline(never)]
fn phase_contains(set: &mut XSet, members: &[[u8; 16]], rng: &mut Rng) {
    for _ in 0..N {
        let m = &members[rng.below(N)];
        black_box(set.contains(m, BASE_MS));
    }
}

#[inline(never)]
fn phase_drain(set: &mut XSet, _: &[[u8; 16]], _: &mut Rng) {
    while !set.is_empty() {
        black_box(set.drain_expired(u64::MAX - 1, 1000));
    }
}

#[inline(never)]
fn phase_small(_: &mut XSet, members: &[[u8; 16]], rng: &mut Rng) {
    let mut sets = vec![XSet::new(); SMALL_SETS];
    for (i, m) in members[..SMALL_SETS * 30].iter().enumerate() {
        add(&mut sets[i % SMALL_SETS], m, rng.deadline());
    }
    for k in 0..SMALL_SETS as u64 * 30 {
        let i = rng.below(SMALL_SETS * 30);
        let d = BASE_MS + DAY_MS + 1 + k / 16;
        add(&mut sets[i % SMALL_SETS], &members[i], d);
    }
    let bytes: usize = sets.iter().map(XSet::heap_bytes).sum();
    eprintln!(
        "small: heap bytes/member {:.1}",
        bytes as f64 / (SMALL_SETS * 30) as f64
    );
}

/// Nanoseconds this thread has run on a processor (Linux's schedstat; 0
/// elsewhere): unlike wall time, not counting time others held the cores.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

type Phase = fn(&mut XSet, &[[u8; 16]], &mut Rng);

fn main() {
    let phases: [(&str, Phase); 6] = [
        ("new", phase_new),
        ("refresh-end", phase_refresh_end),
        ("refresh-random", phase_refresh_random),
        ("contains", phase_contains),
        ("drain", phase_drain),
        ("small", phase_small),
    ];
    let only = std::env::args().nth(1);
    let mut rng = Rng(SplitMix64(7));
    let members: Vec<[u8; 16]> = (0..N).map(|_| rng.member()).collect();
    let mut set = XSet::new();
    for (name, run) in phases {
        // A phase named on the command line runs alone after the fill, so
        // that it can be timed over and over.
        if only.as_deref().is_some_and(|o| o != name && name != "new") {
            continue;
        }
        let (start, cpu) = (Instant::now(), cpu_ns());
        run(&mut set, &members, &mut rng);
        let (elapsed, cpu) = (start.elapsed(), cpu_ns() - cpu);
        if only.as_deref().is_none_or(|o| o == name) {
            eprintln!(
                "{name}: {:.1} ms; on cpu {:.1} ms; heap bytes/member after {:.1}",
                elapsed.as_secs_f64() * 1e3,
                cpu as f64 / 1e6,
                set.heap_bytes() as f64 / set.len().max(1) as f64
            );
        }
    }
}
