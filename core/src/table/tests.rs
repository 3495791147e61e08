//! The hash table against a model of slot to member, and its growth,
//! shrinking and moves at scale.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Hash functions from good to adversarial: collisions and long probe
/// runs must not change answers.
fn hash_with(kind: u8, slot: u32) -> u64 {
    let mixed = u64::from(slot).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    match kind {
        0 => mixed ^ (mixed >> 29),
        1 => u64::from(slot % 5),
        2 => (mixed & 0xFFFF_FFFF_0000_0000) | u64::from(slot % 3),
        // Homes in the last buckets: probe runs wrap around the end.
        3 => u64::MAX - u64::from(slot % 4),
        _ => 7,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn behaves_like_a_set_of_slots(
        kind in 0u8..5,
        ops in proptest::collection::vec((0u8..6, 0u32..300), 1..600),
        slab_len in prop_oneof![Just(300usize), Just(70_000), Just(1 << 27)],
    ) {
        // Any slab length: slot fields wider than the bucket count
        // needs, at the hash bits' expense. The model maps each stored
        // slot to its member, whose hash stays with it when it moves.
        let mut table = SlotTable::default();
        let mut model: BTreeMap<u32, u32> = BTreeMap::new();
        for (op, slot) in ops {
            match op {
                0 | 1 => {
                    if let std::collections::btree_map::Entry::Vacant(e) = model.entry(slot) {
                        e.insert(slot);
                        table.insert(hash_with(kind, slot), slot, slab_len, hashes(kind, &model));
                    }
                }
                2 | 3 => {
                    let member = model.remove(&slot);
                    let hash = hash_with(kind, member.unwrap_or(slot));
                    prop_assert_eq!(
                        table.remove(hash, slot, hashes(kind, &model)),
                        member.is_some()
                    );
                }
                4 => {
                    // A move down the slab, to a slot not stored.
                    let to = (0..slot).rev().find(|s| !model.contains_key(s));
                    match (to, model.get(&slot).copied()) {
                        (Some(to), Some(member)) => {
                            prop_assert!(table.reslot(hash_with(kind, member), slot, to));
                            model.remove(&slot);
                            model.insert(to, member);
                            let hash = hash_with(kind, member);
                            prop_assert_eq!(table.find(hash, |s| s == to), Some(to));
                        }
                        (Some(to), None) => {
                            prop_assert!(!table.reslot(hash_with(kind, slot), slot, to));
                        }
                        (None, _) => {}
                    }
                }
                _ => {
                    let extra = slot as usize % 50;
                    table.reserve(extra, slab_len, hashes(kind, &model));
                    prop_assert!(table.len() + extra <= max_used(table.cur.len()));
                }
            }
            prop_assert_eq!(table.len(), model.len());
            table.check_invariants(hashes(kind, &model));
            let member = model.get(&slot).copied().unwrap_or(slot);
            let found = table.find(hash_with(kind, member), |s| s == slot);
            prop_assert_eq!(found, model.contains_key(&slot).then_some(slot));
        }
        table.check_invariants(hashes(kind, &model));
        for (&s, &member) in &model {
            prop_assert_eq!(table.find(hash_with(kind, member), |x| x == s), Some(s));
        }
    }
}

/// The hash of each stored slot's member, for a model of slot to member.
fn hashes(kind: u8, model: &BTreeMap<u32, u32>) -> impl Fn(u32) -> u64 + '_ {
    move |s| hash_with(kind, model[&s])
}

#[test]
fn sizes_go_up_by_half_powers_of_two() {
    let mut sizes = vec![next_size(0)];
    while sizes.len() < 8 {
        sizes.push(next_size(sizes[sizes.len() - 1]));
    }
    assert_eq!(sizes, [16, 24, 32, 48, 64, 96, 128, 192]);
    assert_eq!(next_size(17), 24);
    assert_eq!(next_size(47), 48);
    // A million slots fit 1.5M buckets, not 2M.
    let mut n = MIN_BUCKETS;
    while max_used(n) < 1_000_000 {
        n = next_size(n);
    }
    assert_eq!(n, 3 << 19);
}

#[test]
fn churn_does_not_grow_the_table() {
    let hash = |s: u32| hash_with(0, s);
    let mut table = SlotTable::default();
    for round in 0..50u32 {
        for s in 0..1000 {
            table.insert(hash(s + round), s + round, 1050, hash);
        }
        for s in 0..1000 {
            assert!(table.remove(hash(s + round), s + round, hash));
        }
        table.check_invariants(hash);
    }
    assert_eq!(table.len(), 0);
    assert!(table.cur.len() <= 2048, "{} buckets", table.cur.len());
}

#[test]
fn a_table_shrinks_as_its_slots_go_and_grows_back_without_thrashing() {
    let hash = |s: u32| hash_with(0, s);
    let mut table = SlotTable::default();
    const N: u32 = 100_000;
    for s in 0..N {
        table.insert(hash(s), s, N as usize, hash);
    }
    let full = table.heap_bytes();
    // Down to 1%, the slab left at its full length: the slot field
    // stays wide, the bucket count follows the slots.
    let mut resizes = 0;
    for s in 0..N - 1000 {
        let buckets = table.cur.len();
        assert!(table.remove(hash(s), s, hash));
        resizes += usize::from(table.cur.len() != buckets);
        if s % 10_000 == 0 {
            table.check_invariants(hash);
        }
    }
    table.check_invariants(hash);
    // A small table shrinks at once: none is under way.
    assert!(table.old.is_none());
    let n = table.cur.len();
    assert!(
        !sparse(1000, n) && 1000 * 2 <= n,
        "1000 slots in {n} buckets"
    );
    assert!(
        table.heap_bytes() * 50 < full,
        "{} vs {full}",
        table.heap_bytes()
    );
    assert!((5..=12).contains(&resizes), "{resizes} shrinks");
    for s in N - 1000..N {
        assert_eq!(table.find(hash(s), |x| x == s), Some(s));
    }
    // Churn around one size never resizes: one slot in and out.
    let buckets = table.cur.len();
    for _ in 0..10_000 {
        table.insert(hash(0), 0, N as usize, hash);
        assert!(table.remove(hash(0), 0, hash));
    }
    assert_eq!(table.cur.len(), buckets);
    assert!(table.old.is_none());
    // A refill to the size it had grows it the same way.
    for s in 0..N - 1000 {
        table.insert(hash(s), s, N as usize, hash);
    }
    table.check_invariants(hash);
    assert_eq!(table.len(), N as usize);
    for s in (0..N).step_by(997) {
        assert_eq!(table.find(hash(s), |x| x == s), Some(s));
    }
}

#[test]
fn reslot_moves_a_slot_in_place_in_either_array() {
    // Odd slots in, each holding the member of its own number; while
    // a growth is under way, members move down to the even slot below.
    let mut table = SlotTable::default();
    let mut model: BTreeMap<u32, u32> = BTreeMap::new();
    let mut moved = 0;
    for s in (0..4000).filter(|s| s % 2 == 1) {
        model.insert(s, s);
        table.insert(hash_with(0, s), s, 4000, hashes(0, &model));
        if table.old.is_some() {
            // This one (in the new array) and an older one (often in
            // the old array still).
            for t in [s, (s / 2) | 1] {
                if let Some(member) = model.remove(&t) {
                    assert!(table.reslot(hash_with(0, member), t, t - 1));
                    model.insert(t - 1, member);
                    moved += 1;
                }
            }
            table.check_invariants(hashes(0, &model));
        }
    }
    assert!(moved > 100, "{moved} moves");
    let absent = (1..4000)
        .find(|s| !model.contains_key(s))
        .expect("a slot moved");
    assert!(
        !table.reslot(hash_with(0, absent), absent, 0),
        "an absent slot"
    );
    for (&s, &member) in &model {
        assert_eq!(table.find(hash_with(0, member), |x| x == s), Some(s));
    }
}

#[test]
fn growth_moves_slots_a_few_at_a_time() {
    let hash = |s: u32| hash_with(0, s);
    let mut table = SlotTable::default();
    let (mut growths, mut steps_while_growing) = (0, 0);
    for s in 0..200_000u32 {
        let growing = table.old.is_some();
        table.insert(hash(s), s, 200_000, hash);
        if !growing && table.old.is_some() {
            growths += 1;
        }
        if table.old.is_some() {
            steps_while_growing += 1;
            // Everything stays findable mid-growth, old and new alike.
            for probe in [0, s / 2, s] {
                assert_eq!(table.find(hash(probe), |x| x == probe), Some(probe));
            }
        }
        if s % 20_000 == 0 {
            table.check_invariants(hash);
        }
        if s % 3 == 0 {
            // Removals and re-inserts mid-growth, in either array.
            assert!(table.remove(hash(s / 3), s / 3, hash));
            table.insert(hash(s / 3), s / 3, 200_000, hash);
        }
    }
    table.check_invariants(hash);
    assert!(growths >= 10, "{growths} incremental growths");
    assert!(
        steps_while_growing > 1000,
        "growth spread over {steps_while_growing} inserts"
    );
    assert_eq!(table.len(), 200_000);
}

#[test]
fn a_million_slots_take_four_bytes_a_bucket() {
    let hash = |s: u32| hash_with(0, s);
    let mut table = SlotTable::default();
    table.reserve(1_000_000, 1_000_000, hash);
    for s in 0..1_000_000 {
        table.insert(hash(s), s, 1_000_000, hash);
    }
    // 1.5 * 2^20 buckets, 64% full.
    assert_eq!(table.cur.len(), 3 << 19);
    assert_eq!(table.heap_bytes(), 6 << 20);
    assert_eq!(table.find(hash(123_456), |s| s == 123_456), Some(123_456));
    assert_eq!(table.find(hash(2_000_000), |s| s == 2_000_000), None);
}
