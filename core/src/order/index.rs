//! The deadline index's writes: locating a pair's leaf, inserting,
//! removing, replacing and retiring pairs, and the splits, spills and
//! merges that keep leaves and chunks within their bounds.

use super::leaf::*;
use super::search::{interpolate, packed};
use super::*;

impl<const CHUNK: usize> DeadlineIndex<CHUNK> {
    /// Number of live pairs. O(1).
    pub fn len(&self) -> usize {
        self.len - self.stale
    }

    /// Whether the leaves are likely out of cache ([`COLD_ABOVE`]).
    pub(super) fn cold(&self) -> bool {
        self.len > COLD_ABOVE
    }

    /// Starts fetching, in a large index, the leaf headers that locating
    /// deadline `deadline_ms` will read (that of [`Chunk::locate`]'s
    /// guess and the next, which its search reads when, as usual, the
    /// guess is not past the answer), so that a refresh's insert does not
    /// wait for them: the owner calls this before it looks the member up.
    /// The chunk found is kept for that refresh's search (`guessed`).
    /// Not for the last chunk, which the usual refresh keeps in cache, nor
    /// for `u64::MAX` (no deadline).
    pub fn prefetch_for(&self, deadline_ms: u64) {
        // No deadline (`u64::MAX`) and a small index return at once; the
        // last chunk's first pair is read on every insert, in cache.
        if deadline_ms == u64::MAX
            || !self.cold()
            || self.chunks.back().is_none_or(|c| deadline_ms >= c.first.0)
        {
            return;
        }
        let key = (deadline_ms, 0);
        let c = self.chunk_of(key);
        let (Some(chunk), Some(next)) = (self.chunks.get(c), self.chunks.get(c + 1)) else {
            return;
        };
        let (t, first, end) = (packed(key) + 1, packed(chunk.first), packed(next.first));
        let n = chunk.leaves.len();
        if t <= first || n < 2 {
            return;
        }
        self.guessed.set(Some((deadline_ms, c)));
        let guess = interpolate(t - first, end - first, n).clamp(1, n - 1);
        for leaf in chunk.leaves.range(guess..(guess + 2).min(n)) {
            // The first pair, which the search reads, and a count, which
            // the insert reads.
            touch(&leaf.first_deadline);
            touch(&leaf.stale);
        }
    }

    /// Starts fetching the records of leaf `l` of chunk `c`, which the
    /// caller will read soon, while it goes on with something else.
    pub(super) fn prefetch_records(&self, (c, l): LeafAt) {
        let leaf = &self.chunks[c].leaves[l];
        let recs = &leaf.recs[leaf.start()..leaf.start() + leaf.len()];
        for rec in recs.iter().step_by(8).chain(recs.last()) {
            touch(rec);
        }
    }

    /// The chunk that would hold `key`: the last one whose first pair is
    /// not above it (the first one if none). Chunk headers are 64 bytes,
    /// about 32 KB at 10M members, and mostly in cache: a binary search,
    /// over each of the deque's two slices.
    pub(super) fn chunk_of(&self, key: Key) -> usize {
        // One chunk (up to about 32,000 pairs) holds everything.
        if self.chunks.len() <= 1 {
            return 0;
        }
        let (a, b) = self.chunks.as_slices();
        let below = match b.first() {
            Some(c) if c.first <= key => a.len() + b.partition_point(|c| c.first <= key),
            _ => a.partition_point(|c| c.first <= key),
        };
        below.saturating_sub(1)
    }

    /// Whether chunk `c` is the one [`Self::chunk_of`] answers for `key`,
    /// from its first pair and the next chunk's.
    pub(super) fn chunk_holds(&self, c: usize, key: Key) -> bool {
        let Some(chunk) = self.chunks.get(c) else {
            return false;
        };
        (c == 0 || chunk.first <= key) && self.chunks.get(c + 1).is_none_or(|next| key < next.first)
    }

    /// Chunk and leaf that would hold `key`: the last leaf whose first pair
    /// is not above it (the first leaf if none); the index must not be
    /// empty. Two searches over contiguous headers.
    pub(super) fn locate(&self, key: Key) -> (usize, usize) {
        self.locate_in(self.chunk_of(key), key)
    }

    /// [`Self::locate`] for the new pair of a refresh: from the chunk
    /// [`Self::prefetch_for`] found for its deadline, if that holds it.
    pub(super) fn locate_guessed(&self, key: Key) -> (usize, usize) {
        let c = match self.guessed.take() {
            Some((d, c)) if d == key.0 && self.chunk_holds(c, key) => c,
            _ => self.chunk_of(key),
        };
        debug_assert_eq!(c, self.chunk_of(key), "the chunk that holds the pair");
        self.locate_in(c, key)
    }

    /// The leaf of chunk `c` that would hold `key`.
    pub(super) fn locate_in(&self, c: usize, key: Key) -> (usize, usize) {
        let end = self.chunks.get(c + 1).map(|next| next.first);
        (c, self.chunks[c].locate(key, end))
    }

    /// Whether `key` belongs in leaf `l` of chunk `c` (what [`Self::locate`]
    /// would answer), from that leaf's header and the next one's: this leaf
    /// starts at or before it (or is the very first) and no later leaf
    /// does. False for a leaf that does not exist.
    pub(super) fn belongs_in(&self, (c, l): LeafAt, key: Key) -> bool {
        let Some(leaf) = self.chunks.get(c).and_then(|chunk| chunk.leaves.get(l)) else {
            return false;
        };
        let below_next = match self.chunks[c].leaves.get(l + 1) {
            Some(next) => key < next.first(),
            None => self.chunks.get(c + 1).is_none_or(|next| key < next.first),
        };
        below_next && (leaf.first() <= key || (c == 0 && l == 0))
    }

    /// The leaf before leaf `l` of chunk `c`, if any (in the chunk before
    /// when `l` is its first).
    pub(super) fn leaf_before(&self, c: usize, l: usize) -> Option<LeafAt> {
        match (c, l) {
            (_, 1..) => Some((c, l - 1)),
            (1.., 0) => Some((c - 1, self.chunks[c - 1].leaves.len() - 1)),
            (0, 0) => None,
        }
    }

    /// Adds `key`, which must not be live (it may be present and stale: it
    /// is then live again). O(log n + leaf size + chunk size): a leaf split
    /// shifts at most [`CHUNK_CAP`] headers.
    pub fn insert(&mut self, key: Key, live: &impl Fn(Key) -> bool) {
        self.place_pending(live);
        self.insert_pair(key, live);
        self.settle_front(live);
    }

    pub(super) fn insert_pair(&mut self, key: Key, live: &impl Fn(Key) -> bool) {
        if self.chunks.is_empty() {
            self.len += 1;
            let mut leaf = Leaf::with_capacity(capacity_for(1));
            leaf.insert_at(0, key);
            let chunk = Chunk::new(VecDeque::from([leaf]));
            self.chunk_heap += chunk.heap_bytes();
            self.chunks.push_back(chunk);
            return;
        }
        let (c, l) = self.leaf_from_the_end(key);
        self.insert_in(c, l, key, live);
    }

    /// The leaf that holds or would hold `key`, looked for from the end. A
    /// key at or after the last leaf's first pair (a new member or a
    /// refresh with the usual TTL, which ties with the last deadlines when
    /// many arrive in one millisecond; a loader feeding deadline order)
    /// goes into the last leaf with no search for its leaf or chunk. Nor
    /// does one that goes into the leaf before it: one of the millisecond's
    /// pairs whose slot sorts before the last leaf's first. Others are
    /// located (the index must not be empty).
    fn leaf_from_the_end(&self, key: Key) -> LeafAt {
        let c = self.chunks.len() - 1;
        let l = self.chunks[c].leaves.len() - 1;
        if key >= self.chunks[c].leaves[l].first() {
            return (c, l);
        }
        match self.leaf_before(c, l) {
            Some((pc, pl)) if key >= self.chunks[pc].leaves[pl].first() => (pc, pl),
            _ => self.locate(key),
        }
    }

    /// Inserts `key` into leaf `l` of chunk `c`, where it belongs.
    pub(super) fn insert_in(&mut self, c: usize, l: usize, key: Key, live: &impl Fn(Key) -> bool) {
        debug_assert!(self.belongs_in((c, l), key), "inserted where it belongs");
        let cold = self.cold();
        let chunk = &mut self.chunks[c];
        let leaf = &mut chunk.leaves[l];

        // Appending past the last pair (a refresh with the usual TTL, a
        // loader) needs no search.
        let pos = if leaf.len() > 0 && key > leaf.key(leaf.len() - 1) {
            leaf.len()
        } else {
            leaf.rank(key, cold)
        };
        if pos < leaf.len() && leaf.key(pos) == key {
            // The key is here, stale (a member back at a deadline it had,
            // or a slot reused with it): it is live again.
            debug_assert!(leaf.stale > 0, "a live key inserted again");
            leaf.stale -= 1;
            chunk.stale -= 1;
            self.stale -= 1;
            return;
        }
        // A leaf that must split, spill or rebase drops its stale pairs
        // first (which may leave room): pairs moved elsewhere are all live.
        if leaf.stale > 0 && (leaf.len() == LEAF_CAP || !leaf.fits(key.0)) {
            self.purge_leaf(c, l, live);
            self.insert_pair(key, live);
            return;
        }
        self.len += 1;
        chunk.len += 1;
        // A key appended past a full leaf starts a new one: this leaf's
        // base need not hold it.
        if pos < LEAF_CAP && !leaf.fits(key.0) && !leaf.make_room_for(finite(key.0)) {
            self.insert_spanning(c, l, pos, key);
            return;
        }
        if leaf.len() < LEAF_CAP {
            let grown = leaf.reserve(leaf.len() + 1);
            leaf.insert_at(pos, key);
            if l == 0 && pos == 0 {
                chunk.first = key;
            }
            self.chunk_heap += grown;
            return;
        }
        // A full leaf whose left neighbour in the chunk has room hands it
        // its first pairs instead of splitting, so random deadlines fill
        // leaves further. Not when appending past the end: in-order runs
        // keep their leaves full and start new ones.
        if pos < LEAF_CAP && l > 0 {
            let room = LEAF_CAP - chunk.leaves[l - 1].len();
            let k = room * 3 / 4;
            // The key goes with the moved pairs when it lands among them.
            let extra = if pos < k { finite(key.0) } else { None };
            if room >= 2 && chunk.leaves[l].head_fits(k, &chunk.leaves[l - 1], extra) {
                let (before, from) = chunk.leaves.make_contiguous().split_at_mut(l);
                let (left, leaf) = (&mut before[l - 1], &mut from[0]);
                let left_len = left.len();
                let grown = left.reserve(left_len + k + 1);
                leaf.move_head(k, left);
                let freed = leaf.shrink_to(capacity_for(LEAF_CAP - k + 1));
                if pos < k {
                    left.make_room_for(extra);
                    left.insert_at(left_len + pos, key);
                } else {
                    leaf.insert_at(pos - k, key);
                }
                self.chunk_heap = self.chunk_heap + grown - freed;
                return;
            }
        }
        // Else its right neighbour, its last pairs.
        if pos < LEAF_CAP && l + 1 < chunk.leaves.len() {
            let room = LEAF_CAP - chunk.leaves[l + 1].len();
            let from = LEAF_CAP - room * 3 / 4;
            // The key goes with the moved pairs when it lands among them.
            let extra = if pos > from { finite(key.0) } else { None };
            if room >= 2 && chunk.leaves[l].tail_fits(from, &chunk.leaves[l + 1], extra) {
                let (upto, after) = chunk.leaves.make_contiguous().split_at_mut(l + 1);
                let (leaf, right) = (&mut upto[l], &mut after[0]);
                let grown = right.reserve(right.len() + LEAF_CAP - from + 1);
                leaf.move_tail_in_front(from, right);
                let freed = leaf.shrink_to(capacity_for(from + 1));
                if pos > from {
                    right.make_room_for(extra);
                    right.insert_at(pos - from, key);
                } else {
                    leaf.insert_at(pos, key);
                }
                if l == 0 && pos == 0 {
                    chunk.first = key;
                }
                self.chunk_heap = self.chunk_heap + grown - freed;
                return;
            }
        }
        let before = chunk.heap_bytes();
        let leaf = &mut chunk.leaves[l];
        let right = if pos == LEAF_CAP {
            // Appending past a full leaf (deadlines arriving in order, one
            // run per distinct TTL): start a new full-size leaf, keep this
            // one full.
            let mut right = Leaf::new();
            right.insert_at(0, key);
            right
        } else {
            // Split at the insertion point if that is in the upper half: a
            // run that keeps arriving here fills the left leaf instead of
            // leaving it half empty. Else in half.
            let at = pos.max(LEAF_CAP / 2);
            let mut right = Leaf::with_capacity(capacity_for(LEAF_CAP - at));
            leaf.move_tail(at, &mut right);
            leaf.shrink_to(capacity_for(at + 1));
            leaf.insert_at(pos, key);
            right
        };
        chunk.leaves.insert(l + 1, right);
        chunk.refresh_first();
        self.chunk_heap = self.chunk_heap - before + chunk.heap_bytes();
        if chunk.leaves.len() > CHUNK {
            self.split_chunk(c, l + 1);
        }
    }

    /// Inserts `key` at position `pos` of leaf `l` of chunk `c` (already
    /// counted in the chunk), where no base holds the leaf's deadlines and
    /// the key's together: the leaf splits at `pos` and the key goes to
    /// the end of the lower part, the front of the upper part, or a leaf of
    /// its own between them, whichever first can hold it. Deadlines more
    /// than 49.7 days apart share a leaf only at the boundary between two
    /// TTLs' runs, so this is rare.
    pub(super) fn insert_spanning(&mut self, c: usize, l: usize, pos: usize, key: Key) {
        let chunk = &mut self.chunks[c];
        let before = chunk.heap_bytes();
        let leaf = &mut chunk.leaves[l];
        // The upper part, when both parts are non-empty.
        let upper = (pos > 0 && pos < leaf.len()).then(|| {
            let mut upper = Leaf::with_capacity(capacity_for(leaf.len() - pos + 1));
            leaf.move_tail(pos, &mut upper);
            upper
        });
        let mut at = l + 1;
        let mut added = 0;
        if let Some(upper) = upper {
            chunk.leaves.insert(at, upper);
            added += 1;
        }
        // The part below the key, if any, and the part above it.
        let (lower, higher) = if pos == 0 {
            (None, l)
        } else {
            (Some(l), l + 1)
        };
        let span = finite(key.0);
        let mut placed = false;
        if let Some(leaf) = lower.map(|i| &mut chunk.leaves[i])
            && leaf.len() < LEAF_CAP
            && leaf.make_room_for(span)
        {
            leaf.reserve(leaf.len() + 1);
            leaf.insert_at(leaf.len(), key);
            placed = true;
        }
        if let Some(leaf) = chunk.leaves.get_mut(higher)
            && !placed
            && leaf.len() < LEAF_CAP
            && leaf.make_room_for(span)
        {
            leaf.reserve(leaf.len() + 1);
            leaf.insert_at(0, key);
            placed = true;
        }
        if !placed {
            let mut own = Leaf::with_capacity(capacity_for(1));
            own.insert_at(0, key);
            if pos == 0 {
                at = l;
            }
            chunk.leaves.insert(at, own);
            added += 1;
        }
        chunk.refresh_first();
        self.chunk_heap = self.chunk_heap - before + chunk.heap_bytes();
        if chunk.leaves.len() > CHUNK {
            // One new leaf (at `at` either way) splits as any insert's
            // does: chunks appended in order stay full.
            if added == 1 {
                self.split_chunk(c, at);
            } else {
                let half = chunk.leaves.len() / 2;
                self.split_chunk_at(c, half);
            }
        }
    }

    /// Splits chunk `c`, just grown past [`CHUNK_CAP`] by new leaf `new`:
    /// a new last leaf (appends in order) starts a chunk of its own, so
    /// chunks filled in order stay full; otherwise the chunk splits in half.
    pub(super) fn split_chunk(&mut self, c: usize, new: usize) {
        let leaves = self.chunks[c].leaves.len();
        let at = if new + 1 == leaves { new } else { leaves / 2 };
        self.split_chunk_at(c, at);
    }

    /// Moves the leaves of chunk `c` from `at` on into a new chunk after it.
    pub(super) fn split_chunk_at(&mut self, c: usize, at: usize) {
        let chunk = &mut self.chunks[c];
        let before = chunk.heap_bytes();
        let right = Chunk::new(chunk.leaves.split_off(at));
        chunk.len -= right.len;
        chunk.stale -= right.stale;
        self.chunk_heap = self.chunk_heap - before + chunk.heap_bytes() + right.heap_bytes();
        self.chunks.insert(c + 1, right);
    }

    /// Removes `key`, live; false if it was not present. O(log n + leaf
    /// size + chunk size).
    pub fn remove(&mut self, key: Key, live: &impl Fn(Key) -> bool) -> bool {
        self.place_pending(&|k| k == key || live(k));
        if self.chunks.is_empty() {
            return false;
        }
        let (c, l) = self.locate(key);
        let removed = self.remove_in(c, l, key, live);
        self.settle_front(live);
        removed
    }

    /// Removes `key` from leaf `l` of chunk `c`, where it would be; false
    /// if it is not there.
    pub(super) fn remove_in(
        &mut self,
        c: usize,
        l: usize,
        key: Key,
        live: &impl Fn(Key) -> bool,
    ) -> bool {
        let cold = self.cold();
        let leaf = &mut self.chunks[c].leaves[l];
        let pos = leaf.rank(key, cold);
        if pos == leaf.len() || leaf.key(pos) != key {
            return false;
        }
        leaf.remove_at(pos);
        self.chunks[c].len -= 1;
        self.len -= 1;
        self.settle_leaf(c, l, live);
        true
    }

    /// Replaces `old`, which must be present, by `new`, which must not be:
    /// a deadline change. When `new` belongs in `old`'s leaf the leaf is
    /// located once and neither splits nor merges.
    pub fn replace(&mut self, old: Key, new: Key, live: &impl Fn(Key) -> bool) {
        debug_assert!(!self.chunks.is_empty());
        if self.replace_to_end(old, new, live) {
            return;
        }
        self.place_pending(&|k| k == old || (k != new && live(k)));
        // Only the old pair going can leave a stale pair first: purges and
        // merges keep each leaf's first live pair first, and `new` is live.
        let was_first = self.first() == Some(old);
        let last = &self.chunks[self.chunks.len() - 1];
        let to_end = new.0 >= last.leaves[last.leaves.len() - 1].first().0;
        // The new pair's leaf headers are usually in cache (an add fetched
        // them, see `prefetch_for`), the old pair's not: in a large index
        // the new leaf's records are fetched while the old pair's leaf is
        // located, and the insert below starts from this leaf if removing
        // the old pair left it where `new` belongs.
        let new_at = (self.cold() && !to_end).then(|| self.locate_guessed(new));
        if let Some(at) = new_at {
            self.prefetch_records(at);
        }
        let (c, l) = self.locate(old);
        let leaf = &self.chunks[c].leaves[l];
        if self.belongs_in((c, l), new) && leaf.len() > 1 && leaf.stale == 0 && leaf.fits(new.0) {
            let cold = self.cold();
            let chunk = &mut self.chunks[c];
            let leaf = &mut chunk.leaves[l];
            let pos = leaf.rank(old, cold);
            debug_assert!(pos < leaf.len() && leaf.key(pos) == old);
            leaf.remove_at(pos);
            let at = leaf.rank(new, false);
            leaf.insert_at(at, new);
            if l == 0 {
                chunk.refresh_first();
            }
            if was_first {
                self.settle_front(live);
            }
            return;
        }
        // A new pair that goes to the end (the usual refresh: the same TTL
        // from now) leaves the old one where it is, stale: its leaf's
        // records are not read (a random access in a large index), and its
        // leaf takes no inserts that would have to purge it soon. The end
        // is the last leaf's first deadline, whatever the slot: refreshes
        // arriving in one millisecond share a deadline, and those whose
        // slot sorts before the last leaf's first pair belong to the leaf
        // just before it, as hot (or further back, after a burst of more
        // than a leaf in one millisecond). Else the old pair goes now.
        //
        // `new` may be here already, stale (the member had that deadline
        // before): its leaf counts it stale while `live` now says yes.
        // Until it is inserted it is denied, so that a purge the old
        // pair's leaf takes now counts it as its leaf does; the insert
        // revives it if it survived.
        let not_new = |k: Key| k != new && live(k);
        if to_end {
            self.retire(c, l, &not_new);
        } else {
            let removed = self.remove_in(c, l, old, &not_new);
            debug_assert!(removed, "replaced pair present");
        }
        match new_at {
            Some(at) if self.belongs_in(at, new) => self.insert_in(at.0, at.1, new, live),
            _ => self.insert_pair(new, live),
        }
        if was_first {
            self.settle_front(live);
        }
    }

    /// Replaces `old`, which must be present and live before the call, by
    /// the pair of the same deadline at slot `slot`, below `old`'s: the
    /// owner moved the member's entry down its slab (`live` already denies
    /// `old` and affirms the new pair). Unlike [`Self::replace`] the old
    /// pair never stays behind stale: a move is not followed by a refresh
    /// that would make a stale pair pay, and compaction is meant to give
    /// memory back. The new pair sorts just before the old one, so it
    /// usually lands in the same leaf: one search and a shift within the
    /// leaf.
    pub fn reslot(&mut self, old: Key, slot: u32, live: &impl Fn(Key) -> bool) {
        debug_assert!(slot < old.1, "a move goes down the slab");
        self.place_pending(&|k| k == old || live(k));
        let new = (old.0, slot);
        let (c, l) = self.locate(old);
        let leaf = &self.chunks[c].leaves[l];
        // Without stale pairs in the leaf, `new` (which would sit here) is
        // not stale anywhere, so nothing need be revived.
        if leaf.stale == 0 && leaf.len() > 1 && self.belongs_in((c, l), new) {
            let cold = self.cold();
            let chunk = &mut self.chunks[c];
            let leaf = &mut chunk.leaves[l];
            let pos = leaf.rank(old, cold);
            debug_assert!(pos < leaf.len() && leaf.key(pos) == old);
            if pos == 0 || leaf.key(pos - 1) < new {
                // The usual case (no other pair of that deadline between
                // the two slots): the record is rewritten in place.
                leaf.set_at(pos, new);
            } else {
                leaf.remove_at(pos);
                let at = leaf.rank(new, false);
                leaf.insert_at(at, new);
            }
            if l == 0 {
                chunk.refresh_first();
            }
            // The first pair, if it changed, is `new`: live.
            return;
        }
        // As in `replace`: `new` may be present, stale, and is denied
        // until its insert revives it.
        let not_new = |k: Key| k != new && live(k);
        let removed = self.remove_in(c, l, old, &not_new);
        debug_assert!(removed, "moved pair present");
        self.insert(new, live);
    }

    /// [`Self::replace`] of a pair by one at the end, when the new pair
    /// goes into its leaf without a purge and is not there already: the old
    /// pair is only noted pending (see the module's "Pending pairs"). False,
    /// changing nothing, when the refresh does not qualify: not to the end,
    /// of the first pair, or into a leaf that must purge first (pending
    /// pairs may sit in it) or that holds the new pair stale.
    fn replace_to_end(&mut self, old: Key, new: Key, live: &impl Fn(Key) -> bool) -> bool {
        let c = self.chunks.len() - 1;
        let l = self.chunks[c].leaves.len() - 1;
        if new.0 < self.chunks[c].leaves[l].first().0 || self.first() == Some(old) {
            return false;
        }
        let (c, l) = self.leaf_from_the_end(new);
        let leaf = &self.chunks[c].leaves[l];
        if leaf.stale > 0 && (leaf.len() == LEAF_CAP || !leaf.fits(new.0)) {
            return false;
        }
        let pos = if new > leaf.key(leaf.len() - 1) {
            leaf.len()
        } else {
            leaf.rank(new, false)
        };
        if pos < leaf.len() && leaf.key(pos) == new {
            return false;
        }
        self.pending.push(old);
        self.stale += 1;
        self.insert_in(c, l, new, live);
        if self.pending.len() >= (self.len / 64).clamp(16, 4096) {
            self.place_pending(live);
        }
        true
    }

    /// Counts the pending pairs stale in their leaves, in one walk in key
    /// order, and purges each leaf they leave overstale once all of its
    /// pending pairs are counted. `live` answers as the purges must: a
    /// caller changing a pair passes one that affirms the pair it is taking
    /// out (its owner denies it already, but it is not stale) and denies
    /// one it is about to put in (a pending pair that is coming back).
    pub(super) fn place_pending(&mut self, live: &impl Fn(Key) -> bool) {
        if self.pending.is_empty() {
            return;
        }
        let mut keys = std::mem::take(&mut self.pending);
        keys.sort_unstable();
        // The leaf of the pair placed last.
        let mut at: Option<LeafAt> = None;
        for k in keys {
            if let Some(prev) = at
                && !self.belongs_in(prev, k)
                && self.settle_placed(prev, live)
            {
                // Leaves may have gone or merged: locate the next anew.
                at = None;
            }
            let (mut c, mut l) = match at {
                Some(at) => at,
                None => self.locate(k),
            };
            // Forward to the last leaf whose first pair is not above `k`.
            loop {
                let n = self.chunks[c].leaves.len();
                if l + 1 < n && self.chunks[c].leaves[l + 1].first() <= k {
                    l += 1;
                } else if l + 1 >= n && self.chunks.get(c + 1).is_some_and(|next| next.first <= k) {
                    (c, l) = (c + 1, 0);
                } else {
                    break;
                }
            }
            debug_assert_eq!((c, l), self.locate(k), "the walk finds the pair's leaf");
            let chunk = &mut self.chunks[c];
            chunk.leaves[l].stale += 1;
            chunk.stale += 1;
            at = Some((c, l));
        }
        if let Some(last) = at {
            self.settle_placed(last, live);
        }
    }

    /// Purges leaf `at` if its stale pairs outnumber its live ones; whether
    /// it did.
    fn settle_placed(&mut self, (c, l): LeafAt, live: &impl Fn(Key) -> bool) -> bool {
        let purge = self.chunks[c].leaves[l].overstale();
        if purge {
            self.purge_leaf_to(c, l, live, true);
        }
        purge
    }

    /// Counts a pair of leaf `l` of chunk `c` stale (`live` must deny it
    /// from now on). A leaf whose stale pairs outnumber its live ones is
    /// purged, so stale pairs never take more than half a leaf for long;
    /// otherwise no pair moved and no leaf changed length, so there is
    /// nothing to merge. If it was the first pair of the index, `replace`
    /// (the only caller) settles the front after its insert.
    pub(super) fn retire(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool) {
        let chunk = &mut self.chunks[c];
        let leaf = &mut chunk.leaves[l];
        leaf.stale += 1;
        chunk.stale += 1;
        self.stale += 1;
        if leaf.overstale() {
            self.purge_leaf_to(c, l, live, true);
        }
    }

    /// After a pair of leaf `l` of chunk `c` went or turned stale: purges
    /// the leaf if its stale pairs now outnumber its live ones, then
    /// restores the invariants as after any removal. The first pair may be
    /// left stale: callers settle the front after.
    pub(super) fn settle_leaf(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool) {
        let leaf = &self.chunks[c].leaves[l];
        if leaf.overstale() {
            self.purge_leaf(c, l, live);
        } else {
            self.after_removal(c, l);
        }
    }

    /// Drops the stale pairs of leaf `l` of chunk `c`, then restores the
    /// invariants as after any removal (the leaf may go, or merge).
    pub(super) fn purge_leaf(&mut self, c: usize, l: usize, live: &impl Fn(Key) -> bool) {
        self.purge_leaf_to(c, l, live, false);
    }

    /// [`Self::purge_leaf`]; with `fit`, the records of a leaf left
    /// non-empty also shrink to the class of what it holds. For a leaf that
    /// usually takes no inserts soon: one a refresh left behind, unless
    /// that was one of the last leaves, which then grows back a class at a
    /// time. (1M members, then
    /// 3M refreshes with one TTL: the index took 18.7 bytes a member, most
    /// of them empty records of purged leaves; 13.7 with the shrink.)
    pub(super) fn purge_leaf_to(
        &mut self,
        c: usize,
        l: usize,
        live: &impl Fn(Key) -> bool,
        fit: bool,
    ) {
        let chunk = &mut self.chunks[c];
        let leaf = &mut chunk.leaves[l];
        let gone = leaf.purge(live);
        if fit && leaf.len() > 0 {
            self.chunk_heap -= leaf.shrink_to(capacity_for(leaf.len()));
        }
        chunk.len -= gone;
        chunk.stale -= gone;
        self.len -= gone;
        self.stale -= gone;
        self.after_removal(c, l);
    }

    /// Keeps the first pair live: while the first leaf's first pair is
    /// stale, purges that leaf. Asks `live` nothing unless the first leaf
    /// holds stale pairs.
    pub(super) fn settle_front(&mut self, live: &impl Fn(Key) -> bool) {
        while let Some(chunk) = self.chunks.front()
            && chunk.leaves[0].stale > 0
            && !live(chunk.first)
        {
            self.purge_leaf(0, 0, live);
        }
    }

    /// Removes and returns the smallest pair. O(1) unless leaves merge or
    /// stale pairs come next.
    pub fn pop_first(&mut self, live: &impl Fn(Key) -> bool) -> Option<Key> {
        // The owner took the first pair's member already.
        let first = self.first();
        self.place_pending(&|k| Some(k) == first || live(k));
        let chunk = self.chunks.front_mut()?;
        let key = chunk.first;
        chunk.leaves[0].remove_at(0);
        chunk.len -= 1;
        self.len -= 1;
        self.settle_leaf(0, 0, live);
        self.settle_front(live);
        Some(key)
    }

    /// Restores the invariants after a pair of leaf `l` of chunk `c` was
    /// removed: drops an empty leaf, merges a short one with a neighbour
    /// (in this chunk or the next one over) when both fit in one leaf.
    pub(super) fn after_removal(&mut self, c: usize, l: usize) {
        let n = self.chunks[c].leaves[l].len();
        // The common cases: nothing to merge, no header moves, no heap
        // changes hands (a short leaf whose neighbours cannot take it stays
        // as it is: what expiry's pops meet before a leaf empties).
        let merge = if n == 0 {
            None
        } else {
            match (n < MERGE_BELOW)
                .then(|| self.merge_partner(c, l))
                .flatten()
            {
                Some(merge) => Some(merge),
                None => {
                    if l == 0 {
                        self.chunks[c].refresh_first();
                    }
                    return;
                }
            }
        };
        // Only the deques of chunks `c - 1` to `c + 2` change (a leaf merge
        // reaches one chunk either side, a chunk merge one more after), and
        // those removed are among them; records change only in the leaves
        // that go or merge, which say by how much: no need to sum the
        // chunks' leaves, which an expiry drain would do for every leaf it
        // empties.
        let (lo, hi) = (c.saturating_sub(1), (c + 3).min(self.chunks.len()));
        let deques = |chunks: &VecDeque<Chunk>, hi| {
            chunks.range(lo..hi).map(Chunk::deque_bytes).sum::<usize>()
        };
        let (before, count) = (deques(&self.chunks, hi), self.chunks.len());
        let (freed, grown) = match merge {
            None => {
                let Some(gone) = self.chunks[c].leaves.remove(l) else {
                    unreachable!("leaf {l} of chunk {c} present");
                };
                self.after_leaf_removal(c);
                (gone.heap_bytes(), 0)
            }
            Some((into, from)) => self.merge_leaves(into, from),
        };
        let after = deques(&self.chunks, hi - (count - self.chunks.len()));
        self.chunk_heap = self.chunk_heap + after + grown - before - freed;
    }

    /// The merge that short leaf `l` of chunk `c` takes part in, if any:
    /// into the previous leaf, or the next one into it (in this chunk or
    /// the next one over), when both fit in one leaf under one base. The
    /// leaf merged away always comes after the one kept, so removing it
    /// moves nothing before it.
    pub(super) fn merge_partner(&self, c: usize, l: usize) -> Option<(LeafAt, LeafAt)> {
        let prev = if l > 0 {
            Some((c, l - 1))
        } else {
            c.checked_sub(1)
                .map(|p| (p, self.chunks[p].leaves.len() - 1))
        };
        let next = if l + 1 < self.chunks[c].leaves.len() {
            Some((c, l + 1))
        } else if c + 1 < self.chunks.len() {
            Some((c + 1, 0))
        } else {
            None
        };
        // Whether leaf `from` can merge into `into`, just before it.
        let fits = |(ic, il): LeafAt, (fc, fl): LeafAt| {
            let (into, from) = (&self.chunks[ic].leaves[il], &self.chunks[fc].leaves[fl]);
            into.len() + from.len() <= LEAF_CAP && into.can_hold(from.finite_span(0, from.len()))
        };
        match (prev, next) {
            (Some(p), _) if fits(p, (c, l)) => Some((p, (c, l))),
            (_, Some(x)) if fits((c, l), x) => Some(((c, l), x)),
            _ => None,
        }
    }

    /// Moves leaf `from`'s pairs to the end of leaf `into`, just before it,
    /// and drops `from`. Returns the heap bytes of records freed (`from`'s)
    /// and added (to `into`'s).
    pub(super) fn merge_leaves(&mut self, into: LeafAt, from: LeafAt) -> (usize, usize) {
        let Some(mut gone) = self.chunks[from.0].leaves.remove(from.1) else {
            unreachable!("leaf {from:?} present");
        };
        let (moved, stale) = (gone.len(), usize::from(gone.stale));
        self.chunks[from.0].len -= moved;
        self.chunks[from.0].stale -= stale;
        let kept = &mut self.chunks[into.0].leaves[into.1];
        let kept_before = kept.heap_bytes();
        kept.stale += gone.stale;
        gone.move_tail(0, kept);
        let grown = kept.heap_bytes() - kept_before;
        self.chunks[into.0].len += moved;
        self.chunks[into.0].stale += stale;
        self.chunks[into.0].refresh_first();
        self.after_leaf_removal(from.0);
        (gone.heap_bytes(), grown)
    }

    /// Restores the invariants after a leaf left chunk `c`: drops the chunk
    /// if empty, merges it with a neighbour if at most a quarter full (one
    /// leaf, in the tests' tiny chunks) and both fit. Deques left mostly
    /// empty give back their room.
    pub(super) fn after_leaf_removal(&mut self, c: usize) {
        let n = self.chunks[c].leaves.len();
        if n == 0 {
            self.chunks.remove(c);
            fit(&mut self.chunks);
            return;
        }
        fit(&mut self.chunks[c].leaves);
        self.chunks[c].refresh_first();
        if n > (CHUNK / 4).max(1) {
            return;
        }
        let fits = |o: usize| self.chunks[o].leaves.len() + n <= CHUNK;
        let (into, from) = if c > 0 && fits(c - 1) {
            (c - 1, c)
        } else if c + 1 < self.chunks.len() && fits(c + 1) {
            (c, c + 1)
        } else {
            return;
        };
        if let Some(gone) = self.chunks.remove(from) {
            let into = &mut self.chunks[into];
            into.len += gone.len;
            into.stale += gone.stale;
            into.leaves.extend(gone.leaves);
            fit(&mut self.chunks);
        }
    }
}
