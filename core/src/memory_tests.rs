//! Memory follows the live set: a large set emptied down to a few members
//! (by expiry, removals and pops) and refilled, against a `HashMap` model,
//! with cursor scans interleaved, every step followed by an invariant
//! check; and, run by hand in release mode, the heap bytes a member takes
//! after a mass expiry against a fresh set of the survivors, and how long
//! the drains take:
//! `cargo test --release --lib -- --ignored --nocapture memory_after`
//! (`ONLY=1000000-0.99` runs one case: members, then the share expired).

use super::*;
use crate::SplitMix64;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// A deterministic pseudo-random sequence.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// Member `id`: mostly short (inline in the slab), one in seven longer
/// than an entry holds inline.
fn member(id: u64) -> Vec<u8> {
    if id.is_multiple_of(7) {
        format!("a-member-too-long-to-inline-{id}").into_bytes()
    } else {
        format!("m{id}").into_bytes()
    }
}

/// Large from the first member on.
fn large() -> XSet {
    XSet::with_limits(Limits {
        max_small_members: 0,
        max_small_member_bytes: 0,
    })
}

#[derive(Clone, Debug)]
enum Op {
    /// New members, with deadlines up to `spread` ms ahead (some far, or
    /// none).
    Fill(u16, u64),
    /// Removes this many percent of the stored members, at random.
    Remove(u8),
    /// Time moves by this much, then a drain of at most this many.
    Drain(u64, u16),
    /// New deadlines for this many stored members.
    Refresh(u16, u64),
    /// Pops this many soonest members (a cap).
    PopSoonest(u16),
    /// One call of the scan under way, examining this many.
    Scan(u8),
    /// Time moves.
    Tick(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u16..400, 1u64..5_000).prop_map(|(n, s)| Op::Fill(n, s)),
        2 => (1u8..=100).prop_map(Op::Remove),
        3 => (0u64..3_000, 1u16..2_000).prop_map(|(t, n)| Op::Drain(t, n)),
        1 => (1u16..200, 1u64..5_000).prop_map(|(n, s)| Op::Refresh(n, s)),
        1 => (1u16..300).prop_map(Op::PopSoonest),
        4 => (1u8..40).prop_map(Op::Scan),
        1 => (0u64..2_000).prop_map(Op::Tick),
    ]
}

/// A deadline for a member added or refreshed at `now`.
fn deadline(rng: &mut Rng, now: u64, spread: u64) -> u64 {
    match rng.below(40) {
        0 => NO_DEADLINE,
        1 => MAX_DEADLINE_MS - rng.below(3) as u64,
        _ => now + 1 + rng.next() % spread,
    }
}

/// A scan under way: the members live and stored at every step since it
/// began (a refresh keeps a member), and those it returned.
struct Scanning {
    cursor: u64,
    steady: HashSet<Vec<u8>>,
    seen: HashSet<Vec<u8>>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn emptied_and_refilled_large_sets_match_a_model_and_scans_miss_nothing(
        ops in prop::collection::vec(op(), 1..60),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(SplitMix64(seed));
        let mut s = large();
        let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut now = 1_000u64;
        let mut next_id = 0u64;
        let mut scan: Option<Scanning> = None;
        for op in ops {
            // Members that leave the set (or are live no more) drop out of
            // the scan's steady ones.
            let mut left: Vec<Vec<u8>> = Vec::new();
            match op {
                Op::Fill(n, spread) => {
                    for _ in 0..n {
                        let m = member(next_id);
                        next_id += 1;
                        let d = deadline(&mut rng, now, spread);
                        prop_assert_eq!(s.add(&m, d, Presence::Any, Compare::Any, now), AddOutcome::Added);
                        model.insert(m, d);
                    }
                }
                Op::Remove(pct) => {
                    let mut stored: Vec<Vec<u8>> = model.keys().cloned().collect();
                    stored.sort();
                    for m in stored {
                        if rng.below(100) < usize::from(pct) {
                            prop_assert_eq!(s.remove(&m), model.remove(&m));
                            left.push(m);
                        }
                    }
                }
                Op::Drain(dt, limit) => {
                    now += dt;
                    let (gone, next) = s.drain_expired(now, usize::from(limit));
                    let mut due: Vec<(u64, Vec<u8>)> = model.iter()
                        .filter(|&(_, &d)| d <= now).map(|(m, &d)| (d, m.clone())).collect();
                    due.sort();
                    prop_assert_eq!(gone.len(), due.len().min(usize::from(limit)));
                    for g in gone {
                        prop_assert!(model.remove(&*g).is_some_and(|d| d <= now));
                        left.push(g.to_vec());
                    }
                    let want = model.values().copied().filter(|&d| d != NO_DEADLINE).min();
                    prop_assert_eq!(next, want);
                }
                Op::Refresh(n, spread) => {
                    let mut stored: Vec<Vec<u8>> = model.keys().cloned().collect();
                    stored.sort();
                    for _ in 0..n.min(stored.len() as u16) {
                        let m = &stored[rng.below(stored.len())];
                        let d = deadline(&mut rng, now, spread);
                        s.add(m, d, Presence::Any, Compare::Any, now);
                        model.insert(m.clone(), d);
                    }
                }
                Op::PopSoonest(n) => {
                    let mut order: Vec<(u64, Vec<u8>)> =
                        model.iter().map(|(m, &d)| (d, m.clone())).collect();
                    order.sort();
                    let popped = s.pop_soonest(usize::from(n));
                    prop_assert_eq!(popped.len(), order.len().min(usize::from(n)));
                    for (p, (d, _)) in popped.iter().zip(&order) {
                        // Equal deadlines pop in any order.
                        prop_assert_eq!(model.remove(&**p), Some(*d));
                        left.push(p.to_vec());
                    }
                }
                Op::Scan(count) => {
                    let scanning = scan.get_or_insert_with(|| Scanning {
                        cursor: 0,
                        steady: model.iter().filter(|&(_, &d)| d > now).map(|(m, _)| m.clone()).collect(),
                        seen: HashSet::new(),
                    });
                    let (next, batch) = s.scan(scanning.cursor, usize::from(count), now);
                    for (m, d) in batch {
                        prop_assert!(d > now && model.get(m) == Some(&d), "a live member");
                        scanning.seen.insert(m.to_vec());
                    }
                    scanning.cursor = next;
                    if next == 0 {
                        for m in &scanning.steady {
                            prop_assert!(scanning.seen.contains(m), "{:?} missed", String::from_utf8_lossy(m));
                        }
                        scan = None;
                    }
                }
                Op::Tick(dt) => now += dt,
            }
            s.check_invariants();
            if let Some(scanning) = &mut scan {
                for m in left {
                    scanning.steady.remove(&m);
                }
                scanning.steady.retain(|m| model.get(m).is_some_and(|&d| d > now));
            }
            prop_assert_eq!(s.len(), model.len());
            prop_assert_eq!(s.live_len(now), model.values().filter(|&&d| d > now).count());
            for m in model.keys().take(50) {
                prop_assert_eq!(s.deadline_of(m), model.get(m).copied());
            }
        }
        let mut got: Vec<(Vec<u8>, u64)> = s.iter_all().map(|(m, d)| (m.to_vec(), d)).collect();
        got.sort();
        let mut want: Vec<(Vec<u8>, u64)> = model.into_iter().collect();
        want.sort();
        prop_assert_eq!(got, want);
    }
}

/// A large set of `n` members with random deadlines over a day, added in
/// random order.
fn filled(n: u64, rng: &mut Rng) -> (XSet, Vec<(Vec<u8>, u64)>) {
    let mut s = large();
    let mut items = Vec::with_capacity(n as usize);
    for id in 0..n {
        let m = format!("member:{id:09}").into_bytes();
        let d = 1_000_000 + rng.next() % 86_400_000;
        s.add(&m, d, Presence::Any, Compare::Any, 0);
        items.push((m, d));
    }
    (s, items)
}

/// The deadline below which `fraction` of `items` lie.
fn quantile(items: &[(Vec<u8>, u64)], fraction: f64) -> u64 {
    let mut deadlines: Vec<u64> = items.iter().map(|&(_, d)| d).collect();
    deadlines.sort_unstable();
    deadlines[((deadlines.len() as f64 * fraction) as usize).min(deadlines.len() - 1)]
}

/// Two fresh sets of the members `s` holds: added one by one in the order
/// given (as clients would), and loaded in deadline order (as an RDB load
/// does); their heap bytes.
fn fresh_bytes(s: &XSet, order: &[(Vec<u8>, u64)]) -> (usize, usize) {
    let mut added = large();
    for (m, d) in order {
        if s.deadline_of(m) == Some(*d) {
            added.add(m, *d, Presence::Any, Compare::Any, 0);
        }
    }
    let mut loaded = large();
    loaded.reserve(s.len());
    for (m, d) in s.iter_all() {
        loaded.insert_absent(m, d);
    }
    assert_eq!((added.len(), loaded.len()), (s.len(), s.len()));
    (added.heap_bytes(), loaded.heap_bytes())
}

#[test]
fn a_set_expired_to_a_few_members_holds_about_what_a_fresh_one_does() {
    for (n, kept) in [(20_000, 0.30), (20_000, 0.01), (3_000, 0.05)] {
        let mut rng = Rng(SplitMix64(n));
        let (mut s, items) = filled(n, &mut rng);
        let now = quantile(&items, 1.0 - kept);
        // In slices, as active expiry drains it.
        while !s.drain_expired(now, 500).0.is_empty() {}
        s.check_invariants();
        let (added, loaded) = fresh_bytes(&s, &items);
        let bytes = s.heap_bytes();
        let bound = if kept > 0.1 { 1.3 } else { 2.0 };
        assert!(
            (bytes as f64) <= bound * loaded as f64 && bytes as f64 <= bound * added as f64,
            "{n} members down to {}: {bytes} bytes, fresh {added} added, {loaded} loaded",
            s.len()
        );
    }
}

#[test]
fn removals_refills_and_pops_keep_the_slab_compact() {
    let mut rng = Rng(SplitMix64(5));
    let (mut s, items) = filled(10_000, &mut rng);
    // Removals at random down to 2%, then a refill, then pops.
    for (m, _) in &items {
        if rng.below(50) != 0 {
            s.remove(m);
        }
    }
    s.check_invariants();
    let (added, _) = fresh_bytes(&s, &items);
    assert!(
        s.heap_bytes() <= 2 * added,
        "{} against {added}",
        s.heap_bytes()
    );
    for id in 0..5_000u64 {
        let m = format!("refill:{id}");
        s.add(m.as_bytes(), 1_000 + id, Presence::Any, Compare::Any, 0);
    }
    s.check_invariants();
    assert_eq!(s.pop_soonest(5_000).len(), 5_000);
    s.check_invariants();
    let Repr::Large(l) = &s.repr else {
        panic!("still large")
    };
    assert!(
        l.slab_len() <= s.len() + s.len() / 16 + 64,
        "{} slots for {}",
        l.slab_len(),
        s.len()
    );
}

#[test]
fn a_share_due_at_one_deadline_leaves_the_survivors_compact() {
    // As the end-to-end benchmark's churn section loads a key: random
    // members, a random 70% due at one deadline (so a drain pops them in
    // slot order), the rest an hour on.
    let mut rng = Rng(SplitMix64(3));
    let mut flags: Vec<bool> = (0..10_000).map(|i| i < 7_000).collect();
    for i in (1..flags.len()).rev() {
        flags.swap(i, rng.below(i + 1));
    }
    let mut s = large();
    let mut items = Vec::new();
    for short in flags {
        let m = format!("{:016x}", rng.next()).into_bytes();
        let d = if short { 5_000 } else { 3_605_000 };
        s.add(&m, d, Presence::Any, Compare::Any, 0);
        items.push((m, d));
    }
    while !s.drain_expired(5_000, 200).0.is_empty() {}
    s.check_invariants();
    let Repr::Large(l) = &s.repr else {
        panic!("still large")
    };
    // The survivors fill the slab's bottom, but for the few holes left to
    // inserts.
    assert!(
        l.slab_len() <= s.len() + s.len() / 16 + 32,
        "{} slots for {}",
        l.slab_len(),
        s.len()
    );
    let (added, _) = fresh_bytes(&s, &items);
    assert!(
        s.heap_bytes() as f64 <= 1.2 * added as f64,
        "{} bytes against {added} fresh",
        s.heap_bytes()
    );
}

/// Bytes a member after expiry against a fresh set of the survivors, and
/// drain times; by hand, in release mode (see the module's doc).
#[test]
#[ignore]
fn memory_after_mass_expiry() {
    for (n, expired) in [
        (10_000, 0.70),
        (10_000, 0.99),
        (1_000_000, 0.70),
        (1_000_000, 0.99),
        (1_000_000, 1.0),
    ]
    .into_iter()
    .filter(|&(n, e)| std::env::var("ONLY").map_or(true, |o| o == format!("{n}-{e}")))
    {
        let mut rng = Rng(SplitMix64(42));
        let (mut s, items) = filled(n, &mut rng);
        let before = s.heap_bytes();
        let now = if expired >= 1.0 {
            u64::MAX - 1
        } else {
            quantile(&items, expired)
        };
        let started = std::time::Instant::now();
        // In slices of 10,000, as active expiry drains a set over ticks.
        while !s.drain_expired(now, 10_000).0.is_empty() {}
        let drain = started.elapsed();
        let bytes = s.heap_bytes();
        let per = |b: usize| b as f64 / s.len().max(1) as f64;
        if s.is_empty() {
            eprintln!(
                "{n} members, all expired: drained in {:.0} ms, {bytes} bytes left",
                drain.as_secs_f64() * 1e3
            );
            continue;
        }
        let (added, loaded) = fresh_bytes(&s, &items);
        eprintln!(
            "{n} members ({:.1} B each), {:.0}% expired: drained in {:.0} ms; {} left, \
             {:.1} B each; fresh {:.1} (added), {:.1} (loaded); ratio {:.2} / {:.2}",
            before as f64 / n as f64,
            expired * 100.0,
            drain.as_secs_f64() * 1e3,
            s.len(),
            per(bytes),
            per(added),
            per(loaded),
            bytes as f64 / added as f64,
            bytes as f64 / loaded as f64,
        );
    }
}
