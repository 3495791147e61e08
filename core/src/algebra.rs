//! Set algebra over xsets, plain sets and missing keys, with each result
//! member's deadline aggregated from its inputs:
//! - intersection: a member of every input, live until the **earliest** of
//!   its deadlines (it leaves the intersection when it leaves any input);
//! - union: a member of any input, live until the **latest** (it stays in
//!   the union while it is in some input); [`NO_DEADLINE`] is the latest of
//!   all, so a member that never expires somewhere never expires in the
//!   union;
//! - difference: a member of the first input that is in no other, with its
//!   deadline in the first.
//!
//! Only members live at `now_ms` take part: an expired member is in no
//! input. A plain set's members never expire; a missing key is empty.
//! Results come in no particular order; each member appears once.

use super::{Limits, NO_DEADLINE, XSet};
use std::collections::HashSet;
use std::collections::hash_map::{Entry, HashMap};

/// The members of a plain (native Redis) set, copied out of it.
pub type PlainSet = HashSet<Vec<u8>>;

/// One operand of an algebra command.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// An xset: its members live at `now_ms`, with their deadlines.
    Xset(&'a XSet),
    /// A plain set: members without a deadline.
    Plain(&'a PlainSet),
    /// A missing key: no members.
    Missing,
}

impl<'a> Input<'a> {
    /// How many members it stores (expired ones included): a cheap bound
    /// used to pick the smallest input. O(1).
    fn stored_len(self) -> usize {
        match self {
            Input::Xset(s) => s.len(),
            Input::Plain(p) => p.len(),
            Input::Missing => 0,
        }
    }

    /// `member`'s deadline if it is live in this input at `now_ms`. O(1)
    /// (O(n) in a small xset, whose n is bounded).
    fn deadline_of(self, member: &[u8], now_ms: u64) -> Option<u64> {
        match self {
            Input::Xset(s) => s.live_deadline_of(member, now_ms),
            Input::Plain(p) => p.contains(member).then_some(NO_DEADLINE),
            Input::Missing => None,
        }
    }

    /// Its live members with their deadlines, each once.
    fn members(self, now_ms: u64) -> Box<dyn Iterator<Item = (&'a [u8], u64)> + 'a> {
        match self {
            Input::Xset(s) => Box::new(s.iter_live(now_ms, false)),
            Input::Plain(p) => Box::new(p.iter().map(|m| (m.as_slice(), NO_DEADLINE))),
            Input::Missing => Box::new(std::iter::empty()),
        }
    }
}

/// The members live in every input at `now_ms`, each with the earliest of
/// its deadlines, stopping after `limit` members (`usize::MAX`: all).
/// Empty when `inputs` is. O(m · k) for the smallest input's m members and
/// k inputs.
pub fn inter<'a>(inputs: &[Input<'a>], now_ms: u64, limit: usize) -> Vec<(&'a [u8], u64)> {
    let Some(smallest) = (0..inputs.len()).min_by_key(|&i| inputs[i].stored_len()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if limit == 0 {
        return out;
    }
    'members: for (member, deadline) in inputs[smallest].members(now_ms) {
        let mut earliest = deadline;
        for (i, input) in inputs.iter().enumerate() {
            if i == smallest {
                continue;
            }
            match input.deadline_of(member, now_ms) {
                Some(d) => earliest = earliest.min(d),
                None => continue 'members,
            }
        }
        out.push((member, earliest));
        if out.len() >= limit {
            break;
        }
    }
    out
}

/// The members live in some input at `now_ms`, each with the latest of its
/// deadlines. O(N) for N members over all inputs.
pub fn union<'a>(inputs: &[Input<'a>], now_ms: u64) -> Vec<(&'a [u8], u64)> {
    let mut latest: HashMap<&'a [u8], u64> = HashMap::new();
    for input in inputs {
        for (member, deadline) in input.members(now_ms) {
            match latest.entry(member) {
                Entry::Occupied(mut e) => {
                    let d = e.get_mut();
                    *d = (*d).max(deadline);
                }
                Entry::Vacant(e) => {
                    e.insert(deadline);
                }
            }
        }
    }
    latest.into_iter().collect()
}

/// The members live in the first input at `now_ms` and in no other, with
/// their deadlines in the first. Empty when `inputs` is. O(m · k) for the
/// first input's m members and k inputs.
pub fn diff<'a>(inputs: &[Input<'a>], now_ms: u64) -> Vec<(&'a [u8], u64)> {
    let Some((first, rest)) = inputs.split_first() else {
        return Vec::new();
    };
    first
        .members(now_ms)
        .filter(|(member, _)| rest.iter().all(|i| i.deadline_of(member, now_ms).is_none()))
        .collect()
}

/// A new set (with `limits`) holding `members`, each with its deadline (an
/// algebra result names each member once; one named twice ends with the
/// greater of its deadlines). The members are
/// sorted by deadline first and fed to the set in that order, so a large
/// result is built the way the RDB loader builds one: one hash and no
/// index search a member. O(m log m).
pub fn collect(limits: Limits, mut members: Vec<(&[u8], u64)>) -> XSet {
    members.sort_by_key(|&(_, d)| d);
    let mut set = XSet::with_limits(limits);
    set.reserve(members.len());
    for (member, deadline) in members {
        if !set.insert_absent(member, deadline) {
            set.set(member, deadline);
        }
    }
    set
}

/// Sorts an algebra result the way replies list members: soonest deadline
/// first, members without a deadline last, equal deadlines by their bytes.
/// O(m log m).
pub fn sort_by_deadline(members: &mut [(&[u8], u64)]) {
    members.sort_unstable_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// What a generated operand holds: `None` for a missing key, otherwise
    /// member → deadline (plain sets: all [`NO_DEADLINE`]).
    #[derive(Clone, Debug)]
    enum Spec {
        Missing,
        Plain(Vec<u8>),
        Xset(Vec<(u8, u64)>, bool),
    }

    fn name(m: u8) -> Vec<u8> {
        vec![b'm', m]
    }

    fn spec() -> impl Strategy<Value = Spec> {
        // Deadlines around now = 100: some expired (<= 100), some equal,
        // some never expiring, so aggregation ties and expiry both occur.
        let deadline = prop_oneof![
            4 => 95u64..110,
            1 => Just(NO_DEADLINE),
        ];
        prop_oneof![
            1 => Just(Spec::Missing),
            2 => prop::collection::vec(0u8..24, 0..20).prop_map(Spec::Plain),
            5 => (prop::collection::vec((0u8..24, deadline), 0..30), any::<bool>())
                .prop_map(|(v, large)| Spec::Xset(v, large)),
        ]
    }

    /// The built operands, and the model of each: member → deadline of the
    /// members live at `NOW`.
    struct Built {
        xsets: Vec<Option<XSet>>,
        plains: Vec<Option<PlainSet>>,
        models: Vec<BTreeMap<Vec<u8>, u64>>,
    }

    const NOW: u64 = 100;

    fn build(specs: &[Spec]) -> Built {
        let mut b = Built {
            xsets: Vec::new(),
            plains: Vec::new(),
            models: Vec::new(),
        };
        for s in specs {
            let mut model = BTreeMap::new();
            let (mut x, mut p) = (None, None);
            match s {
                Spec::Missing => {}
                Spec::Plain(v) => {
                    let set: PlainSet = v.iter().map(|&m| name(m)).collect();
                    model.extend(set.iter().map(|m| (m.clone(), NO_DEADLINE)));
                    p = Some(set);
                }
                Spec::Xset(v, large) => {
                    let limits = Limits {
                        max_small_members: if *large { 2 } else { 128 },
                        ..Limits::default()
                    };
                    let mut set = XSet::with_limits(limits);
                    let mut stored = BTreeMap::new();
                    for &(m, d) in v {
                        set.set(&name(m), d);
                        stored.insert(name(m), d);
                    }
                    set.check_invariants();
                    model.extend(stored.into_iter().filter(|&(_, d)| d > NOW));
                    x = Some(set);
                }
            }
            b.xsets.push(x);
            b.plains.push(p);
            b.models.push(model);
        }
        b
    }

    fn inputs(b: &Built) -> Vec<Input<'_>> {
        b.xsets
            .iter()
            .zip(&b.plains)
            .map(|(x, p)| match (x, p) {
                (Some(x), _) => Input::Xset(x),
                (None, Some(p)) => Input::Plain(p),
                (None, None) => Input::Missing,
            })
            .collect()
    }

    fn sorted(v: Vec<(&[u8], u64)>) -> Vec<(Vec<u8>, u64)> {
        let mut out: Vec<(Vec<u8>, u64)> = v.into_iter().map(|(m, d)| (m.to_vec(), d)).collect();
        out.sort();
        out
    }

    fn model_inter(models: &[BTreeMap<Vec<u8>, u64>]) -> Vec<(Vec<u8>, u64)> {
        let Some((first, rest)) = models.split_first() else {
            return Vec::new();
        };
        first
            .iter()
            .filter_map(|(m, &d)| {
                rest.iter()
                    .try_fold(d, |acc, other| other.get(m).map(|&o| acc.min(o)))
                    .map(|d| (m.clone(), d))
            })
            .collect()
    }

    fn model_union(models: &[BTreeMap<Vec<u8>, u64>]) -> Vec<(Vec<u8>, u64)> {
        let mut all: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
        for model in models {
            for (m, &d) in model {
                let e = all.entry(m.clone()).or_insert(d);
                *e = (*e).max(d);
            }
        }
        all.into_iter().collect()
    }

    fn model_diff(models: &[BTreeMap<Vec<u8>, u64>]) -> Vec<(Vec<u8>, u64)> {
        let Some((first, rest)) = models.split_first() else {
            return Vec::new();
        };
        first
            .iter()
            .filter(|(m, _)| rest.iter().all(|o| !o.contains_key(*m)))
            .map(|(m, &d)| (m.clone(), d))
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Each operation gives exactly the model's members and aggregated
        /// deadlines, whatever the mix of encodings, plain sets and missing
        /// keys; the limited intersection is a subset of the whole one, of
        /// the limit's size. An operand may appear twice (`INTERSTORE a 2 a
        /// b`), and results sort by deadline, then bytes.
        #[test]
        fn algebra_matches_the_model(
            specs in prop::collection::vec(spec(), 1..5),
            limit in 0usize..6,
            twice in any::<bool>(),
        ) {
            let mut specs = specs;
            if twice {
                specs.push(specs[0].clone());
            }
            let b = build(&specs);
            let ins = inputs(&b);
            let mut sorted_union = union(&ins, NOW);
            sort_by_deadline(&mut sorted_union);
            prop_assert!(sorted_union.windows(2).all(|w| (w[0].1, w[0].0) < (w[1].1, w[1].0)));
            let stored = collect(Limits::default(), sorted_union.clone());
            stored.check_invariants();
            prop_assert_eq!(stored.len(), sorted_union.len());
            for &(m, d) in &sorted_union {
                prop_assert_eq!(stored.deadline_of(m), Some(d));
            }
            let whole = inter(&ins, NOW, usize::MAX);
            prop_assert_eq!(sorted(whole.clone()), model_inter(&b.models));
            let limited = inter(&ins, NOW, limit);
            prop_assert_eq!(limited.len(), whole.len().min(limit));
            prop_assert!(limited.iter().all(|x| whole.contains(x)));
            prop_assert_eq!(sorted(union(&ins, NOW)), model_union(&b.models));
            prop_assert_eq!(sorted(diff(&ins, NOW)), model_diff(&b.models));
        }
    }

    #[test]
    fn collect_builds_a_whole_set_from_any_order() {
        let names: Vec<Vec<u8>> = (0..300u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let mut pairs: Vec<(&[u8], u64)> = names
            .iter()
            .enumerate()
            .map(|(i, m)| {
                (
                    m.as_slice(),
                    if i % 7 == 0 {
                        NO_DEADLINE
                    } else {
                        1000 - i as u64
                    },
                )
            })
            .collect();
        pairs.push((names[5].as_slice(), 5000));
        for limits in [
            Limits::default(),
            Limits {
                max_small_members: 1000,
                ..Limits::default()
            },
        ] {
            let set = collect(limits, pairs.clone());
            set.check_invariants();
            assert_eq!(set.len(), 300);
            assert_eq!(set.deadline_of(&names[5]), Some(5000));
            assert_eq!(set.deadline_of(&names[7]), Some(NO_DEADLINE));
            assert_eq!(set.deadline_of(&names[8]), Some(992));
        }
    }

    #[test]
    fn deadlines_aggregate_earliest_latest_first() {
        let mut a = XSet::new();
        a.set(b"x", 300);
        a.set(b"y", NO_DEADLINE);
        a.set(b"gone", 50);
        let mut c = XSet::new();
        c.set(b"x", 200);
        c.set(b"y", 400);
        c.set(b"gone", 500);
        let plain: PlainSet = [b"x".to_vec()].into_iter().collect();
        let ins = [Input::Xset(&a), Input::Xset(&c)];
        let mut got = inter(&ins, 100, usize::MAX);
        sort_by_deadline(&mut got);
        assert_eq!(got, vec![(&b"x"[..], 200), (&b"y"[..], 400)]);
        let mut got = union(&ins, 100);
        sort_by_deadline(&mut got);
        assert_eq!(
            got,
            vec![
                (&b"x"[..], 300),
                (&b"gone"[..], 500),
                (&b"y"[..], NO_DEADLINE)
            ]
        );
        let mut got = diff(&[Input::Xset(&a), Input::Plain(&plain)], 100);
        sort_by_deadline(&mut got);
        assert_eq!(got, vec![(&b"y"[..], NO_DEADLINE)]);
        assert!(inter(&[Input::Xset(&a), Input::Missing], 100, usize::MAX).is_empty());
        assert!(inter(&[], 100, usize::MAX).is_empty());
        assert!(diff(&[], 100).is_empty());
    }
}
