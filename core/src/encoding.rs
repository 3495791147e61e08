//! The RDB layout of an [`XSet`], independent of Redis's IO so that it can be
//! tested as a round-trip property. `ENCODING_VERSION` is the encver Redis
//! stores beside each value; every version ever written stays decodable.
//!
//! Version 1 (xset 0.1): `count`, then `count` times `(member bytes,
//! deadline delta)` in deadline order, each a separate RDB item. The first
//! delta is from 0, so deltas are absolute deadlines made small; members
//! without a deadline come last as `NO_DEADLINE`.
//!
//! Version 2: `count`, then byte-string chunks until `count` members have
//! been read, each holding `k >= 1` consecutive members in deadline order:
//!
//! ```text
//! varint k
//! varint width         0: k member lengths follow; w + 1: every member is w bytes
//! k varints            deadline deltas (from the previous member, across
//!                      chunks; the first from 0), as in version 1
//! [k varints]          member lengths, when width is 0
//! member bytes         concatenated, to the end of the chunk
//! ```
//!
//! Version 3: the set's [`Delivery`] first, then version 2's layout, where
//! a count of zero is allowed only for a set that has a delivery (such a set
//! stays when it empties):
//!
//! ```text
//! u64 setting          0: none; 1: a stream; 2: a stream and a MAXLEN
//! [bytes stream]       when setting is 1 or 2
//! [u64 maxlen]         when setting is 2
//! u64 count, chunks    as in version 2
//! ```
//!
//! Varints are LEB128. A chunk is closed once it holds [`CHUNK_BYTES`], so a
//! save never builds one buffer the size of the set (a member longer than
//! that sits in a chunk of its own size). Few large strings instead of two
//! items a member make the file smaller (Redis LZF-compresses strings when
//! `rdbcompression` is on, and members side by side compress) and the load
//! faster; deadlines grouped apart from member bytes compress well too.
//!
//! Decoding trusts nothing: it allocates only for what it has read (and a
//! hash table for at most [`TRUSTED_RESERVE`] announced members), rejects a
//! count of zero, chunks that overrun, underrun or disagree with the count,
//! bad varints, duplicate members, deadlines that overflow or exceed
//! [`MAX_DEADLINE_MS`], and any read error, and never returns a half-built
//! set.

use super::{Delivery, Limits, MAX_DEADLINE_MS, NO_DEADLINE, XSet};

/// The encver written by [`encode`].
pub const ENCODING_VERSION: i32 = 3;

/// A version-2 chunk is closed once its member bytes, deltas and lengths
/// reach this size: large enough that a chunk's items cost nothing, small
/// enough that the buffer is no burden on a save (LZF's window is 8 KiB, so
/// larger chunks would not compress better).
pub const CHUNK_BYTES: usize = 64 * 1024;

/// How many members a count may announce before the decoder has read them
/// and still get a hash table sized once for all of them: a lying count
/// costs at most a table of this many (about 8 MiB), an honest larger one a
/// few growths.
pub const TRUSTED_RESERVE: u64 = 1 << 20;

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
    BadChunk,
    BadSetting(u64),
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
            DecodeError::BadChunk => write!(f, "xset payload holds a malformed chunk"),
            DecodeError::BadSetting(v) => write!(f, "xset payload holds unknown setting {v}"),
        }
    }
}

/// Writes `set` (expired members included: they are still stored, and the
/// reader decides) at [`ENCODING_VERSION`]. O(n).
pub fn encode(set: &XSet, sink: &mut impl Sink) {
    encode_chunked(set, sink, CHUNK_BYTES);
}

/// Writes what [`decode`] refuses at every version (no delivery and a
/// count of zero): the stand-in for a set that could not be encoded.
pub fn encode_unloadable(sink: &mut impl Sink) {
    sink.put_u64(0);
    sink.put_u64(0);
}

/// [`encode`] with chunks closed at `chunk_bytes` (tests use small ones).
fn encode_chunked(set: &XSet, sink: &mut impl Sink, chunk_bytes: usize) {
    match set.delivery() {
        None => sink.put_u64(0),
        Some(Delivery {
            stream,
            maxlen: None,
        }) => {
            sink.put_u64(1);
            sink.put_bytes(stream);
        }
        Some(Delivery {
            stream,
            maxlen: Some(maxlen),
        }) => {
            sink.put_u64(2);
            sink.put_bytes(stream);
            sink.put_u64(*maxlen);
        }
    }
    sink.put_u64(set.len() as u64);
    let mut chunk = Chunk::default();
    let mut prev = 0u64;
    for (member, deadline_ms) in set.iter_all() {
        chunk.push(member, deadline_ms - prev);
        prev = deadline_ms;
        if chunk.bytes() >= chunk_bytes {
            chunk.flush(sink);
        }
    }
    chunk.flush(sink);
}

/// A version-2 chunk being written; its buffers are reused chunk after
/// chunk.
#[derive(Default)]
struct Chunk {
    count: u64,
    deltas: Vec<u8>,
    lengths: Vec<u8>,
    members: Vec<u8>,
    /// The length every member so far has, while they all have one.
    width: Option<usize>,
    uniform: bool,
    out: Vec<u8>,
}

impl Chunk {
    fn push(&mut self, member: &[u8], delta: u64) {
        if self.count == 0 {
            self.width = Some(member.len());
            self.uniform = true;
        } else if self.width != Some(member.len()) {
            self.uniform = false;
        }
        self.count += 1;
        put_varint(&mut self.deltas, delta);
        put_varint(&mut self.lengths, member.len() as u64);
        self.members.extend_from_slice(member);
    }

    /// About the size the chunk will be written at.
    fn bytes(&self) -> usize {
        let lengths = if self.uniform { 0 } else { self.lengths.len() };
        self.deltas.len() + lengths + self.members.len()
    }

    /// Writes the chunk, if it holds anything, and empties it.
    fn flush(&mut self, sink: &mut impl Sink) {
        if self.count == 0 {
            return;
        }
        self.out.clear();
        put_varint(&mut self.out, self.count);
        match self.width.filter(|_| self.uniform) {
            Some(w) => put_varint(&mut self.out, w as u64 + 1),
            None => put_varint(&mut self.out, 0),
        }
        self.out.extend_from_slice(&self.deltas);
        if !self.uniform {
            self.out.extend_from_slice(&self.lengths);
        }
        self.out.extend_from_slice(&self.members);
        sink.put_bytes(&self.out);
        self.count = 0;
        self.deltas.clear();
        self.lengths.clear();
        self.members.clear();
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads varints from a chunk.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// The next varint; an error past the end or beyond 64 bits.
    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(DecodeError::BadChunk)?;
            self.pos += 1;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(DecodeError::BadChunk);
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::BadChunk)
    }

    /// The next varint as a length that fits `usize`.
    fn length(&mut self) -> Result<usize, DecodeError> {
        usize::try_from(self.varint()?).map_err(|_| DecodeError::BadChunk)
    }
}

/// Reads a set written by [`encode`] at version `encver` (any version ever
/// written), encoded within `limits`. O(n).
///
/// # Errors
/// Any [`DecodeError`]; nothing is allocated beyond what was read.
pub fn decode(encver: i32, source: &mut impl Source, limits: Limits) -> Result<XSet, DecodeError> {
    if !(1..=3).contains(&encver) {
        return Err(DecodeError::UnknownVersion(encver));
    }
    let delivery = if encver >= 3 {
        decode_delivery(source)?
    } else {
        None
    };
    let count = source.get_u64().ok_or(DecodeError::Truncated)?;
    if count == 0 && delivery.is_none() {
        return Err(DecodeError::Empty);
    }
    if count > u64::from(u32::MAX) {
        return Err(DecodeError::TooLarge(count));
    }
    let mut set = XSet::with_limits(limits);
    set.set_delivery(delivery);
    // Trust the count only up to a bound, so a lying count costs little.
    set.reserve(count.min(TRUSTED_RESERVE) as usize);
    if encver == 1 {
        decode_v1(count, source, &mut set)?;
    } else {
        decode_v2(count, source, &mut set)?;
    }
    Ok(set)
}

/// A version-3 payload's delivery setting.
fn decode_delivery(source: &mut impl Source) -> Result<Option<Delivery>, DecodeError> {
    let setting = source.get_u64().ok_or(DecodeError::Truncated)?;
    if setting == 0 {
        return Ok(None);
    }
    if setting > 2 {
        return Err(DecodeError::BadSetting(setting));
    }
    let stream = source.get_bytes().ok_or(DecodeError::Truncated)?;
    let maxlen = if setting == 2 {
        Some(source.get_u64().ok_or(DecodeError::Truncated)?)
    } else {
        None
    };
    Ok(Some(Delivery {
        stream: stream.as_ref().to_vec(),
        maxlen,
    }))
}

/// The deadline `delta` after `prev`, if valid.
fn next_deadline(prev: u64, delta: u64) -> Result<u64, DecodeError> {
    let deadline_ms = prev.checked_add(delta).ok_or(DecodeError::BadDeadline)?;
    if deadline_ms == 0 || (deadline_ms > MAX_DEADLINE_MS && deadline_ms != NO_DEADLINE) {
        return Err(DecodeError::BadDeadline);
    }
    Ok(deadline_ms)
}

fn decode_v1(count: u64, source: &mut impl Source, set: &mut XSet) -> Result<(), DecodeError> {
    let mut prev = 0u64;
    for _ in 0..count {
        let member = source.get_bytes().ok_or(DecodeError::Truncated)?;
        let delta = source.get_u64().ok_or(DecodeError::Truncated)?;
        let deadline_ms = next_deadline(prev, delta)?;
        if !set.insert_absent(member.as_ref(), deadline_ms) {
            return Err(DecodeError::Duplicate);
        }
        prev = deadline_ms;
    }
    Ok(())
}

fn decode_v2(count: u64, source: &mut impl Source, set: &mut XSet) -> Result<(), DecodeError> {
    let mut prev = 0u64;
    let mut left = count;
    let mut deadlines: Vec<u64> = Vec::new();
    while left > 0 {
        let chunk = source.get_bytes().ok_or(DecodeError::Truncated)?;
        let buf = chunk.as_ref();
        let mut head = Cursor { buf, pos: 0 };
        let k = head.varint()?;
        // Each member takes at least its delta's byte, so `k` is bounded by
        // what was read before anything is allocated for it.
        if k == 0 || k > left || k > buf.len() as u64 {
            return Err(DecodeError::BadChunk);
        }
        let width = head.varint()?;
        deadlines.clear();
        deadlines.reserve(k as usize);
        for _ in 0..k {
            prev = next_deadline(prev, head.varint()?)?;
            deadlines.push(prev);
        }
        let lengths_at = head.pos;
        let member_bytes = if width == 0 {
            let mut sum = 0usize;
            for _ in 0..k {
                sum = sum
                    .checked_add(head.length()?)
                    .ok_or(DecodeError::BadChunk)?;
            }
            sum
        } else {
            usize::try_from(width - 1)
                .ok()
                .and_then(|w| w.checked_mul(k as usize))
                .ok_or(DecodeError::BadChunk)?
        };
        let mut at = head.pos;
        if buf.len() - at != member_bytes {
            return Err(DecodeError::BadChunk);
        }
        let mut lengths = Cursor {
            buf: &buf[..at],
            pos: lengths_at,
        };
        for &deadline_ms in &deadlines {
            let len = if width == 0 {
                lengths.length()?
            } else {
                (width - 1) as usize
            };
            // Always there: the lengths summed to exactly what is left.
            let member = buf.get(at..at + len).ok_or(DecodeError::BadChunk)?;
            at += len;
            if !set.insert_absent(member, deadline_ms) {
                return Err(DecodeError::Duplicate);
            }
        }
        left -= k;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RDB items: `Ok` an unsigned integer, `Err` a byte string.
    type Items = Vec<Result<u64, Vec<u8>>>;

    /// A byte-level stand-in for Redis's RDB IO.
    #[derive(Clone, Default)]
    struct Buf {
        items: Items,
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

    #[test]
    fn the_unloadable_stand_in_is_refused_at_every_version() {
        for encver in [1, 2, 3] {
            let mut buf = Buf::default();
            encode_unloadable(&mut buf);
            let got = decode(encver, &mut buf, Limits::default());
            assert_eq!(got.err(), Some(DecodeError::Empty), "encver {encver}");
        }
    }

    /// What xset 0.1 wrote (version 1).
    fn encode_v1(set: &XSet, sink: &mut impl Sink) {
        sink.put_u64(set.len() as u64);
        let mut prev = 0u64;
        for (member, deadline_ms) in set.iter_all() {
            sink.put_bytes(member);
            sink.put_u64(deadline_ms - prev);
            prev = deadline_ms;
        }
    }

    /// What a version-2 writer wrote: version 3 without its leading
    /// setting (a set without a delivery).
    fn encode_v2(set: &XSet, sink: &mut Buf, chunk_bytes: usize) {
        assert!(set.delivery().is_none());
        let mut v3 = Buf::default();
        encode_chunked(set, &mut v3, chunk_bytes);
        assert_eq!(v3.items.remove(0), Ok(0));
        sink.items.extend(v3.items);
    }

    fn sample() -> XSet {
        let mut s = XSet::new();
        s.set(b"a", 1_700_000_000_000);
        s.set(b"", 1_700_000_000_500);
        s.set(b"\x00\xff", 1_700_000_000_500);
        s.set(b"p", NO_DEADLINE);
        s
    }

    fn sorted(s: &XSet) -> Vec<(Vec<u8>, u64)> {
        let mut v: Vec<_> = s.iter_all().map(|(m, d)| (m.to_vec(), d)).collect();
        v.sort();
        v
    }

    fn v2(items: Items) -> Result<XSet, DecodeError> {
        decode(2, &mut Buf { items, pos: 0 }, Limits::default())
    }

    fn varints(vs: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in vs {
            put_varint(&mut out, v);
        }
        out
    }

    #[test]
    fn round_trip_keeps_every_deadline() {
        let s = sample();
        for encver in [1, 2, 3] {
            let mut buf = Buf::default();
            match encver {
                1 => encode_v1(&s, &mut buf),
                2 => encode_v2(&s, &mut buf, CHUNK_BYTES),
                _ => encode(&s, &mut buf),
            }
            let back = decode(encver, &mut buf, Limits::default()).expect("decodes");
            back.check_invariants();
            assert_eq!(sorted(&s), sorted(&back), "version {encver}");
        }
    }

    #[test]
    fn version_2_writes_few_items() {
        let mut s = XSet::new();
        for i in 0..10_000u64 {
            s.set(format!("member:{i:09}").as_bytes(), 1_700_000_000_000 + i);
        }
        let mut buf = Buf::default();
        encode_v2(&s, &mut buf, CHUNK_BYTES);
        // count, then chunks of 64 KiB: 16-byte members, 1-byte deltas.
        assert_eq!(buf.items.len(), 1 + 3);
        for item in &buf.items[1..3] {
            let chunk = item.as_ref().expect_err("a chunk");
            assert!(chunk.len() >= CHUNK_BYTES && chunk.len() < CHUNK_BYTES + 64);
        }
        let back = decode(2, &mut buf, Limits::default()).expect("decodes");
        back.check_invariants();
        assert!(!back.is_small());
        assert_eq!(sorted(&s), sorted(&back));
    }

    #[test]
    fn rejects_corrupt_version_1_payloads() {
        let mut full = Buf::default();
        encode_v1(&sample(), &mut full);
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
        let lie = |items: Items| decode(1, &mut Buf { items, pos: 0 }, Limits::default());
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
            decode(4, &mut Buf::default(), Limits::default()).err(),
            Some(DecodeError::UnknownVersion(4))
        );
    }

    #[test]
    fn rejects_corrupt_version_2_payloads() {
        let mut full = Buf::default();
        encode_v2(&sample(), &mut full, 4);
        assert!(full.items.len() > 2, "several chunks");
        for cut in 0..full.items.len() {
            let items = full.items[..cut].to_vec();
            assert!(v2(items).is_err(), "items cut at {cut}");
        }
        for (i, item) in full.items.iter().enumerate() {
            let Err(chunk) = item else { continue };
            for cut in 0..chunk.len() {
                let mut items = full.items.clone();
                items[i] = Err(chunk[..cut].to_vec());
                assert!(v2(items).is_err(), "chunk {i} cut at {cut}");
            }
            let mut items = full.items.clone();
            let mut longer = chunk.clone();
            longer.push(b'z');
            items[i] = Err(longer);
            assert_eq!(
                v2(items).err(),
                Some(DecodeError::BadChunk),
                "trailing byte"
            );
        }
        let chunk = |k: u64, width: u64, deltas: &[u64], rest: &[u8]| {
            let mut c = varints(&[k, width]);
            c.extend(varints(deltas));
            c.extend_from_slice(rest);
            Err(c)
        };
        let t = 1_700_000_000_000;
        // A well-formed pair of chunks, then lies about it.
        let good = v2(vec![
            Ok(2),
            chunk(1, 2, &[t], b"a"),
            chunk(1, 0, &[5], b"\x02bc"),
        ])
        .expect("decodes");
        assert_eq!(good.deadline_of(b"bc"), Some(t + 5));
        let cases: Vec<(&str, Items, DecodeError)> = vec![
            ("count of zero", vec![Ok(0)], DecodeError::Empty),
            (
                "count of 2^64-1",
                vec![Ok(u64::MAX)],
                DecodeError::TooLarge(u64::MAX),
            ),
            (
                "count above the chunks",
                vec![Ok(3), chunk(2, 2, &[t, 1], b"ab")],
                DecodeError::Truncated,
            ),
            (
                "chunk above the count",
                vec![Ok(1), chunk(2, 2, &[t, 1], b"ab")],
                DecodeError::BadChunk,
            ),
            (
                "empty chunk",
                vec![Ok(1), chunk(0, 2, &[], b"")],
                DecodeError::BadChunk,
            ),
            (
                "no chunk bytes",
                vec![Ok(1), Err(vec![])],
                DecodeError::BadChunk,
            ),
            (
                "k above the chunk's bytes",
                vec![Ok(1000), chunk(999, 2, &[t], b"a")],
                DecodeError::BadChunk,
            ),
            (
                "u64 where a chunk goes",
                vec![Ok(1), Ok(5)],
                DecodeError::Truncated,
            ),
            (
                "width too wide",
                vec![Ok(2), chunk(2, 3, &[t, 1], b"abc")],
                DecodeError::BadChunk,
            ),
            (
                "width too narrow",
                vec![Ok(2), chunk(2, 2, &[t, 1], b"abc")],
                DecodeError::BadChunk,
            ),
            (
                "width overflows",
                vec![Ok(2), chunk(2, u64::MAX, &[t, 1], b"ab")],
                DecodeError::BadChunk,
            ),
            (
                "lengths overrun",
                vec![Ok(2), chunk(2, 0, &[t, 1, 1, 3], b"abc")],
                DecodeError::BadChunk,
            ),
            (
                "lengths underrun",
                vec![Ok(2), chunk(2, 0, &[t, 1, 1, 1], b"abc")],
                DecodeError::BadChunk,
            ),
            (
                "lengths overflow",
                vec![Ok(2), chunk(2, 0, &[t, 1, u64::MAX, 2], b"abc")],
                DecodeError::BadChunk,
            ),
            (
                "duplicate in a chunk",
                vec![Ok(2), chunk(2, 2, &[t, 1], b"aa")],
                DecodeError::Duplicate,
            ),
            (
                "duplicate across chunks",
                vec![Ok(2), chunk(1, 2, &[t], b"a"), chunk(1, 2, &[1], b"a")],
                DecodeError::Duplicate,
            ),
            (
                "deadline zero",
                vec![Ok(1), chunk(1, 2, &[0], b"a")],
                DecodeError::BadDeadline,
            ),
            (
                "deadline too far",
                vec![Ok(1), chunk(1, 2, &[MAX_DEADLINE_MS + 1], b"a")],
                DecodeError::BadDeadline,
            ),
            (
                "deadline overflows across chunks",
                vec![
                    Ok(2),
                    chunk(1, 2, &[t], b"a"),
                    chunk(1, 2, &[u64::MAX], b"b"),
                ],
                DecodeError::BadDeadline,
            ),
            (
                "varint past the end",
                vec![Ok(1), Err(vec![1, 2, 0x80])],
                DecodeError::BadChunk,
            ),
            (
                "varint beyond 64 bits",
                vec![
                    Ok(1),
                    Err([&[1u8, 2][..], &[0xff; 9], &[0x02], b"a"].concat()),
                ],
                DecodeError::BadChunk,
            ),
            (
                "varint of 11 bytes",
                vec![
                    Ok(1),
                    Err([&[1u8, 2][..], &[0x80; 10], &[0x01], b"a"].concat()),
                ],
                DecodeError::BadChunk,
            ),
        ];
        for (what, items, want) in cases {
            assert_eq!(v2(items).err(), Some(want), "{what}");
        }
    }

    /// Sets with members of any length, uniform or not, and deadlines far,
    /// absent or ordinary.
    fn any_set() -> impl Strategy<Value = std::collections::HashMap<Vec<u8>, u64>> {
        prop::collection::hash_map(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..12),
                prop::collection::vec(any::<u8>(), 3..=3),
                prop::collection::vec(any::<u8>(), 60..200),
            ],
            prop_oneof![
                1u64..=MAX_DEADLINE_MS,
                1_700_000_000_000u64..1_700_000_001_000,
                Just(NO_DEADLINE)
            ],
            1..300,
        )
    }

    #[test]
    fn version_3_keeps_the_delivery_and_an_empty_set_that_has_one() {
        for maxlen in [None, Some(0), Some(1000), Some(u64::MAX)] {
            for members in [sample(), XSet::new()] {
                let mut s = members;
                let delivery = Delivery {
                    stream: b"\x00events{1}".to_vec(),
                    maxlen,
                };
                s.set_delivery(Some(delivery.clone()));
                let mut buf = Buf::default();
                encode(&s, &mut buf);
                let back = decode(3, &mut buf, Limits::default()).expect("decodes");
                back.check_invariants();
                assert_eq!(back.delivery(), Some(&delivery));
                assert!(back.keeps_when_empty());
                assert_eq!(sorted(&s), sorted(&back));
                assert_eq!(buf.pos, buf.items.len(), "every item read");
            }
        }
    }

    #[test]
    fn rejects_corrupt_version_3_payloads() {
        let mut s = sample();
        s.set_delivery(Some(Delivery {
            stream: b"s".to_vec(),
            maxlen: Some(7),
        }));
        let mut full = Buf::default();
        encode(&s, &mut full);
        for cut in 0..full.items.len() {
            let mut part = Buf {
                items: full.items[..cut].to_vec(),
                pos: 0,
            };
            assert!(
                decode(3, &mut part, Limits::default()).is_err(),
                "truncated at {cut}"
            );
        }
        let v3 = |items: Items| decode(3, &mut Buf { items, pos: 0 }, Limits::default());
        assert_eq!(v3(vec![Ok(3)]).err(), Some(DecodeError::BadSetting(3)));
        assert_eq!(v3(vec![Ok(0), Ok(0)]).err(), Some(DecodeError::Empty));
        assert_eq!(v3(vec![Ok(1), Ok(5)]).err(), Some(DecodeError::Truncated));
        let empty = v3(vec![Ok(1), Err(b"s".to_vec()), Ok(0)]).expect("decodes");
        assert!(empty.is_empty() && empty.keeps_when_empty());
    }

    proptest! {
        #[test]
        fn any_set_round_trips(
            entries in any_set(),
            chunk_bytes in prop_oneof![Just(1usize), 2usize..200, Just(CHUNK_BYTES)],
        ) {
            let mut s = XSet::new();
            for (m, d) in &entries {
                s.set(m, *d);
            }
            for encver in [1, 2, 3] {
                let mut buf = Buf::default();
                match encver {
                    1 => encode_v1(&s, &mut buf),
                    2 => encode_v2(&s, &mut buf, chunk_bytes),
                    _ => encode_chunked(&s, &mut buf, chunk_bytes),
                }
                let back = decode(encver, &mut buf, Limits::default()).expect("decodes");
                back.check_invariants();
                prop_assert_eq!(back.len(), entries.len());
                for (m, d) in &entries {
                    prop_assert_eq!(back.deadline_of(m), Some(*d));
                }
            }
        }

        /// Corrupt payloads: random edits of a valid one never panic, and
        /// what does decode is a whole, consistent set of the announced
        /// size.
        #[test]
        fn corrupt_payloads_never_half_build(
            entries in any_set(),
            chunk_bytes in 1usize..100,
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>(), 0u8..5), 1..4),
        ) {
            let mut s = XSet::new();
            for (m, d) in &entries {
                s.set(m, *d);
            }
            let mut buf = Buf::default();
            encode_v2(&s, &mut buf, chunk_bytes);
            for (item, at, byte, kind) in edits {
                let i = item.index(buf.items.len());
                match (&mut buf.items[i], kind) {
                    (Ok(v), _) => *v = u64::from(byte) % 4 * (*v / 2 + 1),
                    (Err(c), 0) if !c.is_empty() => {
                        let j = at.index(c.len());
                        c[j] = byte;
                    }
                    (Err(c), 1) => {
                        let j = at.index(c.len() + 1);
                        c.truncate(j);
                    }
                    (Err(c), 2) => {
                        let j = at.index(c.len() + 1);
                        c.insert(j, byte);
                    }
                    (Err(_), 3) => {
                        let _removed = buf.items.remove(i);
                    }
                    (Err(c), _) => {
                        let j = at.index(c.len() + 1);
                        let k = at.index(c.len() + 1).max(j);
                        let copy = c[j..k].to_vec();
                        c.extend(copy);
                    }
                }
            }
            let claimed = match buf.items.first() {
                Some(Ok(n)) => *n as usize,
                _ => 0,
            };
            if let Ok(back) = decode(2, &mut buf, Limits::default()) {
                back.check_invariants();
                prop_assert_eq!(back.len(), claimed);
            }
        }

        /// Arbitrary bytes as chunks.
        #[test]
        fn random_chunks_never_panic(
            count in 1u64..50,
            chunks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6),
        ) {
            let items = std::iter::once(Ok(count)).chain(chunks.into_iter().map(Err)).collect();
            if let Ok(back) = v2(items) {
                back.check_invariants();
                prop_assert_eq!(back.len() as u64, count);
            }
        }
    }
}
