//! The Double Ratchet session (Signal spec, section 3, with the recommended primitives).

use std::collections::VecDeque;

use rand_core::CryptoRngCore;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::dh::{check_results, generate_secret, Dh, DhJob, DhOutput, DhPurpose, KeyPair};
use crate::kdf::{self, kdf_ck, kdf_rk, Key32};
use crate::wire::{Envelope, Header, PqHeader, RatchetMessage, X3dhHeader, MAX_PLAINTEXT_LEN};
use crate::Error;

/// Most message keys one header may make us skip within one chain (spec: MAX_SKIP).
pub const MAX_SKIP: u32 = 1000;
/// Most skipped message keys a session stores; the oldest are dropped beyond it.
pub const MAX_STORED_KEYS: u32 = 2000;

/// How many of the peer's previous ratchet keys a session remembers, so a replayed message of
/// an old chain is refused as a duplicate without spending a DH ratchet step on it.
pub const MAX_OLD_RATCHET_KEYS: usize = 32;

/// Longest associated data a session accepts (X3DH's is 66 bytes).
pub const MAX_AD_LEN: usize = 1024;

fn check_ad(ad: &[u8]) -> Result<(), Error> {
    if ad.len() > MAX_AD_LEN {
        return Err(Error::Oversized { what: "associated data", len: ad.len(), max: MAX_AD_LEN });
    }
    Ok(())
}

/// Largest value either limit may take (bounds the work and memory one header can cost).
pub const MAX_LIMIT: u32 = 1 << 16;

/// Limits of a session (stored with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// MAX_SKIP: per-chain skip limit; a header beyond it is rejected.
    pub max_skip: u32,
    /// Cap on stored skipped message keys (oldest evicted first).
    pub max_stored_keys: u32,
}

impl Limits {
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.max_skip > MAX_LIMIT || self.max_stored_keys > MAX_LIMIT {
            return Err(Error::Malformed("limits above MAX_LIMIT"));
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_skip: MAX_SKIP, max_stored_keys: MAX_STORED_KEYS }
    }
}

#[derive(Clone)]
pub(crate) struct RecvChain {
    pub(crate) ratchet_key: [u8; 32],
    pub(crate) ck: Key32,
}

#[derive(Clone)]
pub(crate) struct SkippedKey {
    pub(crate) ratchet_key: [u8; 32],
    pub(crate) n: u32,
    pub(crate) mk: Key32,
}

/// One Double Ratchet session. All secrets wipe themselves on drop. `Clone` copies the state
/// (a backup before a risky operation, for example); it is not needed for rollback: every
/// failing call leaves the session unchanged by itself.
#[derive(Clone)]
pub struct Session {
    pub(crate) dhs: KeyPair,
    pub(crate) recv: Option<RecvChain>,
    pub(crate) rk: Key32,
    pub(crate) cks: Option<Key32>,
    pub(crate) ns: u32,
    pub(crate) nr: u32,
    pub(crate) pn: u32,
    pub(crate) skipped: VecDeque<SkippedKey>,
    /// The peer's previous ratchet keys (newest last), at most [`MAX_OLD_RATCHET_KEYS`].
    pub(crate) old_keys: VecDeque<[u8; 32]>,
    /// Associated data of the session (X3DH: Encode(IK_A) || Encode(IK_B)).
    pub(crate) ad: Vec<u8>,
    /// The X3DH header that started the session, if it was started by X3DH or PQXDH (its curve
    /// part): a responder keeps it for the session's life (a repeated prekey message is
    /// recognised by it), an initiator until the first reply (it sends it until then).
    pub(crate) x3dh: Option<X3dhHeader>,
    /// The post-quantum part of the PQXDH header that started the session (PQXDH only), kept
    /// as long as `x3dh`.
    pub(crate) pq: Option<PqHeader>,
    /// The session was started by PQXDH (whether or not its header is still kept).
    pub(crate) pqxdh: bool,
    /// Initiator only: outgoing messages carry the X3DH header until the first reply arrives.
    pub(crate) attach_prekey: bool,
    pub(crate) limits: Limits,
    /// Bumped by every state change; a pending step from an older generation is refused.
    pub(crate) generation: u64,
}

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("our_ratchet_key", &self.dhs.public)
            .field("their_ratchet_key", &self.recv.as_ref().map(|r| r.ratchet_key))
            .field("ns", &self.ns)
            .field("nr", &self.nr)
            .field("pn", &self.pn)
            .field("skipped_keys", &self.skipped.len())
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// Result of [`Session::decrypt`].
pub enum Decrypted {
    /// Decrypted without any DH (same chain, or a stored skipped key): the session advanced.
    Plaintext(Zeroizing<Vec<u8>>),
    /// The message starts a new DH ratchet step: run the jobs (asynchronously if you like) and
    /// call [`Session::complete_decrypt`]. The session is unchanged until then.
    NeedsDh(PendingDecrypt),
}

impl core::fmt::Debug for Decrypted {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Decrypted::Plaintext(p) => write!(f, "Plaintext({} bytes)", p.len()),
            Decrypted::NeedsDh(p) => write!(f, "NeedsDh({} jobs)", p.jobs.len()),
        }
    }
}

/// A DH ratchet step waiting for its three X25519 results:
/// `[DH(our ratchet key, their new key), public key of our new ratchet key, DH(our new key, their new key)]`.
pub struct PendingDecrypt {
    jobs: Vec<DhJob>,
    new_secret: StaticSecret,
    message: Vec<u8>,
    generation: u64,
}

impl PendingDecrypt {
    /// The X25519 computations to run, in the order their results must be given back.
    pub fn jobs(&self) -> &[DhJob] {
        &self.jobs
    }
}

/// Initiator side of a session started from a known shared secret (no X3DH): waits for
/// `[public key of our first ratchet key, DH(that key, their ratchet key)]`.
pub struct PendingInit {
    jobs: Vec<DhJob>,
    secret: StaticSecret,
    sk: Key32,
    ad: Vec<u8>,
    x3dh: Option<X3dhHeader>,
    pq: Option<PqHeader>,
}

impl PendingInit {
    pub(crate) fn for_x3dh(
        secret: StaticSecret,
        their_ratchet_key: &PublicKey,
        sk: &[u8; 32],
        ad: Vec<u8>,
        header: X3dhHeader,
        pq: Option<PqHeader>,
    ) -> Self {
        let jobs = vec![DhJob::public_key(&secret), DhJob::agree(&secret, their_ratchet_key, DhPurpose::RatchetSend)];
        PendingInit { jobs, secret, sk: Zeroizing::new(*sk), ad, x3dh: Some(header), pq }
    }

    pub fn jobs(&self) -> &[DhJob] {
        &self.jobs
    }
    /// Builds the session from the results of [`Self::jobs`].
    pub fn complete(self, results: &[DhOutput]) -> Result<Session, Error> {
        check_results(self.jobs.len(), results)?;
        let public = PublicKey::from(*results[0]);
        let (rk, cks) = kdf_rk(&self.sk, &results[1]);
        Ok(Session {
            dhs: KeyPair::from_parts(self.secret, public),
            recv: None,
            rk,
            cks: Some(cks),
            ns: 0,
            nr: 0,
            pn: 0,
            skipped: VecDeque::new(),
            old_keys: VecDeque::new(),
            ad: self.ad,
            attach_prekey: self.x3dh.is_some(),
            x3dh: self.x3dh,
            pqxdh: self.pq.is_some(),
            pq: self.pq,
            limits: Limits::default(),
            generation: 0,
        })
    }
}

impl Session {
    /// Initiator ("Alice") from a shared secret `sk` and the responder's ratchet public key
    /// (X3DH: her signed prekey). Draws the first ratchet key from `rng`; the returned pending
    /// step needs two X25519 results. `ad` is bound into every message.
    pub fn initiate(
        sk: &[u8; 32],
        their_ratchet_key: &PublicKey,
        ad: &[u8],
        rng: &mut dyn CryptoRngCore,
    ) -> Result<PendingInit, Error> {
        Self::initiate_inner(sk, their_ratchet_key, ad, None, rng)
    }

    pub(crate) fn initiate_inner(
        sk: &[u8; 32],
        their_ratchet_key: &PublicKey,
        ad: &[u8],
        x3dh: Option<X3dhHeader>,
        rng: &mut dyn CryptoRngCore,
    ) -> Result<PendingInit, Error> {
        check_ad(ad)?;
        let secret = generate_secret(rng)?;
        let jobs = vec![DhJob::public_key(&secret), DhJob::agree(&secret, their_ratchet_key, DhPurpose::RatchetSend)];
        Ok(PendingInit { jobs, secret, sk: Zeroizing::new(*sk), ad: ad.to_vec(), x3dh, pq: None })
    }

    /// [`Self::initiate`] run to the end with a blocking DH provider.
    pub fn initiate_with(
        sk: &[u8; 32],
        their_ratchet_key: &PublicKey,
        ad: &[u8],
        rng: &mut dyn CryptoRngCore,
        dh: &mut dyn Dh,
    ) -> Result<Session, Error> {
        let p = Self::initiate(sk, their_ratchet_key, ad, rng)?;
        let r = dh.run(p.jobs())?;
        p.complete(&r)
    }

    /// Responder ("Bob") from the shared secret and the key pair whose public half the initiator
    /// used as our ratchet key (X3DH: our signed prekey). It can receive, and can send once it
    /// has received the first message.
    pub fn respond(sk: &[u8; 32], our_ratchet_key: KeyPair, ad: &[u8]) -> Result<Session, Error> {
        check_ad(ad)?;
        Ok(Session {
            dhs: our_ratchet_key,
            recv: None,
            rk: Zeroizing::new(*sk),
            cks: None,
            ns: 0,
            nr: 0,
            pn: 0,
            skipped: VecDeque::new(),
            old_keys: VecDeque::new(),
            ad: ad.to_vec(),
            x3dh: None,
            pq: None,
            pqxdh: false,
            attach_prekey: false,
            limits: Limits::default(),
            generation: 0,
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Changes the limits (applies to later messages; stored keys over the cap are evicted now).
    /// Each limit must be at most [`MAX_LIMIT`].
    pub fn set_limits(&mut self, limits: Limits) -> Result<(), Error> {
        limits.check()?;
        let generation = self.next_generation()?;
        self.limits = limits;
        self.trim_skipped();
        self.generation = generation;
        Ok(())
    }

    /// Our current ratchet public key.
    pub fn our_ratchet_key(&self) -> PublicKey {
        self.dhs.public
    }
    /// The peer's current ratchet public key, once a message from them arrived.
    pub fn their_ratchet_key(&self) -> Option<[u8; 32]> {
        self.recv.as_ref().map(|r| r.ratchet_key)
    }
    /// Messages sent in the current sending chain.
    pub fn sending_chain_length(&self) -> u32 {
        self.ns
    }
    /// Messages received in the current receiving chain.
    pub fn receiving_chain_length(&self) -> u32 {
        self.nr
    }
    /// Number of stored skipped message keys.
    pub fn skipped_keys(&self) -> usize {
        self.skipped.len()
    }
    /// Changes with every state change; equal generations of one session mean equal states.
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// The session's associated data.
    pub fn associated_data(&self) -> &[u8] {
        &self.ad
    }
    /// The X3DH header of the session, if X3DH started it (for PQXDH: its curve part), while
    /// the session keeps it: a responder's for the session's life, an initiator's until the
    /// first reply (then it is dropped: the initiator no longer sends it).
    pub fn x3dh_header(&self) -> Option<&X3dhHeader> {
        self.x3dh.as_ref()
    }
    /// The post-quantum part of the PQXDH header that started the session, kept as long as
    /// [`Self::x3dh_header`].
    pub fn pq_header(&self) -> Option<&PqHeader> {
        self.pq.as_ref()
    }
    /// True when this session was started by PQXDH (also once its header is dropped).
    pub fn is_pqxdh(&self) -> bool {
        self.pqxdh
    }
    /// True when `env` is a prekey message of the key agreement that started this session
    /// (the same X3DH header, and for PQXDH the same PQ prekey and ciphertext): the responder's
    /// routing test for a repeated prekey message.
    pub fn started_by(&self, env: &Envelope<'_>) -> bool {
        match env {
            Envelope::Ratchet(_) => false,
            Envelope::PreKey(p) => self.pq.is_none() && self.x3dh.as_ref() == Some(&p.x3dh),
            Envelope::PqPreKey(p) => self.x3dh.as_ref() == Some(&p.x3dh) && self.pq.as_ref() == Some(&p.pq),
        }
    }
    /// True when this session can encrypt (the responder needs the first message first).
    pub fn can_send(&self) -> bool {
        self.cks.is_some()
    }

    /// Encrypts one message (no DH, never blocks). Returns the wire bytes: a ratchet message, or
    /// a prekey message while an initiator has not yet received a reply.
    pub fn encrypt(&mut self, plaintext: &[u8]) -> Result<Vec<u8>, Error> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(Error::Oversized { what: "plaintext", len: plaintext.len(), max: MAX_PLAINTEXT_LEN });
        }
        let cks = self.cks.as_ref().ok_or(Error::NoSendingChain)?;
        if self.ns == u32::MAX {
            return Err(Error::CounterOverflow);
        }
        let generation = self.next_generation()?;
        let (next, mk) = kdf_ck(cks);
        crate::pause();
        let header = Header { ratchet_key: *self.dhs.public.as_bytes(), pn: self.pn, n: self.ns };
        let ct = kdf::encrypt(&mk, plaintext, &self.full_ad(&header.encode()));
        self.cks = Some(next);
        self.ns += 1;
        self.generation = generation;
        let body = RatchetMessage::encode(&header, &ct);
        match (&self.x3dh, &self.pq, self.attach_prekey) {
            (Some(x), None, true) => {
                let mut v = Vec::with_capacity(x.encoded_len() + body.len());
                x.encode_into(&mut v);
                v.extend_from_slice(&body);
                Ok(v)
            }
            (Some(x), Some(pq), true) => {
                let mut v = Vec::with_capacity(PqHeader::encoded_len(x) + body.len());
                pq.encode_into(x, &mut v);
                v.extend_from_slice(&body);
                Ok(v)
            }
            _ => Ok(body),
        }
    }

    fn full_ad(&self, header_bytes: &[u8]) -> Vec<u8> {
        let mut ad = Vec::with_capacity(self.ad.len() + header_bytes.len());
        ad.extend_from_slice(&self.ad);
        ad.extend_from_slice(header_bytes);
        ad
    }

    /// First phase of decryption. Messages of a known chain (or with a stored skipped key) are
    /// decrypted at once. A message with a new ratchet key returns [`Decrypted::NeedsDh`]: a new
    /// ratchet secret is drawn from `rng` and three X25519 jobs are returned; nothing changes
    /// until [`Self::complete_decrypt`] succeeds. On any error the session is unchanged.
    pub fn decrypt(&mut self, wire: &[u8], rng: &mut dyn CryptoRngCore) -> Result<Decrypted, Error> {
        let env = Envelope::parse(wire)?;
        if !matches!(env, Envelope::Ratchet(_)) && !self.started_by(&env) {
            return Err(Error::WrongSession);
        }
        let m = *env.ratchet();
        let h = m.header;
        let ad = self.full_ad(m.header_bytes);

        // 1. A stored skipped key.
        if let Some(i) = self.skipped.iter().position(|k| k.ratchet_key == h.ratchet_key && k.n == h.n) {
            let pt = kdf::decrypt(&self.skipped[i].mk, m.ciphertext, &ad)?;
            let generation = self.next_generation()?;
            self.skipped.remove(i);
            self.received(generation);
            return Ok(Decrypted::Plaintext(pt));
        }

        // 2. The current receiving chain.
        if let Some(recv) = self.recv.as_ref().filter(|r| r.ratchet_key == h.ratchet_key) {
            if h.n < self.nr {
                return Err(Error::Duplicate { ratchet_key_prefix: prefix(&h.ratchet_key), n: h.n });
            }
            self.check_skip(self.nr, h.n)?;
            // The sender never uses n = u32::MAX (its counter would overflow), and nr = n + 1
            // must fit: refused before any work, as for a new chain.
            if h.n == u32::MAX {
                return Err(Error::CounterOverflow);
            }
            let (ck, mk, skipped) = walk_chain(&recv.ck, &h.ratchet_key, self.nr, h.n);
            let pt = kdf::decrypt(&mk, m.ciphertext, &ad)?;
            let generation = self.next_generation()?;
            self.recv.as_mut().expect("checked").ck = ck;
            self.nr = h.n + 1;
            self.skipped.extend(skipped);
            self.trim_skipped();
            self.received(generation);
            return Ok(Decrypted::Plaintext(pt));
        }

        // 3. A key of a chain we already left: its remaining keys are all in `skipped`.
        if self.old_keys.contains(&h.ratchet_key) {
            return Err(Error::Duplicate { ratchet_key_prefix: prefix(&h.ratchet_key), n: h.n });
        }
        // 4. A new ratchet key: check the skips first (no DH for a header we would refuse).
        if let Some(_recv) = &self.recv {
            self.check_skip(self.nr, h.pn)?;
        }
        self.check_skip(0, h.n)?;
        if h.n == u32::MAX {
            return Err(Error::CounterOverflow);
        }
        let new_secret = generate_secret(rng)?;
        let theirs = PublicKey::from(h.ratchet_key);
        let jobs = vec![
            DhJob::agree(&self.dhs.secret, &theirs, DhPurpose::RatchetReceive),
            DhJob::public_key(&new_secret),
            DhJob::agree(&new_secret, &theirs, DhPurpose::RatchetSend),
        ];
        Ok(Decrypted::NeedsDh(PendingDecrypt { jobs, new_secret, message: wire.to_vec(), generation: self.generation }))
    }

    /// Second phase: `results` are the outputs of `pending.jobs()`, in order. Returns the
    /// plaintext and advances the session; on any error the session is unchanged (the pending
    /// step is consumed; decrypting the message again starts over).
    pub fn complete_decrypt(
        &mut self,
        pending: PendingDecrypt,
        results: &[DhOutput],
    ) -> Result<Zeroizing<Vec<u8>>, Error> {
        if pending.generation != self.generation {
            return Err(Error::StalePending);
        }
        check_results(pending.jobs.len(), results)?;
        let env = Envelope::parse(&pending.message)?;
        let m = *env.ratchet();
        let (next, pt) = self.ratchet_step(&m, pending.new_secret, results)?;
        *self = next;
        Ok(pt)
    }

    /// Both phases with a blocking DH provider.
    pub fn decrypt_with(
        &mut self,
        wire: &[u8],
        rng: &mut dyn CryptoRngCore,
        dh: &mut dyn Dh,
    ) -> Result<Zeroizing<Vec<u8>>, Error> {
        match self.decrypt(wire, rng)? {
            Decrypted::Plaintext(p) => Ok(p),
            Decrypted::NeedsDh(p) => {
                let r = dh.run(p.jobs())?;
                self.complete_decrypt(p, &r)
            }
        }
    }

    /// The DH ratchet step of a received message, computed on a copy: returns the new session
    /// and the plaintext, or an error with `self` untouched.
    pub(crate) fn ratchet_step(
        &self,
        m: &RatchetMessage<'_>,
        new_secret: StaticSecret,
        results: &[DhOutput],
    ) -> Result<(Session, Zeroizing<Vec<u8>>), Error> {
        let h = m.header;
        let mut skipped: Vec<SkippedKey> = Vec::new();
        // Keys left in the old receiving chain (up to PN).
        if let Some(recv) = &self.recv {
            self.check_skip(self.nr, h.pn)?;
            if h.pn > self.nr {
                let (_ck, mk_last, mut s) = walk_chain(&recv.ck, &recv.ratchet_key, self.nr, h.pn - 1);
                s.push(SkippedKey { ratchet_key: recv.ratchet_key, n: h.pn - 1, mk: mk_last });
                skipped.extend(s);
            }
        }
        self.check_skip(0, h.n)?;
        if h.n == u32::MAX {
            return Err(Error::CounterOverflow);
        }
        let (rk1, ckr) = kdf_rk(&self.rk, &results[0]);
        crate::pause();
        let (ckr_next, mk, s) = walk_chain(&ckr, &h.ratchet_key, 0, h.n);
        skipped.extend(s);
        crate::pause();
        let ad = self.full_ad(m.header_bytes);
        let pt = kdf::decrypt(&mk, m.ciphertext, &ad)?;
        crate::pause();
        let (rk2, cks) = kdf_rk(&rk1, &results[2]);
        let generation = self.next_generation()?;
        let mut next = self.clone();
        next.pn = self.ns;
        next.ns = 0;
        next.nr = h.n + 1;
        next.dhs = KeyPair::from_parts(new_secret, PublicKey::from(*results[1]));
        if let Some(old) = &self.recv {
            next.old_keys.push_back(old.ratchet_key);
            while next.old_keys.len() > MAX_OLD_RATCHET_KEYS {
                next.old_keys.pop_front();
            }
        }
        next.recv = Some(RecvChain { ratchet_key: h.ratchet_key, ck: ckr_next });
        next.rk = rk2;
        next.cks = Some(cks);
        next.skipped.extend(skipped);
        next.trim_skipped();
        next.received(generation);
        Ok((next, pt))
    }

    fn check_skip(&self, from: u32, to: u32) -> Result<(), Error> {
        let skip = u64::from(to).saturating_sub(u64::from(from));
        if skip > u64::from(self.limits.max_skip) {
            return Err(Error::TooManySkipped { skip, max: self.limits.max_skip });
        }
        Ok(())
    }

    fn trim_skipped(&mut self) {
        while self.skipped.len() > self.limits.max_stored_keys as usize {
            self.skipped.pop_front();
        }
    }

    /// A message from the peer was accepted. An initiator that still attached its key
    /// agreement's header now knows the peer has the session: it stops sending the header and
    /// drops it (with PQXDH, 1,573 bytes of every later serialization).
    fn received(&mut self, generation: u64) {
        if self.attach_prekey {
            self.attach_prekey = false;
            self.x3dh = None;
            self.pq = None;
        }
        self.generation = generation;
    }

    /// The generation after one more state change. Checked, never wrapped: a wrapped counter
    /// would make a stale pending step of an old generation valid again. Only a restored state
    /// can be this close to the end (2^64 changes); it is refused with the state unchanged.
    fn next_generation(&self) -> Result<u64, Error> {
        self.generation.checked_add(1).ok_or(Error::CounterOverflow)
    }
}

/// Advances a chain from index `from` to message `to` (inclusive): returns (chain key after
/// `to`, message key of `to`, skipped keys `from..to`).
fn walk_chain(ck: &[u8; 32], ratchet_key: &[u8; 32], from: u32, to: u32) -> (Key32, Key32, Vec<SkippedKey>) {
    let mut ck = Zeroizing::new(*ck);
    let mut skipped = Vec::with_capacity((to - from) as usize);
    for n in from..to {
        let (next, mk) = kdf_ck(&ck);
        skipped.push(SkippedKey { ratchet_key: *ratchet_key, n, mk });
        ck = next;
    }
    let (next, mk) = kdf_ck(&ck);
    (next, mk, skipped)
}

fn prefix(k: &[u8; 32]) -> [u8; 4] {
    [k[0], k[1], k[2], k[3]]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dh::DalekDh;
    use rand_core::OsRng;

    /// Alice and Bob from a shared secret; Bob has received Alice's first message.
    fn pair() -> (Session, Session) {
        let sk = [7u8; 32];
        let bob_kp = KeyPair::from_secret(StaticSecret::from([9u8; 32]));
        let mut alice = Session::initiate_with(&sk, &bob_kp.public, b"ad", &mut OsRng, &mut DalekDh).unwrap();
        let mut bob = Session::respond(&sk, bob_kp, b"ad").unwrap();
        let w = alice.encrypt(b"m0").unwrap();
        bob.decrypt_with(&w, &mut OsRng, &mut DalekDh).unwrap();
        (alice, bob)
    }

    /// A message of Bob's current receiving chain with number `n`, encrypted with the key the
    /// chain gives at `n` when `bob.nr` is taken as the index of his chain key (what a peer that
    /// holds the chain key can always build, whatever its own counter says).
    fn craft(bob: &Session, n: u32) -> Vec<u8> {
        let recv = bob.recv.as_ref().unwrap();
        let mut ck = recv.ck.clone();
        for _ in bob.nr..n {
            ck = kdf_ck(&ck).0;
        }
        let mk = kdf_ck(&ck).1;
        let header = Header { ratchet_key: recv.ratchet_key, pn: 0, n };
        let ct = kdf::encrypt(&mk, b"x", &bob.full_ad(&header.encode()));
        RatchetMessage::encode(&header, &ct)
    }

    /// A current-chain message with n = u32::MAX would set nr = n + 1: it is refused with
    /// CounterOverflow and the state unchanged (it used to panic in debug builds and wrap nr to
    /// 0 in release). n = u32::MAX - 1 is the last message a chain can carry.
    #[test]
    fn current_chain_message_number_max_is_refused() {
        let (_alice, mut bob) = pair();
        bob.nr = u32::MAX - 1;
        let last = craft(&bob, u32::MAX - 1);
        let over = craft(&bob, u32::MAX);
        let before = bob.to_bytes();
        assert_eq!(bob.decrypt(&over, &mut OsRng).err(), Some(Error::CounterOverflow));
        assert!(bob.to_bytes() == before, "state changed");
        assert_eq!(&bob.decrypt_with(&last, &mut OsRng, &mut DalekDh).unwrap()[..], b"x");
        assert_eq!(bob.nr, u32::MAX);
        // The chain key is now at index u32::MAX: a message with that number is still refused.
        let over = craft(&bob, u32::MAX);
        let before = bob.to_bytes();
        assert_eq!(bob.decrypt(&over, &mut OsRng).err(), Some(Error::CounterOverflow));
        assert!(bob.to_bytes() == before, "state changed");
    }

    /// A session whose generation counter is at u64::MAX (only a restored state can be) refuses
    /// every state change with CounterOverflow and stays unchanged: encrypt, a same-chain
    /// decrypt, a skipped-key decrypt, a DH ratchet step and set_limits. The counter never wraps
    /// (a wrapped counter would make an old pending step valid again).
    #[test]
    fn generation_counter_never_wraps() {
        let (mut alice, mut bob) = pair();
        let w1 = alice.encrypt(b"m1").unwrap();
        let w2 = alice.encrypt(b"m2").unwrap();
        // Bob reads m2 first: m1's key is stored as skipped.
        bob.decrypt_with(&w2, &mut OsRng, &mut DalekDh).unwrap();
        let w3 = alice.encrypt(b"m3").unwrap();
        bob.generation = u64::MAX;
        alice.generation = u64::MAX;

        let check = |s: &mut Session, f: &mut dyn FnMut(&mut Session) -> Result<(), Error>| {
            let before = s.to_bytes();
            assert_eq!(f(s), Err(Error::CounterOverflow));
            assert!(s.to_bytes() == before, "state changed");
        };
        check(&mut alice, &mut |s| s.encrypt(b"x").map(|_| ()));
        check(&mut alice, &mut |s| s.set_limits(Limits::default()));
        check(&mut bob, &mut |s| s.decrypt(&w1, &mut OsRng).map(|_| ()));
        check(&mut bob, &mut |s| s.decrypt(&w3, &mut OsRng).map(|_| ()));
        // Bob's reply starts a new chain for Alice: the DH ratchet step is refused too.
        bob.generation = 5;
        let reply = bob.encrypt(b"r").unwrap();
        check(&mut alice, &mut |s| s.decrypt_with(&reply, &mut OsRng, &mut DalekDh).map(|_| ()));
        // One below the end still works, and reaches the end.
        alice.generation = u64::MAX - 1;
        alice.decrypt_with(&reply, &mut OsRng, &mut DalekDh).unwrap();
        assert_eq!(alice.generation(), u64::MAX);
    }
}
