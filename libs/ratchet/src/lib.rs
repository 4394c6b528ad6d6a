//! Signal's PQXDH (with ML-KEM-1024), X3DH and Double Ratchet with the specifications'
//! recommended primitives, over pluggable X25519, ML-KEM and randomness, with no Xous dependency.
//!
//! - PQXDH ([`pqxdh`]): X3DH plus one ML-KEM-1024 encapsulation to a signed last-resort or
//!   one-time post-quantum prekey; SK = HKDF(0xFF^32 || DH1 || DH2 || DH3 [|| DH4] || SS).
//!   ML-KEM runs as [`KemJob`]s the caller executes ([`kem`]), like the X25519 jobs below.
//!
//! - KDF_RK = HKDF-SHA256, KDF_CK = HMAC-SHA256 with 0x01 (message key) / 0x02 (chain key),
//!   ENCRYPT = AES-256-CBC + HMAC-SHA256 (full 32-byte tag), keys from HKDF ([`kdf`]).
//! - X3DH with X25519 identity keys, an XEdDSA-signed prekey and one-time prekeys ([`x3dh`],
//!   [`xeddsa`]).
//! - Skipped message keys with MAX_SKIP per chain and a cap on stored keys ([`Limits`]); the
//!   header is bound as associated data.
//! - A message that fails to decrypt (tampered, replayed, truncated, too far ahead, ...) leaves
//!   the session exactly as it was: every step is computed on copies and committed only after the
//!   tag verified.
//! - State serialization is versioned and checksummed ([`state`]); secrets are zeroized on drop.
//! - Byte-exact with PyPI `DoubleRatchet` 1.3.0 and interoperating with `x3dh` 1.3.0 (tests in
//!   `tests/interop.rs`, docs/ratchet.md).
//!
//! # Where X25519 and randomness come from: the two-phase API
//!
//! Randomness is any `rand_core::CryptoRngCore` (the TRNG service client in the app, `OsRng` in
//! tests). X25519 is never called inside the crate: an operation that needs it returns a pending
//! step listing [`DhJob`]s (`X25519(secret, u)`; a key generation is `X25519(secret, 9)`). The
//! caller runs the jobs wherever it wants (on the engine service, asynchronously, while the UI
//! keeps drawing) and completes the step with the 32-byte results in job order:
//!
//! ```
//! use ratchet::{x3dh, Decrypted, DalekDh, Dh, KeyPair, Responder};
//! use rand_core::OsRng;
//! # fn main() -> Result<(), ratchet::Error> {
//! let mut dh = DalekDh; // tests: x25519-dalek; the app: the engine service
//! let mut bob = Responder::generate(KeyPair::generate(&mut OsRng, &mut dh)?, 4, &mut OsRng, &mut dh)?;
//! let alice_id = KeyPair::generate(&mut OsRng, &mut dh)?;
//!
//! // Alice: X3DH + first ratchet key in one batch of X25519 jobs.
//! let pending = x3dh::initiate(&alice_id, &bob.bundle(), &mut OsRng)?;
//! let results = dh.run(pending.jobs())?;          // <- submit asynchronously in the app
//! let mut alice = pending.complete(&results)?;
//! let wire = alice.encrypt(b"hello Bob")?;         // no DH: never waits
//!
//! // Bob accepts the prekey message (X3DH + DH ratchet step, again one batch).
//! let pending = bob.accept(&wire, &mut OsRng)?;
//! let results = dh.run(pending.jobs())?;
//! let (mut bob_session, hello) = bob.complete_accept(pending, &results)?;
//! assert_eq!(&hello[..], b"hello Bob");
//!
//! // A reply carries a new ratchet key: Alice's decrypt needs a DH ratchet step.
//! let reply = bob_session.encrypt(b"hi Alice")?;
//! match alice.decrypt(&reply, &mut OsRng)? {
//!     Decrypted::Plaintext(p) => unreachable!("a new ratchet key always needs DH: {p:?}"),
//!     Decrypted::NeedsDh(step) => {
//!         let results = dh.run(step.jobs())?;     // 3 jobs, any thread, any time later
//!         let text = alice.complete_decrypt(step, &results)?;
//!         assert_eq!(&text[..], b"hi Alice");
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Rules of the pending steps:
//! - Phase one draws the new secrets (from the RNG) and checks everything that can be checked
//!   without DH (format, lengths, replays, MAX_SKIP), so bad input costs no DH.
//! - Nothing changes until the completion succeeds. A completion whose tag fails leaves the
//!   session unchanged; one given the wrong number of results, or an all-zero result (low-order
//!   point), is refused.
//! - A [`PendingDecrypt`] belongs to the session state it was made from: if the session changed
//!   in between (another message decrypted or sent) it is refused with [`Error::StalePending`]
//!   and the message must be decrypted again. Process one session's incoming messages in order.
//! - `encrypt` never needs DH (the Double Ratchet's DH happens on receipt), so sending never
//!   waits.
//! - `*_with` variants run both phases with a blocking [`Dh`] for callers that may block.
//!
//! # Pauses on a single core
//!
//! The symmetric part of a DH ratchet step (two KDF_RK, the chain, the message's keys, tag and
//! AES) is a few milliseconds of software SHA-256 on a 100 MHz RV32 without preemption
//! priorities, during which no other thread of the device runs unless the calculating one lets
//! it. A process may name a function ([`set_pause`], once) that the crate calls between the
//! pieces of a step, of a message's decryption and of an encryption (each piece at most about
//! one KDF or one AES pass): on the device, a `yield` that lets whatever woke meanwhile run
//! first. Without it nothing is called.

pub mod dh;
pub mod error;
pub mod kdf;
pub mod kem;
pub mod pqxdh;
pub mod session;
pub mod state;
pub mod wire;
pub mod x3dh;
pub mod xeddsa;

pub use dh::{generate_secret, DalekDh, Dh, DhJob, DhOutput, DhPurpose, KeyPair, BASEPOINT};
pub use error::Error;
pub use kem::{CpuKem, Kem, KemJob, KemOp, KemOutput};
pub use pqxdh::{PendingPqPreKeys, PqxdhBundle, SignedPqPreKey};
pub use session::{Decrypted, Limits, PendingDecrypt, PendingInit, Session, MAX_SKIP, MAX_STORED_KEYS};
pub use state::STATE_VERSION;
pub use wire::{
    Envelope, Header, PqHeader, PqPreKeyMessage, PreKeyMessage, RatchetMessage, X3dhHeader, MAX_MESSAGE_LEN,
    MAX_PLAINTEXT_LEN,
};
pub use x3dh::{PendingAccept, PendingInitiate, PreKeyBundle, Responder};

static PAUSE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Names the function called between the pieces of a long operation (above, "Pauses on a
/// single core"); once per process. Returns false (and changes nothing) if one was named.
pub fn set_pause(f: fn()) -> bool {
    PAUSE.set(f).is_ok()
}

/// Between two pieces of a long operation: the process's pause, if it named one.
pub(crate) fn pause() {
    if let Some(f) = PAUSE.get() {
        f()
    }
}

/// Re-exported so callers name the same types.
pub use rand_core;
pub use x25519_dalek;
