//! The small encoding: every member in one buffer, in deadline order, each
//! entry `[deadline: 6 bytes LE][length: 1 byte][member bytes]`. One
//! allocation for the whole set, so a few dozen members cost little more
//! than their bytes; every operation is a linear pass over at most a few
//! kilobytes, which is what Redis's listpack encodings trade as well.
//!
//! Invariants (checked by `check_invariants`): entries are contiguous and
//! end exactly at the buffer's end, are sorted by deadline (equal deadlines
//! in insertion order), hold distinct members of at most 255 bytes, and
//! `len` counts them.

use super::deadline::NO_DEADLINE;
use super::member::{self, Member};
use super::store::{Items, Store};

const HEADER: usize = 7;

/// The largest deadline a small entry can hold (48 bits: the year 10889);
/// [`NO_DEADLINE`] is stored as this too, and later deadlines make
/// the owner convert to the large encoding.
pub const MAX_SMALL_DEADLINE: u64 = (1 << 48) - 1;

fn pack(deadline_ms: u64) -> [u8; 6] {
    let d = deadline_ms.min(MAX_SMALL_DEADLINE).to_le_bytes();
    [d[0], d[1], d[2], d[3], d[4], d[5]]
}

fn unpack(b: &[u8]) -> u64 {
    let mut d = [0u8; 8];
    d[..6].copy_from_slice(&b[..6]);
    match u64::from_le_bytes(d) {
        MAX_SMALL_DEADLINE => NO_DEADLINE,
        d => d,
    }
}

/// Members packed in deadline order in one buffer.
#[derive(Clone, Default)]
pub struct Small {
    buf: Vec<u8>,
    len: u32,
}

/// One decoded entry.
struct SmallEntry<'a> {
    at: usize,
    deadline_ms: u64,
    member: &'a [u8],
}

impl SmallEntry<'_> {
    fn end(&self) -> usize {
        self.at + HEADER + self.member.len()
    }
}

impl Small {
    fn entry_at(&self, at: usize) -> SmallEntry<'_> {
        let len = self.buf[at + 6] as usize;
        SmallEntry {
            at,
            deadline_ms: unpack(&self.buf[at..at + 6]),
            member: &self.buf[at + HEADER..at + HEADER + len],
        }
    }

    fn entries(&self) -> impl Iterator<Item = SmallEntry<'_>> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= self.buf.len() {
                return None;
            }
            let e = self.entry_at(at);
            at = e.end();
            Some(e)
        })
    }

    /// Writes an entry at byte offset `at`, shifting what follows. Grows the
    /// buffer exactly, as listpacks do: the allocator's size classes leave
    /// the only slack.
    fn write_at(&mut self, at: usize, member: &[u8], deadline_ms: u64) {
        let n = HEADER + member.len();
        let old = self.buf.len();
        self.buf.reserve_exact(n);
        self.buf.resize(old + n, 0);
        self.buf.copy_within(at..old, at + n);
        self.buf[at..at + 6].copy_from_slice(&pack(deadline_ms));
        // The owner converts to the large encoding before a member longer
        // than 255 bytes or a deadline past 48 bits could arrive here.
        self.buf[at + 6] = member.len() as u8;
        self.buf[at + HEADER..at + n].copy_from_slice(member);
    }

    /// Where an entry with `deadline_ms` goes: after every entry that is due
    /// no later.
    fn insertion_point(&self, deadline_ms: u64) -> usize {
        self.entries()
            .find(|e| e.deadline_ms > deadline_ms)
            .map_or(self.buf.len(), |e| e.at)
    }

    /// The longest member stored.
    pub fn longest_member(&self) -> usize {
        self.entries().map(|e| e.member.len()).max().unwrap_or(0)
    }

    /// Builds a small set from members already in deadline order.
    pub fn from_sorted<'a>(items: impl Iterator<Item = (&'a [u8], u64)>) -> Small {
        let mut s = Small::default();
        for (m, d) in items {
            let end = s.buf.len();
            s.write_at(end, m, d);
            s.len += 1;
        }
        s.buf.shrink_to_fit();
        s
    }
}

impl Store for Small {
    /// A byte offset.
    type Pos = usize;

    fn len(&self) -> usize {
        self.len as usize
    }

    fn find(&self, member: &[u8]) -> Option<(usize, u64)> {
        self.entries()
            .find(|e| e.member == member)
            .map(|e| (e.at, e.deadline_ms))
    }

    fn set_deadline(&mut self, at: usize, deadline_ms: u64) {
        let (member, _) = self.remove_at(at);
        self.insert(&member, deadline_ms);
    }

    fn insert(&mut self, member: &[u8], deadline_ms: u64) {
        let at = self.insertion_point(deadline_ms);
        self.write_at(at, member, deadline_ms);
        self.len += 1;
    }

    fn remove_at(&mut self, at: usize) -> (Member, u64) {
        let e = self.entry_at(at);
        let (end, deadline_ms, member) = (e.end(), e.deadline_ms, Member::new(e.member));
        self.buf.drain(at..end);
        self.len -= 1;
        if self.len == 0 {
            self.buf = Vec::new();
        } else {
            self.buf.shrink_to_fit();
        }
        (member, deadline_ms)
    }

    fn pop_soonest_if(&mut self, due: impl Fn(u64) -> bool) -> Option<(Member, u64)> {
        match self.soonest() {
            Some((at, d)) if due(d) => Some(self.remove_at(at)),
            _ => None,
        }
    }

    fn soonest(&self) -> Option<(usize, u64)> {
        self.entries().next().map(|e| (e.at, e.deadline_ms))
    }

    fn live_len(&self, now_ms: u64) -> usize {
        self.entries().filter(|e| e.deadline_ms > now_ms).count()
    }

    fn iter_live(&self, now_ms: u64, rev: bool) -> Items<'_> {
        let live = self
            .entries()
            .filter(move |e| e.deadline_ms > now_ms)
            .map(|e| (e.member, e.deadline_ms));
        if rev {
            let mut all: Vec<(&[u8], u64)> = live.collect();
            all.reverse();
            Box::new(all.into_iter())
        } else {
            Box::new(live)
        }
    }

    fn iter_between(&self, lo: u64, hi: u64, rev: bool) -> Items<'_> {
        // Entries are in deadline order: skip those below, stop above.
        let inside = self
            .entries()
            .skip_while(move |e| e.deadline_ms < lo)
            .take_while(move |e| e.deadline_ms <= hi)
            .map(|e| (e.member, e.deadline_ms));
        if rev {
            let mut all: Vec<(&[u8], u64)> = inside.collect();
            all.reverse();
            Box::new(all.into_iter())
        } else {
            Box::new(inside)
        }
    }

    fn count_between(&self, lo: u64, hi: u64) -> usize {
        self.entries()
            .filter(|e| lo <= e.deadline_ms && e.deadline_ms <= hi)
            .count()
    }

    fn iter_all(&self) -> Items<'_> {
        Box::new(self.entries().map(|e| (e.member, e.deadline_ms)))
    }

    /// A small set is returned whole, whatever the cursor, with cursor 0:
    /// a scan that began while the set was large still sees every member.
    fn scan(&self, _cursor: u64, _count: usize, now_ms: u64) -> (u64, Vec<(&[u8], u64)>) {
        (0, self.iter_live(now_ms, false).collect())
    }

    fn heap_bytes(&self) -> usize {
        member::allocation_size(self.buf.capacity())
    }

    fn check_invariants(&self) {
        let mut count = 0;
        let mut prev = 0u64;
        let mut end = 0;
        let mut seen = std::collections::HashSet::new();
        for e in self.entries() {
            assert!(e.end() <= self.buf.len(), "entry overruns the buffer");
            assert!(e.deadline_ms >= prev, "deadline order");
            assert!(seen.insert(e.member.to_vec()), "distinct members");
            prev = e.deadline_ms;
            end = e.end();
            count += 1;
        }
        assert_eq!(end, self.buf.len(), "entries fill the buffer exactly");
        assert_eq!(count, self.len as usize, "len counts entries");
    }
}
