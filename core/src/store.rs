//! The interface both encodings implement: the few primitive operations on
//! which `XSet`'s semantics (conditions, expiry, persistence, draining) are
//! written once, in `mod.rs`.

use super::member::Member;
use std::ops::ControlFlow;

/// Boxed iterators over `(member, deadline)`: both encodings hand these out.
pub type Items<'a> = Box<dyn Iterator<Item = (&'a [u8], u64)> + 'a>;

/// A storage encoding of members and their deadlines, ordered by deadline.
pub trait Store {
    /// Where a member sits; valid until the next mutation.
    type Pos: Copy;

    /// What [`Store::insert_at`] needs to add a member that a lookup did
    /// not find without searching again.
    type Place: Copy;

    /// Members stored, expired or not.
    fn len(&self) -> usize;
    /// The position and stored deadline of `member`; when it is not
    /// stored, the place a new entry with `deadline_ms` takes. One pass:
    /// an add of a new member looks up and places it with one search.
    fn find_or_place(
        &self,
        member: &[u8],
        deadline_ms: u64,
    ) -> Result<(Self::Pos, u64), Self::Place>;
    /// The position and stored deadline of `member`.
    fn find(&self, member: &[u8]) -> Option<(Self::Pos, u64)> {
        self.find_or_place(member, u64::MAX).ok()
    }
    /// Changes the deadline of the member at `pos`.
    fn set_deadline(&mut self, pos: Self::Pos, deadline_ms: u64);
    /// Adds `member`, which is not stored, at `place`: what
    /// [`Store::find_or_place`] returned for it and `deadline_ms`, with no
    /// change to the store since.
    fn insert_at(&mut self, place: Self::Place, member: &[u8], deadline_ms: u64);
    /// Adds a member that is not stored.
    fn insert(&mut self, member: &[u8], deadline_ms: u64);
    /// Removes the member at `pos`, returning it and its deadline.
    fn remove_at(&mut self, pos: Self::Pos) -> (Member, u64);
    /// Removes the member with the earliest deadline if that deadline is at
    /// most `latest_ms`, returning it and its deadline. A caller pops in a
    /// loop with one bound: the large encoding takes the members up to it
    /// as leaving, and does not move them to compact its slab.
    fn pop_soonest_until(&mut self, latest_ms: u64) -> Option<(Member, u64)>;
    /// The member with the earliest deadline and that deadline.
    fn soonest(&self) -> Option<(Self::Pos, u64)>;
    /// Members whose deadline is after `now_ms`.
    fn live_len(&self, now_ms: u64) -> usize;
    /// Live members in deadline order (reversed when `rev`).
    fn iter_live(&self, now_ms: u64, rev: bool) -> Items<'_>;
    /// Stored members whose deadline lies in `lo..=hi`, expired or not, in
    /// deadline order (reversed when `rev`); none when `lo > hi`.
    fn iter_between(&self, lo: u64, hi: u64, rev: bool) -> Items<'_>;
    /// Passes what [`Store::iter_between`] yields to `f`, until `f`
    /// breaks; an encoding walks it without a boxed iterator where that
    /// pays.
    fn for_each_between<'a>(
        &'a self,
        lo: u64,
        hi: u64,
        rev: bool,
        f: impl FnMut(&'a [u8], u64) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut f = f;
        self.iter_between(lo, hi, rev)
            .try_for_each(|(m, d)| f(m, d))
    }
    /// How many stored members have a deadline in `lo..=hi`.
    fn count_between(&self, lo: u64, hi: u64) -> usize;
    /// Every stored member in deadline order.
    fn iter_all(&self) -> Items<'_>;
    /// One step of a cursor scan: the live members found and the next
    /// cursor (0: done).
    fn scan(&self, cursor: u64, count: usize, now_ms: u64) -> (u64, Vec<(&[u8], u64)>);
    /// Heap bytes held, allocator rounding included.
    fn heap_bytes(&self) -> usize;
    /// Panics if the encoding's own invariants do not hold.
    fn check_invariants(&self);
}
