//! The large encoding: each member's bytes stored once, in a 24-byte slab
//! entry ([`Entry`]); a hash table of slot numbers keyed by those bytes
//! ([`super::table::SlotTable`]), for O(1) membership; and the deadline
//! index of `(deadline, slot)` pairs ([`super::order::DeadlineIndex`]).
//! Deadlines past the year 10889 do not fit an entry and are kept in `far`.
//!
//! An entry keeps its slot while its deadline changes. It moves only down
//! the slab, when compaction ([`compact`]) fills a hole below it; `scan`
//! walks the slab downwards, so a member that moves is never carried past
//! a scan's position (it may be returned twice, which SCAN allows).
//!
//! Invariants (checked by `check_invariants`):
//! 1. every occupied slot is in `table` exactly once and in `by_deadline`
//!    with its own deadline exactly once; nothing else is in either;
//! 2. `len` counts occupied slots, `member_heap_bytes` sums their members'
//!    heap allocations;
//! 3. `far` holds the exact deadline of exactly the slots whose entry says
//!    [`DeadlineCode::FAR`];
//! 4. the slab keeps its own (see [`super::slab`]); an empty set has an
//!    empty slab; the table's slot field holds every slot of the slab.

use super::entry::{DeadlineCode, Entry, Lookup};
use super::hash::MemberHasher;
use super::member::{self, Member};
use super::order::DeadlineIndex;
use super::relocate::Relocate;
use super::slab::{Probe, Slab};
use super::store::{Items, Store};
use super::table::SlotTable;
use std::collections::HashMap;
use std::ops::ControlFlow;

mod compact;

/// Words of the slab's vacancy bitmap (64 slots each, or a freed chunk)
/// that one write reads to trim trailing vacant slots: a long vacant tail
/// goes over several writes, so no single one stalls.
const TRIM_PER_WRITE: usize = 64;

/// Slab + hash table + deadline index.
#[derive(Clone, Default)]
pub struct Large {
    slots: Slab<Entry>,
    table: SlotTable,
    by_deadline: DeadlineIndex,
    /// Exact deadlines of the entries coded [`DeadlineCode::FAR`].
    far: HashMap<u32, u64>,
    hasher: MemberHasher,
    len: usize,
    member_heap_bytes: usize,
    /// Compaction's progress (see [`compact`]).
    sweep: compact::Sweep,
    /// The set's delivery ([`crate::XSet::set_delivery`]): only large sets
    /// hold one.
    pub delivery: Option<crate::Delivery>,
}

impl Large {
    /// One step of a relocation walk (active defrag): step 0 the slab's
    /// bookkeeping, the hash table and the index's deque of chunks; then a
    /// step per slab chunk (its entries' long members included); then one
    /// per index chunk. Goes on from `step` until `r` says stop, and
    /// returns the next step, or `None` once past the last. The map of far
    /// deadlines (rare, small) is left where it is.
    pub fn relocate<R: Relocate>(&mut self, r: &mut R, mut step: u64) -> Option<u64> {
        loop {
            let slab_chunks = self.slots.chunk_count() as u64;
            let index_chunks = self.by_deadline.chunk_count() as u64;
            match step {
                0 => {
                    self.slots.relocate_books(r);
                    self.table.relocate(r);
                    self.by_deadline.relocate_books(r);
                }
                s if s <= slab_chunks => {
                    self.slots
                        .relocate_chunk((s - 1) as usize, r, |e, r| e.relocate(r));
                }
                s if s - slab_chunks <= index_chunks => {
                    self.by_deadline
                        .relocate_chunk((s - slab_chunks - 1) as usize, r);
                }
                _ => return None,
            }
            step += 1;
            if r.should_stop() {
                return Some(step);
            }
        }
    }

    #[inline]
    fn entry(&self, slot: u32) -> &Entry {
        match self.slots.get(slot as usize) {
            Some(e) => e,
            None => unreachable!("slot {slot} indexed but vacant"),
        }
    }

    /// The slot holding `member`, whose hash is `hash`, and its entry.
    #[inline]
    fn slot_of(&self, hash: u64, member: &[u8]) -> Option<(u32, &Entry)> {
        let slots = &self.slots;
        let probe = Lookup::new(member);
        let mut found = None;
        let slot = self.table.find(hash, |s| {
            found = slots.get(s as usize).filter(|e| e.holds(&probe));
            found.is_some()
        })?;
        found.map(|e| (slot, e))
    }

    /// The exact deadline of the entry at `slot`.
    #[inline]
    fn deadline(&self, slot: u32, entry: &Entry) -> u64 {
        entry
            .code()
            .exact()
            .unwrap_or_else(|| match self.far.get(&slot) {
                Some(&d) => d,
                None => unreachable!("far deadline of slot {slot} missing"),
            })
    }

    /// Whether a deadline index pair is its member's: its slot is occupied
    /// by a member with that deadline. Pairs a refresh left behind are not
    /// (see [`super::order`]). Takes the two fields, not `self`, so the
    /// index can be borrowed mutably beside them.
    fn holds<'a>(
        slots: &'a Slab<Entry>,
        far: &'a HashMap<u32, u64>,
    ) -> impl Fn((u64, u32)) -> bool + 'a {
        move |(d, s)| match slots.get(s as usize) {
            Some(e) => e.code().exact().or_else(|| far.get(&s).copied()) == Some(d),
            None => false,
        }
    }

    /// Records `deadline_ms` of `slot` aside if its code is far, and returns
    /// the code.
    fn code_for(&mut self, slot: u32, deadline_ms: u64) -> DeadlineCode {
        let code = DeadlineCode::of(deadline_ms);
        if code == DeadlineCode::FAR {
            self.far.insert(slot, deadline_ms);
        }
        code
    }

    /// The hash of the member at a slot, which must be occupied: what the
    /// table asks for when it moves slots. Takes the two fields, not `self`,
    /// so the table can be borrowed mutably beside it.
    fn slot_hashes<'a>(
        slots: &'a Slab<Entry>,
        hasher: &'a MemberHasher,
    ) -> impl Fn(u32) -> u64 + 'a {
        move |slot| match slots.get(slot as usize) {
            Some(e) => hasher.hash(e.member()),
            None => unreachable!("slot {slot} indexed but vacant"),
        }
    }

    /// A large store holding `items` (`len` of them), laid out afresh.
    pub fn from_items<'a>(len: usize, items: impl Iterator<Item = (&'a [u8], u64)>) -> Large {
        let mut large = Large::default();
        large.reserve(len);
        for (m, d) in items {
            large.insert(m, d);
        }
        large
    }

    /// The member at slab position `slot` and its deadline, expired or not;
    /// `None` for a vacant or out-of-range slot. O(1): what random sampling
    /// draws from (each stored member owns exactly one slot).
    pub fn at_slot(&self, slot: usize) -> Option<(&[u8], u64)> {
        let entry = self.slots.get(slot)?;
        Some((entry.member(), self.deadline(slot as u32, entry)))
    }

    /// Length of the slab, vacant slots included.
    pub fn slab_len(&self) -> usize {
        self.slots.len()
    }

    /// The longest probe a lookup of a stored member takes.
    #[cfg(test)]
    pub fn longest_probe(&self) -> usize {
        self.table
            .longest_distance(Large::slot_hashes(&self.slots, &self.hasher))
    }

    /// Makes room for `additional` more members in the hash table.
    pub fn reserve(&mut self, additional: usize) {
        let hashes = Large::slot_hashes(&self.slots, &self.hasher);
        self.table.reserve(additional, self.slots.len(), hashes);
    }

    /// Bookkeeping after `slot` was vacated and dropped from the deadline
    /// index: drops it from the hash table, then compacts (members with a
    /// deadline up to `leaving_until` are about to go anyway) and trims the
    /// slab.
    fn release_slot(
        &mut self,
        slot: u32,
        entry: Entry,
        leaving_until: Option<u64>,
    ) -> (Member, u64) {
        let deadline_ms = self.deadline(slot, &entry);
        if entry.code() == DeadlineCode::FAR {
            self.far.remove(&slot);
        }
        let hash = self.hasher.hash(entry.member());
        let hashes = Large::slot_hashes(&self.slots, &self.hasher);
        if !self.table.remove(hash, slot, hashes) {
            unreachable!("slot {slot} missing from the table");
        }
        self.len -= 1;
        self.member_heap_bytes -= entry.heap_bytes();
        if self.len == 0 {
            // Start over: cheaper than trimming a large slab slot by slot.
            self.slots = Slab::default();
            self.sweep = compact::Sweep::default();
        } else {
            self.compact(leaving_until);
            self.slots.trim(TRIM_PER_WRITE);
        }
        (entry.into_member(), deadline_ms)
    }

    /// Adds `member` unless it is stored (then false, nothing changed),
    /// hashing it once: what a loader calls. Members fed in deadline order
    /// into a fresh set take fresh slots in increasing order, so each pair
    /// lands at the end of the deadline index without a search.
    pub fn insert_absent(&mut self, member: &[u8], deadline_ms: u64) -> bool {
        match self.find_or_place(member, deadline_ms) {
            Ok(_) => false,
            Err(hash) => {
                self.insert_at(hash, member, deadline_ms);
                true
            }
        }
    }
}

impl Store for Large {
    type Pos = u32;
    /// The member's hash, not computed twice.
    type Place = u64;

    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn find(&self, member: &[u8]) -> Option<(u32, u64)> {
        let (slot, entry) = self.slot_of(self.hasher.hash(member), member)?;
        Some((slot, self.deadline(slot, entry)))
    }

    fn find_or_place(&self, member: &[u8], deadline_ms: u64) -> Result<(u32, u64), u64> {
        // In a large set, the leaf headers of the deadline the member goes
        // to (refreshed or new) are fetched while it is looked up.
        let hash = self.hasher.hash(member);
        self.by_deadline.prefetch_for(deadline_ms);
        match self.slot_of(hash, member) {
            Some((s, entry)) => Ok((s, self.deadline(s, entry))),
            None => Err(hash),
        }
    }

    fn set_deadline(&mut self, slot: u32, deadline_ms: u64) {
        let old = self.deadline(slot, self.entry(slot));
        if old == deadline_ms {
            return;
        }
        if DeadlineCode::of(old) == DeadlineCode::FAR {
            self.far.remove(&slot);
        }
        let code = self.code_for(slot, deadline_ms);
        match self.slots.get_mut(slot as usize) {
            Some(e) => e.set_code(code),
            None => unreachable!("slot {slot} indexed but vacant"),
        }
        self.by_deadline.replace(
            (old, slot),
            (deadline_ms, slot),
            &Large::holds(&self.slots, &self.far),
        );
        self.touch_slot(slot);
    }

    fn insert(&mut self, member: &[u8], deadline_ms: u64) {
        self.insert_at(self.hasher.hash(member), member, deadline_ms);
    }

    fn insert_at(&mut self, hash: u64, member: &[u8], deadline_ms: u64) {
        let code = DeadlineCode::of(deadline_ms);
        let entry = Entry::new(member, code);
        self.member_heap_bytes += entry.heap_bytes();
        // The slab never exceeds u32::MAX entries: a set that large would
        // need hundreds of GiB, far beyond any Redis instance.
        let slot = self.slots.insert(entry) as u32;
        if code == DeadlineCode::FAR {
            self.far.insert(slot, deadline_ms);
        }
        self.touch_slot(slot);
        let hashes = Large::slot_hashes(&self.slots, &self.hasher);
        self.table.insert(hash, slot, self.slots.len(), hashes);
        self.by_deadline
            .insert((deadline_ms, slot), &Large::holds(&self.slots, &self.far));
        self.len += 1;
        self.compact(None);
    }

    fn remove_at(&mut self, slot: u32) -> (Member, u64) {
        let Some(entry) = self.slots.take(slot as usize) else {
            unreachable!("slot {slot} indexed but vacant");
        };
        let key = (self.deadline(slot, &entry), slot);
        self.by_deadline
            .remove(key, &Large::holds(&self.slots, &self.far));
        self.release_slot(slot, entry, None)
    }

    /// Compaction leaves in place the members up to `latest_ms`: the
    /// caller is about to pop them too, and moving them would be wasted.
    fn pop_soonest_until(&mut self, latest_ms: u64) -> Option<(Member, u64)> {
        let (deadline_ms, slot) = self.by_deadline.first()?;
        if deadline_ms > latest_ms {
            return None;
        }
        let Some(entry) = self.slots.take(slot as usize) else {
            unreachable!("slot {slot} indexed but vacant");
        };
        // The first pair is popped, not searched for again.
        self.by_deadline
            .pop_first(&Large::holds(&self.slots, &self.far));
        Some(self.release_slot(slot, entry, Some(latest_ms)))
    }

    fn soonest(&self) -> Option<(u32, u64)> {
        self.by_deadline.first().map(|(d, s)| (s, d))
    }

    fn live_len(&self, now_ms: u64) -> usize {
        let live = Large::holds(&self.slots, &self.far);
        self.len
            - self
                .by_deadline
                .count_below((now_ms.saturating_add(1), 0), &live)
    }

    fn iter_live(&self, now_ms: u64, rev: bool) -> Items<'_> {
        // Live means a deadline after `now_ms`; `NO_DEADLINE` is `u64::MAX`,
        // so saturating keeps it live.
        let range = self.by_deadline.iter_from(
            (now_ms.saturating_add(1), 0),
            Large::holds(&self.slots, &self.far),
        );
        let pick = move |(d, s): (u64, u32)| (self.entry(s).member(), d);
        if rev {
            Box::new(range.rev().map(pick))
        } else {
            Box::new(range.map(pick))
        }
    }

    fn iter_between(&self, lo: u64, hi: u64, rev: bool) -> Items<'_> {
        let range = self
            .by_deadline
            .between(lo, hi, Large::holds(&self.slots, &self.far));
        let pick = move |(d, s): (u64, u32)| (self.entry(s).member(), d);
        if rev {
            Box::new(range.rev().map(pick))
        } else {
            Box::new(range.map(pick))
        }
    }

    /// Walks the index's leaves in place: a member a step, with no
    /// boxed iterator in between, and one fetch of each pair's entry both
    /// to see that the pair is its member's and to read the member.
    fn for_each_between<'a>(
        &'a self,
        lo: u64,
        hi: u64,
        rev: bool,
        mut f: impl FnMut(&'a [u8], u64) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut range = self.by_deadline.between(lo, hi, |_| true);
        let mut pick = move |(d, s): (u64, u32)| match self.slots.get(s as usize) {
            Some(e) if e.code().exact().or_else(|| self.far.get(&s).copied()) == Some(d) => {
                f(e.member(), d)
            }
            _ => ControlFlow::Continue(()),
        };
        if rev {
            range.rev().try_for_each(&mut pick)
        } else {
            range.try_for_each(&mut pick)
        }
    }

    fn count_between(&self, lo: u64, hi: u64) -> usize {
        let live = Large::holds(&self.slots, &self.far);
        self.by_deadline.count_between(lo, hi, &live)
    }

    fn iter_all(&self) -> Items<'_> {
        Box::new(
            self.by_deadline
                .iter(Large::holds(&self.slots, &self.far))
                .map(move |(d, s)| (self.entry(s).member(), d)),
        )
    }

    /// Walks the slab downwards: cursor 0 starts at the top, any other
    /// cursor `c` goes on with the slots below `c` (those from `c` up were
    /// walked), clamped to the slab's length. Compaction moves entries
    /// only downwards, so one present for the whole scan is never carried
    /// past the walk. The cursor returned is the lowest slot walked, 0 when
    /// the walk is complete.
    fn scan(&self, cursor: u64, count: usize, now_ms: u64) -> (u64, Vec<(&[u8], u64)>) {
        let mut out = Vec::new();
        let mut examined = 0;
        let top = self.slots.len();
        let mut pos = match usize::try_from(cursor) {
            Ok(0) => top,
            Ok(c) => c.min(top),
            Err(_) => top,
        };
        let budget = count.max(1);
        // Vacant slots are walked too, but at most ten bitmap words (64
        // slots each, or a freed chunk) per requested member, as Redis's
        // SCAN bounds empty buckets, so a call over a slab left mostly
        // empty by a mass expiry stays short; it may then return no members
        // and a non-zero cursor.
        let mut words = budget.saturating_mul(10);
        while examined < budget {
            match self.slots.last_occupied_before(pos, &mut words) {
                Probe::Found(slot) => {
                    pos = slot;
                    examined += 1;
                    let e = self.entry(slot as u32);
                    let deadline_ms = self.deadline(slot as u32, e);
                    if deadline_ms > now_ms {
                        out.push((e.member(), deadline_ms));
                    }
                }
                Probe::Stopped(p) => {
                    pos = p;
                    break;
                }
                Probe::Bottom => {
                    pos = 0;
                    break;
                }
            }
        }
        (pos as u64, out)
    }

    /// Exact: slab, hash table, deadline index and long members, allocator
    /// size classes included.
    fn heap_bytes(&self) -> usize {
        let slab = self.slots.heap_bytes();
        let table = self.table.heap_bytes();
        // std's map: a power-of-two bucket count at up to 7/8 load, 16
        // bytes and a control byte per bucket.
        let far = if self.far.capacity() == 0 {
            0
        } else {
            let buckets = (self.far.capacity() * 8 / 7).next_power_of_two();
            member::allocation_size(buckets * 17 + 16)
        };
        slab + table + far + self.by_deadline.heap_bytes() + self.member_heap_bytes
    }

    fn check_invariants(&self) {
        self.slots.check_invariants();
        let occupied: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&s| self.slots.get(s as usize).is_some())
            .collect();
        assert_eq!(occupied.len(), self.len, "len matches occupied slots");
        assert_eq!(
            self.slots.len() - self.slots.vacancies(),
            self.len,
            "the slab counts its vacant slots"
        );
        assert_eq!(self.table.len(), self.len, "table size");
        assert_eq!(self.by_deadline.len(), self.len, "index size");
        let mut heap = 0;
        for &s in &occupied {
            let e = self.entry(s);
            heap += e.heap_bytes();
            assert_eq!(
                self.find(e.member()).map(|f| f.0),
                Some(s),
                "member findable"
            );
            assert_eq!(
                e.code() == DeadlineCode::FAR,
                self.far.contains_key(&s),
                "far deadline kept aside"
            );
        }
        assert_eq!(heap, self.member_heap_bytes, "member heap bytes");
        self.by_deadline
            .check_invariants(&Large::holds(&self.slots, &self.far));
        self.table
            .check_invariants(Large::slot_hashes(&self.slots, &self.hasher));
        assert!(
            self.table.holds_slots_below(self.slots.len()),
            "the table's slot field holds every slot"
        );
        assert_eq!(
            self.len == 0,
            self.slots.len() == 0,
            "an empty set, an empty slab"
        );
        self.check_compaction();
        let coded_far = occupied
            .iter()
            .filter(|&&s| self.entry(s).code() == DeadlineCode::FAR)
            .count();
        assert_eq!(self.far.len(), coded_far, "no stray far deadline");
        for (d, s) in self.by_deadline.iter(Large::holds(&self.slots, &self.far)) {
            assert_eq!(
                self.deadline(s, self.entry(s)),
                d,
                "indexed with its own deadline"
            );
        }
    }
}
