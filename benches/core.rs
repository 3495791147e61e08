//! Micro-benchmarks of the pure core, outside Redis: the operations behind
//! XSET.ADD (new member and deadline refresh), XSET.HAS and active expiry,
//! for a small (30) and a large (1M) set of 16-byte members.
//!
//! Run with `cargo bench --features system-alloc`.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use xset::xset::{Compare, Presence, XSet};

const BASE_MS: u64 = 1_800_000_000_000;

fn member(i: u64) -> [u8; 16] {
    let mut m = *b"member:000000000";
    let digits = format!("{i:09}");
    m[7..].copy_from_slice(digits.as_bytes());
    m
}

fn filled(n: u64) -> XSet {
    let mut s = XSet::new();
    for i in 0..n {
        s.add(&member(i), BASE_MS + i, Presence::Any, Compare::Any, 0);
    }
    s
}

fn bench(c: &mut Criterion) {
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
