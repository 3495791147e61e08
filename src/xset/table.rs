//! The large encoding's hash table: slab slot numbers keyed by their
//! members' hashes, in one array of 4-byte buckets.
//!
//! A bucket packs, from the low bits up: `slot + 1`, the bucket's distance
//! from its home bucket (capped), and the top bits of the member's hash. A
//! lookup reads one run of buckets (one cache line, usually) and then only
//! the slab entries whose hash bits match: two memory round trips for a hit,
//! where a table with separate control bytes (hashbrown) takes three. Open
//! addressing with linear probing, at most 4/5 full. Bucket counts go up in
//! half powers of two (`2^k` or `1.5 * 2^k`, both jemalloc size classes),
//! not by doubling: at 1M members the table is 1.5M buckets (6 MiB) instead
//! of 2M (8 MiB). Each growth moves every slot (incrementally, below), so
//! finer steps would save more memory for more moves: quarter steps (1.25M
//! buckets at 1M) tripled the time to add 100k members to 1M. A hash's home bucket is its
//! high bits scaled to the bucket count (`hash * n >> 64`, "fastrange"), and
//! its tag bits come from the low half of the hash, independent of the home.
//! Removal shifts the
//! following buckets back (no tombstones, so churn never forces a rebuild);
//! the stored distance tells which may move without reading their members,
//! except past the cap.
//!
//! Invariants (checked by `check_invariants`):
//! 1. `live` buckets hold a slot, the rest are [`EMPTY`], and `live` stays
//!    within [`max_used`] of the bucket count, so every probe meets an empty
//!    bucket;
//! 2. each live bucket's slot fits the slot field, its hash bits are its
//!    member's, its distance field is its distance from home (capped), and
//!    no empty bucket lies between its home and it (so it is found).

/// An empty bucket: ends every probe.
const EMPTY: u32 = 0;
/// The smallest bucket count once anything is stored.
const MIN_BUCKETS: usize = 16;
/// Bits of a bucket's distance field (when the slot field leaves room).
const DIST_BITS: u32 = 4;

/// Past this many buckets (128 KiB) the table is taken to be out of cache:
/// [`SlotTable::touch`] fetches a lookup's bucket ahead.
const OUT_OF_CACHE_ABOVE: usize = 1 << 15;

/// The bucket count after `n`: the next half power of two (`2^k` or
/// `1.5 * 2^k`), at least [`MIN_BUCKETS`].
fn next_size(n: usize) -> usize {
    if n < MIN_BUCKETS {
        return MIN_BUCKETS;
    }
    let k = usize::BITS - 1 - n.leading_zeros();
    let half = 1usize << (k - 1);
    if 3 * half > n { 3 * half } else { 4 * half }
}

/// The most slots stored in `buckets` buckets.
fn max_used(buckets: usize) -> usize {
    buckets / 5 * 4
}

/// A mask of the low `bits` bits.
fn low_bits(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Where the fields of a bucket lie, for one bucket count.
#[derive(Clone, Copy, Default)]
struct Layout {
    slot_bits: u32,
    dist_bits: u32,
}

impl Layout {
    /// Slots up to the bucket count at least (the field, of the bucket
    /// count's bit length, holds `slot + 1` up to `2^bits - 1`, and
    /// `2^bits > buckets`): the slab never holds more slots than the set's
    /// peak size, which is below the bucket count (the table never shrinks).
    /// The distance takes up to [`DIST_BITS`] of the rest, the hash the
    /// remainder.
    fn for_buckets(buckets: usize) -> Layout {
        let slot_bits = (usize::BITS - buckets.leading_zeros()).min(32);
        Layout {
            slot_bits,
            dist_bits: DIST_BITS.min(32 - slot_bits),
        }
    }

    fn slot_mask(self) -> u32 {
        low_bits(self.slot_bits)
    }

    /// The largest distance stored; it also stands for any longer one.
    fn dist_cap(self) -> u32 {
        low_bits(self.dist_bits)
    }

    fn tag_mask(self) -> u32 {
        !low_bits(self.slot_bits + self.dist_bits)
    }

    /// Whether `slot` fits the slot field (as `slot + 1`).
    fn fits(self, slot: u32) -> bool {
        slot < self.slot_mask()
    }

    /// The low half of the hash: the home comes from the high bits.
    fn tag(self, hash: u64) -> u32 {
        (hash as u32) & self.tag_mask()
    }

    /// The bucket of `slot` at `dist` from home: never [`EMPTY`], since the
    /// slot field is at least 1.
    fn bucket(self, tag: u32, dist: usize, slot: u32) -> u32 {
        let dist = u32::try_from(dist).unwrap_or(u32::MAX).min(self.dist_cap());
        let dist_field = if self.dist_bits == 0 {
            0
        } else {
            dist << self.slot_bits
        };
        tag | dist_field | (slot + 1)
    }

    fn slot(self, v: u32) -> u32 {
        (v & self.slot_mask()) - 1
    }

    fn dist(self, v: u32) -> u32 {
        if self.dist_bits == 0 {
            0
        } else {
            (v >> self.slot_bits) & self.dist_cap()
        }
    }

    /// The bucket's tag and slot fields, which identify its slot.
    fn identity(self, v: u32) -> u32 {
        v & (self.tag_mask() | self.slot_mask())
    }
}

/// One array of buckets and how many slots it holds.
#[derive(Clone, Default)]
struct Buckets {
    buckets: Box<[u32]>,
    layout: Layout,
    live: usize,
}

impl Buckets {
    fn with_len(n: usize) -> Buckets {
        Buckets {
            buckets: vec![EMPTY; n].into_boxed_slice(),
            layout: Layout::for_buckets(n),
            live: 0,
        }
    }

    fn len(&self) -> usize {
        self.buckets.len()
    }

    /// The bucket after `i`, cyclically.
    fn next(&self, i: usize) -> usize {
        if i + 1 == self.buckets.len() {
            0
        } else {
            i + 1
        }
    }

    /// How many buckets `to` lies after `from`, cyclically.
    fn gap(&self, from: usize, to: usize) -> usize {
        if to >= from {
            to - from
        } else {
            to + self.buckets.len() - from
        }
    }

    /// The hash's high bits scaled to the bucket count.
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.buckets.len() as u128) >> 64) as usize
    }

    fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.live == 0 {
            return None;
        }
        let layout = self.layout;
        let tag = layout.tag(hash);
        let mut i = self.home(hash);
        loop {
            let v = self.buckets[i];
            if v == EMPTY {
                return None;
            }
            if v & layout.tag_mask() == tag && is(layout.slot(v)) {
                return Some(layout.slot(v));
            }
            i = self.next(i);
        }
    }

    /// Puts `slot` in the first empty bucket from its home; there must be
    /// room.
    fn place(&mut self, hash: u64, slot: u32) {
        let (layout, home) = (self.layout, self.home(hash));
        let mut i = home;
        while self.buckets[i] != EMPTY {
            i = self.next(i);
        }
        let dist = self.gap(home, i);
        self.buckets[i] = layout.bucket(layout.tag(hash), dist, slot);
        self.live += 1;
    }

    /// Removes `slot` (see [`SlotTable::remove`]).
    fn remove(&mut self, hash: u64, slot: u32, hash_of: &impl Fn(u32) -> u64) -> bool {
        let layout = self.layout;
        if self.live == 0 || !layout.fits(slot) {
            return false;
        }
        let wanted = layout.tag(hash) | (slot + 1);
        let mut hole = self.home(hash);
        loop {
            match self.buckets[hole] {
                EMPTY => return false,
                v if layout.identity(v) == wanted => break,
                _ => hole = self.next(hole),
            }
        }
        let mut j = self.next(hole);
        loop {
            let v = self.buckets[j];
            if v == EMPTY {
                break;
            }
            let stored = layout.dist(v);
            let dist = if stored < layout.dist_cap() {
                stored as usize
            } else {
                self.gap(self.home(hash_of(layout.slot(v))), j)
            };
            // `v` may fill the hole unless its home lies after the hole
            // (cyclically): it would no longer be found.
            let gap = self.gap(hole, j);
            if dist >= gap {
                let tag = v & layout.tag_mask();
                self.buckets[hole] = layout.bucket(tag, dist - gap, layout.slot(v));
                hole = j;
            }
            j = self.next(j);
        }
        self.buckets[hole] = EMPTY;
        self.live -= 1;
        true
    }

    /// The longest distance of a stored slot from its home bucket: how many
    /// extra buckets the worst lookup reads.
    #[cfg(test)]
    fn longest_distance(&self, hash_of: &impl Fn(u32) -> u64) -> usize {
        let layout = self.layout;
        self.buckets
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v != EMPTY)
            .map(|(i, &v)| self.gap(self.home(hash_of(layout.slot(v))), i))
            .max()
            .unwrap_or(0)
    }

    fn check_invariants(&self, hash_of: &impl Fn(u32) -> u64) {
        let live = self.buckets.iter().filter(|&&v| v != EMPTY).count();
        assert_eq!(live, self.live, "live count");
        if self.buckets.is_empty() {
            return;
        }
        let layout = self.layout;
        for (i, &v) in self.buckets.iter().enumerate() {
            if v == EMPTY {
                continue;
            }
            let slot = layout.slot(v);
            let hash = hash_of(slot);
            let home = self.home(hash);
            let dist = self.gap(home, i);
            assert_eq!(
                v,
                layout.bucket(layout.tag(hash), dist, slot),
                "bucket fields"
            );
            let mut j = home;
            while j != i {
                assert_ne!(self.buckets[j], EMPTY, "no empty bucket before slot {slot}");
                j = self.next(j);
            }
        }
    }
}

/// A smaller array whose slots are moving to the current one, a few
/// buckets per write, as Redis rehashes its dicts: growing a big table
/// never stalls the server. Lookups are `&self` and do not move anything,
/// so a set that grows and then is only read keeps both arrays (and probes
/// both on a miss) until its next writes; the active expiry's removals count
/// as writes.
#[derive(Clone)]
struct Migration {
    from: Buckets,
    /// An empty bucket of `from`: clusters never wrap past it, so each
    /// cluster moves whole and the ones left stay findable.
    start: usize,
    /// Buckets walked from `start + 1`; all of them are empty now.
    walked: usize,
}

/// Buckets of the old array moved per insert or removal while growing.
const MIGRATE_PER_WRITE: usize = 32;

/// Slot numbers by member hash. The caller keeps the members: lookups ask it
/// whether a candidate slot holds the member, and removals and growth ask
/// it for a slot's hash.
#[derive(Clone, Default)]
pub(super) struct SlotTable {
    cur: Buckets,
    old: Option<Migration>,
}

impl SlotTable {
    /// The longest probe any stored slot needs, over both arrays.
    #[cfg(test)]
    pub fn longest_distance(&self, hash_of: impl Fn(u32) -> u64) -> usize {
        let old = self
            .old
            .as_ref()
            .map_or(0, |m| m.from.longest_distance(&hash_of));
        self.cur.longest_distance(&hash_of).max(old)
    }

    /// Slots stored. O(1).
    pub fn len(&self) -> usize {
        self.cur.live + self.old.as_ref().map_or(0, |m| m.from.live)
    }

    /// The slot whose member has `hash` and for which `is` says yes.
    pub fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        self.cur
            .find(hash, &mut is)
            .or_else(|| self.old.as_ref().and_then(|m| m.from.find(hash, &mut is)))
    }

    /// Starts fetching the bucket where a lookup of `hash` begins, in a
    /// table too large to stay in cache ([`OUT_OF_CACHE_ABOVE`] buckets),
    /// without waiting for it.
    pub fn touch(&self, hash: u64) {
        if self.cur.len() > OUT_OF_CACHE_ABOVE {
            super::touch(&self.cur.buckets[self.cur.home(hash)]);
        }
    }

    /// Stores `slot`, which must not be stored, for a member with `hash`.
    /// `hash_of` gives any stored slot's hash, to move slots when growing.
    pub fn insert(&mut self, hash: u64, slot: u32, hash_of: impl Fn(u32) -> u64) {
        self.make_room(1, slot, &hash_of);
        self.migrate(MIGRATE_PER_WRITE, &hash_of);
        self.cur.place(hash, slot);
    }

    /// Removes `slot`, stored for a member with `hash`; false if absent.
    /// The buckets after it that may move closer to their home move back
    /// into the gap, up to the next empty bucket (no tombstones, so churn
    /// never forces a rebuild); `hash_of` gives the hash of one whose
    /// distance is past the cap (rare), and of slots moved while growing.
    pub fn remove(&mut self, hash: u64, slot: u32, hash_of: impl Fn(u32) -> u64) -> bool {
        let removed = self.cur.remove(hash, slot, &hash_of)
            || self
                .old
                .as_mut()
                .is_some_and(|m| m.from.remove(hash, slot, &hash_of));
        self.migrate(MIGRATE_PER_WRITE, &hash_of);
        removed
    }

    /// Makes room for `additional` more slots, none above the slab's length,
    /// growing the table at once if needed (for bulk loads).
    pub fn reserve(&mut self, additional: usize, hash_of: impl Fn(u32) -> u64) {
        if !self.has_room(additional, 0) {
            self.migrate(usize::MAX, &hash_of);
            self.grow(additional, 0);
            self.migrate(usize::MAX, &hash_of);
        }
    }

    fn has_room(&self, additional: usize, slot: u32) -> bool {
        let n = self.cur.len();
        n > 0 && self.len() + additional <= max_used(n) && self.cur.layout.fits(slot)
    }

    fn make_room(&mut self, additional: usize, slot: u32, hash_of: &impl Fn(u32) -> u64) {
        if self.has_room(additional, slot) {
            return;
        }
        // A growth still under way finishes first (it cannot, in practice:
        // it ends long before the new array fills).
        self.migrate(usize::MAX, hash_of);
        self.grow(additional, slot);
    }

    /// Starts moving every slot to a bigger array.
    fn grow(&mut self, additional: usize, slot: u32) {
        debug_assert!(self.old.is_none());
        let needed = self.len() + additional;
        let mut n = next_size(self.cur.len());
        while needed > max_used(n) || !Layout::for_buckets(n).fits(slot) {
            n = next_size(n);
        }
        let from = std::mem::replace(&mut self.cur, Buckets::with_len(n));
        if from.live > 0 {
            let start = from.buckets.iter().position(|&v| v == EMPTY).unwrap_or(0);
            self.old = Some(Migration {
                from,
                start,
                walked: 0,
            });
        }
    }

    /// Moves the clusters of the old array met within `budget` buckets (a
    /// cluster always whole), and drops the array once it is empty.
    fn migrate(&mut self, budget: usize, hash_of: &impl Fn(u32) -> u64) {
        let Some(m) = self.old.as_mut() else {
            return;
        };
        let n = m.from.len();
        let mut spent = 0;
        while spent < budget && m.walked + 1 < n && m.from.live > 0 {
            // `start + 1 + walked` is below `2n`: one wrap at most.
            let i = m.start + 1 + m.walked;
            let i = if i >= n { i - n } else { i };
            let v = m.from.buckets[i];
            m.walked += 1;
            spent += 1;
            if v == EMPTY {
                continue;
            }
            // The whole cluster from here to the next empty bucket.
            let mut j = i;
            loop {
                let v = m.from.buckets[j];
                if v == EMPTY {
                    break;
                }
                let slot = m.from.layout.slot(v);
                self.cur.place(hash_of(slot), slot);
                m.from.buckets[j] = EMPTY;
                m.from.live -= 1;
                j = m.from.next(j);
            }
            let cluster = m.from.gap(i, j);
            m.walked += cluster - 1;
            spent += cluster - 1;
        }
        if m.from.live == 0 {
            self.old = None;
        }
    }

    /// Heap bytes held, as jemalloc rounds them.
    pub fn heap_bytes(&self) -> usize {
        let size = |b: &Buckets| {
            if b.buckets.is_empty() {
                0
            } else {
                super::member::allocation_size(b.len() * 4)
            }
        };
        size(&self.cur) + self.old.as_ref().map_or(0, |m| size(&m.from))
    }

    /// Panics if an invariant does not hold; `hash_of` gives each stored
    /// slot's hash.
    pub fn check_invariants(&self, hash_of: impl Fn(u32) -> u64) {
        self.cur.check_invariants(&hash_of);
        if !self.cur.buckets.is_empty() {
            assert!(self.len() <= max_used(self.cur.len()), "load within bounds");
        }
        if let Some(m) = &self.old {
            m.from.check_invariants(&hash_of);
            assert!(m.from.live > 0, "a finished migration is dropped");
            assert_eq!(
                m.from.buckets[m.start], EMPTY,
                "migration starts after an empty bucket"
            );
            let n = m.from.len();
            for k in 1..=m.walked {
                assert_eq!(
                    m.from.buckets[(m.start + k) % n],
                    EMPTY,
                    "walked buckets moved"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Hash functions from good to adversarial: collisions and long probe
    /// runs must not change answers.
    fn hash_with(kind: u8, slot: u32) -> u64 {
        let mixed = u64::from(slot).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        match kind {
            0 => mixed ^ (mixed >> 29),
            1 => u64::from(slot % 5),
            2 => (mixed & 0xFFFF_FFFF_0000_0000) | u64::from(slot % 3),
            // Homes in the last buckets: probe runs wrap around the end.
            3 => u64::MAX - u64::from(slot % 4),
            _ => 7,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn behaves_like_a_set_of_slots(
            kind in 0u8..5,
            ops in proptest::collection::vec((0u8..4, 0u32..300), 1..600),
        ) {
            let hash = |s: u32| hash_with(kind, s);
            let mut table = SlotTable::default();
            let mut model = BTreeSet::new();
            for (op, slot) in ops {
                match op {
                    0 | 1 => {
                        if model.insert(slot) {
                            table.insert(hash(slot), slot, hash);
                        }
                    }
                    2 => prop_assert_eq!(table.remove(hash(slot), slot, hash), model.remove(&slot)),
                    _ => {
                        let extra = slot as usize % 50;
                        table.reserve(extra, hash);
                        prop_assert!(table.len() + extra <= max_used(table.cur.len()));
                    }
                }
                prop_assert_eq!(table.len(), model.len());
                table.check_invariants(hash);
                let found = table.find(hash(slot), |s| s == slot);
                prop_assert_eq!(found, model.contains(&slot).then_some(slot));
            }
            table.check_invariants(hash);
            for s in 0..300 {
                prop_assert_eq!(table.find(hash(s), |x| x == s).is_some(), model.contains(&s));
            }
        }
    }

    #[test]
    fn sizes_go_up_by_half_powers_of_two() {
        let mut sizes = vec![next_size(0)];
        while sizes.len() < 8 {
            sizes.push(next_size(sizes[sizes.len() - 1]));
        }
        assert_eq!(sizes, [16, 24, 32, 48, 64, 96, 128, 192]);
        assert_eq!(next_size(17), 24);
        assert_eq!(next_size(47), 48);
        // A million slots fit 1.5M buckets, not 2M.
        let mut n = MIN_BUCKETS;
        while max_used(n) < 1_000_000 {
            n = next_size(n);
        }
        assert_eq!(n, 3 << 19);
    }

    #[test]
    fn churn_does_not_grow_the_table() {
        let hash = |s: u32| hash_with(0, s);
        let mut table = SlotTable::default();
        for round in 0..50u32 {
            for s in 0..1000 {
                table.insert(hash(s + round), s + round, hash);
            }
            for s in 0..1000 {
                assert!(table.remove(hash(s + round), s + round, hash));
            }
            table.check_invariants(hash);
        }
        assert_eq!(table.len(), 0);
        assert!(table.cur.len() <= 2048, "{} buckets", table.cur.len());
    }

    #[test]
    fn growth_moves_slots_a_few_at_a_time() {
        let hash = |s: u32| hash_with(0, s);
        let mut table = SlotTable::default();
        let (mut growths, mut steps_while_growing) = (0, 0);
        for s in 0..200_000u32 {
            let growing = table.old.is_some();
            table.insert(hash(s), s, hash);
            if !growing && table.old.is_some() {
                growths += 1;
            }
            if table.old.is_some() {
                steps_while_growing += 1;
                // Everything stays findable mid-growth, old and new alike.
                for probe in [0, s / 2, s] {
                    assert_eq!(table.find(hash(probe), |x| x == probe), Some(probe));
                }
            }
            if s % 20_000 == 0 {
                table.check_invariants(hash);
            }
            if s % 3 == 0 {
                // Removals and re-inserts mid-growth, in either array.
                assert!(table.remove(hash(s / 3), s / 3, hash));
                table.insert(hash(s / 3), s / 3, hash);
            }
        }
        table.check_invariants(hash);
        assert!(growths >= 10, "{growths} incremental growths");
        assert!(
            steps_while_growing > 1000,
            "growth spread over {steps_while_growing} inserts"
        );
        assert_eq!(table.len(), 200_000);
    }

    #[test]
    fn a_million_slots_take_four_bytes_a_bucket() {
        let hash = |s: u32| hash_with(0, s);
        let mut table = SlotTable::default();
        table.reserve(1_000_000, hash);
        for s in 0..1_000_000 {
            table.insert(hash(s), s, hash);
        }
        // 1.5 * 2^20 buckets, 64% full.
        assert_eq!(table.cur.len(), 3 << 19);
        assert_eq!(table.heap_bytes(), 6 << 20);
        assert_eq!(table.find(hash(123_456), |s| s == 123_456), Some(123_456));
        assert_eq!(table.find(hash(2_000_000), |s| s == 2_000_000), None);
    }
}
