//! Deadline windows: the `min max` bounds of `XSET.MEMBERS ... BYDEADLINE`
//! and `XSET.COUNT`, written as `ZRANGEBYSCORE` writes scores (`(` for an
//! exclusive bound, `-inf`, `+inf`) but in integer Unix milliseconds, turned
//! into one inclusive range of stored deadlines.
//!
//! A member without a deadline ([`NO_DEADLINE`], `u64::MAX`) sits at `+inf`:
//! only a window whose upper bound is an inclusive `+inf` holds it. Every
//! finite bound is a signed 64-bit integer, so it lies below `+inf`; a
//! negative one lies below every deadline. A leaf: it imports only the
//! deadline constants.
//!
//! Invariant: a non-empty [`Window`] has `lo <= hi`; every empty window is
//! the one value [`Window::EMPTY`].

use super::deadline::NO_DEADLINE;

/// Where a bound sits on the deadline axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundValue {
    /// `-inf`: below every deadline.
    NegInf,
    /// A Unix time in milliseconds (negative ones are below every deadline).
    Ms(i64),
    /// `+inf`: where members without a deadline sit.
    PosInf,
}

/// One end of a window as the user wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Where it sits.
    pub value: BoundValue,
    /// Written with `(`: the bound itself is outside the window.
    pub exclusive: bool,
}

impl Bound {
    /// `-inf`, inclusive.
    pub const NEG_INF: Bound = Bound::inclusive(BoundValue::NegInf);
    /// `+inf`, inclusive.
    pub const POS_INF: Bound = Bound::inclusive(BoundValue::PosInf);

    /// A bound that includes `value`.
    pub const fn inclusive(value: BoundValue) -> Bound {
        Bound {
            value,
            exclusive: false,
        }
    }

    /// A bound that excludes `value`.
    pub const fn exclusive(value: BoundValue) -> Bound {
        Bound {
            value,
            exclusive: true,
        }
    }

    /// The smallest deadline at or above this lower bound; `None` when no
    /// deadline is (the bound is an exclusive `+inf`).
    fn lowest(self) -> Option<u64> {
        match (self.value, self.exclusive) {
            (BoundValue::NegInf, _) => Some(0),
            (BoundValue::Ms(v), false) => Some(v.max(0) as u64),
            // v + 1 <= 2^63: still below NO_DEADLINE.
            (BoundValue::Ms(v), true) => Some(if v < 0 { 0 } else { v as u64 + 1 }),
            (BoundValue::PosInf, false) => Some(NO_DEADLINE),
            (BoundValue::PosInf, true) => None,
        }
    }

    /// The largest deadline at or below this upper bound; `None` when no
    /// deadline is.
    fn highest(self) -> Option<u64> {
        match (self.value, self.exclusive) {
            (BoundValue::NegInf, _) => None,
            (BoundValue::Ms(v), false) => u64::try_from(v).ok(),
            (BoundValue::Ms(v), true) => u64::try_from(v).ok()?.checked_sub(1),
            (BoundValue::PosInf, false) => Some(NO_DEADLINE),
            (BoundValue::PosInf, true) => Some(NO_DEADLINE - 1),
        }
    }
}

/// The stored deadlines `lo..=hi` a window selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    lo: u64,
    hi: u64,
}

impl Window {
    /// Every deadline, `-inf +inf`.
    pub const ALL: Window = Window {
        lo: 0,
        hi: NO_DEADLINE,
    };

    /// No deadline at all.
    pub const EMPTY: Window = Window { lo: 1, hi: 0 };

    /// The deadlines between `min` and `max` (each inclusive unless
    /// exclusive); empty when `min` lies above `max`, as in `ZRANGEBYSCORE`.
    pub fn new(min: Bound, max: Bound) -> Window {
        match (min.lowest(), max.highest()) {
            (Some(lo), Some(hi)) if lo <= hi => Window { lo, hi },
            _ => Window::EMPTY,
        }
    }

    /// Whether no deadline lies in the window.
    pub fn is_empty(self) -> bool {
        self == Window::EMPTY
    }

    /// Whether `deadline_ms` lies in the window.
    pub fn contains(self, deadline_ms: u64) -> bool {
        self.lo <= deadline_ms && deadline_ms <= self.hi
    }

    /// The part of the window that live members at `now_ms` can be in:
    /// deadlines after `now_ms` (saturating, so [`NO_DEADLINE`] is always
    /// live, as in [`super::XSet::iter_live`]).
    pub fn live_at(self, now_ms: u64) -> Window {
        let lo = self.lo.max(now_ms.saturating_add(1));
        if self.is_empty() || lo > self.hi {
            Window::EMPTY
        } else {
            Window { lo, hi: self.hi }
        }
    }

    /// The lowest deadline in the window (meaningless when empty).
    pub fn lo(self) -> u64 {
        self.lo
    }

    /// The highest deadline in the window (meaningless when empty).
    pub fn hi(self) -> u64 {
        self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BoundValue::{Ms, NegInf, PosInf};

    fn incl(v: BoundValue) -> Bound {
        Bound::inclusive(v)
    }

    fn excl(v: BoundValue) -> Bound {
        Bound::exclusive(v)
    }

    fn range(w: Window) -> Option<(u64, u64)> {
        (!w.is_empty()).then(|| (w.lo(), w.hi()))
    }

    #[test]
    fn finite_bounds_inclusive_and_exclusive() {
        assert_eq!(
            range(Window::new(incl(Ms(10)), incl(Ms(20)))),
            Some((10, 20))
        );
        assert_eq!(
            range(Window::new(excl(Ms(10)), incl(Ms(20)))),
            Some((11, 20))
        );
        assert_eq!(
            range(Window::new(incl(Ms(10)), excl(Ms(20)))),
            Some((10, 19))
        );
        assert_eq!(
            range(Window::new(excl(Ms(10)), excl(Ms(20)))),
            Some((11, 19))
        );
        assert_eq!(
            range(Window::new(incl(Ms(10)), incl(Ms(10)))),
            Some((10, 10))
        );
        assert_eq!(range(Window::new(excl(Ms(10)), incl(Ms(10)))), None);
        assert_eq!(range(Window::new(incl(Ms(10)), excl(Ms(10)))), None);
        assert_eq!(range(Window::new(excl(Ms(10)), excl(Ms(11)))), None);
        assert_eq!(
            range(Window::new(incl(Ms(20)), incl(Ms(10)))),
            None,
            "min > max"
        );
    }

    #[test]
    fn infinities_and_members_without_a_deadline() {
        assert_eq!(Window::new(Bound::NEG_INF, Bound::POS_INF), Window::ALL);
        assert!(Window::ALL.contains(NO_DEADLINE));
        // An exclusive +inf max keeps every finite deadline, not "never".
        let finite = Window::new(Bound::NEG_INF, excl(PosInf));
        assert!(finite.contains(i64::MAX as u64) && !finite.contains(NO_DEADLINE));
        // A finite max, even the largest, never reaches "never".
        let w = Window::new(incl(Ms(0)), incl(Ms(i64::MAX)));
        assert!(w.contains(i64::MAX as u64) && !w.contains(NO_DEADLINE));
        // +inf as min: only members without a deadline.
        assert_eq!(
            range(Window::new(incl(PosInf), incl(PosInf))),
            Some((NO_DEADLINE, NO_DEADLINE))
        );
        assert_eq!(range(Window::new(excl(PosInf), incl(PosInf))), None);
        assert_eq!(range(Window::new(incl(PosInf), incl(Ms(5)))), None);
        // -inf as max, either way, holds nothing; as min, everything.
        assert_eq!(range(Window::new(Bound::NEG_INF, incl(NegInf))), None);
        assert_eq!(range(Window::new(excl(NegInf), incl(Ms(3)))), Some((0, 3)));
        // The largest exclusive min still lies below "never".
        let top = Window::new(excl(Ms(i64::MAX)), Bound::POS_INF);
        assert_eq!(range(top), Some((1 << 63, NO_DEADLINE)));
    }

    #[test]
    fn negative_bounds_lie_below_every_deadline() {
        assert_eq!(range(Window::new(incl(Ms(-5)), incl(Ms(3)))), Some((0, 3)));
        assert_eq!(range(Window::new(excl(Ms(-1)), incl(Ms(0)))), Some((0, 0)));
        assert_eq!(range(Window::new(incl(Ms(-9)), incl(Ms(-1)))), None);
        assert_eq!(range(Window::new(incl(Ms(i64::MIN)), excl(Ms(0)))), None);
        assert_eq!(
            range(Window::new(incl(Ms(i64::MIN)), excl(Ms(1)))),
            Some((0, 0))
        );
    }

    #[test]
    fn live_part_starts_after_now() {
        let w = Window::new(incl(Ms(10)), incl(Ms(20)));
        assert_eq!(range(w.live_at(5)), Some((10, 20)));
        assert_eq!(range(w.live_at(10)), Some((11, 20)));
        assert_eq!(range(w.live_at(19)), Some((20, 20)));
        assert_eq!(
            range(w.live_at(20)),
            None,
            "a deadline equal to now has passed"
        );
        assert_eq!(range(Window::EMPTY.live_at(0)), None);
        // As everywhere in the core, "never" stays live at any time.
        assert_eq!(
            range(Window::ALL.live_at(u64::MAX)),
            Some((NO_DEADLINE, NO_DEADLINE))
        );
        assert_eq!(range(Window::ALL.live_at(100)), Some((101, NO_DEADLINE)));
    }
}
