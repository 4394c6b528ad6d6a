//! 256-bit register arithmetic of the engine model (4 x 64-bit limbs, least significant first).
//!
//! These functions implement the datapath semantics the model executes; they are exact
//! definitions (the gateware must match them bit for bit), written for speed: no allocation,
//! u128 products; the final reductions are conditional subtractions that branch on the value
//! (the model defines the engine's results and cycle counts, not its timing on the host).
//!
//! Multiplier input interpretation (both ISAs): the hardware splits each operand into fifteen
//! 17-bit limbs, i.e. it sees bits 0..=254 only; bit 255 of each operand is ignored. Any value
//! of those 255 bits is accepted (values in [p, 2^255) are not an error: the x19 wrap-around is a
//! congruence mod p, so they multiply as their residue). The result is always fully reduced:
//! `mul(a, b) = ((a mod 2^255) * (b mod 2^255)) mod p`, in [0, p). The reference's defect 1
//! (docs/reference-system.md: an overflow detector that looked at too many bits and left some
//! results unreduced / wrong) cannot occur in this definition; `tests/field_ops.rs` checks the
//! boundary cases against a big-integer reference.

/// A 256-bit register value: four little-endian 64-bit limbs.
pub type U256 = [u64; 4];

/// p = 2^255 - 19.
pub const P: U256 = [0xFFFF_FFFF_FFFF_FFED, u64::MAX, u64::MAX, 0x7FFF_FFFF_FFFF_FFFF];
const MASK63: u64 = 0x7FFF_FFFF_FFFF_FFFF;

/// Little-endian bytes -> limbs.
#[inline]
pub fn from_bytes(b: &[u8; 32]) -> U256 {
    let mut r = [0u64; 4];
    for (i, limb) in r.iter_mut().enumerate() {
        *limb = u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap());
    }
    r
}

/// Limbs -> little-endian bytes.
#[inline]
pub fn to_bytes(a: &U256) -> [u8; 32] {
    let mut r = [0u8; 32];
    for i in 0..4 {
        r[8 * i..8 * i + 8].copy_from_slice(&a[i].to_le_bytes());
    }
    r
}

/// 8 little-endian u32 words (the bus layout) -> limbs.
#[inline]
pub fn from_words(w: &[u32; 8]) -> U256 {
    let mut r = [0u64; 4];
    for (i, limb) in r.iter_mut().enumerate() {
        *limb = w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32;
    }
    r
}

/// Limbs -> 8 little-endian u32 words.
#[inline]
pub fn to_words(a: &U256) -> [u32; 8] {
    let mut r = [0u32; 8];
    for i in 0..4 {
        r[2 * i] = a[i] as u32;
        r[2 * i + 1] = (a[i] >> 32) as u32;
    }
    r
}

#[inline(always)]
fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = a as u128 + b as u128 + carry as u128;
    (t as u64, (t >> 64) as u64)
}

#[inline(always)]
fn sbb(a: u64, b: u64, borrow: u64) -> (u64, u64) {
    let t = (a as u128).wrapping_sub(b as u128 + borrow as u128);
    (t as u64, (t >> 127) as u64)
}

#[inline(always)]
fn mac(acc: u64, a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = a as u128 * b as u128 + acc as u128 + carry as u128;
    (t as u64, (t >> 64) as u64)
}

/// (a + b) mod 2^256 and the carry out.
#[inline(always)]
pub fn add_carry(a: &U256, b: &U256) -> (U256, u64) {
    let (r0, c) = adc(a[0], b[0], 0);
    let (r1, c) = adc(a[1], b[1], c);
    let (r2, c) = adc(a[2], b[2], c);
    let (r3, c) = adc(a[3], b[3], c);
    ([r0, r1, r2, r3], c)
}

/// (a - b) mod 2^256 and the borrow out (1 if a < b).
#[inline(always)]
pub fn sub_borrow(a: &U256, b: &U256) -> (U256, u64) {
    let (r0, c) = sbb(a[0], b[0], 0);
    let (r1, c) = sbb(a[1], b[1], c);
    let (r2, c) = sbb(a[2], b[2], c);
    let (r3, c) = sbb(a[3], b[3], c);
    ([r0, r1, r2, r3], c)
}

/// ADD: (a + b) mod 2^256.
#[inline(always)]
pub fn add(a: &U256, b: &U256) -> U256 {
    add_carry(a, b).0
}

/// SUB: (a - b) mod 2^256.
#[inline(always)]
pub fn sub(a: &U256, b: &U256) -> U256 {
    sub_borrow(a, b).0
}

/// True when a >= p (a read as an unsigned 256-bit number).
#[inline(always)]
pub fn ge_p(a: &U256) -> bool {
    // a >= p  <=>  a + 19 >= 2^255 (a carry out of bit 255 or bit 255 set)
    let (r0, c) = adc(a[0], 19, 0);
    let _ = r0;
    let (_, c) = adc(a[1], 0, c);
    let (_, c) = adc(a[2], 0, c);
    let (r3, c) = adc(a[3], 0, c);
    c != 0 || (r3 >> 63) != 0
}

/// TRD: p if a >= p, else 0.
#[inline(always)]
pub fn trd(a: &U256) -> U256 {
    if ge_p(a) {
        P
    } else {
        [0; 4]
    }
}

/// SHL: (a << 1) mod 2^256.
#[inline(always)]
pub fn shl(a: &U256) -> U256 {
    [a[0] << 1, a[1] << 1 | a[0] >> 63, a[2] << 1 | a[1] >> 63, a[3] << 1 | a[2] >> 63]
}

/// XBT: bit 254 of a in bit 0, all other bits 0.
#[inline(always)]
pub fn xbt(a: &U256) -> U256 {
    [(a[3] >> 62) & 1, 0, 0, 0]
}

/// MSK: b if a[0] is set, else 0.
#[inline(always)]
pub fn msk(a: &U256, b: &U256) -> U256 {
    let m = 0u64.wrapping_sub(a[0] & 1);
    [b[0] & m, b[1] & m, b[2] & m, b[3] & m]
}

/// Bitwise XOR.
#[inline(always)]
pub fn xor(a: &U256, b: &U256) -> U256 {
    [a[0] ^ b[0], a[1] ^ b[1], a[2] ^ b[2], a[3] ^ b[3]]
}

/// Bitwise NOT.
#[inline(always)]
pub fn not(a: &U256) -> U256 {
    [!a[0], !a[1], !a[2], !a[3]]
}

/// FADD (v2): s = a + b as a 257-bit integer; result (s >= p ? s - p : s) mod 2^256.
/// For a, b in [0, p) this is the field sum, fully reduced.
#[inline(always)]
pub fn fadd(a: &U256, b: &U256) -> U256 {
    let (s, c) = add_carry(a, b);
    let (d, borrow) = sub_borrow(&s, &P);
    // s >= p as a 257-bit number: carry out, or no borrow from s - p
    if c != 0 || borrow == 0 {
        d
    } else {
        s
    }
}

/// FSUB (v2): d = a - b as an integer; result (d < 0 ? d + p : d) mod 2^256.
/// For a, b in [0, p) this is the field difference, fully reduced.
#[inline(always)]
pub fn fsub(a: &U256, b: &U256) -> U256 {
    let (d, borrow) = sub_borrow(a, b);
    if borrow != 0 {
        add(&d, &P)
    } else {
        d
    }
}

/// Reduce an 8-limb product t (< 2^510) to [0, p).
#[inline(always)]
fn reduce512(t: &[u64; 8]) -> U256 {
    // 2^256 = 38 (mod p): r = t_lo + 38 * t_hi, r < 2^256 + 2^262
    let (r0, c) = mac(t[0], t[4], 38, 0);
    let (r1, c) = mac(t[1], t[5], 38, c);
    let (r2, c) = mac(t[2], t[6], 38, c);
    let (r3, c) = mac(t[3], t[7], 38, c);
    // value = c * 2^256 + r = (2c + r[255]) * 2^255 + (r mod 2^255); 2^255 = 19 (mod p)
    let top = (c << 1) | (r3 >> 63);
    let (s0, k) = adc(r0, top * 19, 0);
    let (s1, k) = adc(r1, 0, k);
    let (s2, k) = adc(r2, 0, k);
    let s3 = (r3 & MASK63) + k; // s < 2^255 + 2^12 < 2p
                                // s >= p  <=>  s + 19 >= 2^255
    let (u0, k) = adc(s0, 19, 0);
    let (u1, k) = adc(s1, 0, k);
    let (u2, k) = adc(s2, 0, k);
    let u3 = s3 + k;
    let ge = 0u64.wrapping_sub(u3 >> 63);
    [(u0 & ge) | (s0 & !ge), (u1 & ge) | (s1 & !ge), (u2 & ge) | (s2 & !ge), ((u3 & MASK63) & ge) | (s3 & !ge)]
}

/// MUL: ((a mod 2^255) * (b mod 2^255)) mod p, fully reduced.
#[inline(always)]
pub fn mul(a: &U256, b: &U256) -> U256 {
    let a3 = a[3] & MASK63;
    let b3 = b[3] & MASK63;
    let a = [a[0], a[1], a[2], a3];
    let b = [b[0], b[1], b[2], b3];
    let mut t = [0u64; 8];
    for i in 0..4 {
        let mut c = 0;
        for j in 0..4 {
            let (lo, hi) = mac(t[i + j], a[i], b[j], c);
            t[i + j] = lo;
            c = hi;
        }
        t[i + 4] = c;
    }
    reduce512(&t)
}

/// MUL with both operands equal: (a mod 2^255)^2 mod p (same result as `mul(a, a)`, faster).
#[inline(always)]
pub fn sqr(a: &U256) -> U256 {
    let a0 = a[0];
    let a1 = a[1];
    let a2 = a[2];
    let a3 = a[3] & MASK63;
    // off-diagonal products
    let (t1, c) = mac(0, a0, a1, 0);
    let (t2, c) = mac(0, a0, a2, c);
    let (t3, t4) = mac(0, a0, a3, c);
    let (t3, c) = mac(t3, a1, a2, 0);
    let (t4, t5) = mac(t4, a1, a3, c);
    let (t5, t6) = mac(t5, a2, a3, 0);
    // double
    let t7 = t6 >> 63;
    let t6 = t6 << 1 | t5 >> 63;
    let t5 = t5 << 1 | t4 >> 63;
    let t4 = t4 << 1 | t3 >> 63;
    let t3 = t3 << 1 | t2 >> 63;
    let t2 = t2 << 1 | t1 >> 63;
    let t1 = t1 << 1;
    // diagonal
    let (t0, c) = mac(0, a0, a0, 0);
    let (t1, k) = adc(t1, c, 0);
    let (d_lo, d_hi) = mac(0, a1, a1, 0);
    let (t2, k) = adc(t2, d_lo, k);
    let (t3, k) = adc(t3, d_hi, k);
    let (d_lo, d_hi) = mac(0, a2, a2, 0);
    let (t4, k) = adc(t4, d_lo, k);
    let (t5, k) = adc(t5, d_hi, k);
    let (d_lo, d_hi) = mac(0, a3, a3, 0);
    let (t6, k) = adc(t6, d_lo, k);
    let (t7, _) = adc(t7, d_hi, k);
    reduce512(&[t0, t1, t2, t3, t4, t5, t6, t7])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqr_equals_mul() {
        let mut s = det_rng::XorShift64(0x1234_5678_9abc_def1);
        for _ in 0..20000 {
            let a = [s.next(), s.next(), s.next(), s.next()];
            assert_eq!(sqr(&a), mul(&a, &a));
        }
        for a in [[0u64; 4], [u64::MAX; 4], P, [u64::MAX, u64::MAX, u64::MAX, MASK63]] {
            assert_eq!(sqr(&a), mul(&a, &a));
        }
    }

    #[test]
    fn small_identities() {
        let one = [1, 0, 0, 0];
        assert_eq!(mul(&P, &one), [0; 4]);
        // 2^255 - 1 = p + 18
        assert_eq!(mul(&[u64::MAX, u64::MAX, u64::MAX, MASK63], &one), [18, 0, 0, 0]);
        // bit 255 ignored
        assert_eq!(mul(&[5, 0, 0, 1 << 63], &one), [5, 0, 0, 0]);
        assert_eq!(fadd(&[1, 0, 0, 0], &[P[0] - 1, P[1], P[2], P[3]]), [0; 4]);
        assert_eq!(fsub(&[0; 4], &one), [P[0] - 1, P[1], P[2], P[3]]);
        assert_eq!(trd(&P), P);
        assert_eq!(trd(&[P[0] - 1, P[1], P[2], P[3]]), [0; 4]);
        assert_eq!(trd(&[0, 0, 0, 1 << 63]), P);
        assert_eq!(xbt(&[0, 0, 0, 1 << 62]), one);
        assert_eq!(xbt(&[0, 0, 0, 1 << 63]), [0; 4]);
    }
}
