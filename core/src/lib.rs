//! The pure core of xset: a set of byte-string members, each with its own
//! absolute deadline in Unix milliseconds.
//!
//! Two encodings sit behind one [`store::Store`] interface, and the
//! semantics (conditions, expiry, persistence, draining) are written once,
//! here, on top of it:
//! - [`small::Small`]: one buffer in deadline order, for sets of up to
//!   [`Limits::max_small_members`] members of at most
//!   [`Limits::max_small_member_bytes`] bytes;
//! - [`large::Large`]: slab + hash table + deadline index, each member's
//!   bytes stored once; its memory follows its membership, compacted a
//!   few entries per write.
//!
//! A set converts to large as soon as an insert would break a small limit,
//! and back to small when it shrinks to half the member limit with only
//! short members (the gap stops a set at the edge from flapping).
//!
//! The core never reads a clock: every operation that depends on time takes
//! `now_ms`. A member is *live* at `now_ms` when its deadline is strictly
//! greater than `now_ms`; [`NO_DEADLINE`] means it never expires.

#![forbid(unsafe_code)]

pub mod algebra;
mod deadline;
pub mod encoding;
mod entry;
mod glob;
mod hash;
mod integer;
mod large;
mod member;
mod order;
pub mod relocate;
mod sample;
mod slab;
mod slot;
mod small;
mod splitmix;
mod store;
mod stream_id;
mod table;
mod ties;
mod window;

pub use deadline::{MAX_DEADLINE_MS, NO_DEADLINE};
pub use glob::glob_match;
pub use integer::string2ll;
pub use member::Member;
pub use sample::Draws;
pub use slot::key_slot;
pub use splitmix::SplitMix64;
pub use stream_id::StreamId;
pub use window::{Bound, BoundValue, Window};

use large::Large;
use relocate::Relocate;
use small::Small;
use std::ops::ControlFlow;
use store::Store;

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

/// The add rule: what an add of `member` at `deadline_ms` does under
/// `presence` and `compare`, given the member's deadline if it is live at
/// `now_ms` (`live`) and whether it is stored at all (`stored`: a live
/// member is stored; an expired one may still be). An expired member counts
/// as absent: `NX` may add it and `XX` skips it. A deadline not after
/// `now_ms` removes the member where the conditions let the add touch it.
/// [`XSet::add`] carries the outcome out; a caller counting ahead (`CAP`)
/// reads it without writing. O(1).
pub fn add_outcome(
    live: Option<u64>,
    stored: bool,
    deadline_ms: u64,
    now_ms: u64,
    presence: Presence,
    compare: Compare,
) -> AddOutcome {
    match live {
        Some(current) => {
            if presence == Presence::OnlyNew || !compare.allows(current, deadline_ms) {
                AddOutcome::Skipped
            } else if deadline_ms <= now_ms {
                AddOutcome::Removed
            } else if current == deadline_ms {
                AddOutcome::Unchanged
            } else {
                AddOutcome::Updated
            }
        }
        None if presence == Presence::OnlyExisting => AddOutcome::Skipped,
        None if deadline_ms <= now_ms && stored => AddOutcome::Removed,
        None if deadline_ms <= now_ms => AddOutcome::Ignored,
        None => AddOutcome::Added,
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

/// When a set uses the small encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most members a small set holds (Redis's zset default is 128).
    pub max_small_members: u16,
    /// The longest member a small set holds, at most 255.
    pub max_small_member_bytes: u8,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_small_members: 128,
            max_small_member_bytes: 64,
        }
    }
}

#[derive(Clone)]
enum Repr {
    Small(Small),
    Large(Box<Large>),
}

/// Where a set delivers the members that leave it because their deadline
/// passed: a stream key of the same database, trimmed approximately to
/// `maxlen` entries when one is given. Part of the set: it is saved,
/// loaded and copied with it. A set with a delivery uses the large
/// encoding, which holds it, so that the many sets without one stay as
/// small as they were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The stream's key name.
    pub stream: Vec<u8>,
    /// The length the stream is trimmed to, about (`XADD MAXLEN ~`).
    pub maxlen: Option<u64>,
}

/// A set whose members each carry their own absolute deadline.
#[derive(Clone)]
pub struct XSet {
    repr: Repr,
    limits: Limits,
    /// Changes whenever the encoding changes (conversions) and starts at
    /// random; a large-encoding cursor carries it, so a cursor from another
    /// layout restarts the scan instead of skipping.
    epoch: u32,
}

/// Runs `$body` with `$s` bound to the set's store, whichever it is.
macro_rules! with_store {
    ($set:expr, $s:ident => $body:expr) => {
        match &$set.repr {
            Repr::Small($s) => $body,
            Repr::Large(large) => {
                let $s = &**large;
                $body
            }
        }
    };
}

/// As [`with_store`], mutably.
macro_rules! with_store_mut {
    ($set:expr, $s:ident => $body:expr) => {
        match &mut $set.repr {
            Repr::Small($s) => $body,
            Repr::Large(large) => {
                let $s = &mut **large;
                $body
            }
        }
    };
}

/// Bits of a scan cursor that hold the slab position; the 23 bits above hold
/// the layout epoch, so a cursor always fits a signed 64-bit integer.
const CURSOR_POS_BITS: u32 = 40;
const EPOCH_MASK: u32 = (1 << 23) - 1;

/// A random starting epoch: a cursor handed out by another process (before
/// a restart, a reload or a failover) almost surely fails to match and the
/// scan starts over instead of skipping members.
fn random_epoch() -> u32 {
    use std::hash::BuildHasher;
    (std::collections::hash_map::RandomState::new().hash_one(0u8) as u32) & EPOCH_MASK
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
    /// An empty set with the default [`Limits`]. Allocates nothing.
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// An empty set that uses the small encoding within `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        XSet {
            repr: Repr::Small(Small::default()),
            limits,
            epoch: random_epoch(),
        }
    }

    /// Whether the set currently uses the small encoding.
    pub fn is_small(&self) -> bool {
        matches!(self.repr, Repr::Small(_))
    }

    /// Number of members stored, expired or not. O(1).
    pub fn len(&self) -> usize {
        with_store!(self, s => s.len())
    }

    /// Whether no member is stored at all. O(1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where expired members are delivered, if anywhere.
    pub fn delivery(&self) -> Option<&Delivery> {
        match &self.repr {
            Repr::Large(l) => l.delivery.as_ref(),
            Repr::Small(_) => None,
        }
    }

    /// Sets (or, with `None`, clears) where expired members are delivered.
    /// Setting one converts the set to the large encoding; clearing it lets
    /// a set small enough convert back. O(n) when it converts, else O(1).
    pub fn set_delivery(&mut self, delivery: Option<Delivery>) {
        match delivery {
            Some(d) => {
                self.convert_to_large();
                if let Repr::Large(l) = &mut self.repr {
                    l.delivery = Some(d);
                }
            }
            None => {
                if let Repr::Large(l) = &mut self.repr {
                    l.delivery = None;
                }
                self.shrink_if_small_enough();
            }
        }
    }

    /// Whether the set must stay when it holds no member: it carries a
    /// [`Delivery`], whose stream must not silently stop being fed because
    /// every member lapsed at once (as an empty stream stays).
    pub fn keeps_when_empty(&self) -> bool {
        self.delivery().is_some()
    }

    /// Number of members live at `now_ms`. Large: O(log n + expired);
    /// small: O(n).
    pub fn live_len(&self, now_ms: u64) -> usize {
        with_store!(self, s => s.live_len(now_ms))
    }

    /// Hands the set's allocations to `r` for the server's active defrag,
    /// from `cursor` (0 to start) until `r` says stop; returns where to
    /// resume, or `None` when the walk is done. The set holds the same
    /// members and deadlines afterwards, whatever `r` moved.
    pub fn relocate<R: Relocate>(&mut self, r: &mut R, cursor: u64) -> Option<u64> {
        match &mut self.repr {
            Repr::Small(s) => {
                s.relocate(r);
                None
            }
            Repr::Large(large) => {
                if cursor == 0 {
                    r.boxed(large);
                }
                large.relocate(r, cursor)
            }
        }
    }

    /// The heap bytes this set holds, for `MEMORY USAGE`. O(1) large, O(1)
    /// small.
    pub fn heap_bytes(&self) -> usize {
        // The delivery itself is inside the large store; its name is not.
        let delivery = self.delivery().map_or(0, |d| d.stream.capacity());
        delivery
            + match &self.repr {
                Repr::Small(s) => s.heap_bytes(),
                Repr::Large(l) => std::mem::size_of::<Large>() + l.heap_bytes(),
            }
    }

    /// The stored deadline of `member`, even if it has passed; `None` when
    /// absent. Large: O(1); small: O(n).
    #[inline]
    pub fn deadline_of(&self, member: &[u8]) -> Option<u64> {
        with_store!(self, s => s.find(member).map(|(_, d)| d))
    }

    /// The deadline of `member` if it is live at `now_ms`.
    #[inline]
    pub fn live_deadline_of(&self, member: &[u8], now_ms: u64) -> Option<u64> {
        self.deadline_of(member).filter(|&d| d > now_ms)
    }

    /// Whether `member` is live at `now_ms`.
    #[inline]
    pub fn contains(&self, member: &[u8], now_ms: u64) -> bool {
        self.live_deadline_of(member, now_ms).is_some()
    }

    /// The earliest stored deadline, expired or not; `None` when the set is
    /// empty or holds only members without a deadline. O(log n) large, O(1)
    /// small.
    #[inline]
    pub fn next_deadline(&self) -> Option<u64> {
        with_store!(self, s => s.soonest().map(|(_, d)| d).filter(|&d| d != NO_DEADLINE))
    }

    /// Makes room for `additional` more members (used by the RDB loader).
    pub fn reserve(&mut self, additional: usize) {
        let limit = usize::from(self.limits.max_small_members);
        if let Repr::Small(_) = self.repr
            && self.len() + additional > limit
        {
            self.convert_to_large();
        }
        if let Repr::Large(l) = &mut self.repr {
            l.reserve(additional);
        }
    }

    fn convert_to_large(&mut self) {
        if let Repr::Small(small) = &self.repr {
            self.repr = Repr::Large(Box::new(Large::from_items(small.len(), small.iter_all())));
            self.next_epoch();
        }
    }

    /// Converts to large before storing `member` at `deadline_ms` would
    /// break a small limit (`adding`: as a new member).
    fn make_room_for(&mut self, member: &[u8], deadline_ms: u64, adding: bool) {
        if self.needs_room_for(member, deadline_ms, adding) {
            self.convert_to_large();
        }
    }

    /// Whether storing `member` at `deadline_ms` (`adding`: as a new
    /// member) would break a small limit.
    fn needs_room_for(&self, member: &[u8], deadline_ms: u64, adding: bool) -> bool {
        match &self.repr {
            Repr::Small(s) => {
                (adding && s.len() >= usize::from(self.limits.max_small_members))
                    || member.len() > usize::from(self.limits.max_small_member_bytes)
                    || (deadline_ms >= small::MAX_SMALL_DEADLINE && deadline_ms != NO_DEADLINE)
            }
            Repr::Large(_) => false,
        }
    }

    fn next_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1) & EPOCH_MASK;
    }

    /// Converts back to small after removals, once the set has shrunk to
    /// half the member limit and every member is short. (A large set that
    /// stays large compacts itself as members leave.)
    fn shrink_if_small_enough(&mut self) {
        if let Repr::Large(l) = &self.repr
            && l.delivery.is_none()
            && l.len() <= usize::from(self.limits.max_small_members) / 2
            && l.iter_all().all(|(m, d)| {
                m.len() <= usize::from(self.limits.max_small_member_bytes)
                    && (d < small::MAX_SMALL_DEADLINE || d == NO_DEADLINE)
            })
        {
            self.repr = Repr::Small(Small::from_sorted(l.iter_all()));
            self.next_epoch();
        }
    }

    fn insert_new(&mut self, member: &[u8], deadline_ms: u64) {
        self.make_room_for(member, deadline_ms, true);
        with_store_mut!(self, s => s.insert(member, deadline_ms));
    }

    /// Sets `member`'s deadline unconditionally, adding it if absent; returns
    /// whether it was absent. Used where the writer has already decided
    /// (replication, loading).
    pub fn set(&mut self, member: &[u8], deadline_ms: u64) -> bool {
        match with_store!(self, s => s.find(member).map(|(_, d)| d)) {
            Some(_) => {
                set_existing(self, member, deadline_ms);
                false
            }
            None => {
                self.insert_new(member, deadline_ms);
                true
            }
        }
    }

    /// Adds `member` with `deadline_ms` unless it is stored, in which case
    /// it returns false and changes nothing. For loaders: members fed in
    /// deadline order into a set made large by [`XSet::reserve`] cost one
    /// hash and no index search each; any order stays correct.
    pub fn insert_absent(&mut self, member: &[u8], deadline_ms: u64) -> bool {
        if let Repr::Large(l) = &mut self.repr {
            return l.insert_absent(member, deadline_ms);
        }
        if self.deadline_of(member).is_some() {
            return false;
        }
        self.insert_new(member, deadline_ms);
        true
    }

    /// Adds `member` with `deadline_ms` under the given conditions, treating
    /// a member whose deadline is not after `now_ms` as absent. A deadline
    /// that is not after `now_ms` removes the member instead (if the
    /// conditions allow touching it). O(log n) large, O(n) small.
    pub fn add(
        &mut self,
        member: &[u8],
        deadline_ms: u64,
        presence: Presence,
        compare: Compare,
        now_ms: u64,
    ) -> AddOutcome {
        // The common cases, a refresh (a live member moved to another live
        // deadline that this encoding holds) and a new member that this
        // encoding has room for, with one lookup: the position found is
        // used to move it, the place found to add it. Otherwise the
        // lookup's answer (absent, or stored but expired) serves the
        // general case below.
        let mut looked_up = None;
        if deadline_ms > now_ms && !self.needs_room_for(member, deadline_ms, false) {
            let may_add = !self.needs_room_for(member, deadline_ms, true)
                && add_outcome(None, false, deadline_ms, now_ms, presence, compare)
                    == AddOutcome::Added;
            let refreshed = with_store_mut!(self, s => match s.find_or_place(member, deadline_ms) {
                Ok((pos, current)) if current > now_ms => Ok(
                    match add_outcome(Some(current), true, deadline_ms, now_ms, presence, compare) {
                        AddOutcome::Updated => {
                            s.set_deadline(pos, deadline_ms);
                            AddOutcome::Updated
                        }
                        // Skipped or Unchanged: the deadline is live.
                        other => other,
                    },
                ),
                Ok((_, expired)) => Err(Some(expired)),
                Err(place) if may_add => {
                    s.insert_at(place, member, deadline_ms);
                    Ok(AddOutcome::Added)
                }
                Err(_) => Err(None),
            });
            match refreshed {
                Ok(outcome) => return outcome,
                Err(current) => looked_up = Some(current),
            }
        }
        let current =
            looked_up.unwrap_or_else(|| with_store!(self, s => s.find(member).map(|(_, d)| d)));
        let live = current.filter(|&d| d > now_ms);
        let outcome = add_outcome(
            live,
            current.is_some(),
            deadline_ms,
            now_ms,
            presence,
            compare,
        );
        match outcome {
            AddOutcome::Added if current.is_none() => self.insert_new(member, deadline_ms),
            // An expired member brought back, or a live one moved.
            AddOutcome::Added | AddOutcome::Updated => set_existing(self, member, deadline_ms),
            AddOutcome::Removed => {
                self.remove_stored(member);
                self.shrink_if_small_enough();
            }
            AddOutcome::Unchanged | AddOutcome::Skipped | AddOutcome::Ignored => {}
        }
        outcome
    }

    fn remove_stored(&mut self, member: &[u8]) -> Option<u64> {
        with_store_mut!(self, s => {
            let (pos, _) = s.find(member)?;
            Some(s.remove_at(pos).1)
        })
    }

    /// Removes `member` whether or not it has expired and returns the
    /// deadline it had; `None` when it was not stored. A caller reports the
    /// member as removed only if that deadline is after its `now_ms`.
    pub fn remove(&mut self, member: &[u8]) -> Option<u64> {
        let removed = self.remove_stored(member);
        if removed.is_some() {
            self.shrink_if_small_enough();
        }
        removed
    }

    /// Sets the deadline of a live member under `condition`. A deadline not
    /// after `now_ms` removes the member.
    pub fn expire(
        &mut self,
        member: &[u8],
        deadline_ms: u64,
        condition: ExpireCondition,
        now_ms: u64,
    ) -> ExpireOutcome {
        let Some(current) = self.deadline_of(member) else {
            return ExpireOutcome::NoMember;
        };
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
            self.remove(member);
            return ExpireOutcome::Removed;
        }
        set_existing(self, member, deadline_ms);
        ExpireOutcome::Set
    }

    /// Removes the deadline of a live member.
    pub fn persist(&mut self, member: &[u8], now_ms: u64) -> PersistOutcome {
        match self.deadline_of(member) {
            Some(current) if current <= now_ms => PersistOutcome::NoMember,
            Some(NO_DEADLINE) => PersistOutcome::NoDeadline,
            Some(_) => {
                set_existing(self, member, NO_DEADLINE);
                PersistOutcome::Persisted
            }
            None => PersistOutcome::NoMember,
        }
    }

    /// Removes up to `limit` members whose deadline is not after `now_ms`,
    /// soonest first, and returns them with the earliest deadline left
    /// (expired or not; `None` if nothing with a deadline remains).
    /// O(k log n) large, O(k n) small.
    pub fn drain_expired(&mut self, now_ms: u64, limit: usize) -> (Vec<Member>, Option<u64>) {
        let mut removed = Vec::new();
        self.drain_each(now_ms, limit, |member, _| removed.push(member));
        (removed, self.next_deadline())
    }

    /// As [`XSet::drain_expired`], with each member's deadline: what a
    /// [`Delivery`] records.
    pub fn drain_expired_with_deadlines(
        &mut self,
        now_ms: u64,
        limit: usize,
    ) -> Vec<(Member, u64)> {
        let mut removed = Vec::new();
        self.drain_each(now_ms, limit, |member, deadline_ms| {
            removed.push((member, deadline_ms));
        });
        removed
    }

    /// Removes up to `limit` due members, soonest first, handing each to
    /// `take`.
    fn drain_each(&mut self, now_ms: u64, limit: usize, mut take: impl FnMut(Member, u64)) {
        let mut n = 0;
        with_store_mut!(self, s => {
            while n < limit {
                match s.pop_soonest_until(now_ms) {
                    Some((member, deadline_ms)) => {
                        take(member, deadline_ms);
                        n += 1;
                    }
                    None => break,
                }
            }
        });
        if n > 0 {
            self.shrink_if_small_enough();
        }
    }

    /// Removes the `count` members that expire soonest (members without a
    /// deadline go last) and returns them; used to cap a set's length. Call
    /// after expired members were drained.
    pub fn pop_soonest(&mut self, count: usize) -> Vec<Member> {
        let mut removed = Vec::with_capacity(count.min(self.len()));
        // The members that go are those up to the `count`th deadline: the
        // large encoding's compaction need not move them first.
        let Some((_, cutoff)) = self.iter_all().take(count).last() else {
            return removed;
        };
        with_store_mut!(self, s => {
            while removed.len() < count {
                match s.pop_soonest_until(cutoff) {
                    Some((member, _)) => removed.push(member),
                    None => break,
                }
            }
        });
        if !removed.is_empty() {
            self.shrink_if_small_enough();
        }
        removed
    }

    /// Live members at `now_ms` with their deadlines, soonest first (or
    /// latest first when `rev`); members without a deadline sort as latest.
    /// Equal deadlines come in an order that is stable while the set does
    /// not change.
    pub fn iter_live(&self, now_ms: u64, rev: bool) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        with_store!(self, s => s.iter_live(now_ms, rev))
    }

    /// Live members at `now_ms` whose deadline lies in `window`, with their
    /// deadlines, soonest first (latest first when `rev`), in the order of
    /// [`XSet::iter_live`]; members without a deadline sit at `+inf`. Large:
    /// O(log n) to start from either end, then O(1) a member; small: O(n).
    pub fn iter_window(
        &self,
        window: Window,
        now_ms: u64,
        rev: bool,
    ) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let live = window.live_at(now_ms);
        let items: store::Items<'_> = if live.is_empty() {
            Box::new(std::iter::empty())
        } else {
            with_store!(self, s => s.iter_between(live.lo(), live.hi(), rev))
        };
        items
    }

    /// Passes the members of [`XSet::iter_window`] to `f` in the order
    /// replies list them: equal deadlines by their bytes (reversed when
    /// `rev`), until `f` breaks. As many as [`XSet::count_window`] counts.
    /// Costs what `iter_window` costs, walked without a call per member
    /// through a boxed iterator, plus a check of each run of equal
    /// deadlines and a sort of a run that is out of byte order.
    pub fn for_each_in_window<'a>(
        &'a self,
        window: Window,
        now_ms: u64,
        rev: bool,
        f: impl FnMut(&'a [u8], u64) -> ControlFlow<()>,
    ) {
        let live = window.live_at(now_ms);
        if live.is_empty() {
            return;
        }
        let mut ties = ties::TiesInByteOrder::new(rev, f);
        let walked = with_store!(self, s => {
            s.for_each_between(live.lo(), live.hi(), rev, |m, d| ties.push(m, d))
        });
        if walked.is_continue() {
            let _ = ties.finish();
        }
    }

    /// How many members live at `now_ms` have a deadline in `window`. Large:
    /// O(log n + min(m, n - m) / 127) for m members in the window (one step
    /// per leaf of the deadline index, inside or outside the window,
    /// whichever are fewer); small: O(n).
    pub fn count_window(&self, window: Window, now_ms: u64) -> usize {
        let live = window.live_at(now_ms);
        if live.is_empty() {
            return 0;
        }
        with_store!(self, s => s.count_between(live.lo(), live.hi()))
    }

    /// Every stored member with its deadline, expired ones included, in
    /// deadline order. For persistence and digests.
    pub fn iter_all(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        with_store!(self, s => s.iter_all())
    }

    /// One step of a cursor scan from `cursor`, examining about `count`
    /// stored members: the live ones found and the cursor to continue from
    /// (0 when complete). A member present for the whole scan is returned
    /// at least once, whatever happens to deadlines, other members or the
    /// encoding meanwhile: the large encoding walks its slab downwards and
    /// moves members only downwards, a small set is returned whole, and a
    /// cursor from before a conversion starts over. A member may be
    /// returned more than once.
    pub fn scan(&self, cursor: u64, count: usize, now_ms: u64) -> (u64, Vec<(&[u8], u64)>) {
        let epoch = u64::from(self.epoch & EPOCH_MASK);
        let pos_mask = (1u64 << CURSOR_POS_BITS) - 1;
        match &self.repr {
            Repr::Small(s) => s.scan(cursor, count, now_ms),
            Repr::Large(l) => {
                let pos = if cursor >> CURSOR_POS_BITS == epoch {
                    cursor & pos_mask
                } else {
                    0
                };
                let (next, found) = l.scan(pos, count, now_ms);
                let next = if next == 0 {
                    0
                } else {
                    (epoch << CURSOR_POS_BITS) | next
                };
                (next, found)
            }
        }
    }

    /// Panics with a description if an invariant does not hold: the
    /// encoding's own, and the small limits. O(n); for tests.
    pub fn check_invariants(&self) {
        with_store!(self, s => s.check_invariants());
        if let Repr::Small(s) = &self.repr {
            assert!(
                s.len() <= usize::from(self.limits.max_small_members),
                "small set too long"
            );
            assert!(
                s.longest_member() <= usize::from(self.limits.max_small_member_bytes),
                "small set member too long"
            );
        }
    }
}

/// Moves a stored `member` to `deadline_ms`.
fn set_existing(set: &mut XSet, member: &[u8], deadline_ms: u64) {
    set.make_room_for(member, deadline_ms, false);
    with_store_mut!(set, s => {
        if let Some((pos, _)) = s.find(member) {
            s.set_deadline(pos, deadline_ms);
        }
    });
}

#[cfg(test)]
mod memory_tests;
#[cfg(test)]
mod tests;
