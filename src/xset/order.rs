//! The large encoding's deadline index: every `(deadline, slot)` pair of a
//! set, in order, packed 12 bytes a pair into leaves of [`LEAF_CAP`] pairs.
//!
//! A B-tree of `(u64, u32)` tuples spends 16 bytes a key on padding and
//! around 30 bytes a member once node headers and half-full nodes are
//! counted; this index spends 12 bytes a pair in a full leaf. Leaves sit in
//! a deque with a copy of each leaf's first key, so finding a leaf is one
//! binary search over contiguous memory and dropping the first leaf (what
//! expiry does) is O(1).
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
//! 2. no leaf is empty, and each node's `first` is its leaf's first pair;
//! 3. `len` is the number of pairs.

use std::collections::VecDeque;

/// Pairs per leaf: 127 × 12 bytes plus the length fit jemalloc's 1536-byte
/// size class.
pub(super) const LEAF_CAP: usize = 127;

/// A leaf this short after a removal merges with a neighbour if they fit.
const MERGE_BELOW: usize = LEAF_CAP / 4;

/// A deadline and the slab slot of the member that has it.
pub(super) type Key = (u64, u32);

/// Up to [`LEAF_CAP`] pairs in order, deadlines and slots in separate
/// arrays so nothing is padded.
#[derive(Clone)]
struct Leaf {
    deadlines: [u64; LEAF_CAP],
    slots: [u32; LEAF_CAP],
    len: u16,
}

impl Leaf {
    fn new() -> Box<Leaf> {
        Box::new(Leaf {
            deadlines: [0; LEAF_CAP],
            slots: [0; LEAF_CAP],
            len: 0,
        })
    }

    fn len(&self) -> usize {
        self.len as usize
    }

    fn key(&self, i: usize) -> Key {
        (self.deadlines[i], self.slots[i])
    }

    /// How many pairs are smaller than `key`.
    fn rank(&self, key: Key) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.key(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn insert_at(&mut self, i: usize, (deadline, slot): Key) {
        let n = self.len();
        self.deadlines.copy_within(i..n, i + 1);
        self.slots.copy_within(i..n, i + 1);
        self.deadlines[i] = deadline;
        self.slots[i] = slot;
        self.len += 1;
    }

    fn remove_at(&mut self, i: usize) {
        let n = self.len();
        self.deadlines.copy_within(i + 1..n, i);
        self.slots.copy_within(i + 1..n, i);
        self.len -= 1;
    }

    /// Moves pairs `from..` to the end of `other`.
    fn move_tail(&mut self, from: usize, other: &mut Leaf) {
        let (n, m) = (self.len(), other.len());
        let moved = n - from;
        other.deadlines[m..m + moved].copy_from_slice(&self.deadlines[from..n]);
        other.slots[m..m + moved].copy_from_slice(&self.slots[from..n]);
        other.len += moved as u16;
        self.len = from as u16;
    }
}

/// A leaf and a copy of its first pair.
#[derive(Clone)]
struct Node {
    first: Key,
    leaf: Box<Leaf>,
}

/// An ordered set of `(deadline, slot)` pairs.
#[derive(Clone, Default)]
pub(super) struct DeadlineIndex {
    nodes: VecDeque<Node>,
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
        self.nodes
            .partition_point(|n| n.first <= key)
            .saturating_sub(1)
    }

    /// Adds `key`, which must not be present. O(log n + leaf size), plus a
    /// shift of up to half the 24-byte nodes when a leaf splits.
    pub fn insert(&mut self, key: Key) {
        self.len += 1;
        if self.nodes.is_empty() {
            let mut leaf = Leaf::new();
            leaf.insert_at(0, key);
            self.nodes.push_back(Node { first: key, leaf });
            return;
        }
        let i = self.locate(key);
        let node = &mut self.nodes[i];
        let pos = node.leaf.rank(key);
        debug_assert!(pos == node.leaf.len() || node.leaf.key(pos) != key);
        if node.leaf.len() < LEAF_CAP {
            node.leaf.insert_at(pos, key);
            if pos == 0 {
                node.first = key;
            }
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
            node.leaf.move_tail(pos, &mut right);
            node.leaf.insert_at(pos, key);
        } else {
            let mid = LEAF_CAP / 2;
            node.leaf.move_tail(mid, &mut right);
            node.leaf.insert_at(pos, key);
            if pos == 0 {
                node.first = key;
            }
        }
        let first = right.key(0);
        self.nodes.insert(i + 1, Node { first, leaf: right });
    }

    /// Removes `key`; false if it was not present. O(log n + leaf size), plus
    /// a shift of up to half the 24-byte nodes when a leaf empties or merges.
    pub fn remove(&mut self, key: Key) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        let i = self.locate(key);
        let node = &mut self.nodes[i];
        let pos = node.leaf.rank(key);
        if pos == node.leaf.len() || node.leaf.key(pos) != key {
            return false;
        }
        node.leaf.remove_at(pos);
        self.len -= 1;
        self.after_removal(i, pos);
        true
    }

    /// Removes and returns the smallest pair. O(leaf size).
    pub fn pop_first(&mut self) -> Option<Key> {
        let node = self.nodes.front_mut()?;
        let key = node.first;
        node.leaf.remove_at(0);
        self.len -= 1;
        self.after_removal(0, 0);
        Some(key)
    }

    /// Restores the invariants after pair `pos` of leaf `i` was removed:
    /// drops an empty leaf, refreshes a first pair, merges a short leaf.
    fn after_removal(&mut self, i: usize, pos: usize) {
        let n = self.nodes[i].leaf.len();
        if n == 0 {
            self.nodes.remove(i);
            return;
        }
        if pos == 0 {
            let node = &mut self.nodes[i];
            node.first = node.leaf.key(0);
        }
        if n >= MERGE_BELOW {
            return;
        }
        // Merge into the previous leaf, or the next one into this leaf; the
        // merged-away node is removed.
        let (into, from) = if i > 0 && self.nodes[i - 1].leaf.len() + n <= LEAF_CAP {
            (i - 1, i)
        } else if i + 1 < self.nodes.len() && self.nodes[i + 1].leaf.len() + n <= LEAF_CAP {
            (i, i + 1)
        } else {
            return;
        };
        if let Some(mut gone) = self.nodes.remove(from) {
            gone.leaf.move_tail(0, &mut self.nodes[into].leaf);
        }
    }

    /// The smallest pair. O(1).
    pub fn first(&self) -> Option<Key> {
        self.nodes.front().map(|n| n.first)
    }

    /// Leaf and position of the first pair not below `key`.
    fn seek(&self, key: Key) -> (usize, usize) {
        if self.nodes.is_empty() {
            return (0, 0);
        }
        let i = self.locate(key);
        let pos = self.nodes[i].leaf.rank(key);
        if pos == self.nodes[i].leaf.len() {
            (i + 1, 0)
        } else {
            (i, pos)
        }
    }

    /// How many pairs are below `key`. O(log n + leaves before it).
    pub fn count_below(&self, key: Key) -> usize {
        let (i, pos) = self.seek(key);
        self.nodes.range(..i).map(|n| n.leaf.len()).sum::<usize>() + pos
    }

    /// The pairs not below `key`, in order; reversible.
    pub fn iter_from(&self, key: Key) -> impl DoubleEndedIterator<Item = Key> + '_ {
        let (i, pos) = self.seek(key);
        self.nodes.range(i..).enumerate().flat_map(move |(j, n)| {
            let from = if j == 0 { pos } else { 0 };
            (from..n.leaf.len()).map(move |p| n.leaf.key(p))
        })
    }

    /// Every pair, in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Key> + '_ {
        self.iter_from((0, 0))
    }

    /// Heap bytes held, as jemalloc rounds them.
    pub fn heap_bytes(&self) -> usize {
        super::member::allocation_size(self.nodes.capacity() * std::mem::size_of::<Node>())
            + self.nodes.len() * super::member::allocation_size(std::mem::size_of::<Leaf>())
    }

    /// Panics if an invariant does not hold.
    pub fn check_invariants(&self) {
        let mut count = 0;
        let mut prev: Option<Key> = None;
        for n in &self.nodes {
            assert!(n.leaf.len() > 0, "no empty leaf");
            assert_eq!(n.first, n.leaf.key(0), "first pair cached");
            for p in 0..n.leaf.len() {
                let k = n.leaf.key(p);
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
        assert_eq!(std::mem::size_of::<Leaf>(), 1528);
        assert_eq!(crate::xset::member::allocation_size(1528), 1536);
        assert_eq!(std::mem::size_of::<Node>(), 24);
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

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
            }
            same(&index, &model);
        }
    }
}
