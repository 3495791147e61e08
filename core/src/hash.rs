//! The hash of a large set's members: SipHash-1-2, the keyed hash Redis's
//! and Valkey's own dicts use (one round a word, two to finish; std's
//! `HashMap` runs three to finish), under two 64-bit keys drawn at random
//! for each set, so that no client can craft members that collide (the
//! table's probes stay short whatever members arrive).
//!
//! std's `BuildHasher::hash_one(member)` streams the member's length and
//! then its bytes through a buffered `Hasher`. This computes the SipHash
//! family in one pass, reading the bytes in place 8 at a time, on
//! every lookup and insert of a large set (the instructions it saves are
//! in `docs/design.md`, "Micro-optimisations kept and dropped").

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// SipHash-1-2 under keys fixed at creation. Not `Debug`: the keys are
/// what keeps crafted collisions out, and must not reach a log.
#[derive(Clone, Copy)]
pub(super) struct MemberHasher {
    k0: u64,
    k1: u64,
}

impl Default for MemberHasher {
    /// Keys drawn from std's `RandomState` (seeded at random once per
    /// thread, its first key stepped by one per state): two outputs of a
    /// SipHash under those secret keys, unpredictable from outside.
    fn default() -> MemberHasher {
        let random = RandomState::new();
        MemberHasher {
            k0: random.hash_one(0u8),
            k1: random.hash_one(1u8),
        }
    }
}

impl MemberHasher {
    /// The hash of `bytes`. O(len).
    #[inline]
    pub fn hash(&self, bytes: &[u8]) -> u64 {
        siphash::<1, 2>(self.k0, self.k1, bytes)
    }
}

/// SipHash-c-d of `bytes` under keys `k0`, `k1`, as the SipHash paper
/// defines it (little-endian words, the length's low byte in the last
/// word's top byte).
#[inline(always)]
fn siphash<const C: usize, const D: usize>(k0: u64, k1: u64, bytes: &[u8]) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        compress::<C>(&mut v, word(w));
    }
    let tail = tail_word(bytes, words.remainder().len()) | ((bytes.len() as u64) << 56);
    compress::<C>(&mut v, tail);
    v[2] ^= 0xff;
    for _ in 0..D {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// The last `r` (< 8) bytes of `bytes` as a little-endian word, read with
/// at most two loads and no copy (a copy is a call on every hash of a short
/// member).
#[inline(always)]
pub(super) fn tail_word(bytes: &[u8], r: usize) -> u64 {
    let len = bytes.len();
    if r == 0 {
        0
    } else if len >= 8 {
        // The word ending at the last byte, its first 8 - r bytes (already
        // absorbed) shifted out.
        word(&bytes[len - 8..]) >> (8 * (8 - r))
    } else if r >= 4 {
        // Two 4-byte reads that overlap in the middle.
        let lo = u64::from(half(&bytes[..4]));
        let hi = u64::from(half(&bytes[r - 4..r]));
        lo | (hi << (8 * (r - 4)))
    } else {
        // 1 to 3 bytes: the first, the middle and the last.
        u64::from(bytes[0])
            | (u64::from(bytes[r / 2]) << (8 * (r / 2)))
            | (u64::from(bytes[r - 1]) << (8 * (r - 1)))
    }
}

/// The first 8 bytes of `b` as a little-endian word.
#[inline(always)]
pub(super) fn word(b: &[u8]) -> u64 {
    let mut m = [0u8; 8];
    m.copy_from_slice(&b[..8]);
    u64::from_le_bytes(m)
}

/// The first 4 bytes of `b` as a little-endian word.
#[inline(always)]
fn half(b: &[u8]) -> u32 {
    let mut m = [0u8; 4];
    m.copy_from_slice(&b[..4]);
    u32::from_le_bytes(m)
}

/// Absorbs one message word with `C` rounds.
#[inline(always)]
fn compress<const C: usize>(v: &mut [u64; 4], m: u64) {
    v[3] ^= m;
    for _ in 0..C {
        round(v);
    }
    v[0] ^= m;
}

/// One SipRound.
#[inline(always)]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hasher;

    #[test]
    fn matches_the_papers_test_vector() {
        // SipHash-2-4, key 00..0f, message 00..0e (the paper's appendix A).
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash::<2, 4>(k0, k1, &msg), 0xa129_ca61_49be_45e5);
    }

    #[test]
    #[allow(deprecated)]
    fn matches_std_siphash_at_every_length() {
        // std's SipHasher is SipHash-2-4. What the sets use is the same
        // generic code with 1 and 2 rounds: the word reads, the tail and
        // the finalisation checked here are shared, only the round counts
        // differ.
        let (k0, k1) = (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210);
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..bytes.len() {
            let mut std = std::hash::SipHasher::new_with_keys(k0, k1);
            std.write(&bytes[..len]);
            assert_eq!(
                siphash::<2, 4>(k0, k1, &bytes[..len]),
                std.finish(),
                "{len}"
            );
        }
    }

    #[test]
    fn keys_differ_between_sets_and_change_the_hash() {
        let (a, b) = (MemberHasher::default(), MemberHasher::default());
        assert_ne!((a.k0, a.k1), (b.k0, b.k1));
        assert_ne!(a.hash(b"member"), b.hash(b"member"));
        assert_eq!(a.hash(b"member"), a.hash(b"member"));
        assert_ne!(a.hash(b""), a.hash(b"\0"));
    }
}
