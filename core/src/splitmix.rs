//! SplitMix64: the small deterministic generator behind every random word
//! the project draws, the module's sampling stream (seeded once a process)
//! and the fixed sequences of the tests, examples and benches alike. Fast
//! and well mixed; not cryptographic.

/// A SplitMix64 generator: its state advances by [`SplitMix64::GAMMA`] per
/// word, and each word is the state mixed.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// What the state advances by per word (the golden ratio in 64 bits).
    pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    /// The next word. O(1).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(Self::GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The reference implementation's first words from state 0.
        let mut g = SplitMix64(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }
}
