//! The one error type of the crate. Every failure is a value (no panics on bad input), and
//! every failing operation leaves the session exactly as it was.

use core::fmt;

/// Everything that can go wrong. Messages name the limit or the field involved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input ended before a field it must contain.
    Truncated { what: &'static str, needed: usize, got: usize },
    /// The input is longer than this crate accepts.
    Oversized { what: &'static str, len: usize, max: usize },
    /// A field holds a value the format does not allow.
    Malformed(&'static str),
    /// The first byte names no message type we know.
    UnknownMessageType(u8),
    /// The authentication tag did not verify (wrong key, tampered header or body, or a message
    /// of another session).
    Authentication,
    /// The message was already decrypted (or its key was dropped): replay.
    Duplicate { ratchet_key_prefix: [u8; 4], n: u32 },
    /// The header asks to skip more message keys than MAX_SKIP allows in one chain.
    TooManySkipped { skip: u64, max: u32 },
    /// A chain counter would overflow.
    CounterOverflow,
    /// This session cannot send yet (a responder sends only after the first message).
    NoSendingChain,
    /// A Diffie-Hellman output was all zero (the peer sent a low-order point).
    InvalidPublicKey,
    /// The signed prekey's signature does not verify under the bundle's identity key.
    BadSignature,
    /// A post-quantum prekey's signature does not verify under the bundle's identity key.
    BadPqSignature,
    /// The bundle carries no post-quantum prekey, and PQXDH requires one (Signal's clients
    /// refuse such a bundle; so do we: no silent fall-back to X3DH).
    MissingPqPreKey,
    /// An ML-KEM encapsulation key fails the FIPS 203 section 7.2 modulus check.
    InvalidKemKey,
    /// A pending step was completed with the wrong number of KEM results.
    KemResultCount { expected: usize, got: usize },
    /// A KEM result is not of its job's kind (e.g. a shared secret for a key generation).
    KemResultKind { expected: &'static str, got: &'static str },
    /// The prekey message names a signed or one-time prekey we do not hold (any more).
    UnknownPreKey(&'static str),
    /// A prekey message whose X3DH header does not belong to this session.
    WrongSession,
    /// The random source failed (for example a TRNG whose health tests failed).
    Rng(String),
    /// The DH provider failed.
    Dh(String),
    /// A pending step was completed with the wrong number of DH results.
    DhResultCount { expected: usize, got: usize },
    /// A pending step was completed after the session changed underneath it.
    StalePending,
    /// A serialized state is of a version this build does not read.
    StateVersion { found: u16, supported: u16 },
    /// A serialized state is damaged (bad magic, checksum or field).
    StateCorrupt(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { what, needed, got } => {
                write!(f, "truncated {what}: needs at least {needed} bytes, got {got}")
            }
            Error::Oversized { what, len, max } => write!(f, "oversized {what}: {len} bytes, at most {max} allowed"),
            Error::Malformed(what) => write!(f, "malformed input: {what}"),
            Error::UnknownMessageType(t) => write!(f, "unknown message type byte 0x{t:02x}"),
            Error::Authentication => write!(f, "authentication failed (tampered, truncated, or not for this session)"),
            Error::Duplicate { ratchet_key_prefix, n } => write!(
                f,
                "duplicate message (replay): chain {:02x}{:02x}{:02x}{:02x}.. message {n} was already received",
                ratchet_key_prefix[0], ratchet_key_prefix[1], ratchet_key_prefix[2], ratchet_key_prefix[3]
            ),
            Error::TooManySkipped { skip, max } => {
                write!(f, "message would skip {skip} message keys, more than MAX_SKIP = {max}")
            }
            Error::CounterOverflow => write!(f, "message counter overflow"),
            Error::NoSendingChain => {
                write!(f, "this session has no sending chain yet (receive the first message first)")
            }
            Error::InvalidPublicKey => write!(f, "invalid public key (Diffie-Hellman output is all zero)"),
            Error::BadSignature => write!(f, "signed prekey signature does not verify"),
            Error::BadPqSignature => write!(f, "post-quantum prekey signature does not verify"),
            Error::MissingPqPreKey => {
                write!(f, "prekey bundle has no post-quantum prekey: PQXDH requires one (no fall-back to X3DH)")
            }
            Error::InvalidKemKey => write!(f, "ML-KEM-1024 public key fails the FIPS 203 modulus check"),
            Error::KemResultCount { expected, got } => {
                write!(f, "pending step completed with {got} KEM results, {expected} expected")
            }
            Error::KemResultKind { expected, got } => {
                write!(f, "KEM result of the wrong kind: {got}, the job was {expected}")
            }
            Error::UnknownPreKey(which) => write!(f, "unknown {which} (already used or never issued)"),
            Error::WrongSession => write!(f, "prekey message does not belong to this session"),
            Error::Rng(e) => write!(f, "random source failed: {e}"),
            Error::Dh(e) => write!(f, "Diffie-Hellman provider failed: {e}"),
            Error::DhResultCount { expected, got } => {
                write!(f, "pending step completed with {got} DH results, {expected} expected")
            }
            Error::StalePending => write!(f, "pending step is stale: the session changed since it was started"),
            Error::StateVersion { found, supported } => {
                write!(f, "state is version {found}, this build reads versions 1 to {supported}")
            }
            Error::StateCorrupt(what) => write!(f, "corrupted state: {what}"),
        }
    }
}

impl std::error::Error for Error {}
