//! Micro-benchmarks of the pure core, outside Redis: the operations behind
//! XSET.ADD (new member and deadline refresh), XSET.HAS and active expiry,
//! for a small (30) and a large (1M) set of 16-byte members; adds with
//! random TTLs at 1M and 10M members (what an add costs as the deadline
//! index grows); and heap bytes per member, printed before the timings.
//!
//! Run with `cargo bench -p xset-core`; `XSET_BENCH_10M=0`
//! skips the 10M case (it takes about 2 GB and a minute to fill).

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use xset_core::SplitMix64;
use xset_core::{Compare, Presence, XSet};

const BASE_MS: u64 = 1_800_000_000_000;

fn member(mut i: u64) -> [u8; 16] {
    let mut m = *b"member:000000000";
    for d in m[7..].iter_mut().rev() {
        *d = b'0' + (i % 10) as u8;
        i /= 10;
    }
    m
}

fn filled(n: u64) -> XSet {
    let mut s = XSet::new();
    for i in 0..n {
        s.add(&member(i), BASE_MS + i, Presence::Any, Compare::Any, 0);
    }
    s
}

/// A deterministic pseudo-random sequence.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A deadline up to a day after `BASE_MS`: random TTLs.
    fn deadline(&mut self) -> u64 {
        BASE_MS + 1 + self.next() % 86_400_000
    }
}

/// `n` members, each with a random TTL of up to a day, added in that order.
fn filled_random(n: u64, rng: &mut Rng) -> XSet {
    let mut s = XSet::new();
    for i in 0..n {
        s.add(&member(i), rng.deadline(), Presence::Any, Compare::Any, 0);
    }
    s
}

/// Heap bytes per member as the set counts them (`XSet::heap_bytes`, which
/// rounds to jemalloc's size classes, what Redis's `used_memory` sees).
fn print_memory() {
    let per = |s: &XSet| s.heap_bytes() as f64 / s.len() as f64;
    let mut small = 0.0;
    for k in 0..100 {
        let mut s = XSet::new();
        for i in 0..30 {
            s.add(
                &member(i),
                BASE_MS + k * 30 + i,
                Presence::Any,
                Compare::Any,
                0,
            );
        }
        small += per(&s) / 100.0;
    }
    let in_order = filled(1_000_000);
    let random = filled_random(1_000_000, &mut Rng(SplitMix64(7)));
    eprintln!(
        "heap bytes/member (16-byte members): 30 in order {small:.1}, 1M in order {:.1}, \
         1M random TTLs {:.1}",
        per(&in_order),
        per(&random)
    );
}

fn bench(c: &mut Criterion) {
    print_memory();
    // Member names made up front, so the loops time the set alone.
    let names: Vec<[u8; 16]> = (0..1_000_000 + 1002).map(member).collect();
    for n in [30u64, 1_000_000] {
        let set = filled(n);
        let mut group = c.benchmark_group(format!("{n} members"));
        let mut i = 0u64;
        group.bench_function("contains", |b| {
            b.iter(|| {
                i = (i + 7919) % n;
                black_box(set.contains(&names[i as usize], BASE_MS))
            })
        });
        let mut refreshed = set.clone();
        let mut tick = 0u64;
        group.bench_function("add (refresh deadline)", |b| {
            b.iter(|| {
                i = (i + 7919) % n;
                tick += 1;
                refreshed.add(
                    &names[i as usize],
                    BASE_MS + n + tick,
                    Presence::Any,
                    Compare::Any,
                    0,
                )
            })
        });
        group.bench_function("add (new member) + remove", |b| {
            b.iter(|| {
                tick += 1;
                let m = names[(n + 1 + tick % 1000) as usize];
                refreshed.add(&m, BASE_MS + tick, Presence::Any, Compare::Any, 0);
                refreshed.remove(&m)
            })
        });
        group.finish();
    }
    let big = std::env::var("XSET_BENCH_10M").map_or(true, |v| v != "0");
    let sizes: &[u64] = if big {
        &[1_000_000, 10_000_000]
    } else {
        &[1_000_000]
    };
    for &n in sizes {
        // Random TTLs: refreshes and new members land anywhere in the
        // deadline index, so leaves split and merge all over it.
        let mut rng = Rng(SplitMix64(n));
        let mut set = filled_random(n, &mut rng);
        let mut group = c.benchmark_group(format!("{n} members, random TTLs"));
        group.sample_size(10);
        // Growth: 100k new members into a copy of the set (the copy is made
        // outside the timing), so leaves split all over the index.
        const BATCH: u64 = 100_000;
        let fresh: Vec<([u8; 16], u64)> = (0..BATCH)
            .map(|k| (member(n + k), rng.deadline()))
            .collect();
        group.throughput(Throughput::Elements(BATCH));
        group.bench_function("add 100k new members", |b| {
            b.iter_batched(
                || set.clone(),
                |mut s| {
                    for (m, d) in &fresh {
                        s.add(m, *d, Presence::Any, Compare::Any, 0);
                    }
                    s
                },
                BatchSize::PerIteration,
            )
        });
        group.throughput(Throughput::Elements(1));
        group.bench_function("add (refresh to a random deadline)", |b| {
            b.iter(|| {
                let i = rng.next() % n;
                let d = rng.deadline();
                set.add(&member(i), d, Presence::Any, Compare::Any, 0)
            })
        });
        group.finish();
    }
    let mut group = c.benchmark_group("expiry");
    group.sample_size(10);
    group.bench_function("drain 100k due members of a 100k set", |b| {
        b.iter_batched(
            || filled(100_000),
            |mut s| black_box(s.drain_expired(u64::MAX - 1, usize::MAX).0.len()),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
