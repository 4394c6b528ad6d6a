//! Where X25519 and randomness come from.
//!
//! - Randomness: any `rand_core::CryptoRngCore` (the TRNG service's client in the app, `OsRng`
//!   in tests). Only `try_fill_bytes` is used, so a failing source (health tests) is an error,
//!   never silent.
//! - X25519: a [`DhJob`] is one `X25519(secret, u)`. Key generation is a job too: the public key
//!   of a fresh secret is `X25519(secret, 9)` ([`DhJob::public_key`]). Operations that need
//!   X25519 return the jobs they need; the caller runs them however it likes (the engine service,
//!   asynchronously, off the UI thread) and hands the 32-byte results back. [`Dh`] is the
//!   synchronous shortcut for callers that can block (tests, Bob, tools).

use rand_core::CryptoRngCore;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::Error;

/// The X25519 base point (u = 9).
pub const BASEPOINT: [u8; 32] = {
    let mut b = [0u8; 32];
    b[0] = 9;
    b
};

/// What a job is for (lets a UI label and time them; does not change the computation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DhPurpose {
    /// Public key of a freshly generated secret (`X25519(secret, 9)`).
    PublicKey,
    /// X3DH DH1..DH4 (1-based index).
    X3dh(u8),
    /// DH ratchet: DH(our old ratchet key, their new ratchet key) -> receiving chain.
    RatchetReceive,
    /// DH ratchet: DH(our new ratchet key, their ratchet key) -> sending chain.
    RatchetSend,
}

/// One X25519 computation to run: `X25519(secret, public)`. The secret wipes itself on drop.
#[derive(Clone)]
pub struct DhJob {
    pub secret: StaticSecret,
    pub public: [u8; 32],
    pub purpose: DhPurpose,
}

impl core::fmt::Debug for DhJob {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DhJob").field("public", &self.public).field("purpose", &self.purpose).finish_non_exhaustive()
    }
}

impl DhJob {
    /// The job that yields `secret`'s public key.
    pub fn public_key(secret: &StaticSecret) -> Self {
        DhJob { secret: secret.clone(), public: BASEPOINT, purpose: DhPurpose::PublicKey }
    }
    pub fn agree(secret: &StaticSecret, public: &PublicKey, purpose: DhPurpose) -> Self {
        DhJob { secret: secret.clone(), public: *public.as_bytes(), purpose }
    }
    /// The secret as bytes (for a provider that ships it elsewhere, e.g. to the engine service).
    pub fn secret_bytes(&self) -> Zeroizing<[u8; 32]> {
        Zeroizing::new(self.secret.to_bytes())
    }
    /// Reference computation with x25519-dalek.
    pub fn run_dalek(&self) -> DhOutput {
        let shared = self.secret.diffie_hellman(&PublicKey::from(self.public));
        Zeroizing::new(*shared.as_bytes())
    }
}

/// A 32-byte X25519 result; wipes itself on drop.
pub type DhOutput = Zeroizing<[u8; 32]>;

/// Synchronous X25519 provider: runs a batch of jobs and returns one result per job, in order.
pub trait Dh {
    fn run(&mut self, jobs: &[DhJob]) -> Result<Vec<DhOutput>, Error>;
}

/// [`Dh`] on the CPU with x25519-dalek.
#[derive(Debug, Default, Clone, Copy)]
pub struct DalekDh;

impl Dh for DalekDh {
    fn run(&mut self, jobs: &[DhJob]) -> Result<Vec<DhOutput>, Error> {
        Ok(jobs.iter().map(DhJob::run_dalek).collect())
    }
}

impl<F> Dh for F
where
    F: FnMut(&[DhJob]) -> Result<Vec<DhOutput>, Error>,
{
    fn run(&mut self, jobs: &[DhJob]) -> Result<Vec<DhOutput>, Error> {
        self(jobs)
    }
}

/// A fresh X25519 secret from `rng` (errors from the source are passed on).
pub fn generate_secret(rng: &mut dyn CryptoRngCore) -> Result<StaticSecret, Error> {
    let mut b = Zeroizing::new([0u8; 32]);
    rng.try_fill_bytes(&mut b[..]).map_err(|e| Error::Rng(e.to_string()))?;
    Ok(StaticSecret::from(*b))
}

/// Checks a batch result against its jobs: count, and no all-zero output (low-order public key).
pub(crate) fn check_results(jobs: usize, results: &[DhOutput]) -> Result<(), Error> {
    if results.len() != jobs {
        return Err(Error::DhResultCount { expected: jobs, got: results.len() });
    }
    // Constant-time enough: the OR over all bytes does not branch on individual bytes.
    for r in results {
        let acc = r.iter().fold(0u8, |a, b| a | b);
        if acc == 0 {
            return Err(Error::InvalidPublicKey);
        }
    }
    Ok(())
}

/// A key pair whose public half is known (computed through a [`DhJob::public_key`]).
#[derive(Clone)]
pub struct KeyPair {
    pub secret: StaticSecret,
    pub public: PublicKey,
}

impl core::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KeyPair").field("public", &self.public).finish_non_exhaustive()
    }
}

impl KeyPair {
    /// Generate with `rng` and compute the public key with `dh` (blocking).
    pub fn generate(rng: &mut dyn CryptoRngCore, dh: &mut dyn Dh) -> Result<Self, Error> {
        let secret = generate_secret(rng)?;
        let out = dh.run(&[DhJob::public_key(&secret)])?;
        check_results(1, &out)?;
        Ok(KeyPair { public: PublicKey::from(*out[0]), secret })
    }
    /// From a secret and its already known public key.
    pub fn from_parts(secret: StaticSecret, public: PublicKey) -> Self {
        KeyPair { secret, public }
    }
    /// From a secret alone, public key computed with x25519-dalek on the CPU.
    pub fn from_secret(secret: StaticSecret) -> Self {
        let public = PublicKey::from(&secret);
        KeyPair { secret, public }
    }
}
