//! The small encoding: every member in one buffer, in deadline order, each
//! entry `[deadline delta: prefix varint][length: 1 byte][member bytes]`,
//! the delta counted from the previous entry's deadline (from 0 for the
//! first). One allocation for the whole set, so a few dozen members cost
//! little more than their bytes (deadlines a few seconds apart take 2 or 3
//! bytes, not 6); every operation is a linear pass over at most a few
//! kilobytes, which is what Redis's listpack encodings trade as well.
//!
//! The buffer is allocated a whole size class of the allocator
//! ([`member::allocation_size`] of the bytes used), which the allocator
//! hands out anyway: an add or a removal that stays within the class
//! reallocates nothing, where an exactly sized buffer reallocates on every
//! write.
//!
//! Invariants (checked by `check_invariants`): entries are contiguous from
//! the start and end exactly at `used`, are sorted by deadline (equal
//! deadlines in insertion order), hold distinct members of at most 255
//! bytes and deadlines of at most [`MAX_SMALL_DEADLINE`], and `len` counts
//! them; the buffer is [`member::allocation_size`] of `used` long, and
//! zero past `used`.

use super::deadline::NO_DEADLINE;
use super::member::{self, Member};
use super::store::{Items, Store};

/// The largest deadline a small entry can hold (48 bits: the year 10889);
/// [`NO_DEADLINE`] is stored as this too, and later deadlines make
/// the owner convert to the large encoding.
pub const MAX_SMALL_DEADLINE: u64 = (1 << 48) - 1;

/// The value stored for `deadline_ms`.
fn stored(deadline_ms: u64) -> u64 {
    deadline_ms.min(MAX_SMALL_DEADLINE)
}

/// The deadline a stored value stands for.
fn unstored(v: u64) -> u64 {
    match v {
        MAX_SMALL_DEADLINE => NO_DEADLINE,
        d => d,
    }
}

/// `v` (below 2^49) as a prefix varint: `n - 1` one bits and a zero bit,
/// then the value's bits, most significant first, in `n` bytes in all (7
/// value bits a byte, as LEB128 would take). The first byte says how long
/// the whole is, so a reader needs no loop over the bytes.
fn varint(v: u64) -> ([u8; 8], usize) {
    debug_assert!(v < 1 << 49, "a delta fits 7 bytes of this encoding");
    let bits = 64 - v.leading_zeros() as usize;
    let n = bits.div_ceil(7).clamp(1, 7);
    // The prefix above the value's 7n bits, the whole left-aligned.
    let prefix = !(u64::MAX >> (n - 1));
    let word = prefix | (v << (64 - 7 * n) >> n);
    (word.to_be_bytes(), n)
}

/// The prefix varint at the start of `b` and its length in bytes.
#[inline(always)]
fn read_varint(b: &[u8]) -> (u64, usize) {
    // Deadlines a few milliseconds apart: one byte, inline in every scan.
    if let Some(&first) = b.first()
        && first & 0x80 == 0
    {
        return (u64::from(first), 1);
    }
    read_long_varint(b)
}

/// [`read_varint`] of two bytes or more.
#[inline(never)]
fn read_long_varint(b: &[u8]) -> (u64, usize) {
    // A first byte of seven or eight one bits is no delta of this encoding.
    let n = b
        .first()
        .map_or(1, |&first| first.leading_ones() as usize + 1)
        .min(7);
    // Eight bytes at once where that many are left, else the bytes there
    // are (a delta among the last seven bytes of the entries).
    let word = match b.first_chunk::<8>() {
        Some(bytes) => u64::from_be_bytes(*bytes),
        None => {
            let mut bytes = [0u8; 8];
            bytes[..b.len()].copy_from_slice(b);
            u64::from_be_bytes(bytes)
        }
    };
    debug_assert!(
        (2..=7).contains(&n) && n <= b.len(),
        "small entry delta in the buffer"
    );
    (word << n >> (64 - 7 * n), n)
}

/// Members packed in deadline order in one buffer of a whole size class.
#[derive(Clone, Default)]
pub struct Small {
    buf: Box<[u8]>,
    /// Bytes of `buf` the entries take; the rest is zero.
    used: u32,
    len: u32,
}

/// Where an entry starts, and the stored deadline its delta counts from
/// (the previous entry's, 0 for the first).
#[derive(Clone, Copy, Debug)]
pub struct SmallPos {
    at: usize,
    base: u64,
}

/// One decoded entry.
struct SmallEntry<'a> {
    at: usize,
    base: u64,
    /// The stored deadline.
    stored: u64,
    member: &'a [u8],
    end: usize,
}

impl SmallEntry<'_> {
    fn deadline_ms(&self) -> u64 {
        unstored(self.stored)
    }

    fn pos(&self) -> SmallPos {
        SmallPos {
            at: self.at,
            base: self.base,
        }
    }
}

/// The entry of `buf` at `pos`.
fn entry_at(buf: &[u8], pos: SmallPos) -> SmallEntry<'_> {
    let (delta, n) = read_varint(&buf[pos.at..]);
    let len = buf[pos.at + n] as usize;
    let start = pos.at + n + 1;
    SmallEntry {
        at: pos.at,
        base: pos.base,
        stored: pos.base + delta,
        member: &buf[start..start + len],
        end: start + len,
    }
}

/// The entries of `buf` from `pos` on.
fn entries_from(buf: &[u8], mut pos: SmallPos) -> impl Iterator<Item = SmallEntry<'_>> + '_ {
    std::iter::from_fn(move || {
        if pos.at >= buf.len() {
            return None;
        }
        let e = entry_at(buf, pos);
        pos = SmallPos {
            at: e.end,
            base: e.stored,
        };
        Some(e)
    })
}

/// The entry header at `at`: its delta, where its member starts, and the
/// member's length. What the scans below read without building an entry.
#[inline(always)]
fn header(buf: &[u8], at: usize) -> (u64, usize, usize) {
    let (delta, n) = read_varint(&buf[at..]);
    (delta, at + n + 1, usize::from(buf[at + n]))
}

/// Where in `buf` an entry with stored deadline `value` goes, searching
/// from `from` (an entry due no later than `value`, or the start): after
/// every entry that is due no later.
fn insertion_point(buf: &[u8], from: SmallPos, value: u64) -> SmallPos {
    let SmallPos { mut at, mut base } = from;
    while at < buf.len() {
        let (delta, start, len) = header(buf, at);
        let stored = base + delta;
        if stored > value {
            return SmallPos { at, base };
        }
        (at, base) = (start + len, stored);
    }
    SmallPos { at, base }
}

/// Writes into `buf` an entry for `member` with stored deadline `value` at
/// `pos`, before the entry there (if any), whose delta is recomputed from
/// the new one. Grows `buf`, when it must, to the size class of its new
/// length; the entry's parts are written in place, so nothing else is
/// allocated or copied twice.
fn write_entry(buf: &mut Vec<u8>, pos: SmallPos, member: &[u8], value: u64) {
    let (delta, n) = varint(value - pos.base);
    // The owner converts to the large encoding before a member longer
    // than 255 bytes or a deadline past 48 bits could arrive here.
    let mut len = n + 1 + member.len();
    let mut replaced = pos.at..pos.at;
    let mut next = ([0u8; 8], 0);
    if pos.at < buf.len() {
        // The next entry's delta as it lies in the buffer: its length is
        // read, not re-derived.
        let (old_delta, old_n) = read_varint(&buf[pos.at..]);
        next = varint(pos.base + old_delta - value);
        len += next.1;
        replaced = pos.at..pos.at + old_n;
    }
    // The bytes after `replaced` move by the difference, then the parts
    // are written into the gap.
    let old_len = buf.len();
    let new_len = old_len + len - replaced.len();
    if new_len > buf.capacity() {
        buf.reserve_exact(member::allocation_size(new_len) - old_len);
    }
    // An entry is never shorter than the delta it splits (the two deltas
    // together need at least its bytes), so this grows; the `max` and the
    // `truncate` keep the moves in bounds even if it did not.
    debug_assert!(new_len > old_len);
    buf.resize(new_len.max(old_len), 0);
    buf.copy_within(replaced.end..old_len, replaced.start + len);
    buf.truncate(new_len);
    let gap = &mut buf[replaced.start..replaced.start + len];
    let (head, rest) = gap.split_at_mut(n);
    head.copy_from_slice(&delta[..n]);
    let (length, rest) = rest.split_at_mut(1);
    length[0] = member.len() as u8;
    let (bytes, tail) = rest.split_at_mut(member.len());
    bytes.copy_from_slice(member);
    tail.copy_from_slice(&next.0[..next.1]);
}

/// Cuts the entry at `pos` out of `buf` (which keeps its capacity); the
/// next entry's delta then counts from `pos.base`.
fn unlink_entry(buf: &mut Vec<u8>, pos: SmallPos) {
    let e = entry_at(buf, pos);
    let (end, value) = (e.end, e.stored);
    let mut replaced = pos.at..end;
    let mut with = ([0; 8], 0);
    if end < buf.len() {
        let (next_delta, old_n) = read_varint(&buf[end..]);
        replaced.end += old_n;
        with = varint(value + next_delta - pos.base);
    }
    buf.splice(replaced, with.0[..with.1].iter().copied());
}

impl Small {
    /// Hands the buffer to `r` (active defrag).
    pub fn relocate<R: super::relocate::Relocate>(&mut self, r: &mut R) {
        r.slice(&mut self.buf);
    }

    /// The entries' bytes.
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.used as usize]
    }

    fn entries(&self) -> impl Iterator<Item = SmallEntry<'_>> + '_ {
        entries_from(self.bytes(), SmallPos { at: 0, base: 0 })
    }

    /// Runs `edit` on the entries' bytes as a vector, then sizes the buffer
    /// to the size class of their new length: no reallocation while that
    /// class stays the same.
    fn edit(&mut self, edit: impl FnOnce(&mut Vec<u8>)) {
        let used = std::mem::take(&mut self.used) as usize;
        // Taken with `used` reset: a panic inside `edit` (caught by the
        // command guard or the expiry cycle) leaves a set that reads as
        // empty, which the guard's repair then deletes or re-sends, not a
        // length past the buffer's end.
        let mut buf = std::mem::take(&mut self.buf).into_vec();
        buf.truncate(used);
        edit(&mut buf);
        self.set_buffer(buf);
    }

    /// Takes `buf`'s bytes as the entries, in a buffer of their size class.
    fn set_buffer(&mut self, mut buf: Vec<u8>) {
        // A small set's bytes are far below 4 GiB: the owner converts to
        // the large encoding long before.
        self.used = buf.len() as u32;
        let class = member::allocation_size(buf.len());
        if buf.capacity() < class {
            buf.reserve_exact(class - buf.len());
        }
        // Zeroes the tail, and shrinks the allocation (the only copy) when
        // a removal left a smaller class.
        buf.resize(class, 0);
        self.buf = buf.into_boxed_slice();
    }

    /// The longest member stored.
    pub fn longest_member(&self) -> usize {
        self.entries().map(|e| e.member.len()).max().unwrap_or(0)
    }

    /// Builds a small set from members already in deadline order.
    pub fn from_sorted<'a>(items: impl Iterator<Item = (&'a [u8], u64)>) -> Small {
        let mut buf = Vec::new();
        let (mut base, mut len) = (0, 0);
        for (m, d) in items {
            let value = stored(d);
            let (delta, n) = varint(value - base);
            buf.extend_from_slice(&delta[..n]);
            buf.push(m.len() as u8);
            buf.extend_from_slice(m);
            base = value;
            len += 1;
        }
        let mut small = Small {
            len,
            ..Small::default()
        };
        small.set_buffer(buf);
        small
    }
}

impl Store for Small {
    type Pos = SmallPos;
    type Place = SmallPos;

    fn len(&self) -> usize {
        self.len as usize
    }

    /// A scan of the headers that compares only members of the right
    /// length and last byte (ids and counters share their first bytes far
    /// more often than their last), sparing most calls to `memcmp`; it
    /// notes on the way the first entry due after `deadline_ms`, before
    /// which a new entry goes.
    fn find_or_place(&self, member: &[u8], deadline_ms: u64) -> Result<(SmallPos, u64), SmallPos> {
        let buf = self.bytes();
        let value = stored(deadline_ms);
        let last = member.last().copied();
        let (mut at, mut base) = (0, 0);
        let mut place = None;
        while at < buf.len() {
            let (delta, start, len) = header(buf, at);
            let stored = base + delta;
            if len == member.len()
                && (len == 0 || Some(buf[start + len - 1]) == last)
                && buf[start..start + len] == *member
            {
                return Ok((SmallPos { at, base }, unstored(stored)));
            }
            if stored > value && place.is_none() {
                place = Some(SmallPos { at, base });
            }
            (at, base) = (start + len, stored);
        }
        Err(place.unwrap_or(SmallPos { at, base }))
    }

    /// In place: the entry is cut out and written back at its new place,
    /// its member copied aside on the stack; one reallocation at most.
    fn set_deadline(&mut self, pos: SmallPos, deadline_ms: u64) {
        let e = entry_at(self.bytes(), pos);
        let (old, value) = (e.stored, stored(deadline_ms));
        if old == value {
            return;
        }
        let mut member = [0u8; 255];
        let member = {
            let m = &mut member[..e.member.len()];
            m.copy_from_slice(e.member);
            &*m
        };
        self.edit(|buf| {
            unlink_entry(buf, pos);
            // A later deadline goes after the entries that preceded the
            // old place, so the search starts there.
            let from = if value >= old {
                pos
            } else {
                SmallPos { at: 0, base: 0 }
            };
            let at = insertion_point(buf, from, value);
            write_entry(buf, at, member, value);
        });
    }

    fn insert_at(&mut self, place: SmallPos, member: &[u8], deadline_ms: u64) {
        self.edit(|buf| write_entry(buf, place, member, stored(deadline_ms)));
        self.len += 1;
    }

    /// Searches only for the place: no member comparisons.
    fn insert(&mut self, member: &[u8], deadline_ms: u64) {
        let at = insertion_point(
            self.bytes(),
            SmallPos { at: 0, base: 0 },
            stored(deadline_ms),
        );
        self.insert_at(at, member, deadline_ms);
    }

    fn remove_at(&mut self, pos: SmallPos) -> (Member, u64) {
        let e = entry_at(self.bytes(), pos);
        let (value, member) = (e.stored, Member::new(e.member));
        self.len -= 1;
        if self.len == 0 {
            self.buf = Box::default();
            self.used = 0;
        } else {
            self.edit(|buf| unlink_entry(buf, pos));
        }
        (member, unstored(value))
    }

    fn pop_soonest_until(&mut self, latest_ms: u64) -> Option<(Member, u64)> {
        match self.soonest() {
            Some((at, d)) if d <= latest_ms => Some(self.remove_at(at)),
            _ => None,
        }
    }

    fn soonest(&self) -> Option<(SmallPos, u64)> {
        self.entries().next().map(|e| (e.pos(), e.deadline_ms()))
    }

    fn live_len(&self, now_ms: u64) -> usize {
        self.entries().filter(|e| e.deadline_ms() > now_ms).count()
    }

    fn iter_live(&self, now_ms: u64, rev: bool) -> Items<'_> {
        let live = self
            .entries()
            .filter(move |e| e.deadline_ms() > now_ms)
            .map(|e| (e.member, e.deadline_ms()));
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
            .skip_while(move |e| e.deadline_ms() < lo)
            .take_while(move |e| e.deadline_ms() <= hi)
            .map(|e| (e.member, e.deadline_ms()));
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
            .filter(|e| lo <= e.deadline_ms() && e.deadline_ms() <= hi)
            .count()
    }

    fn iter_all(&self) -> Items<'_> {
        Box::new(self.entries().map(|e| (e.member, e.deadline_ms())))
    }

    /// A small set is returned whole, whatever the cursor, with cursor 0:
    /// a scan that began while the set was large still sees every member.
    fn scan(&self, _cursor: u64, _count: usize, now_ms: u64) -> (u64, Vec<(&[u8], u64)>) {
        (0, self.iter_live(now_ms, false).collect())
    }

    fn heap_bytes(&self) -> usize {
        member::allocation_size(self.buf.len())
    }

    fn check_invariants(&self) {
        let mut count = 0;
        let mut prev = 0u64;
        let mut end = 0;
        let mut seen = std::collections::HashSet::new();
        for e in self.entries() {
            assert!(e.end <= self.used as usize, "entry overruns the bytes used");
            assert!(e.stored >= prev, "deadline order");
            assert!(e.stored <= MAX_SMALL_DEADLINE, "deadline fits 48 bits");
            assert!(seen.insert(e.member.to_vec()), "distinct members");
            prev = e.stored;
            end = e.end;
            count += 1;
        }
        assert_eq!(
            end, self.used as usize,
            "entries fill the bytes used exactly"
        );
        assert_eq!(
            self.buf.len(),
            member::allocation_size(end),
            "the buffer is the size class of the bytes used"
        );
        assert!(
            self.buf[end..].iter().all(|&b| b == 0),
            "the buffer is zero past the bytes used"
        );
        assert_eq!(count, self.len as usize, "len counts entries");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        for shift in 0..49 {
            for v in [(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1] {
                let v = v.min(MAX_SMALL_DEADLINE);
                let (b, n) = varint(v);
                assert_eq!(read_varint(&b[..n]), (v, n));
                // Followed by other bytes (the word-at-a-time path), high
                // bits set or not.
                for tail in [[0u8; 8], [0xff; 8], [0x80; 8]] {
                    let mut buf = b[..n].to_vec();
                    buf.extend_from_slice(&tail);
                    for extra in 0..=8 {
                        assert_eq!(read_varint(&buf[..n + extra]), (v, n), "{v} + {extra}");
                    }
                }
                assert_eq!(n, (64 - v.leading_zeros() as usize).div_ceil(7).max(1));
                // The first byte alone tells the length: n - 1 one bits,
                // then a zero.
                assert_eq!(b[0].leading_ones() as usize, n - 1, "{v}");
            }
        }
    }

    #[test]
    fn a_panic_inside_an_edit_leaves_a_readable_buffer() {
        let mut s = Small::default();
        for i in 0..20u64 {
            s.insert(format!("m{i}").as_bytes(), 1_000 + i);
        }
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.edit(|_| panic!("a bug mid-edit"));
        }));
        assert!(caught.is_err());
        // What the guards' repair reads before deleting or re-sending it.
        assert_eq!(s.iter_all().count(), 0);
        assert!(s.find(b"m3").is_none());
    }

    #[test]
    fn thirty_members_a_second_apart_take_20_bytes_each() {
        // A 6-byte first delta, then 2 bytes (deltas of 1000 ms), a length
        // byte and 16 member bytes.
        let mut s = Small::default();
        for i in 0..30u64 {
            let m = format!("member:{i:09}");
            s.insert(m.as_bytes(), 1_800_000_000_000 + i * 1000);
        }
        s.check_invariants();
        assert_eq!(s.used, 23 + 29 * 19);
        assert_eq!(s.heap_bytes(), 640);
    }

    fn deadline() -> impl Strategy<Value = u64> {
        prop_oneof![
            0u64..300,
            (1u64 << 20)..(1 << 20) + 50,
            (1u64 << 41)..(1 << 41) + 100_000,
            MAX_SMALL_DEADLINE - 3..MAX_SMALL_DEADLINE,
            Just(NO_DEADLINE),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Inserts, removals, deadline changes and pops against a vector
        /// kept in deadline order (ties in insertion order).
        #[test]
        fn behaves_like_an_ordered_vec(ops in proptest::collection::vec(
            (0u8..4, 0u8..12, deadline()), 1..200)) {
            let mut s = Small::default();
            let mut model: Vec<(Vec<u8>, u64)> = Vec::new();
            // Members of several lengths (the empty one too), and of one
            // length differing only in a middle byte or only in the last.
            let key = |m: u8| match m {
                0..4 => vec![b'k'; usize::from(m) * 3 % 20],
                4..8 => vec![b'm', b'0' + m, b'x'],
                _ => vec![b'm', b'x', b'0' + m],
            };
            let place = |model: &Vec<(Vec<u8>, u64)>, d: u64| {
                model.iter().position(|e| e.1 > d).unwrap_or(model.len())
            };
            for (op, m, d) in ops {
                let k = key(m);
                let found = model.iter().position(|e| e.0 == k);
                prop_assert_eq!(s.find(&k).map(|(_, d)| d), found.map(|i| model[i].1));
                match (op, found) {
                    (0, None) => {
                        s.insert(&k, d);
                        let at = place(&model, d);
                        model.insert(at, (k, d));
                    }
                    (1, Some(i)) => {
                        let Some((pos, _)) = s.find(&k) else { unreachable!() };
                        let (gone, was) = s.remove_at(pos);
                        prop_assert_eq!(&*gone, &k[..]);
                        prop_assert_eq!(was, model.remove(i).1);
                    }
                    (2, Some(i)) => {
                        let Some((pos, _)) = s.find(&k) else { unreachable!() };
                        s.set_deadline(pos, d);
                        // An unchanged deadline keeps the member's place
                        // among its ties.
                        if stored(model[i].1) != stored(d) {
                            model.remove(i);
                            let at = place(&model, d);
                            model.insert(at, (k, d));
                        }
                    }
                    (3, _) => {
                        let got = s.pop_soonest_until(d);
                        let want = model.first().filter(|e| e.1 <= d).cloned();
                        prop_assert_eq!(got.map(|(m, x)| (m.to_vec(), x)), want.clone());
                        if want.is_some() {
                            model.remove(0);
                        }
                    }
                    _ => {}
                }
                s.check_invariants();
                prop_assert_eq!(s.len(), model.len());
                prop_assert!(s.iter_all().eq(model.iter().map(|(m, d)| (&m[..], *d))));
            }
            let rebuilt = Small::from_sorted(s.iter_all());
            prop_assert_eq!(rebuilt.bytes(), s.bytes());
        }
    }
}
