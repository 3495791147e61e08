//! The index of keys by their earliest member deadline, one per database:
//! what lets active expiry do work in proportion to what is due, not to the
//! number of keys.
//!
//! It is a hint, not a truth: an entry names a key, never a value. Whoever
//! pops an entry reopens the key and checks that it still holds an xset;
//! a missed event can delay reclamation until the key is touched, but can
//! never make the timer touch the wrong memory.
//!
//! Invariant: `by_key` and `by_deadline` hold the same `(key, deadline)`
//! pairs, one per key.

use std::collections::{BTreeSet, HashMap};

/// Keys of one database ordered by earliest member deadline.
#[derive(Default, Debug)]
pub struct DeadlineIndex {
    by_key: HashMap<Box<[u8]>, u64>,
    by_deadline: BTreeSet<(u64, Box<[u8]>)>,
}

impl DeadlineIndex {
    /// Number of keys tracked. O(1).
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no key is tracked. O(1).
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Tracks `key` under `deadline_ms`, or stops tracking it when `None`.
    /// O(log k); allocates only for a key not tracked before.
    pub fn set(&mut self, key: &[u8], deadline_ms: Option<u64>) {
        match (self.by_key.get_mut(key), deadline_ms) {
            (Some(current), Some(d)) if *current == d => {}
            (Some(current), Some(d)) => {
                let old = std::mem::replace(current, d);
                if let Some((_, k)) = self.by_deadline.take(&(old, Box::from(key))) {
                    self.by_deadline.insert((d, k));
                }
            }
            (Some(_), None) => self.remove(key),
            (None, Some(d)) => {
                self.by_key.insert(Box::from(key), d);
                self.by_deadline.insert((d, Box::from(key)));
            }
            (None, None) => {}
        }
    }

    /// Stops tracking `key`. O(log k).
    pub fn remove(&mut self, key: &[u8]) {
        if let Some(d) = self.by_key.remove(key) {
            self.by_deadline.remove(&(d, Box::from(key)));
        }
    }

    /// The deadline `key` is tracked under.
    pub fn deadline_of(&self, key: &[u8]) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    /// The earliest tracked deadline. O(log k).
    pub fn next_deadline(&self) -> Option<u64> {
        self.by_deadline.first().map(|(d, _)| *d)
    }

    /// Removes and returns the key with the earliest deadline if that
    /// deadline is not after `now_ms`. O(log k).
    pub fn pop_due(&mut self, now_ms: u64) -> Option<Box<[u8]>> {
        match self.by_deadline.first() {
            Some((d, _)) if *d <= now_ms => {
                let (_, key) = self.by_deadline.pop_first()?;
                self.by_key.remove(&key);
                Some(key)
            }
            _ => None,
        }
    }

    /// Number of keys due at `now_ms`. O(log k + due).
    pub fn due_count(&self, now_ms: u64) -> usize {
        self.by_deadline
            .iter()
            .take_while(|(d, _)| *d <= now_ms)
            .count()
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        assert_eq!(self.by_key.len(), self.by_deadline.len());
        for (d, k) in &self.by_deadline {
            assert_eq!(self.by_key.get(k), Some(d));
        }
    }
}

/// One [`DeadlineIndex`] per database number.
#[derive(Default, Debug)]
pub struct Indexes {
    dbs: HashMap<i32, DeadlineIndex>,
}

impl Indexes {
    /// Tracks `key` of `db` under `deadline_ms` (`None`: untrack).
    pub fn set(&mut self, db: i32, key: &[u8], deadline_ms: Option<u64>) {
        if deadline_ms.is_none() && !self.dbs.contains_key(&db) {
            return;
        }
        let index = self.dbs.entry(db).or_default();
        index.set(key, deadline_ms);
        if index.is_empty() {
            self.dbs.remove(&db);
        }
    }

    /// The index of `db`, if it tracks anything.
    pub fn db(&self, db: i32) -> Option<&DeadlineIndex> {
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
            .filter_map(DeadlineIndex::next_deadline)
            .min()
    }

    /// Keys tracked over all databases.
    pub fn len(&self) -> usize {
        self.dbs.values().map(DeadlineIndex::len).sum()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_moves_and_pops_in_deadline_order() {
        let mut i = DeadlineIndex::default();
        i.set(b"a", Some(30));
        i.set(b"b", Some(10));
        i.set(b"c", Some(20));
        i.set(b"a", Some(5));
        i.check_invariants();
        assert_eq!(i.next_deadline(), Some(5));
        assert_eq!(i.due_count(20), 3);
        assert_eq!(i.pop_due(20).as_deref(), Some(&b"a"[..]));
        assert_eq!(i.pop_due(20).as_deref(), Some(&b"b"[..]));
        i.set(b"c", None);
        assert_eq!(i.pop_due(100), None);
        assert!(i.is_empty());
        i.check_invariants();
    }

    #[test]
    fn databases_flush_and_swap() {
        let mut all = Indexes::default();
        all.set(0, b"k", Some(10));
        all.set(1, b"k", Some(20));
        all.set(2, b"x", Some(5));
        assert_eq!(all.due_dbs(10), vec![0, 2]);
        all.swap(0, 1);
        assert_eq!(all.db(0).and_then(|i| i.deadline_of(b"k")), Some(20));
        assert_eq!(all.db(1).and_then(|i| i.deadline_of(b"k")), Some(10));
        all.swap(1, 5);
        assert!(all.db(1).is_none());
        assert_eq!(all.db(5).and_then(|i| i.deadline_of(b"k")), Some(10));
        all.flush(2);
        assert_eq!(all.len(), 2);
        assert_eq!(all.next_deadline(), Some(10));
        all.flush(-1);
        assert!(all.is_empty());
    }
}
