//! The order replies list members in: by deadline, and equal deadlines by
//! their bytes, whatever order the encoding keeps ties in (insertion order
//! in the small encoding, slot order in the large one).
//!
//! [`TiesInByteOrder`] takes members already in deadline order (either
//! direction) and passes them on with each run of equal deadlines in byte
//! order. It holds one run at a time; a run that is already in order
//! (members added in byte order, or one at a time) is only checked, not
//! sorted.

use std::ops::ControlFlow;

/// Passes members on to `out` with each run of equal deadlines in byte
/// order (reversed when `rev`, as the deadlines are). `out` returns
/// [`ControlFlow::Break`] to stop.
pub struct TiesInByteOrder<'a, F: FnMut(&'a [u8], u64) -> ControlFlow<()>> {
    out: F,
    /// The current run of equal deadlines, as it arrived.
    run: Vec<(&'a [u8], u64)>,
    /// Whether `run` is in reply order already.
    sorted: bool,
    rev: bool,
}

impl<'a, F: FnMut(&'a [u8], u64) -> ControlFlow<()>> TiesInByteOrder<'a, F> {
    /// Members pushed must come in deadline order: ascending, or
    /// descending when `rev`.
    pub fn new(rev: bool, out: F) -> Self {
        TiesInByteOrder {
            out,
            run: Vec::new(),
            sorted: true,
            rev,
        }
    }

    /// Takes the next member in deadline order.
    #[inline]
    pub fn push(&mut self, member: &'a [u8], deadline_ms: u64) -> ControlFlow<()> {
        match self.run.last() {
            Some(&(last, d)) if d == deadline_ms => {
                self.sorted &= if self.rev {
                    last >= member
                } else {
                    last <= member
                };
            }
            Some(_) => {
                self.flush()?;
            }
            None => {}
        }
        self.run.push((member, deadline_ms));
        ControlFlow::Continue(())
    }

    /// Passes on the run held.
    fn flush(&mut self) -> ControlFlow<()> {
        if !self.sorted {
            if self.rev {
                self.run.sort_unstable_by(|a, b| b.0.cmp(a.0));
            } else {
                self.run.sort_unstable_by(|a, b| a.0.cmp(b.0));
            }
        }
        self.sorted = true;
        let result = self
            .run
            .iter()
            .try_for_each(|&(member, deadline_ms)| (self.out)(member, deadline_ms));
        self.run.clear();
        result
    }

    /// Passes on what is held: call once the last member was pushed.
    pub fn finish(mut self) -> ControlFlow<()> {
        self.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reorder(items: &[(Vec<u8>, u64)], rev: bool, limit: usize) -> Vec<(Vec<u8>, u64)> {
        let mut got = Vec::new();
        let mut ties = TiesInByteOrder::new(rev, |m: &[u8], d| {
            got.push((m.to_vec(), d));
            if got.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if items
            .iter()
            .try_for_each(|(m, d)| ties.push(m, *d))
            .is_continue()
        {
            let _ = ties.finish();
        }
        got
    }

    #[test]
    fn ties_come_in_byte_order_and_rev_reverses_them() {
        let items = vec![
            (b"c".to_vec(), 50),
            (b"zz".to_vec(), 100),
            (b"b".to_vec(), 100),
            (b"a".to_vec(), 100),
            (b"d".to_vec(), 200),
        ];
        let names = |v: Vec<(Vec<u8>, u64)>| v.into_iter().map(|(m, _)| m).collect::<Vec<_>>();
        assert_eq!(
            names(reorder(&items, false, usize::MAX)),
            [&b"c"[..], b"a", b"b", b"zz", b"d"]
        );
        assert_eq!(names(reorder(&items, false, 2)), [&b"c"[..], b"a"]);
        let mut back = items.clone();
        back.reverse();
        assert_eq!(
            names(reorder(&back, true, usize::MAX)),
            [&b"d"[..], b"zz", b"b", b"a", b"c"]
        );
    }

    proptest! {
        /// The result is the input sorted by (deadline, bytes), for any
        /// input in deadline order, forwards and backwards, cut where the
        /// receiver stops.
        #[test]
        fn equals_a_sort_by_deadline_then_bytes(
            mut items in proptest::collection::vec((proptest::collection::vec(0u8..4, 0..3), 0u64..4), 0..40),
            limit in 1usize..50,
        ) {
            items.sort_by_key(|(_, d)| *d);
            let mut want = items.clone();
            want.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
            want.truncate(limit);
            prop_assert_eq!(reorder(&items, false, limit), want);
            let mut back = items.clone();
            back.reverse();
            let mut want = items.clone();
            want.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
            want.reverse();
            want.truncate(limit);
            prop_assert_eq!(reorder(&back, true, limit), want);
        }
    }
}
