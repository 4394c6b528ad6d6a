//! ML-KEM-1024 (FIPS 203) for PQXDH, as KEM jobs the caller runs wherever it wants.
//!
//! Like X25519 ([`crate::dh`]), no KEM operation runs inside a protocol step: an operation that
//! needs one returns [`KemJob`]s and is completed with their [`KemOutput`]s, in job order. A job
//! is a pure function of its inputs: the randomness FIPS 203 needs (the 64-byte key generation
//! seed d || z, the 32-byte encapsulation message m) is drawn from the caller's RNG in the first
//! phase and travels inside the job, so a worker thread (or another core) can run it with no RNG
//! of its own. [`KemJob::run`] computes it with libcrux-ml-kem (portable code, formally verified;
//! docs/ratchet.md says why this crate).
//!
//! - Key generation: `ML-KEM.KeyGen_internal(d, z)` from the seed; the seed is what we store
//!   (64 bytes instead of the 3,168-byte expanded key; FIPS 203 section 3.3 allows either).
//! - Encapsulation: `ML-KEM.Encaps_internal(ek, m)` after the encapsulation key check of FIPS 203
//!   section 7.2 (modulus check); a key that fails it is refused.
//! - Decapsulation: the key pair is regenerated from the seed, then `ML-KEM.Decaps_internal`.
//!   A ciphertext that was not made for this key gives the implicit-rejection key (FIPS 203
//!   section 6.3), never an error: the caller's key confirmation (the first message's tag) is
//!   what refuses it.

use libcrux_ml_kem::mlkem1024;
use zeroize::{Zeroize, Zeroizing};

use crate::Error;

/// Encapsulation (public) key length of ML-KEM-1024.
pub const PUBLIC_KEY_LEN: usize = 1568;
/// Ciphertext length of ML-KEM-1024.
pub const CIPHERTEXT_LEN: usize = 1568;
/// Key generation seed d || z.
pub const SEED_LEN: usize = 64;
/// Encapsulation randomness m.
pub const ENCAPS_RANDOMNESS_LEN: usize = 32;
/// Shared secret length.
pub const SHARED_SECRET_LEN: usize = 32;
/// EncodeKEM's type byte for ML-KEM-1024 (PQXDH section 2.5 leaves the byte to the application).
pub const KEM_TYPE_MLKEM1024: u8 = 0x0a;

/// An ML-KEM-1024 encapsulation key.
pub type KemPublicKey = Box<[u8; PUBLIC_KEY_LEN]>;
/// An ML-KEM-1024 ciphertext.
pub type KemCiphertext = Box<[u8; CIPHERTEXT_LEN]>;
/// A 32-byte shared secret; wipes itself on drop.
pub type SharedSecret = Zeroizing<[u8; SHARED_SECRET_LEN]>;

/// EncodeKEM(PK) of PQXDH: the type byte followed by the FIPS 203 encoding of the key.
pub fn encode_kem_public_key(pk: &[u8; PUBLIC_KEY_LEN]) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + PUBLIC_KEY_LEN);
    v.push(KEM_TYPE_MLKEM1024);
    v.extend_from_slice(pk);
    v
}

/// Which operation a job is (for labels and timing; results are checked against it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KemOp {
    KeyGen,
    Encapsulate,
    Decapsulate,
}

impl KemOp {
    pub fn name(self) -> &'static str {
        match self {
            KemOp::KeyGen => "keygen",
            KemOp::Encapsulate => "encaps",
            KemOp::Decapsulate => "decaps",
        }
    }
}

/// One ML-KEM-1024 operation with everything it needs (secrets wipe themselves on drop).
#[derive(Clone)]
pub enum KemJob {
    /// Key generation from the seed d || z: yields the encapsulation key.
    KeyGen { seed: Zeroizing<[u8; SEED_LEN]> },
    /// Encapsulation to `public_key` with the randomness m: yields ciphertext and shared secret.
    Encapsulate { public_key: KemPublicKey, randomness: Zeroizing<[u8; ENCAPS_RANDOMNESS_LEN]> },
    /// Decapsulation of `ciphertext` with the key pair of `seed`: yields the shared secret.
    Decapsulate { seed: Zeroizing<[u8; SEED_LEN]>, ciphertext: KemCiphertext },
}

impl core::fmt::Debug for KemJob {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "KemJob::{:?}", self.op())
    }
}

/// The result of one [`KemJob`].
pub enum KemOutput {
    PublicKey(KemPublicKey),
    Encapsulated { ciphertext: KemCiphertext, shared_secret: SharedSecret },
    SharedSecret(SharedSecret),
}

impl KemOutput {
    pub fn op(&self) -> KemOp {
        match self {
            KemOutput::PublicKey(_) => KemOp::KeyGen,
            KemOutput::Encapsulated { .. } => KemOp::Encapsulate,
            KemOutput::SharedSecret(_) => KemOp::Decapsulate,
        }
    }
}

impl core::fmt::Debug for KemOutput {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "KemOutput::{:?}", self.op())
    }
}

/// Wipes the expanded decapsulation key of a key pair (best effort: it is moved out first).
fn wipe(kp: mlkem1024::MlKem1024KeyPair) {
    let (sk, _pk) = kp.into_parts();
    let mut raw: [u8; 3168] = sk.into();
    raw.zeroize();
}

impl KemJob {
    pub fn op(&self) -> KemOp {
        match self {
            KemJob::KeyGen { .. } => KemOp::KeyGen,
            KemJob::Encapsulate { .. } => KemOp::Encapsulate,
            KemJob::Decapsulate { .. } => KemOp::Decapsulate,
        }
    }

    /// Runs the job on this thread with libcrux-ml-kem (portable implementation).
    pub fn run(&self) -> Result<KemOutput, Error> {
        match self {
            KemJob::KeyGen { seed } => {
                let kp = mlkem1024::generate_key_pair(**seed);
                let pk = Box::new(*kp.pk());
                wipe(kp);
                Ok(KemOutput::PublicKey(pk))
            }
            KemJob::Encapsulate { public_key, randomness } => {
                let pk = mlkem1024::MlKem1024PublicKey::from(&**public_key);
                if !mlkem1024::validate_public_key(&pk) {
                    return Err(Error::InvalidKemKey);
                }
                let (ct, ss) = mlkem1024::encapsulate(&pk, **randomness);
                Ok(KemOutput::Encapsulated { ciphertext: Box::new(*ct.as_slice()), shared_secret: Zeroizing::new(ss) })
            }
            KemJob::Decapsulate { seed, ciphertext } => {
                let kp = mlkem1024::generate_key_pair(**seed);
                let ct = mlkem1024::MlKem1024Ciphertext::from(&**ciphertext);
                let ss = Zeroizing::new(mlkem1024::decapsulate(kp.private_key(), &ct));
                wipe(kp);
                Ok(KemOutput::SharedSecret(ss))
            }
        }
    }
}

/// Synchronous KEM provider: runs a batch of jobs, one result per job, in order.
pub trait Kem {
    fn run(&mut self, jobs: &[KemJob]) -> Result<Vec<KemOutput>, Error>;
}

/// [`Kem`] on this thread's CPU.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuKem;

impl Kem for CpuKem {
    fn run(&mut self, jobs: &[KemJob]) -> Result<Vec<KemOutput>, Error> {
        jobs.iter().map(KemJob::run).collect()
    }
}

impl<F> Kem for F
where
    F: FnMut(&[KemJob]) -> Result<Vec<KemOutput>, Error>,
{
    fn run(&mut self, jobs: &[KemJob]) -> Result<Vec<KemOutput>, Error> {
        self(jobs)
    }
}

/// Checks a batch result against its jobs: the count, and each result of its job's kind.
pub(crate) fn check_kem_results(jobs: &[KemJob], results: &[KemOutput]) -> Result<(), Error> {
    if results.len() != jobs.len() {
        return Err(Error::KemResultCount { expected: jobs.len(), got: results.len() });
    }
    for (j, r) in jobs.iter().zip(results) {
        if j.op() != r.op() {
            return Err(Error::KemResultKind { expected: j.op().name(), got: r.op().name() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn unhex<const N: usize>(s: &str) -> [u8; N] {
        let v: Vec<u8> = (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect();
        v.try_into().unwrap()
    }

    #[test]
    fn roundtrip_and_implicit_rejection() {
        let seed = Zeroizing::new([3u8; 64]);
        let KemOutput::PublicKey(pk) = (KemJob::KeyGen { seed: seed.clone() }).run().unwrap() else { panic!() };
        let job = KemJob::Encapsulate { public_key: pk.clone(), randomness: Zeroizing::new([5u8; 32]) };
        let KemOutput::Encapsulated { ciphertext, shared_secret } = job.run().unwrap() else { panic!() };
        let KemOutput::SharedSecret(k) =
            (KemJob::Decapsulate { seed: seed.clone(), ciphertext: ciphertext.clone() }).run().unwrap()
        else {
            panic!()
        };
        assert_eq!(*k, *shared_secret);
        // another ciphertext: the implicit-rejection key, not the shared secret, not an error
        let mut bad = ciphertext.clone();
        bad[100] ^= 1;
        let KemOutput::SharedSecret(k2) = (KemJob::Decapsulate { seed, ciphertext: bad }).run().unwrap() else {
            panic!()
        };
        assert_ne!(*k2, *shared_secret);
    }

    /// FIPS 203 section 7.2: an encapsulation key with a coefficient >= q is refused.
    #[test]
    fn encapsulation_key_modulus_check() {
        let mut pk = Box::new([0u8; PUBLIC_KEY_LEN]);
        // first 12-bit coefficient = 0xFFF >= 3329
        pk[0] = 0xff;
        pk[1] = 0x0f;
        let job = KemJob::Encapsulate { public_key: pk, randomness: Zeroizing::new([0u8; 32]) };
        assert!(matches!(job.run(), Err(Error::InvalidKemKey)));
    }

    /// The first ML-KEM-1024 key generation case (tcId 51) of NIST's ACVP ML-KEM-keyGen-FIPS203
    /// vector set (as shipped in the kyber-py 1.2.0 sdist, assets/ML-KEM-keyGen-FIPS203): the
    /// seed gives an encapsulation key whose SHA-256 is the one of the expected `ek`. The whole
    /// set (key generation, encapsulation, decapsulation) runs in tests/mlkem_acvp.rs.
    #[test]
    fn acvp_keygen_first_mlkem1024_case_digest() {
        let d: [u8; 32] = unhex(ACVP_TC51_D);
        let z: [u8; 32] = unhex(ACVP_TC51_Z);
        let mut seed = Zeroizing::new([0u8; 64]);
        seed[..32].copy_from_slice(&d);
        seed[32..].copy_from_slice(&z);
        let KemOutput::PublicKey(pk) = (KemJob::KeyGen { seed }).run().unwrap() else { panic!() };
        let got: String = Sha256::digest(&pk[..]).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, ACVP_TC51_EK_SHA256);
    }

    const ACVP_TC51_D: &str = "49ac8b99bb1e6a8ea818261f8be68bdeaa52897e7ec6c40b530bc760ab77dce3";
    const ACVP_TC51_Z: &str = "99e3246884181f8e1dd44e0c7629093330221fd67d9b7d6e1510b2dbad8762f7";
    const ACVP_TC51_EK_SHA256: &str = "62fccf5fdf805b110670b39cd5e25b1811172961ea4047bfbd589e323ce7cfbc";
}
