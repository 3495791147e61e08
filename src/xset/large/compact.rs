//! Compaction of a large set's slab: entries move down into the lowest
//! vacant slots, so that the slab (and with it the hash table's slot
//! field) shrinks with the membership, a few moves per write.
//!
//! A round starts when the slab is sparse (more vacant slots than a
//! sixteenth of the members, and a few more). It sweeps the slots from the
//! top down to the membership's count, each write examining up to
//! [`EXAMINE_PER_WRITE`] entries and moving up to [`MOVES_PER_WRITE`] of
//! them into the lowest vacant slot; it ends when the sweep reaches the
//! count or the lowest vacant slot. Only entries at or above the count
//! move: the slots below it are where the members end up, so an entry
//! there is in place, and moving it would only make another entry move
//! later. The trailing slots a move vacates are trimmed.
//!
//! A move goes down the slab only, which `scan` relies on. It costs about
//! what a refresh costs: the member's hash, its table bucket rewritten in
//! place, its deadline index pair rewritten (usually in place in its leaf).
//!
//! An expiry drain passes over the entries that it is about to pop itself
//! (deadlines up to its bound): moving them would be wasted, and a mass
//! expiry does not slow down moving members that are gone a moment later.
//! The survivors are what it moves, into the lowest holes, so that when
//! the drain ends they sit at the bottom of the slab and the chunks above,
//! emptied by the drain, are already freed. A drain that leaves no
//! survivor starts no round; one that leaves fewer survivors than it pops
//! sweeps the survivors themselves, in the deadline index from its bound
//! on, instead of the slab: a slab sweep would read mostly entries it
//! passes over, each a read of the slab where a pair is 8 bytes in order.
//! Passing over an entry costs a read, and rounds over the same entries
//! would read them again and again: after a round, the next waits a write
//! for every entry passed over, but no more than a quarter of the
//! membership's count, which keeps the reads to a few per write and the
//! rounds frequent enough at the end of a drain to leave its survivors
//! compact.

use super::{Large, TRIM_PER_WRITE};
use crate::xset::entry::DeadlineCode;
use crate::xset::slab::Probe;

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

/// The most writes between rounds, as a share of the membership's count:
/// longer rests leave more of a drain's survivors scattered when it ends,
/// shorter ones read more entries over again.
const REST_SHARE: usize = 4;

/// Where compaction's round stands.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Sweep {
    /// A slab round has swept the slots from this one up; 0 when none is
    /// under way.
    below: usize,
    /// A deadline index round has swept the pairs below this one; `None`
    /// when none is under way.
    after: Option<(u64, u32)>,
    /// Entries the round under way passed over.
    passed: usize,
    /// Writes to wait before the next round.
    rest: usize,
}

impl Large {
    /// Whether the slab holds enough vacant slots for a round.
    fn sparse(&self) -> bool {
        self.slots.vacancies() > self.len / 16 + SLACK
    }

    /// One write's part of compaction; members with a deadline up to
    /// `leaving_until` are about to be popped by the write's caller. O(1):
    /// a bounded number of moves, each about a refresh.
    pub(super) fn compact(&mut self, leaving_until: Option<u64>) {
        if self.sweep.below == 0 && self.sweep.after.is_none() && !self.start_round(leaving_until) {
            return;
        }
        if let Some(after) = self.sweep.after {
            self.sweep_survivors(after);
            return;
        }
        let leaving = |d: u64| leaving_until.is_some_and(|until| d <= until);
        let mut words = WORDS_PER_WRITE;
        let (mut moves, mut examined) = (0, 0);
        while moves < MOVES_PER_WRITE && examined < EXAMINE_PER_WRITE {
            let Some(hole) = self.slots.lowest_vacant() else {
                self.end_round();
                break;
            };
            // Slots from `floor` up are swept; below, members are in place.
            let floor = self.len.max(hole + 1);
            match self
                .slots
                .last_occupied_before(self.sweep.below, &mut words)
            {
                Probe::Found(slot) if slot >= floor => {
                    self.sweep.below = slot;
                    examined += 1;
                    let deadline_ms = self.deadline(slot as u32, self.entry(slot as u32));
                    if leaving(deadline_ms) {
                        self.sweep.passed += 1;
                    } else {
                        self.move_entry(slot as u32, hole as u32, deadline_ms);
                        moves += 1;
                    }
                }
                // Out of budget with slots left to sweep.
                Probe::Stopped(p) if p > floor => {
                    self.sweep.below = p;
                    break;
                }
                // Nothing occupied left above the floor.
                _ => {
                    self.end_round();
                    break;
                }
            }
        }
        if moves > 0 {
            self.slots.trim(TRIM_PER_WRITE);
        }
    }

    /// Starts a round if one is due and worth it; whether it started.
    fn start_round(&mut self, leaving_until: Option<u64>) -> bool {
        if self.sweep.rest > 0 {
            self.sweep.rest -= 1;
            return false;
        }
        if !self.sparse() {
            return false;
        }
        if let Some(until) = leaving_until {
            // A drain that pops every member leaves nothing to move.
            let live = Large::holds(&self.slots, &self.far);
            let leaving = match until.checked_add(1) {
                Some(after) => self.by_deadline.count_below((after, 0), &live),
                None => self.len,
            };
            if leaving >= self.len {
                self.sweep.rest = self.len / REST_SHARE;
                return false;
            }
            if leaving * 2 > self.len {
                // `until` is below `u64::MAX`, or all would be leaving.
                self.sweep.after = Some((until + 1, 0));
                self.sweep.passed = 0;
                return true;
            }
        }
        self.sweep.below = self.slots.len();
        self.sweep.passed = 0;
        true
    }

    /// A deadline index round's part of a write: the pairs from `after` on,
    /// in order, each member at or above the membership's count moved.
    fn sweep_survivors(&mut self, after: (u64, u32)) {
        // Pairs as stored, stale ones too: a pair below the count is passed
        // over without reading its slot (a random access), and only one to
        // move is checked.
        let mut batch = [(0, 0); EXAMINE_PER_WRITE];
        let mut found = 0;
        for (k, pair) in self
            .by_deadline
            .iter_from(after, |_| true)
            .take(EXAMINE_PER_WRITE)
            .enumerate()
        {
            batch[k] = pair;
            found = k + 1;
        }
        let mut moves = 0;
        for &(deadline_ms, slot) in &batch[..found] {
            if moves == MOVES_PER_WRITE {
                self.sweep.after = Some((deadline_ms, slot));
                break;
            }
            let above = slot as usize >= self.len;
            match self.slots.lowest_vacant() {
                // A move sorts the pair before this one: it is not met
                // again.
                Some(hole)
                    if above
                        && hole < slot as usize
                        && Large::holds(&self.slots, &self.far)((deadline_ms, slot)) =>
                {
                    self.move_entry(slot, hole as u32, deadline_ms);
                    moves += 1;
                }
                _ => self.sweep.passed += 1,
            }
            self.sweep.after = match slot.checked_add(1) {
                Some(next) => Some((deadline_ms, next)),
                None => deadline_ms.checked_add(1).map(|d| (d, 0)),
            };
        }
        if found < EXAMINE_PER_WRITE && moves < MOVES_PER_WRITE {
            self.end_round();
        }
        if moves > 0 {
            self.slots.trim(TRIM_PER_WRITE);
        }
    }

    fn end_round(&mut self) {
        self.sweep.below = 0;
        self.sweep.after = None;
        self.sweep.rest = self.sweep.passed.min(self.len / REST_SHARE);
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

    /// Panics if compaction's state is out of place: no round is under way
    /// or pending in an empty set. (A round's position may lie past the
    /// slab's end, which trims cut after it: walks clamp it.)
    pub(super) fn check_compaction(&self) {
        assert!(
            self.len > 0
                || (self.sweep.below == 0 && self.sweep.after.is_none() && self.sweep.rest == 0),
            "no round under way in an empty set"
        );
        assert!(
            self.sweep.below == 0 || self.sweep.after.is_none(),
            "one round at a time"
        );
    }
}
