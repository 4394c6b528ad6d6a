//! XEdDSA (Signal's XEdDSA and VXEdDSA specification, section 2.3 / 2.4): Ed25519-compatible
//! signatures made with an X25519 key, so one identity key both agrees and signs.
//!
//! Built from curve25519-dalek group operations and SHA-512; verification is plain Ed25519
//! (ed25519-dalek, strict) against the Edwards form of the Montgomery key with sign bit 0,
//! exactly what the Python `xeddsa` / `x3dh` peer does.

use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::montgomery::MontgomeryPoint;
use curve25519_dalek::scalar::{clamp_integer, Scalar};
use sha2::{Digest, Sha512};
use subtle::{Choice, ConditionallyNegatable, ConditionallySelectable};
use x25519_dalek::StaticSecret;
use zeroize::Zeroize;

use crate::Error;

/// Signs `msg` with the X25519 secret `k`; `z` is 64 bytes of fresh randomness.
pub fn sign(k: &StaticSecret, msg: &[u8], z: &[u8; 64]) -> [u8; 64] {
    // calculate_key_pair(k): E = kB; a = k, or -k mod q if E's sign bit is 1, so that A = aB
    // has sign bit 0. The bytes hashed into r are the clamped k itself when it is not negated
    // (as libsignal and libxeddsa do; the spec writes k mod q, which differs only in the nonce,
    // and matching them makes our signatures byte-identical to libxeddsa's).
    let mut k_clamped = clamp_integer(k.to_bytes());
    let mut a = Scalar::from_bytes_mod_order(k_clamped);
    let e = EdwardsPoint::mul_base(&a).compress().to_bytes();
    let negative = Choice::from(e[31] >> 7);
    a.conditional_negate(negative);
    let a_pub = EdwardsPoint::mul_base(&a).compress().to_bytes();
    let mut neg_bytes = a.to_bytes();
    let mut a_bytes = [0u8; 32];
    for i in 0..32 {
        a_bytes[i] = u8::conditional_select(&k_clamped[i], &neg_bytes[i], negative);
    }
    k_clamped.zeroize();
    neg_bytes.zeroize();
    // r = hash_1(a || M || Z) mod q, hash_1(X) = SHA-512(0xFE || 0xFF * 31 || X).
    let mut prefix = [0xFFu8; 32];
    prefix[0] = 0xFE;
    let mut h1 = Sha512::new();
    h1.update(prefix);
    h1.update(a_bytes);
    h1.update(msg);
    h1.update(z);
    let mut r = Scalar::from_bytes_mod_order_wide(&h1.finalize().into());
    let r_pub = EdwardsPoint::mul_base(&r).compress().to_bytes();
    // h = SHA-512(R || A || M) mod q; s = r + h a.
    let mut h2 = Sha512::new();
    h2.update(r_pub);
    h2.update(a_pub);
    h2.update(msg);
    let h = Scalar::from_bytes_mod_order_wide(&h2.finalize().into());
    let s = r + h * a;
    a_bytes.zeroize();
    a.zeroize();
    r.zeroize();
    let mut sig = [0u8; 64];
    sig[..32].copy_from_slice(&r_pub);
    sig[32..].copy_from_slice(&s.to_bytes());
    sig
}

/// The Ed25519 public key (compressed) that verifies XEdDSA signatures of X25519 key `u`.
pub fn ed25519_public(u: &[u8; 32]) -> Result<[u8; 32], Error> {
    if !crate::wire::is_canonical_u(u) {
        return Err(Error::BadSignature);
    }
    let ed = MontgomeryPoint(*u).to_edwards(0).ok_or(Error::BadSignature)?;
    Ok(ed.compress().to_bytes())
}

/// Verifies an XEdDSA signature of `msg` under the X25519 public key `u`.
pub fn verify(u: &[u8; 32], msg: &[u8], sig: &[u8; 64]) -> Result<(), Error> {
    let a = ed25519_public(u)?;
    let vk = ed25519_dalek::VerifyingKey::from_bytes(&a).map_err(|_| Error::BadSignature)?;
    let sig = ed25519_dalek::Signature::from_bytes(sig);
    vk.verify_strict(msg, &sig).map_err(|_| Error::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use x25519_dalek::PublicKey;

    #[test]
    fn sign_verify_and_reject() {
        for i in 0u8..16 {
            let k = StaticSecret::from([i.wrapping_mul(37).wrapping_add(1); 32]);
            let u = *PublicKey::from(&k).as_bytes();
            let sig = sign(&k, b"message", &[i; 64]);
            verify(&u, b"message", &sig).unwrap();
            assert_eq!(verify(&u, b"messagf", &sig), Err(Error::BadSignature));
            let mut bad = sig;
            bad[40] ^= 1;
            assert_eq!(verify(&u, b"message", &bad), Err(Error::BadSignature));
        }
    }

    #[test]
    fn non_canonical_u_rejected() {
        let mut p = [0xffu8; 32];
        p[0] = 0xed;
        p[31] = 0x7f;
        assert!(!crate::wire::is_canonical_u(&p));
        p[0] = 0xec;
        assert!(crate::wire::is_canonical_u(&p));
    }
}
