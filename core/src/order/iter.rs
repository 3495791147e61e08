//! The deadline index's reads: cursors, counts, ordered iteration over
//! windows of deadlines, defrag walks, heap accounting and the invariant
//! check.

use super::leaf::*;
use super::*;

impl<const CHUNK: usize> DeadlineIndex<CHUNK> {
    /// The smallest pair. O(1).
    pub fn first(&self) -> Option<Key> {
        self.chunks.front().map(|c| c.first)
    }

    /// The end cursor.
    pub(super) fn end(&self) -> Cursor {
        Cursor {
            c: self.chunks.len(),
            l: 0,
            p: 0,
        }
    }

    /// The cursor at the first pair not below `key`.
    pub(super) fn seek(&self, key: Key) -> Cursor {
        if self.chunks.is_empty() {
            return self.end();
        }
        let (c, l) = self.locate(key);
        let chunk = &self.chunks[c];
        let p = chunk.leaves[l].rank(key, self.cold());
        if p < chunk.leaves[l].len() {
            Cursor { c, l, p }
        } else if l + 1 < chunk.leaves.len() {
            Cursor { c, l: l + 1, p: 0 }
        } else {
            Cursor {
                c: c + 1,
                l: 0,
                p: 0,
            }
        }
    }

    /// The cursor just past the last pair whose deadline is at most `hi`.
    pub(super) fn seek_after(&self, hi: u64) -> Cursor {
        match hi.checked_add(1) {
            Some(next) => self.seek((next, 0)),
            None => self.end(),
        }
    }

    /// Live pairs of chunk `at.c` before `at` (0 at the end), less the
    /// pending pairs of its leaves before `at.l` (those of leaf `at.l` are
    /// asked of `live` while any are pending).
    pub(super) fn count_in_chunk(&self, at: Cursor, live: &impl Fn(Key) -> bool) -> usize {
        let pending = !self.pending.is_empty();
        self.chunks.get(at.c).map_or(0, |chunk| {
            chunk.count_before(at.l, at.p, live, pending) - self.pending_in_chunk_before(at)
        })
    }

    /// Pending pairs in chunk `at.c` before its leaf `at.l`.
    fn pending_in_chunk_before(&self, at: Cursor) -> usize {
        self.chunks.get(at.c).map_or(0, |chunk| {
            self.pending_in(Some(chunk.first), chunk.leaves.get(at.l).map(Leaf::first))
        })
    }

    /// Pending pairs in chunks `a..b`.
    fn pending_in_chunks(&self, a: usize, b: usize) -> usize {
        match self.chunks.get(a) {
            Some(chunk) if a < b => {
                self.pending_in(Some(chunk.first), self.chunks.get(b).map(|c| c.first))
            }
            _ => 0,
        }
    }

    /// Pending pairs from `lo` (included) to `hi` (excluded), each bound
    /// open when `None`: a scan of the notes, none when there are none.
    fn pending_in(&self, lo: Option<Key>, hi: Option<Key>) -> usize {
        self.pending
            .iter()
            .filter(|&&k| lo.is_none_or(|lo| lo <= k) && hi.is_none_or(|hi| k < hi))
            .count()
    }

    /// How many live pairs are below `key`. O(log n + chunks before it +
    /// leaves of its chunk), plus a call of `live` for each pair before
    /// `key` in its leaf if that leaf holds stale pairs.
    pub fn count_below(&self, key: Key, live: &impl Fn(Key) -> bool) -> usize {
        let at = self.seek(key);
        self.chunks
            .range(..at.c)
            .map(Chunk::live_len)
            .sum::<usize>()
            - self.pending_in_chunks(0, at.c)
            + self.count_in_chunk(at, live)
    }

    /// The pairs from cursor `a` up to cursor `b` (excluded), in order;
    /// reversible.
    pub(super) fn range(&self, a: Cursor, b: Cursor) -> impl DoubleEndedIterator<Item = Key> + '_ {
        // Chunk `b.c` and leaf `b.l` are included only if some of their
        // pairs are.
        let last_chunk = if b.l == 0 && b.p == 0 { b.c } else { b.c + 1 };
        (a.c..last_chunk.max(a.c)).flat_map(move |c| {
            let chunk = &self.chunks[c];
            let from = if c == a.c { a.l } else { 0 };
            let to = if c == b.c {
                b.l + usize::from(b.p > 0)
            } else {
                chunk.leaves.len()
            };
            (from..to.max(from)).flat_map(move |l| {
                let leaf = &chunk.leaves[l];
                let from = if (c, l) == (a.c, a.l) { a.p } else { 0 };
                let to = if (c, l) == (b.c, b.l) {
                    b.p
                } else {
                    leaf.len()
                };
                (from..to.max(from)).map(move |p| leaf.key(p))
            })
        })
    }

    /// The live pairs not below `key`, in order; reversible.
    pub fn iter_from<'a>(
        &'a self,
        key: Key,
        live: impl Fn(Key) -> bool + 'a,
    ) -> impl DoubleEndedIterator<Item = Key> + 'a {
        self.range(self.seek(key), self.end())
            .filter(move |&k| live(k))
    }

    /// The live pairs whose deadline lies in `lo..=hi`, in order;
    /// reversible, so either end starts in O(log n). Empty when `lo > hi`.
    pub fn between<'a>(
        &'a self,
        lo: u64,
        hi: u64,
        live: impl Fn(Key) -> bool + 'a,
    ) -> impl DoubleEndedIterator<Item = Key> + 'a {
        let a = self.seek((lo, 0));
        let b = if lo <= hi { self.seek_after(hi) } else { a };
        self.range(a, b).filter(move |&k| live(k))
    }

    /// How many live pairs have a deadline in `lo..=hi`: 0 when `lo > hi`.
    /// O(log n + min(k, K - k) + chunk size) for `k` of the `K` chunks
    /// spanned by the window: it sums the chunk lengths inside the window,
    /// or subtracts the ones outside it, whichever are fewer; plus a call
    /// of `live` for each pair of the two leaves at the window's ends that
    /// precedes it, if that leaf holds stale pairs.
    pub fn count_between(&self, lo: u64, hi: u64, live: &impl Fn(Key) -> bool) -> usize {
        if lo > hi {
            return 0;
        }
        let a = self.seek((lo, 0));
        let b = self.seek_after(hi);
        let inside = b.c - a.c;
        let whole = if inside <= self.chunks.len() - inside {
            self.chunks
                .range(a.c..b.c)
                .map(Chunk::live_len)
                .sum::<usize>()
                - self.pending_in_chunks(a.c, b.c)
        } else {
            let outside = self.chunks.range(..a.c).map(Chunk::live_len).sum::<usize>()
                + self.chunks.range(b.c..).map(Chunk::live_len).sum::<usize>()
                - self.pending_in_chunks(0, a.c)
                - self.pending_in_chunks(b.c, self.chunks.len());
            self.len() - outside
        };
        // Live pairs before `b` less live pairs before `a`.
        whole + self.count_in_chunk(b, live) - self.count_in_chunk(a, live)
    }

    /// Every live pair, in order.
    pub fn iter<'a>(
        &'a self,
        live: impl Fn(Key) -> bool + 'a,
    ) -> impl DoubleEndedIterator<Item = Key> + 'a {
        self.range(Cursor { c: 0, l: 0, p: 0 }, self.end())
            .filter(move |&k| live(k))
    }

    /// Chunks of leaves: the steps of a relocation walk
    /// ([`DeadlineIndex::relocate_chunk`]).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Hands the deque of chunks to `r` (active defrag).
    pub fn relocate_books<R: Relocate>(&mut self, r: &mut R) {
        relocate::deque(&mut self.chunks, r);
        r.vec(&mut self.pending);
    }

    /// Hands chunk `c`'s deque of leaves, then each leaf's records, to `r`;
    /// nothing past the last chunk.
    pub fn relocate_chunk<R: Relocate>(&mut self, c: usize, r: &mut R) {
        if let Some(chunk) = self.chunks.get_mut(c) {
            relocate::deque(&mut chunk.leaves, r);
            for leaf in chunk.leaves.iter_mut() {
                r.slice(&mut leaf.recs);
            }
        }
    }

    /// Heap bytes held, as jemalloc rounds them. O(1).
    pub fn heap_bytes(&self) -> usize {
        crate::member::allocation_size(self.chunks.capacity() * std::mem::size_of::<Chunk>())
            + crate::member::allocation_size(self.pending.capacity() * std::mem::size_of::<Key>())
            + self.chunk_heap
    }

    /// Leaves in the index.
    #[cfg(test)]
    pub(super) fn leaf_count(&self) -> usize {
        self.chunks.iter().map(|c| c.leaves.len()).sum()
    }

    /// Panics if an invariant does not hold.
    pub fn check_invariants(&self, live: &impl Fn(Key) -> bool) {
        let (mut count, mut stale, mut pending_held) = (0, 0, 0);
        let mut prev: Option<Key> = None;
        for chunk in &self.chunks {
            assert!(!chunk.leaves.is_empty(), "no empty chunk");
            assert!(chunk.leaves.len() <= CHUNK, "chunk within its capacity");
            assert_eq!(
                chunk.first,
                chunk.leaves[0].first(),
                "chunk's first pair cached"
            );
            let (mut in_chunk, mut stale_in_chunk) = (0, 0);
            for n in &chunk.leaves {
                assert!(n.len() > 0, "no empty leaf");
                assert_eq!(n.first(), n.key(0), "first pair cached");
                assert!(n.capacity() <= LEAF_CAP, "records within a leaf's size");
                assert!(
                    n.start() + n.len() <= n.capacity(),
                    "pairs within the records"
                );
                if let Some((lo, hi)) = n.finite_span(0, n.len()) {
                    assert!(
                        n.base <= lo && hi - n.base < u64::from(FAR),
                        "finite deadlines within the base's reach"
                    );
                }
                let mut stale_in_leaf = 0;
                for p in 0..n.len() {
                    let k = n.key(p);
                    assert!(prev.is_none_or(|q| q < k), "strictly increasing");
                    prev = Some(k);
                    in_chunk += 1;
                    if self.pending.contains(&k) {
                        assert!(!live(k), "a pending pair is stale");
                        pending_held += 1;
                    } else {
                        stale_in_leaf += usize::from(!live(k));
                    }
                }
                assert_eq!(
                    stale_in_leaf,
                    usize::from(n.stale),
                    "leaf counts its stale pairs"
                );
                stale_in_chunk += stale_in_leaf;
            }
            assert_eq!(in_chunk, chunk.len, "chunk len counts its pairs");
            assert_eq!(stale_in_chunk, chunk.stale, "chunk counts its stale pairs");
            count += in_chunk;
            stale += stale_in_chunk;
        }
        assert_eq!(
            pending_held,
            self.pending.len(),
            "every pending pair held, once"
        );
        assert_eq!(stale + pending_held, self.stale, "stale pairs counted");
        assert!(self.first().is_none_or(live), "the first pair is live");
        assert_eq!(
            self.chunks.iter().map(Chunk::heap_bytes).sum::<usize>(),
            self.chunk_heap,
            "chunk heap bytes summed"
        );
        assert_eq!(count, self.len, "len counts pairs");
    }
}
