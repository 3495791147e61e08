//! Random sampling of live members (`XSET.RANDMEMBER`, `XSET.POP`) and
//! popping them, soonest or at random.
//!
//! The random source is passed in (`rng` yields uniform 64-bit words), so
//! the core stays pure and tests can drive it. Every draw is uniform over
//! the members live at `now_ms`, and no expired member is ever returned:
//! - small sets (at most [`super::Limits::max_small_members`]) index into
//!   their live list;
//! - large sets draw random slab slots and reject vacant or expired ones
//!   (each member owns exactly one slot, so an accepted slot is a uniform
//!   live member); after [`SLOT_TRIES`] rejections in a row, or when a
//!   distinct sample would take more than a third of the set, they fall
//!   back to the live list (O(n)).

use super::large::Large;
use super::{Repr, XSet};
use std::collections::HashSet;

/// Slab slots one draw examines before falling back to the live list: with
/// a quarter of the slab live, a draw falls back about once in 10,000.
const SLOT_TRIES: usize = 32;

/// A uniform index below `n` (which must be positive) from one random word
/// (multiply-shift: the bias is below `n / 2^64`).
fn below(n: usize, rng: &mut impl FnMut() -> u64) -> usize {
    ((u128::from(rng()) * n as u128) >> 64) as usize
}

/// A live member of `large` at a random slot with its slot, or `None` after
/// [`SLOT_TRIES`] vacant or expired slots.
fn random_slot<'a>(
    large: &'a Large,
    now_ms: u64,
    rng: &mut impl FnMut() -> u64,
) -> Option<(usize, (&'a [u8], u64))> {
    let slab = large.slab_len();
    if slab == 0 {
        return None;
    }
    (0..SLOT_TRIES).find_map(|_| {
        let slot = below(slab, rng);
        large
            .at_slot(slot)
            .filter(|&(_, d)| d > now_ms)
            .map(|found| (slot, found))
    })
}

/// The endless independent draws of [`XSet::draws`].
pub struct Draws<'a, R> {
    set: &'a XSet,
    now_ms: u64,
    rng: R,
    /// The live list, once slots stopped giving live members (or the set is
    /// small): every later draw is from it.
    live: Option<Vec<(&'a [u8], u64)>>,
}

impl<'a, R: FnMut() -> u64> Iterator for Draws<'a, R> {
    type Item = (&'a [u8], u64);

    fn next(&mut self) -> Option<(&'a [u8], u64)> {
        if self.live.is_none()
            && let Repr::Large(large) = &self.set.repr
            && let Some((_, found)) = random_slot(large, self.now_ms, &mut self.rng)
        {
            return Some(found);
        }
        let live = self
            .live
            .get_or_insert_with(|| self.set.live_list(self.now_ms));
        (!live.is_empty()).then(|| live[below(live.len(), &mut self.rng)])
    }
}

impl XSet {
    fn live_list(&self, now_ms: u64) -> Vec<(&[u8], u64)> {
        self.iter_live(now_ms, false).collect()
    }

    /// One member live at `now_ms`, uniformly at random, with its deadline;
    /// `None` when none is live. O(1) expected in a large set (O(n) on the
    /// rare fallback), O(n) in a small one.
    pub fn random_live(&self, now_ms: u64, rng: &mut impl FnMut() -> u64) -> Option<(&[u8], u64)> {
        if let Repr::Large(large) = &self.repr
            && let Some((_, found)) = random_slot(large, now_ms, rng)
        {
            return Some(found);
        }
        let live = self.live_list(now_ms);
        (!live.is_empty()).then(|| live[below(live.len(), rng)])
    }

    /// Exactly `count` members live at `now_ms` drawn independently (so
    /// repeats may occur), with their deadlines; empty when none is live
    /// (`SRANDMEMBER` with a negative count). O(count) expected in a large
    /// set, O(n + count) in a small one or after a fallback.
    pub fn sample_with_repeats(
        &self,
        now_ms: u64,
        count: usize,
        rng: &mut impl FnMut() -> u64,
    ) -> Vec<(&[u8], u64)> {
        self.draws(now_ms, rng).take(count).collect()
    }

    /// Members live at `now_ms` drawn independently and uniformly (so
    /// repeats may occur), with their deadlines, one per `next`: endless
    /// once one is drawn, and nothing when none is live. A reply can be
    /// written as the draws come, never holding them all. Each draw is O(1)
    /// expected in a large set; a small set, or a large one after
    /// [`SLOT_TRIES`] vacant or expired slots in a row, reads its live list
    /// once (O(n)) and draws from it from then on.
    pub fn draws<R: FnMut() -> u64>(&self, now_ms: u64, rng: R) -> Draws<'_, R> {
        Draws {
            set: self,
            now_ms,
            rng,
            live: None,
        }
    }

    /// Up to `count` distinct members live at `now_ms`, uniformly at random,
    /// with their deadlines: all of them (in deadline order) when `count` is
    /// at least the live count (`SRANDMEMBER` with a positive count).
    /// O(count) expected in a large set when `count` is at most a third of
    /// it; otherwise O(n).
    pub fn sample_distinct(
        &self,
        now_ms: u64,
        count: usize,
        rng: &mut impl FnMut() -> u64,
    ) -> Vec<(&[u8], u64)> {
        if count == 0 {
            return Vec::new();
        }
        let live_len = self.live_len(now_ms);
        if count >= live_len {
            return self.live_list(now_ms);
        }
        if let Repr::Large(large) = &self.repr
            && count <= live_len / 3
        {
            // Sparse: draw slots, skipping ones already taken.
            let mut taken = HashSet::with_capacity(count);
            let mut out = Vec::with_capacity(count);
            while out.len() < count {
                let Some((slot, found)) = random_slot(large, now_ms, rng) else {
                    break;
                };
                if taken.insert(slot) {
                    out.push(found);
                }
            }
            if out.len() == count {
                return out;
            }
        }
        // Dense (or a fallback): a partial Fisher-Yates shuffle of the live
        // list.
        let mut live = self.live_list(now_ms);
        for i in 0..count {
            let j = i + below(live.len() - i, rng);
            live.swap(i, j);
        }
        live.truncate(count);
        live
    }

    /// Removes up to `count` distinct members live at `now_ms`, chosen
    /// uniformly at random, and returns them with their deadlines (all live
    /// members when `count` is at least their number). Expired members are
    /// never chosen. O(k log n) for k members, plus [`XSet::sample_distinct`].
    pub fn pop_random(
        &mut self,
        now_ms: u64,
        count: usize,
        rng: &mut impl FnMut() -> u64,
    ) -> Vec<(Vec<u8>, u64)> {
        let chosen: Vec<(Vec<u8>, u64)> = self
            .sample_distinct(now_ms, count, rng)
            .into_iter()
            .map(|(m, d)| (m.to_vec(), d))
            .collect();
        for (m, _) in &chosen {
            self.remove(m);
        }
        chosen
    }

    /// Removes the `count` members live at `now_ms` that expire soonest
    /// (members without a deadline last) and returns them in that order,
    /// with their deadlines (`ZPOPMIN`). Expired members are skipped, not
    /// removed. O(k log n) for k members.
    pub fn pop_soonest_live(&mut self, now_ms: u64, count: usize) -> Vec<(Vec<u8>, u64)> {
        let chosen: Vec<(Vec<u8>, u64)> = self
            .iter_live(now_ms, false)
            .take(count)
            .map(|(m, d)| (m.to_vec(), d))
            .collect();
        for (m, _) in &chosen {
            self.remove(m);
        }
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compare, Limits, NO_DEADLINE, Presence};
    use std::collections::HashMap;

    /// A deterministic random source.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut g = crate::SplitMix64(seed);
        move || g.next_u64()
    }

    /// A set of `live` members (`m0`, `m1`, ...) live until 1000, and
    /// `expired` members (`x0`, ...) that expired at 10; `small` picks the
    /// encoding.
    fn set(live: usize, expired: usize, small: bool) -> XSet {
        let limits = Limits {
            max_small_members: if small { 1024 } else { 0 },
            ..Limits::default()
        };
        let mut s = XSet::with_limits(limits);
        for i in 0..expired {
            let m = format!("x{i}");
            s.add(m.as_bytes(), 10, Presence::Any, Compare::Any, 0);
        }
        for i in 0..live {
            let m = format!("m{i}");
            let deadline = if i % 5 == 0 { NO_DEADLINE } else { 1000 };
            s.add(m.as_bytes(), deadline, Presence::Any, Compare::Any, 0);
        }
        assert!(s.is_empty() || s.is_small() == small);
        s.check_invariants();
        s
    }

    const NOW: u64 = 100;

    fn all_live(found: &[(&[u8], u64)]) -> bool {
        found.iter().all(|&(m, d)| m.starts_with(b"m") && d > NOW)
    }

    #[test]
    fn no_draw_returns_an_expired_member() {
        for small in [true, false] {
            for (live, expired) in [(0, 0), (0, 50), (1, 200), (7, 300), (40, 10)] {
                let s = set(live, expired, small);
                let mut r = rng(live as u64 * 31 + expired as u64);
                for _ in 0..50 {
                    let one = s.random_live(NOW, &mut r);
                    assert_eq!(one.is_some(), live > 0);
                    assert!(all_live(&one.into_iter().collect::<Vec<_>>()));
                    let rep = s.sample_with_repeats(NOW, 9, &mut r);
                    assert_eq!(rep.len(), if live > 0 { 9 } else { 0 });
                    assert!(all_live(&rep));
                    let dis = s.sample_distinct(NOW, 5, &mut r);
                    assert_eq!(dis.len(), live.min(5));
                    assert!(all_live(&dis));
                }
            }
        }
    }

    #[test]
    fn distinct_samples_are_distinct_and_cover_everything_when_asked() {
        for small in [true, false] {
            for live in [1, 2, 10, 100, 300] {
                let s = set(live, live / 2, small);
                let mut r = rng(live as u64);
                for count in [
                    1,
                    2,
                    live / 3,
                    live / 2,
                    live - 1,
                    live,
                    live + 1,
                    10 * live,
                ] {
                    let got = s.sample_distinct(NOW, count, &mut r);
                    assert_eq!(got.len(), count.min(live), "count {count} of {live}");
                    let unique: HashSet<&[u8]> = got.iter().map(|&(m, _)| m).collect();
                    assert_eq!(unique.len(), got.len(), "repeats in a distinct sample");
                    assert!(all_live(&got));
                    for &(m, d) in &got {
                        assert_eq!(s.deadline_of(m), Some(d));
                    }
                }
            }
        }
    }

    #[test]
    fn draws_are_roughly_uniform() {
        // 10 live members among 30 expired ones; 20,000 draws of each kind.
        // Each member expects 2,000 (4,000 for pairs); a loose chi-square
        // bound (the 99.99th percentile for 9 degrees of freedom is ~33)
        // catches a biased draw without flaking.
        for small in [true, false] {
            let s = set(10, 30, small);
            let mut r = rng(7);
            let mut singles: HashMap<Vec<u8>, f64> = HashMap::new();
            let mut pairs: HashMap<Vec<u8>, f64> = HashMap::new();
            let mut repeats: HashMap<Vec<u8>, f64> = HashMap::new();
            for _ in 0..20_000 {
                let (m, _) = s.random_live(NOW, &mut r).expect("live");
                *singles.entry(m.to_vec()).or_default() += 1.0;
                for (m, _) in s.sample_distinct(NOW, 2, &mut r) {
                    *pairs.entry(m.to_vec()).or_default() += 1.0;
                }
                for (m, _) in s.sample_with_repeats(NOW, 1, &mut r) {
                    *repeats.entry(m.to_vec()).or_default() += 1.0;
                }
            }
            for (counts, expected) in [(singles, 2000.0), (pairs, 4000.0), (repeats, 2000.0)] {
                assert_eq!(counts.len(), 10, "every live member drawn");
                let chi2: f64 = counts
                    .values()
                    .map(|&o| (o - expected) * (o - expected) / expected)
                    .sum();
                assert!(chi2 < 40.0, "chi-square {chi2} (small: {small})");
            }
        }
    }

    #[test]
    fn a_slab_of_mostly_expired_members_falls_back_to_the_live_list() {
        let s = set(3, 5000, false);
        let mut r = rng(3);
        let mut seen = HashSet::new();
        for _ in 0..200 {
            let (m, _) = s.random_live(NOW, &mut r).expect("live");
            seen.insert(m.to_vec());
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(s.sample_with_repeats(NOW, 100, &mut r).len(), 100);
        assert_eq!(s.sample_distinct(NOW, 1, &mut r).len(), 1);
    }

    #[test]
    fn pops_remove_what_they_return_and_only_live_members() {
        for small in [true, false] {
            let mut s = set(20, 10, small);
            let mut r = rng(11);
            let popped = s.pop_random(NOW, 6, &mut r);
            assert_eq!(popped.len(), 6);
            for (m, _) in &popped {
                assert!(m.starts_with(b"m"));
                assert_eq!(s.deadline_of(m), None);
            }
            s.check_invariants();
            assert_eq!(s.live_len(NOW), 14);
            assert_eq!(s.len(), 24, "expired members stay for the reclaimer");
            // Soonest first, members without a deadline last.
            let soonest = s.pop_soonest_live(NOW, 100);
            assert_eq!(soonest.len(), 14);
            assert!(soonest.windows(2).all(|w| w[0].1 <= w[1].1));
            assert!(soonest.iter().all(|(_, d)| *d > NOW));
            s.check_invariants();
            assert_eq!(s.live_len(NOW), 0);
            assert_eq!(s.len(), 10);
            assert!(s.pop_random(NOW, 3, &mut r).is_empty());
        }
    }
}
