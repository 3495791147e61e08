//! One slot of the large encoding's slab: a member and its deadline in 24
//! bytes. Members of up to [`ENTRY_INLINE_MAX`] bytes are stored inline (ids,
//! codes and hashes mostly are), longer ones in a boxed slice.
//!
//! The deadline takes 48 bits, as in the small encoding: exact up to the
//! year 10889, [`DeadlineCode::NONE`] for no deadline, and
//! [`DeadlineCode::FAR`] for a later deadline, whose exact value the owner
//! keeps aside (`Large::far`). Fitting a deadline, a length and 16 bytes in
//! 24 relies on the compiler storing the enum's tag in the spare values of
//! the length byte; a unit test pins the size.

use super::deadline::NO_DEADLINE;
use super::hash::{tail_word, word};
use super::member::{self, Member};

/// The longest member stored inline.
pub const ENTRY_INLINE_MAX: usize = 16;

/// A member's deadline in 48 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadlineCode(u64);

impl DeadlineCode {
    /// No deadline.
    pub const NONE: DeadlineCode = DeadlineCode((1 << 48) - 1);
    /// A deadline after [`DeadlineCode::LATEST`]; its value is kept aside.
    pub const FAR: DeadlineCode = DeadlineCode((1 << 48) - 2);
    /// The latest deadline stored exactly.
    pub const LATEST: u64 = (1 << 48) - 3;

    /// The code for `deadline_ms`.
    pub fn of(deadline_ms: u64) -> DeadlineCode {
        match deadline_ms {
            NO_DEADLINE => DeadlineCode::NONE,
            d if d > DeadlineCode::LATEST => DeadlineCode::FAR,
            d => DeadlineCode(d),
        }
    }

    /// The deadline, unless it is far (kept aside).
    pub fn exact(self) -> Option<u64> {
        match self {
            DeadlineCode::NONE => Some(NO_DEADLINE),
            DeadlineCode::FAR => None,
            DeadlineCode(d) => Some(d),
        }
    }
}

/// A length of 0 to 16: an enum so that its unused values are free for the
/// entry's tag (and for `Option<Entry>`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum InlineLen {
    L0,
    L1,
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
    L8,
    L9,
    L10,
    L11,
    L12,
    L13,
    L14,
    L15,
    L16,
}

const LENS: [InlineLen; ENTRY_INLINE_MAX + 1] = {
    use InlineLen::*;
    [
        L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15, L16,
    ]
};

/// A member being looked up, padded as an inline entry stores it
/// ([`Entry::holds`]).
pub(super) struct Lookup<'a> {
    member: &'a [u8],
    /// The member zero-padded to 16 bytes; `None` when it is longer.
    padded: Option<[u8; ENTRY_INLINE_MAX]>,
}

impl<'a> Lookup<'a> {
    #[inline]
    pub fn new(member: &'a [u8]) -> Lookup<'a> {
        Lookup {
            member,
            padded: padded(member),
        }
    }
}

/// `member` zero-padded to 16 bytes, read a word at a time (a copy of a
/// length known only at run time is a call on every lookup); `None` when
/// it is longer.
#[inline(always)]
fn padded(member: &[u8]) -> Option<[u8; ENTRY_INLINE_MAX]> {
    let len = member.len();
    let (lo, hi) = match len {
        0..8 => (tail_word(member, len), 0),
        8..16 => (word(member), tail_word(member, len - 8)),
        16 => (word(member), word(&member[8..])),
        _ => return None,
    };
    let mut bytes = [0; ENTRY_INLINE_MAX];
    bytes[..8].copy_from_slice(&lo.to_le_bytes());
    bytes[8..].copy_from_slice(&hi.to_le_bytes());
    Some(bytes)
}

/// A member and its deadline code, 24 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Entry {
    Inline {
        bytes: [u8; ENTRY_INLINE_MAX],
        lo: u32,
        hi: u16,
        len: InlineLen,
    },
    Heap {
        bytes: Box<[u8]>,
        lo: u32,
        hi: u16,
    },
}

fn split(code: DeadlineCode) -> (u32, u16) {
    (code.0 as u32, (code.0 >> 32) as u16)
}

impl Entry {
    /// Copies `member` into an entry with deadline `code`.
    pub fn new(member: &[u8], code: DeadlineCode) -> Entry {
        let (lo, hi) = split(code);
        match LENS.get(member.len()) {
            Some(&len) => {
                let mut bytes = [0; ENTRY_INLINE_MAX];
                bytes[..member.len()].copy_from_slice(member);
                Entry::Inline { bytes, lo, hi, len }
            }
            None => Entry::Heap {
                bytes: member.into(),
                lo,
                hi,
            },
        }
    }

    /// The member's bytes.
    pub fn member(&self) -> &[u8] {
        match self {
            Entry::Inline { bytes, len, .. } => &bytes[..*len as usize],
            Entry::Heap { bytes, .. } => bytes,
        }
    }

    /// Whether the entry holds `probe`'s member. An inline member is
    /// compared as the 16 zero-padded bytes it is stored as (with its
    /// length), in a couple of word compares rather than a call.
    #[inline]
    pub fn holds(&self, probe: &Lookup<'_>) -> bool {
        match (self, &probe.padded) {
            (Entry::Inline { bytes, len, .. }, Some(padded)) => {
                *len as usize == probe.member.len() && bytes == padded
            }
            (Entry::Heap { bytes, .. }, None) => **bytes == *probe.member,
            // A member of up to 16 bytes is always stored inline, a longer
            // one never.
            _ => false,
        }
    }

    /// The deadline code.
    pub fn code(&self) -> DeadlineCode {
        let (Entry::Inline { lo, hi, .. } | Entry::Heap { lo, hi, .. }) = self;
        DeadlineCode(u64::from(*lo) | (u64::from(*hi) << 32))
    }

    /// Replaces the deadline code.
    pub fn set_code(&mut self, code: DeadlineCode) {
        let (Entry::Inline { lo, hi, .. } | Entry::Heap { lo, hi, .. }) = self;
        (*lo, *hi) = split(code);
    }

    /// The member, moved out (bytes too long for [`Member`]'s inline form
    /// are not copied). The result is what `Member::new` would build, so
    /// members compare equal by bytes.
    pub fn into_member(self) -> Member {
        match self {
            Entry::Heap { bytes, .. } if bytes.len() > member::MEMBER_INLINE_MAX => {
                Member::Heap(bytes)
            }
            _ => Member::new(self.member()),
        }
    }

    /// Hands the member's heap bytes, if any, to `r` (active defrag).
    pub fn relocate<R: super::relocate::Relocate>(&mut self, r: &mut R) {
        if let Entry::Heap { bytes, .. } = self {
            r.slice(bytes);
        }
    }

    /// Bytes the member holds on the heap, as jemalloc rounds them.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Entry::Inline { .. } => 0,
            Entry::Heap { bytes, .. } => member::allocation_size(bytes.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_pad_as_entries_store() {
        let bytes: Vec<u8> = (1..=20).collect();
        for len in 0..=bytes.len() {
            let member = &bytes[..len];
            let want = (len <= ENTRY_INLINE_MAX).then(|| {
                let mut b = [0; ENTRY_INLINE_MAX];
                b[..len].copy_from_slice(member);
                b
            });
            assert_eq!(padded(member), want, "length {len}");
            let entry = Entry::new(member, DeadlineCode::of(7));
            assert!(entry.holds(&Lookup::new(member)), "length {len}");
        }
    }

    #[test]
    fn entries_take_24_bytes_and_vacancy_is_free() {
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        assert_eq!(std::mem::size_of::<Option<Entry>>(), 24);
    }

    #[test]
    fn members_and_codes_round_trip() {
        let codes = [
            0,
            1,
            1 << 40,
            DeadlineCode::LATEST,
            DeadlineCode::LATEST + 1,
        ];
        for n in 0..=ENTRY_INLINE_MAX + 3 {
            let bytes: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(37)).collect();
            for &d in codes.iter().chain(&[NO_DEADLINE, i64::MAX as u64]) {
                let mut e = Entry::new(&bytes, DeadlineCode::of(d));
                assert_eq!(e.member(), &bytes[..]);
                assert!(e.holds(&Lookup::new(&bytes)));
                // Shorter, longer by a zero byte (the same padded bytes
                // when inline), and one byte changed.
                let mut others = vec![[&bytes[..], &[0]].concat()];
                if let Some((last, rest)) = bytes.split_last() {
                    others.push(rest.to_vec());
                    others.push([rest, &[last ^ 1]].concat());
                }
                for other in &others {
                    assert!(!e.holds(&Lookup::new(other)), "{n}: {other:?}");
                }
                assert_eq!(matches!(e, Entry::Inline { .. }), n <= ENTRY_INLINE_MAX);
                let want = if d > DeadlineCode::LATEST && d != NO_DEADLINE {
                    None
                } else {
                    Some(d)
                };
                assert_eq!(e.code().exact(), want, "deadline {d}");
                e.set_code(DeadlineCode::of(7));
                assert_eq!(e.code().exact(), Some(7));
                assert_eq!(e.member(), &bytes[..]);
                assert_eq!(e.heap_bytes() > 0, n > ENTRY_INLINE_MAX);
                assert_eq!(e.into_member(), Member::new(&bytes));
            }
        }
    }
}
