//! Compaction of a large set's slab: entries move down into the lowest
//! vacant slots, so that the slab (and with it the hash table's slot
//! field) shrinks with the membership, a few moves per write.
//!
//! The slots below the membership's count are where the members end up:
//! an entry there is in place, and one at or above it moves into the
//! lowest vacant slot. A sweep walks down the slab to find those: from the
//! top at first, then, as removals lower the count, only through the band
//! of slots that fell from below the count to above it since. It examines
//! up to [`EXAMINE_PER_WRITE`] entries and moves up to [`MOVES_PER_WRITE`] a
//! write (in steps of [`WRITES_PER_STEP`] writes), so an entry is examined
//! about once however the set shrinks. Compaction runs while the slab is
//! sparse (more vacant slots than a sixteenth of the members, and a few
//! more): a few holes are left for inserts, which take the lowest vacant
//! slot, to fill. The trailing slots a move vacates are trimmed.
//!
//! A move goes down the slab only, which `scan` relies on. It costs about
//! what a refresh costs: the member's hash, its table bucket rewritten in
//! place, its deadline index pair rewritten (usually in place in its leaf).
//!
//! An expiry drain passes over the entries that it is about to pop itself
//! (deadlines up to its bound): moving them would be wasted, and a mass
//! expiry does not slow down moving members that are gone a moment later.
//! Its survivors are what moves, so that when the drain ends they sit at
//! the bottom of the slab and the chunks above, emptied by the drain, are
//! already freed. An entry passed over stays above the sweep; the sweep
//! starts from the top again when one there is refreshed or a member is
//! inserted there, and otherwise once a write has been spent for each entry
//! passed over, which bounds the reads and catches whatever was missed. A
//! drain that is to pop every member (one count of the deadline index when
//! the sweep would start from the top) leaves compaction idle for a
//! quarter of the membership's writes.

use super::{Large, TRIM_PER_WRITE};
use crate::entry::DeadlineCode;
use crate::slab::Probe;

/// Compaction acts on one write in this many, with as many writes' budget:
/// the step's fixed cost (finding the lowest hole and the sweep's next
/// entry) is paid once for them.
const WRITES_PER_STEP: usize = 4;

/// Entries moved per write, at most.
const MOVES_PER_WRITE: usize = 4;

/// Entries examined per write, at most (moved or passed over).
const EXAMINE_PER_WRITE: usize = 16;

/// Words of the slab's vacancy bitmap (64 slots each, or a freed chunk)
/// read per write, at most.
const WORDS_PER_WRITE: usize = 64;

/// Vacant slots tolerated whatever the membership: a small set's few
/// holes are left for inserts to fill.
const SLACK: usize = 32;

/// Where compaction stands.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sweep {
    /// Slots from this one up hold nothing to move; `None`: the whole slab
    /// is to sweep.
    below: Option<usize>,
    /// Entries passed over since the sweep last started from the top.
    passed: usize,
    /// Writes still to spend before the sweep may start from the top again
    /// for them: one for each entry passed over.
    owed: usize,
    /// Writes to leave compaction idle: a drain popping every member.
    idle: usize,
    /// Writes seen while sparse, to act on one in [`WRITES_PER_STEP`].
    writes: usize,
}

impl Large {
    /// Whether the slab holds enough vacant slots to compact.
    fn sparse(&self) -> bool {
        self.slots.vacancies() > self.len / 16 + SLACK
    }

    /// One write's part of compaction; members with a deadline up to
    /// `leaving_until` are about to be popped by the write's caller. O(1):
    /// a bounded number of moves, each about a refresh.
    pub(super) fn compact(&mut self, leaving_until: Option<u64>) {
        if !self.sparse() {
            return;
        }
        if self.sweep.idle > 0 {
            self.sweep.idle -= 1;
            return;
        }
        self.sweep.writes += 1;
        if !self.sweep.writes.is_multiple_of(WRITES_PER_STEP) {
            return;
        }
        self.sweep.owed = self.sweep.owed.saturating_sub(WRITES_PER_STEP);
        let mut below = match self.sweep.below {
            Some(below) if self.sweep.owed > 0 || self.sweep.passed == 0 => below,
            _ => {
                if self.leaves_nothing(leaving_until) {
                    self.sweep.idle = self.len / 4;
                    return;
                }
                (self.sweep.passed, self.sweep.owed) = (0, 0);
                self.slots.len()
            }
        };
        let leaving = |d: u64| leaving_until.is_some_and(|until| d <= until);
        let mut words = WORDS_PER_WRITE * WRITES_PER_STEP;
        let (mut moves, mut examined) = (0, 0);
        while moves < MOVES_PER_WRITE * WRITES_PER_STEP
            && examined < EXAMINE_PER_WRITE * WRITES_PER_STEP
        {
            let Some(hole) = self.slots.lowest_vacant() else {
                break;
            };
            // Slots from `floor` up are to sweep; below, members are in
            // place.
            let floor = self.len.max(hole + 1);
            if below <= floor {
                break;
            }
            match self.slots.last_occupied_before(below, &mut words) {
                Probe::Found(slot) if slot >= floor => {
                    below = slot;
                    examined += 1;
                    let deadline_ms = self.deadline(slot as u32, self.entry(slot as u32));
                    if leaving(deadline_ms) {
                        self.sweep.passed += 1;
                        self.sweep.owed += 1;
                    } else {
                        self.move_entry(slot as u32, hole as u32, deadline_ms);
                        moves += 1;
                    }
                }
                Probe::Stopped(p) => {
                    below = p;
                    break;
                }
                // Nothing occupied between the floor and the sweep.
                _ => {
                    below = floor;
                    break;
                }
            }
        }
        self.sweep.below = Some(below);
        if moves > 0 {
            self.slots.trim(TRIM_PER_WRITE);
        }
    }

    /// Whether the caller is popping every member (all have a deadline up
    /// to `leaving_until`). O(log n + chunks of the deadline index).
    fn leaves_nothing(&self, leaving_until: Option<u64>) -> bool {
        let Some(until) = leaving_until else {
            return false;
        };
        let live = Large::holds(&self.slots, &self.far);
        match until.checked_add(1) {
            Some(after) => self.by_deadline.count_below((after, 0), &live) >= self.len,
            None => true,
        }
    }

    /// Notes a write at `slot`: an entry there is to sweep again if the
    /// sweep has passed it (a member inserted there, or one passed over as
    /// leaving that a refresh keeps).
    pub(super) fn touch_slot(&mut self, slot: u32) {
        if self.sweep.below.is_some_and(|below| slot as usize >= below) {
            self.sweep = Sweep::default();
        }
    }

    /// Moves the entry at `from` to the vacant slot `to`, below it.
    fn move_entry(&mut self, from: u32, to: u32, deadline_ms: u64) {
        let Some(entry) = self.slots.take(from as usize) else {
            unreachable!("slot {from} moved but vacant");
        };
        let hash = self.hasher.hash(entry.member());
        let far = entry.code() == DeadlineCode::FAR;
        self.slots.put(to as usize, entry);
        if far {
            self.far.remove(&from);
            self.far.insert(to, deadline_ms);
        }
        if !self.table.reslot(hash, from, to) {
            unreachable!("slot {from} missing from the table");
        }
        let live = Large::holds(&self.slots, &self.far);
        self.by_deadline.reslot((deadline_ms, from), to, &live);
    }

    /// Panics if compaction's state is out of place: nothing swept in an
    /// empty set, and no entry passed over without a write owed for it.
    pub(super) fn check_compaction(&self) {
        assert!(
            self.len > 0
                || (self.sweep.below.is_none() && self.sweep.passed == 0 && self.sweep.idle == 0),
            "nothing swept in an empty set"
        );
        assert!(
            self.sweep.owed <= self.sweep.passed,
            "writes owed for passes only"
        );
    }
}
