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

/// Keys of one database ordered by earliest member deadline.
#[derive(Default, Debug)]
pub struct KeysByDeadline {
    by_deadline: BTreeSet<(u64, Box<[u8]>)>,
}

impl KeysByDeadline {
    /// Number of entries. O(1).
    pub fn len(&self) -> usize {
        self.by_deadline.len()
    }

    /// Whether there is no entry. O(1).
    pub fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }

    /// Moves `key` from `before` to `after` (either may be `None`: not
    /// tracked). O(log k); allocates only when an entry is added.
    pub fn relocate(&mut self, key: &[u8], before: Option<u64>, after: Option<u64>) {
        if before == after {
            return;
        }
        let reused = before.and_then(|d| self.by_deadline.take(&(d, Box::from(key))));
        if let Some(d) = after {
            let name = reused.map_or_else(|| Box::from(key), |(_, k)| k);
            self.by_deadline.insert((d, name));
        }
    }

    /// Stops tracking `key`, whatever its deadline (a scan of the index:
    /// for repairs, not the write path). O(k).
    pub fn forget_key(&mut self, key: &[u8]) {
        self.by_deadline.retain(|(_, k)| &**k != key);
    }

    /// Whether `key` is tracked under `deadline_ms`.
    #[cfg(test)]
    pub fn contains(&self, key: &[u8], deadline_ms: u64) -> bool {
        self.by_deadline.contains(&(deadline_ms, Box::from(key)))
    }

    /// The earliest tracked deadline. O(log k).
    pub fn next_deadline(&self) -> Option<u64> {
        self.by_deadline.first().map(|(d, _)| *d)
    }

    /// Removes and returns the key with the earliest deadline if that
    /// deadline is not after `now_ms`. O(log k).
    pub fn pop_due(&mut self, now_ms: u64) -> Option<Box<[u8]>> {
        match self.by_deadline.first() {
            Some((d, _)) if *d <= now_ms => self.by_deadline.pop_first().map(|(_, k)| k),
            _ => None,
        }
    }

    /// Number of entries due at `now_ms`. O(log k + due).
    pub fn due_count(&self, now_ms: u64) -> usize {
        self.by_deadline
            .iter()
            .take_while(|(d, _)| *d <= now_ms)
            .count()
    }
}

/// One [`KeysByDeadline`] per database number.
#[derive(Default, Debug)]
pub struct Tracking {
    dbs: HashMap<i32, KeysByDeadline>,
}

impl Tracking {
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

    /// Whether nothing is tracked.
    pub fn is_empty(&self) -> bool {
        self.dbs.is_empty()
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
        assert!(all.is_empty());
    }
}
