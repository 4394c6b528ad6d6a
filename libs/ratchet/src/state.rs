//! Versioned binary state format for [`Session`] and [`Responder`].
//!
//! ```text
//! magic (4) | version u16 BE | body length u32 BE | body | SHA-256(magic .. body) (32)
//! ```
//! Magic `XRS1` = session, `XRR1` = responder. [`STATE_VERSION`] is the only version this
//! build reads: another version is refused with [`Error::StateVersion`]; a bad magic, length,
//! checksum or field with [`Error::StateCorrupt`]. The checksum detects accidental damage (a
//! torn write, a flipped bit); it is not a MAC (the store's protection is the device's job).
//! Serialized bytes hold secrets: they come back in a `Zeroizing<Vec<u8>>`.
//!
//! Session body (version 1), integers big endian:
//! ```text
//! flags u8: bit0 receiving chain, bit1 sending chain, bit2 X3DH header, bit3 attach prekey
//! our ratchet secret (32) | our ratchet public (32) | root key (32)
//! [their ratchet key (32) | receiving chain key (32)]      if bit0
//! [sending chain key (32)]                                 if bit1
//! ns u32 | nr u32 | pn u32 | generation u64 | max_skip u32 | max_stored_keys u32
//! ad length u16 | ad
//! [X3DH header: has-OPK u8 | IK_A | EK_A | SPK_B | (OPK_B)] if bit2
//! skipped count u32 | count x (ratchet key (32) | n u32 | message key (32))
//! old ratchet key count u8 | count x their previous ratchet key (32)
//! ```
//! Responder body: identity secret | identity public | count u8 of signed prekeys x (secret |
//! public | signature (64)) | count u32 of one-time prekeys x (secret | public).

use std::collections::VecDeque;

use sha2::{Digest, Sha256};
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::dh::KeyPair;
use crate::session::{Limits, RecvChain, Session, SkippedKey};
use crate::wire::X3dhHeader;
use crate::x3dh::{Responder, SignedPreKey, MAX_SIGNED_PREKEYS};
use crate::Error;

/// The state format version this build writes and reads.
pub const STATE_VERSION: u16 = 1;
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

fn frame(magic: &[u8; 4], body: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(body.len() + 42));
    out.extend_from_slice(magic);
    out.extend_from_slice(&STATE_VERSION.to_be_bytes());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    let sum = Sha256::digest(&out[..]);
    out.extend_from_slice(&sum);
    out
}

fn unframe<'a>(magic: &[u8; 4], b: &'a [u8]) -> Result<&'a [u8], Error> {
    if b.len() > MAX_STATE_LEN {
        return Err(Error::StateCorrupt("state larger than MAX_STATE_LEN"));
    }
    if b.len() < 10 + 32 {
        return Err(Error::StateCorrupt(
            "state shorter than its frame (truncated?)",
        ));
    }
    if &b[..4] != magic {
        let other = if magic == SESSION_MAGIC {
            RESPONDER_MAGIC
        } else {
            SESSION_MAGIC
        };
        return Err(Error::StateCorrupt(if &b[..4] == other {
            "state is of the other kind (session vs responder)"
        } else {
            "bad magic (not a ratchet state)"
        }));
    }
    let version = u16::from_be_bytes([b[4], b[5]]);
    if version != STATE_VERSION {
        return Err(Error::StateVersion {
            found: version,
            supported: STATE_VERSION,
        });
    }
    let len = u32::from_be_bytes([b[6], b[7], b[8], b[9]]) as usize;
    if b.len() != 10 + len + 32 {
        return Err(Error::StateCorrupt(
            "length field does not match the state size (truncated or extended)",
        ));
    }
    let sum = Sha256::digest(&b[..10 + len]);
    if sum.as_slice() != &b[10 + len..] {
        return Err(Error::StateCorrupt("checksum mismatch"));
    }
    Ok(&b[10..10 + len])
}

impl Session {
    /// Serializes the whole session (versioned, checksummed).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut w = W::new();
        let flags = u8::from(self.recv.is_some())
            | u8::from(self.cks.is_some()) << 1
            | u8::from(self.x3dh.is_some()) << 2
            | u8::from(self.attach_prekey) << 3;
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
        frame(SESSION_MAGIC, &w.0)
    }

    /// Restores a session; any damage is a clear error, never a panic.
    pub fn from_bytes(b: &[u8]) -> Result<Session, Error> {
        let body = unframe(SESSION_MAGIC, b)?;
        let mut r = R { b: body, at: 0 };
        let flags = r.u8()?;
        if flags & !0x0f != 0 {
            return Err(Error::StateCorrupt("unknown session flags"));
        }
        let dhs = r.keypair()?;
        let rk = r.key()?;
        let recv = if flags & 1 != 0 {
            Some(RecvChain {
                ratchet_key: r.k32()?,
                ck: r.key()?,
            })
        } else {
            None
        };
        let cks = if flags & 2 != 0 { Some(r.key()?) } else { None };
        let ns = r.u32()?;
        let nr = r.u32()?;
        let pn = r.u32()?;
        let generation = r.u64()?;
        let limits = Limits {
            max_skip: r.u32()?,
            max_stored_keys: r.u32()?,
        };
        limits
            .check()
            .map_err(|_| Error::StateCorrupt("limits above MAX_LIMIT"))?;
        let ad_len = r.u16()? as usize;
        if ad_len > crate::session::MAX_AD_LEN {
            return Err(Error::StateCorrupt(
                "associated data longer than MAX_AD_LEN",
            ));
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
        let count = r.u32()? as usize;
        if count > limits.max_stored_keys as usize || count > (body.len() - r.at) / 68 {
            return Err(Error::StateCorrupt(
                "skipped key count exceeds the cap or the data",
            ));
        }
        let mut skipped = VecDeque::with_capacity(count);
        for _ in 0..count {
            skipped.push_back(SkippedKey {
                ratchet_key: r.k32()?,
                n: r.u32()?,
                mk: r.key()?,
            });
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
            return Err(Error::StateCorrupt(
                "attach-prekey flag without an X3DH header",
            ));
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
            attach_prekey: flags & 8 != 0,
            limits,
            generation,
        })
    }
}

impl Responder {
    /// Serializes the responder's key material (versioned, checksummed).
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
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
        frame(RESPONDER_MAGIC, &w.0)
    }

    pub fn from_bytes(b: &[u8]) -> Result<Responder, Error> {
        let body = unframe(RESPONDER_MAGIC, b)?;
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
            return Err(Error::StateCorrupt(
                "one-time prekey count exceeds the data",
            ));
        }
        let mut one_time_prekeys = Vec::with_capacity(n_opk);
        for _ in 0..n_opk {
            one_time_prekeys.push(r.keypair()?);
        }
        r.done()?;
        Ok(Responder {
            identity,
            signed_prekeys,
            one_time_prekeys,
        })
    }
}
