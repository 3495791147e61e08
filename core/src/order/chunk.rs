//! A chunk of the deadline index: the headers of a stretch of leaves, with
//! their first pair, pair count and stale count kept so that locating a
//! chunk and counting past it never touch its leaves.

use super::search::{packed, rank_between, rank_by};
use super::*;

/// Leaf headers per chunk, at most: a split or merge shifts at most this
/// many 40-byte headers (10 KB), and a full chunk's deque, grown by
/// doubling, fills 256 headers exactly (jemalloc's 10240-byte class). At
/// 10M members with random deadlines that is about 510 chunks, 32 KB of
/// chunk headers: few enough that the search for a pair's chunk finds them
/// in cache.
pub(super) const CHUNK_CAP: usize = 255;

/// Leaf headers kept together: the leaves of one stretch of the index, the
/// first pair of the first one and the pairs they hold, so that locating a
/// chunk and counting past it never touch its leaves.
#[derive(Clone)]
pub(super) struct Chunk {
    pub(super) leaves: VecDeque<Leaf>,
    pub(super) first: Key,
    pub(super) len: usize,
    /// The leaves' stale pairs, summed.
    pub(super) stale: usize,
}

impl Chunk {
    pub(super) fn new(leaves: VecDeque<Leaf>) -> Chunk {
        let mut chunk = Chunk {
            len: leaves.iter().map(Leaf::len).sum(),
            stale: leaves.iter().map(|l| usize::from(l.stale)).sum(),
            first: (0, 0),
            leaves,
        };
        chunk.refresh_first();
        chunk
    }

    /// Copies the first leaf's first pair after the front changed.
    pub(super) fn refresh_first(&mut self) {
        if let Some(leaf) = self.leaves.front() {
            self.first = leaf.first();
        }
    }

    /// The leaf that would hold `key`: the last one whose first pair is not
    /// above it (the first one if none). `end`, if known, is a pair above
    /// all of the chunk's (the next chunk's first): the search then reads
    /// no leaf header but those around its guess.
    pub(super) fn locate(&self, key: Key, end: Option<Key>) -> usize {
        pub(super) fn rank(
            n: usize,
            at: impl Fn(usize) -> u128,
            t: u128,
            first: u128,
            end: Option<u128>,
        ) -> usize {
            match end {
                Some(end) => rank_between(n, at, t, first, end),
                None => rank_by(n, at, t),
            }
        }
        let t = packed(key) + 1;
        let (n, first, end) = (self.leaves.len(), packed(self.first), end.map(packed));
        // Indexing a slice is cheaper than a deque, which wraps around;
        // the deque is usually in one piece.
        let rank = match self.leaves.as_slices() {
            (leaves, []) => rank(n, |i| packed(leaves[i].first()), t, first, end),
            _ => rank(n, |i| packed(self.leaves[i].first()), t, first, end),
        };
        rank.saturating_sub(1)
    }

    /// Heap bytes of the headers and the leaves' records.
    pub(super) fn heap_bytes(&self) -> usize {
        self.deque_bytes() + self.leaves.iter().map(Leaf::heap_bytes).sum::<usize>()
    }

    /// Heap bytes of the headers.
    pub(super) fn deque_bytes(&self) -> usize {
        crate::member::allocation_size(self.leaves.capacity() * std::mem::size_of::<Leaf>())
    }

    /// Live pairs in the leaves before leaf `l`, plus those among the
    /// first `p` of leaf `l` (asked of `live` only if that leaf holds
    /// stale pairs, or with `ask`: the index holds pending pairs, which no
    /// leaf counts). Pending pairs before leaf `l` count as live here: the
    /// index subtracts them.
    pub(super) fn count_before(
        &self,
        l: usize,
        p: usize,
        live: &impl Fn(Key) -> bool,
        ask: bool,
    ) -> usize {
        let whole = self
            .leaves
            .range(..l)
            .map(|leaf| leaf.len() - usize::from(leaf.stale))
            .sum::<usize>();
        let part = match self.leaves.get(l) {
            Some(leaf) if ask || leaf.stale > 0 => (0..p).filter(|&i| live(leaf.key(i))).count(),
            _ => p,
        };
        whole + part
    }

    /// Live pairs.
    pub(super) fn live_len(&self) -> usize {
        self.len - self.stale
    }
}
