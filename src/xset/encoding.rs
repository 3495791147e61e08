//! The RDB layout of an [`XSet`], independent of Redis's IO so that it can be
//! tested as a round-trip property. `ENCODING_VERSION` is the encver Redis
//! stores beside each value; every version ever written stays decodable.
//!
//! Version 1: `count`, then `count` times `(member bytes, deadline delta)` in
//! deadline order. The first delta is from 0, so deltas are absolute
//! deadlines made small; members without a deadline come last as
//! `NO_DEADLINE`.
//!
//! Decoding trusts nothing: it allocates only for what it has read, rejects
//! a count of zero, duplicate members, deadlines that overflow or exceed
//! [`MAX_DEADLINE_MS`], and any read error, and never returns a half-built
//! set.

use super::{Limits, MAX_DEADLINE_MS, NO_DEADLINE, XSet};

/// The encver written by [`encode`].
pub const ENCODING_VERSION: i32 = 1;

/// Where [`encode`] writes.
pub trait Sink {
    fn put_u64(&mut self, v: u64);
    fn put_bytes(&mut self, b: &[u8]);
}

/// Where [`decode`] reads; each read gives `None` when the input is
/// truncated or otherwise unreadable.
pub trait Source {
    /// A member's bytes as read, borrowed or owned by the reader.
    type Bytes: AsRef<[u8]>;
    fn get_u64(&mut self) -> Option<u64>;
    fn get_bytes(&mut self) -> Option<Self::Bytes>;
}

/// Why a payload was rejected.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    UnknownVersion(i32),
    Truncated,
    Empty,
    TooLarge(u64),
    Duplicate,
    BadDeadline,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownVersion(v) => write!(f, "unknown xset encoding version {v}"),
            DecodeError::Truncated => write!(f, "truncated or unreadable xset payload"),
            DecodeError::Empty => write!(f, "xset payload holds no member"),
            DecodeError::TooLarge(n) => write!(f, "xset payload claims {n} members"),
            DecodeError::Duplicate => write!(f, "xset payload repeats a member"),
            DecodeError::BadDeadline => write!(f, "xset payload holds an invalid deadline"),
        }
    }
}

/// Writes `set` (expired members included: they are still stored, and the
/// reader decides). O(n).
pub fn encode(set: &XSet, sink: &mut impl Sink) {
    sink.put_u64(set.len() as u64);
    let mut prev = 0u64;
    for (member, deadline_ms) in set.iter_all() {
        sink.put_bytes(member);
        sink.put_u64(deadline_ms - prev);
        prev = deadline_ms;
    }
}

/// Reads a set written by [`encode`] at version `encver`, encoded within
/// `limits`. O(n).
///
/// # Errors
/// Any [`DecodeError`]; nothing is allocated beyond what was read.
pub fn decode(encver: i32, source: &mut impl Source, limits: Limits) -> Result<XSet, DecodeError> {
    if encver != 1 {
        return Err(DecodeError::UnknownVersion(encver));
    }
    let count = source.get_u64().ok_or(DecodeError::Truncated)?;
    if count == 0 {
        return Err(DecodeError::Empty);
    }
    if count > u64::from(u32::MAX) {
        return Err(DecodeError::TooLarge(count));
    }
    let mut set = XSet::with_limits(limits);
    // Trust the count only up to a bound, so a lying count costs little.
    set.reserve(count.min(1 << 16) as usize);
    let mut prev = 0u64;
    for _ in 0..count {
        let member = source.get_bytes().ok_or(DecodeError::Truncated)?;
        let delta = source.get_u64().ok_or(DecodeError::Truncated)?;
        let deadline_ms = prev.checked_add(delta).ok_or(DecodeError::BadDeadline)?;
        if deadline_ms == 0 || (deadline_ms > MAX_DEADLINE_MS && deadline_ms != NO_DEADLINE) {
            return Err(DecodeError::BadDeadline);
        }
        if !set.set(member.as_ref(), deadline_ms) {
            return Err(DecodeError::Duplicate);
        }
        prev = deadline_ms;
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A byte-level stand-in for Redis's RDB IO.
    #[derive(Default)]
    struct Buf {
        items: Vec<Result<u64, Vec<u8>>>,
        pos: usize,
    }

    impl Sink for Buf {
        fn put_u64(&mut self, v: u64) {
            self.items.push(Ok(v));
        }
        fn put_bytes(&mut self, b: &[u8]) {
            self.items.push(Err(b.to_vec()));
        }
    }

    impl Source for Buf {
        type Bytes = Vec<u8>;
        fn get_u64(&mut self) -> Option<u64> {
            let item = self.items.get(self.pos).cloned();
            self.pos += 1;
            item?.ok()
        }
        fn get_bytes(&mut self) -> Option<Vec<u8>> {
            let item = self.items.get(self.pos).cloned();
            self.pos += 1;
            item?.err()
        }
    }

    fn sample() -> XSet {
        let mut s = XSet::new();
        s.set(b"a", 1_700_000_000_000);
        s.set(b"", 1_700_000_000_500);
        s.set(b"\x00\xff", 1_700_000_000_500);
        s.set(b"p", NO_DEADLINE);
        s
    }

    #[test]
    fn round_trip_keeps_every_deadline() {
        let s = sample();
        let mut buf = Buf::default();
        encode(&s, &mut buf);
        let back = decode(1, &mut buf, Limits::default()).expect("decodes");
        back.check_invariants();
        let a: Vec<_> = s.iter_all().map(|(m, d)| (m.to_vec(), d)).collect();
        let mut b: Vec<_> = back.iter_all().map(|(m, d)| (m.to_vec(), d)).collect();
        let mut a2 = a.clone();
        a2.sort();
        b.sort();
        assert_eq!(a2, b);
    }

    #[test]
    fn rejects_corrupt_payloads() {
        let mut full = Buf::default();
        encode(&sample(), &mut full);
        for cut in 0..full.items.len() {
            let mut part = Buf {
                items: full.items[..cut].to_vec(),
                pos: 0,
            };
            assert!(
                decode(1, &mut part, Limits::default()).is_err(),
                "truncated at {cut}"
            );
        }
        let lie = |items: Vec<Result<u64, Vec<u8>>>| {
            decode(1, &mut Buf { items, pos: 0 }, Limits::default())
        };
        assert_eq!(lie(vec![Ok(0)]).err(), Some(DecodeError::Empty));
        assert_eq!(
            lie(vec![Ok(u64::MAX)]).err(),
            Some(DecodeError::TooLarge(u64::MAX))
        );
        assert_eq!(
            lie(vec![
                Ok(2),
                Err(b"x".to_vec()),
                Ok(5),
                Err(b"x".to_vec()),
                Ok(1)
            ])
            .err(),
            Some(DecodeError::Duplicate)
        );
        assert_eq!(
            lie(vec![
                Ok(2),
                Err(b"x".to_vec()),
                Ok(5),
                Err(b"y".to_vec()),
                Ok(u64::MAX)
            ])
            .err(),
            Some(DecodeError::BadDeadline)
        );
        assert_eq!(
            lie(vec![Ok(1), Err(b"x".to_vec()), Ok(0)]).err(),
            Some(DecodeError::BadDeadline)
        );
        assert_eq!(
            decode(2, &mut Buf::default(), Limits::default()).err(),
            Some(DecodeError::UnknownVersion(2))
        );
    }

    proptest! {
        #[test]
        fn any_set_round_trips(entries in prop::collection::hash_map(
            prop::collection::vec(any::<u8>(), 0..12),
            prop_oneof![1u64..=MAX_DEADLINE_MS, Just(NO_DEADLINE)],
            1..60,
        )) {
            let mut s = XSet::new();
            for (m, d) in &entries {
                s.set(m, *d);
            }
            let mut buf = Buf::default();
            encode(&s, &mut buf);
            let back = decode(ENCODING_VERSION, &mut buf, Limits::default()).expect("decodes");
            back.check_invariants();
            prop_assert_eq!(back.len(), entries.len());
            for (m, d) in &entries {
                prop_assert_eq!(back.deadline_of(m), Some(*d));
            }
        }
    }
}
