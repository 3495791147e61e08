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
//! contiguous memory (interpolated, since deadlines are spread evenly over
//! time; the second between its chunk's first pair and the next chunk's,
//! which the first search read, so that it reads only the leaf headers
//! around its guess: in a large index each of those is a cache miss). In a
//! large index, a refresh to a random deadline fetches the new pair's leaf
//! headers while the owner looks its member up
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
//! 6. each leaf, chunk and the index count their stale pairs exactly, and
//!    the first pair is live.
//!
//! Stale pairs. A refresh that moves a member's deadline to the end of the
//! index (not before the last leaf's first deadline: the usual refresh,
//! the same TTL from now) leaves the old pair where it is and only counts
//! it stale in its leaf's header ([`DeadlineIndex::retire`]); other
//! refreshes remove it. The leaf's records, a random access
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

use super::relocate::{self, Relocate};
use super::touch;
use std::cell::Cell;
use std::collections::VecDeque;

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

/// A finite deadline as a span of one, for [`Leaf::make_room_for`].
fn finite(d: u64) -> Option<(u64, u64)> {
    (d != u64::MAX).then_some((d, d))
}

/// The smallest span covering two spans of finite deadlines.
fn union(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Gives back a deque's room once it holds four times its length (and more
/// than four): down to twice the length, so that a deque that shrinks and
/// grows back by less than half never reallocates. After a mass expiry a
/// chunk of 255 leaves' headers (10 KiB) may be down to a few.
fn fit<T>(deque: &mut VecDeque<T>) {
    if deque.capacity() > 4 && deque.capacity() > 4 * deque.len() {
        deque.shrink_to((2 * deque.len()).max(4));
    }
}

/// A pair packed into one integer that orders as the pair does.
fn packed((deadline, slot): Key) -> u128 {
    (u128::from(deadline) << 32) | u128::from(slot)
}

/// Gallop steps (1, 2, 4, 8, 16 keys away) before bisecting the rest.
const GALLOP: u32 = 5;

/// How many of the `n` strictly increasing keys `at(0)..at(n - 1)` are below
/// `t`. The position is guessed by interpolating between the end keys, the
/// guess is widened by galloping (a few steps) until it brackets the answer,
/// and the bracket is bisected. Deadlines arrive at a steady rate, so keys
/// are spread evenly and this probes a few neighbouring keys; on a skewed
/// spread (say, members without a deadline after expiring ones) the gallop
/// gives up early and it costs a binary search plus a few probes.
fn rank_by(n: usize, at: impl Fn(usize) -> u128, t: u128) -> usize {
    /// Up to this many keys a plain bisection (five steps) beats the
    /// division an interpolated guess costs.
    const BISECT_UP_TO: usize = 32;
    if n <= BISECT_UP_TO {
        return partition(0, n, |i| at(i) < t);
    }
    if t <= at(0) {
        return 0;
    }
    let (first, last) = (at(0), at(n - 1));
    if t > last {
        return n;
    }
    // Here first < t <= last, so n >= 2 and the answer is in 1..n.
    let guess = interpolate(t - first, last - first, n - 1).clamp(1, n - 1);
    bracket(at, t, guess, 0, n - 1)
}

/// [`rank_by`] for keys whose bounds the caller knows without reading
/// them: `at(0) == first` and every key below `end`. The guess then costs
/// no probe of the end keys, which in a large index are cache misses of
/// their own (the first and last leaf headers of a chunk); only the keys
/// around the guess are read.
fn rank_between(n: usize, at: impl Fn(usize) -> u128, t: u128, first: u128, end: u128) -> usize {
    if t <= first {
        return 0;
    }
    if t >= end || n == 1 {
        return n;
    }
    // Here first < t < end and n >= 2: the answer is in 1..=n, and a key
    // `end` at position n would keep the keys increasing.
    let guess = interpolate(t - first, end - first, n).clamp(1, n - 1);
    bracket(at, t, guess, 0, n)
}

/// `x / span` of `m` positions, `x <= span`: where an evenly spread key
/// `x` above the first would sit.
fn interpolate(x: u128, span: u128, m: usize) -> usize {
    // Converting a u128 to a float is a library call: the offsets are
    // taken as u64, those of the keys' deadline halves when the span is
    // wider (deadlines over 2^32 ms apart); the guess is a guess either way.
    let fraction = match u64::try_from(span) {
        Ok(span) => x as u64 as f64 / span as f64,
        Err(_) => (x >> 32) as u64 as f64 / (span >> 32) as u64 as f64,
    };
    (fraction * m as f64) as usize
}

/// The rank of `t` among keys `at(..)`, given `lo < guess <= hi` with
/// `at(lo) < t <= at(hi)`: gallops from the guess, then bisects. Only
/// `at(guess)` and keys strictly between `lo` and `hi` are read, so `at(hi)`
/// may stand for a bound past the last key when the guess is below it.
fn bracket(at: impl Fn(usize) -> u128, t: u128, guess: usize, lo: usize, hi: usize) -> usize {
    let (mut lo, mut hi) = (lo, hi);
    if at(guess) < t {
        lo = guess;
        for k in 0..GALLOP {
            let j = lo + (1 << k);
            if j >= hi {
                break;
            }
            if at(j) < t {
                lo = j;
            } else {
                hi = j;
                break;
            }
        }
    } else {
        let floor = lo;
        hi = guess;
        for k in 0..GALLOP {
            let Some(j) = hi.checked_sub(1 << k).filter(|&j| j > floor) else {
                break;
            };
            if at(j) < t {
                lo = j;
                break;
            }
            hi = j;
        }
    }
    partition(lo + 1, hi, |i| at(i) < t)
}

/// The first index in `lo..hi` where `below` is false (`hi` if none), for a
/// `below` that is true then false across the range: a binary search that
/// halves a window whose size depends only on the range, so the loop runs
/// a fixed number of times (the steps' comparisons are arithmetic, not
/// control flow, though the compiler may still branch on them).
fn partition(lo: usize, hi: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut base, mut size) = (lo, hi.saturating_sub(lo));
    if size == 0 {
        return lo;
    }
    // The answer stays in base..=base + size.
    while size > 1 {
        let half = size / 2;
        // base + half when below, else base.
        base += half * usize::from(below(base + half));
        size -= half;
    }
    base + usize::from(below(base))
}

/// The offset that stands for deadline `u64::MAX` (a member without one);
/// a finite deadline's offset from its leaf's base is always below it.
const FAR: u32 = u32::MAX;

/// The record capacity, in pairs, for `n` pairs: powers of two from 4 up
/// to 64, then 80, 96 and 112, then [`LEAF_CAP`] (each a jemalloc size
/// class: 640, 768, 896 and 1024 bytes above 512; 127 pairs take 1016 of
/// the last). Leaves filled in order are made full-size. A leaf that
/// splits keeps, and its new half gets, the class that holds their pairs;
/// a leaf that hands pairs to a neighbour drops to the class of what it
/// kept; leaves grow a class at a time. With random deadlines (leaves 85%
/// full on average) that saves about a byte a pair over full-size leaves,
/// for the reallocations when a leaf changes class. Those cut short by
/// far-apart deadlines
/// ([`DeadlineIndex::insert_spanning`]) start small too, so that a sparse
/// index does not spend a kilobyte a pair.
fn capacity_for(n: usize) -> usize {
    match n {
        0..=64 => n.next_power_of_two().max(4),
        65..=112 => n.div_ceil(16) * 16,
        _ => LEAF_CAP,
    }
}

/// Up to [`LEAF_CAP`] pairs in order, in `recs[start..start + len]`, 8
/// bytes each: the deadline's offset from the leaf's base in the high
/// half, the slot in the low half, so that records order as their pairs do
/// and a probe compares one integer. 127 × 8 bytes fit jemalloc's
/// 1024-byte size class; 12-byte pairs (the whole deadline) took 1536
/// bytes, 4 more a member. A removal or insertion shifts whichever side is
/// shorter, and dropping the first pair (what expiry does) shifts nothing.
/// The deque holds these 40-byte headers; the first pair, the start and
/// the length live in the header, so locating a leaf and sizing it never
/// touch the records.
///
/// Every finite deadline of the leaf lies in `base..base + FAR` (about 49.7
/// days): a pair that does not fit moves the base when the leaf's other
/// deadlines allow (see [`Leaf::make_room_for`]), else the index splits the
/// leaf around it ([`DeadlineIndex::insert_spanning`]).
#[derive(Clone)]
struct Leaf {
    recs: Box<[u64]>,
    base: u64,
    first_deadline: u64,
    first_slot: u32,
    start: u8,
    len: u8,
    /// How many of the pairs are stale: left by a refresh that moved its
    /// member's deadline, dropped when the leaf is purged.
    stale: u8,
}

impl Leaf {
    /// An empty full-size leaf.
    fn new() -> Leaf {
        Leaf::with_capacity(LEAF_CAP)
    }

    fn with_capacity(capacity: usize) -> Leaf {
        Leaf {
            recs: vec![0; capacity].into_boxed_slice(),
            base: 0,
            first_deadline: 0,
            first_slot: 0,
            start: 0,
            len: 0,
            stale: 0,
        }
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn capacity(&self) -> usize {
        self.recs.len()
    }

    /// Heap bytes of the records, as jemalloc rounds them.
    fn heap_bytes(&self) -> usize {
        super::member::allocation_size(self.capacity() * std::mem::size_of::<u64>())
    }

    /// Makes room for `total` pairs in all (at most [`LEAF_CAP`]): records
    /// too short are replaced by longer ones, the pairs moved to their
    /// front. Returns the heap bytes added.
    fn reserve(&mut self, total: usize) -> usize {
        debug_assert!(total <= LEAF_CAP);
        if total <= self.capacity() {
            return 0;
        }
        let before = self.heap_bytes();
        self.move_records(capacity_for(total));
        self.heap_bytes() - before
    }

    /// Moves the pairs into records of `capacity` pairs (a class of
    /// [`capacity_for`]) when that is less than they have now. Returns the
    /// heap bytes freed.
    fn shrink_to(&mut self, capacity: usize) -> usize {
        debug_assert!(self.len() <= capacity);
        if capacity >= self.capacity() {
            return 0;
        }
        let before = self.heap_bytes();
        self.move_records(capacity);
        before - self.heap_bytes()
    }

    /// Moves the pairs to the front of new records of `capacity` pairs.
    fn move_records(&mut self, capacity: usize) {
        let (s, n) = (self.start(), self.len());
        let mut recs = vec![0; capacity].into_boxed_slice();
        recs[..n].copy_from_slice(&self.recs[s..s + n]);
        self.recs = recs;
        self.start = 0;
    }

    fn start(&self) -> usize {
        self.start as usize
    }

    /// The leaf's first pair (meaningless while it is empty).
    fn first(&self) -> Key {
        (self.first_deadline, self.first_slot)
    }

    /// Whether stale pairs outnumber live ones: the leaf is due a purge.
    fn overstale(&self) -> bool {
        usize::from(self.stale) * 2 > self.len()
    }

    /// Whether deadline `d` has an offset from this leaf's base.
    fn fits(&self, d: u64) -> bool {
        d == u64::MAX || (d >= self.base && d - self.base < u64::from(FAR))
    }

    /// The record of `(d, slot)`, which must fit.
    fn encode(&self, (d, slot): Key) -> u64 {
        debug_assert!(self.fits(d));
        let offset = if d == u64::MAX {
            FAR
        } else {
            (d - self.base) as u32
        };
        (u64::from(offset) << 32) | u64::from(slot)
    }

    fn decode(&self, rec: u64) -> Key {
        let offset = (rec >> 32) as u32;
        let d = if offset == FAR {
            u64::MAX
        } else {
            self.base + u64::from(offset)
        };
        (d, rec as u32)
    }

    fn key(&self, i: usize) -> Key {
        self.decode(self.recs[self.start() + i])
    }

    /// Copies pair 0 into the header after the front changed.
    fn refresh_first(&mut self) {
        if self.len > 0 {
            (self.first_deadline, self.first_slot) = self.key(0);
        }
    }

    /// The smallest and largest finite deadlines of pairs `from..to`, if
    /// any: finite deadlines come before `u64::MAX` ones.
    fn finite_span(&self, from: usize, to: usize) -> Option<(u64, u64)> {
        let s = self.start();
        let finite = self.recs[s + from..s + to].partition_point(|&r| (r >> 32) as u32 != FAR);
        (finite > 0).then(|| (self.key(from).0, self.key(from + finite - 1).0))
    }

    /// Whether one base can hold this leaf's finite deadlines and the span
    /// `lo..=hi` together.
    fn can_hold(&self, span: Option<(u64, u64)>) -> bool {
        self.span_with(span)
            .is_none_or(|(lo, hi)| hi - lo < u64::from(FAR))
    }

    /// The span of this leaf's finite deadlines and `span` together.
    fn span_with(&self, span: Option<(u64, u64)>) -> Option<(u64, u64)> {
        union(self.finite_span(0, self.len()), span)
    }

    /// Makes finite deadlines `lo..=hi` fit, moving the base when they do
    /// not already (rewriting every record); false, changing nothing, if no
    /// base holds them and the leaf's own deadlines together.
    fn make_room_for(&mut self, span: Option<(u64, u64)>) -> bool {
        let Some((lo, hi)) = span else {
            return true;
        };
        if self.fits(lo) && self.fits(hi) {
            return true;
        }
        // The union with a finite span is finite.
        let (a, b) = self.span_with(span).unwrap_or((lo, hi));
        if b - a >= u64::from(FAR) {
            return false;
        }
        // Room on the side the deadlines grow: a base as low as the
        // largest deadline allows when the new ones lie below the old
        // base (keys arriving in decreasing order then rebase once per
        // 49.7 days, not once a key), else the smallest deadline.
        let base = if lo < self.base {
            b - (u64::from(FAR) - 1).min(b)
        } else {
            a
        };
        let (s, n) = (self.start(), self.len());
        for i in s..s + n {
            let key = self.decode(self.recs[i]);
            self.recs[i] = if key.0 == u64::MAX {
                self.recs[i]
            } else {
                ((key.0 - base) << 32) | u64::from(key.1)
            };
        }
        self.base = base;
        true
    }

    /// How many pairs are smaller than `key` (any pair, fitting the leaf
    /// or not): a binary search, after (when `cold`: the records are likely
    /// out of cache) reading one pair from every cache line the pairs span.
    /// Those reads do not depend on each other, so the processor overlaps
    /// their misses; the search and the shift that usually follows then
    /// find the records in cache instead of taking one miss after another.
    /// In a small index the reads would only cost instructions.
    fn rank(&self, (d, slot): Key, cold: bool) -> usize {
        let (s, n) = (self.start(), self.len());
        if cold {
            let mut touched = 0;
            for rec in self.recs[s..s + n].iter().step_by(8) {
                touched ^= rec;
            }
            std::hint::black_box(touched);
        }
        // A deadline below the base is below every pair; one past the
        // offsets is above the finite ones and below the `u64::MAX` ones.
        let t = if d == u64::MAX {
            (u64::from(FAR) << 32) | u64::from(slot)
        } else if d < self.base {
            return 0;
        } else if d - self.base >= u64::from(FAR) {
            u64::from(FAR) << 32
        } else {
            ((d - self.base) << 32) | u64::from(slot)
        };
        self.recs[s..s + n].partition_point(|&r| r < t)
    }

    /// Drops the stale pairs (those `live` denies; the leaf knows how many),
    /// keeping the others in order, and returns how many went. Only pairs
    /// up to the last stale one are asked about.
    fn purge(&mut self, live: &impl Fn(Key) -> bool) -> usize {
        let want = usize::from(self.stale);
        let (s, n) = (self.start(), self.len());
        let (mut kept, mut gone) = (s, 0);
        for i in s..s + n {
            let rec = self.recs[i];
            if gone < want && !live(self.decode(rec)) {
                gone += 1;
            } else {
                self.recs[kept] = rec;
                kept += 1;
            }
        }
        debug_assert_eq!(gone, want, "stale pairs counted");
        self.len -= gone as u8;
        self.stale = 0;
        if self.len == 0 {
            self.start = 0;
        }
        self.refresh_first();
        gone
    }

    /// Inserts `key` at position `i`; the records must have room and the
    /// key must fit (an empty leaf takes its deadline as the base).
    fn insert_at(&mut self, i: usize, key: Key) {
        let (s, n) = (self.start(), self.len());
        debug_assert!(n < self.capacity() && i <= n);
        if n == 0 && key.0 != u64::MAX {
            self.base = key.0;
        }
        // Shift the front left when it is the shorter side and there is
        // room before it, or when there is no room after the back.
        let at = if s > 0 && (i < n / 2 || s + n == self.capacity()) {
            self.recs.copy_within(s..s + i, s - 1);
            self.start -= 1;
            s - 1 + i
        } else {
            self.recs.copy_within(s + i..s + n, s + i + 1);
            s + i
        };
        self.recs[at] = self.encode(key);
        self.len += 1;
        if i == 0 {
            (self.first_deadline, self.first_slot) = key;
        }
    }

    /// Replaces pair `i` by `key`, which must fit and sort where it stands.
    fn set_at(&mut self, i: usize, key: Key) {
        debug_assert!(i == 0 || self.key(i - 1) < key);
        debug_assert!(i + 1 >= self.len() || key < self.key(i + 1));
        self.recs[self.start() + i] = self.encode(key);
        if i == 0 {
            (self.first_deadline, self.first_slot) = key;
        }
    }

    fn remove_at(&mut self, i: usize) {
        let (s, n) = (self.start(), self.len());
        if i < n / 2 {
            self.recs.copy_within(s..s + i, s + 1);
            self.start += 1;
        } else {
            self.recs.copy_within(s + i + 1..s + n, s + i);
        }
        self.len -= 1;
        if self.len == 0 {
            self.start = 0;
        } else if i == 0 {
            self.refresh_first();
        }
    }

    /// Moves the pairs to the front of the records.
    fn compact(&mut self) {
        let (s, n) = (self.start(), self.len());
        self.recs.copy_within(s..s + n, 0);
        self.start = 0;
    }

    /// Appends pairs `from..to` of `src`, which must be above this leaf's
    /// and fit its base (an empty leaf takes `src`'s), growing the records
    /// if needed.
    fn append_from(&mut self, src: &Leaf, from: usize, to: usize) {
        let k = to - from;
        self.reserve(self.len() + k);
        if self.start() + self.len() + k > self.capacity() {
            self.compact();
        }
        if self.len == 0 {
            self.base = src.base;
        }
        let (m, s) = (self.start() + self.len(), src.start());
        if self.base == src.base {
            self.recs[m..m + k].copy_from_slice(&src.recs[s + from..s + to]);
        } else {
            for i in 0..k {
                self.recs[m + i] = self.encode(src.decode(src.recs[s + from + i]));
            }
        }
        let was_empty = self.len == 0;
        self.len += k as u8;
        if was_empty {
            self.refresh_first();
        }
    }

    /// Whether the first `k` pairs, and the finite deadlines `extra`, could
    /// move to the end of `other`, which holds pairs below them: room, and
    /// one base for all.
    fn head_fits(&self, k: usize, other: &Leaf, extra: Option<(u64, u64)>) -> bool {
        other.len() + k <= LEAF_CAP && other.can_hold(union(self.finite_span(0, k), extra))
    }

    /// Whether pairs `from..`, and the finite deadlines `extra`, could move
    /// to the front of `other`, which holds pairs above them: room, and one
    /// base for all.
    fn tail_fits(&self, from: usize, other: &Leaf, extra: Option<(u64, u64)>) -> bool {
        other.len() + self.len() - from <= LEAF_CAP
            && other.can_hold(union(self.finite_span(from, self.len()), extra))
    }

    /// Moves pairs `from..`, not all of them, to the front of `other`, which
    /// must hold pairs above them and have room for them under one base.
    fn move_tail_in_front(&mut self, from: usize, other: &mut Leaf) {
        let n = self.len();
        let k = n - from;
        debug_assert!(from > 0 && self.tail_fits(from, other, None));
        other.make_room_for(self.finite_span(from, n));
        other.reserve(other.len() + k);
        let (s, m) = (other.start(), other.len());
        if s < k {
            other.recs.copy_within(s..s + m, k);
            other.start = k as u8;
        }
        let (dst, src) = (other.start() - k, self.start() + from);
        if other.base == self.base {
            other.recs[dst..dst + k].copy_from_slice(&self.recs[src..src + k]);
        } else {
            for i in 0..k {
                other.recs[dst + i] = other.encode(self.decode(self.recs[src + i]));
            }
        }
        other.start -= k as u8;
        other.len += k as u8;
        other.refresh_first();
        self.len = from as u8;
    }

    /// Moves the first `k` pairs, not all of them, to the end of `other`,
    /// which must hold pairs below them and have room for them.
    fn move_head(&mut self, k: usize, other: &mut Leaf) {
        debug_assert!(k < self.len() && other.len() > 0 && self.head_fits(k, other, None));
        other.make_room_for(self.finite_span(0, k));
        other.append_from(self, 0, k);
        self.start += k as u8;
        self.len -= k as u8;
        self.refresh_first();
    }

    /// Moves pairs `from..` to the end of `other`, which must hold pairs
    /// below them and have room for them, under one base (as an empty leaf
    /// always does).
    fn move_tail(&mut self, from: usize, other: &mut Leaf) {
        let n = self.len();
        let fitted = other.make_room_for(self.finite_span(from, n));
        debug_assert!(fitted && other.len() + n - from <= LEAF_CAP);
        other.append_from(self, from, n);
        self.len = from as u8;
        if self.len == 0 {
            self.start = 0;
        }
    }
}

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
struct Chunk {
    leaves: VecDeque<Leaf>,
    first: Key,
    len: usize,
    /// The leaves' stale pairs, summed.
    stale: usize,
}

impl Chunk {
    fn new(leaves: VecDeque<Leaf>) -> Chunk {
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
    fn refresh_first(&mut self) {
        if let Some(leaf) = self.leaves.front() {
            self.first = leaf.first();
        }
    }

    /// The leaf that would hold `key`: the last one whose first pair is not
    /// above it (the first one if none). `end`, if known, is a pair above
    /// all of the chunk's (the next chunk's first): the search then reads
    /// no leaf header but those around its guess.
    fn locate(&self, key: Key, end: Option<Key>) -> usize {
        fn rank(
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
    fn heap_bytes(&self) -> usize {
        self.deque_bytes() + self.leaves.iter().map(Leaf::heap_bytes).sum::<usize>()
    }

    /// Heap bytes of the headers.
    fn deque_bytes(&self) -> usize {
        super::member::allocation_size(self.leaves.capacity() * std::mem::size_of::<Leaf>())
    }

    /// Live pairs in the leaves before leaf `l`, plus those among the
    /// first `p` of leaf `l` (asked of `live` only if that leaf holds
    /// stale pairs).
    fn count_before(&self, l: usize, p: usize, live: &impl Fn(Key) -> bool) -> usize {
        let whole = self
            .leaves
            .range(..l)
            .map(|leaf| leaf.len() - usize::from(leaf.stale))
            .sum::<usize>();
        let part = match self.leaves.get(l) {
            Some(leaf) if leaf.stale > 0 => (0..p).filter(|&i| live(leaf.key(i))).count(),
            _ => p,
        };
        whole + part
    }

    /// Live pairs.
    fn live_len(&self) -> usize {
        self.len - self.stale
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
}

impl<const CHUNK: usize> DeadlineIndex<CHUNK> {
    /// Number of live pairs. O(1).
    pub fn len(&self) -> usize {
        self.len - self.stale
    }

    /// Whether the leaves are likely out of cache ([`COLD_ABOVE`]).
    fn cold(&self) -> bool {
        self.len > COLD_ABOVE
    }

    /// Starts fetching, in a large index, the leaf headers that locating
    /// deadline `deadline_ms` will read (that of [`Chunk::locate`]'s
    /// guess and the next, which its search reads when, as usual, the
    /// guess is not past the answer), so that a refresh's insert does not
    /// wait for them: the owner calls this before it looks the member up.
    /// The chunk found is kept for that refresh's search (`guessed`).
    /// Not for the last chunk, which the usual refresh keeps in cache, nor
    /// for `u64::MAX` (no deadline, also what a plain lookup passes).
    pub fn prefetch_for(&self, deadline_ms: u64) {
        // The last chunk's first pair is read on every insert, in cache.
        let in_last_chunk = self.chunks.back().is_none_or(|c| deadline_ms >= c.first.0);
        if !self.cold() || deadline_ms == u64::MAX || in_last_chunk {
            return;
        }
        let key = (deadline_ms, 0);
        let c = self.chunk_of(key);
        let (Some(chunk), Some(next)) = (self.chunks.get(c), self.chunks.get(c + 1)) else {
            return;
        };
        let (t, first, end) = (packed(key) + 1, packed(chunk.first), packed(next.first));
        let n = chunk.leaves.len();
        if t <= first || n < 2 {
            return;
        }
        self.guessed.set(Some((deadline_ms, c)));
        let guess = interpolate(t - first, end - first, n).clamp(1, n - 1);
        for leaf in chunk.leaves.range(guess..(guess + 2).min(n)) {
            // The first pair, which the search reads, and a count, which
            // the insert reads.
            touch(&leaf.first_deadline);
            touch(&leaf.stale);
        }
    }

    /// Starts fetching the records of leaf `l` of chunk `c`, which the
    /// caller will read soon, while it goes on with something else.
    fn prefetch_records(&self, (c, l): LeafAt) {
        let leaf = &self.chunks[c].leaves[l];
        let recs = &leaf.recs[leaf.start()..leaf.start() + leaf.len()];
        for rec in recs.iter().step_by(8).chain(recs.last()) {
            touch(rec);
        }
    }

    /// The chunk that would hold `key`: the last one whose first pair is
    /// not above it (the first one if none). Chunk headers are 64 bytes,
    /// about 32 KB at 10M members, and mostly in cache.
    fn chunk_of(&self, key: Key) -> usize {
        // One chunk (up to about 32,000 pairs) holds everything.
        if self.chunks.len() <= 1 {
            return 0;
        }
        rank_by(
            self.chunks.len(),
            |i| packed(self.chunks[i].first),
            packed(key) + 1,
        )
        .saturating_sub(1)
    }

    /// Whether chunk `c` is the one [`Self::chunk_of`] answers for `key`,
    /// from its first pair and the next chunk's.
    fn chunk_holds(&self, c: usize, key: Key) -> bool {
        let Some(chunk) = self.chunks.get(c) else {
            return false;
        };
        (c == 0 || chunk.first <= key) && self.chunks.get(c + 1).is_none_or(|next| key < next.first)
    }

    /// Chunk and leaf that would hold `key`: the last leaf whose first pair
    /// is not above it (the first leaf if none); the index must not be
    /// empty. Two interpolated searches over contiguous headers.
    fn locate(&self, key: Key) -> (usize, usize) {
        self.locate_in(self.chunk_of(key), key)
    }

    /// [`Self::locate`] for the new pair of a refresh: from the chunk
    /// [`Self::prefetch_for`] found for its deadline, if that holds it.
    fn locate_guessed(&self, key: Key) -> (usize, usize) {
        let c = match self.guessed.take() {
            Some((d, c)) if d == key.0 && self.chunk_holds(c, key) => c,
            _ => self.chunk_of(key),
        };
        debug_assert_eq!(c, self.chunk_of(key), "the chunk that holds the pair");
        self.locate_in(c, key)
    }

    /// The leaf of chunk `c` that would hold `key`.
    fn locate_in(&self, c: usize, key: Key) -> (usize, usize) {
        let end = self.chunks.get(c + 1).map(|next| next.first);
        (c, self.chunks[c].locate(key, end))
    }

    /// Whether `key` belongs in leaf `l` of chunk `c` (what [`Self::locate`]
    /// would answer), from that leaf's header and the next one's: this leaf
    /// starts at or before it (or is the very first) and no later leaf
    /// does. False for a leaf that does not exist.
    fn belongs_in(&self, (c, l): LeafAt, key: Key) -> bool {
        let Some(leaf) = self.chunks.get(c).and_then(|chunk| chunk.leaves.get(l)) else {
            return false;
        };
        let below_next = match self.chunks[c].leaves.get(l + 1) {
            Some(next) => key < next.first(),
            None => self.chunks.get(c + 1).is_none_or(|next| key < next.first),
        };
        below_next && (leaf.first() <= key || (c == 0 && l == 0))
    }

    /// The leaf before leaf `l` of chunk `c`, if any (in the chunk before
    /// when `l` is its first).
    fn leaf_before(&self, c: usize, l: usize) -> Option<LeafAt> {
        match (c, l) {
            (_, 1..) => Some((c, l - 1)),
            (1.., 0) => Some((c - 1, self.chunks[c - 1].leaves.len() - 1)),
            (0, 0) => None,
        }
    }

    /// Adds `key`, which must not be live (it may be present and stale: it
    /// is then live again). O(log n + leaf size + chunk size): a leaf split
    /// shifts at most [`CHUNK_CAP`] headers.
    pub fn insert(&mut self, key: Key, live: &impl Fn(Key) -> bool) {
        self.insert_pair(key, live);
        self.settle_front(live);
    }

    fn insert_pair(&mut self, key: Key, live: &impl Fn(Key) -> bool) {
        if self.chunks.is_empty() {
            self.len += 1;
            let mut leaf = Leaf::with_capacity(capacity_for(1));
            leaf.insert_at(0, key);
            let chunk = Chunk::new(VecDeque::from([leaf]));
            self.chunk_heap += chunk.heap_bytes();
            self.chunks.push_back(chunk);
            return;
        }
        // A key at or after the last leaf's first pair (a new member or a
        // refresh with the usual TTL, which ties with the last deadlines
        // when many arrive in one millisecond; a loader feeding deadline
        // order) goes into the last leaf with no search for its leaf or
        // chunk.
        // Nor does one that goes into the leaf before it: one of the
        // millisecond's pairs whose slot sorts before the last leaf's first.
        let c = self.chunks.len() - 1;
        let l = self.chunks[c].leaves.len() - 1;
        let (c, l) = if key >= self.chunks[c].leaves[l].first() {
            (c, l)
        } else {
            match self.leaf_before(c, l) {
                Some((pc, pl)) if key >= self.chunks[pc].leaves[pl].first() => (pc, pl),
                _ => self.locate(key),
            }
        };
        self.insert_in(c, l, key, live);
    }

    /// Inserts `key` into leaf `l` of chunk `c`, where it belongs.
    fn insert_in(&mut self, c: usize, l: usize, key: Key, live: &impl Fn(Key) -> bool) {
        debug_assert!(self.belongs_in((c, l), key), "inserted where it belongs");
        let cold = self.cold();
        let chunk = &mut self.chunks[c];
        let leaf = &mut chunk.leaves[l];

        // Appending past the last pair (a refresh with the usual TTL, a
        // loader) needs no search.
        let pos = if leaf.len() > 0 && key > leaf.key(leaf.len() - 1) {
            leaf.len()
        } else {
            leaf.rank(key, cold)
        };
        if pos < leaf.len() && leaf.key(pos) == key {
            // The key is here, stale (a member back at a deadline it had,
            // or a slot reused with it): it is live again.
            debug_assert!(leaf.stale > 0, "a live key inserted again");
            leaf.stale -= 1;
            chunk.stale -= 1;
            self.stale -= 1;
            return;
        }
        // A leaf that must split, spill or rebase drops its stale pairs
        // first (which may leave room): pairs moved elsewhere are all live.
        if leaf.stale > 0 && (leaf.len() == LEAF_CAP || !leaf.fits(key.0)) {
            self.purge_leaf(c, l, live);
            self.insert_pair(key, live);
            return;
        }
        self.len += 1;
        chunk.len += 1;
        // A key appended past a full leaf starts a new one: this leaf's
        // base need not hold it.
        if pos < LEAF_CAP && !leaf.fits(key.0) && !leaf.make_room_for(finite(key.0)) {
            self.insert_spanning(c, l, pos, key);
            return;
        }
        if leaf.len() < LEAF_CAP {
            let grown = leaf.reserve(leaf.len() + 1);
            leaf.insert_at(pos, key);
            if l == 0 && pos == 0 {
                chunk.first = key;
            }
            self.chunk_heap += grown;
            return;
        }
        // A full leaf whose left neighbour in the chunk has room hands it
        // its first pairs instead of splitting, so random deadlines fill
        // leaves further. Not when appending past the end: in-order runs
        // keep their leaves full and start new ones.
        if pos < LEAF_CAP && l > 0 {
            let room = LEAF_CAP - chunk.leaves[l - 1].len();
            let k = room * 3 / 4;
            // The key goes with the moved pairs when it lands among them.
            let extra = if pos < k { finite(key.0) } else { None };
            if room >= 2 && chunk.leaves[l].head_fits(k, &chunk.leaves[l - 1], extra) {
                let (before, from) = chunk.leaves.make_contiguous().split_at_mut(l);
                let (left, leaf) = (&mut before[l - 1], &mut from[0]);
                let left_len = left.len();
                let grown = left.reserve(left_len + k + 1);
                leaf.move_head(k, left);
                let freed = leaf.shrink_to(capacity_for(LEAF_CAP - k + 1));
                if pos < k {
                    left.make_room_for(extra);
                    left.insert_at(left_len + pos, key);
                } else {
                    leaf.insert_at(pos - k, key);
                }
                self.chunk_heap = self.chunk_heap + grown - freed;
                return;
            }
        }
        // Else its right neighbour, its last pairs.
        if pos < LEAF_CAP && l + 1 < chunk.leaves.len() {
            let room = LEAF_CAP - chunk.leaves[l + 1].len();
            let from = LEAF_CAP - room * 3 / 4;
            // The key goes with the moved pairs when it lands among them.
            let extra = if pos > from { finite(key.0) } else { None };
            if room >= 2 && chunk.leaves[l].tail_fits(from, &chunk.leaves[l + 1], extra) {
                let (upto, after) = chunk.leaves.make_contiguous().split_at_mut(l + 1);
                let (leaf, right) = (&mut upto[l], &mut after[0]);
                let grown = right.reserve(right.len() + LEAF_CAP - from + 1);
                leaf.move_tail_in_front(from, right);
                let freed = leaf.shrink_to(capacity_for(from + 1));
                if pos > from {
                    right.make_room_for(extra);
                    right.insert_at(pos - from, key);
                } else {
                    leaf.insert_at(pos, key);
                }
                if l == 0 && pos == 0 {
                    chunk.first = key;
                }
                self.chunk_heap = self.chunk_heap + grown - freed;
                return;
            }
        }
        let before = chunk.heap_bytes();
        let leaf = &mut chunk.leaves[l];
        let right = if pos == LEAF_CAP {
            // Appending past a full leaf (deadlines arriving in order, one
            // run per distinct TTL): start a new full-size leaf, keep this
            // one full.
            let mut right = Leaf::new();
            right.insert_at(0, key);
            right
        } else {
            // Split at the insertion point if that is in the upper half: a
            // run that keeps arriving here fills the left leaf instead of
            // leaving it half empty. Else in half.
            let at = pos.max(LEAF_CAP / 2);
            let mut right = Leaf::with_capacity(capacity_for(LEAF_CAP - at));
            leaf.move_tail(at, &mut right);
            leaf.shrink_to(capacity_for(at + 1));
            leaf.insert_at(pos, key);
            right
        };
        chunk.leaves.insert(l + 1, right);
        chunk.refresh_first();
        self.chunk_heap = self.chunk_heap - before + chunk.heap_bytes();
        if chunk.leaves.len() > CHUNK {
            self.split_chunk(c, l + 1);
        }
    }

    /// Inserts `key` at position `pos` of leaf `l` of chunk `c` (already
    /// counted in the chunk), where no base holds the leaf's deadlines and
    /// the key's together: the leaf splits at `pos` and the key goes to
    /// the end of the lower part, the front of the upper part, or a leaf of
    /// its own between them, whichever first can hold it. Deadlines more
    /// than 49.7 days apart share a leaf only at the boundary between two
    /// TTLs' runs, so this is rare.
    fn insert_spanning(&mut self, c: usize, l: usize, pos: usize, key: Key) {
        let chunk = &mut self.chunks[c];
        let before = chunk.heap_bytes();
        let leaf = &mut chunk.leaves[l];
        // The upper part, when both parts are non-empty.
        let upper = (pos > 0 && pos < leaf.len()).then(|| {
            let mut upper = Leaf::with_capacity(capacity_for(leaf.len() - pos + 1));
            leaf.move_tail(pos, &mut upper);
            upper
        });
        let mut at = l + 1;
        let mut added = 0;
        if let Some(upper) = upper {
            chunk.leaves.insert(at, upper);
            added += 1;
        }
        // The part below the key, if any, and the part above it.
        let (lower, higher) = if pos == 0 {
            (None, l)
        } else {
            (Some(l), l + 1)
        };
        let span = finite(key.0);
        let mut placed = false;
        if let Some(leaf) = lower.map(|i| &mut chunk.leaves[i])
            && leaf.len() < LEAF_CAP
            && leaf.make_room_for(span)
        {
            leaf.reserve(leaf.len() + 1);
            leaf.insert_at(leaf.len(), key);
            placed = true;
        }
        if let Some(leaf) = chunk.leaves.get_mut(higher)
            && !placed
            && leaf.len() < LEAF_CAP
            && leaf.make_room_for(span)
        {
            leaf.reserve(leaf.len() + 1);
            leaf.insert_at(0, key);
            placed = true;
        }
        if !placed {
            let mut own = Leaf::with_capacity(capacity_for(1));
            own.insert_at(0, key);
            if pos == 0 {
                at = l;
            }
            chunk.leaves.insert(at, own);
            added += 1;
        }
        chunk.refresh_first();
        self.chunk_heap = self.chunk_heap - before + chunk.heap_bytes();
        if chunk.leaves.len() > CHUNK {
            // One new leaf (at `at` either way) splits as any insert's
            // does: chunks appended in order stay full.
            if added == 1 {
                self.split_chunk(c, at);
            } else {
                let half = chunk.leaves.len() / 2;
                self.split_chunk_at(c, half);
            }
        }
    }

    /// Splits chunk `c`, just grown past [`CHUNK_CAP`] by new leaf `new`:
    /// a new last leaf (appends in order) starts a chunk of its own, so
    /// chunks filled in order stay full; otherwise the chunk splits in half.
    fn split_chunk(&mut self, c: usize, new: usize) {
        let leaves = self.chunks[c].leaves.len();
        let at = if new + 1 == leaves { new } else { leaves / 2 };
        self.split_chunk_at(c, at);
    }

    /// Moves the leaves of chunk `c` from `at` on into a new chunk after it.
    fn split_chunk_at(&mut self, c: usize, at: usize) {
        let chunk = &mut self.chunks[c];
        let before = chunk.heap_bytes();
        let right = Chunk::new(chunk.leaves.split_off(at));
        chunk.len -= right.len;
        chunk.stale -= right.stale;
        self.chunk_heap = self.chunk_heap - before + chunk.heap_bytes() + right.heap_bytes();
        self.chunks.insert(c + 1, right);
    }

    /// Removes `key`, live; false if it was not present. O(log n + leaf
    /// size + chunk size).
    pub fn remove(&mut self, key: Key, live: &impl Fn(Key) -> bool) -> bool {
        if self.chunks.is_empty() {
            return false;
        }
        let (c, l) = self.locate(key);
        let removed = self.remove_in(c, l, key, live);
        self.settle_front(live);
        removed
    }

    /// Removes `key` from leaf `l` of chunk `c`, where it would be; false
    /// if it is not there.
    fn remove_in(&mut self, c: usize, l: usize, key: Key, live: &impl Fn(Key) -> bool) -> bool {
        let cold = self.cold();
        let leaf = &mut self.chunks[c].leaves[l];
        let pos = leaf.rank(key, cold);
        if pos == leaf.len() || leaf.key(pos) != key {
            return false;
        }
        leaf.remove_at(pos);
        self.chunks[c].len -= 1;
        self.len -= 1;
        self.settle_leaf(c, l, live);
        true
    }

    /// Replaces `old`, which must be present, by `new`, which must not be:
    /// a deadline change. When `new` belongs in `old`'s leaf the leaf is
    /// located once and neither splits nor merges.
    pub fn replace(&mut self, old: Key, new: Key, live: &impl Fn(Key) -> bool) {
        debug_assert!(!self.chunks.is_empty());
        // Only the old pair going can leave a stale pair first: purges and
        // merges keep each leaf's first live pair first, and `new` is live.
        let was_first = self.first() == Some(old);
        let last = &self.chunks[self.chunks.len() - 1];
        let to_end = new.0 >= last.leaves[last.leaves.len() - 1].first().0;
        // The new pair's leaf headers are usually in cache (an add fetched
        // them, see `prefetch_for`), the old pair's not: in a large index
        // the new leaf's records are fetched while the old pair's leaf is
        // located, and the insert below starts from this leaf if removing
        // the old pair left it where `new` belongs.
        let new_at = (self.cold() && !to_end).then(|| self.locate_guessed(new));
        if let Some(at) = new_at {
            self.prefetch_records(at);
        }
        let (c, l) = self.locate(old);
        let leaf = &self.chunks[c].leaves[l];
        if self.belongs_in((c, l), new) && leaf.len() > 1 && leaf.stale == 0 && leaf.fits(new.0) {
            let cold = self.cold();
            let chunk = &mut self.chunks[c];
            let leaf = &mut chunk.leaves[l];
            let pos = leaf.rank(old, cold);
            debug_assert!(pos < leaf.len() && leaf.key(pos) == old);
            leaf.remove_at(pos);
            let at = leaf.rank(new, false);
            leaf.insert_at(at, new);
            if l == 0 {
                chunk.refresh_first();
            }
            if was_first {
                self.settle_front(live);
            }
            return;
        }
        // A new pair that goes to the end (the usual refresh: the same TTL
        // from now) leaves the old one where it is, stale: its leaf's
        // records are not read (a random access in a large index), and its
        // leaf takes no inserts that would have to purge it soon. The end
        // is the last leaf's first deadline, whatever the slot: refreshes
        // arriving in one millisecond share a deadline, and those whose
        // slot sorts before the last leaf's first pair belong to the leaf
        // just before it, as hot (or further back, after a burst of more
        // than a leaf in one millisecond). Else the old pair goes now.
        //
        // `new` may be here already, stale (the member had that deadline
        // before): its leaf counts it stale while `live` now says yes.
        // Until it is inserted it is denied, so that a purge the old
        // pair's leaf takes now counts it as its leaf does; the insert
        // revives it if it survived.
        let not_new = |k: Key| k != new && live(k);
        if to_end {
            self.retire(c, l, &not_new);
        } else {
            let removed = self.remove_in(c, l, old, &not_new);
            debug_assert!(removed, "replaced pair present");
        }
        match new_at {
            Some(at) if self.belongs_in(at, new) => self.insert_in(at.0, at.1, new, live),
            _ => self.insert_pair(new, live),
        }
        if was_first {
            self.settle_front(live);
        }
    }

    /// Replaces `old`, which must be present and live before the call, by
    /// the pair of the same deadline at slot `slot`, below `old`'s: the
    /// owner moved the member's entry down its slab (`live` already denies
    /// `old` and affirms the new pair). Unlike [`Self::replace`] the old
    /// pair never stays behind stale: a move is not followed by a refresh
    /// that would make a stale pair pay, and compaction is meant to give
    /// memory back. The new pair sorts just before the old one, so it
    /// usually lands in the same leaf: one search and a shift within the
    /// leaf.
    pub fn reslot(&mut self, old: Key, slot: u32, live: &impl Fn(Key) -> bool) {
        debug_assert!(slot < old.1, "a move goes down the slab");
        let new = (old.0, slot);
        let (c, l) = self.locate(old);
        let leaf = &self.chunks[c].leaves[l];
        // Without stale pairs in the leaf, `new` (which would sit here) is
        // not stale anywhere, so nothing need be revived.
        if leaf.stale == 0 && leaf.len() > 1 && self.belongs_in((c, l), new) {
            let cold = self.cold();
            let chunk = &mut self.chunks[c];
            let leaf = &mut chunk.leaves[l];
            let pos = leaf.rank(old, cold);
            debug_assert!(pos < leaf.len() && leaf.key(pos) == old);
            if pos == 0 || leaf.key(pos - 1) < new {
                // The usual case (no other pair of that deadline between
                // the two slots): the record is rewritten in place.
                leaf.set_at(pos, new);
            } else {
                leaf.remove_at(pos);
                let at = leaf.rank(new, false);
                leaf.insert_at(at, new);
            }
            if l == 0 {
                chunk.refresh_first();
            }
            // The first pair, if it changed, is `new`: live.
            return;
        }
        // As in `replace`: `new` may be present, stale, and is denied
        // until its insert revives it.
        let not_new = |k: Key| k != new && live(k);
        let removed = self.remove_in(c, l, old, &not_new);
        debug_assert!(removed, "moved pair present");
        self.insert(new, live);
    }

    /// Counts a pair of leaf `l` of chunk `c` stale (`live` must deny it
    /// from now on). A leaf whose stale pairs outnumber its live ones is
    /// purged, so stale pairs never take more than half a leaf for long;
    /// otherwise no pair moved and no leaf changed length, so there is
    /// nothing to merge. If it was the first pair of the index, `replace`
    /// (the only caller) settles the front after its insert.
    fn retire(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool) {
        let chunk = &mut self.chunks[c];
        let leaf = &mut chunk.leaves[l];
        leaf.stale += 1;
        chunk.stale += 1;
        self.stale += 1;
        if leaf.overstale() {
            self.purge_leaf_to(c, l, live, true);
        }
    }

    /// After a pair of leaf `l` of chunk `c` went or turned stale: purges
    /// the leaf if its stale pairs now outnumber its live ones, then
    /// restores the invariants as after any removal. The first pair may be
    /// left stale: callers settle the front after.
    fn settle_leaf(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool) {
        let leaf = &self.chunks[c].leaves[l];
        if leaf.overstale() {
            self.purge_leaf(c, l, live);
        } else {
            self.after_removal(c, l);
        }
    }

    /// Drops the stale pairs of leaf `l` of chunk `c`, then restores the
    /// invariants as after any removal (the leaf may go, or merge).
    fn purge_leaf(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool) {
        self.purge_leaf_to(c, l, live, false);
    }

    /// [`Self::purge_leaf`]; with `fit`, the records of a leaf left
    /// non-empty also shrink to the class of what it holds. For a leaf that
    /// usually takes no inserts soon: one a refresh left behind, unless
    /// that was one of the last leaves, which then grows back a class at a
    /// time. (1M members, then
    /// 3M refreshes with one TTL: the index took 18.7 bytes a member, most
    /// of them empty records of purged leaves; 13.7 with the shrink.)
    fn purge_leaf_to(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool, fit: bool) {
        let chunk = &mut self.chunks[c];
        let leaf = &mut chunk.leaves[l];
        let gone = leaf.purge(live);
        if fit && leaf.len() > 0 {
            self.chunk_heap -= leaf.shrink_to(capacity_for(leaf.len()));
        }
        chunk.len -= gone;
        chunk.stale -= gone;
        self.len -= gone;
        self.stale -= gone;
        self.after_removal(c, l);
    }

    /// Keeps the first pair live: while the first leaf's first pair is
    /// stale, purges that leaf. Asks `live` nothing unless the first leaf
    /// holds stale pairs.
    fn settle_front(&mut self, live: &impl Fn(Key) -> bool) {
        while let Some(chunk) = self.chunks.front()
            && chunk.leaves[0].stale > 0
            && !live(chunk.first)
        {
            self.purge_leaf(0, 0, live);
        }
    }

    /// Removes and returns the smallest pair. O(1) unless leaves merge or
    /// stale pairs come next.
    pub fn pop_first(&mut self, live: &impl Fn(Key) -> bool) -> Option<Key> {
        let chunk = self.chunks.front_mut()?;
        let key = chunk.first;
        chunk.leaves[0].remove_at(0);
        chunk.len -= 1;
        self.len -= 1;
        self.settle_leaf(0, 0, live);
        self.settle_front(live);
        Some(key)
    }

    /// Restores the invariants after a pair of leaf `l` of chunk `c` was
    /// removed: drops an empty leaf, merges a short one with a neighbour
    /// (in this chunk or the next one over) when both fit in one leaf.
    fn after_removal(&mut self, c: usize, l: usize) {
        let n = self.chunks[c].leaves[l].len();
        // The common cases: nothing to merge, no header moves, no heap
        // changes hands (a short leaf whose neighbours cannot take it stays
        // as it is: what expiry's pops meet before a leaf empties).
        let merge = if n == 0 {
            None
        } else {
            match (n < MERGE_BELOW)
                .then(|| self.merge_partner(c, l))
                .flatten()
            {
                Some(merge) => Some(merge),
                None => {
                    if l == 0 {
                        self.chunks[c].refresh_first();
                    }
                    return;
                }
            }
        };
        // Only the deques of chunks `c - 1` to `c + 2` change (a leaf merge
        // reaches one chunk either side, a chunk merge one more after), and
        // those removed are among them; records change only in the leaves
        // that go or merge, which say by how much: no need to sum the
        // chunks' leaves, which an expiry drain would do for every leaf it
        // empties.
        let (lo, hi) = (c.saturating_sub(1), (c + 3).min(self.chunks.len()));
        let deques = |chunks: &VecDeque<Chunk>, hi| {
            chunks.range(lo..hi).map(Chunk::deque_bytes).sum::<usize>()
        };
        let (before, count) = (deques(&self.chunks, hi), self.chunks.len());
        let (freed, grown) = match merge {
            None => {
                let Some(gone) = self.chunks[c].leaves.remove(l) else {
                    unreachable!("leaf {l} of chunk {c} present");
                };
                self.after_leaf_removal(c);
                (gone.heap_bytes(), 0)
            }
            Some((into, from)) => self.merge_leaves(into, from),
        };
        let after = deques(&self.chunks, hi - (count - self.chunks.len()));
        self.chunk_heap = self.chunk_heap + after + grown - before - freed;
    }

    /// The merge that short leaf `l` of chunk `c` takes part in, if any:
    /// into the previous leaf, or the next one into it (in this chunk or
    /// the next one over), when both fit in one leaf under one base. The
    /// leaf merged away always comes after the one kept, so removing it
    /// moves nothing before it.
    fn merge_partner(&self, c: usize, l: usize) -> Option<(LeafAt, LeafAt)> {
        let prev = if l > 0 {
            Some((c, l - 1))
        } else {
            c.checked_sub(1)
                .map(|p| (p, self.chunks[p].leaves.len() - 1))
        };
        let next = if l + 1 < self.chunks[c].leaves.len() {
            Some((c, l + 1))
        } else if c + 1 < self.chunks.len() {
            Some((c + 1, 0))
        } else {
            None
        };
        // Whether leaf `from` can merge into `into`, just before it.
        let fits = |(ic, il): LeafAt, (fc, fl): LeafAt| {
            let (into, from) = (&self.chunks[ic].leaves[il], &self.chunks[fc].leaves[fl]);
            into.len() + from.len() <= LEAF_CAP && into.can_hold(from.finite_span(0, from.len()))
        };
        match (prev, next) {
            (Some(p), _) if fits(p, (c, l)) => Some((p, (c, l))),
            (_, Some(x)) if fits((c, l), x) => Some(((c, l), x)),
            _ => None,
        }
    }

    /// Moves leaf `from`'s pairs to the end of leaf `into`, just before it,
    /// and drops `from`. Returns the heap bytes of records freed (`from`'s)
    /// and added (to `into`'s).
    fn merge_leaves(&mut self, into: LeafAt, from: LeafAt) -> (usize, usize) {
        let Some(mut gone) = self.chunks[from.0].leaves.remove(from.1) else {
            unreachable!("leaf {from:?} present");
        };
        let (moved, stale) = (gone.len(), usize::from(gone.stale));
        self.chunks[from.0].len -= moved;
        self.chunks[from.0].stale -= stale;
        let kept = &mut self.chunks[into.0].leaves[into.1];
        let kept_before = kept.heap_bytes();
        kept.stale += gone.stale;
        gone.move_tail(0, kept);
        let grown = kept.heap_bytes() - kept_before;
        self.chunks[into.0].len += moved;
        self.chunks[into.0].stale += stale;
        self.chunks[into.0].refresh_first();
        self.after_leaf_removal(from.0);
        (gone.heap_bytes(), grown)
    }

    /// Restores the invariants after a leaf left chunk `c`: drops the chunk
    /// if empty, merges it with a neighbour if at most a quarter full (one
    /// leaf, in the tests' tiny chunks) and both fit. Deques left mostly
    /// empty give back their room.
    fn after_leaf_removal(&mut self, c: usize) {
        let n = self.chunks[c].leaves.len();
        if n == 0 {
            self.chunks.remove(c);
            fit(&mut self.chunks);
            return;
        }
        fit(&mut self.chunks[c].leaves);
        self.chunks[c].refresh_first();
        if n > (CHUNK / 4).max(1) {
            return;
        }
        let fits = |o: usize| self.chunks[o].leaves.len() + n <= CHUNK;
        let (into, from) = if c > 0 && fits(c - 1) {
            (c - 1, c)
        } else if c + 1 < self.chunks.len() && fits(c + 1) {
            (c, c + 1)
        } else {
            return;
        };
        if let Some(gone) = self.chunks.remove(from) {
            let into = &mut self.chunks[into];
            into.len += gone.len;
            into.stale += gone.stale;
            into.leaves.extend(gone.leaves);
            fit(&mut self.chunks);
        }
    }

    /// The smallest pair. O(1).
    pub fn first(&self) -> Option<Key> {
        self.chunks.front().map(|c| c.first)
    }

    /// The end cursor.
    fn end(&self) -> Cursor {
        Cursor {
            c: self.chunks.len(),
            l: 0,
            p: 0,
        }
    }

    /// The cursor at the first pair not below `key`.
    fn seek(&self, key: Key) -> Cursor {
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
    fn seek_after(&self, hi: u64) -> Cursor {
        match hi.checked_add(1) {
            Some(next) => self.seek((next, 0)),
            None => self.end(),
        }
    }

    /// Live pairs of chunk `at.c` before `at` (0 at the end).
    fn count_in_chunk(&self, at: Cursor, live: &impl Fn(Key) -> bool) -> usize {
        self.chunks
            .get(at.c)
            .map_or(0, |chunk| chunk.count_before(at.l, at.p, live))
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
            + self.count_in_chunk(at, live)
    }

    /// The pairs from cursor `a` up to cursor `b` (excluded), in order;
    /// reversible.
    fn range(&self, a: Cursor, b: Cursor) -> impl DoubleEndedIterator<Item = Key> + '_ {
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
        } else {
            let outside = self.chunks.range(..a.c).map(Chunk::live_len).sum::<usize>()
                + self.chunks.range(b.c..).map(Chunk::live_len).sum::<usize>();
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
        super::member::allocation_size(self.chunks.capacity() * std::mem::size_of::<Chunk>())
            + self.chunk_heap
    }

    /// Leaves in the index.
    #[cfg(test)]
    fn leaf_count(&self) -> usize {
        self.chunks.iter().map(|c| c.leaves.len()).sum()
    }

    /// Panics if an invariant does not hold.
    pub fn check_invariants(&self, live: &impl Fn(Key) -> bool) {
        let (mut count, mut stale) = (0, 0);
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
                    stale_in_leaf += usize::from(!live(k));
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
        assert_eq!(stale, self.stale, "stale pairs counted");
        assert!(self.first().is_none_or(live), "the first pair is live");
        assert_eq!(
            self.chunks.iter().map(Chunk::heap_bytes).sum::<usize>(),
            self.chunk_heap,
            "chunk heap bytes summed"
        );
        assert_eq!(count, self.len, "len counts pairs");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Every pair live: for indexes that never retire a pair.
    fn all(_: Key) -> bool {
        true
    }

    fn same<const C: usize>(index: &DeadlineIndex<C>, model: &BTreeSet<Key>) {
        let live = |k| model.contains(&k);
        index.check_invariants(&live);
        assert_eq!(index.len(), model.len());
        assert!(index.iter(live).eq(model.iter().copied()));
        assert!(index.iter(live).rev().eq(model.iter().rev().copied()));
        assert_eq!(index.first(), model.first().copied());
    }

    #[test]
    fn leaves_fit_their_size_class() {
        use crate::member::allocation_size;
        assert_eq!(Leaf::new().heap_bytes(), 1024);
        assert_eq!(allocation_size(LEAF_CAP * 8), 1024);
        // Every class below the full one is a size class exactly, and
        // each holds its pairs.
        for n in 1..=LEAF_CAP {
            let cap = capacity_for(n);
            assert!(cap >= n);
            if cap < LEAF_CAP {
                assert_eq!(allocation_size(cap * 8), cap * 8, "{n} pairs");
            }
        }
        assert_eq!(capacity_for(100), 112, "896 bytes, not 1024");
        assert_eq!(std::mem::size_of::<Leaf>(), 40);
        assert_eq!(allocation_size((CHUNK_CAP + 1) * 40), (CHUNK_CAP + 1) * 40);
    }

    #[test]
    fn appends_in_order_fill_leaves() {
        let mut index: DeadlineIndex = DeadlineIndex::default();
        for s in 0..10 * LEAF_CAP as u32 {
            index.insert((1000 + u64::from(s), s), &all);
        }
        index.check_invariants(&all);
        assert_eq!(index.leaf_count(), 10, "every leaf full");
        assert_eq!(index.count_below((1000 + 5, 0), &all), 5);
        assert_eq!(index.iter_from((1000 + 1269, 0), all).count(), 1);
        assert_eq!(index.iter_from((1000 + 1270, 0), all).count(), 0);
        for s in 0..10 * LEAF_CAP as u32 {
            assert_eq!(index.pop_first(&all), Some((1000 + u64::from(s), s)));
        }
        assert_eq!(index.pop_first(&all), None);
        assert!(index.chunks.is_empty() && index.len() == 0);
    }

    #[test]
    fn windows_across_many_leaves_match_a_filter() {
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        // 40 leaves' worth, three pairs per deadline, and a tail without one.
        for s in 0..40 * LEAF_CAP as u32 {
            let d = if s % 97 == 0 {
                u64::MAX
            } else {
                u64::from(s / 3)
            };
            index.insert((d, s), &all);
            model.insert((d, s));
        }
        let max = 40 * LEAF_CAP as u64 / 3;
        let edges = [
            0,
            1,
            2,
            126,
            127,
            500,
            max / 2,
            max - 1,
            max,
            max + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &lo in &edges {
            for &hi in &edges {
                let want: Vec<Key> = model
                    .iter()
                    .copied()
                    .filter(|k| lo <= k.0 && k.0 <= hi)
                    .collect();
                assert!(
                    index.between(lo, hi, all).eq(want.iter().copied()),
                    "{lo}..={hi}"
                );
                assert!(
                    index
                        .between(lo, hi, all)
                        .rev()
                        .eq(want.iter().rev().copied())
                );
                assert_eq!(index.count_between(lo, hi, &all), want.len(), "{lo}..={hi}");
            }
        }
        assert_eq!(index.count_between(0, u64::MAX, &all), index.len());
        assert_eq!(index.between(5, 4, all).count(), 0);
        assert_eq!(
            DeadlineIndex::<CHUNK_CAP>::default().count_between(0, u64::MAX, &all),
            0
        );
        assert_eq!(
            DeadlineIndex::<CHUNK_CAP>::default()
                .between(0, u64::MAX, all)
                .count(),
            0
        );
    }

    #[test]
    fn removals_merge_short_leaves() {
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        for s in 0..4 * LEAF_CAP as u32 {
            index.insert((u64::from(s % 7), s), &all);
            model.insert((u64::from(s % 7), s));
        }
        let leaves = index.leaf_count();
        for s in (0..4 * LEAF_CAP as u32).filter(|s| s % 3 != 0) {
            assert!(index.remove((u64::from(s % 7), s), &all));
            model.remove(&(u64::from(s % 7), s));
            same(&index, &model);
        }
        assert!(!index.remove((0, 1), &all), "already gone");
        assert!(index.leaf_count() < leaves, "short leaves merged");
    }

    #[test]
    fn interleaved_runs_keep_leaves_full() {
        // Two TTLs: two runs of increasing deadlines, interleaved.
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let n = 20 * LEAF_CAP as u32;
        for s in 0..n {
            let d = if s % 2 == 0 {
                1_000 + u64::from(s)
            } else {
                1 << 40 | u64::from(s)
            };
            index.insert((d, s), &all);
        }
        index.check_invariants(&all);
        let full = (n as usize).div_ceil(LEAF_CAP);
        assert!(
            index.leaf_count() <= full + 2,
            "{} leaves for {full} full ones",
            index.leaf_count()
        );
    }

    #[test]
    fn rank_by_matches_partition_point_on_skewed_keys() {
        // Evenly spread, clustered and exponential keys: interpolation is
        // only a guess, the answer must be exact.
        let shapes: [Vec<u128>; 3] = [
            (0..1000).map(|i| i * 7).collect(),
            (0..1000).map(|i| ((i / 100) << 80) | (i % 100)).collect(),
            (0..100).map(|i| 1u128 << i).collect(),
        ];
        for keys in &shapes {
            let probes = keys.iter().flat_map(|&k| [k.saturating_sub(1), k, k + 1]);
            for t in probes.chain([0, u128::MAX]) {
                let want = keys.partition_point(|&k| k < t);
                assert_eq!(rank_by(keys.len(), |i| keys[i], t), want, "t = {t}");
                // Bounded by the first key and one just past the last, or
                // far past it (the guess then lands low).
                let (first, last) = (keys[0], keys[keys.len() - 1]);
                for end in [last + 1, last.saturating_mul(3).max(last + 1)] {
                    let got = rank_between(keys.len(), |i| keys[i], t, first, end);
                    assert_eq!(got, want, "t = {t}, end = {end}");
                }
            }
        }
    }

    /// At least `min` (and under 200) distinct keys: any, small, or a few
    /// far apart, so that interpolation guesses both well and badly.
    fn sorted_keys(min: usize) -> impl Strategy<Value = BTreeSet<u128>> {
        proptest::collection::btree_set(
            prop_oneof![
                any::<u128>(),
                0u128..64,
                (0u64..8).prop_map(|d| u128::from(d) << 70)
            ],
            min..200,
        )
    }

    /// A key to rank among [`sorted_keys`]: of the same shapes, so that it
    /// often falls on or next to one of them.
    fn probe() -> impl Strategy<Value = u128> {
        prop_oneof![
            any::<u128>(),
            0u128..80,
            (0u64..9).prop_map(|d| u128::from(d) << 70)
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn rank_by_is_a_partition_point(keys in sorted_keys(0), t in probe()) {
            let keys: Vec<u128> = keys.into_iter().collect();
            let want = keys.partition_point(|&k| k < t);
            prop_assert_eq!(rank_by(keys.len(), |i| keys[i], t), want);
        }

        #[test]
        fn rank_between_is_a_partition_point(
            keys in sorted_keys(1),
            t in probe(),
            past in prop_oneof![Just(1u128), 1u128..1000, any::<u128>()],
        ) {
            // `end` is any bound above the last key; the first key is known.
            let keys: Vec<u128> = keys.into_iter().collect();
            let last = keys[keys.len() - 1];
            prop_assume!(last < u128::MAX);
            let end = last.saturating_add(past).max(last + 1);
            let want = keys.partition_point(|&k| k < t);
            prop_assert_eq!(rank_between(keys.len(), |i| keys[i], t, keys[0], end), want);
        }

        #[test]
        fn behaves_like_a_btreeset(ops in proptest::collection::vec(
            (0u8..6, 0u64..50, 0u32..400), 1..1500)) {
            against_a_btreeset::<CHUNK_CAP>(&ops, false, false)?;
        }

        /// Deadlines a quarter of an offset's reach apart, and the extremes:
        /// leaves rebase and split around pairs their base cannot hold.
        #[test]
        fn behaves_like_a_btreeset_with_far_apart_deadlines(
            ops in proptest::collection::vec((0u8..8, 0u64..50, 0u32..400), 1..3000),
            chunk in 0u8..3,
        ) {
            match chunk {
                0 => against_a_btreeset::<2>(&ops, true, true)?,
                1 => against_a_btreeset::<3>(&ops, true, true)?,
                _ => against_a_btreeset::<CHUNK_CAP>(&ops, true, true)?,
            }
        }

        /// Chunks of two or three leaves, and mostly inserts: chunks split,
        /// merge and empty within a few hundred pairs.
        #[test]
        fn behaves_like_a_btreeset_in_tiny_chunks(ops in proptest::collection::vec(
            (0u8..10, 0u64..50, 0u32..400), 1..3000), three in any::<bool>()) {
            if three {
                against_a_btreeset::<3>(&ops, true, false)?;
            } else {
                against_a_btreeset::<2>(&ops, true, false)?;
            }
        }
    }

    /// Deadline `d` (below 50) spread out: most are `d` quarters of an
    /// offset's reach, some small, and the two largest.
    fn far_apart(d: u64) -> u64 {
        match d {
            49 => u64::MAX,
            48 => u64::MAX - 1,
            47 => u64::MAX - 2 - u64::from(FAR),
            _ if d.is_multiple_of(7) => d,
            _ => d << 30,
        }
    }

    /// Applies `ops` (op, deadline, slot; ops 0 and 6 up insert, 1 moves a
    /// present pair to a lower slot or else inserts) to an index and to a
    /// `BTreeSet`,
    /// comparing every query after each step, and the invariants too when
    /// `check`; deadlines spread by [`far_apart`] when `far`.
    fn against_a_btreeset<const C: usize>(
        ops: &[(u8, u64, u32)],
        check: bool,
        far: bool,
    ) -> Result<(), TestCaseError> {
        let mut index: DeadlineIndex<C> = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        for &(op, small, s) in ops {
            let d = if far { far_apart(small) } else { small };
            let key = (d, s);
            // A present key, so that most removals and replacements hit.
            let nth = (small as usize * 400 + s as usize) % model.len().max(1);
            let present = model.iter().nth(nth).copied();
            // The model says which pairs are live, as the slab does for a
            // set: updated before the index is, and asked by it. Only
            // live pairs are removed, as a set does.
            match op {
                1 if present.is_some_and(|old: Key| old.1 > 0) => {
                    // A move down the slab: same deadline, a lower slot.
                    if let Some(old) = present {
                        let new = (old.0, s % old.1);
                        if !model.contains(&new) {
                            model.remove(&old);
                            model.insert(new);
                            index.reslot(old, new.1, &|k| model.contains(&k));
                        }
                    }
                }
                0 | 1 | 6.. => {
                    if model.insert(key) {
                        index.insert(key, &|k| model.contains(&k));
                    }
                }
                2 => {
                    if model.remove(&key) {
                        prop_assert!(index.remove(key, &|k| model.contains(&k)));
                    }
                }
                3 => {
                    if let Some(present) = present {
                        model.remove(&present);
                        prop_assert!(index.remove(present, &|k| model.contains(&k)));
                    }
                }
                4 => {
                    // A deadline change: near the old pair (often the
                    // same leaf), anywhere, or past the last pair (the
                    // usual refresh, which leaves the old pair stale).
                    if let Some(old) = present {
                        let last = model.last().map_or(d, |k| k.0);
                        let new = match s % 4 {
                            0 | 2 => (old.0.saturating_add(d % 3), s),
                            1 => key,
                            _ => (last.saturating_add(d % 3), s),
                        };
                        if !model.contains(&new) {
                            model.remove(&old);
                            model.insert(new);
                            index.replace(old, new, &|k| model.contains(&k));
                        }
                    }
                }
                _ => {
                    let popped = model.pop_first();
                    prop_assert_eq!(index.pop_first(&|k| model.contains(&k)), popped);
                }
            }
            if check {
                index.check_invariants(&|k| model.contains(&k));
            }
            prop_assert_eq!(index.len(), model.len());
            prop_assert_eq!(index.first(), model.first().copied());
            prop_assert_eq!(
                index.count_below(key, &|k| model.contains(&k)),
                model.range(..key).count()
            );
            prop_assert!(
                index
                    .iter_from(key, |k| model.contains(&k))
                    .eq(model.range(key..).copied())
            );
            prop_assert!(
                index
                    .iter_from(key, |k| model.contains(&k))
                    .rev()
                    .eq(model.range(key..).rev().copied())
            );
            let (lo, hi) = (
                d,
                d.saturating_add(u64::from(s % 12) << if far { 30 } else { 0 }),
            );
            let (lo, hi) = if s % 5 == 0 { (hi, lo) } else { (lo, hi) };
            let want: Vec<Key> = model
                .iter()
                .copied()
                .filter(|k| lo <= k.0 && k.0 <= hi)
                .collect();
            prop_assert!(
                index
                    .between(lo, hi, |k| model.contains(&k))
                    .eq(want.iter().copied())
            );
            prop_assert!(
                index
                    .between(lo, hi, |k| model.contains(&k))
                    .rev()
                    .eq(want.iter().rev().copied())
            );
            prop_assert_eq!(
                index.count_between(lo, hi, &|k| model.contains(&k)),
                want.len()
            );
        }
        same(&index, &model);
        Ok(())
    }

    #[test]
    fn refreshes_leave_stale_pairs_counted_and_skipped() {
        // A slab of one deadline a slot, as a set keeps it.
        let mut slab: Vec<u64> = (0..10_000).collect();
        let mut index: DeadlineIndex = DeadlineIndex::default();
        for (s, &d) in slab.iter().enumerate() {
            index.insert((d, s as u32), &all);
        }
        let mut x = 7u64;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let s = (x >> 40) as usize % slab.len();
            // Mostly the usual TTL (appended), sometimes back to where the
            // member was (a stale pair revived), sometimes anywhere.
            let new = match step % 7 {
                0 => s as u64,
                1 => (x >> 20) % 40_000,
                _ => 40_000 + step,
            };
            let old = slab[s];
            if new == old || slab.contains(&new) {
                continue;
            }
            slab[s] = new;
            let live = |(d, s): Key| slab[s as usize] == d;
            index.replace((old, s as u32), (new, s as u32), &live);
            if step % 1000 == 0 {
                index.check_invariants(&live);
            }
        }
        let live = |(d, s): Key| slab[s as usize] == d;
        index.check_invariants(&live);
        assert!(index.stale > 0, "refreshes left stale pairs");
        assert!(
            index.stale <= index.len() + index.leaf_count(),
            "{} stale",
            index.stale
        );
        assert_eq!(index.len(), slab.len());
        let mut model: Vec<Key> = slab
            .iter()
            .enumerate()
            .map(|(s, &d)| (d, s as u32))
            .collect();
        model.sort_unstable();
        assert!(index.iter(live).eq(model.iter().copied()));
        assert!(index.iter(live).rev().eq(model.iter().rev().copied()));
        assert_eq!(index.first(), model.first().copied());
        for (lo, hi) in [(0, 5_000), (1_234, 39_999), (0, u64::MAX), (41_000, 50_000)] {
            let want = model.iter().filter(|k| lo <= k.0 && k.0 <= hi).count();
            assert_eq!(index.count_between(lo, hi, &live), want);
            assert_eq!(index.between(lo, hi, live).count(), want);
            assert_eq!(
                index.count_below((lo, 0), &live),
                model.partition_point(|&k| k < (lo, 0))
            );
        }
    }

    #[test]
    fn a_refresh_back_to_a_stale_pair_survives_a_purge_of_its_leaf() {
        // Slot to deadline, as a set keeps it; `None` is a vacant slot.
        let mut slab: Vec<Option<u64>> = vec![None; 129];
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let deadlines = (0..127).map(|s| 1000 + s).chain([2000, 2001]);
        for (s, d) in deadlines.enumerate() {
            slab[s] = Some(d);
            index.insert((d, s as u32), &slab_live(&slab));
        }
        let refresh = |slab: &mut Vec<Option<u64>>, index: &mut DeadlineIndex, s: u32, new| {
            let old = slab[s as usize].replace(new).expect("present");
            index.replace((old, s), (new, s), &slab_live(slab));
            index.check_invariants(&slab_live(slab));
        };
        // Slots 3 and 4 move to the end, their pairs left stale.
        refresh(&mut slab, &mut index, 3, 3000);
        refresh(&mut slab, &mut index, 4, 3001);
        assert_eq!(index.stale, 2);
        // The rest go, so that one short leaf holds both stale pairs.
        for s in (0..129).filter(|s| ![0, 3, 4].contains(s)) {
            let d = slab[s].take().expect("present");
            assert!(index.remove((d, s as u32), &slab_live(&slab)));
        }
        index.check_invariants(&slab_live(&slab));
        assert_eq!((index.leaf_count(), index.len(), index.stale), (1, 3, 2));
        // Slot 3 back to the deadline of its stale pair: retiring its pair
        // at 3000 purges the leaf, the pair at 1003 included, which `live`
        // already calls live.
        refresh(&mut slab, &mut index, 3, 1003);
        refresh(&mut slab, &mut index, 4, 5000);
        let live = slab_live(&slab);
        assert!(index.iter(live).eq([(1000, 0), (1003, 3), (5000, 4)]));
        for want in [(1000, 0), (1003, 3), (5000, 4)] {
            slab[want.1 as usize] = None;
            assert_eq!(index.pop_first(&slab_live(&slab)), Some(want));
        }
        assert_eq!((index.len(), index.stale, index.leaf_count()), (0, 0, 0));
    }

    /// Whether a pair is live for a slab of one deadline a slot (`None`:
    /// vacant), as a set answers it.
    fn slab_live(slab: &[Option<u64>]) -> impl Fn(Key) -> bool + '_ {
        move |(d, s)| slab.get(s as usize).copied().flatten() == Some(d)
    }

    /// The index used as a set uses it, against a model: one deadline a
    /// slot, vacated slots reused, refreshes mostly to the end and in
    /// bursts within one millisecond, some back to a deadline the slot had
    /// before, some far away or without a deadline; removals and pops
    /// (the slot vacated first, as the set does); moves of entries down to
    /// a vacant slot (compaction). Every step is checked,
    /// and no leaf is left more than half stale.
    fn churn_like_a_set<const C: usize>(seed: u64, steps: usize, target: usize) {
        let mut slab: Vec<Option<u64>> = Vec::new();
        let mut had: Vec<Vec<u64>> = Vec::new();
        let mut index: DeadlineIndex<C> = DeadlineIndex::default();
        let mut x = seed;
        let mut rnd = move || {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            x >> 17
        };
        let mut now = 1_000_000u64;
        for step in 0..steps {
            // Long stretches within one millisecond, then time moves.
            if step % 3000 >= 1200 && rnd() % 3 == 0 {
                now += 1;
            }
            let deadline = |rnd: &mut dyn FnMut() -> u64, had: &[u64]| match rnd() % 20 {
                0..=9 => now + 3000,
                10..=11 => now + 3000 - rnd() % 3,
                12..=14 if !had.is_empty() => had[rnd() as usize % had.len()],
                15 => now + rnd() % 6000,
                16 => now + (1 << 33) + rnd() % 3,
                17 => u64::MAX,
                18 => now + 100,
                _ => now + 3000 + rnd() % 2,
            };
            let occupied: Vec<usize> = (0..slab.len()).filter(|&s| slab[s].is_some()).collect();
            let n = occupied.len();
            let r = rnd() % 100;
            if n < target / 2 || (r < 25 && n < target * 2) {
                let vacant: Vec<usize> = (0..slab.len()).filter(|&s| slab[s].is_none()).collect();
                let s = if !vacant.is_empty() && rnd() % 4 != 0 {
                    vacant[rnd() as usize % vacant.len()]
                } else {
                    slab.push(None);
                    had.push(Vec::new());
                    slab.len() - 1
                };
                let d = deadline(&mut rnd, &had[s]);
                slab[s] = Some(d);
                had[s].push(d);
                index.insert((d, s as u32), &slab_live(&slab));
            } else if r < 75 {
                let s = occupied[rnd() as usize % n];
                let d = deadline(&mut rnd, &had[s]);
                let Some(old) = slab[s].replace(d).filter(|&old| old != d) else {
                    continue;
                };
                had[s].push(d);
                let live = slab_live(&slab);
                index.replace((old, s as u32), (d, s as u32), &live);
            } else if r < 90 {
                let s = occupied[rnd() as usize % n];
                let d = slab[s].take().expect("occupied");
                let live = slab_live(&slab);
                assert!(index.remove((d, s as u32), &live));
            } else if r < 95
                && let s = occupied[rnd() as usize % n]
                && let Some(h) = (0..s).find(|&h| slab[h].is_none())
            {
                // Compaction: the entry moves to the lowest vacant slot
                // below it, keeping its deadline.
                let d = slab[s].take().expect("occupied");
                slab[h] = Some(d);
                had[h].push(d);
                let live = slab_live(&slab);
                index.reslot((d, s as u32), h as u32, &live);
            } else {
                let (d, s) = index.first().expect("not empty");
                assert_eq!(slab[s as usize], Some(d), "the first pair is live");
                slab[s as usize] = None;
                let live = slab_live(&slab);
                assert_eq!(index.pop_first(&live), Some((d, s)));
            }
            let live = slab_live(&slab);
            index.check_invariants(&live);
            let mut model: Vec<Key> = (0..slab.len())
                .filter_map(|s| slab[s].map(|d| (d, s as u32)))
                .collect();
            model.sort_unstable();
            assert_eq!(index.len(), model.len());
            assert_eq!(index.first(), model.first().copied(), "step {step}");
            if step % 7 == 0 {
                assert!(index.iter(&live).eq(model.iter().copied()), "step {step}");
                let k = (now + 2999, (rnd() % 50) as u32);
                assert_eq!(
                    index.count_below(k, &live),
                    model.partition_point(|&m| m < k)
                );
            }
            for leaf in index.chunks.iter().flat_map(|c| c.leaves.iter()) {
                assert!(usize::from(leaf.stale) * 2 <= leaf.len(), "step {step}");
            }
        }
    }

    #[test]
    fn churns_as_a_set_does_in_tiny_and_full_chunks() {
        for seed in 1..4 {
            churn_like_a_set::<2>(seed, 6_000, 300);
        }
        // One or two leaves, where purges and merges come often.
        for seed in 11..14 {
            churn_like_a_set::<2>(seed, 6_000, 60);
        }
        churn_like_a_set::<4>(7, 6_000, 400);
        churn_like_a_set::<CHUNK_CAP>(9, 6_000, 1_000);
    }

    #[test]
    fn random_deadlines_fill_leaves_to_three_quarters() {
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let mut x = 99u64;
        // Deadlines over 2^34 ms (200 days), the slab's random TTLs.
        for s in 0..200_000u32 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            index.insert((x >> 30, s), &all);
        }
        index.check_invariants(&all);
        let fill = index.len() as f64 / (index.leaf_count() * LEAF_CAP) as f64;
        // 0.59 when a full leaf always split, 0.77 when it handed pairs to
        // its left neighbour only, 0.85 to either.
        assert!(fill > 0.83, "leaves {fill:.3} full");
    }

    #[test]
    fn sparse_deadlines_take_small_leaves() {
        // 1,000 members with TTLs up to 5 years: about 27 deadlines in any
        // 49.7 days, so leaves hold about that many, in small records.
        let mut index: DeadlineIndex = DeadlineIndex::default();
        let mut x = 99u64;
        let five_years = 5 * 365 * 86_400_000;
        for s in 0..1000u32 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            index.insert((1_700_000_000_000 + (x >> 11) % five_years, s), &all);
        }
        index.check_invariants(&all);
        let per_pair = index.heap_bytes() as f64 / 1000.0;
        // 48 bytes a pair with full-size records in every leaf.
        assert!(per_pair < 16.0, "{per_pair:.1} heap bytes a pair");
        // Every deadline 2^32 ms after the last: a leaf each, the smallest.
        let mut index: DeadlineIndex = DeadlineIndex::default();
        for s in 0..1000u32 {
            index.insert((u64::from(s) << 32, s), &all);
        }
        index.check_invariants(&all);
        assert_eq!(index.leaf_count(), 1000);
        let per_pair = index.heap_bytes() as f64 / 1000.0;
        // A 32-byte record array and a 40-byte header (and its share of
        // the chunk's deque); 1,090 bytes with full-size records.
        assert!(per_pair < 80.0, "{per_pair:.1} heap bytes a pair");
        while index.pop_first(&all).is_some() {}
        index.check_invariants(&all);
    }

    #[test]
    fn replacing_the_first_pair_keeps_the_front_live() {
        // A refresh settles the front only when its old pair was first:
        // move the first pair again and again, past the end (it turns
        // stale), into the middle (it goes) and next to itself (the same
        // leaf), in a small index and in one past `COLD_ABOVE`.
        for n in [2_000u32, 40_000] {
            let mut index: DeadlineIndex = DeadlineIndex::default();
            let mut model = BTreeSet::new();
            for s in 0..n {
                let key = (u64::from(s) * 10, s);
                model.insert(key);
                index.insert(key, &all);
            }
            assert_eq!(index.cold(), n > 30_000);
            let mut last = u64::from(n) * 10;
            for step in 0..3_000u64 {
                let old = index.first().expect("not empty");
                let new = match step % 3 {
                    0 => {
                        last += 1;
                        (last, old.1)
                    }
                    1 => (old.0 + 1 + (step * 7919) % last, old.1),
                    _ => (old.0 + 1, old.1),
                };
                if model.contains(&new) {
                    continue;
                }
                model.remove(&old);
                model.insert(new);
                index.replace(old, new, &|k| model.contains(&k));
                assert_eq!(index.first(), model.first().copied(), "step {step}");
                if step % 250 == 0 {
                    same(&index, &model);
                }
            }
            same(&index, &model);
        }
    }

    #[test]
    fn chunks_split_and_merge_under_random_churn() {
        // Random pairs into chunks of four leaves, then removals, pops and
        // replacements until empty, against a model. Past `COLD_ABOVE`
        // pairs, so that refreshes also take the path that fetches the
        // new pair's leaf first (`prefetch_for`, then `replace`).
        let mut index: DeadlineIndex<4> = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        let mut x = 12345u64;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for s in 0..40_000u32 {
            let key = (rand() % 1_000_000, s);
            model.insert(key);
            index.insert(key, &all);
            if s % 1000 == 0 {
                same(&index, &model);
            }
        }
        same(&index, &model);
        let chunks = index.chunks.len();
        assert!(chunks > 50, "{chunks} chunks");
        assert!(index.cold());
        let mut step = 0;
        while let Some(&k) = model.iter().nth((rand() as usize) % model.len().max(1)) {
            match step % 3 {
                0 => {
                    let popped = model.pop_first();
                    assert_eq!(index.pop_first(&|k| model.contains(&k)), popped);
                }
                1 => {
                    model.remove(&k);
                    assert!(index.remove(k, &|k| model.contains(&k)));
                }
                _ => {
                    let new = (rand() % 1_000_000, k.1);
                    if !model.contains(&new) {
                        index.prefetch_for(new.0);
                        model.remove(&k);
                        model.insert(new);
                        index.replace(k, new, &|k| model.contains(&k));
                    }
                    assert!(model.remove(&new));
                    assert!(index.remove(new, &|k| model.contains(&k)));
                }
            }
            step += 1;
            if step % 997 == 0 {
                same(&index, &model);
                assert_eq!(
                    index.count_between(100_000, 500_000, &|k| model.contains(&k)),
                    model
                        .iter()
                        .filter(|k| (100_000..=500_000).contains(&k.0))
                        .count()
                );
            }
        }
        same(&index, &model);
        assert!(index.chunks.is_empty());
    }
}
