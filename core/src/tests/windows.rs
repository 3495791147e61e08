//! Deadline windows select live members in either encoding, against a
//! `Vec` model.

use super::*;

/// Both encodings: the default small one, and large from the first member.
fn small_and_large() -> [XSet; 2] {
    let large = Limits {
        max_small_members: 0,
        max_small_member_bytes: 0,
    };
    [XSet::new(), XSet::with_limits(large)]
}

fn window(min: (BoundValue, bool), max: (BoundValue, bool)) -> Window {
    let bound = |(value, exclusive)| Bound { value, exclusive };
    Window::new(bound(min), bound(max))
}

#[test]
fn windows_select_live_members_by_deadline_in_either_encoding() {
    use BoundValue::{Ms, NegInf, PosInf};
    for mut s in small_and_large() {
        let large = s.limits.max_small_members == 0;
        for (m, d) in [
            (&b"a"[..], 100),
            (b"b", 200),
            (b"c", 200),
            (b"d", 300),
            (b"gone", 50),
        ] {
            s.set(m, d);
        }
        s.set(b"p", NO_DEADLINE);
        assert_eq!(s.is_small(), !large);
        s.check_invariants();
        let now = 50; // "gone" has expired but is still stored.
        let names = |w: Window, rev: bool| -> Vec<Vec<u8>> {
            s.iter_window(w, now, rev)
                .map(|(m, _)| m.to_vec())
                .collect()
        };
        let (incl, excl) = (false, true);
        let w = window((Ms(100), incl), (Ms(200), incl));
        let mut got = names(w, false);
        got[1..].sort();
        assert_eq!(got, [&b"a"[..], b"b", b"c"]);
        assert_eq!(s.count_window(w, now), 3);
        let w = window((Ms(100), excl), (Ms(300), excl));
        assert_eq!(s.count_window(w, now), 2, "b and c");
        assert_eq!(
            names(window((Ms(200), excl), (PosInf, excl)), false),
            [b"d"]
        );
        assert_eq!(
            names(window((NegInf, incl), (PosInf, incl)), true),
            names(Window::ALL, true)
        );
        assert_eq!(names(Window::ALL, true)[0], b"p", "no deadline sorts last");
        assert_eq!(names(window((PosInf, incl), (PosInf, incl)), false), [b"p"]);
        assert_eq!(
            s.count_window(window((NegInf, incl), (Ms(50), incl)), now),
            0,
            "expired"
        );
        assert_eq!(
            s.count_window(window((NegInf, incl), (Ms(50), incl)), 49),
            1,
            "live at 49"
        );
        assert_eq!(
            s.count_window(window((Ms(300), incl), (Ms(100), incl)), now),
            0,
            "min > max"
        );
        assert_eq!(s.count_window(Window::EMPTY, now), 0);
        assert_eq!(s.count_window(Window::ALL, now), s.live_len(now));
        // At 200, a and the two 200s are gone.
        let w = window((NegInf, incl), (Ms(300), incl));
        let later: Vec<&[u8]> = s.iter_window(w, 200, false).map(|(m, _)| m).collect();
        assert_eq!(later, [b"d"]);
        assert_eq!(s.count_window(w, 200), 1);
    }
}

/// One end of a window, near the deadlines the property test uses.
fn bound() -> impl Strategy<Value = Bound> {
    let value = prop_oneof![
        1 => Just(BoundValue::NegInf),
        1 => Just(BoundValue::PosInf),
        8 => (-3i64..70).prop_map(BoundValue::Ms),
        1 => Just(BoundValue::Ms(i64::MAX)),
        1 => Just(BoundValue::Ms(i64::MIN)),
    ];
    (value, any::<bool>()).prop_map(|(value, exclusive)| Bound { value, exclusive })
}

/// The model's notion of a window: compare on the extended line, where a
/// member without a deadline sits at +inf.
fn in_model_window(deadline_ms: u64, min: Bound, max: Bound) -> bool {
    let at = |v: BoundValue| match v {
        BoundValue::NegInf => i128::MIN,
        BoundValue::Ms(ms) => i128::from(ms),
        BoundValue::PosInf => i128::MAX,
    };
    let d = if deadline_ms == NO_DEADLINE {
        i128::MAX
    } else {
        i128::from(deadline_ms)
    };
    let above_min = if min.exclusive {
        d > at(min.value)
    } else {
        d >= at(min.value)
    };
    let below_max = if max.exclusive {
        d < at(max.value)
    } else {
        d <= at(max.value)
    };
    above_min && below_max
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn windows_match_a_vec_model(
        adds in prop::collection::vec(
            (0u8..30, prop_oneof![8 => 1u64..60, 1 => Just(NO_DEADLINE)]), 0..80),
        removes in prop::collection::vec(0u8..30, 0..10),
        now in 0u64..40,
        queries in prop::collection::vec(
            (bound(), bound(), any::<bool>(), 0usize..6, 0usize..8), 1..20),
        limits in prop_oneof![
            Just(Limits::default()),
            Just(Limits { max_small_members: 4, max_small_member_bytes: 3 }),
            Just(Limits { max_small_members: 0, max_small_member_bytes: 0 }),
        ],
    ) {
        let mut s = XSet::with_limits(limits);
        // The model: (member, deadline) pairs, expired ones included.
        let mut model: Vec<(Vec<u8>, u64)> = Vec::new();
        for (m, d) in adds {
            let k = key(m);
            model.retain(|(x, _)| *x != k);
            model.push((k.clone(), d));
            s.set(&k, d);
        }
        for m in removes {
            let k = key(m);
            model.retain(|(x, _)| *x != k);
            s.remove(&k);
        }
        s.check_invariants();
        if limits.max_small_members == 0 && !s.is_empty() {
            prop_assert!(!s.is_small(), "the large encoding is covered");
        }
        let live_order = |rev: bool| -> Vec<(Vec<u8>, u64)> {
            s.iter_live(now, rev).map(|(m, d)| (m.to_vec(), d)).collect()
        };
        let all: Vec<(Vec<u8>, u64)> =
            s.iter_window(Window::ALL, now, false).map(|(m, d)| (m.to_vec(), d)).collect();
        prop_assert_eq!(&all, &live_order(false), "the whole line is iter_live");
        for (min, max, rev, offset, count) in queries {
            let w = Window::new(min, max);
            let mut want: Vec<(Vec<u8>, u64)> = model.iter()
                .filter(|(_, d)| *d > now && in_model_window(*d, min, max))
                .cloned()
                .collect();
            want.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
            if rev {
                want.reverse();
            }
            let got: Vec<(Vec<u8>, u64)> =
                s.iter_window(w, now, rev).map(|(m, d)| (m.to_vec(), d)).collect();
            // Deadlines in order; equal deadlines in iter_live's order.
            let deadlines = |v: &[(Vec<u8>, u64)]| v.iter().map(|p| p.1).collect::<Vec<_>>();
            prop_assert_eq!(deadlines(&got), deadlines(&want), "{:?} {:?}", min, max);
            let filtered: Vec<_> = live_order(rev).into_iter()
                .filter(|(_, d)| w.contains(*d)).collect();
            prop_assert_eq!(&got, &filtered);
            let mut sorted = got.clone();
            sorted.sort();
            let mut want_sorted = want.clone();
            want_sorted.sort();
            prop_assert_eq!(sorted, want_sorted);
            prop_assert_eq!(s.count_window(w, now), want.len());
            // LIMIT offset count: the same page of deadlines.
            let page: Vec<u64> =
                s.iter_window(w, now, rev).skip(offset).take(count).map(|(_, d)| d).collect();
            let want_page: Vec<u64> =
                want.iter().skip(offset).take(count).map(|p| p.1).collect();
            prop_assert_eq!(page, want_page);
        }
    }
}
