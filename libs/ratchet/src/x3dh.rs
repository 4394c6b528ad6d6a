//! X3DH (Signal spec) with X25519 identity keys, an XEdDSA-signed prekey and one-time prekeys.
//!
//! - SK = HKDF-SHA256(salt = 0^32, IKM = 0xFF^32 || DH1 || DH2 || DH3 [|| DH4], info = X3DH_INFO)
//!   with DH1 = DH(IK_A, SPK_B), DH2 = DH(EK_A, IK_B), DH3 = DH(EK_A, SPK_B), DH4 = DH(EK_A, OPK_B).
//! - AD = Encode(IK_A) || Encode(IK_B), Encode(PK) = 0x05 || u.
//! - The signed prekey's signature is XEdDSA over Encode(SPK_B) by IK_B.
//! - The initiator's first ratchet message uses SPK_B as the responder's ratchet key.

use rand_core::CryptoRngCore;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::dh::{check_results, generate_secret, Dh, DhJob, DhOutput, DhPurpose, KeyPair};
use crate::kdf::{pqxdh_kdf, x3dh_kdf};
use crate::kem::{check_kem_results, KemJob, KemOutput};
use crate::pqxdh::PqPreKeyPair;
use crate::session::{PendingInit, Session};
use crate::wire::{encode_public_key, Envelope, PqHeader, X3dhHeader};
use crate::{xeddsa, Error};

/// What a responder publishes (one one-time prekey per bundle, as Signal's server hands out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreKeyBundle {
    pub identity_key: [u8; 32],
    pub signed_prekey: [u8; 32],
    pub signature: [u8; 64],
    pub one_time_prekey: Option<[u8; 32]>,
}

/// Type byte of an encoded bundle.
pub const TYPE_BUNDLE: u8 = 0x03;

impl PreKeyBundle {
    /// `0x03 | flags (bit 0: one-time prekey) | IK | SPK | signature(64) | [OPK]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(2 + 32 * 3 + 64);
        v.push(TYPE_BUNDLE);
        v.push(u8::from(self.one_time_prekey.is_some()));
        v.extend_from_slice(&self.identity_key);
        v.extend_from_slice(&self.signed_prekey);
        v.extend_from_slice(&self.signature);
        if let Some(o) = &self.one_time_prekey {
            v.extend_from_slice(o);
        }
        v
    }

    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        if b.len() < 2 {
            return Err(Error::Truncated { what: "prekey bundle", needed: 2 + 128, got: b.len() });
        }
        if b[0] != TYPE_BUNDLE {
            return Err(Error::UnknownMessageType(b[0]));
        }
        if b[1] & !1 != 0 {
            return Err(Error::Malformed("prekey bundle flags: unknown bits set"));
        }
        let need = 2 + 128 + if b[1] & 1 != 0 { 32 } else { 0 };
        if b.len() < need {
            return Err(Error::Truncated { what: "prekey bundle", needed: need, got: b.len() });
        }
        if b.len() > need {
            return Err(Error::Oversized { what: "prekey bundle", len: b.len(), max: need });
        }
        Ok(PreKeyBundle {
            identity_key: b[2..34].try_into().expect("32"),
            signed_prekey: b[34..66].try_into().expect("32"),
            signature: b[66..130].try_into().expect("64"),
            one_time_prekey: if b[1] & 1 != 0 { Some(b[130..162].try_into().expect("32")) } else { None },
        })
    }

    /// Checks the signed prekey's XEdDSA signature.
    pub fn verify(&self) -> Result<(), Error> {
        xeddsa::verify(&self.identity_key, &encode_public_key(&self.signed_prekey), &self.signature)
    }
}

/// The X3DH associated data: Encode(IK_A) || Encode(IK_B).
pub fn associated_data(initiator_identity: &[u8; 32], responder_identity: &[u8; 32]) -> Vec<u8> {
    let mut ad = Vec::with_capacity(66);
    ad.extend_from_slice(&encode_public_key(initiator_identity));
    ad.extend_from_slice(&encode_public_key(responder_identity));
    ad
}

/// Initiator's X3DH + first ratchet key, waiting for its X25519 results: `[EK_A public, DH1,
/// DH2, DH3, (DH4,) ratchet public, DH(ratchet, SPK_B)]`.
pub struct PendingInitiate {
    pub(crate) jobs: Vec<DhJob>,
    pub(crate) identity_key: [u8; 32],
    pub(crate) bundle: PreKeyBundle,
    pub(crate) ratchet_secret: StaticSecret,
    /// PQXDH: the encapsulation to the PQ prekey (one job), and that prekey's (one-time, id).
    pub(crate) kem_jobs: Vec<KemJob>,
    pub(crate) pq: Option<(bool, u32)>,
}

impl PendingInitiate {
    /// The X25519 jobs, in the order their results must be given back.
    pub fn jobs(&self) -> &[DhJob] {
        &self.jobs
    }
    /// The ML-KEM jobs (PQXDH: one encapsulation; X3DH: none).
    pub fn kem_jobs(&self) -> &[KemJob] {
        &self.kem_jobs
    }

    /// Derives SK and builds the session (its messages carry the X3DH header until a reply).
    /// For an X3DH step; a PQXDH step needs [`Self::complete_with_kem`].
    pub fn complete(self, results: &[DhOutput]) -> Result<Session, Error> {
        self.complete_with_kem(results, &[])
    }

    /// Derives SK from the X25519 and (PQXDH) ML-KEM results and builds the session; its
    /// messages carry the (PQ)XDH header until a reply arrives.
    pub fn complete_with_kem(self, results: &[DhOutput], kem: &[KemOutput]) -> Result<Session, Error> {
        check_results(self.jobs.len(), results)?;
        check_kem_results(&self.kem_jobs, kem)?;
        let n = if self.bundle.one_time_prekey.is_some() { 4 } else { 3 };
        let dhs: Vec<&[u8; 32]> = results[1..1 + n].iter().map(|r| &**r).collect();
        let (sk, pq) = match (self.pq, kem.first()) {
            (None, _) => (x3dh_kdf(&dhs), None),
            (Some((one_time, id)), Some(KemOutput::Encapsulated { ciphertext, shared_secret })) => {
                (pqxdh_kdf(&dhs, shared_secret), Some(PqHeader { one_time, id, ciphertext: ciphertext.clone() }))
            }
            (Some(_), _) => unreachable!("checked by check_kem_results"),
        };
        let header = X3dhHeader {
            identity_key: self.identity_key,
            ephemeral_key: *results[0],
            signed_prekey: self.bundle.signed_prekey,
            one_time_prekey: self.bundle.one_time_prekey,
        };
        let ad = associated_data(&self.identity_key, &self.bundle.identity_key);
        let spk = PublicKey::from(self.bundle.signed_prekey);
        let init: PendingInit = PendingInit::for_x3dh(self.ratchet_secret, &spk, &sk, ad, header, pq);
        init.complete(&results[1 + n..])
    }
}

/// The initiator's X25519 jobs, in order: the ephemeral's public key, DH1-DH3 (and DH4 with a
/// one-time prekey), the first ratchet key's public key and its DH with the signed prekey. PQXDH
/// runs the same jobs beside its encapsulation.
pub(crate) fn initiator_jobs(
    identity: &KeyPair,
    bundle: &PreKeyBundle,
    ek: &StaticSecret,
    ratchet_secret: &StaticSecret,
) -> Vec<DhJob> {
    let ik_b = PublicKey::from(bundle.identity_key);
    let spk = PublicKey::from(bundle.signed_prekey);
    let mut jobs = vec![
        DhJob::public_key(ek),
        DhJob::agree(&identity.secret, &spk, DhPurpose::X3dh(1)),
        DhJob::agree(ek, &ik_b, DhPurpose::X3dh(2)),
        DhJob::agree(ek, &spk, DhPurpose::X3dh(3)),
    ];
    if let Some(opk) = &bundle.one_time_prekey {
        jobs.push(DhJob::agree(ek, &PublicKey::from(*opk), DhPurpose::X3dh(4)));
    }
    jobs.push(DhJob::public_key(ratchet_secret));
    jobs.push(DhJob::agree(ratchet_secret, &spk, DhPurpose::RatchetSend));
    jobs
}

/// Starts a session with the owner of `bundle` (verifies the signature first). `identity` is
/// our identity key pair. Draws the ephemeral and the first ratchet secret from `rng`.
pub fn initiate(
    identity: &KeyPair,
    bundle: &PreKeyBundle,
    rng: &mut dyn CryptoRngCore,
) -> Result<PendingInitiate, Error> {
    bundle.verify()?;
    let ek = generate_secret(rng)?;
    let ratchet_secret = generate_secret(rng)?;
    Ok(PendingInitiate {
        jobs: initiator_jobs(identity, bundle, &ek, &ratchet_secret),
        identity_key: *identity.public.as_bytes(),
        bundle: bundle.clone(),
        ratchet_secret,
        kem_jobs: Vec::new(),
        pq: None,
    })
}

/// [`initiate`] to the end with a blocking DH provider.
pub fn initiate_with(
    identity: &KeyPair,
    bundle: &PreKeyBundle,
    rng: &mut dyn CryptoRngCore,
    dh: &mut dyn Dh,
) -> Result<Session, Error> {
    let p = initiate(identity, bundle, rng)?;
    let r = dh.run(p.jobs())?;
    p.complete(&r)
}

/// A signed prekey: the key pair and XEdDSA(IK, Encode(SPK)).
#[derive(Clone)]
pub struct SignedPreKey {
    pub keypair: KeyPair,
    pub signature: [u8; 64],
}

/// The responder's ("Bob's") key material: identity, signed prekeys (the newest is published;
/// older ones stay for messages in flight) and unused one-time prekeys.
#[derive(Clone)]
pub struct Responder {
    pub(crate) identity: KeyPair,
    pub(crate) signed_prekeys: Vec<SignedPreKey>,
    pub(crate) one_time_prekeys: Vec<KeyPair>,
    /// PQXDH: signed last-resort PQ prekeys (the newest is published, older ones stay for
    /// messages in flight, at most [`MAX_SIGNED_PREKEYS`]) and signed one-time PQ prekeys.
    pub(crate) pq_last_resort: Vec<PqPreKeyPair>,
    pub(crate) pq_one_time: Vec<PqPreKeyPair>,
    /// Identifier of the next PQ prekey (identifiers are never reused).
    pub(crate) next_pq_id: u32,
}

/// How many signed prekeys a responder keeps (the current one and older ones).
pub const MAX_SIGNED_PREKEYS: usize = 3;

/// Responder's X3DH + first ratchet step, waiting for `[DH1, DH2, DH3, (DH4,) DH(SPK_B,
/// ratchet_A), new ratchet public, DH(new ratchet, ratchet_A)]`.
pub struct PendingAccept {
    jobs: Vec<DhJob>,
    kem_jobs: Vec<KemJob>,
    message: Vec<u8>,
    spk: KeyPair,
    new_secret: StaticSecret,
}

impl PendingAccept {
    /// The X25519 jobs, in the order their results must be given back.
    pub fn jobs(&self) -> &[DhJob] {
        &self.jobs
    }
    /// The ML-KEM jobs (PQXDH: one decapsulation; X3DH: none).
    pub fn kem_jobs(&self) -> &[KemJob] {
        &self.kem_jobs
    }
}

impl Responder {
    /// New key material: a signed prekey and `one_time` one-time prekeys, public keys computed
    /// through `dh` (one batch).
    pub fn generate(
        identity: KeyPair,
        one_time: usize,
        rng: &mut dyn CryptoRngCore,
        dh: &mut dyn Dh,
    ) -> Result<Self, Error> {
        let mut r = Responder {
            identity,
            signed_prekeys: Vec::new(),
            one_time_prekeys: Vec::new(),
            pq_last_resort: Vec::new(),
            pq_one_time: Vec::new(),
            next_pq_id: 1,
        };
        r.rotate_signed_prekey(rng, dh)?;
        r.add_one_time_prekeys(one_time, rng, dh)?;
        Ok(r)
    }

    pub fn identity(&self) -> &KeyPair {
        &self.identity
    }

    /// A new signed prekey becomes current; the oldest beyond [`MAX_SIGNED_PREKEYS`] is dropped.
    pub fn rotate_signed_prekey(&mut self, rng: &mut dyn CryptoRngCore, dh: &mut dyn Dh) -> Result<(), Error> {
        let kp = KeyPair::generate(rng, dh)?;
        let mut z = Zeroizing::new([0u8; 64]);
        rng.try_fill_bytes(&mut z[..]).map_err(|e| Error::Rng(e.to_string()))?;
        let signature = xeddsa::sign(&self.identity.secret, &encode_public_key(kp.public.as_bytes()), &z);
        self.signed_prekeys.push(SignedPreKey { keypair: kp, signature });
        while self.signed_prekeys.len() > MAX_SIGNED_PREKEYS {
            self.signed_prekeys.remove(0);
        }
        Ok(())
    }

    /// Adds `n` one-time prekeys.
    pub fn add_one_time_prekeys(
        &mut self,
        n: usize,
        rng: &mut dyn CryptoRngCore,
        dh: &mut dyn Dh,
    ) -> Result<(), Error> {
        let secrets: Vec<StaticSecret> = (0..n).map(|_| generate_secret(rng)).collect::<Result<_, _>>()?;
        let jobs: Vec<DhJob> = secrets.iter().map(DhJob::public_key).collect();
        let out = dh.run(&jobs)?;
        check_results(jobs.len(), &out)?;
        for (s, p) in secrets.into_iter().zip(out.iter()) {
            self.one_time_prekeys.push(KeyPair::from_parts(s, PublicKey::from(**p)));
        }
        Ok(())
    }

    /// Unused one-time prekeys.
    pub fn one_time_prekeys(&self) -> usize {
        self.one_time_prekeys.len()
    }

    /// The public one-time prekeys (all of them, as the Python peer's bundle lists them).
    pub fn one_time_public_keys(&self) -> Vec<[u8; 32]> {
        self.one_time_prekeys.iter().map(|k| *k.public.as_bytes()).collect()
    }

    /// The bundle to publish: identity, current signed prekey, and the first unused one-time
    /// prekey (if any). A one-time prekey is consumed when a session using it is accepted.
    pub fn bundle(&self) -> PreKeyBundle {
        let spk = self.signed_prekeys.last().expect("a responder always has a signed prekey");
        PreKeyBundle {
            identity_key: *self.identity.public.as_bytes(),
            signed_prekey: *spk.keypair.public.as_bytes(),
            signature: spk.signature,
            one_time_prekey: self.one_time_prekeys.first().map(|k| *k.public.as_bytes()),
        }
    }

    /// First phase of accepting a prekey message (X3DH type 0x02 or PQXDH type 0x04): finds
    /// the prekeys it names and returns the X25519 jobs (the key agreement and the first DH
    /// ratchet step in one batch) and, for PQXDH, the ML-KEM decapsulation job. Nothing changes
    /// yet.
    pub fn accept(&self, wire: &[u8], rng: &mut dyn CryptoRngCore) -> Result<PendingAccept, Error> {
        let env = Envelope::parse(wire)?;
        let (x3dh, pq) = match &env {
            Envelope::Ratchet(_) => return Err(Error::UnknownMessageType(wire[0])),
            Envelope::PreKey(p) => (p.x3dh, None),
            Envelope::PqPreKey(p) => (p.x3dh, Some(&p.pq)),
        };
        let message = env.ratchet();
        let spk = self.find_spk(&x3dh.signed_prekey)?.clone();
        let opk = match &x3dh.one_time_prekey {
            Some(o) => Some(self.find_opk(o)?.clone()),
            None => None,
        };
        let kem_jobs = match pq {
            None => Vec::new(),
            Some(h) => vec![KemJob::Decapsulate {
                seed: self.find_pq(h.one_time, h.id)?.seed.clone(),
                ciphertext: h.ciphertext.clone(),
            }],
        };
        let limits = crate::session::Limits::default();
        if u64::from(message.header.n) > u64::from(limits.max_skip) {
            return Err(Error::TooManySkipped { skip: u64::from(message.header.n), max: limits.max_skip });
        }
        let ik_a = PublicKey::from(x3dh.identity_key);
        let ek_a = PublicKey::from(x3dh.ephemeral_key);
        let ratchet_a = PublicKey::from(message.header.ratchet_key);
        let new_secret = generate_secret(rng)?;
        let mut jobs = vec![
            DhJob::agree(&spk.secret, &ik_a, DhPurpose::X3dh(1)),
            DhJob::agree(&self.identity.secret, &ek_a, DhPurpose::X3dh(2)),
            DhJob::agree(&spk.secret, &ek_a, DhPurpose::X3dh(3)),
        ];
        if let Some(o) = &opk {
            jobs.push(DhJob::agree(&o.secret, &ek_a, DhPurpose::X3dh(4)));
        }
        jobs.push(DhJob::agree(&spk.secret, &ratchet_a, DhPurpose::RatchetReceive));
        jobs.push(DhJob::public_key(&new_secret));
        jobs.push(DhJob::agree(&new_secret, &ratchet_a, DhPurpose::RatchetSend));
        Ok(PendingAccept { jobs, kem_jobs, message: wire.to_vec(), spk, new_secret })
    }

    /// Second phase of an X3DH accept (a PQXDH accept needs [`Self::complete_accept_with_kem`]).
    pub fn complete_accept(
        &mut self,
        pending: PendingAccept,
        results: &[DhOutput],
    ) -> Result<(Session, Zeroizing<Vec<u8>>), Error> {
        self.complete_accept_with_kem(pending, results, &[])
    }

    /// Second phase: derives SK (X3DH, or PQXDH with the decapsulated shared secret), decrypts
    /// the first message and returns the new session and the plaintext. Only on success are
    /// the one-time prekeys it used (curve and PQ) consumed; on error nothing changes.
    pub fn complete_accept_with_kem(
        &mut self,
        pending: PendingAccept,
        results: &[DhOutput],
        kem: &[KemOutput],
    ) -> Result<(Session, Zeroizing<Vec<u8>>), Error> {
        check_results(pending.jobs.len(), results)?;
        check_kem_results(&pending.kem_jobs, kem)?;
        let env = Envelope::parse(&pending.message)?;
        let x3dh = *env.x3dh().ok_or(Error::UnknownMessageType(pending.message[0]))?;
        let pq = env.pq();
        // A one-time prekey may have been used by another session since `accept`.
        if let Some(o) = &x3dh.one_time_prekey {
            self.find_opk(o)?;
        }
        if let Some(h) = pq {
            self.find_pq(h.one_time, h.id)?;
        }
        let n = if x3dh.one_time_prekey.is_some() { 4 } else { 3 };
        let dhs: Vec<&[u8; 32]> = results[..n].iter().map(|r| &**r).collect();
        let sk = match (pq, kem.first()) {
            (None, _) => x3dh_kdf(&dhs),
            (Some(_), Some(KemOutput::SharedSecret(ss))) => pqxdh_kdf(&dhs, ss),
            (Some(_), _) => unreachable!("checked by check_kem_results"),
        };
        let ad = associated_data(&x3dh.identity_key, self.identity.public.as_bytes());
        let mut proto = Session::respond(&sk, pending.spk, &ad)?;
        proto.x3dh = Some(x3dh);
        proto.pq = pq.cloned();
        proto.pqxdh = pq.is_some();
        let (session, pt) = proto.ratchet_step(env.ratchet(), pending.new_secret, &results[n..])?;
        if let Some(o) = &x3dh.one_time_prekey {
            self.one_time_prekeys.retain(|k| k.public.as_bytes() != o);
        }
        if let Some(h) = pq {
            if h.one_time {
                self.pq_one_time.retain(|k| k.signed.id != h.id);
            }
        }
        Ok((session, pt))
    }

    /// Both phases with a blocking DH provider; a PQXDH message's decapsulation runs on this
    /// thread ([`crate::kem::CpuKem`]).
    pub fn accept_with(
        &mut self,
        wire: &[u8],
        rng: &mut dyn CryptoRngCore,
        dh: &mut dyn Dh,
    ) -> Result<(Session, Zeroizing<Vec<u8>>), Error> {
        self.accept_with_kem(wire, rng, dh, &mut crate::kem::CpuKem)
    }

    /// Both phases with blocking DH and KEM providers.
    pub fn accept_with_kem(
        &mut self,
        wire: &[u8],
        rng: &mut dyn CryptoRngCore,
        dh: &mut dyn Dh,
        kem: &mut dyn crate::kem::Kem,
    ) -> Result<(Session, Zeroizing<Vec<u8>>), Error> {
        let p = self.accept(wire, rng)?;
        let r = dh.run(p.jobs())?;
        let k = kem.run(p.kem_jobs())?;
        self.complete_accept_with_kem(p, &r, &k)
    }

    fn find_spk(&self, pubkey: &[u8; 32]) -> Result<&KeyPair, Error> {
        self.signed_prekeys
            .iter()
            .map(|s| &s.keypair)
            .find(|k| k.public.as_bytes() == pubkey)
            .ok_or(Error::UnknownPreKey("signed prekey"))
    }

    pub(crate) fn find_pq(&self, one_time: bool, id: u32) -> Result<&PqPreKeyPair, Error> {
        let (set, what) = if one_time {
            (&self.pq_one_time, "one-time PQ prekey")
        } else {
            (&self.pq_last_resort, "last-resort PQ prekey")
        };
        set.iter().find(|k| k.signed.id == id).ok_or(Error::UnknownPreKey(what))
    }

    fn find_opk(&self, pubkey: &[u8; 32]) -> Result<&KeyPair, Error> {
        self.one_time_prekeys
            .iter()
            .find(|k| k.public.as_bytes() == pubkey)
            .ok_or(Error::UnknownPreKey("one-time prekey"))
    }
}
