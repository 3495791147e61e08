//! Stream entry IDs as a delivery numbers them: a drain's entries take
//! consecutive IDs, so the primary propagates only the first one and a
//! replica or an AOF replay gives entry `i` the ID `i` places after it,
//! exactly the IDs the primary's stream gave them.
//!
//! IDs are ordered as a stream orders them, milliseconds then sequence;
//! the ID after `ms-<u64::MAX>` is `(ms + 1)-0`, as Redis's own
//! `streamIncrID` counts, and there is none after `<u64::MAX>-<u64::MAX>`.

/// A stream entry ID, `ms-seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    /// The ID `n` places after this one (itself for 0); `None` past the
    /// last possible ID. O(1).
    pub fn after(self, n: u64) -> Option<StreamId> {
        let at = (u128::from(self.ms) << 64 | u128::from(self.seq)).checked_add(u128::from(n))?;
        Some(StreamId {
            ms: (at >> 64) as u64,
            seq: at as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::StreamId;

    const fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    #[test]
    fn counts_the_sequence_then_carries_into_the_milliseconds() {
        assert_eq!(id(5, 0).after(0), Some(id(5, 0)));
        assert_eq!(id(5, 0).after(3), Some(id(5, 3)));
        assert_eq!(id(5, u64::MAX).after(1), Some(id(6, 0)));
        assert_eq!(id(5, u64::MAX - 1).after(3), Some(id(6, 1)));
        assert_eq!(
            id(u64::MAX, u64::MAX).after(0),
            Some(id(u64::MAX, u64::MAX))
        );
        assert_eq!(id(u64::MAX, u64::MAX).after(1), None);
        assert_eq!(id(u64::MAX, u64::MAX - 2).after(3), None);
    }

    #[test]
    fn ids_after_keep_the_streams_order() {
        let first = id(1_795_786_426_710, u64::MAX - 2);
        let ids: Vec<StreamId> = (0..6).filter_map(|i| first.after(i)).collect();
        assert_eq!(ids.len(), 6);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for (i, w) in ids.windows(2).enumerate() {
            assert_eq!(w[0].after(1), Some(w[1]), "step {i}");
        }
    }
}
