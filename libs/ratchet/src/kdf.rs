//! The Double Ratchet's recommended cryptographic functions (Signal spec, section 5.2), built
//! from RustCrypto crates only:
//! - KDF_RK(rk, dh_out): HKDF-SHA256, salt = rk, IKM = dh_out, info = [`ROOT_INFO`], 64 bytes
//!   -> (new root key, chain key).
//! - KDF_CK(ck): HMAC-SHA256(ck, 0x01) = message key, HMAC-SHA256(ck, 0x02) = next chain key.
//! - ENCRYPT(mk, pt, ad): HKDF-SHA256(salt = 32 zero bytes, IKM = mk, info = [`MESSAGE_INFO`])
//!   -> 80 bytes = encryption key (32) || authentication key (32) || IV (16); AES-256-CBC with
//!   PKCS#7; tag = the full 32-byte HMAC-SHA256(authentication key, ad || ciphertext), appended.
//! - X3DH KDF(km): HKDF-SHA256(salt = 32 zero bytes, IKM = 32 x 0xFF || km, info = [`X3DH_INFO`]).

use aes::Aes256;
use cbc::cipher::{block_padding::Pkcs7, BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

use crate::Error;

type HmacSha256 = Hmac<Sha256>;

/// HKDF info of KDF_RK.
pub const ROOT_INFO: &[u8] = b"XousChat Root";
/// HKDF info of ENCRYPT's key derivation.
pub const MESSAGE_INFO: &[u8] = b"XousChat Message";
/// HKDF info of the X3DH key derivation.
pub const X3DH_INFO: &[u8] = b"XousChat X3DH";
/// HKDF info of the PQXDH key derivation (PQXDH section 2.1: names the application, the curve,
/// the hash and the KEM; at least 8 bytes).
pub const PQXDH_INFO: &[u8] = b"XousChat_CURVE25519_SHA-256_ML-KEM-1024";
/// Length of the authentication tag appended to every ciphertext (the full HMAC-SHA256).
pub const TAG_LEN: usize = 32;
/// AES block size: every ciphertext (before the tag) is a non-zero multiple of it.
pub const BLOCK_LEN: usize = 16;

/// A 32-byte secret that wipes itself.
pub type Key32 = Zeroizing<[u8; 32]>;

/// KDF_RK: returns (new root key, new chain key).
pub fn kdf_rk(rk: &[u8; 32], dh_out: &[u8; 32]) -> (Key32, Key32) {
    let hk = Hkdf::<Sha256>::new(Some(rk), dh_out);
    let mut okm = Zeroizing::new([0u8; 64]);
    hk.expand(ROOT_INFO, &mut okm[..]).expect("64 <= 255*32");
    let (a, b) = split64(&okm);
    (a, b)
}

/// KDF_CK: returns (next chain key, message key).
pub fn kdf_ck(ck: &[u8; 32]) -> (Key32, Key32) {
    let mk = hmac32(ck, &[0x01]);
    let next = hmac32(ck, &[0x02]);
    (next, mk)
}

/// X3DH: SK = HKDF(0xFF*32 || DH1 || DH2 || DH3 [|| DH4]).
pub fn x3dh_kdf(dhs: &[&[u8; 32]]) -> Key32 {
    sk_kdf(dhs, None, X3DH_INFO)
}

/// PQXDH (section 3.3): SK = HKDF(salt = 0^32, IKM = 0xFF*32 || DH1 || DH2 || DH3 [|| DH4] ||
/// SS, info = [`PQXDH_INFO`]), 32 bytes.
pub fn pqxdh_kdf(dhs: &[&[u8; 32]], ss: &[u8; 32]) -> Key32 {
    sk_kdf(dhs, Some(ss), PQXDH_INFO)
}

fn sk_kdf(dhs: &[&[u8; 32]], ss: Option<&[u8; 32]>, info: &[u8]) -> Key32 {
    let mut ikm = Zeroizing::new(Vec::with_capacity(32 * (dhs.len() + 2)));
    ikm.extend_from_slice(&[0xFF; 32]);
    for d in dhs {
        ikm.extend_from_slice(&d[..]);
    }
    if let Some(ss) = ss {
        ikm.extend_from_slice(ss);
    }
    let hk = Hkdf::<Sha256>::new(Some(&[0u8; 32]), &ikm);
    let mut sk = Zeroizing::new([0u8; 32]);
    hk.expand(info, &mut sk[..]).expect("32 <= 255*32");
    sk
}

fn hmac32(key: &[u8; 32], data: &[u8]) -> Key32 {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&mac.finalize().into_bytes());
    out
}

fn split64(okm: &[u8; 64]) -> (Key32, Key32) {
    let mut a = Zeroizing::new([0u8; 32]);
    let mut b = Zeroizing::new([0u8; 32]);
    a.copy_from_slice(&okm[..32]);
    b.copy_from_slice(&okm[32..]);
    (a, b)
}

struct AeadKeys {
    enc: [u8; 32],
    auth: [u8; 32],
    iv: [u8; 16],
}

impl Drop for AeadKeys {
    fn drop(&mut self) {
        self.enc.zeroize();
        self.auth.zeroize();
        self.iv.zeroize();
    }
}

fn aead_keys(mk: &[u8; 32]) -> AeadKeys {
    let hk = Hkdf::<Sha256>::new(Some(&[0u8; 32]), mk);
    let mut okm = Zeroizing::new([0u8; 80]);
    hk.expand(MESSAGE_INFO, &mut okm[..]).expect("80 <= 255*32");
    let mut k = AeadKeys { enc: [0; 32], auth: [0; 32], iv: [0; 16] };
    k.enc.copy_from_slice(&okm[..32]);
    k.auth.copy_from_slice(&okm[32..64]);
    k.iv.copy_from_slice(&okm[64..80]);
    k
}

/// ENCRYPT: AES-256-CBC(PKCS#7) ciphertext || HMAC-SHA256(ad || ciphertext).
pub fn encrypt(mk: &[u8; 32], plaintext: &[u8], ad: &[u8]) -> Vec<u8> {
    let k = aead_keys(mk);
    crate::pause();
    let mut out = cbc::Encryptor::<Aes256>::new(&k.enc.into(), &k.iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plaintext);
    let mut mac = <HmacSha256 as Mac>::new_from_slice(&k.auth).expect("any key length");
    mac.update(ad);
    mac.update(&out);
    out.extend_from_slice(&mac.finalize().into_bytes());
    out
}

/// DECRYPT: verifies the tag (constant time) before touching the ciphertext.
pub fn decrypt(mk: &[u8; 32], ciphertext_and_tag: &[u8], ad: &[u8]) -> Result<Zeroizing<Vec<u8>>, Error> {
    if ciphertext_and_tag.len() < BLOCK_LEN + TAG_LEN {
        return Err(Error::Truncated {
            what: "ciphertext",
            needed: BLOCK_LEN + TAG_LEN,
            got: ciphertext_and_tag.len(),
        });
    }
    let (ct, tag) = ciphertext_and_tag.split_at(ciphertext_and_tag.len() - TAG_LEN);
    if ct.len() % BLOCK_LEN != 0 {
        return Err(Error::Malformed("ciphertext length is not a multiple of the AES block size"));
    }
    let k = aead_keys(mk);
    crate::pause();
    let mut mac = <HmacSha256 as Mac>::new_from_slice(&k.auth).expect("any key length");
    mac.update(ad);
    mac.update(ct);
    mac.verify_slice(tag).map_err(|_| Error::Authentication)?;
    crate::pause();
    let pt = cbc::Decryptor::<Aes256>::new(&k.enc.into(), &k.iv.into())
        .decrypt_padded_vec_mut::<Pkcs7>(ct)
        // Authenticated yet badly padded: only a peer with the key can produce this.
        .map_err(|_| Error::Malformed("bad PKCS#7 padding in an authenticated ciphertext"))?;
    Ok(Zeroizing::new(pt))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5869 test case 1 through the same HKDF crate (outside reference for the KDF wiring).
    #[test]
    fn hkdf_rfc5869_case1() {
        let ikm = [0x0bu8; 22];
        let salt: Vec<u8> = (0u8..=12).collect();
        let info: Vec<u8> = (0xf0u8..=0xf9).collect();
        let hk = Hkdf::<Sha256>::new(Some(&salt), &ikm);
        let mut okm = [0u8; 42];
        hk.expand(&info, &mut okm).unwrap();
        assert_eq!(hex(&okm), "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
    }

    /// RFC 4231 test case 2 (HMAC-SHA256, key "Jefe").
    #[test]
    fn hmac_rfc4231_case2() {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn aead_roundtrip_and_tamper() {
        let mk = [7u8; 32];
        for len in [0usize, 1, 15, 16, 17, 100] {
            let pt = vec![0x5a; len];
            let c = encrypt(&mk, &pt, b"ad");
            assert_eq!(c.len(), (len / 16 + 1) * 16 + TAG_LEN);
            assert_eq!(&decrypt(&mk, &c, b"ad").unwrap()[..], &pt[..]);
            assert_eq!(decrypt(&mk, &c, b"ae"), Err(Error::Authentication));
        }
    }

    pub(crate) use hex::encode as hex;
}
