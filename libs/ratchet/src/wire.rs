//! Wire format (docs/ratchet.md has the same tables).
//!
//! Ratchet message (type 0x01):
//! ```text
//! offset size
//!   0     1   type = 0x01
//!   1    32   sender's ratchet public key (X25519 u, little endian)
//!  33     4   PN: length of the sender's previous sending chain (u32, big endian)
//!  37     4   N: message number in the current sending chain (u32, big endian)
//!  41   16k   AES-256-CBC ciphertext (PKCS#7), k >= 1
//!  ..    32   HMAC-SHA256 tag over AD || header || ciphertext
//! ```
//! The header is bytes 0..41 (type byte included); the associated data given to ENCRYPT is the
//! session's AD (X3DH: Encode(IK_A) || Encode(IK_B)) followed by the header.
//!
//! Prekey message (type 0x02): the X3DH header, then a whole ratchet message.
//! ```text
//!   0     1   type = 0x02
//!   1     1   flags: bit 0 = a one-time prekey is used; other bits must be zero
//!   2    32   IK_A (initiator's identity key, X25519)
//!  34    32   EK_A (initiator's ephemeral key)
//!  66    32   SPK_B (the responder's signed prekey used)
//!  98    32   OPK_B (the one-time prekey used; present only if flags bit 0)
//!  ..         ratchet message (type 0x01 ...)
//! ```
//!
//! PQXDH prekey message (type 0x04): the X3DH fields, the post-quantum prekey's identifier and
//! the ML-KEM-1024 ciphertext, then a whole ratchet message.
//! ```text
//!   0     1   type = 0x04
//!   1     1   flags: bit 0 = a one-time (curve) prekey is used; bit 1 = the PQ prekey is a
//!             one-time PQ prekey (else the last-resort one); other bits must be zero
//!   2    32   IK_A
//!  34    32   EK_A
//!  66    32   SPK_B
//!  98    32   OPK_B (only if flags bit 0)
//!  ..     4   PQ prekey identifier (u32, big endian)
//!  ..  1568   ML-KEM-1024 ciphertext CT
//!  ..         ratchet message (type 0x01 ...)
//! ```

use crate::kem::{KemCiphertext, CIPHERTEXT_LEN};
use crate::Error;

pub const TYPE_RATCHET: u8 = 0x01;
pub const TYPE_PREKEY: u8 = 0x02;
pub const TYPE_PQ_PREKEY: u8 = 0x04;
/// Header length of a ratchet message (type + key + PN + N).
pub const HEADER_LEN: usize = 1 + 32 + 4 + 4;
/// Largest plaintext `encrypt` accepts.
pub const MAX_PLAINTEXT_LEN: usize = 16 * 1024;
/// Largest ratchet message: header + padded plaintext + tag.
pub const MAX_RATCHET_MESSAGE_LEN: usize = HEADER_LEN + (MAX_PLAINTEXT_LEN / 16 + 1) * 16 + crate::kdf::TAG_LEN;
/// Largest message of any type on the wire (a PQXDH prekey message with a one-time prekey).
pub const MAX_MESSAGE_LEN: usize = 2 + 4 * 32 + 4 + CIPHERTEXT_LEN + MAX_RATCHET_MESSAGE_LEN;
/// Smallest ratchet message (one AES block).
pub const MIN_RATCHET_MESSAGE_LEN: usize = HEADER_LEN + crate::kdf::BLOCK_LEN + crate::kdf::TAG_LEN;

/// True when `u` is a canonical field element (u < 2^255 - 19). X25519 ignores bit 255 and
/// reduces mod p (RFC 7748, section 5), so a non-canonical encoding would give a second wire
/// form of the same key: the EK_A of a prekey message is not in the AD, and such a twin would
/// be accepted. Every key on the wire must be canonical.
pub fn is_canonical_u(u: &[u8; 32]) -> bool {
    if u[31] & 0x80 != 0 {
        return false;
    }
    let all_ff = u[1..31].iter().all(|&b| b == 0xff);
    !(u[31] == 0x7f && all_ff && u[0] >= 0xed)
}

fn canonical(u: [u8; 32], what: &'static str) -> Result<[u8; 32], Error> {
    if is_canonical_u(&u) {
        Ok(u)
    } else {
        Err(Error::Malformed(what))
    }
}

/// The Double Ratchet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub ratchet_key: [u8; 32],
    pub pn: u32,
    pub n: u32,
}

impl Header {
    /// The exact header bytes (also the header part of the associated data).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0] = TYPE_RATCHET;
        h[1..33].copy_from_slice(&self.ratchet_key);
        h[33..37].copy_from_slice(&self.pn.to_be_bytes());
        h[37..41].copy_from_slice(&self.n.to_be_bytes());
        h
    }
}

/// A parsed ratchet message (borrowing its input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatchetMessage<'a> {
    pub header: Header,
    /// The header bytes exactly as received.
    pub header_bytes: &'a [u8],
    /// Ciphertext followed by the 32-byte tag.
    pub ciphertext: &'a [u8],
}

impl<'a> RatchetMessage<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Self, Error> {
        if b.is_empty() {
            return Err(Error::Truncated { what: "ratchet message", needed: MIN_RATCHET_MESSAGE_LEN, got: 0 });
        }
        if b[0] != TYPE_RATCHET {
            return Err(Error::UnknownMessageType(b[0]));
        }
        if b.len() < MIN_RATCHET_MESSAGE_LEN {
            return Err(Error::Truncated { what: "ratchet message", needed: MIN_RATCHET_MESSAGE_LEN, got: b.len() });
        }
        if b.len() > MAX_RATCHET_MESSAGE_LEN {
            return Err(Error::Oversized { what: "ratchet message", len: b.len(), max: MAX_RATCHET_MESSAGE_LEN });
        }
        if (b.len() - HEADER_LEN - crate::kdf::TAG_LEN) % crate::kdf::BLOCK_LEN != 0 {
            return Err(Error::Malformed("ciphertext length is not a multiple of the AES block size"));
        }
        let ratchet_key = canonical(b[1..33].try_into().expect("32 bytes"), "non-canonical ratchet public key")?;
        let pn = u32::from_be_bytes(b[33..37].try_into().expect("4 bytes"));
        let n = u32::from_be_bytes(b[37..41].try_into().expect("4 bytes"));
        Ok(RatchetMessage {
            header: Header { ratchet_key, pn, n },
            header_bytes: &b[..HEADER_LEN],
            ciphertext: &b[HEADER_LEN..],
        })
    }

    pub fn encode(header: &Header, ciphertext: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER_LEN + ciphertext.len());
        v.extend_from_slice(&header.encode());
        v.extend_from_slice(ciphertext);
        v
    }
}

/// The X3DH part of a prekey message: what the responder needs to derive the shared secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct X3dhHeader {
    pub identity_key: [u8; 32],
    pub ephemeral_key: [u8; 32],
    pub signed_prekey: [u8; 32],
    pub one_time_prekey: Option<[u8; 32]>,
}

impl X3dhHeader {
    pub fn encoded_len(&self) -> usize {
        2 + 3 * 32 + if self.one_time_prekey.is_some() { 32 } else { 0 }
    }
    pub fn encode_into(&self, v: &mut Vec<u8>) {
        v.push(TYPE_PREKEY);
        v.push(u8::from(self.one_time_prekey.is_some()));
        v.extend_from_slice(&self.identity_key);
        v.extend_from_slice(&self.ephemeral_key);
        v.extend_from_slice(&self.signed_prekey);
        if let Some(o) = &self.one_time_prekey {
            v.extend_from_slice(o);
        }
    }
}

/// The post-quantum part of a PQXDH prekey message: which of the responder's PQ prekeys was
/// used (its kind and identifier) and the ML-KEM-1024 ciphertext to it.
#[derive(Clone, PartialEq, Eq)]
pub struct PqHeader {
    /// True for a one-time PQ prekey, false for the last-resort (signed) PQ prekey.
    pub one_time: bool,
    pub id: u32,
    pub ciphertext: KemCiphertext,
}

impl core::fmt::Debug for PqHeader {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PqHeader")
            .field("one_time", &self.one_time)
            .field("id", &self.id)
            .field("ciphertext_prefix", &&self.ciphertext[..4])
            .finish_non_exhaustive()
    }
}

impl PqHeader {
    /// Length of the whole PQXDH prekey header (type byte to the end of CT).
    pub fn encoded_len(x3dh: &X3dhHeader) -> usize {
        x3dh.encoded_len() + 4 + CIPHERTEXT_LEN
    }
    /// Writes the PQXDH prekey header (type 0x04) of `x3dh` and `self`.
    pub fn encode_into(&self, x3dh: &X3dhHeader, v: &mut Vec<u8>) {
        v.push(TYPE_PQ_PREKEY);
        v.push(u8::from(x3dh.one_time_prekey.is_some()) | u8::from(self.one_time) << 1);
        v.extend_from_slice(&x3dh.identity_key);
        v.extend_from_slice(&x3dh.ephemeral_key);
        v.extend_from_slice(&x3dh.signed_prekey);
        if let Some(o) = &x3dh.one_time_prekey {
            v.extend_from_slice(o);
        }
        v.extend_from_slice(&self.id.to_be_bytes());
        v.extend_from_slice(&self.ciphertext[..]);
    }
}

/// A parsed PQXDH prekey message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PqPreKeyMessage<'a> {
    pub x3dh: X3dhHeader,
    pub pq: PqHeader,
    pub message: RatchetMessage<'a>,
}

impl<'a> PqPreKeyMessage<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Self, Error> {
        if b.len() > MAX_MESSAGE_LEN {
            return Err(Error::Oversized { what: "PQXDH prekey message", len: b.len(), max: MAX_MESSAGE_LEN });
        }
        let min = 2 + 96 + 4 + CIPHERTEXT_LEN + MIN_RATCHET_MESSAGE_LEN;
        if b.len() < 2 {
            return Err(Error::Truncated { what: "PQXDH prekey message", needed: min, got: b.len() });
        }
        if b[0] != TYPE_PQ_PREKEY {
            return Err(Error::UnknownMessageType(b[0]));
        }
        let flags = b[1];
        if flags & !3 != 0 {
            return Err(Error::Malformed("PQXDH prekey message flags: unknown bits set"));
        }
        let keys = if flags & 1 != 0 { 4 } else { 3 };
        let at_id = 2 + 32 * keys;
        let at_ct = at_id + 4;
        let fixed = at_ct + CIPHERTEXT_LEN;
        if b.len() < fixed + MIN_RATCHET_MESSAGE_LEN {
            return Err(Error::Truncated {
                what: "PQXDH prekey message",
                needed: fixed + MIN_RATCHET_MESSAGE_LEN,
                got: b.len(),
            });
        }
        let x3dh = parse_x3dh_keys(b, keys)?;
        let id = u32::from_be_bytes(b[at_id..at_ct].try_into().expect("4 bytes"));
        let ciphertext: KemCiphertext = Box::new(b[at_ct..fixed].try_into().expect("ciphertext length"));
        // The ratchet message must be exactly the rest: a ciphertext of another length cannot
        // be cut out of it (its length is fixed by the flags).
        let message = RatchetMessage::parse(&b[fixed..])?;
        Ok(PqPreKeyMessage { x3dh, pq: PqHeader { one_time: flags & 2 != 0, id, ciphertext }, message })
    }
}

fn parse_x3dh_keys(b: &[u8], keys: usize) -> Result<X3dhHeader, Error> {
    let k = |i: usize| -> [u8; 32] { b[2 + 32 * i..2 + 32 * (i + 1)].try_into().expect("32 bytes") };
    Ok(X3dhHeader {
        identity_key: canonical(k(0), "non-canonical identity key")?,
        ephemeral_key: canonical(k(1), "non-canonical ephemeral key")?,
        signed_prekey: canonical(k(2), "non-canonical signed prekey")?,
        one_time_prekey: if keys == 4 { Some(canonical(k(3), "non-canonical one-time prekey")?) } else { None },
    })
}

/// A parsed prekey message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreKeyMessage<'a> {
    pub x3dh: X3dhHeader,
    pub message: RatchetMessage<'a>,
}

impl<'a> PreKeyMessage<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Self, Error> {
        if b.len() > MAX_MESSAGE_LEN {
            return Err(Error::Oversized { what: "prekey message", len: b.len(), max: MAX_MESSAGE_LEN });
        }
        if b.is_empty() {
            return Err(Error::Truncated { what: "prekey message", needed: 2 + 96, got: 0 });
        }
        if b[0] != TYPE_PREKEY {
            return Err(Error::UnknownMessageType(b[0]));
        }
        if b.len() < 2 {
            return Err(Error::Truncated { what: "prekey message", needed: 2 + 96, got: b.len() });
        }
        let flags = b[1];
        if flags & !1 != 0 {
            return Err(Error::Malformed("prekey message flags: unknown bits set"));
        }
        let keys = if flags & 1 != 0 { 4 } else { 3 };
        let fixed = 2 + 32 * keys;
        if b.len() < fixed + MIN_RATCHET_MESSAGE_LEN {
            return Err(Error::Truncated {
                what: "prekey message",
                needed: fixed + MIN_RATCHET_MESSAGE_LEN,
                got: b.len(),
            });
        }
        let x3dh = parse_x3dh_keys(b, keys)?;
        let message = RatchetMessage::parse(&b[fixed..])?;
        Ok(PreKeyMessage { x3dh, message })
    }
}

/// Any kind of message, as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Envelope<'a> {
    Ratchet(RatchetMessage<'a>),
    PreKey(PreKeyMessage<'a>),
    PqPreKey(PqPreKeyMessage<'a>),
}

impl<'a> Envelope<'a> {
    /// Parses any message; every malformed input is an error naming what is wrong.
    pub fn parse(b: &'a [u8]) -> Result<Self, Error> {
        if b.len() > MAX_MESSAGE_LEN {
            return Err(Error::Oversized { what: "message", len: b.len(), max: MAX_MESSAGE_LEN });
        }
        match b.first() {
            None => Err(Error::Truncated { what: "message", needed: MIN_RATCHET_MESSAGE_LEN, got: 0 }),
            Some(&TYPE_RATCHET) => RatchetMessage::parse(b).map(Envelope::Ratchet),
            Some(&TYPE_PREKEY) => PreKeyMessage::parse(b).map(Envelope::PreKey),
            Some(&TYPE_PQ_PREKEY) => PqPreKeyMessage::parse(b).map(Envelope::PqPreKey),
            Some(&t) => Err(Error::UnknownMessageType(t)),
        }
    }
    pub fn ratchet(&self) -> &RatchetMessage<'a> {
        match self {
            Envelope::Ratchet(m) => m,
            Envelope::PreKey(p) => &p.message,
            Envelope::PqPreKey(p) => &p.message,
        }
    }
    /// The X3DH part of a prekey message (either protocol), `None` for a ratchet message.
    pub fn x3dh(&self) -> Option<&X3dhHeader> {
        match self {
            Envelope::Ratchet(_) => None,
            Envelope::PreKey(p) => Some(&p.x3dh),
            Envelope::PqPreKey(p) => Some(&p.x3dh),
        }
    }
    /// The post-quantum part of a PQXDH prekey message.
    pub fn pq(&self) -> Option<&PqHeader> {
        match self {
            Envelope::PqPreKey(p) => Some(&p.pq),
            _ => None,
        }
    }
}

/// Encode(PK) of the X3DH spec: one curve-type byte (0x05 = Curve25519, as libsignal) and the u.
pub fn encode_public_key(pk: &[u8; 32]) -> [u8; 33] {
    let mut e = [0u8; 33];
    e[0] = 0x05;
    e[1..].copy_from_slice(pk);
    e
}

#[cfg(test)]
mod tests {
    /// docs/ratchet.md quotes these sizes.
    #[test]
    fn documented_limits() {
        assert_eq!(super::MAX_RATCHET_MESSAGE_LEN, 16_473);
        assert_eq!(super::MAX_MESSAGE_LEN, 18_175);
        let doc = include_str!("../../../docs/ratchet.md");
        assert!(doc.contains("18,175 bytes") && doc.contains("16,473"));
    }
}
