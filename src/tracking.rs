//! The index of keys by their earliest member deadline, one per database:
//! what lets active expiry do work in proportion to what is due, not to the
//! number of keys. `keyspace` and the data type's `unlinked` callback keep
//! it; `hooks` follows flushes and swaps; the expiry cycle pops from it.
//!
//! Each entry is `(deadline, key)`, where `deadline` is the key's set's
//! earliest member deadline. There is no key-to-deadline map (it would cost
//! a second copy of every key name): whoever changes a set knows its
//! earliest deadline before and after, and moves the entry from one to the
//! other ([`KeysByDeadline::relocate`]).
//!
//! It is a hint, not a truth: an entry names a key, never a value. Whoever
//! pops an entry reopens the key and checks that it still holds an xset, so
//! a missed update can delay reclamation until the key is touched, or leave
//! a stale entry until its deadline, but can never make the timer touch the
//! wrong memory.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use xset_core::relocate::Relocate;

/// Entries a defrag pass moves to fresh nodes (see
/// [`KeysByDeadline::relocate_some`]).
const RELOCATE_PER_PASS: usize = 4096;

/// Keys of one database ordered by earliest member deadline.
///
/// Active defrag rebuilds the tree a slice per pass: entries move from
/// `by_deadline` to `moved` (fresh nodes, key names through the server's
/// defrag), and once `by_deadline` is empty the two swap. Until then every
/// operation looks at both sets; an entry is in exactly one of them.
#[derive(Default, Debug)]
pub struct KeysByDeadline {
    by_deadline: BTreeSet<(u64, Box<[u8]>)>,
    moved: BTreeSet<(u64, Box<[u8]>)>,
}

impl KeysByDeadline {
    /// Number of entries. O(1).
    pub fn len(&self) -> usize {
        self.by_deadline.len() + self.moved.len()
    }

    /// Whether there is no entry. O(1).
    pub fn is_empty(&self) -> bool {
        self.by_deadline.is_empty() && self.moved.is_empty()
    }

    /// Moves up to [`RELOCATE_PER_PASS`] entries into fresh tree nodes,
    /// handing each key name to `r` (active defrag); the tree a rebuild
    /// leaves behind is freed as it empties.
    pub fn relocate_some(&mut self, r: &mut impl Relocate) {
        if self.by_deadline.is_empty() {
            std::mem::swap(&mut self.by_deadline, &mut self.moved);
        }
        for _ in 0..RELOCATE_PER_PASS {
            let Some((d, mut name)) = self.by_deadline.pop_first() else {
                break;
            };
            r.slice(&mut name);
            self.moved.insert((d, name));
        }
    }

    /// Moves `key` from `before` to `after` (either may be `None`: not
    /// tracked). O(log k); allocates only when an entry is added.
    pub fn relocate(&mut self, key: &[u8], before: Option<u64>, after: Option<u64>) {
        if before == after {
            return;
        }
        let reused = before.and_then(|d| {
            let entry = (d, Box::from(key));
            self.by_deadline
                .take(&entry)
                .or_else(|| self.moved.take(&entry))
        });
        if let Some(d) = after {
            let name = reused.map_or_else(|| Box::from(key), |(_, k)| k);
            self.by_deadline.insert((d, name));
        }
    }

    /// Stops tracking `key`, whatever its deadline (a scan of the index:
    /// for repairs, not the write path). O(k).
    pub fn forget_key(&mut self, key: &[u8]) {
        self.by_deadline.retain(|(_, k)| &**k != key);
        self.moved.retain(|(_, k)| &**k != key);
    }

    /// Whether `key` is tracked under `deadline_ms`.
    #[cfg(test)]
    pub fn contains(&self, key: &[u8], deadline_ms: u64) -> bool {
        let entry = (deadline_ms, Box::from(key));
        self.by_deadline.contains(&entry) || self.moved.contains(&entry)
    }

    /// The earliest tracked deadline. O(log k).
    pub fn next_deadline(&self) -> Option<u64> {
        let first = |s: &BTreeSet<(u64, Box<[u8]>)>| s.first().map(|(d, _)| *d);
        match (first(&self.by_deadline), first(&self.moved)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Removes and returns the key with the earliest deadline if that
    /// deadline is not after `now_ms`. O(log k).
    pub fn pop_due(&mut self, now_ms: u64) -> Option<Box<[u8]>> {
        let set = match (self.by_deadline.first(), self.moved.first()) {
            (Some(a), Some(b)) if b < a => &mut self.moved,
            (None, Some(_)) => &mut self.moved,
            _ => &mut self.by_deadline,
        };
        match set.first() {
            Some((d, _)) if *d <= now_ms => set.pop_first().map(|(_, k)| k),
            _ => None,
        }
    }

    /// Number of entries due at `now_ms`. O(log k + due).
    pub fn due_count(&self, now_ms: u64) -> usize {
        let due =
            |s: &BTreeSet<(u64, Box<[u8]>)>| s.iter().take_while(|(d, _)| *d <= now_ms).count();
        due(&self.by_deadline) + due(&self.moved)
    }
}

/// One [`KeysByDeadline`] per database number.
#[derive(Default, Debug)]
pub struct Tracking {
    dbs: HashMap<i32, KeysByDeadline>,
}

impl Tracking {
    /// One active-defrag pass over the index: a slice of each database's.
    pub fn relocate_some(&mut self, r: &mut impl Relocate) {
        for index in self.dbs.values_mut() {
            index.relocate_some(r);
        }
    }

    /// Moves `key` of `db` from `before` to `after` (`None`: not tracked).
    pub fn relocate(&mut self, db: i32, key: &[u8], before: Option<u64>, after: Option<u64>) {
        if before == after || (after.is_none() && !self.dbs.contains_key(&db)) {
            return;
        }
        let index = self.dbs.entry(db).or_default();
        index.relocate(key, before, after);
        if index.is_empty() {
            self.dbs.remove(&db);
        }
    }

    /// Stops tracking `key` of `db`, whatever its deadline. O(k).
    pub fn forget_key(&mut self, db: i32, key: &[u8]) {
        if let Some(index) = self.dbs.get_mut(&db) {
            index.forget_key(key);
            if index.is_empty() {
                self.dbs.remove(&db);
            }
        }
    }

    /// The index of `db`, if it tracks anything.
    #[cfg(test)]
    pub fn db(&self, db: i32) -> Option<&KeysByDeadline> {
        self.dbs.get(&db)
    }

    /// Pops the earliest due key of `db`.
    pub fn pop_due(&mut self, db: i32, now_ms: u64) -> Option<Box<[u8]>> {
        let index = self.dbs.get_mut(&db)?;
        let key = index.pop_due(now_ms);
        if index.is_empty() {
            self.dbs.remove(&db);
        }
        key
    }

    /// Databases with a key due at `now_ms`, in ascending order.
    pub fn due_dbs(&self, now_ms: u64) -> Vec<i32> {
        let mut dbs: Vec<i32> = self
            .dbs
            .iter()
            .filter(|(_, i)| i.next_deadline().is_some_and(|d| d <= now_ms))
            .map(|(&db, _)| db)
            .collect();
        dbs.sort_unstable();
        dbs
    }

    /// The earliest deadline over all databases.
    pub fn next_deadline(&self) -> Option<u64> {
        self.dbs
            .values()
            .filter_map(KeysByDeadline::next_deadline)
            .min()
    }

    /// Keys tracked over all databases.
    pub fn len(&self) -> usize {
        self.dbs.values().map(KeysByDeadline::len).sum()
    }

    /// Keys due at `now_ms` over all databases.
    pub fn due_count(&self, now_ms: u64) -> usize {
        self.dbs.values().map(|i| i.due_count(now_ms)).sum()
    }

    /// Forgets `db` (`FLUSHDB`), or every database when `db` is -1
    /// (`FLUSHALL`).
    pub fn flush(&mut self, db: i32) {
        if db == -1 {
            self.dbs.clear();
        } else {
            self.dbs.remove(&db);
        }
    }

    /// Exchanges two databases' indexes (`SWAPDB`).
    pub fn swap(&mut self, a: i32, b: i32) {
        let ia = self.dbs.remove(&a);
        let ib = self.dbs.remove(&b);
        if let Some(i) = ia {
            self.dbs.insert(b, i);
        }
        if let Some(i) = ib {
            self.dbs.insert(a, i);
        }
    }
}

/// The server's one [`Tracking`]. Only the main thread takes it; INFO
/// (which may run for a crash report) only tries.
static TRACKING: Mutex<Option<Tracking>> = Mutex::new(None);

/// Runs `f` on the server's tracking index.
pub fn with<R>(f: impl FnOnce(&mut Tracking) -> R) -> R {
    // A poisoned lock means a panic was caught mid-update; the index is a
    // hint, so go on with it.
    let mut guard: MutexGuard<'_, Option<Tracking>> =
        TRACKING.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Tracking::default))
}

/// Keys tracked and keys due at `now_ms`, if the index is free right now
/// (never blocks: `INFO` may be asked for by a crash report).
pub fn sizes(now_ms: u64) -> Option<(usize, usize)> {
    let guard = TRACKING.try_lock().ok()?;
    Some(
        guard
            .as_ref()
            .map_or((0, 0), |t| (t.len(), t.due_count(now_ms))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use xset_core::relocate::testing::Copier;

    proptest! {
        /// Defrag passes between updates and pops change nothing an
        /// operation sees: the index behaves as a plain sorted set.
        #[test]
        fn a_rebuild_in_slices_behaves_as_one_index(
            ops in proptest::collection::vec((0u8..4, 0u32..10_000, 0u64..100), 0..3000),
        ) {
            let mut i = KeysByDeadline::default();
            let mut model: BTreeSet<(u64, Vec<u8>)> = BTreeSet::new();
            let mut r = Copier::default();
            for (op, k, d) in ops {
                let key = format!("key:{k}").into_bytes();
                let before = model.iter().find(|(_, n)| *n == key).map(|(d, _)| *d);
                match op {
                    0 => {
                        i.relocate(&key, before, Some(d));
                        if let Some(b) = before { model.remove(&(b, key.clone())); }
                        model.insert((d, key));
                    }
                    1 => {
                        i.relocate(&key, before, None);
                        if let Some(b) = before { model.remove(&(b, key)); }
                    }
                    2 => {
                        let popped = i.pop_due(d).map(|k| k.to_vec());
                        let want = model.first().filter(|(fd, _)| *fd <= d).cloned();
                        if let Some(w) = &want { model.remove(w); }
                        prop_assert_eq!(popped, want.map(|(_, k)| k));
                    }
                    _ => i.relocate_some(&mut r),
                }
                prop_assert_eq!(i.len(), model.len());
                prop_assert_eq!(i.next_deadline(), model.first().map(|(d, _)| *d));
                prop_assert_eq!(i.due_count(50), model.iter().filter(|(d, _)| *d <= 50).count());
            }
        }
    }

    #[test]
    fn relocates_and_pops_in_deadline_order() {
        let mut i = KeysByDeadline::default();
        i.relocate(b"a", None, Some(30));
        i.relocate(b"b", None, Some(10));
        i.relocate(b"c", None, Some(20));
        i.relocate(b"a", Some(30), Some(5));
        assert_eq!(i.len(), 3);
        assert!(i.contains(b"a", 5) && !i.contains(b"a", 30));
        assert_eq!(i.next_deadline(), Some(5));
        assert_eq!(i.due_count(20), 3);
        assert_eq!(i.pop_due(20).as_deref(), Some(&b"a"[..]));
        assert_eq!(i.pop_due(20).as_deref(), Some(&b"b"[..]));
        i.relocate(b"c", Some(20), None);
        assert_eq!(i.pop_due(100), None);
        assert!(i.is_empty());
    }

    #[test]
    fn databases_flush_and_swap() {
        let mut all = Tracking::default();
        all.relocate(0, b"k", None, Some(10));
        all.relocate(1, b"k", None, Some(20));
        all.relocate(2, b"x", None, Some(5));
        assert_eq!(all.due_dbs(10), vec![0, 2]);
        all.swap(0, 1);
        assert!(all.db(0).is_some_and(|i| i.contains(b"k", 20)));
        assert!(all.db(1).is_some_and(|i| i.contains(b"k", 10)));
        all.swap(1, 5);
        assert!(all.db(1).is_none());
        assert!(all.db(5).is_some_and(|i| i.contains(b"k", 10)));
        all.flush(2);
        assert_eq!(all.len(), 2);
        assert_eq!(all.next_deadline(), Some(10));
        all.flush(-1);
        assert_eq!(all.len(), 0);
    }
}
