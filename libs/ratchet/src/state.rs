//! Versioned binary state format for [`Session`] and [`Responder`].
//!
//! ```text
//! version 3:    magic (4) | version u16 BE | seal u8 | body length u32 BE | body | [SHA-256(magic .. body) (32)]
//! versions 1-2: magic (4) | version u16 BE |           body length u32 BE | body | SHA-256(magic .. body) (32)
//! ```
//! Magic `XRS1` = session, `XRR1` = responder. This build writes [`STATE_VERSION`] and reads
//! versions [`STATE_VERSION_MIN`] to [`STATE_VERSION`]: another version is refused with
//! [`Error::StateVersion`]; a bad magic, seal, length, checksum or field with
//! [`Error::StateCorrupt`]. Serialized bytes hold secrets: they come back in a
//! `Zeroizing<Vec<u8>>`.
//!
//! The seal: `to_bytes` writes seal 1, a SHA-256 of the whole state after the body, which
//! detects accidental damage (a torn write, a flipped bit; it is not a MAC: the store's
//! protection is the device's job). `to_bytes_unsealed` writes seal 0 and no checksum, for a
//! container that guards its bytes itself (a file sealed as a whole, as the chat's store is, or
//! memory that cannot tear): hashing the state again inside it would only cost time. `from_bytes`
//! reads both; an unsealed state's integrity is its container's.
//!
//! Session body (version 3; version 2 is the same without bit 5, version 1 also without bit 4
//! and its field), integers big endian:
//! ```text
//! flags u8: bit0 receiving chain, bit1 sending chain, bit2 X3DH header, bit3 attach prekey,
//!           bit4 PQXDH header (only with bit2), bit5 started by PQXDH (set with bit4)
//! our ratchet secret (32) | our ratchet public (32) | root key (32)
//! [their ratchet key (32) | receiving chain key (32)]      if bit0
//! [sending chain key (32)]                                 if bit1
//! ns u32 | nr u32 | pn u32 | generation u64 | max_skip u32 | max_stored_keys u32
//! ad length u16 | ad
//! [X3DH header: has-OPK u8 | IK_A | EK_A | SPK_B | (OPK_B)] if bit2
//! [PQXDH header: one-time u8 | PQ prekey id u32 | ML-KEM ciphertext (1568)] if bit4
//! skipped count u32 | count x (ratchet key (32) | n u32 | message key (32))
//! old ratchet key count u8 | count x their previous ratchet key (32)
//! ```
//! The key agreement's header (bits 2 and 4) is kept by a responder for the session's life (it
//! recognises a repeated prekey message by it) and by an initiator until the first reply: then
//! the initiator stops sending it and drops it (`Session` does so itself), which keeps its
//! state 1,573 bytes smaller with PQXDH; bit 5 still says the session was started by PQXDH.
//! A version 1 or 2 state of an initiator that was already confirmed keeps its header (such a
//! state cannot be told from a responder's); one saved before the first reply drops it then.
//!
//! Responder body: identity secret | identity public | count u8 of signed prekeys x (secret |
//! public | signature (64)) | count u32 of one-time prekeys x (secret | public); versions 2 and
//! 3 add next PQ prekey id u32 | count u8 of last-resort PQ prekeys x PQ prekey | count u32 of
//! one-time PQ prekeys x PQ prekey, where PQ prekey = id u32 | ML-KEM seed (64) | ML-KEM public
//! key (1568) | signature (64). Version 1 states (no PQ prekeys) are still read.

use std::collections::VecDeque;

use sha2::{Digest, Sha256};
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::dh::KeyPair;
use crate::kem::{CIPHERTEXT_LEN, PUBLIC_KEY_LEN, SEED_LEN};
use crate::pqxdh::{PqPreKeyPair, SignedPqPreKey, MAX_PQ_ONE_TIME_PREKEYS};
use crate::session::{Limits, RecvChain, Session, SkippedKey};
use crate::wire::{PqHeader, X3dhHeader};
use crate::x3dh::{Responder, SignedPreKey, MAX_SIGNED_PREKEYS};
use crate::Error;

/// The state format version this build writes (it reads this one down to [`STATE_VERSION_MIN`]).
pub const STATE_VERSION: u16 = 3;
/// The oldest state format version this build still reads (no PQXDH fields).
pub const STATE_VERSION_MIN: u16 = 1;
const SESSION_MAGIC: &[u8; 4] = b"XRS1";
const RESPONDER_MAGIC: &[u8; 4] = b"XRR1";
/// Largest state accepted (bounds allocation on corrupted length fields).
pub const MAX_STATE_LEN: usize = 1 << 20;

struct W(Zeroizing<Vec<u8>>);

impl W {
    fn new() -> Self {
        W(Zeroizing::new(Vec::with_capacity(512)))
    }
    fn b(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.b(&v.to_be_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.b(&v.to_be_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.b(&v.to_be_bytes());
    }
}

struct R<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> R<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.b.len() - self.at < n {
            return Err(Error::StateCorrupt("body ends inside a field"));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn k32(&mut self) -> Result<[u8; 32], Error> {
        Ok(self.take(32)?.try_into().expect("32"))
    }
    fn key(&mut self) -> Result<Zeroizing<[u8; 32]>, Error> {
        Ok(Zeroizing::new(self.k32()?))
    }
    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("2")))
    }
    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn keypair(&mut self) -> Result<KeyPair, Error> {
        let s = StaticSecret::from(*self.key()?);
        let p = PublicKey::from(self.k32()?);
        Ok(KeyPair::from_parts(s, p))
    }
    fn done(&self) -> Result<(), Error> {
        if self.at != self.b.len() {
            return Err(Error::StateCorrupt("trailing bytes after the last field"));
        }
        Ok(())
    }
}

/// Whether a state carries its own SHA-256 (the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seal {
    None = 0,
    Sha256 = 1,
}

const SEAL_LEN: usize = 32;

fn frame(magic: &[u8; 4], body: &[u8], seal: Seal) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(body.len() + 11 + SEAL_LEN));
    out.extend_from_slice(magic);
    out.extend_from_slice(&STATE_VERSION.to_be_bytes());
    out.push(seal as u8);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    if seal == Seal::Sha256 {
        let sum = Sha256::digest(&out[..]);
        out.extend_from_slice(&sum);
    }
    out
}

fn unframe<'a>(magic: &[u8; 4], b: &'a [u8]) -> Result<(u16, &'a [u8]), Error> {
    if b.len() > MAX_STATE_LEN {
        return Err(Error::StateCorrupt("state larger than MAX_STATE_LEN"));
    }
    if b.len() < 6 {
        return Err(Error::StateCorrupt("state shorter than its frame (truncated?)"));
    }
    if &b[..4] != magic {
        let other = if magic == SESSION_MAGIC { RESPONDER_MAGIC } else { SESSION_MAGIC };
        return Err(Error::StateCorrupt(if &b[..4] == other {
            "state is of the other kind (session vs responder)"
        } else {
            "bad magic (not a ratchet state)"
        }));
    }
    let version = u16::from_be_bytes([b[4], b[5]]);
    if !(STATE_VERSION_MIN..=STATE_VERSION).contains(&version) {
        return Err(Error::StateVersion { found: version, supported: STATE_VERSION });
    }
    // versions 1 and 2: no seal byte, always sealed
    let (seal, at) = if version >= 3 {
        match b.get(6) {
            Some(0) => (Seal::None, 7),
            Some(1) => (Seal::Sha256, 7),
            Some(_) => return Err(Error::StateCorrupt("unknown seal kind")),
            None => return Err(Error::StateCorrupt("state shorter than its frame (truncated?)")),
        }
    } else {
        (Seal::Sha256, 6)
    };
    let sum_len = if seal == Seal::Sha256 { SEAL_LEN } else { 0 };
    if b.len() < at + 4 + sum_len {
        return Err(Error::StateCorrupt("state shorter than its frame (truncated?)"));
    }
    let len = u32::from_be_bytes(b[at..at + 4].try_into().expect("4")) as usize;
    let start = at + 4;
    if b.len() - start - sum_len != len {
        return Err(Error::StateCorrupt("length field does not match the state size (truncated or extended)"));
    }
    if seal == Seal::Sha256 {
        let sum = Sha256::digest(&b[..start + len]);
        if sum.as_slice() != &b[start + len..] {
            return Err(Error::StateCorrupt("checksum mismatch"));
        }
    }
    Ok((version, &b[start..start + len]))
}

impl Session {
    /// Serializes the whole session (versioned, sealed with its own SHA-256).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        frame(SESSION_MAGIC, &self.body(), Seal::Sha256)
    }

    /// Serializes the whole session without its own SHA-256, for a container that guards the
    /// bytes itself (the module's documentation). [`Session::from_bytes`] reads it.
    pub fn to_bytes_unsealed(&self) -> Zeroizing<Vec<u8>> {
        frame(SESSION_MAGIC, &self.body(), Seal::None)
    }

    fn body(&self) -> Zeroizing<Vec<u8>> {
        let mut w = W::new();
        let flags = u8::from(self.recv.is_some())
            | u8::from(self.cks.is_some()) << 1
            | u8::from(self.x3dh.is_some()) << 2
            | u8::from(self.attach_prekey) << 3
            | u8::from(self.pq.is_some()) << 4
            | u8::from(self.pqxdh) << 5;
        w.u8(flags);
        w.b(&self.dhs.secret.to_bytes());
        w.b(self.dhs.public.as_bytes());
        w.b(&self.rk[..]);
        if let Some(r) = &self.recv {
            w.b(&r.ratchet_key);
            w.b(&r.ck[..]);
        }
        if let Some(c) = &self.cks {
            w.b(&c[..]);
        }
        w.u32(self.ns);
        w.u32(self.nr);
        w.u32(self.pn);
        w.u64(self.generation);
        w.u32(self.limits.max_skip);
        w.u32(self.limits.max_stored_keys);
        w.u16(self.ad.len() as u16);
        w.b(&self.ad);
        if let Some(x) = &self.x3dh {
            w.u8(u8::from(x.one_time_prekey.is_some()));
            w.b(&x.identity_key);
            w.b(&x.ephemeral_key);
            w.b(&x.signed_prekey);
            if let Some(o) = &x.one_time_prekey {
                w.b(o);
            }
        }
        if let Some(pq) = &self.pq {
            w.u8(u8::from(pq.one_time));
            w.u32(pq.id);
            w.b(&pq.ciphertext[..]);
        }
        w.u32(self.skipped.len() as u32);
        for k in &self.skipped {
            w.b(&k.ratchet_key);
            w.u32(k.n);
            w.b(&k.mk[..]);
        }
        w.u8(self.old_keys.len() as u8);
        for k in &self.old_keys {
            w.b(k);
        }
        w.0
    }

    /// Restores a session; any damage is a clear error, never a panic.
    pub fn from_bytes(b: &[u8]) -> Result<Session, Error> {
        let (version, body) = unframe(SESSION_MAGIC, b)?;
        let mut r = R { b: body, at: 0 };
        let flags = r.u8()?;
        let known: u8 = match version {
            1 => 0x0f,
            2 => 0x1f,
            _ => 0x3f,
        };
        if flags & !known != 0 {
            return Err(Error::StateCorrupt("unknown session flags"));
        }
        if flags & 0x10 != 0 && flags & 4 == 0 {
            return Err(Error::StateCorrupt("PQXDH header flag without an X3DH header"));
        }
        // version 3 says "started by PQXDH" apart from the header (dropped once confirmed)
        let pqxdh = if version >= 3 {
            if flags & 0x10 != 0 && flags & 0x20 == 0 {
                return Err(Error::StateCorrupt("PQXDH header in a session not started by PQXDH"));
            }
            flags & 0x20 != 0
        } else {
            flags & 0x10 != 0
        };
        let dhs = r.keypair()?;
        let rk = r.key()?;
        let recv = if flags & 1 != 0 { Some(RecvChain { ratchet_key: r.k32()?, ck: r.key()? }) } else { None };
        let cks = if flags & 2 != 0 { Some(r.key()?) } else { None };
        let ns = r.u32()?;
        let nr = r.u32()?;
        let pn = r.u32()?;
        let generation = r.u64()?;
        let limits = Limits { max_skip: r.u32()?, max_stored_keys: r.u32()? };
        limits.check().map_err(|_| Error::StateCorrupt("limits above MAX_LIMIT"))?;
        let ad_len = r.u16()? as usize;
        if ad_len > crate::session::MAX_AD_LEN {
            return Err(Error::StateCorrupt("associated data longer than MAX_AD_LEN"));
        }
        let ad = r.take(ad_len)?.to_vec();
        let x3dh = if flags & 4 != 0 {
            let has_opk = r.u8()?;
            if has_opk > 1 {
                return Err(Error::StateCorrupt("X3DH header flag"));
            }
            Some(X3dhHeader {
                identity_key: r.k32()?,
                ephemeral_key: r.k32()?,
                signed_prekey: r.k32()?,
                one_time_prekey: if has_opk == 1 { Some(r.k32()?) } else { None },
            })
        } else {
            None
        };
        let pq = if flags & 0x10 != 0 {
            let one_time = r.u8()?;
            if one_time > 1 {
                return Err(Error::StateCorrupt("PQXDH header flag"));
            }
            let id = r.u32()?;
            let ciphertext = Box::new(r.take(CIPHERTEXT_LEN)?.try_into().expect("length"));
            Some(PqHeader { one_time: one_time == 1, id, ciphertext })
        } else {
            None
        };
        let count = r.u32()? as usize;
        if count > limits.max_stored_keys as usize || count > (body.len() - r.at) / 68 {
            return Err(Error::StateCorrupt("skipped key count exceeds the cap or the data"));
        }
        let mut skipped = VecDeque::with_capacity(count);
        for _ in 0..count {
            skipped.push_back(SkippedKey { ratchet_key: r.k32()?, n: r.u32()?, mk: r.key()? });
        }
        let n_old = r.u8()? as usize;
        if n_old > crate::session::MAX_OLD_RATCHET_KEYS {
            return Err(Error::StateCorrupt("too many old ratchet keys"));
        }
        let mut old_keys = VecDeque::with_capacity(n_old);
        for _ in 0..n_old {
            old_keys.push_back(r.k32()?);
        }
        r.done()?;
        if flags & 8 != 0 && x3dh.is_none() {
            return Err(Error::StateCorrupt("attach-prekey flag without an X3DH header"));
        }
        Ok(Session {
            dhs,
            recv,
            rk,
            cks,
            ns,
            nr,
            pn,
            skipped,
            old_keys,
            ad,
            x3dh,
            pq,
            pqxdh,
            attach_prekey: flags & 8 != 0,
            limits,
            generation,
        })
    }
}

impl Responder {
    /// Serializes the responder's key material (versioned, sealed with its own SHA-256).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        frame(RESPONDER_MAGIC, &self.body(), Seal::Sha256)
    }

    /// Serializes the responder's key material without its own SHA-256, for a container that
    /// guards the bytes itself (the module's documentation). [`Responder::from_bytes`] reads it.
    pub fn to_bytes_unsealed(&self) -> Zeroizing<Vec<u8>> {
        frame(RESPONDER_MAGIC, &self.body(), Seal::None)
    }

    fn body(&self) -> Zeroizing<Vec<u8>> {
        let mut w = W::new();
        w.b(&self.identity.secret.to_bytes());
        w.b(self.identity.public.as_bytes());
        w.u8(self.signed_prekeys.len() as u8);
        for s in &self.signed_prekeys {
            w.b(&s.keypair.secret.to_bytes());
            w.b(s.keypair.public.as_bytes());
            w.b(&s.signature);
        }
        w.u32(self.one_time_prekeys.len() as u32);
        for k in &self.one_time_prekeys {
            w.b(&k.secret.to_bytes());
            w.b(k.public.as_bytes());
        }
        w.u32(self.next_pq_id);
        w.u8(self.pq_last_resort.len() as u8);
        for k in &self.pq_last_resort {
            write_pq(&mut w, k);
        }
        w.u32(self.pq_one_time.len() as u32);
        for k in &self.pq_one_time {
            write_pq(&mut w, k);
        }
        w.0
    }

    pub fn from_bytes(b: &[u8]) -> Result<Responder, Error> {
        let (version, body) = unframe(RESPONDER_MAGIC, b)?;
        let mut r = R { b: body, at: 0 };
        let identity = r.keypair()?;
        let n_spk = r.u8()? as usize;
        if n_spk == 0 || n_spk > MAX_SIGNED_PREKEYS {
            return Err(Error::StateCorrupt("signed prekey count"));
        }
        let mut signed_prekeys = Vec::with_capacity(n_spk);
        for _ in 0..n_spk {
            let keypair = r.keypair()?;
            let signature: [u8; 64] = r.take(64)?.try_into().expect("64");
            signed_prekeys.push(SignedPreKey { keypair, signature });
        }
        let n_opk = r.u32()? as usize;
        if n_opk > (body.len() - r.at) / 64 {
            return Err(Error::StateCorrupt("one-time prekey count exceeds the data"));
        }
        let mut one_time_prekeys = Vec::with_capacity(n_opk);
        for _ in 0..n_opk {
            one_time_prekeys.push(r.keypair()?);
        }
        let (mut next_pq_id, mut pq_last_resort, mut pq_one_time) = (1, Vec::new(), Vec::new());
        if version >= 2 {
            next_pq_id = r.u32()?;
            let n_lr = r.u8()? as usize;
            if n_lr > MAX_SIGNED_PREKEYS {
                return Err(Error::StateCorrupt("last-resort PQ prekey count"));
            }
            for _ in 0..n_lr {
                pq_last_resort.push(read_pq(&mut r, false)?);
            }
            let n_ot = r.u32()? as usize;
            if n_ot > MAX_PQ_ONE_TIME_PREKEYS {
                return Err(Error::StateCorrupt("one-time PQ prekey count"));
            }
            for _ in 0..n_ot {
                pq_one_time.push(read_pq(&mut r, true)?);
            }
            let ids = pq_last_resort.iter().chain(&pq_one_time).map(|k| k.signed.id);
            if ids.clone().any(|id| id >= next_pq_id) {
                return Err(Error::StateCorrupt("PQ prekey identifier not below the next one"));
            }
            let mut seen: Vec<u32> = ids.collect();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(Error::StateCorrupt("two PQ prekeys with one identifier"));
            }
        }
        r.done()?;
        Ok(Responder { identity, signed_prekeys, one_time_prekeys, pq_last_resort, pq_one_time, next_pq_id })
    }
}

fn write_pq(w: &mut W, k: &PqPreKeyPair) {
    w.u32(k.signed.id);
    w.b(&k.seed[..]);
    w.b(&k.signed.public_key[..]);
    w.b(&k.signed.signature);
}

fn read_pq(r: &mut R<'_>, one_time: bool) -> Result<PqPreKeyPair, Error> {
    let id = r.u32()?;
    let seed: Zeroizing<[u8; SEED_LEN]> = Zeroizing::new(r.take(SEED_LEN)?.try_into().expect("64"));
    let public_key = Box::new(r.take(PUBLIC_KEY_LEN)?.try_into().expect("length"));
    let signature = r.take(64)?.try_into().expect("64");
    Ok(PqPreKeyPair { seed, signed: SignedPqPreKey { one_time, id, public_key, signature } })
}
