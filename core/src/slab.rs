//! The large encoding's slab: values at fixed positions (slots), stored in
//! chunks of [`CHUNK`] positions, with a bitmap of the vacant positions.
//!
//! Chunks instead of one vector: a big set never over-allocates by up to
//! half (a doubling vector's waste) and never copies all its entries to
//! grow (which through Redis's allocator would be a multi-millisecond stall
//! at a million members). Only a chunk being filled at the end grows by
//! doubling, so a small set still lives in one small vector. A chunk whose
//! positions are all vacant is freed where it stands, so memory follows the
//! occupied positions even before the trailing ones are trimmed.
//!
//! The bitmap (one bit a position, one summary bit a word of it) finds the
//! lowest vacant position in a few word reads: new values fill the slab
//! from the bottom, and compaction moves values from the top into the
//! lowest holes. It costs a bit a position where a list of vacant slots
//! cost 4 bytes a hole, and walking down it skips 64 vacant positions a
//! word and a freed chunk at once.
//!
//! Invariants (checked by `check_invariants`):
//! 1. `chunks` and `counts` have an element per chunk that `len` positions
//!    start; `counts[c]` is the number of occupied positions of chunk `c`;
//! 2. a chunk with no occupied position holds no allocation; any other
//!    holds exactly its positions below `len`, in at most [`CHUNK`] places;
//! 3. bit `p` of `vacant` is set exactly when `p < len` and position `p` is
//!    vacant, and `vacancies` counts those bits; bit `w` of `summary` is set
//!    exactly when word `w` of `vacant` is not zero, and none is set below
//!    word `lowest` of `summary`;
//! 4. the bookkeeping vectors hold at most four times their length (or
//!    [`SPARE`] elements), so that they shrink with the slab.

use super::relocate::Relocate;

/// Positions per chunk.
pub(super) const CHUNK: usize = 1024;

/// Bookkeeping vectors keep up to this many elements whatever their length.
const SPARE: usize = 8;

/// Bit masks of the positions of a word.
const BITS: usize = 64;

/// Where a walk down the slab stopped ([`Slab::last_occupied_before`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Probe {
    /// The highest occupied position below the start.
    Found(usize),
    /// Out of budget: every position from this one up to the start is
    /// vacant; the walk may go on from here.
    Stopped(usize),
    /// No occupied position lies below the start.
    Bottom,
}

/// Values at stable positions, with their vacancies tracked.
#[derive(Clone, Debug)]
pub(super) struct Slab<T> {
    /// Chunk `c` holds positions `c * CHUNK ..`; empty (no allocation)
    /// while none of them is occupied.
    chunks: Vec<Vec<Option<T>>>,
    /// Occupied positions, by chunk.
    counts: Vec<u16>,
    /// Bit `p % 64` of word `p / 64`: position `p` is vacant.
    vacant: Vec<u64>,
    /// Bit `w % 64` of word `w / 64`: word `w` of `vacant` is not zero.
    summary: Vec<u64>,
    /// A word of `summary` below which every one is zero.
    lowest: usize,
    len: usize,
    vacancies: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            chunks: Vec::new(),
            counts: Vec::new(),
            vacant: Vec::new(),
            summary: Vec::new(),
            lowest: 0,
            len: 0,
            vacancies: 0,
        }
    }
}

/// The low `n` bits set, `n` at most 64.
fn low_mask(n: usize) -> u64 {
    if n >= BITS { u64::MAX } else { (1 << n) - 1 }
}

/// Shrinks `v` to twice its length once it holds four times that (and
/// more than [`SPARE`]): a slab that shrinks and grows back by less than
/// half never reallocates.
fn fit<U>(v: &mut Vec<U>) {
    if v.capacity() > SPARE && v.capacity() > 4 * v.len() {
        v.shrink_to((2 * v.len()).max(SPARE));
    }
}

impl<T> Slab<T> {
    /// Number of positions, vacant ones included. O(1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of chunks, freed ones included: the steps of a relocation
    /// walk ([`Slab::relocate_chunk`]).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Hands the bookkeeping vectors' buffers to `r` (active defrag).
    pub fn relocate_books<R: Relocate>(&mut self, r: &mut R) {
        r.vec(&mut self.chunks);
        r.vec(&mut self.counts);
        r.vec(&mut self.vacant);
        r.vec(&mut self.summary);
    }

    /// Hands chunk `c`'s buffer to `r`, then each of its values to `each`;
    /// nothing past the last chunk.
    pub fn relocate_chunk<R: Relocate>(
        &mut self,
        c: usize,
        r: &mut R,
        each: impl Fn(&mut T, &mut R),
    ) {
        if let Some(chunk) = self.chunks.get_mut(c) {
            r.vec(chunk);
            for value in chunk.iter_mut().flatten() {
                each(value, r);
            }
        }
    }

    /// Number of vacant positions below [`Slab::len`]. O(1).
    pub fn vacancies(&self) -> usize {
        self.vacancies
    }

    /// The value at position `i`; `None` when vacant or past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)?.as_ref()
    }

    /// The value at position `i`, mutably.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)?.as_mut()
    }

    /// Stores `value` at the lowest vacant position, or at a new one at
    /// the end, and returns the position. O(1) expected.
    pub fn insert(&mut self, value: T) -> usize {
        match self.lowest_vacant() {
            Some(i) => {
                self.put(i, value);
                i
            }
            None => self.push(value),
        }
    }

    /// Stores `value` at a new position at the end and returns it.
    pub fn push(&mut self, value: T) -> usize {
        let i = self.len;
        let c = i / CHUNK;
        if c == self.chunks.len() {
            self.chunks.push(Vec::new());
            self.counts.push(0);
        }
        if i.is_multiple_of(BITS) {
            if (i / BITS).is_multiple_of(BITS) {
                self.summary.push(0);
            }
            self.vacant.push(0);
        }
        if self.counts[c] == 0 && !i.is_multiple_of(CHUNK) {
            // A chunk freed while trailing vacancies were still to trim:
            // its positions below this one come back, vacant.
            self.materialize(c);
        }
        self.len += 1;
        let chunk = &mut self.chunks[c];
        if chunk.len() == chunk.capacity() {
            // The first chunk starts small and doubles; later ones start
            // whole (a big set's chunk would soon fill anyway).
            let target = if c == 0 {
                (2 * chunk.capacity()).clamp(4, CHUNK)
            } else {
                CHUNK
            };
            chunk.reserve_exact(target - chunk.len());
        }
        chunk.push(Some(value));
        self.counts[c] += 1;
        i
    }

    /// Allocates the vacant positions of chunk `c` below `len`, which holds
    /// no allocation, with room for the chunk's positions (the first chunk:
    /// for those below `len`, rounded up to a power of two).
    fn materialize(&mut self, c: usize) {
        let span = (self.len - c * CHUNK).min(CHUNK);
        let capacity = if c == 0 {
            span.next_power_of_two().max(4)
        } else {
            CHUNK
        };
        let chunk = &mut self.chunks[c];
        debug_assert!(chunk.is_empty() && chunk.capacity() == 0);
        chunk.reserve_exact(capacity);
        chunk.resize_with(span, || None);
    }

    /// Stores `value` at `i`, a vacant position below [`Slab::len`].
    pub fn put(&mut self, i: usize, value: T) {
        debug_assert!(self.is_vacant(i), "position {i} vacant");
        let c = i / CHUNK;
        if self.counts[c] == 0 {
            self.materialize(c);
        }
        self.chunks[c][i % CHUNK] = Some(value);
        self.counts[c] += 1;
        self.set_vacant(i, false);
    }

    /// Vacates position `i` and returns its value; `None` if it was vacant
    /// or past the end. Frees the chunk if that was its last value. The
    /// slab keeps its length: [`Slab::trim`] cuts trailing vacancies.
    #[inline]
    pub fn take(&mut self, i: usize) -> Option<T> {
        let c = i / CHUNK;
        let value = self.chunks.get_mut(c)?.get_mut(i % CHUNK)?.take()?;
        self.counts[c] -= 1;
        if self.counts[c] == 0 {
            self.chunks[c] = Vec::new();
        }
        self.set_vacant(i, true);
        Some(value)
    }

    /// Whether `i` is a vacant position below [`Slab::len`].
    #[inline]
    pub fn is_vacant(&self, i: usize) -> bool {
        i < self.len && self.vacant[i / BITS] & (1 << (i % BITS)) != 0
    }

    #[inline]
    fn set_vacant(&mut self, i: usize, vacant: bool) {
        let (w, bit) = (i / BITS, 1u64 << (i % BITS));
        let (s, sbit) = (w / BITS, 1u64 << (w % BITS));
        if vacant {
            self.vacant[w] |= bit;
            self.summary[s] |= sbit;
            self.lowest = self.lowest.min(s);
            self.vacancies += 1;
        } else {
            self.vacant[w] &= !bit;
            if self.vacant[w] == 0 {
                self.summary[s] &= !sbit;
            }
            self.vacancies -= 1;
        }
    }

    /// The lowest vacant position, if any. O(1) amortized: a few word
    /// reads from the lowest summary word that may be set.
    pub fn lowest_vacant(&mut self) -> Option<usize> {
        if self.vacancies == 0 {
            return None;
        }
        while let Some(&s) = self.summary.get(self.lowest) {
            if s != 0 {
                let w = self.lowest * BITS + s.trailing_zeros() as usize;
                return Some(w * BITS + self.vacant[w].trailing_zeros() as usize);
            }
            self.lowest += 1;
        }
        None
    }

    /// The highest occupied position below `start` (clamped to
    /// [`Slab::len`]), reading at most `budget` words of the bitmap (a
    /// freed chunk costs one) and taking what it read off `budget`.
    pub fn last_occupied_before(&self, start: usize, budget: &mut usize) -> Probe {
        let mut p = start.min(self.len);
        while p > 0 {
            if *budget == 0 {
                return Probe::Stopped(p);
            }
            *budget -= 1;
            let c = (p - 1) / CHUNK;
            if self.counts[c] == 0 {
                p = c * CHUNK;
                continue;
            }
            let w = (p - 1) / BITS;
            // Positions of word `w` below `p`, all below `len`.
            let occupied = !self.vacant[w] & low_mask(p - w * BITS);
            if occupied != 0 {
                return Probe::Found(w * BITS + (BITS - 1) - occupied.leading_zeros() as usize);
            }
            p = w * BITS;
        }
        Probe::Bottom
    }

    /// Cuts trailing vacant positions, reading at most `budget` words of
    /// the bitmap (a freed chunk costs one), and gives back the memory
    /// that the bookkeeping and the last chunk no longer need. A slab
    /// left with no position frees everything. O(1) when the last
    /// position is occupied, as it mostly is.
    #[inline]
    pub fn trim(&mut self, budget: usize) {
        if self.len > 0 && self.is_vacant(self.len - 1) {
            self.trim_vacant_tail(budget);
        }
    }

    #[inline(never)]
    fn trim_vacant_tail(&mut self, budget: usize) {
        let mut budget = budget;
        let mut end = self.len;
        while end > 0 && self.is_vacant(end - 1) {
            match self.last_occupied_before(end, &mut budget) {
                Probe::Found(p) => end = p + 1,
                Probe::Stopped(p) => {
                    end = p;
                    break;
                }
                Probe::Bottom => end = 0,
            }
        }
        if end < self.len {
            self.truncate(end);
        }
    }

    /// Drops positions `end..`, all vacant.
    fn truncate(&mut self, end: usize) {
        if end == 0 {
            *self = Slab::default();
            return;
        }
        self.vacancies -= self.len - end;
        self.len = end;
        let chunks = end.div_ceil(CHUNK);
        self.chunks.truncate(chunks);
        self.counts.truncate(chunks);
        let last = &mut self.chunks[chunks - 1];
        let span = end - (chunks - 1) * CHUNK;
        if !last.is_empty() {
            last.truncate(span);
            // Down to what a chunk grown to this length has (a power of
            // two), once it holds four times that: room to grow back
            // without reallocating, and no more.
            if last.capacity() > 4 && last.capacity() > 4 * span {
                last.shrink_to(span.next_power_of_two().max(4));
            }
        }
        let words = end.div_ceil(BITS);
        self.vacant.truncate(words);
        self.vacant[words - 1] &= low_mask(end - (words - 1) * BITS);
        let summaries = words.div_ceil(BITS);
        self.summary.truncate(summaries);
        self.summary[summaries - 1] &= low_mask(words - (summaries - 1) * BITS);
        if self.vacant[words - 1] == 0 {
            self.summary[summaries - 1] &= !(1 << ((words - 1) % BITS));
        }
        self.lowest = self.lowest.min(summaries);
        fit(&mut self.chunks);
        fit(&mut self.counts);
        fit(&mut self.vacant);
        fit(&mut self.summary);
    }

    /// Heap bytes held, as the allocator rounds them. O(chunks).
    pub fn heap_bytes(&self) -> usize {
        use super::member::allocation_size;
        let value = std::mem::size_of::<Option<T>>();
        allocation_size(self.chunks.capacity() * std::mem::size_of::<Vec<Option<T>>>())
            + allocation_size(self.counts.capacity() * std::mem::size_of::<u16>())
            + allocation_size(self.vacant.capacity() * 8)
            + allocation_size(self.summary.capacity() * 8)
            + self
                .chunks
                .iter()
                .map(|c| allocation_size(c.capacity() * value))
                .sum::<usize>()
    }

    /// Panics if an invariant does not hold. O(len).
    pub fn check_invariants(&self) {
        let chunks = self.len.div_ceil(CHUNK);
        assert_eq!(self.chunks.len(), chunks, "a chunk per started chunk");
        assert_eq!(self.counts.len(), chunks, "a count per chunk");
        let mut vacancies = 0;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let span = (self.len - c * CHUNK).min(CHUNK);
            let occupied = chunk.iter().filter(|v| v.is_some()).count();
            assert_eq!(usize::from(self.counts[c]), occupied, "chunk {c} count");
            if occupied == 0 {
                assert_eq!(chunk.capacity(), 0, "vacant chunk {c} freed");
            } else {
                assert_eq!(chunk.len(), span, "chunk {c} holds its positions");
                assert!(chunk.capacity() <= CHUNK, "chunk {c} within a chunk");
            }
            for k in 0..span {
                let p = c * CHUNK + k;
                let vacant = chunk.get(k).is_none_or(Option::is_none);
                assert_eq!(self.is_vacant(p), vacant, "position {p} vacancy bit");
                vacancies += usize::from(vacant);
            }
        }
        assert_eq!(self.vacancies, vacancies, "vacancies counted");
        let words = self.len.div_ceil(BITS);
        assert_eq!(self.vacant.len(), words, "a bitmap word per 64 positions");
        if let Some(&last) = self.vacant.last() {
            assert_eq!(
                last & !low_mask(self.len - (words - 1) * BITS),
                0,
                "no bit past the end"
            );
        }
        assert_eq!(self.summary.len(), words.div_ceil(BITS), "summary words");
        for (w, &v) in self.vacant.iter().enumerate() {
            let bit = self.summary[w / BITS] >> (w % BITS) & 1;
            assert_eq!(bit == 1, v != 0, "summary bit of word {w}");
        }
        if let Some(&last) = self.summary.last() {
            assert_eq!(
                last & !low_mask(words - (self.summary.len() - 1) * BITS),
                0,
                "no summary bit past the end"
            );
        }
        assert!(
            self.summary[..self.lowest.min(self.summary.len())]
                .iter()
                .all(|&s| s == 0),
            "nothing vacant below the lowest hint"
        );
        for (name, len, capacity) in [
            ("chunks", self.chunks.len(), self.chunks.capacity()),
            ("counts", self.counts.len(), self.counts.capacity()),
            ("bitmap", self.vacant.len(), self.vacant.capacity()),
            ("summary", self.summary.len(), self.summary.capacity()),
        ] {
            assert!(
                capacity <= (4 * len).max(SPARE) || len == 0 && capacity == 0,
                "{name}: {capacity} places for {len}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The slab against a map of position to value, and the set of
    /// positions below its length, after every step.
    fn same(slab: &Slab<u32>, model: &BTreeMap<usize, u32>) {
        slab.check_invariants();
        assert_eq!(slab.len() - slab.vacancies(), model.len());
        assert!(model.keys().next_back().is_none_or(|&p| p < slab.len()));
        for p in 0..slab.len() + 3 {
            assert_eq!(slab.get(p), model.get(&p), "position {p}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn behaves_like_a_map_of_positions(
            ops in proptest::collection::vec((0u8..8, 0usize..5000), 1..400),
        ) {
            let mut slab: Slab<u32> = Slab::default();
            let mut model: BTreeMap<usize, u32> = BTreeMap::new();
            let mut fresh = 0u32;
            for (op, x) in ops {
                fresh += 1;
                match op {
                    // Inserts, in runs: the lowest vacant position or a new one.
                    0..=2 => {
                        for _ in 0..=x % 40 {
                            let lowest = (0..slab.len()).find(|p| !model.contains_key(p));
                            let p = slab.insert(fresh);
                            prop_assert_eq!(p, lowest.unwrap_or(slab.len() - 1));
                            model.insert(p, fresh);
                        }
                    }
                    3 => {
                        let p = slab.push(fresh);
                        model.insert(p, fresh);
                    }
                    // Takes, in runs, of any position, then a trim.
                    4 | 5 => {
                        for k in 0..=x % 300 {
                            let p = (x * 7 + k * 13) % (slab.len() + 1);
                            prop_assert_eq!(slab.take(p), model.remove(&p));
                        }
                        slab.trim(x % 70);
                    }
                    // A move down into the lowest vacancy.
                    6 => {
                        let mut budget = usize::MAX;
                        if let (Some(h), Probe::Found(t)) =
                            (slab.lowest_vacant(), slab.last_occupied_before(usize::MAX, &mut budget))
                            && h < t
                        {
                            let v = slab.take(t).expect("occupied");
                            slab.put(h, v);
                            model.remove(&t);
                            model.insert(h, v);
                        }
                    }
                    _ => {
                        // A walk down from `x` in small steps finds the
                        // occupied positions the model has, in order.
                        let mut start = x;
                        let mut found = Vec::new();
                        loop {
                            let mut budget = 3;
                            match slab.last_occupied_before(start, &mut budget) {
                                Probe::Found(p) => {
                                    found.push(p);
                                    start = p;
                                }
                                Probe::Stopped(p) => {
                                    prop_assert!(p < start.min(slab.len()) || start == 0);
                                    prop_assert!(model.range(p..start).next().is_none());
                                    start = p;
                                }
                                Probe::Bottom => break,
                            }
                        }
                        let want: Vec<usize> = model.range(..x).rev().map(|(&p, _)| p).collect();
                        prop_assert_eq!(found, want);
                    }
                }
                same(&slab, &model);
            }
            slab.trim(usize::MAX);
            same(&slab, &model);
            prop_assert_eq!(slab.len(), model.keys().next_back().map_or(0, |&p| p + 1));
        }
    }

    #[test]
    fn vacant_chunks_are_freed_where_they_stand() {
        let mut slab: Slab<u64> = Slab::default();
        for i in 0..10 * CHUNK as u64 {
            slab.push(i);
        }
        let full = slab.heap_bytes();
        // Chunks 2 to 7 emptied: freed although the slab keeps its length.
        for p in 2 * CHUNK..8 * CHUNK {
            slab.take(p);
        }
        slab.check_invariants();
        assert_eq!(slab.len(), 10 * CHUNK);
        let chunk_bytes = CHUNK * std::mem::size_of::<Option<u64>>();
        assert_eq!(full - slab.heap_bytes(), 6 * chunk_bytes);
        // The lowest vacancy is the first position of chunk 2, which comes
        // back whole for it.
        assert_eq!(slab.insert(7), 2 * CHUNK);
        slab.check_invariants();
        assert_eq!(slab.get(2 * CHUNK), Some(&7));
        // Emptied from the top, the slab gives everything back.
        for p in (0..10 * CHUNK).rev() {
            slab.take(p);
            slab.trim(4);
        }
        slab.check_invariants();
        assert_eq!((slab.len(), slab.heap_bytes()), (0, 0));
    }

    #[test]
    fn a_slab_trimmed_small_shrinks_its_allocations() {
        let mut slab: Slab<u64> = Slab::default();
        for i in 0..100 * CHUNK as u64 {
            slab.push(i);
        }
        // Keep 100 values at the bottom; the rest go, top first in
        // bounded trims.
        for p in (100..100 * CHUNK).rev() {
            slab.take(p);
            slab.trim(16);
        }
        slab.check_invariants();
        assert_eq!(slab.len(), 100);
        let fresh = {
            let mut s: Slab<u64> = Slab::default();
            for i in 0..100 {
                s.push(i);
            }
            s.heap_bytes()
        };
        assert!(
            slab.heap_bytes() <= 2 * fresh,
            "{} against {fresh} fresh",
            slab.heap_bytes()
        );
    }

    #[test]
    fn a_walk_down_skips_vacant_words_and_freed_chunks_cheaply() {
        let mut slab: Slab<u64> = Slab::default();
        for i in 0..50 * CHUNK as u64 {
            slab.push(i);
        }
        for p in 1..50 * CHUNK - 1 {
            slab.take(p);
        }
        // 48 freed chunks and two chunks of one value each: one word a
        // chunk, 16 for the bitmap of each of the two partly used ones.
        let mut budget = 100;
        let top = 50 * CHUNK - 1;
        assert_eq!(
            slab.last_occupied_before(top + 1, &mut budget),
            Probe::Found(top)
        );
        assert_eq!(slab.last_occupied_before(top, &mut budget), Probe::Found(0));
        assert!(
            100 - budget <= 2 + 2 * 16 + 48,
            "{} words read",
            100 - budget
        );
        assert_eq!(slab.last_occupied_before(0, &mut budget), Probe::Bottom);
    }
}
