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
//! finer steps would save more memory for more moves. A hash's home bucket
//! is its high bits scaled to the bucket count (`hash * n >> 64`,
//! "fastrange"), and its tag bits come from the low half of the hash,
//! independent of the home. Removal shifts the following buckets back (no
//! tombstones, so churn never forces a rebuild); the stored distance tells
//! which may move without reading their members, except past the cap.
//!
//! Why not `hashbrown::HashTable<u32>`: its power-of-two bucket counts and
//! control bytes take 5 bytes a bucket, up to twice the buckets this needs
//! (a 1M-member set then misses the 40 bytes a member the large encoding
//! is held to), and it resizes all at once, where a big set's table here
//! resizes a few buckets per write (below), as Redis's own dicts do.
//!
//! The table shrinks as it grows, incrementally, once it is less than a
//! quarter full: by halvings, to the smallest size at most half full, so
//! that neither a refill nor further removals resize it again before the
//! membership has changed by a factor of about two. Halving keeps the
//! bucket layout and lets a slot's new home be computed from its old one
//! (`home >> k`: fastrange of a count divided by `2^k`), so a shrink reads
//! no member and hashes nothing, except for the rare slot whose distance
//! is past the cap. The slot field is as wide as the larger of the bucket
//! count and the slab's length (which the owner passes in), so a table
//! can shrink while the slab is still long; the hash bits give way, and a
//! lookup then compares a few more members.
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

/// Whether `live` slots in `buckets` buckets are few enough to move to a
/// smaller array (a quarter full: after a growth a table is more than half
/// full, so a set must lose half its members before it shrinks back).
fn sparse(live: usize, buckets: usize) -> bool {
    buckets > MIN_BUCKETS && live * 4 < buckets
}

/// How many times a table of `buckets` buckets holding `live` slots
/// halves: down to the smallest size at most half full, so that it takes a
/// refill of more than half again (up to [`max_used`]) to grow, and the
/// loss of half (down to [`sparse`]) to shrink again. Every size is even,
/// `2^k` or `3 * 2^k`, and halving stays at or above [`MIN_BUCKETS`].
fn halvings(live: usize, buckets: usize) -> u32 {
    let mut k = 0;
    while (buckets >> (k + 1)) >= MIN_BUCKETS
        && (buckets >> k).is_multiple_of(2)
        && live * 2 <= buckets >> (k + 1)
    {
        k += 1;
    }
    k
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
#[derive(Clone, Copy)]
struct Layout {
    slot_bits: u32,
    dist_bits: u32,
    /// The masks of the slot field and of the hash's tag, kept rather than
    /// derived from the widths on every probe.
    slot_mask: u32,
    tag_mask: u32,
}

impl Default for Layout {
    /// No field at all, as for a table with no buckets.
    fn default() -> Layout {
        Layout::of_widths(0, 0)
    }
}

impl Layout {
    /// Every slot below `slab_len`, and below the bucket count: the field,
    /// of the larger one's bit length, holds `slot + 1` up to
    /// `2^bits - 1`, and `2^bits` exceeds both. A slab grows only when it
    /// has no vacant slot, so past the bucket count only after the table
    /// has grown for its membership. The distance takes up to
    /// [`DIST_BITS`] of the rest, the hash the remainder.
    fn new(buckets: usize, slab_len: usize) -> Layout {
        let widest = buckets.max(slab_len);
        let slot_bits = (usize::BITS - widest.leading_zeros()).min(32);
        Layout::of_widths(slot_bits, DIST_BITS.min(32 - slot_bits))
    }

    fn of_widths(slot_bits: u32, dist_bits: u32) -> Layout {
        Layout {
            slot_bits,
            dist_bits,
            slot_mask: low_bits(slot_bits),
            tag_mask: !low_bits(slot_bits + dist_bits),
        }
    }

    fn slot_mask(self) -> u32 {
        self.slot_mask
    }

    /// The largest distance stored; it also stands for any longer one.
    fn dist_cap(self) -> u32 {
        low_bits(self.dist_bits)
    }

    fn tag_mask(self) -> u32 {
        self.tag_mask
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
    /// `n` empty buckets whose slot field holds any slot below `slab_len`.
    fn with_len(n: usize, slab_len: usize) -> Buckets {
        Buckets {
            buckets: vec![EMPTY; n].into_boxed_slice(),
            layout: Layout::new(n, slab_len),
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

    #[inline]
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
        self.place_at(self.home(hash), self.layout.tag(hash), slot);
    }

    /// [`Buckets::place`] for a slot whose home and tag bits are known.
    fn place_at(&mut self, home: usize, tag: u32, slot: u32) {
        let mut i = home;
        while self.buckets[i] != EMPTY {
            i = self.next(i);
        }
        let dist = self.gap(home, i);
        self.buckets[i] = self.layout.bucket(tag, dist, slot);
        self.live += 1;
    }

    /// Rewrites the bucket of `from` (stored for `hash`) to hold `to`, which
    /// must fit the slot field; false if `from` is not here.
    fn reslot(&mut self, hash: u64, from: u32, to: u32) -> bool {
        let layout = self.layout;
        if self.live == 0 || !layout.fits(from) {
            return false;
        }
        let wanted = layout.tag(hash) | (from + 1);
        let mut i = self.home(hash);
        loop {
            match self.buckets[i] {
                EMPTY => return false,
                v if layout.identity(v) == wanted => {
                    debug_assert!(layout.fits(to));
                    self.buckets[i] = (v & !layout.slot_mask()) | (to + 1);
                    return true;
                }
                _ => i = self.next(i),
            }
        }
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

/// A smaller (or, shrinking, larger) array whose slots are moving to the
/// current one, a few buckets per write, as Redis rehashes its dicts:
/// resizing a big table never stalls the server. Lookups are `&self` and do not move anything,
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
    /// When shrinking, `from` is `2^halvings` times as long as the new
    /// array, with the same layout: a slot's new home is its old home
    /// shifted right, found without its hash.
    halvings: Option<u32>,
}

/// Buckets of the old array moved per insert or removal while growing.
const MIGRATE_PER_WRITE: usize = 32;

/// Buckets of the old array moved per write while shrinking: it is under
/// a quarter full and its slots move without hashing, so most buckets cost
/// a read; a bigger step lets the old array go soon after the removals
/// that emptied it stop (the active expiry's, say, draining a mass
/// expiry).
const MIGRATE_PER_WRITE_SHRINKING: usize = 16 * MIGRATE_PER_WRITE;

/// A table of up to this many buckets (64 KiB) shrinks at once: under
/// 4,096 slots placed, microseconds, where the old array would otherwise
/// stay whole until enough further writes came.
const SHRINK_AT_ONCE_UP_TO: usize = 16384;

/// Slot numbers by member hash. The caller keeps the members: lookups ask it
/// whether a candidate slot holds the member, and removals and resizing ask
/// it for a slot's hash. Inserts pass the slab's length (`slab_len`): every
/// stored slot, and the one inserted, must lie below it.
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
    #[inline]
    pub fn find(&self, hash: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        self.cur
            .find(hash, &mut is)
            .or_else(|| self.old.as_ref().and_then(|m| m.from.find(hash, &mut is)))
    }

    /// Stores `slot`, which must not be stored, for a member with `hash`.
    /// `hash_of` gives any stored slot's hash, to move slots when growing.
    pub fn insert(&mut self, hash: u64, slot: u32, slab_len: usize, hash_of: impl Fn(u32) -> u64) {
        debug_assert!((slot as usize) < slab_len);
        self.make_room(1, slot, slab_len, &hash_of);
        self.migrate_a_step(&hash_of);
        self.cur.place(hash, slot);
    }

    /// Moves the slot stored for a member with `hash` from `from` to `to`,
    /// lower: the member's entry moved down the slab. False if `from` was
    /// not stored. O(1) expected, and no resize (a lower slot fits).
    pub fn reslot(&mut self, hash: u64, from: u32, to: u32) -> bool {
        debug_assert!(to < from, "a move goes down the slab");
        self.cur.reslot(hash, from, to)
            || self
                .old
                .as_mut()
                .is_some_and(|m| m.from.reslot(hash, from, to))
    }

    /// Removes `slot`, stored for a member with `hash`; false if absent.
    /// The buckets after it that may move closer to their home move back
    /// into the gap, up to the next empty bucket (no tombstones, so churn
    /// never forces a rebuild); `hash_of` gives the hash of one whose
    /// distance is past the cap (rare), and of slots moved while growing.
    /// A table left [`sparse`] starts moving to a smaller array.
    pub fn remove(&mut self, hash: u64, slot: u32, hash_of: impl Fn(u32) -> u64) -> bool {
        let removed = self.cur.remove(hash, slot, &hash_of)
            || self
                .old
                .as_mut()
                .is_some_and(|m| m.from.remove(hash, slot, &hash_of));
        self.migrate_a_step(&hash_of);
        if self.old.is_none() && sparse(self.len(), self.cur.len()) {
            self.shrink(&hash_of);
        }
        removed
    }

    /// Makes room for `additional` more slots, none above the slab's length,
    /// growing the table at once if needed (for bulk loads).
    pub fn reserve(&mut self, additional: usize, slab_len: usize, hash_of: impl Fn(u32) -> u64) {
        if !self.has_room(additional, 0) {
            self.migrate(usize::MAX, &hash_of);
            self.grow(additional, slab_len);
            self.migrate(usize::MAX, &hash_of);
        }
    }

    fn has_room(&self, additional: usize, slot: u32) -> bool {
        let n = self.cur.len();
        n > 0 && self.len() + additional <= max_used(n) && self.cur.layout.fits(slot)
    }

    fn make_room(
        &mut self,
        additional: usize,
        slot: u32,
        slab_len: usize,
        hash_of: &impl Fn(u32) -> u64,
    ) {
        if self.has_room(additional, slot) {
            return;
        }
        // A resize still under way finishes first (it cannot, in practice:
        // a growth ends long before the new array fills, and a shrink
        // leaves it half empty and moves four times as fast).
        self.migrate(usize::MAX, hash_of);
        self.grow(additional, slab_len);
    }

    /// Starts moving every slot to a bigger array, with room for
    /// `additional` more and a slot field for every slot below `slab_len`.
    fn grow(&mut self, additional: usize, slab_len: usize) {
        let needed = self.len() + additional;
        let mut n = next_size(self.cur.len());
        while needed > max_used(n) {
            n = next_size(n);
        }
        self.replace_array(Buckets::with_len(n, slab_len), None);
    }

    /// Starts moving every slot to an array [`halvings`] times halved, with
    /// the same layout; a small one moves at once.
    fn shrink(&mut self, hash_of: &impl Fn(u32) -> u64) {
        let n = self.cur.len();
        let k = halvings(self.len(), n);
        if k == 0 {
            return;
        }
        let smaller = Buckets {
            buckets: vec![EMPTY; n >> k].into_boxed_slice(),
            layout: self.cur.layout,
            live: 0,
        };
        self.replace_array(smaller, Some(k));
        if n <= SHRINK_AT_ONCE_UP_TO {
            self.migrate(usize::MAX, hash_of);
        }
    }

    /// Makes `array` the current one and starts moving every slot to it
    /// (`halvings`: see [`Migration`]); none may be under way.
    fn replace_array(&mut self, array: Buckets, halvings: Option<u32>) {
        debug_assert!(self.old.is_none() && self.len() <= max_used(array.len()));
        let from = std::mem::replace(&mut self.cur, array);
        if from.live > 0 {
            let start = from.buckets.iter().position(|&v| v == EMPTY).unwrap_or(0);
            self.old = Some(Migration {
                from,
                start,
                walked: 0,
                halvings,
            });
        }
    }

    /// The part of a resize that one write carries out.
    #[inline]
    fn migrate_a_step(&mut self, hash_of: &impl Fn(u32) -> u64) {
        let Some(m) = &self.old else {
            return;
        };
        let budget = if m.from.len() > self.cur.len() {
            MIGRATE_PER_WRITE_SHRINKING
        } else {
            MIGRATE_PER_WRITE
        };
        self.migrate(budget, hash_of);
    }

    /// Moves the clusters of the old array met within `budget` buckets (a
    /// cluster always whole), and drops the array once it is empty.
    fn migrate(&mut self, budget: usize, hash_of: &impl Fn(u32) -> u64) {
        let Some(m) = self.old.as_mut() else {
            return;
        };
        let n = m.from.len();
        let layout = m.from.layout;
        let mut spent = 0;
        while spent < budget && m.walked + 1 < n && m.from.live > 0 {
            // `start + 1 + walked` is below `2n`: one wrap at most.
            let i = m.start + 1 + m.walked;
            let i = if i >= n { i - n } else { i };
            // Empty buckets up to the end of the array, of the walk or of
            // the budget, skipped in one pass (a shrinking array is mostly
            // empty).
            let run = (n - i).min(n - 1 - m.walked).min(budget - spent);
            let empty = m.from.buckets[i..i + run]
                .iter()
                .position(|&v| v != EMPTY)
                .unwrap_or(run);
            m.walked += empty;
            spent += empty;
            if empty == run {
                continue;
            }
            let i = i + empty;
            m.walked += 1;
            spent += 1;
            // The whole cluster from here to the next empty bucket.
            let mut j = i;
            loop {
                let v = m.from.buckets[j];
                if v == EMPTY {
                    break;
                }
                let slot = layout.slot(v);
                match m.halvings {
                    Some(k) if layout.dist(v) < layout.dist_cap() => {
                        let dist = layout.dist(v) as usize;
                        let home = if j >= dist { j - dist } else { j + n - dist };
                        self.cur.place_at(home >> k, v & layout.tag_mask(), slot);
                    }
                    _ => self.cur.place(hash_of(slot), slot),
                }
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

    /// Whether the current array's slot field holds every slot below
    /// `slab_len` (what inserts need; a migrating array holds its own).
    pub fn holds_slots_below(&self, slab_len: usize) -> bool {
        slab_len == 0 || self.cur.layout.fits(slab_len as u32 - 1)
    }

    /// Hands the bucket arrays to `r` (active defrag).
    pub fn relocate<R: super::relocate::Relocate>(&mut self, r: &mut R) {
        r.slice(&mut self.cur.buckets);
        if let Some(m) = &mut self.old {
            r.slice(&mut m.from.buckets);
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
            if let Some(k) = m.halvings {
                assert_eq!(m.from.len(), self.cur.len() << k, "a shrink halves");
                assert_eq!(
                    (m.from.layout.slot_bits, m.from.layout.dist_bits),
                    (self.cur.layout.slot_bits, self.cur.layout.dist_bits),
                    "a shrink keeps the layout"
                );
            }
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
mod tests;
