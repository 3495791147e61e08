//! A leaf of the deadline index: up to [`LEAF_CAP`] pairs packed 8 bytes
//! each as offsets from the leaf's base, and the header that lets the index
//! locate and size it without touching the records.

use super::*;

/// A finite deadline as a span of one, for [`Leaf::make_room_for`].
pub(super) fn finite(d: u64) -> Option<(u64, u64)> {
    (d != u64::MAX).then_some((d, d))
}

/// The smallest span covering two spans of finite deadlines.
pub(super) fn union(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The offset that stands for deadline `u64::MAX` (a member without one);
/// a finite deadline's offset from its leaf's base is always below it.
pub(super) const FAR: u32 = u32::MAX;

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
pub(super) fn capacity_for(n: usize) -> usize {
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
pub(super) struct Leaf {
    pub(super) recs: Box<[u64]>,
    pub(super) base: u64,
    pub(super) first_deadline: u64,
    pub(super) first_slot: u32,
    pub(super) start: u8,
    pub(super) len: u8,
    /// How many of the pairs are stale: left by a refresh that moved its
    /// member's deadline, dropped when the leaf is purged.
    pub(super) stale: u8,
}

impl Leaf {
    /// An empty full-size leaf.
    pub(super) fn new() -> Leaf {
        Leaf::with_capacity(LEAF_CAP)
    }

    pub(super) fn with_capacity(capacity: usize) -> Leaf {
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

    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    pub(super) fn capacity(&self) -> usize {
        self.recs.len()
    }

    /// Heap bytes of the records, as jemalloc rounds them.
    pub(super) fn heap_bytes(&self) -> usize {
        crate::member::allocation_size(self.capacity() * std::mem::size_of::<u64>())
    }

    /// Makes room for `total` pairs in all (at most [`LEAF_CAP`]): records
    /// too short are replaced by longer ones, the pairs moved to their
    /// front. Returns the heap bytes added.
    pub(super) fn reserve(&mut self, total: usize) -> usize {
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
    pub(super) fn shrink_to(&mut self, capacity: usize) -> usize {
        debug_assert!(self.len() <= capacity);
        if capacity >= self.capacity() {
            return 0;
        }
        let before = self.heap_bytes();
        self.move_records(capacity);
        before - self.heap_bytes()
    }

    /// Moves the pairs to the front of new records of `capacity` pairs.
    pub(super) fn move_records(&mut self, capacity: usize) {
        let (s, n) = (self.start(), self.len());
        let mut recs = vec![0; capacity].into_boxed_slice();
        recs[..n].copy_from_slice(&self.recs[s..s + n]);
        self.recs = recs;
        self.start = 0;
    }

    pub(super) fn start(&self) -> usize {
        self.start as usize
    }

    /// The leaf's first pair (meaningless while it is empty).
    pub(super) fn first(&self) -> Key {
        (self.first_deadline, self.first_slot)
    }

    /// Whether stale pairs outnumber live ones: the leaf is due a purge.
    pub(super) fn overstale(&self) -> bool {
        usize::from(self.stale) * 2 > self.len()
    }

    /// Whether deadline `d` has an offset from this leaf's base.
    pub(super) fn fits(&self, d: u64) -> bool {
        d == u64::MAX || (d >= self.base && d - self.base < u64::from(FAR))
    }

    /// The record of `(d, slot)`, which must fit.
    pub(super) fn encode(&self, (d, slot): Key) -> u64 {
        debug_assert!(self.fits(d));
        let offset = if d == u64::MAX {
            FAR
        } else {
            (d - self.base) as u32
        };
        (u64::from(offset) << 32) | u64::from(slot)
    }

    pub(super) fn decode(&self, rec: u64) -> Key {
        let offset = (rec >> 32) as u32;
        let d = if offset == FAR {
            u64::MAX
        } else {
            self.base + u64::from(offset)
        };
        (d, rec as u32)
    }

    pub(super) fn key(&self, i: usize) -> Key {
        self.decode(self.recs[self.start() + i])
    }

    /// Copies pair 0 into the header after the front changed.
    pub(super) fn refresh_first(&mut self) {
        if self.len > 0 {
            (self.first_deadline, self.first_slot) = self.key(0);
        }
    }

    /// The smallest and largest finite deadlines of pairs `from..to`, if
    /// any: finite deadlines come before `u64::MAX` ones.
    pub(super) fn finite_span(&self, from: usize, to: usize) -> Option<(u64, u64)> {
        let s = self.start();
        let finite = self.recs[s + from..s + to].partition_point(|&r| (r >> 32) as u32 != FAR);
        (finite > 0).then(|| (self.key(from).0, self.key(from + finite - 1).0))
    }

    /// Whether one base can hold this leaf's finite deadlines and the span
    /// `lo..=hi` together.
    pub(super) fn can_hold(&self, span: Option<(u64, u64)>) -> bool {
        self.span_with(span)
            .is_none_or(|(lo, hi)| hi - lo < u64::from(FAR))
    }

    /// The span of this leaf's finite deadlines and `span` together.
    pub(super) fn span_with(&self, span: Option<(u64, u64)>) -> Option<(u64, u64)> {
        union(self.finite_span(0, self.len()), span)
    }

    /// Makes finite deadlines `lo..=hi` fit, moving the base when they do
    /// not already (rewriting every record); false, changing nothing, if no
    /// base holds them and the leaf's own deadlines together.
    pub(super) fn make_room_for(&mut self, span: Option<(u64, u64)>) -> bool {
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
    pub(super) fn rank(&self, (d, slot): Key, cold: bool) -> usize {
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
    pub(super) fn purge(&mut self, live: &impl Fn(Key) -> bool) -> usize {
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
    pub(super) fn insert_at(&mut self, i: usize, key: Key) {
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
    pub(super) fn set_at(&mut self, i: usize, key: Key) {
        debug_assert!(i == 0 || self.key(i - 1) < key);
        debug_assert!(i + 1 >= self.len() || key < self.key(i + 1));
        self.recs[self.start() + i] = self.encode(key);
        if i == 0 {
            (self.first_deadline, self.first_slot) = key;
        }
    }

    pub(super) fn remove_at(&mut self, i: usize) {
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
    pub(super) fn compact(&mut self) {
        let (s, n) = (self.start(), self.len());
        self.recs.copy_within(s..s + n, 0);
        self.start = 0;
    }

    /// Appends pairs `from..to` of `src`, which must be above this leaf's
    /// and fit its base (an empty leaf takes `src`'s), growing the records
    /// if needed.
    pub(super) fn append_from(&mut self, src: &Leaf, from: usize, to: usize) {
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
    pub(super) fn head_fits(&self, k: usize, other: &Leaf, extra: Option<(u64, u64)>) -> bool {
        other.len() + k <= LEAF_CAP && other.can_hold(union(self.finite_span(0, k), extra))
    }

    /// Whether pairs `from..`, and the finite deadlines `extra`, could move
    /// to the front of `other`, which holds pairs above them: room, and one
    /// base for all.
    pub(super) fn tail_fits(&self, from: usize, other: &Leaf, extra: Option<(u64, u64)>) -> bool {
        other.len() + self.len() - from <= LEAF_CAP
            && other.can_hold(union(self.finite_span(from, self.len()), extra))
    }

    /// Moves pairs `from..`, not all of them, to the front of `other`, which
    /// must hold pairs above them and have room for them under one base.
    pub(super) fn move_tail_in_front(&mut self, from: usize, other: &mut Leaf) {
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
    pub(super) fn move_head(&mut self, k: usize, other: &mut Leaf) {
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
    pub(super) fn move_tail(&mut self, from: usize, other: &mut Leaf) {
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
