//! The pure core of xset: a set of byte-string members, each with its own
//! absolute deadline in Unix milliseconds.
//!
//! Layout (each member's bytes are stored exactly once):
//! - `slots`: a slab of `(member, deadline_ms)` entries; a member keeps its
//!   slot index for as long as it is present, which is what makes
//!   [`XSet::scan`] safe while deadlines change.
//! - `table`: a hash table of slot indices keyed by the member bytes they
//!   point at, for O(1) membership.
//! - `by_deadline`: an ordered set of `(deadline_ms, slot)` pairs, the
//!   deadline index (the skiplist's role in the design).
//!
//! Invariants, checked by [`XSet::check_invariants`] after every step in the
//! tests:
//! 1. every occupied slot is in `table` exactly once and in `by_deadline` with
//!    its own deadline exactly once; nothing else is in either;
//! 2. `len` is the number of occupied slots, `member_bytes` the sum of their
//!    lengths;
//! 3. every vacant slot below `slots.len()` is on the free list.
//!
//! The core never reads a clock: every operation that depends on time takes
//! `now_ms`. A member is *live* at `now_ms` when its deadline is strictly
//! greater than `now_ms`; [`NO_DEADLINE`] means it never expires.

pub mod encoding;
mod glob;
mod member;
mod slab;

pub use glob::glob_match;
pub use member::Member;

use hashbrown::DefaultHashBuilder;
use hashbrown::HashTable;
use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::ops::Bound;

/// The deadline of a member that never expires (after `XSET.PERSIST`).
pub const NO_DEADLINE: u64 = u64::MAX;

/// The largest deadline a command may set: replies carry deadlines and TTLs
/// as signed 64-bit integers, so anything above this would overflow them.
pub const MAX_DEADLINE_MS: u64 = i64::MAX as u64;

/// Which existing state an add may touch (`ZADD`'s `NX`/`XX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Presence {
    /// Add new members and update existing ones.
    #[default]
    Any,
    /// Only add members that are absent; never touch existing ones.
    OnlyNew,
    /// Only update members that are present; never add.
    OnlyExisting,
}

/// How a new deadline must compare with the current one (`GT`/`LT`).
/// A member without a deadline counts as expiring infinitely far away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compare {
    /// Any new deadline is accepted.
    #[default]
    Any,
    /// Only a strictly later deadline is accepted.
    Greater,
    /// Only a strictly earlier deadline is accepted.
    Less,
}

impl Compare {
    /// Whether `new` may replace `current` under this comparison.
    pub fn allows(self, current: u64, new: u64) -> bool {
        match self {
            Compare::Any => true,
            Compare::Greater => new > current,
            Compare::Less => new < current,
        }
    }
}

/// What [`XSet::add`] did to one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    /// The member was absent (or expired) and is now present.
    Added,
    /// The member was present and its deadline changed.
    Updated,
    /// The member was present with exactly this deadline already.
    Unchanged,
    /// A condition stopped the write; nothing changed.
    Skipped,
    /// The deadline was not after `now_ms`: the stored member (live, or
    /// expired but not yet reclaimed) was removed.
    Removed,
    /// The deadline was not after `now_ms` and the member was not stored:
    /// nothing changed.
    Ignored,
}

/// Which members an expire may touch (`HEXPIRE`'s `NX`/`XX`): these test the
/// presence of a deadline, not of the member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExpireCondition {
    /// Always set.
    #[default]
    Always,
    /// Only members that have no deadline.
    NoDeadline,
    /// Only members that have a deadline.
    HasDeadline,
    /// Only when the new deadline is later (no deadline counts as infinite).
    Greater,
    /// Only when the new deadline is earlier (no deadline counts as infinite).
    Less,
}

/// What [`XSet::expire`] did to one member; the integer is the reply code
/// `HEXPIRE` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireOutcome {
    /// -2: the member is absent (or expired).
    NoMember = -2,
    /// 0: the condition was not met.
    ConditionNotMet = 0,
    /// 1: the deadline was set.
    Set = 1,
    /// 2: the deadline was not after `now_ms`, so the member was removed.
    Removed = 2,
}

/// What [`XSet::persist`] did to one member; the integer is the reply code
/// `HPERSIST` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistOutcome {
    /// -2: the member is absent (or expired).
    NoMember = -2,
    /// -1: the member had no deadline.
    NoDeadline = -1,
    /// 1: the deadline was removed.
    Persisted = 1,
}

/// A member and its deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    member: Member,
    deadline_ms: u64,
}

/// A set whose members each carry their own absolute deadline.
#[derive(Clone)]
pub struct XSet {
    slots: slab::Chunked<Option<Entry>>,
    free: Vec<u32>,
    table: HashTable<u32>,
    by_deadline: BTreeSet<(u64, u32)>,
    hasher: DefaultHashBuilder,
    len: usize,
    member_bytes: usize,
    /// Heap bytes of members too long to be stored inline.
    member_heap_bytes: usize,
}

impl Default for XSet {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for XSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.iter_all()
                    .map(|(m, d)| (String::from_utf8_lossy(m), d)),
            )
            .finish()
    }
}

impl XSet {
    /// An empty set. Allocates nothing.
    pub fn new() -> Self {
        XSet {
            slots: slab::Chunked::default(),
            free: Vec::new(),
            table: HashTable::new(),
            by_deadline: BTreeSet::new(),
            hasher: DefaultHashBuilder::default(),
            len: 0,
            member_bytes: 0,
            member_heap_bytes: 0,
        }
    }

    /// Number of members stored, expired or not. O(1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no member is stored at all. O(1).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of members live at `now_ms`. O(log n + expired).
    pub fn live_len(&self, now_ms: u64) -> usize {
        self.len
            - self
                .by_deadline
                .range(..(now_ms.saturating_add(1), 0))
                .count()
    }

    /// Total bytes of all members, for memory accounting. O(1).
    pub fn member_bytes(&self) -> usize {
        self.member_bytes
    }

    /// The heap bytes this set holds, for `MEMORY USAGE`: exact for the
    /// slab, hash table and long members (allocator size classes included),
    /// estimated for the deadline index (B-tree leaves of 11 keys, about 60%
    /// full when deadlines arrive in order). O(1).
    pub fn heap_bytes(&self) -> usize {
        let slab = self.slots.heap_bytes();
        let free = member::allocation_size(self.free.capacity() * 4);
        let table = if self.table.capacity() == 0 {
            0
        } else {
            // hashbrown: a power-of-two bucket count at up to 7/8 load, one
            // u32 and one control byte per bucket, plus a group of slack.
            let buckets = (self.table.capacity() * 8 / 7).next_power_of_two();
            member::allocation_size(buckets * 5 + 16)
        };
        let index = self.len * 30;
        slab + free + table + index + self.member_heap_bytes
    }

    fn hash(&self, member: &[u8]) -> u64 {
        self.hasher.hash_one(member)
    }

    fn find_slot(&self, member: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.table
            .find(self.hash(member), |&s| {
                slots[s as usize]
                    .as_ref()
                    .is_some_and(|e| &*e.member == member)
            })
            .copied()
    }

    fn entry(&self, slot: u32) -> &Entry {
        match &self.slots[slot as usize] {
            Some(e) => e,
            None => unreachable!("slot {slot} indexed but vacant"),
        }
    }

    /// The stored deadline of `member`, even if it has passed; `None` when
    /// absent. O(1).
    pub fn deadline_of(&self, member: &[u8]) -> Option<u64> {
        self.find_slot(member).map(|s| self.entry(s).deadline_ms)
    }

    /// The deadline of `member` if it is live at `now_ms`. O(1).
    pub fn live_deadline_of(&self, member: &[u8], now_ms: u64) -> Option<u64> {
        self.deadline_of(member).filter(|&d| d > now_ms)
    }

    /// Whether `member` is live at `now_ms`. O(1).
    pub fn contains(&self, member: &[u8], now_ms: u64) -> bool {
        self.live_deadline_of(member, now_ms).is_some()
    }

    /// The earliest stored deadline, expired or not; `None` when the set is
    /// empty or holds only members without a deadline. O(log n).
    pub fn next_deadline(&self) -> Option<u64> {
        self.by_deadline
            .first()
            .map(|&(d, _)| d)
            .filter(|&d| d != NO_DEADLINE)
    }

    /// Makes room for `additional` more members in the hash table. O(n) if
    /// it grows.
    pub fn reserve(&mut self, additional: usize) {
        let slots = &self.slots;
        let hasher = &self.hasher;
        self.table
            .reserve(additional, |&s| match &slots[s as usize] {
                Some(e) => hasher.hash_one(&*e.member),
                None => unreachable!("slot {s} indexed but vacant"),
            });
    }

    /// Sets `member`'s deadline unconditionally, adding it if absent; returns
    /// whether it was absent. Used where the writer has already decided
    /// (replication, loading). O(log n).
    pub fn set(&mut self, member: &[u8], deadline_ms: u64) -> bool {
        match self.find_slot(member) {
            Some(slot) => {
                self.reindex(slot, deadline_ms);
                false
            }
            None => {
                self.insert_new(member, deadline_ms);
                true
            }
        }
    }

    fn reindex(&mut self, slot: u32, deadline_ms: u64) {
        let entry = match &mut self.slots[slot as usize] {
            Some(e) => e,
            None => unreachable!("slot {slot} indexed but vacant"),
        };
        let old = std::mem::replace(&mut entry.deadline_ms, deadline_ms);
        if old != deadline_ms {
            self.by_deadline.remove(&(old, slot));
            self.by_deadline.insert((deadline_ms, slot));
        }
    }

    fn insert_new(&mut self, member: &[u8], deadline_ms: u64) {
        let slot = self.take_vacant_slot();
        let hash = self.hash(member);
        self.slots[slot as usize] = Some(Entry {
            member: Member::new(member),
            deadline_ms,
        });
        let slots = &self.slots;
        let hasher = &self.hasher;
        self.table
            .insert_unique(hash, slot, |&s| match &slots[s as usize] {
                Some(e) => hasher.hash_one(&*e.member),
                None => unreachable!("slot {s} indexed but vacant"),
            });
        self.by_deadline.insert((deadline_ms, slot));
        self.len += 1;
        self.member_bytes += member.len();
        self.member_heap_bytes += member::allocation_size(if member.len() > member::INLINE_MAX {
            member.len()
        } else {
            0
        });
    }

    fn take_vacant_slot(&mut self) -> u32 {
        while let Some(slot) = self.free.pop() {
            if self.slots.get(slot as usize).is_some_and(Option::is_none) {
                return slot;
            }
        }
        self.slots.push(None);
        // The slab never exceeds u32::MAX entries: a set that large would
        // need hundreds of GiB, far beyond any Redis instance.
        (self.slots.len() - 1) as u32
    }

    fn remove_slot(&mut self, slot: u32) -> Entry {
        let entry = match self.slots[slot as usize].take() {
            Some(e) => e,
            None => unreachable!("slot {slot} indexed but vacant"),
        };
        let hash = self.hash(&entry.member);
        match self.table.find_entry(hash, |&s| s == slot) {
            Ok(found) => {
                found.remove();
            }
            Err(_) => unreachable!("slot {slot} missing from the table"),
        }
        self.by_deadline.remove(&(entry.deadline_ms, slot));
        self.len -= 1;
        self.member_bytes -= entry.member.len();
        self.member_heap_bytes -= entry.member.heap_bytes();
        if slot as usize + 1 == self.slots.len() {
            // Trailing vacancies are cut so the slab shrinks with the set;
            // stale free-list entries are skipped in `take_vacant_slot`.
            while self.slots.last().is_some_and(Option::is_none) {
                self.slots.pop();
            }
        } else {
            self.free.push(slot);
        }
        if self.len == 0 {
            self.free.clear();
        }
        entry
    }

    /// Adds `member` with `deadline_ms` under the given conditions, treating
    /// a member whose deadline is not after `now_ms` as absent. A deadline
    /// that is not after `now_ms` removes the member instead (if the
    /// conditions allow touching it). O(log n).
    pub fn add(
        &mut self,
        member: &[u8],
        deadline_ms: u64,
        presence: Presence,
        compare: Compare,
        now_ms: u64,
    ) -> AddOutcome {
        let found = self.find_slot(member);
        let current = found.map(|s| (s, self.entry(s).deadline_ms));
        match current {
            Some((slot, current)) if current > now_ms => {
                if presence == Presence::OnlyNew || !compare.allows(current, deadline_ms) {
                    AddOutcome::Skipped
                } else if deadline_ms <= now_ms {
                    self.remove_slot(slot);
                    AddOutcome::Removed
                } else if current == deadline_ms {
                    AddOutcome::Unchanged
                } else {
                    self.reindex(slot, deadline_ms);
                    AddOutcome::Updated
                }
            }
            stale => {
                if presence == Presence::OnlyExisting {
                    return AddOutcome::Skipped;
                }
                if deadline_ms <= now_ms {
                    // An expired member is treated as absent, so adding it
                    // already past due just reclaims it.
                    return match stale {
                        Some((slot, _)) => {
                            self.remove_slot(slot);
                            AddOutcome::Removed
                        }
                        None => AddOutcome::Ignored,
                    };
                }
                match stale {
                    Some((slot, _)) => self.reindex(slot, deadline_ms),
                    None => self.insert_new(member, deadline_ms),
                }
                AddOutcome::Added
            }
        }
    }

    /// Removes `member` whether or not it has expired and returns the
    /// deadline it had; `None` when it was not stored. A caller reports the
    /// member as removed only if that deadline is after its `now_ms`.
    /// O(log n).
    pub fn remove(&mut self, member: &[u8]) -> Option<u64> {
        let slot = self.find_slot(member)?;
        Some(self.remove_slot(slot).deadline_ms)
    }

    /// Sets the deadline of a live member under `condition`. A deadline not
    /// after `now_ms` removes the member. O(log n).
    pub fn expire(
        &mut self,
        member: &[u8],
        deadline_ms: u64,
        condition: ExpireCondition,
        now_ms: u64,
    ) -> ExpireOutcome {
        let Some(slot) = self.find_slot(member) else {
            return ExpireOutcome::NoMember;
        };
        let current = self.entry(slot).deadline_ms;
        if current <= now_ms {
            return ExpireOutcome::NoMember;
        }
        let allowed = match condition {
            ExpireCondition::Always => true,
            ExpireCondition::NoDeadline => current == NO_DEADLINE,
            ExpireCondition::HasDeadline => current != NO_DEADLINE,
            ExpireCondition::Greater => deadline_ms > current,
            ExpireCondition::Less => deadline_ms < current,
        };
        if !allowed {
            return ExpireOutcome::ConditionNotMet;
        }
        if deadline_ms <= now_ms {
            self.remove_slot(slot);
            return ExpireOutcome::Removed;
        }
        self.reindex(slot, deadline_ms);
        ExpireOutcome::Set
    }

    /// Removes the deadline of a live member. O(log n).
    pub fn persist(&mut self, member: &[u8], now_ms: u64) -> PersistOutcome {
        match self.find_slot(member) {
            Some(slot) => {
                let current = self.entry(slot).deadline_ms;
                if current <= now_ms {
                    PersistOutcome::NoMember
                } else if current == NO_DEADLINE {
                    PersistOutcome::NoDeadline
                } else {
                    self.reindex(slot, NO_DEADLINE);
                    PersistOutcome::Persisted
                }
            }
            None => PersistOutcome::NoMember,
        }
    }

    /// Removes up to `limit` members whose deadline is not after `now_ms`,
    /// soonest first, and returns them with the earliest deadline left
    /// (expired or not; `None` if nothing with a deadline remains).
    /// O(k log n) for k removed.
    pub fn drain_expired(&mut self, now_ms: u64, limit: usize) -> (Vec<Member>, Option<u64>) {
        let mut removed = Vec::new();
        while removed.len() < limit {
            match self.by_deadline.first() {
                Some(&(d, slot)) if d <= now_ms => removed.push(self.remove_slot(slot).member),
                _ => break,
            }
        }
        (removed, self.next_deadline())
    }

    /// Removes the `count` live members that expire soonest (members without
    /// a deadline go last) and returns them; used to cap a set's length.
    /// Call after expired members were drained. O(k log n).
    pub fn pop_soonest(&mut self, count: usize) -> Vec<Member> {
        let mut removed = Vec::with_capacity(count.min(self.len));
        while removed.len() < count {
            match self.by_deadline.first() {
                Some(&(_, slot)) => removed.push(self.remove_slot(slot).member),
                None => break,
            }
        }
        removed
    }

    /// Live members at `now_ms` with their deadlines, soonest first (or
    /// latest first when `rev`); members without a deadline sort as latest.
    /// Ties keep a stable order. O(log n) to start, O(1) per item.
    pub fn iter_live(&self, now_ms: u64, rev: bool) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let range = self
            .by_deadline
            .range((Bound::Excluded((now_ms, u32::MAX)), Bound::Unbounded));
        let ordered: Box<dyn Iterator<Item = &(u64, u32)>> = if rev {
            Box::new(range.rev())
        } else {
            Box::new(range)
        };
        ordered.map(move |&(d, s)| (&*self.entry(s).member, d))
    }

    /// Every stored member with its deadline, expired ones included, in
    /// deadline order. For persistence and digests.
    pub fn iter_all(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        self.by_deadline
            .iter()
            .map(move |&(d, s)| (&*self.entry(s).member, d))
    }

    /// Visits slots from `cursor`, examining at most `count` stored members,
    /// and returns the live ones with the cursor to continue from (0 when the
    /// scan is complete). A member present for a whole scan keeps its slot
    /// and so is returned exactly once, whatever happens to deadlines or to
    /// other members meanwhile. O(count) plus vacant slots skipped.
    pub fn scan(&self, cursor: u64, count: usize, now_ms: u64) -> (u64, Vec<(&[u8], u64)>) {
        let mut out = Vec::new();
        let mut examined = 0;
        let start = usize::try_from(cursor).unwrap_or(usize::MAX);
        let mut i = start.min(self.slots.len());
        let budget = count.max(1);
        while i < self.slots.len() && examined < budget {
            if let Some(e) = &self.slots[i] {
                examined += 1;
                if e.deadline_ms > now_ms {
                    out.push((&*e.member, e.deadline_ms));
                }
            }
            i += 1;
        }
        let next = if i >= self.slots.len() { 0 } else { i as u64 };
        (next, out)
    }

    /// Panics with a description if an invariant from the module docs does
    /// not hold. O(n); for tests.
    pub fn check_invariants(&self) {
        let occupied: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&s| self.slots[s as usize].is_some())
            .collect();
        assert_eq!(occupied.len(), self.len, "len matches occupied slots");
        assert_eq!(self.table.len(), self.len, "table size");
        assert_eq!(self.by_deadline.len(), self.len, "index size");
        let mut bytes = 0;
        for &s in &occupied {
            let e = self.entry(s);
            bytes += e.member.len();
            assert_eq!(self.find_slot(&e.member), Some(s), "member findable");
            assert!(
                self.by_deadline.contains(&(e.deadline_ms, s)),
                "indexed by deadline"
            );
        }
        assert_eq!(bytes, self.member_bytes, "member bytes");
        let heap: usize = occupied
            .iter()
            .map(|&s| self.entry(s).member.heap_bytes())
            .sum();
        assert_eq!(heap, self.member_heap_bytes, "member heap bytes");
        for (s, slot) in self.slots.iter().enumerate() {
            if slot.is_none() {
                assert!(
                    self.free.contains(&(s as u32)),
                    "vacant slot {s} on free list"
                );
            }
        }
        assert!(
            self.slots.last().is_none_or(Option::is_some),
            "no trailing vacancy"
        );
    }
}

#[cfg(test)]
mod tests;
