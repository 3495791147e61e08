//! The large encoding's deadline index: every `(deadline, slot)` pair of a
//! set, in order, packed 12 bytes a pair into leaves of [`LEAF_CAP`] pairs.
//!
//! A B-tree of `(u64, u32)` tuples spends 16 bytes a key on padding and
//! around 30 bytes a member once node headers and half-full nodes are
//! counted; this index spends 12 bytes a pair in a full leaf. Leaf headers
//! (first pair, start, length, pointer to the records) sit in a deque, so
//! finding a leaf is one search over contiguous memory (interpolated, since
//! deadlines are spread evenly over time) and dropping the first leaf (what
//! expiry does) is O(1). Within a leaf the pairs float in their array, so
//! dropping the first pair is O(1) too.
//!
//! Deadlines mostly arrive in increasing order (`now + ttl`, one run per
//! distinct TTL), so a pair landing after the end of a full leaf starts a new
//! leaf, and one landing in a full leaf's upper half splits it at that point:
//! a run keeps filling its leaf instead of leaving half-empty ones behind.
//! Other inserts split a full leaf in half, and a removal that leaves a leaf
//! under a quarter full merges it with a neighbour when both fit in one
//! leaf.
//!
//! Invariants (checked by `check_invariants`):
//! 1. pairs are strictly increasing across the whole index;
//! 2. no leaf is empty, each header's first pair is its leaf's first pair,
//!    and the pairs lie within the records;
//! 3. `len` is the number of pairs.

use std::collections::VecDeque;

/// Pairs per leaf: 127 × 12 bytes plus the length fit jemalloc's 1536-byte
/// size class.
pub(super) const LEAF_CAP: usize = 127;

/// A leaf this short after a removal merges with a neighbour if they fit.
const MERGE_BELOW: usize = LEAF_CAP / 4;

/// A deadline and the slab slot of the member that has it.
pub(super) type Key = (u64, u32);

/// A pair packed into one integer that orders as the pair does.
fn packed((deadline, slot): Key) -> u128 {
    (u128::from(deadline) << 32) | u128::from(slot)
}

/// How many of the `n` strictly increasing keys `at(0)..at(n - 1)` are below
/// `t`. The position is guessed by interpolating between the end keys, the
/// guess is widened by galloping (a few steps) until it brackets the answer,
/// and the bracket is bisected. Deadlines arrive at a steady rate, so keys
/// are spread evenly and this probes a few neighbouring keys; on a skewed
/// spread (say, members without a deadline after expiring ones) the gallop
/// gives up early and it costs a binary search plus a few probes.
fn rank_by(n: usize, at: impl Fn(usize) -> u128, t: u128) -> usize {
    /// Gallop steps (1, 2, 4, 8, 16 keys away) before bisecting the rest.
    const GALLOP: u32 = 5;
    if n == 0 || t <= at(0) {
        return 0;
    }
    let (first, last) = (at(0), at(n - 1));
    if t > last {
        return n;
    }
    // Here first < t <= last, so n >= 2 and the answer is in 1..n.
    let fraction = (t - first) as f64 / (last - first) as f64;
    let guess = ((fraction * (n - 1) as f64) as usize).clamp(1, n - 1);
    // The bracket keeps at(lo) < t <= at(hi).
    let (mut lo, mut hi);
    if at(guess) < t {
        (lo, hi) = (guess, n - 1);
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
        (lo, hi) = (0, guess);
        for k in 0..GALLOP {
            let Some(j) = hi.checked_sub(1 << k).filter(|&j| j > lo) else {
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
/// `below` that is true then false across the range: a binary search.
fn partition(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The pairs of one leaf: 12 bytes each (deadline high and low halves,
/// slot), so nothing is padded and a probe reads one cache line;
/// 127 × 12 bytes fit jemalloc's 1536-byte size class.
type Records = [[u32; 3]; LEAF_CAP];

/// Up to [`LEAF_CAP`] pairs in order, in `recs[start..start + len]`: a
/// removal or insertion shifts whichever side is shorter, and dropping the
/// first pair (what expiry does) shifts nothing. The deque holds these
/// 24-byte headers; the first pair, the start and the length live in the
/// header, so locating a leaf and sizing it never touch the records.
#[derive(Clone)]
struct Leaf {
    recs: Box<Records>,
    first_deadline: u64,
    first_slot: u32,
    start: u8,
    len: u8,
}

impl Leaf {
    fn new() -> Leaf {
        Leaf {
            recs: Box::new([[0; 3]; LEAF_CAP]),
            first_deadline: 0,
            first_slot: 0,
            start: 0,
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn start(&self) -> usize {
        self.start as usize
    }

    /// The leaf's first pair (meaningless while it is empty).
    fn first(&self) -> Key {
        (self.first_deadline, self.first_slot)
    }

    fn key(&self, i: usize) -> Key {
        let [hi, lo, slot] = self.recs[self.start() + i];
        ((u64::from(hi) << 32) | u64::from(lo), slot)
    }

    fn packed(&self, i: usize) -> u128 {
        packed(self.key(i))
    }

    /// Copies pair 0 into the header after the front changed.
    fn refresh_first(&mut self) {
        if self.len > 0 {
            (self.first_deadline, self.first_slot) = self.key(0);
        }
    }

    /// How many pairs are smaller than `key`: a binary search, after
    /// reading one pair from every cache line the pairs span. Those reads do
    /// not depend on each other, so the processor overlaps their misses; the
    /// search and the shift that usually follows then find the records in
    /// cache instead of taking one miss after another.
    fn rank(&self, key: Key) -> usize {
        let (s, n) = (self.start(), self.len());
        let mut touched = 0;
        for rec in self.recs[s..s + n].iter().step_by(5) {
            touched ^= rec[2];
        }
        std::hint::black_box(touched);
        let t = packed(key);
        partition(0, n, |i| self.packed(i) < t)
    }

    fn record((deadline, slot): Key) -> [u32; 3] {
        [(deadline >> 32) as u32, deadline as u32, slot]
    }

    /// Inserts `key` at position `i`; the leaf must not be full.
    fn insert_at(&mut self, i: usize, key: Key) {
        let (s, n) = (self.start(), self.len());
        debug_assert!(n < LEAF_CAP && i <= n);
        // Shift the front left when it is the shorter side and there is
        // room before it, or when there is no room after the back.
        let at = if s > 0 && (i < n / 2 || s + n == LEAF_CAP) {
            self.recs.copy_within(s..s + i, s - 1);
            self.start -= 1;
            s - 1 + i
        } else {
            self.recs.copy_within(s + i..s + n, s + i + 1);
            s + i
        };
        self.recs[at] = Leaf::record(key);
        self.len += 1;
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

    /// Moves pairs `from..` to the end of `other`, which must have room for
    /// them.
    fn move_tail(&mut self, from: usize, other: &mut Leaf) {
        let (s, n) = (self.start(), self.len());
        let moved = n - from;
        debug_assert!(other.len() + moved <= LEAF_CAP);
        if other.start() + other.len() + moved > LEAF_CAP {
            other.compact();
        }
        let m = other.start() + other.len();
        other.recs[m..m + moved].copy_from_slice(&self.recs[s + from..s + n]);
        let was_empty = other.len == 0;
        other.len += moved as u8;
        if was_empty {
            other.refresh_first();
        }
        self.len = from as u8;
        if self.len == 0 {
            self.start = 0;
        }
    }
}

/// An ordered set of `(deadline, slot)` pairs.
#[derive(Clone, Default)]
pub(super) struct DeadlineIndex {
    nodes: VecDeque<Leaf>,
    len: usize,
}

impl DeadlineIndex {
    /// Number of pairs. O(1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// The node whose leaf would hold `key`: the last one whose first pair
    /// is not above it (the first node if none). O(log leaves).
    fn locate(&self, key: Key) -> usize {
        // The nodes whose first pair is not above `key`, less one.
        rank_by(
            self.nodes.len(),
            |i| packed(self.nodes[i].first()),
            packed(key) + 1,
        )
        .saturating_sub(1)
    }

    /// Adds `key`, which must not be present. O(log n + leaf size), plus a
    /// shift of up to half the 24-byte leaf headers when a leaf splits.
    pub fn insert(&mut self, key: Key) {
        self.len += 1;
        if self.nodes.is_empty() {
            let mut leaf = Leaf::new();
            leaf.insert_at(0, key);
            self.nodes.push_back(leaf);
            return;
        }
        let i = self.locate(key);
        let leaf = &mut self.nodes[i];
        let pos = leaf.rank(key);
        debug_assert!(pos == leaf.len() || leaf.key(pos) != key);
        if leaf.len() < LEAF_CAP {
            leaf.insert_at(pos, key);
            return;
        }
        let mut right = Leaf::new();
        if pos == LEAF_CAP {
            // Appending past a full leaf (deadlines arriving in order, one
            // run per distinct TTL): start a new leaf, keep this one full.
            right.insert_at(0, key);
        } else if pos >= LEAF_CAP / 2 {
            // Split at the insertion point: a run that keeps arriving here
            // fills the left leaf instead of leaving it half empty.
            leaf.move_tail(pos, &mut right);
            leaf.insert_at(pos, key);
        } else {
            leaf.move_tail(LEAF_CAP / 2, &mut right);
            leaf.insert_at(pos, key);
        }
        self.nodes.insert(i + 1, right);
    }

    /// Adds `key`, which must not be present, for a caller that adds keys
    /// in increasing order (a loader): a key above every other one goes to
    /// the end of the last leaf without a search. O(1) then; any other key
    /// takes [`DeadlineIndex::insert`].
    pub fn push_last(&mut self, key: Key) {
        if let Some(last) = self.nodes.back_mut() {
            let n = last.len();
            if packed(key) > last.packed(n - 1) {
                if n < LEAF_CAP {
                    last.insert_at(n, key);
                } else {
                    let mut right = Leaf::new();
                    right.insert_at(0, key);
                    self.nodes.push_back(right);
                }
                self.len += 1;
                return;
            }
        }
        self.insert(key);
    }

    /// Removes `key`; false if it was not present. O(log n + leaf size), plus
    /// a shift of up to half the 24-byte leaf headers when a leaf empties or
    /// merges.
    pub fn remove(&mut self, key: Key) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        let i = self.locate(key);
        let leaf = &mut self.nodes[i];
        let pos = leaf.rank(key);
        if pos == leaf.len() || leaf.key(pos) != key {
            return false;
        }
        leaf.remove_at(pos);
        self.len -= 1;
        self.after_removal(i);
        true
    }

    /// Removes and returns the smallest pair. O(1) unless leaves merge.
    pub fn pop_first(&mut self) -> Option<Key> {
        let leaf = self.nodes.front_mut()?;
        let key = leaf.first();
        leaf.remove_at(0);
        self.len -= 1;
        self.after_removal(0);
        Some(key)
    }

    /// Restores the invariants after a pair of leaf `i` was removed: drops
    /// an empty leaf, merges a short one.
    fn after_removal(&mut self, i: usize) {
        let n = self.nodes[i].len();
        if n == 0 {
            self.nodes.remove(i);
            return;
        }
        if n >= MERGE_BELOW {
            return;
        }
        // Merge into the previous leaf, or the next one into this leaf; the
        // merged-away leaf is removed.
        let (into, from) = if i > 0 && self.nodes[i - 1].len() + n <= LEAF_CAP {
            (i - 1, i)
        } else if i + 1 < self.nodes.len() && self.nodes[i + 1].len() + n <= LEAF_CAP {
            (i, i + 1)
        } else {
            return;
        };
        if let Some(mut gone) = self.nodes.remove(from) {
            gone.move_tail(0, &mut self.nodes[into]);
        }
    }

    /// The smallest pair. O(1).
    pub fn first(&self) -> Option<Key> {
        self.nodes.front().map(Leaf::first)
    }

    /// Leaf and position of the first pair not below `key`.
    fn seek(&self, key: Key) -> (usize, usize) {
        if self.nodes.is_empty() {
            return (0, 0);
        }
        let i = self.locate(key);
        let pos = self.nodes[i].rank(key);
        if pos == self.nodes[i].len() {
            (i + 1, 0)
        } else {
            (i, pos)
        }
    }

    /// How many pairs are below `key`. O(log n + leaves before it).
    pub fn count_below(&self, key: Key) -> usize {
        let (i, pos) = self.seek(key);
        self.nodes.range(..i).map(Leaf::len).sum::<usize>() + pos
    }

    /// The pairs not below `key`, in order; reversible.
    pub fn iter_from(&self, key: Key) -> impl DoubleEndedIterator<Item = Key> + '_ {
        let (i, pos) = self.seek(key);
        self.nodes.range(i..).enumerate().flat_map(move |(j, n)| {
            let from = if j == 0 { pos } else { 0 };
            (from..n.len()).map(move |p| n.key(p))
        })
    }

    /// Leaf and position just past the last pair whose deadline is at most
    /// `hi`.
    fn seek_after(&self, hi: u64) -> (usize, usize) {
        match hi.checked_add(1) {
            Some(next) => self.seek((next, 0)),
            None => (self.nodes.len(), 0),
        }
    }

    /// The pairs whose deadline lies in `lo..=hi`, in order; reversible, so
    /// either end starts in O(log n). Empty when `lo > hi`.
    pub fn between(&self, lo: u64, hi: u64) -> impl DoubleEndedIterator<Item = Key> + '_ {
        let (i, pos) = self.seek((lo, 0));
        let (j, end) = if lo <= hi {
            self.seek_after(hi)
        } else {
            (i, pos)
        };
        // Leaf `j` is included only if some of its pairs are.
        let stop = if end == 0 { j } else { j + 1 };
        (i..stop).flat_map(move |k| {
            let leaf = &self.nodes[k];
            let from = if k == i { pos } else { 0 };
            let to = if k == j { end } else { leaf.len() };
            (from..to).map(move |p| leaf.key(p))
        })
    }

    /// How many pairs have a deadline in `lo..=hi`: 0 when `lo > hi`.
    /// O(log n + min(l, L - l)) for `l` of the `L` leaves spanned by the
    /// window: it sums the leaf lengths inside the window, or subtracts the
    /// ones outside it, whichever are fewer.
    pub fn count_between(&self, lo: u64, hi: u64) -> usize {
        if lo > hi {
            return 0;
        }
        let (i, pos) = self.seek((lo, 0));
        let (j, end) = self.seek_after(hi);
        let inside = j - i;
        let whole = if inside <= self.nodes.len() - inside {
            self.nodes.range(i..j).map(Leaf::len).sum::<usize>()
        } else {
            let outside = self.nodes.range(..i).map(Leaf::len).sum::<usize>()
                + self.nodes.range(j..).map(Leaf::len).sum::<usize>();
            self.len - outside
        };
        // Pairs before (j, end) less pairs before (i, pos).
        whole + end - pos
    }

    /// Every pair, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Key> + '_ {
        self.iter_from((0, 0))
    }

    /// Heap bytes held, as jemalloc rounds them.
    pub fn heap_bytes(&self) -> usize {
        super::member::allocation_size(self.nodes.capacity() * std::mem::size_of::<Leaf>())
            + self.nodes.len() * super::member::allocation_size(std::mem::size_of::<Records>())
    }

    /// Panics if an invariant does not hold.
    pub fn check_invariants(&self) {
        let mut count = 0;
        let mut prev: Option<Key> = None;
        for n in &self.nodes {
            assert!(n.len() > 0, "no empty leaf");
            assert_eq!(n.first(), n.key(0), "first pair cached");
            assert!(n.start() + n.len() <= LEAF_CAP, "pairs within the records");
            for p in 0..n.len() {
                let k = n.key(p);
                assert!(prev.is_none_or(|q| q < k), "strictly increasing");
                prev = Some(k);
                count += 1;
            }
        }
        assert_eq!(count, self.len, "len counts pairs");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn same(index: &DeadlineIndex, model: &BTreeSet<Key>) {
        index.check_invariants();
        assert_eq!(index.len(), model.len());
        assert!(index.iter().eq(model.iter().copied()));
        assert!(index.iter().rev().eq(model.iter().rev().copied()));
        assert_eq!(index.first(), model.first().copied());
    }

    #[test]
    fn leaves_fit_their_size_class() {
        assert_eq!(std::mem::size_of::<Records>(), 1524);
        assert_eq!(crate::xset::member::allocation_size(1524), 1536);
        assert_eq!(std::mem::size_of::<Leaf>(), 24);
    }

    #[test]
    fn appends_in_order_fill_leaves() {
        let mut index = DeadlineIndex::default();
        for s in 0..10 * LEAF_CAP as u32 {
            index.insert((1000 + u64::from(s), s));
        }
        index.check_invariants();
        assert_eq!(index.nodes.len(), 10, "every leaf full");
        assert_eq!(index.count_below((1000 + 5, 0)), 5);
        assert_eq!(index.iter_from((1000 + 1269, 0)).count(), 1);
        assert_eq!(index.iter_from((1000 + 1270, 0)).count(), 0);
        for s in 0..10 * LEAF_CAP as u32 {
            assert_eq!(index.pop_first(), Some((1000 + u64::from(s), s)));
        }
        assert_eq!(index.pop_first(), None);
        assert!(index.nodes.is_empty() && index.len() == 0);
    }

    #[test]
    fn windows_across_many_leaves_match_a_filter() {
        let mut index = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        // 40 leaves' worth, three pairs per deadline, and a tail without one.
        for s in 0..40 * LEAF_CAP as u32 {
            let d = if s % 97 == 0 {
                u64::MAX
            } else {
                u64::from(s / 3)
            };
            index.insert((d, s));
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
                    index.between(lo, hi).eq(want.iter().copied()),
                    "{lo}..={hi}"
                );
                assert!(index.between(lo, hi).rev().eq(want.iter().rev().copied()));
                assert_eq!(index.count_between(lo, hi), want.len(), "{lo}..={hi}");
            }
        }
        assert_eq!(index.count_between(0, u64::MAX), index.len());
        assert_eq!(index.between(5, 4).count(), 0);
        assert_eq!(DeadlineIndex::default().count_between(0, u64::MAX), 0);
        assert_eq!(DeadlineIndex::default().between(0, u64::MAX).count(), 0);
    }

    #[test]
    fn removals_merge_short_leaves() {
        let mut index = DeadlineIndex::default();
        let mut model = BTreeSet::new();
        for s in 0..4 * LEAF_CAP as u32 {
            index.insert((u64::from(s % 7), s));
            model.insert((u64::from(s % 7), s));
        }
        let leaves = index.nodes.len();
        for s in (0..4 * LEAF_CAP as u32).filter(|s| s % 3 != 0) {
            assert!(index.remove((u64::from(s % 7), s)));
            model.remove(&(u64::from(s % 7), s));
            same(&index, &model);
        }
        assert!(!index.remove((0, 1)), "already gone");
        assert!(index.nodes.len() < leaves, "short leaves merged");
    }

    #[test]
    fn interleaved_runs_keep_leaves_full() {
        // Two TTLs: two runs of increasing deadlines, interleaved.
        let mut index = DeadlineIndex::default();
        let n = 20 * LEAF_CAP as u32;
        for s in 0..n {
            let d = if s % 2 == 0 {
                1_000 + u64::from(s)
            } else {
                1 << 40 | u64::from(s)
            };
            index.insert((d, s));
        }
        index.check_invariants();
        let full = (n as usize).div_ceil(LEAF_CAP);
        assert!(
            index.nodes.len() <= full + 2,
            "{} leaves for {full} full ones",
            index.nodes.len()
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
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn rank_by_is_a_partition_point(
            keys in proptest::collection::btree_set(
                prop_oneof![any::<u128>(), 0u128..64, (0u64..8).prop_map(|d| u128::from(d) << 70)],
                0..200),
            t in prop_oneof![any::<u128>(), 0u128..80, (0u64..9).prop_map(|d| u128::from(d) << 70)],
        ) {
            let keys: Vec<u128> = keys.into_iter().collect();
            let want = keys.partition_point(|&k| k < t);
            prop_assert_eq!(rank_by(keys.len(), |i| keys[i], t), want);
        }

        #[test]
        fn behaves_like_a_btreeset(ops in proptest::collection::vec(
            (0u8..5, 0u64..50, 0u32..400), 1..1500)) {
            let mut index = DeadlineIndex::default();
            let mut model = BTreeSet::new();
            for (op, d, s) in ops {
                let key = (d, s);
                match op {
                    0 | 1 => {
                        if model.insert(key) {
                            index.insert(key);
                        }
                    }
                    2 => prop_assert_eq!(index.remove(key), model.remove(&key)),
                    3 => {
                        // A present key, so that most removals hit.
                        let nth = (d as usize * 400 + s as usize) % model.len().max(1);
                        let present = model.iter().nth(nth).copied().unwrap_or(key);
                        prop_assert_eq!(index.remove(present), model.remove(&present));
                    }
                    _ => prop_assert_eq!(index.pop_first(), model.pop_first()),
                }
                prop_assert_eq!(index.len(), model.len());
                prop_assert_eq!(index.count_below(key), model.range(..key).count());
                prop_assert!(index.iter_from(key).eq(model.range(key..).copied()));
                prop_assert!(index.iter_from(key).rev().eq(model.range(key..).rev().copied()));
                let (lo, hi) = (d, d + u64::from(s % 12));
                let (lo, hi) = if s % 5 == 0 { (hi, lo) } else { (lo, hi) };
                let want: Vec<Key> = model.iter().copied().filter(|k| lo <= k.0 && k.0 <= hi).collect();
                prop_assert!(index.between(lo, hi).eq(want.iter().copied()));
                prop_assert!(index.between(lo, hi).rev().eq(want.iter().rev().copied()));
                prop_assert_eq!(index.count_between(lo, hi), want.len());
            }
            same(&index, &model);
        }
    }
}
