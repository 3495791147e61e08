//! Unit and property tests of the deadline index, against a `BTreeSet`.

use super::leaf::*;
use super::search::*;
use super::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

/// Every pair live: for indexes that never retire a pair.
fn all(_: Key) -> bool {
    true
}

fn same<const C: usize>(index: &DeadlineIndex<C>, model: &BTreeSet<Key>) {
    let live = |k| model.contains(&k);
    index.check_invariants(&live);
    assert_eq!(index.len(), model.len());
    assert!(index.iter(live).eq(model.iter().copied()));
    assert!(index.iter(live).rev().eq(model.iter().rev().copied()));
    assert_eq!(index.first(), model.first().copied());
}

#[test]
fn leaves_fit_their_size_class() {
    use crate::member::allocation_size;
    assert_eq!(Leaf::new().heap_bytes(), 1024);
    assert_eq!(allocation_size(LEAF_CAP * 8), 1024);
    // Every class below the full one is a size class exactly, and
    // each holds its pairs.
    for n in 1..=LEAF_CAP {
        let cap = capacity_for(n);
        assert!(cap >= n);
        if cap < LEAF_CAP {
            assert_eq!(allocation_size(cap * 8), cap * 8, "{n} pairs");
        }
    }
    assert_eq!(capacity_for(100), 112, "896 bytes, not 1024");
    assert_eq!(std::mem::size_of::<Leaf>(), 40);
    assert_eq!(allocation_size((CHUNK_CAP + 1) * 40), (CHUNK_CAP + 1) * 40);
}

#[test]
fn appends_in_order_fill_leaves() {
    let mut index: DeadlineIndex = DeadlineIndex::default();
    for s in 0..10 * LEAF_CAP as u32 {
        index.insert((1000 + u64::from(s), s), &all);
    }
    index.check_invariants(&all);
    assert_eq!(index.leaf_count(), 10, "every leaf full");
    assert_eq!(index.count_below((1000 + 5, 0), &all), 5);
    assert_eq!(index.iter_from((1000 + 1269, 0), all).count(), 1);
    assert_eq!(index.iter_from((1000 + 1270, 0), all).count(), 0);
    for s in 0..10 * LEAF_CAP as u32 {
        assert_eq!(index.pop_first(&all), Some((1000 + u64::from(s), s)));
    }
    assert_eq!(index.pop_first(&all), None);
    assert!(index.chunks.is_empty() && index.len() == 0);
}

#[test]
fn windows_across_many_leaves_match_a_filter() {
    let mut index: DeadlineIndex = DeadlineIndex::default();
    let mut model = BTreeSet::new();
    // 40 leaves' worth, three pairs per deadline, and a tail without one.
    for s in 0..40 * LEAF_CAP as u32 {
        let d = if s % 97 == 0 {
            u64::MAX
        } else {
            u64::from(s / 3)
        };
        index.insert((d, s), &all);
        model.insert((d, s));
    }
    let max = 40 * LEAF_CAP as u64 / 3;
    let edges = [
        0,
        1,
        2,
        126,
        127,
        500,
        max / 2,
        max - 1,
        max,
        max + 1,
        u64::MAX - 1,
        u64::MAX,
    ];
    for &lo in &edges {
        for &hi in &edges {
            let want: Vec<Key> = model
                .iter()
                .copied()
                .filter(|k| lo <= k.0 && k.0 <= hi)
                .collect();
            assert!(
                index.between(lo, hi, all).eq(want.iter().copied()),
                "{lo}..={hi}"
            );
            assert!(
                index
                    .between(lo, hi, all)
                    .rev()
                    .eq(want.iter().rev().copied())
            );
            assert_eq!(index.count_between(lo, hi, &all), want.len(), "{lo}..={hi}");
        }
    }
    assert_eq!(index.count_between(0, u64::MAX, &all), index.len());
    assert_eq!(index.between(5, 4, all).count(), 0);
    assert_eq!(
        DeadlineIndex::<CHUNK_CAP>::default().count_between(0, u64::MAX, &all),
        0
    );
    assert_eq!(
        DeadlineIndex::<CHUNK_CAP>::default()
            .between(0, u64::MAX, all)
            .count(),
        0
    );
}

#[test]
fn removals_merge_short_leaves() {
    let mut index: DeadlineIndex = DeadlineIndex::default();
    let mut model = BTreeSet::new();
    for s in 0..4 * LEAF_CAP as u32 {
        index.insert((u64::from(s % 7), s), &all);
        model.insert((u64::from(s % 7), s));
    }
    let leaves = index.leaf_count();
    for s in (0..4 * LEAF_CAP as u32).filter(|s| s % 3 != 0) {
        assert!(index.remove((u64::from(s % 7), s), &all));
        model.remove(&(u64::from(s % 7), s));
        same(&index, &model);
    }
    assert!(!index.remove((0, 1), &all), "already gone");
    assert!(index.leaf_count() < leaves, "short leaves merged");
}

#[test]
fn interleaved_runs_keep_leaves_full() {
    // Two TTLs: two runs of increasing deadlines, interleaved.
    let mut index: DeadlineIndex = DeadlineIndex::default();
    let n = 20 * LEAF_CAP as u32;
    for s in 0..n {
        let d = if s % 2 == 0 {
            1_000 + u64::from(s)
        } else {
            1 << 40 | u64::from(s)
        };
        index.insert((d, s), &all);
    }
    index.check_invariants(&all);
    let full = (n as usize).div_ceil(LEAF_CAP);
    assert!(
        index.leaf_count() <= full + 2,
        "{} leaves for {full} full ones",
        index.leaf_count()
    );
}

#[test]
fn rank_by_matches_partition_point_on_skewed_keys() {
    // Evenly spread, clustered and exponential keys: interpolation is
    // only a guess, the answer must be exact.
    let shapes: [Vec<u128>; 3] = [
        (0..1000).map(|i| i * 7).collect(),
        (0..1000).map(|i| ((i / 100) << 80) | (i % 100)).collect(),
        (0..100).map(|i| 1u128 << i).collect(),
    ];
    for keys in &shapes {
        let probes = keys.iter().flat_map(|&k| [k.saturating_sub(1), k, k + 1]);
        for t in probes.chain([0, u128::MAX]) {
            let want = keys.partition_point(|&k| k < t);
            assert_eq!(rank_by(keys.len(), |i| keys[i], t), want, "t = {t}");
            // Bounded by the first key and one just past the last, or
            // far past it (the guess then lands low).
            let (first, last) = (keys[0], keys[keys.len() - 1]);
            for end in [last + 1, last.saturating_mul(3).max(last + 1)] {
                let got = rank_between(keys.len(), |i| keys[i], t, first, end);
                assert_eq!(got, want, "t = {t}, end = {end}");
            }
        }
    }
}

/// At least `min` (and under 200) distinct keys: any, small, or a few
/// far apart, so that interpolation guesses both well and badly.
fn sorted_keys(min: usize) -> impl Strategy<Value = BTreeSet<u128>> {
    proptest::collection::btree_set(
        prop_oneof![
            any::<u128>(),
            0u128..64,
            (0u64..8).prop_map(|d| u128::from(d) << 70)
        ],
        min..200,
    )
}

/// A key to rank among [`sorted_keys`]: of the same shapes, so that it
/// often falls on or next to one of them.
fn probe() -> impl Strategy<Value = u128> {
    prop_oneof![
        any::<u128>(),
        0u128..80,
        (0u64..9).prop_map(|d| u128::from(d) << 70)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn rank_by_is_a_partition_point(keys in sorted_keys(0), t in probe()) {
        let keys: Vec<u128> = keys.into_iter().collect();
        let want = keys.partition_point(|&k| k < t);
        prop_assert_eq!(rank_by(keys.len(), |i| keys[i], t), want);
    }

    #[test]
    fn rank_between_is_a_partition_point(
        keys in sorted_keys(1),
        t in probe(),
        past in prop_oneof![Just(1u128), 1u128..1000, any::<u128>()],
    ) {
        // `end` is any bound above the last key; the first key is known.
        let keys: Vec<u128> = keys.into_iter().collect();
        let last = keys[keys.len() - 1];
        prop_assume!(last < u128::MAX);
        let end = last.saturating_add(past).max(last + 1);
        let want = keys.partition_point(|&k| k < t);
        prop_assert_eq!(rank_between(keys.len(), |i| keys[i], t, keys[0], end), want);
    }

    #[test]
    fn behaves_like_a_btreeset(ops in proptest::collection::vec(
        (0u8..6, 0u64..50, 0u32..400), 1..1500)) {
        against_a_btreeset::<CHUNK_CAP>(&ops, false, false)?;
    }

    /// Deadlines a quarter of an offset's reach apart, and the extremes:
    /// leaves rebase and split around pairs their base cannot hold.
    #[test]
    fn behaves_like_a_btreeset_with_far_apart_deadlines(
        ops in proptest::collection::vec((0u8..8, 0u64..50, 0u32..400), 1..3000),
        chunk in 0u8..3,
    ) {
        match chunk {
            0 => against_a_btreeset::<2>(&ops, true, true)?,
            1 => against_a_btreeset::<3>(&ops, true, true)?,
            _ => against_a_btreeset::<CHUNK_CAP>(&ops, true, true)?,
        }
    }

    /// Chunks of two or three leaves, and mostly inserts: chunks split,
    /// merge and empty within a few hundred pairs.
    #[test]
    fn behaves_like_a_btreeset_in_tiny_chunks(ops in proptest::collection::vec(
        (0u8..10, 0u64..50, 0u32..400), 1..3000), three in any::<bool>()) {
        if three {
            against_a_btreeset::<3>(&ops, true, false)?;
        } else {
            against_a_btreeset::<2>(&ops, true, false)?;
        }
    }
}

/// Deadline `d` (below 50) spread out: most are `d` quarters of an
/// offset's reach, some small, and the two largest.
fn far_apart(d: u64) -> u64 {
    match d {
        49 => u64::MAX,
        48 => u64::MAX - 1,
        47 => u64::MAX - 2 - u64::from(FAR),
        _ if d.is_multiple_of(7) => d,
        _ => d << 30,
    }
}

/// Applies `ops` (op, deadline, slot; ops 0 and 6 up insert, 1 moves a
/// present pair to a lower slot or else inserts) to an index and to a
/// `BTreeSet`,
/// comparing every query after each step, and the invariants too when
/// `check`; deadlines spread by [`far_apart`] when `far`.
fn against_a_btreeset<const C: usize>(
    ops: &[(u8, u64, u32)],
    check: bool,
    far: bool,
) -> Result<(), TestCaseError> {
    let mut index: DeadlineIndex<C> = DeadlineIndex::default();
    let mut model = BTreeSet::new();
    for &(op, small, s) in ops {
        let d = if far { far_apart(small) } else { small };
        let key = (d, s);
        // A present key, so that most removals and replacements hit.
        let nth = (small as usize * 400 + s as usize) % model.len().max(1);
        let present = model.iter().nth(nth).copied();
        // The model says which pairs are live, as the slab does for a
        // set: updated before the index is, and asked by it. Only
        // live pairs are removed, as a set does.
        match op {
            1 if present.is_some_and(|old: Key| old.1 > 0) => {
                // A move down the slab: same deadline, a lower slot.
                if let Some(old) = present {
                    let new = (old.0, s % old.1);
                    if !model.contains(&new) {
                        model.remove(&old);
                        model.insert(new);
                        index.reslot(old, new.1, &|k| model.contains(&k));
                    }
                }
            }
            0 | 1 | 6.. => {
                if model.insert(key) {
                    index.insert(key, &|k| model.contains(&k));
                }
            }
            2 => {
                if model.remove(&key) {
                    prop_assert!(index.remove(key, &|k| model.contains(&k)));
                }
            }
            3 => {
                if let Some(present) = present {
                    model.remove(&present);
                    prop_assert!(index.remove(present, &|k| model.contains(&k)));
                }
            }
            4 => {
                // A deadline change: near the old pair (often the
                // same leaf), anywhere, or past the last pair (the
                // usual refresh, which leaves the old pair stale).
                if let Some(old) = present {
                    let last = model.last().map_or(d, |k| k.0);
                    let new = match s % 4 {
                        0 | 2 => (old.0.saturating_add(d % 3), s),
                        1 => key,
                        _ => (last.saturating_add(d % 3), s),
                    };
                    if !model.contains(&new) {
                        model.remove(&old);
                        model.insert(new);
                        index.replace(old, new, &|k| model.contains(&k));
                    }
                }
            }
            _ => {
                let popped = model.pop_first();
                prop_assert_eq!(index.pop_first(&|k| model.contains(&k)), popped);
            }
        }
        if check {
            index.check_invariants(&|k| model.contains(&k));
        }
        prop_assert_eq!(index.len(), model.len());
        prop_assert_eq!(index.first(), model.first().copied());
        prop_assert_eq!(
            index.count_below(key, &|k| model.contains(&k)),
            model.range(..key).count()
        );
        prop_assert!(
            index
                .iter_from(key, |k| model.contains(&k))
                .eq(model.range(key..).copied())
        );
        prop_assert!(
            index
                .iter_from(key, |k| model.contains(&k))
                .rev()
                .eq(model.range(key..).rev().copied())
        );
        let (lo, hi) = (
            d,
            d.saturating_add(u64::from(s % 12) << if far { 30 } else { 0 }),
        );
        let (lo, hi) = if s % 5 == 0 { (hi, lo) } else { (lo, hi) };
        let want: Vec<Key> = model
            .iter()
            .copied()
            .filter(|k| lo <= k.0 && k.0 <= hi)
            .collect();
        prop_assert!(
            index
                .between(lo, hi, |k| model.contains(&k))
                .eq(want.iter().copied())
        );
        prop_assert!(
            index
                .between(lo, hi, |k| model.contains(&k))
                .rev()
                .eq(want.iter().rev().copied())
        );
        prop_assert_eq!(
            index.count_between(lo, hi, &|k| model.contains(&k)),
            want.len()
        );
    }
    same(&index, &model);
    Ok(())
}

#[test]
fn refreshes_leave_stale_pairs_counted_and_skipped() {
    // A slab of one deadline a slot, as a set keeps it.
    let mut slab: Vec<u64> = (0..10_000).collect();
    let mut index: DeadlineIndex = DeadlineIndex::default();
    for (s, &d) in slab.iter().enumerate() {
        index.insert((d, s as u32), &all);
    }
    let mut x = 7u64;
    for step in 0..20_000u64 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let s = (x >> 40) as usize % slab.len();
        // Mostly the usual TTL (appended), sometimes back to where the
        // member was (a stale pair revived), sometimes anywhere.
        let new = match step % 7 {
            0 => s as u64,
            1 => (x >> 20) % 40_000,
            _ => 40_000 + step,
        };
        let old = slab[s];
        if new == old || slab.contains(&new) {
            continue;
        }
        slab[s] = new;
        let live = |(d, s): Key| slab[s as usize] == d;
        index.replace((old, s as u32), (new, s as u32), &live);
        if step % 1000 == 0 {
            index.check_invariants(&live);
        }
    }
    let live = |(d, s): Key| slab[s as usize] == d;
    index.check_invariants(&live);
    assert!(index.stale > 0, "refreshes left stale pairs");
    assert!(
        index.stale <= index.len() + index.leaf_count(),
        "{} stale",
        index.stale
    );
    assert_eq!(index.len(), slab.len());
    let mut model: Vec<Key> = slab
        .iter()
        .enumerate()
        .map(|(s, &d)| (d, s as u32))
        .collect();
    model.sort_unstable();
    assert!(index.iter(live).eq(model.iter().copied()));
    assert!(index.iter(live).rev().eq(model.iter().rev().copied()));
    assert_eq!(index.first(), model.first().copied());
    for (lo, hi) in [(0, 5_000), (1_234, 39_999), (0, u64::MAX), (41_000, 50_000)] {
        let want = model.iter().filter(|k| lo <= k.0 && k.0 <= hi).count();
        assert_eq!(index.count_between(lo, hi, &live), want);
        assert_eq!(index.between(lo, hi, live).count(), want);
        assert_eq!(
            index.count_below((lo, 0), &live),
            model.partition_point(|&k| k < (lo, 0))
        );
    }
}

#[test]
fn a_refresh_back_to_a_stale_pair_survives_a_purge_of_its_leaf() {
    // Slot to deadline, as a set keeps it; `None` is a vacant slot.
    let mut slab: Vec<Option<u64>> = vec![None; 129];
    let mut index: DeadlineIndex = DeadlineIndex::default();
    let deadlines = (0..127).map(|s| 1000 + s).chain([2000, 2001]);
    for (s, d) in deadlines.enumerate() {
        slab[s] = Some(d);
        index.insert((d, s as u32), &slab_live(&slab));
    }
    let refresh = |slab: &mut Vec<Option<u64>>, index: &mut DeadlineIndex, s: u32, new| {
        let old = slab[s as usize].replace(new).expect("present");
        index.replace((old, s), (new, s), &slab_live(slab));
        index.check_invariants(&slab_live(slab));
    };
    // Slots 3 and 4 move to the end, their pairs left stale.
    refresh(&mut slab, &mut index, 3, 3000);
    refresh(&mut slab, &mut index, 4, 3001);
    assert_eq!(index.stale, 2);
    // The rest go, so that one short leaf holds both stale pairs.
    for s in (0..129).filter(|s| ![0, 3, 4].contains(s)) {
        let d = slab[s].take().expect("present");
        assert!(index.remove((d, s as u32), &slab_live(&slab)));
    }
    index.check_invariants(&slab_live(&slab));
    assert_eq!((index.leaf_count(), index.len(), index.stale), (1, 3, 2));
    // Slot 3 back to the deadline of its stale pair: retiring its pair
    // at 3000 purges the leaf, the pair at 1003 included, which `live`
    // already calls live.
    refresh(&mut slab, &mut index, 3, 1003);
    refresh(&mut slab, &mut index, 4, 5000);
    let live = slab_live(&slab);
    assert!(index.iter(live).eq([(1000, 0), (1003, 3), (5000, 4)]));
    for want in [(1000, 0), (1003, 3), (5000, 4)] {
        slab[want.1 as usize] = None;
        assert_eq!(index.pop_first(&slab_live(&slab)), Some(want));
    }
    assert_eq!((index.len(), index.stale, index.leaf_count()), (0, 0, 0));
}

/// Whether a pair is live for a slab of one deadline a slot (`None`:
/// vacant), as a set answers it.
fn slab_live(slab: &[Option<u64>]) -> impl Fn(Key) -> bool + '_ {
    move |(d, s)| slab.get(s as usize).copied().flatten() == Some(d)
}

/// The index used as a set uses it, against a model: one deadline a
/// slot, vacated slots reused, refreshes mostly to the end and in
/// bursts within one millisecond, some back to a deadline the slot had
/// before, some far away or without a deadline; removals and pops
/// (the slot vacated first, as the set does); moves of entries down to
/// a vacant slot (compaction). Every step is checked,
/// and no leaf is left more than half stale.
fn churn_like_a_set<const C: usize>(seed: u64, steps: usize, target: usize) {
    let mut slab: Vec<Option<u64>> = Vec::new();
    let mut had: Vec<Vec<u64>> = Vec::new();
    let mut index: DeadlineIndex<C> = DeadlineIndex::default();
    let mut x = seed;
    let mut rnd = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 17
    };
    let mut now = 1_000_000u64;
    for step in 0..steps {
        // Long stretches within one millisecond, then time moves.
        if step % 3000 >= 1200 && rnd() % 3 == 0 {
            now += 1;
        }
        let deadline = |rnd: &mut dyn FnMut() -> u64, had: &[u64]| match rnd() % 20 {
            0..=9 => now + 3000,
            10..=11 => now + 3000 - rnd() % 3,
            12..=14 if !had.is_empty() => had[rnd() as usize % had.len()],
            15 => now + rnd() % 6000,
            16 => now + (1 << 33) + rnd() % 3,
            17 => u64::MAX,
            18 => now + 100,
            _ => now + 3000 + rnd() % 2,
        };
        let occupied: Vec<usize> = (0..slab.len()).filter(|&s| slab[s].is_some()).collect();
        let n = occupied.len();
        let r = rnd() % 100;
        if n < target / 2 || (r < 25 && n < target * 2) {
            let vacant: Vec<usize> = (0..slab.len()).filter(|&s| slab[s].is_none()).collect();
            let s = if !vacant.is_empty() && rnd() % 4 != 0 {
                vacant[rnd() as usize % vacant.len()]
            } else {
                slab.push(None);
                had.push(Vec::new());
                slab.len() - 1
            };
            let d = deadline(&mut rnd, &had[s]);
            slab[s] = Some(d);
            had[s].push(d);
            index.insert((d, s as u32), &slab_live(&slab));
        } else if r < 75 {
            let s = occupied[rnd() as usize % n];
            let d = deadline(&mut rnd, &had[s]);
            let Some(old) = slab[s].replace(d).filter(|&old| old != d) else {
                continue;
            };
            had[s].push(d);
            let live = slab_live(&slab);
            index.replace((old, s as u32), (d, s as u32), &live);
        } else if r < 90 {
            let s = occupied[rnd() as usize % n];
            let d = slab[s].take().expect("occupied");
            let live = slab_live(&slab);
            assert!(index.remove((d, s as u32), &live));
        } else if r < 95
            && let s = occupied[rnd() as usize % n]
            && let Some(h) = (0..s).find(|&h| slab[h].is_none())
        {
            // Compaction: the entry moves to the lowest vacant slot
            // below it, keeping its deadline.
            let d = slab[s].take().expect("occupied");
            slab[h] = Some(d);
            had[h].push(d);
            let live = slab_live(&slab);
            index.reslot((d, s as u32), h as u32, &live);
        } else {
            let (d, s) = index.first().expect("not empty");
            assert_eq!(slab[s as usize], Some(d), "the first pair is live");
            slab[s as usize] = None;
            let live = slab_live(&slab);
            assert_eq!(index.pop_first(&live), Some((d, s)));
        }
        let live = slab_live(&slab);
        index.check_invariants(&live);
        let mut model: Vec<Key> = (0..slab.len())
            .filter_map(|s| slab[s].map(|d| (d, s as u32)))
            .collect();
        model.sort_unstable();
        assert_eq!(index.len(), model.len());
        assert_eq!(index.first(), model.first().copied(), "step {step}");
        if step % 7 == 0 {
            assert!(index.iter(&live).eq(model.iter().copied()), "step {step}");
            let k = (now + 2999, (rnd() % 50) as u32);
            assert_eq!(
                index.count_below(k, &live),
                model.partition_point(|&m| m < k)
            );
        }
        for leaf in index.chunks.iter().flat_map(|c| c.leaves.iter()) {
            assert!(usize::from(leaf.stale) * 2 <= leaf.len(), "step {step}");
        }
    }
}

#[test]
fn churns_as_a_set_does_in_tiny_and_full_chunks() {
    for seed in 1..4 {
        churn_like_a_set::<2>(seed, 6_000, 300);
    }
    // One or two leaves, where purges and merges come often.
    for seed in 11..14 {
        churn_like_a_set::<2>(seed, 6_000, 60);
    }
    churn_like_a_set::<4>(7, 6_000, 400);
    churn_like_a_set::<CHUNK_CAP>(9, 6_000, 1_000);
}

#[test]
fn random_deadlines_fill_leaves_to_three_quarters() {
    let mut index: DeadlineIndex = DeadlineIndex::default();
    let mut x = 99u64;
    // Deadlines over 2^34 ms (200 days), the slab's random TTLs.
    for s in 0..200_000u32 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        index.insert((x >> 30, s), &all);
    }
    index.check_invariants(&all);
    let fill = index.len() as f64 / (index.leaf_count() * LEAF_CAP) as f64;
    // 0.59 when a full leaf always split, 0.77 when it handed pairs to
    // its left neighbour only, 0.85 to either.
    assert!(fill > 0.83, "leaves {fill:.3} full");
}

#[test]
fn sparse_deadlines_take_small_leaves() {
    // 1,000 members with TTLs up to 5 years: about 27 deadlines in any
    // 49.7 days, so leaves hold about that many, in small records.
    let mut index: DeadlineIndex = DeadlineIndex::default();
    let mut x = 99u64;
    let five_years = 5 * 365 * 86_400_000;
    for s in 0..1000u32 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        index.insert((1_700_000_000_000 + (x >> 11) % five_years, s), &all);
    }
    index.check_invariants(&all);
    let per_pair = index.heap_bytes() as f64 / 1000.0;
    // 48 bytes a pair with full-size records in every leaf.
    assert!(per_pair < 16.0, "{per_pair:.1} heap bytes a pair");
    // Every deadline 2^32 ms after the last: a leaf each, the smallest.
    let mut index: DeadlineIndex = DeadlineIndex::default();
    for s in 0..1000u32 {
        index.insert((u64::from(s) << 32, s), &all);
    }
    index.check_invariants(&all);
    assert_eq!(index.leaf_count(), 1000);
    let per_pair = index.heap_bytes() as f64 / 1000.0;
    // A 32-byte record array and a 40-byte header (and its share of
    // the chunk's deque); 1,090 bytes with full-size records.
    assert!(per_pair < 80.0, "{per_pair:.1} heap bytes a pair");
    while index.pop_first(&all).is_some() {}
    index.check_invariants(&all);
}

#[test]
fn replacing_the_first_pair_keeps_the_front_live() {
    // A refresh settles the front only when its old pair was first:
    // move the first pair again and again, past the end (it turns
    // stale), into the middle (it goes) and next to itself (the same
    // leaf), in a small index and in one past `COLD_ABOVE`.
    for n in [2_000u32, 40_000] {
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        for s in 0..n {
            let key = (u64::from(s) * 10, s);
            model.insert(key);
            index.insert(key, &all);
        }
        assert_eq!(index.cold(), n > 30_000);
        let mut last = u64::from(n) * 10;
        for step in 0..3_000u64 {
            let old = index.first().expect("not empty");
            let new = match step % 3 {
                0 => {
                    last += 1;
                    (last, old.1)
                }
                1 => (old.0 + 1 + (step * 7919) % last, old.1),
                _ => (old.0 + 1, old.1),
            };
            if model.contains(&new) {
                continue;
            }
            model.remove(&old);
            model.insert(new);
            index.replace(old, new, &|k| model.contains(&k));
            assert_eq!(index.first(), model.first().copied(), "step {step}");
            if step % 250 == 0 {
                same(&index, &model);
            }
        }
        same(&index, &model);
    }
}

#[test]
fn chunks_split_and_merge_under_random_churn() {
    // Random pairs into chunks of four leaves, then removals, pops and
    // replacements until empty, against a model. Past `COLD_ABOVE`
    // pairs, so that refreshes also take the path that fetches the
    // new pair's leaf first (`prefetch_for`, then `replace`).
    let mut index: DeadlineIndex<4> = DeadlineIndex::default();
    let mut model = BTreeSet::new();
    let mut x = 12345u64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for s in 0..40_000u32 {
        let key = (rand() % 1_000_000, s);
        model.insert(key);
        index.insert(key, &all);
        if s % 1000 == 0 {
            same(&index, &model);
        }
    }
    same(&index, &model);
    let chunks = index.chunks.len();
    assert!(chunks > 50, "{chunks} chunks");
    assert!(index.cold());
    let mut step = 0;
    while let Some(&k) = model.iter().nth((rand() as usize) % model.len().max(1)) {
        match step % 3 {
            0 => {
                let popped = model.pop_first();
                assert_eq!(index.pop_first(&|k| model.contains(&k)), popped);
            }
            1 => {
                model.remove(&k);
                assert!(index.remove(k, &|k| model.contains(&k)));
            }
            _ => {
                let new = (rand() % 1_000_000, k.1);
                if !model.contains(&new) {
                    index.prefetch_for(new.0);
                    model.remove(&k);
                    model.insert(new);
                    index.replace(k, new, &|k| model.contains(&k));
                }
                assert!(model.remove(&new));
                assert!(index.remove(new, &|k| model.contains(&k)));
            }
        }
        step += 1;
        if step % 997 == 0 {
            same(&index, &model);
            assert_eq!(
                index.count_between(100_000, 500_000, &|k| model.contains(&k)),
                model
                    .iter()
                    .filter(|k| (100_000..=500_000).contains(&k.0))
                    .count()
            );
        }
    }
    same(&index, &model);
    assert!(index.chunks.is_empty());
}
