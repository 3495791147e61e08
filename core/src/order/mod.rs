//! The large encoding's deadline index: every `(deadline, slot)` pair of a
//! set, in order, packed 8 bytes a pair into leaves of [`LEAF_CAP`] pairs.
//!
//! A B-tree of `(u64, u32)` tuples spends 16 bytes a key on padding and
//! around 30 bytes a member once node headers and half-full nodes are
//! counted; this index spends 8 bytes a pair in a full leaf: the slot and
//! the deadline's offset from a base the leaf keeps, 32 bits each. A leaf
//! therefore holds deadlines at most 2^32 - 2 ms (49.7 days) apart, besides
//! `u64::MAX` (no deadline); where neighbouring deadlines are further apart
//! than that, leaves split around them and hold fewer pairs. Leaf headers
//! (base, first pair, start, length, pointer to the records) sit in chunks of up
//! to [`CHUNK_CAP`], each a deque, and the chunks in a deque with their own
//! first pair and pair count. Finding a leaf is two searches over
//! contiguous memory: a binary search of the chunk headers (few, and in
//! cache), then an interpolated one of the chunk's leaf headers (deadlines
//! are spread evenly over time; it runs between the chunk's first pair and
//! the next chunk's, which the first search read, so that it reads only
//! the leaf headers around its guess: in a large index each of those is a
//! cache miss). In a large index, a refresh to a random deadline fetches
//! the new pair's leaf headers while the owner looks its member up
//! ([`DeadlineIndex::prefetch_for`]), and that leaf's records while it
//! locates the old pair. A leaf split or merge shifts at most one chunk's
//! headers, not half of all of them (at 10M members with random TTLs that
//! was a 1.3 MB memmove per split, a tenth of an add's time and a latency
//! spike that grows with the set); and dropping the first leaf or chunk
//! (what expiry does) is O(1). Within a leaf the pairs float in their array, so dropping
//! the first pair is O(1) too.
//!
//! Deadlines mostly arrive in increasing order (`now + ttl`, one run per
//! distinct TTL), so a pair landing after the end of a full leaf starts a new
//! leaf. A pair landing inside a full leaf first moves some of its first
//! pairs to its left neighbour in the chunk, or else some of its last pairs
//! to its right neighbour, if that has room (three quarters of it: filling
//! it up would make the next insert there split it); random deadlines then
//! fill leaves to about 85% (77% with the left neighbour only, 59% with
//! neither). Otherwise the leaf splits: at the
//! insertion point if that is in its upper half (a run that keeps arriving
//! there fills the left leaf instead of leaving half-empty ones behind), in
//! half if not. A removal that leaves a leaf under a quarter full merges it
//! with a neighbour when both fit in one leaf under one base.
//!
//! Invariants (checked by `check_invariants`):
//! 1. pairs are strictly increasing across the whole index;
//! 2. no leaf is empty, each header's first pair is its leaf's first pair,
//!    and the pairs lie within the records;
//! 3. no chunk is empty or holds more than [`CHUNK_CAP`] leaves, and each
//!    chunk's first pair and count are its leaves';
//! 4. `len` is the number of pairs;
//! 5. a leaf's finite deadlines lie in `base..base + 2^32 - 1`;
//! 6. each leaf and chunk counts its stale pairs exactly, but for the
//!    pending ones; the index counts all of them, pending included; every
//!    pending pair is held and stale; and the first pair is live.
//!
//! Stale pairs. A refresh that moves a member's deadline to the end of the
//! index (not before the last leaf's first deadline: the usual refresh,
//! the same TTL from now) leaves the old pair where it is and only counts
//! it stale in its leaf's header ([`DeadlineIndex::retire`]), usually
//! later, with a batch of others (pending pairs, below); other refreshes
//! remove it. The leaf's records, a random access
//! in a large index, are not read. The owner says which pairs are live
//! (`live`, asked about any pair; it answers for the state after the
//! operation that asks, so the owner updates its members first). A leaf
//! drops its stale pairs when they outnumber its live ones, before it
//! splits, spills or rebases, and when it is first in the index, so the
//! first pair is always live and stale pairs hold at most about half the
//! records. Inserting a key that is there, stale, makes it live again.
//! Counts subtract the counted stale pairs of whole leaves and chunks and
//! ask `live` only about the part of a leaf that a window cuts, when that
//! leaf holds stale pairs; iteration skips the pairs `live` denies.
//!
//! Pending pairs. Finding the old pair's leaf is most of what a refresh to
//! the end costs in a large index: the leaf headers around a guess, cache
//! misses each. So such a refresh only notes the old pair as pending
//! (counted in the index's stale pairs, not yet in its leaf's), and the
//! notes are placed in one walk through the index in key order when they
//! reach a 64th of the pairs (at most 4,096), or before any other change
//! to the index: the walk reads the leaf headers in order, as the
//! hardware prefetches them. Until then counts also subtract the pending
//! pairs below where they stop (a scan of the notes), iteration skips them
//! as it skips any stale pair, and the first pair is never pending (the
//! refresh of the first pair places it at once).

use super::relocate::{self, Relocate};
use std::cell::Cell;
use std::collections::VecDeque;

mod chunk;
mod index;
mod iter;
mod leaf;
mod search;
#[cfg(test)]
mod tests;

use chunk::{CHUNK_CAP, Chunk};
use leaf::Leaf;

/// Pairs per leaf: 127 × 8 bytes fit jemalloc's 1024-byte size class.
pub(super) const LEAF_CAP: usize = 127;

/// Past this many pairs (256 KiB of records, a typical L2 cache) the
/// leaves are taken to be out of cache: searches fetch a leaf's lines
/// together first (see [`Leaf::rank`]).
const COLD_ABOVE: usize = 1 << 15;

/// A leaf this short after a removal merges with a neighbour if they fit.
const MERGE_BELOW: usize = LEAF_CAP / 4;

/// A deadline and the slab slot of the member that has it.
pub(super) type Key = (u64, u32);

/// Gives back a deque's room once it holds four times its length (and more
/// than four): down to twice the length, so that a deque that shrinks and
/// grows back by less than half never reallocates. After a mass expiry a
/// chunk of 255 leaves' headers (10 KiB) may be down to a few.
fn fit<T>(deque: &mut VecDeque<T>) {
    if deque.capacity() > 4 && deque.capacity() > 4 * deque.len() {
        deque.shrink_to((2 * deque.len()).max(4));
    }
}

/// A leaf's place: its chunk, and its position in the chunk.
type LeafAt = (usize, usize);

/// A place in the index: chunk, leaf within it, pair within that. A cursor
/// is either at a pair or at the end (`c == chunks.len()`, `l == p == 0`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Cursor {
    c: usize,
    l: usize,
    p: usize,
}

/// An ordered set of `(deadline, slot)` pairs.
#[derive(Clone, Default)]
pub(super) struct DeadlineIndex<const CHUNK: usize = CHUNK_CAP> {
    chunks: VecDeque<Chunk>,
    /// Pairs held, stale ones included.
    len: usize,
    /// Stale pairs held.
    stale: usize,
    /// The chunks' [`Chunk::heap_bytes`], summed as they change, so that
    /// [`DeadlineIndex::heap_bytes`] is O(1).
    chunk_heap: usize,
    /// A deadline and the chunk [`DeadlineIndex::prefetch_for`] found for
    /// it: the refresh that follows locates its new pair from there. It is
    /// checked against the chunk headers before use, so one left behind
    /// costs the usual search, never a wrong answer.
    guessed: Cell<Option<(u64, usize)>>,
    /// Old pairs of refreshes to the end whose leaves have not counted them
    /// stale yet ([`DeadlineIndex::replace`]): counted in `stale` alone,
    /// placed in their leaves in one sorted walk when there are enough of
    /// them or before any other change.
    pending: Vec<Key>,
}

/// Reads `x` for its cache line alone: the load does not hold up the
/// instructions after it, which go on while the line arrives (what a
/// prefetch instruction does, without `unsafe`, which the core forbids).
#[inline(always)]
fn touch<T: Copy>(x: &T) {
    std::hint::black_box(*x);
}
