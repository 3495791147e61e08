//! Active defrag: the server's allocator may give a value's allocations new
//! homes on less fragmented pages. The core walks its own allocations and
//! hands each one to a [`Relocate`], which the server layer implements with
//! the server's defrag call; the walk itself is safe code and never changes
//! what a set holds, only where its buffers live.
//!
//! A big set is walked in steps (see [`super::XSet::relocate`]): the server
//! may stop a walk between steps and resume it later from a cursor, with
//! writes in between. A step is a stretch of the set's allocations named by
//! its position, so a cursor stays meaningful however the set changed: at
//! worst a resumed walk visits some buffers twice or misses some until the
//! next walk.

use std::collections::VecDeque;

/// Gives allocations new homes; contents, lengths and capacities stay.
pub trait Relocate {
    /// The vector's buffer, if it has one.
    fn vec<T>(&mut self, v: &mut Vec<T>);
    /// The slice's buffer, if it has one.
    fn slice<T>(&mut self, b: &mut Box<[T]>);
    /// The boxed value.
    fn boxed<T>(&mut self, b: &mut Box<T>);
    /// Whether the walk should stop at the end of this step.
    fn should_stop(&mut self) -> bool;
}

/// A deque's buffer: converted to a vector and back, which keeps the
/// buffer (it may rotate the elements within it).
pub fn deque<T, R: Relocate>(d: &mut VecDeque<T>, r: &mut R) {
    if d.capacity() == 0 {
        return;
    }
    let mut v = Vec::from(std::mem::take(d));
    r.vec(&mut v);
    *d = VecDeque::from(v);
}

#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use super::Relocate;

    /// Copies every buffer it is handed into a fresh allocation (the
    /// contents must come out the same) and stops after every `stop_every`
    /// steps.
    #[derive(Default)]
    pub struct Copier {
        pub moved: usize,
        pub steps: usize,
        pub stop_every: usize,
    }

    impl Relocate for Copier {
        fn vec<T>(&mut self, v: &mut Vec<T>) {
            if v.capacity() > 0 {
                let cap = v.capacity();
                let mut fresh = Vec::with_capacity(cap);
                fresh.append(v);
                assert!(fresh.capacity() >= cap);
                *v = fresh;
                self.moved += 1;
            }
        }

        fn slice<T>(&mut self, b: &mut Box<[T]>) {
            if !b.is_empty() {
                let v: Vec<T> = std::mem::take(b).into_vec();
                let mut fresh = Vec::with_capacity(v.len());
                fresh.extend(v);
                *b = fresh.into_boxed_slice();
                self.moved += 1;
            }
        }

        fn boxed<T>(&mut self, _b: &mut Box<T>) {
            self.moved += 1;
        }

        fn should_stop(&mut self) -> bool {
            self.steps += 1;
            self.stop_every > 0 && self.steps.is_multiple_of(self.stop_every)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::Copier;
    use crate::{Compare, Presence, XSet};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn member(i: u32, long: bool) -> Vec<u8> {
        if long {
            format!("a-member-long-enough-for-the-heap:{i}").into_bytes()
        } else {
            format!("m{i}").into_bytes()
        }
    }

    fn contents(s: &XSet) -> BTreeMap<Vec<u8>, u64> {
        s.iter_all().map(|(m, d)| (m.to_vec(), d)).collect()
    }

    proptest! {
        /// A walk stopped every few steps, with adds and removals between
        /// its calls, keeps every member and deadline and every invariant,
        /// and comes to an end.
        #[test]
        fn a_walk_moves_buffers_and_changes_nothing(
            n in 0u32..6000,
            stop_every in 1usize..8,
            writes in proptest::collection::vec((0u32..8000, any::<bool>(), any::<bool>()), 0..200),
        ) {
            let mut s = XSet::new();
            for i in 0..n {
                s.add(&member(i, i % 3 == 0), 1_000 + u64::from(i), Presence::Any, Compare::Any, 0);
            }
            let mut r = Copier { stop_every, ..Copier::default() };
            let mut cursor = 0;
            let mut calls = 0;
            let mut writes = writes.into_iter();
            loop {
                let before = contents(&s);
                let next = s.relocate(&mut r, cursor);
                prop_assert_eq!(&contents(&s), &before);
                s.check_invariants();
                calls += 1;
                prop_assert!(calls < 100_000, "the walk never ends");
                match next {
                    Some(c) => cursor = c,
                    None => break,
                }
                if let Some((i, add, long)) = writes.next() {
                    if add {
                        s.add(&member(i, long), 5_000 + u64::from(i), Presence::Any, Compare::Any, 0);
                    } else {
                        s.remove(&member(i, long));
                    }
                }
            }
            prop_assert!(n == 0 || r.moved > 0);
        }
    }
}
