//! Members moved between deadlines and loaded in any order keep the set
//! whole, against a map model.

use super::*;

proptest! {
    /// `insert_absent`, what loaders call, agrees with a map whatever the
    /// order of the deadlines (in order it appends to the deadline index;
    /// out of order it must fall back to a search), refuses present
    /// members without changing them, and keeps every invariant.
    #[test]
    fn insert_absent_matches_a_map_in_any_order(
        entries in prop::collection::vec(
            (0u16..400, prop_oneof![1u64..1000, Just(NO_DEADLINE), Just(u64::MAX / 4)]),
            1..600,
        ),
        sort in any::<bool>(),
        reserve in any::<bool>(),
    ) {
        let mut entries = entries;
        if sort {
            entries.sort_by_key(|&(_, d)| d);
        }
        let mut s = XSet::new();
        if reserve {
            s.reserve(entries.len());
        }
        let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
        for (m, d) in entries {
            let member = m.to_be_bytes().to_vec();
            let absent = !model.contains_key(&member);
            prop_assert_eq!(s.insert_absent(&member, d), absent);
            model.entry(member).or_insert(d);
        }
        s.check_invariants();
        prop_assert_eq!(s.len(), model.len());
        for (m, d) in &model {
            prop_assert_eq!(s.deadline_of(m), Some(*d));
        }
    }
}

#[test]
fn members_sent_back_to_former_deadlines_keep_the_set_whole() {
    // A refresh to the deadline a member had before, whose pair still
    // lies stale in the index, in the leaf the refresh purges.
    let mut s = XSet::new();
    let add = |s: &mut XSet, m: &[u8], d: u64| {
        s.add(m, d, Presence::Any, Compare::Any, 0);
        s.check_invariants();
    };
    for i in 0..254u64 {
        add(&mut s, format!("b{i}").as_bytes(), 100 + i);
    }
    let name = |i: u64| format!("m{i}").into_bytes();
    for i in 0..127 {
        add(&mut s, &name(i), 1000 + i);
    }
    add(&mut s, &name(127), 2000);
    add(&mut s, &name(128), 2001);
    add(&mut s, &name(3), 3000);
    add(&mut s, &name(4), 3001);
    for i in (0..3).chain(5..=128) {
        s.remove(&name(i));
        s.check_invariants();
    }
    assert!(!s.is_small());
    add(&mut s, &name(3), 1003);
    add(&mut s, &name(4), 5000);
    assert_eq!(s.pop_soonest(1000).len(), 256);
    s.check_invariants();
    assert_eq!(s.len(), 0);
}

#[test]
fn members_switching_between_two_schedules_match_a_model() {
    // EXAT a, then b, then a again: refreshes back to former deadlines,
    // some members removed on the way.
    let mut s = XSet::new();
    let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
    // Members that stay (due before both schedules; nothing drains them
    // here): the set is large from the start, so every step goes through
    // the deadline index.
    for i in 0..200u64 {
        let m = format!("p{i}").into_bytes();
        s.add(&m, 5 + i, Presence::Any, Compare::Any, 0);
        model.insert(m, 5 + i);
    }
    assert!(!s.is_small());
    let mut x = 3u64;
    for step in 0..30_000u64 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let m = format!("k{}", (x >> 33) % 100).into_bytes();
        let schedule = if (x >> 20).is_multiple_of(2) {
            10_000
        } else {
            10_004
        };
        let d = schedule + (x >> 40) % 3;
        if step % 6 == 0 {
            assert_eq!(s.remove(&m), model.remove(&m));
        } else {
            s.add(&m, d, Presence::Any, Compare::Any, 0);
            model.insert(m, d);
        }
        if step % 97 == 0 {
            s.check_invariants();
        }
    }
    s.check_invariants();
    assert!(!s.is_small());
    assert_eq!(s.len(), model.len());
    for (m, d) in &model {
        assert_eq!(s.live_deadline_of(m, 0), Some(*d));
    }
    let popped = s.pop_soonest(model.len());
    assert_eq!(popped.len(), model.len());
    s.check_invariants();
}
