//! Unit tests with explicit times, and a property test against a plain
//! `HashMap` model. Every step is followed by an invariant check.

use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

mod schedules;
mod windows;

fn members(v: &[(&[u8], u64)]) -> Vec<Vec<u8>> {
    v.iter().map(|(m, _)| m.to_vec()).collect()
}

#[test]
fn add_then_expire_at_the_millisecond_edge() {
    let mut s = XSet::new();
    assert_eq!(
        s.add(b"a", 1000, Presence::Any, Compare::Any, 0),
        AddOutcome::Added
    );
    s.check_invariants();
    assert!(s.contains(b"a", 999));
    assert!(
        !s.contains(b"a", 1000),
        "a deadline equal to now has passed"
    );
    assert_eq!(s.live_len(999), 1);
    assert_eq!(s.live_len(1000), 0);
    assert_eq!(s.len(), 1, "lazy: still stored until drained");
}

#[test]
fn readding_refreshes_and_counts_once() {
    let mut s = XSet::new();
    assert_eq!(
        s.add(b"a", 100, Presence::Any, Compare::Any, 0),
        AddOutcome::Added
    );
    assert_eq!(
        s.add(b"a", 200, Presence::Any, Compare::Any, 0),
        AddOutcome::Updated
    );
    assert_eq!(
        s.add(b"a", 200, Presence::Any, Compare::Any, 0),
        AddOutcome::Unchanged
    );
    s.check_invariants();
    assert_eq!(s.deadline_of(b"a"), Some(200));
    assert_eq!(s.len(), 1);
}

#[test]
fn conditions_follow_zadd() {
    let mut s = XSet::new();
    let any = Presence::Any;
    assert_eq!(
        s.add(b"a", 100, Presence::OnlyExisting, Compare::Any, 0),
        AddOutcome::Skipped
    );
    assert_eq!(
        s.add(b"a", 100, Presence::OnlyNew, Compare::Any, 0),
        AddOutcome::Added
    );
    assert_eq!(
        s.add(b"a", 300, Presence::OnlyNew, Compare::Any, 0),
        AddOutcome::Skipped
    );
    assert_eq!(
        s.add(b"a", 50, any, Compare::Greater, 0),
        AddOutcome::Skipped
    );
    assert_eq!(
        s.add(b"a", 150, any, Compare::Greater, 0),
        AddOutcome::Updated
    );
    assert_eq!(s.add(b"a", 200, any, Compare::Less, 0), AddOutcome::Skipped);
    assert_eq!(s.add(b"a", 120, any, Compare::Less, 0), AddOutcome::Updated);
    // GT/LT never stop a new member.
    assert_eq!(s.add(b"b", 10, any, Compare::Greater, 0), AddOutcome::Added);
    s.check_invariants();
    // No deadline counts as infinitely far.
    assert_eq!(s.persist(b"b", 0), PersistOutcome::Persisted);
    assert_eq!(
        s.add(b"b", 10_000, any, Compare::Greater, 0),
        AddOutcome::Skipped
    );
    assert_eq!(
        s.add(b"b", 10_000, any, Compare::Less, 0),
        AddOutcome::Updated
    );
    s.check_invariants();
}

#[test]
fn expired_member_behaves_as_absent() {
    let mut s = XSet::new();
    s.add(b"a", 100, Presence::Any, Compare::Any, 0);
    // Re-adding after expiry counts as new, with the new deadline only.
    assert_eq!(
        s.add(b"a", 500, Presence::Any, Compare::Any, 200),
        AddOutcome::Added
    );
    assert_eq!(s.deadline_of(b"a"), Some(500));
    // XX does not see an expired member.
    s.add(b"b", 100, Presence::Any, Compare::Any, 0);
    assert_eq!(
        s.add(b"b", 900, Presence::OnlyExisting, Compare::Any, 200),
        AddOutcome::Skipped
    );
    // REM of an expired member reports 0 but reclaims it.
    assert_eq!(s.remove(b"b"), Some(100), "stored but expired at 200");
    assert_eq!(s.deadline_of(b"b"), None);
    s.check_invariants();
}

#[test]
fn removed_member_never_gets_its_old_deadline_back() {
    let mut s = XSet::new();
    s.add(b"a", 1000, Presence::Any, Compare::Any, 0);
    assert_eq!(s.remove(b"a"), Some(1000));
    s.add(b"a", 50, Presence::Any, Compare::Any, 0);
    assert_eq!(s.deadline_of(b"a"), Some(50));
    s.check_invariants();
}

#[test]
fn past_deadline_removes_or_ignores() {
    let mut s = XSet::new();
    s.add(b"a", 1000, Presence::Any, Compare::Any, 0);
    assert_eq!(
        s.add(b"a", 10, Presence::Any, Compare::Any, 20),
        AddOutcome::Removed
    );
    assert_eq!(
        s.add(b"z", 10, Presence::Any, Compare::Any, 20),
        AddOutcome::Ignored
    );
    assert!(s.is_empty());
    s.check_invariants();
}

#[test]
fn expire_codes_follow_hexpire() {
    let mut s = XSet::new();
    let now = 100;
    assert_eq!(
        s.expire(b"x", 500, ExpireCondition::Always, now),
        ExpireOutcome::NoMember
    );
    s.add(b"a", 1000, Presence::Any, Compare::Any, now);
    assert_eq!(
        s.expire(b"a", 500, ExpireCondition::NoDeadline, now),
        ExpireOutcome::ConditionNotMet
    );
    assert_eq!(
        s.expire(b"a", 500, ExpireCondition::HasDeadline, now),
        ExpireOutcome::Set
    );
    assert_eq!(
        s.expire(b"a", 400, ExpireCondition::Greater, now),
        ExpireOutcome::ConditionNotMet
    );
    assert_eq!(
        s.expire(b"a", 600, ExpireCondition::Greater, now),
        ExpireOutcome::Set
    );
    assert_eq!(s.persist(b"a", now), PersistOutcome::Persisted);
    assert_eq!(s.persist(b"a", now), PersistOutcome::NoDeadline);
    assert_eq!(
        s.expire(b"a", 600, ExpireCondition::Greater, now),
        ExpireOutcome::ConditionNotMet
    );
    assert_eq!(
        s.expire(b"a", 700, ExpireCondition::NoDeadline, now),
        ExpireOutcome::Set
    );
    assert_eq!(
        s.expire(b"a", 50, ExpireCondition::Always, now),
        ExpireOutcome::Removed
    );
    assert_eq!(s.persist(b"a", now), PersistOutcome::NoMember);
    s.check_invariants();
}

#[test]
fn drain_returns_due_members_and_next_deadline() {
    let mut s = XSet::new();
    for (i, d) in [30u64, 10, 20, 40, 50].iter().enumerate() {
        s.add(
            format!("m{i}").as_bytes(),
            *d,
            Presence::Any,
            Compare::Any,
            0,
        );
    }
    let (gone, next) = s.drain_expired(30, 2);
    assert_eq!(gone, vec![Member::new(b"m1"), Member::new(b"m2")]);
    assert_eq!(next, Some(30), "the budget stopped before m0");
    s.check_invariants();
    let (gone, next) = s.drain_expired(30, 100);
    assert_eq!(gone.len(), 1);
    assert_eq!(next, Some(40));
    s.persist(b"m3", 30);
    s.persist(b"m4", 30);
    assert_eq!(s.drain_expired(u64::MAX - 1, 100), (vec![], None));
    s.check_invariants();
}

#[test]
fn iterates_by_deadline_both_ways() {
    let mut s = XSet::new();
    s.add(b"c", 300, Presence::Any, Compare::Any, 0);
    s.add(b"a", 100, Presence::Any, Compare::Any, 0);
    s.add(b"b", 200, Presence::Any, Compare::Any, 0);
    s.add(b"p", 250, Presence::Any, Compare::Any, 0);
    s.persist(b"p", 0);
    let fwd: Vec<_> = s.iter_live(100, false).collect();
    assert_eq!(
        members(&fwd),
        vec![b"b".to_vec(), b"c".to_vec(), b"p".to_vec()]
    );
    let rev: Vec<_> = s.iter_live(100, true).collect();
    assert_eq!(
        members(&rev),
        vec![b"p".to_vec(), b"c".to_vec(), b"b".to_vec()]
    );
    assert_eq!(rev[0].1, NO_DEADLINE);
}

#[test]
fn pop_soonest_caps_length() {
    let mut s = XSet::new();
    for i in 0..10u64 {
        s.add(&i.to_be_bytes(), 100 + i, Presence::Any, Compare::Any, 0);
    }
    let gone = s.pop_soonest(3);
    assert_eq!(gone.len(), 3);
    assert_eq!(&*gone[0], &0u64.to_be_bytes());
    assert_eq!(s.len(), 7);
    s.check_invariants();
}

#[test]
fn scan_returns_stable_members_once_while_others_churn() {
    let mut s = XSet::new();
    for i in 0..100u32 {
        s.add(
            format!("k{i}").as_bytes(),
            1000 + u64::from(i),
            Presence::Any,
            Compare::Any,
            0,
        );
    }
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut cursor = 0;
    let mut round = 0u64;
    loop {
        let (next, batch) = s.scan(cursor, 7, 0);
        for (m, _) in batch {
            *seen.entry(m.to_vec()).or_default() += 1;
        }
        // Churn: change deadlines of stable members, add and remove others.
        round += 1;
        s.expire(b"k5", 5000 + round, ExpireCondition::Always, 0);
        s.add(
            format!("new{round}").as_bytes(),
            9000,
            Presence::Any,
            Compare::Any,
            0,
        );
        s.remove(format!("new{}", round.saturating_sub(1)).as_bytes());
        s.check_invariants();
        if next == 0 {
            break;
        }
        cursor = next;
    }
    for i in 0..100 {
        assert_eq!(
            seen.get(format!("k{i}").as_bytes()),
            Some(&1),
            "k{i} seen once"
        );
    }
}

#[test]
fn slab_shrinks_when_emptied() {
    let mut s = XSet::new();
    for i in 0..50u32 {
        s.add(&i.to_le_bytes(), 10, Presence::Any, Compare::Any, 0);
    }
    let (gone, next) = s.drain_expired(10, usize::MAX);
    assert_eq!((gone.len(), next), (50, None));
    assert!(s.is_empty());
    assert!(s.is_small(), "an emptied set is back to one small buffer");
    assert_eq!(s.heap_bytes(), 0);
    s.check_invariants();
}

#[test]
fn converts_between_encodings_both_ways() {
    let limits = Limits {
        max_small_members: 8,
        max_small_member_bytes: 4,
    };
    let mut s = XSet::with_limits(limits);
    for i in 0..8u8 {
        s.add(&[i], 100 + u64::from(i), Presence::Any, Compare::Any, 0);
        assert!(s.is_small());
    }
    s.add(b"x", 50, Presence::Any, Compare::Any, 0);
    assert!(!s.is_small(), "a ninth member converts");
    s.check_invariants();
    for i in 0..5u8 {
        s.remove(&[i]);
    }
    assert!(s.is_small(), "back to small at half the limit");
    s.check_invariants();
    assert_eq!(
        s.iter_live(0, false).map(|(_, d)| d).collect::<Vec<_>>(),
        vec![50, 105, 106, 107]
    );
    s.add(b"longer", 10, Presence::Any, Compare::Any, 0);
    assert!(!s.is_small(), "a long member converts");
    s.remove(b"longer");
    assert!(s.is_small());
    s.check_invariants();
}

#[test]
fn far_deadlines_keep_their_exact_value_in_either_encoding() {
    let mut s = XSet::new();
    s.add(b"near", 1000, Presence::Any, Compare::Any, 0);
    assert!(s.is_small());
    s.add(b"far", MAX_DEADLINE_MS, Presence::Any, Compare::Any, 0);
    assert!(!s.is_small(), "a deadline past 48 bits converts");
    assert_eq!(s.deadline_of(b"far"), Some(MAX_DEADLINE_MS));
    s.persist(b"far", 0);
    s.remove(b"near");
    assert!(s.is_small(), "no deadline fits the small encoding");
    assert_eq!(s.deadline_of(b"far"), Some(NO_DEADLINE));
    s.expire(b"far", MAX_DEADLINE_MS - 1, ExpireCondition::Always, 0);
    assert!(!s.is_small());
    assert_eq!(s.deadline_of(b"far"), Some(MAX_DEADLINE_MS - 1));
    s.check_invariants();
}

#[test]
fn scan_survives_conversions_between_calls() {
    let limits = Limits {
        max_small_members: 16,
        max_small_member_bytes: 8,
    };
    let mut s = XSet::with_limits(limits);
    for i in 0..40u32 {
        s.add(
            format!("k{i}").as_bytes(),
            1000,
            Presence::Any,
            Compare::Any,
            0,
        );
    }
    let (cursor, first) = s.scan(0, 5, 0);
    assert_ne!(cursor, 0);
    let mut seen: std::collections::HashSet<Vec<u8>> =
        first.iter().map(|(m, _)| m.to_vec()).collect();
    // Shrink to small and grow back to large: the slab layout is new.
    for i in 4..40u32 {
        s.remove(format!("k{i}").as_bytes());
    }
    assert!(s.is_small());
    for i in 100..140u32 {
        s.add(
            format!("k{i}").as_bytes(),
            1000,
            Presence::Any,
            Compare::Any,
            0,
        );
    }
    assert!(!s.is_small());
    let mut cursor = cursor;
    loop {
        let (next, batch) = s.scan(cursor, 5, 0);
        seen.extend(batch.iter().map(|(m, _)| m.to_vec()));
        if next == 0 {
            break;
        }
        cursor = next;
    }
    for m in s.iter_live(0, false) {
        assert!(
            seen.contains(m.0),
            "{:?} missed",
            String::from_utf8_lossy(m.0)
        );
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(u8, u64, u8, u8),
    Remove(u8),
    Expire(u8, u64, u8),
    Persist(u8),
    Drain(usize),
    Tick(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, prop_oneof![9 => 1u64..200, 1 => u64::MAX - 2..=u64::MAX], 0u8..3, 0u8..3)
            .prop_map(|(m, t, p, c)| Op::Add(m, t, p, c)),
        2 => (0u8..24).prop_map(Op::Remove),
        2 => (0u8..24, 0u64..200, 0u8..5).prop_map(|(m, t, c)| Op::Expire(m, t, c)),
        1 => (0u8..24).prop_map(Op::Persist),
        1 => (0usize..5).prop_map(Op::Drain),
        2 => (0u64..40).prop_map(Op::Tick),
    ]
}

fn key(m: u8) -> Vec<u8> {
    // Mixed lengths: short ones, the empty member, and from m = 18 on 14 to
    // 24 bytes, around the large encoding's inline limit (16).
    let pad = if m >= 18 {
        13 + 2 * (m as usize - 18)
    } else {
        m as usize % 5
    };
    vec![b'm'; pad]
        .into_iter()
        .chain([m])
        .skip(usize::from(m == 0))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn behaves_like_a_hashmap(
        ops in prop::collection::vec(op(), 1..120),
        limits in prop_oneof![
            Just(Limits::default()),
            Just(Limits { max_small_members: 4, max_small_member_bytes: 3 }),
            Just(Limits { max_small_members: 0, max_small_member_bytes: 0 }),
        ],
    ) {
        let mut s = XSet::with_limits(limits);
        let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut now = 0u64;
        for op in ops {
            let live = |model: &HashMap<Vec<u8>, u64>, k: &Vec<u8>, now: u64| {
                model.get(k).copied().filter(|&d| d > now)
            };
            match op {
                Op::Add(m, ttl, p, c) => {
                    let k = key(m);
                    // The top three u64s stand for the three farthest deadlines a
                    // command may set (far-to-far changes included).
                    let d = if ttl >= u64::MAX - 2 { MAX_DEADLINE_MS - (u64::MAX - ttl) } else { now + ttl };
                    let presence = [Presence::Any, Presence::OnlyNew, Presence::OnlyExisting][p as usize];
                    let compare = [Compare::Any, Compare::Greater, Compare::Less][c as usize];
                    let cur = live(&model, &k, now);
                    let expect = match cur {
                        Some(_) if presence == Presence::OnlyNew => AddOutcome::Skipped,
                        Some(c) if !compare.allows(c, d) => AddOutcome::Skipped,
                        Some(c) if c == d => AddOutcome::Unchanged,
                        Some(_) => { model.insert(k.clone(), d); AddOutcome::Updated }
                        None if presence == Presence::OnlyExisting => AddOutcome::Skipped,
                        None => { model.insert(k.clone(), d); AddOutcome::Added }
                    };
                    prop_assert_eq!(s.add(&k, d, presence, compare, now), expect);
                }
                Op::Remove(m) => {
                    let k = key(m);
                    let was = model.remove(&k);
                    prop_assert_eq!(s.remove(&k), was);
                }
                Op::Expire(m, t, c) => {
                    let k = key(m);
                    let d = now + t;
                    let cond = [ExpireCondition::Always, ExpireCondition::NoDeadline,
                        ExpireCondition::HasDeadline, ExpireCondition::Greater,
                        ExpireCondition::Less][c as usize];
                    let expect = match live(&model, &k, now) {
                        None => ExpireOutcome::NoMember,
                        Some(cur) => {
                            let ok = match cond {
                                ExpireCondition::Always => true,
                                ExpireCondition::NoDeadline => cur == NO_DEADLINE,
                                ExpireCondition::HasDeadline => cur != NO_DEADLINE,
                                ExpireCondition::Greater => d > cur,
                                ExpireCondition::Less => d < cur,
                            };
                            if !ok { ExpireOutcome::ConditionNotMet }
                            else if d <= now { model.remove(&k); ExpireOutcome::Removed }
                            else { model.insert(k.clone(), d); ExpireOutcome::Set }
                        }
                    };
                    prop_assert_eq!(s.expire(&k, d, cond, now), expect);
                }
                Op::Persist(m) => {
                    let k = key(m);
                    let expect = match live(&model, &k, now) {
                        None => PersistOutcome::NoMember,
                        Some(NO_DEADLINE) => PersistOutcome::NoDeadline,
                        Some(_) => { model.insert(k.clone(), NO_DEADLINE); PersistOutcome::Persisted }
                    };
                    prop_assert_eq!(s.persist(&k, now), expect);
                }
                Op::Drain(limit) => {
                    let (gone, next) = s.drain_expired(now, limit);
                    let mut due: Vec<(u64, Vec<u8>)> = model.iter()
                        .filter(|&(_, &d)| d <= now).map(|(k, &d)| (d, k.clone())).collect();
                    due.sort();
                    prop_assert_eq!(gone.len(), due.len().min(limit));
                    for g in &gone {
                        prop_assert!(model.get(&**g).is_some_and(|&d| d <= now));
                        model.remove(&**g);
                    }
                    let model_next = model.values().copied().filter(|&d| d != NO_DEADLINE).min();
                    prop_assert_eq!(next, model_next);
                }
                Op::Tick(dt) => now += dt,
            }
            s.check_invariants();
            // Observable state agrees with the model at this instant.
            let mut want: Vec<(Vec<u8>, u64)> = model.iter()
                .filter(|&(_, &d)| d > now).map(|(k, &d)| (k.clone(), d)).collect();
            want.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
            let mut got: Vec<(Vec<u8>, u64)> = s.iter_live(now, false).map(|(m, d)| (m.to_vec(), d)).collect();
            prop_assert!(got.windows(2).all(|w| w[0].1 <= w[1].1), "deadline order");
            got.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(s.live_len(now), want.len());
            for m in 0..24u8 {
                let k = key(m);
                prop_assert_eq!(s.contains(&k, now), live(&model, &k, now).is_some());
            }
            let mut rev: Vec<_> = s.iter_live(now, true).map(|(m, d)| (m.to_vec(), d)).collect();
            rev.reverse();
            let fwd: Vec<_> = s.iter_live(now, false).map(|(m, d)| (m.to_vec(), d)).collect();
            prop_assert_eq!(rev, fwd);
        }
    }
}

#[test]
fn a_large_set_that_empties_out_compacts_and_its_scan_goes_on() {
    let mut s = XSet::with_limits(Limits {
        max_small_members: 8,
        max_small_member_bytes: 64,
    });
    for i in 0..20_000u32 {
        s.add(
            format!("member-{i:05}-long-enough-to-stay-large-ish").as_bytes(),
            10_000 + u64::from(i),
            Presence::Any,
            Compare::Any,
            0,
        );
    }
    let big = s.heap_bytes();
    let (cursor, first) = s.scan(0, 10, 0);
    let mut seen: std::collections::HashSet<Vec<u8>> =
        first.into_iter().map(|(m, _)| m.to_vec()).collect();
    let (gone, _) = s.drain_expired(10_000 + 18_000, usize::MAX);
    assert_eq!(gone.len(), 18_001);
    s.check_invariants();
    assert!(s.heap_bytes() * 4 < big, "{} vs {big}", s.heap_bytes());
    // The survivors moved down the slab; a scan begun before goes on and
    // still returns every one of them.
    let mut cursor = cursor;
    while cursor != 0 {
        let (next, batch) = s.scan(cursor, 100, 0);
        seen.extend(batch.into_iter().map(|(m, _)| m.to_vec()));
        cursor = next;
    }
    for (m, _) in s.iter_all() {
        assert!(seen.contains(m), "{:?} missed", String::from_utf8_lossy(m));
    }
}

#[test]
fn thousands_of_members_match_a_model_through_churn_and_scans() {
    // Many leaves, slab trims and vacancies: what the 24-member property
    // test cannot reach. A fixed pseudo-random sequence (splitmix64).
    let mut seed = 0x5eed_u64;
    let mut next = move || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut s = XSet::with_limits(Limits {
        max_small_members: 0,
        max_small_member_bytes: 0,
    });
    let mut model: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut now = 1_000u64;
    for round in 0..40_000u32 {
        let r = next();
        let k = format!("m{}", r % 6000).into_bytes();
        let k = if r % 7 == 0 {
            [&k[..], &[b'x'; 20]].concat()
        } else {
            k
        };
        match (r >> 20) % 10 {
            0..=4 => {
                let d = match (r >> 30) % 20 {
                    0 => MAX_DEADLINE_MS - (r >> 40) % 3,
                    1 => NO_DEADLINE,
                    _ => now + (r >> 40) % 5_000 + 1,
                };
                s.add(&k, d, Presence::Any, Compare::Any, now);
                model.insert(k, d);
            }
            5..=6 => {
                let stored = model.remove(&k);
                assert_eq!(s.remove(&k), stored);
            }
            7 => {
                let (gone, _) = s.drain_expired(now, (r >> 40) as usize % 500);
                for g in gone {
                    assert!(model.remove(&*g).is_some_and(|d| d <= now));
                }
            }
            _ => now += (r >> 40) % 50,
        }
        if round % 2_000 == 0 {
            s.check_invariants();
            let mut want: Vec<(Vec<u8>, u64)> = model
                .iter()
                .filter(|&(_, &d)| d > now)
                .map(|(k, &d)| (k.clone(), d))
                .collect();
            want.sort();
            let mut got: Vec<(Vec<u8>, u64)> = s
                .iter_live(now, false)
                .map(|(m, d)| (m.to_vec(), d))
                .collect();
            got.sort();
            assert_eq!(got, want, "round {round}");
            assert_eq!(s.live_len(now), want.len());
            // A full SCAN returns every live member, each once here since
            // nothing changes during it.
            let (mut cursor, mut scanned) = (0, Vec::new());
            loop {
                let (c, batch) = s.scan(cursor, 1 + (round as usize / 2_000) % 3, now);
                scanned.extend(batch.into_iter().map(|(m, d)| (m.to_vec(), d)));
                if c == 0 {
                    break;
                }
                cursor = c;
            }
            scanned.sort();
            assert_eq!(scanned, want, "scan at round {round}");
        }
    }
}

#[test]
fn scan_walks_a_bounded_number_of_vacant_slots_per_call() {
    let mut s = XSet::with_limits(Limits {
        max_small_members: 0,
        max_small_member_bytes: 0,
    });
    // Slots 9,000 to 18,999 expire first; slots 19,000 up next, and the
    // first 9,000 last.
    for i in 0..19_200u64 {
        let deadline = match i {
            0..9_000 => 1_000_000 + i,
            9_000..19_000 => 10 + i,
            _ => 20_000 + i,
        };
        s.add(
            format!("m{i}").as_bytes(),
            deadline,
            Presence::Any,
            Compare::Any,
            0,
        );
    }
    // A drain that stops before the slots above the run, which it would
    // pop next: a long vacant run in the middle.
    assert_eq!(s.drain_expired(40_000, 10_000).0.len(), 10_000);
    s.check_invariants();
    let (mut cursor, mut seen, mut stopped) = (0, Vec::new(), false);
    loop {
        let (c, batch) = s.scan(cursor, 1, 0);
        stopped |= batch.is_empty() && c != 0;
        seen.extend(batch.into_iter().map(|(m, _)| m.to_vec()));
        if c == 0 {
            break;
        }
        cursor = c;
    }
    assert!(stopped, "a call stopped within the vacant run");
    seen.sort();
    let mut want: Vec<Vec<u8>> = (0..9_000)
        .chain(19_000..19_200)
        .map(|i| format!("m{i}").into_bytes())
        .collect();
    want.sort();
    assert_eq!(seen, want);
}

/// Member hashing is keyed per set with a PRF (SipHash-1-2 with random
/// keys), as Redis keys its dicts: members crafted to collide under
/// an unkeyed hash, here all 2,048 with the same low 12 bits of FNV-1a (one
/// home bucket for all of them in a table indexed by those bits), still
/// spread out, so lookups stay O(1) instead of walking one long run.
#[test]
fn members_crafted_to_collide_under_an_unkeyed_hash_spread_out() {
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
    let target = fnv1a(b"seed") & 0xfff;
    let members: Vec<Vec<u8>> = (0u64..)
        .map(|i| format!("m{i}").into_bytes())
        .filter(|m| fnv1a(m) & 0xfff == target)
        .take(2048)
        .collect();
    let mut set = XSet::with_limits(Limits {
        max_small_members: 0,
        max_small_member_bytes: 0,
    });
    for m in &members {
        set.add(m, 10_000, Presence::Any, Compare::Any, 0);
    }
    set.check_invariants();
    let Repr::Large(large) = &set.repr else {
        panic!("expected the large encoding");
    };
    // Unkeyed, all 2048 would share a home and one would walk 2047 buckets.
    // Keyed, they spread as random hashes do: 2048 members fill 3072
    // buckets to 2/3, where linear probing's longest run is about 32
    // buckets at the median and under 90 in 2000 simulated fills.
    let longest = large.longest_probe();
    assert!(longest < 256, "a lookup walks {longest} buckets");
    assert!(members.iter().all(|m| set.contains(m, 0)));
}

/// [`add_outcome`] is what [`XSet::add`] does, in either encoding, for every
/// condition, state of the member (absent, expired but stored, live) and
/// new deadline (past, the current one, earlier, later, none).
#[test]
fn add_does_what_the_add_rule_says() {
    let now = 1_000;
    let presences = [Presence::Any, Presence::OnlyNew, Presence::OnlyExisting];
    let compares = [Compare::Any, Compare::Greater, Compare::Less];
    let states = [None, Some(500), Some(2_000)];
    let deadlines = [900, 1_000, 1_500, 2_000, 3_000, NO_DEADLINE];
    for large in [false, true] {
        for presence in presences {
            for compare in compares {
                for state in states {
                    for deadline in deadlines {
                        let limits = Limits {
                            max_small_members: if large { 0 } else { 128 },
                            max_small_member_bytes: if large { 0 } else { 64 },
                        };
                        let mut s = XSet::with_limits(limits);
                        s.set(b"other", 5_000);
                        if let Some(d) = state {
                            s.set(b"m", d);
                        }
                        let live = state.filter(|&d| d > now);
                        let want =
                            add_outcome(live, state.is_some(), deadline, now, presence, compare);
                        let got = s.add(b"m", deadline, presence, compare, now);
                        let case = (large, presence, compare, state, deadline);
                        assert_eq!(got, want, "{case:?}");
                        s.check_invariants();
                        let after = s.live_deadline_of(b"m", now);
                        let expected = match got {
                            AddOutcome::Added | AddOutcome::Updated => Some(deadline),
                            AddOutcome::Removed | AddOutcome::Ignored => None,
                            AddOutcome::Unchanged | AddOutcome::Skipped => live,
                        };
                        assert_eq!(after, expected, "{case:?}");
                    }
                }
            }
        }
    }
}

/// A delivery lives in the large store, so a set without one (most sets)
/// keeps its size: 32 bytes, the allocator's size class it had before.
#[test]
fn a_delivery_costs_sets_without_one_nothing() {
    assert_eq!(std::mem::size_of::<XSet>(), 32);
    let mut s = XSet::new();
    s.set(b"a", 1_000);
    assert!(s.is_small() && !s.keeps_when_empty());
    let d = crate::Delivery {
        stream: b"events".to_vec(),
        maxlen: Some(10),
    };
    s.set_delivery(Some(d.clone()));
    assert!(!s.is_small());
    assert_eq!(s.delivery(), Some(&d));
    s.check_invariants();
    // Draining every member keeps the delivery, in an empty large set.
    let (gone, _) = s.drain_expired(2_000, 10);
    assert_eq!(gone.len(), 1);
    assert!(s.is_empty() && s.keeps_when_empty());
    s.check_invariants();
    let copy = s.clone();
    assert_eq!(copy.delivery(), Some(&d));
    // Cleared, a set small enough converts back.
    s.set(b"b", 3_000);
    s.set_delivery(None);
    assert!(s.is_small() && s.delivery().is_none());
    assert_eq!(s.deadline_of(b"b"), Some(3_000));
    s.check_invariants();
}
