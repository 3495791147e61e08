//! A member's bytes as the core hands them out (removed, expired or
//! trimmed members): inline when short, so draining ids, codes and hashes
//! allocates nothing per member; longer members keep their heap bytes.
//! The large encoding stores members in its own 24-byte entries
//! (`entry.rs`); this module also holds the allocator's size classes.

use std::ops::Deref;

/// The longest member kept inline.
pub const MEMBER_INLINE_MAX: usize = 22;

/// The bytes of one member: inline up to [`MEMBER_INLINE_MAX`] bytes, boxed
/// beyond. 24 bytes either way.
#[derive(Clone, PartialEq, Eq)]
pub enum Member {
    Inline {
        len: u8,
        bytes: [u8; MEMBER_INLINE_MAX],
    },
    Heap(Box<[u8]>),
}

impl Member {
    /// Copies `bytes` into a member.
    pub fn new(bytes: &[u8]) -> Member {
        if bytes.len() <= MEMBER_INLINE_MAX {
            let mut inline = [0; MEMBER_INLINE_MAX];
            inline[..bytes.len()].copy_from_slice(bytes);
            Member::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            }
        } else {
            Member::Heap(bytes.into())
        }
    }

    /// Bytes this member holds on the heap, rounded up to the allocator's
    /// size classes (jemalloc's: 8, 16, then four classes per doubling).
    pub fn heap_bytes(&self) -> usize {
        match self {
            Member::Inline { .. } => 0,
            Member::Heap(b) => allocation_size(b.len()),
        }
    }
}

/// The size jemalloc hands out for a request of `n` bytes.
pub fn allocation_size(n: usize) -> usize {
    match n {
        0 => 0,
        1..=8 => 8,
        9..=128 => n.div_ceil(16) * 16,
        _ => {
            let lg = usize::BITS - 1 - (n - 1).leading_zeros();
            let spacing = 1usize << (lg - 2);
            n.div_ceil(spacing) * spacing
        }
    }
}

impl Deref for Member {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Member::Inline { len, bytes } => &bytes[..*len as usize],
            Member::Heap(b) => b,
        }
    }
}

impl AsRef<[u8]> for Member {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_every_length_around_the_inline_limit() {
        assert_eq!(std::mem::size_of::<Member>(), 24);
        assert_eq!(std::mem::size_of::<Option<Member>>(), 24);
        for n in 0..=MEMBER_INLINE_MAX + 3 {
            let bytes: Vec<u8> = (0..n as u8).collect();
            let m = Member::new(&bytes);
            assert_eq!(&*m, &bytes[..]);
            assert_eq!(matches!(m, Member::Inline { .. }), n <= MEMBER_INLINE_MAX);
        }
    }

    #[test]
    fn allocation_sizes_follow_jemalloc_classes() {
        let got: Vec<usize> = [1, 8, 9, 16, 17, 100, 128, 129, 160, 161, 256, 257, 1000]
            .iter()
            .map(|&n| allocation_size(n))
            .collect();
        assert_eq!(
            got,
            [8, 8, 16, 16, 32, 112, 128, 160, 160, 192, 256, 320, 1024]
        );
    }
}
