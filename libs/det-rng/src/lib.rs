//! Deterministic generators of test and fuzz inputs: the same seed gives the same sequence on
//! every run and every machine, so a failing case can be replayed. Marsaglia's xorshift
//! ("Xorshift RNGs", Journal of Statistical Software 8(14), 2003): 64-bit with shifts 13, 7, 17
//! and 32-bit with shifts 13, 17, 5. Not random enough for keys or anything secret (those come
//! from the TRNG service or the OS).

#![no_std]

/// xorshift64 (13, 7, 17). The state must not be 0 (it would stay 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    /// The next state.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next state modulo `n` (`n` > 0; slightly biased, which test inputs do not mind).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Fill `b`: one state per 8 bytes, little-endian (the last chunk truncated).
    pub fn fill(&mut self, b: &mut [u8]) {
        for c in b.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }

    /// 32 bytes ([`Self::fill`]).
    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut b = [0u8; 32];
        self.fill(&mut b);
        b
    }
}

/// xorshift32 (13, 17, 5). The state must not be 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XorShift32(pub u32);

impl XorShift32 {
    /// The next state.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequences() {
        // xorshift64 from 1: the first values of Marsaglia's generator
        let mut r = XorShift64(1);
        assert_eq!([r.next(), r.next(), r.next()], [1082269761, 1152992998833853505, 11177516664432764457]);
        let mut r = XorShift32(1);
        assert_eq!([r.next(), r.next(), r.next()], [270369, 67634689, 2647435461]);
        // fill: little-endian states, the tail truncated
        let mut a = XorShift64(7);
        let mut b = [0u8; 12];
        a.fill(&mut b);
        let mut c = XorShift64(7);
        assert_eq!(b[..8], c.next().to_le_bytes());
        assert_eq!(b[8..], c.next().to_le_bytes()[..4]);
        assert!(XorShift64(5).below(10) < 10);
    }
}
