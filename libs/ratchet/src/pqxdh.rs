//! PQXDH (Signal's PQXDH specification, revision 1 of 2023-05-24, with ML-KEM-1024 as the
//! pqkem): X3DH plus one ML-KEM encapsulation to a signed post-quantum prekey.
//!
//! - Parameters (section 2.1): curve = curve25519 (X25519 identity keys, XEdDSA signatures),
//!   hash = SHA-256, info = [`crate::kdf::PQXDH_INFO`], pqkem = ML-KEM-1024 (FIPS 203),
//!   EncodeEC(PK) = 0x05 || u, EncodeKEM(PK) = 0x0a || ek ([`crate::kem::encode_kem_public_key`]).
//! - The responder publishes its identity key, a signed curve prekey, a signed last-resort PQ
//!   prekey, one-time curve prekeys and signed one-time PQ prekeys (section 3.2). Each PQ
//!   prekey's signature is XEdDSA(IK_B, EncodeKEM(PQPK)); PQ prekeys are named by a u32
//!   identifier the responder assigns (never reused).
//! - The initiator verifies both signatures and aborts if either fails (section 3.3); a bundle
//!   without a PQ prekey is refused ([`Error::MissingPqPreKey`]): PQXDH needs one, and there is
//!   no silent fall-back to X3DH (policy: Signal's clients require the PQ prekey). It uses the
//!   one-time PQ prekey if the bundle has one, else the last-resort one, and computes
//!   (CT, SS) = ML-KEM.Encaps(PQPK_B), DH1..DH4 as X3DH, and
//!   SK = HKDF(salt = 0^32, IKM = 0xFF^32 || DH1 || DH2 || DH3 [|| DH4] || SS, info).
//! - AD = EncodeEC(IK_A) || EncodeEC(IK_B), as X3DH.
//! - The initial message carries IK_A, EK_A, the identifiers of the prekeys used (SPK_B and OPK_B
//!   by public key, the PQ prekey by kind and u32 identifier) and CT (wire type 0x04), then the
//!   first ratchet message; the session goes to the Double Ratchet exactly as after X3DH (the
//!   initiator's first ratchet message uses SPK_B as the responder's ratchet key).
//! - The responder decapsulates with the PQ prekey named, derives SK, decrypts the first
//!   message, and only then deletes the one-time prekeys used (curve and PQ).
//!
//! Two phases as everywhere in this crate: X25519 never runs inside ([`crate::dh`]), and neither
//! does ML-KEM ([`crate::kem`]): [`initiate`] returns the X25519 jobs of X3DH plus one
//! encapsulation job; the responder's accept returns the X25519 jobs plus one decapsulation job;
//! PQ prekey generation returns key generation jobs. The randomness of every KEM job is drawn in
//! the first phase.

use rand_core::CryptoRngCore;
use zeroize::Zeroizing;

use crate::dh::{generate_secret, Dh, KeyPair};
use crate::kem::{
    check_kem_results, encode_kem_public_key, Kem, KemJob, KemOutput, KemPublicKey, ENCAPS_RANDOMNESS_LEN,
    PUBLIC_KEY_LEN, SEED_LEN,
};
use crate::session::Session;
use crate::x3dh::{PendingInitiate, PreKeyBundle, Responder, MAX_SIGNED_PREKEYS};
use crate::{xeddsa, Error};

/// Type byte of an encoded PQXDH bundle.
pub const TYPE_PQ_BUNDLE: u8 = 0x05;

/// Most one-time PQ prekeys a responder holds (each is 1,700 bytes in its state).
pub const MAX_PQ_ONE_TIME_PREKEYS: usize = 100;

/// The public half of a signed PQ prekey, as published.
#[derive(Clone, PartialEq, Eq)]
pub struct SignedPqPreKey {
    /// True for a one-time PQ prekey, false for the last-resort one.
    pub one_time: bool,
    pub id: u32,
    pub public_key: KemPublicKey,
    /// XEdDSA(IK_B, EncodeKEM(public_key)).
    pub signature: [u8; 64],
}

impl core::fmt::Debug for SignedPqPreKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SignedPqPreKey").field("one_time", &self.one_time).field("id", &self.id).finish_non_exhaustive()
    }
}

impl SignedPqPreKey {
    /// Checks the XEdDSA signature over EncodeKEM(public_key) by `identity_key`.
    pub fn verify(&self, identity_key: &[u8; 32]) -> Result<(), Error> {
        xeddsa::verify(identity_key, &encode_kem_public_key(&self.public_key), &self.signature)
            .map_err(|_| Error::BadPqSignature)
    }
}

/// A PQ prekey the responder holds: the key generation seed (the private key) and the signed
/// public half.
#[derive(Clone)]
pub struct PqPreKeyPair {
    pub(crate) seed: Zeroizing<[u8; SEED_LEN]>,
    pub(crate) signed: SignedPqPreKey,
}

/// What a PQXDH responder publishes: the X3DH bundle plus one signed PQ prekey (a one-time one
/// while any is left, else the last-resort one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PqxdhBundle {
    pub identity_key: [u8; 32],
    pub signed_prekey: [u8; 32],
    pub signature: [u8; 64],
    pub one_time_prekey: Option<[u8; 32]>,
    /// Required by [`initiate`]; `None` only so that such a bundle can be parsed and refused
    /// with a clear error.
    pub pq_prekey: Option<SignedPqPreKey>,
}

impl PqxdhBundle {
    /// `0x05 | flags | IK | SPK | signature (64) | [OPK] | [id u32 | PQPK (1568) | PQ signature (64)]`
    /// with flags bit 0 = OPK present, bit 1 = PQ prekey present, bit 2 = the PQ prekey is a
    /// one-time one; other bits zero.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(2 + 32 * 3 + 64 + 4 + PUBLIC_KEY_LEN + 64);
        v.push(TYPE_PQ_BUNDLE);
        let pq_one_time = self.pq_prekey.as_ref().map(|p| p.one_time).unwrap_or(false);
        v.push(
            u8::from(self.one_time_prekey.is_some())
                | u8::from(self.pq_prekey.is_some()) << 1
                | u8::from(pq_one_time) << 2,
        );
        v.extend_from_slice(&self.identity_key);
        v.extend_from_slice(&self.signed_prekey);
        v.extend_from_slice(&self.signature);
        if let Some(o) = &self.one_time_prekey {
            v.extend_from_slice(o);
        }
        if let Some(p) = &self.pq_prekey {
            v.extend_from_slice(&p.id.to_be_bytes());
            v.extend_from_slice(&p.public_key[..]);
            v.extend_from_slice(&p.signature);
        }
        v
    }

    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        if b.len() < 2 {
            return Err(Error::Truncated { what: "PQXDH bundle", needed: 2 + 128, got: b.len() });
        }
        if b[0] != TYPE_PQ_BUNDLE {
            return Err(Error::UnknownMessageType(b[0]));
        }
        let flags = b[1];
        if flags & !7 != 0 {
            return Err(Error::Malformed("PQXDH bundle flags: unknown bits set"));
        }
        if flags & 2 == 0 && flags & 4 != 0 {
            return Err(Error::Malformed("PQXDH bundle flags: one-time PQ prekey flag without a PQ prekey"));
        }
        let has_opk = flags & 1 != 0;
        let has_pq = flags & 2 != 0;
        let need = 2 + 128 + if has_opk { 32 } else { 0 } + if has_pq { 4 + PUBLIC_KEY_LEN + 64 } else { 0 };
        if b.len() < need {
            return Err(Error::Truncated { what: "PQXDH bundle", needed: need, got: b.len() });
        }
        if b.len() > need {
            return Err(Error::Oversized { what: "PQXDH bundle", len: b.len(), max: need });
        }
        let mut at = 130;
        let one_time_prekey = if has_opk {
            at += 32;
            Some(b[130..162].try_into().expect("32"))
        } else {
            None
        };
        let pq_prekey = if has_pq {
            let id = u32::from_be_bytes(b[at..at + 4].try_into().expect("4"));
            let public_key: KemPublicKey = Box::new(b[at + 4..at + 4 + PUBLIC_KEY_LEN].try_into().expect("pk"));
            let signature = b[at + 4 + PUBLIC_KEY_LEN..need].try_into().expect("64");
            Some(SignedPqPreKey { one_time: flags & 4 != 0, id, public_key, signature })
        } else {
            None
        };
        Ok(PqxdhBundle {
            identity_key: b[2..34].try_into().expect("32"),
            signed_prekey: b[34..66].try_into().expect("32"),
            signature: b[66..130].try_into().expect("64"),
            one_time_prekey,
            pq_prekey,
        })
    }

    /// The curve part (what X3DH uses).
    pub fn x3dh(&self) -> PreKeyBundle {
        PreKeyBundle {
            identity_key: self.identity_key,
            signed_prekey: self.signed_prekey,
            signature: self.signature,
            one_time_prekey: self.one_time_prekey,
        }
    }

    /// Checks both signatures (curve prekey, then PQ prekey) and that a PQ prekey is present.
    pub fn verify(&self) -> Result<(), Error> {
        self.x3dh().verify()?;
        self.pq_prekey.as_ref().ok_or(Error::MissingPqPreKey)?.verify(&self.identity_key)
    }
}

/// Starts a PQXDH session with the owner of `bundle`: verifies both signatures (refuses a bundle
/// without a PQ prekey), draws EK_A, the first ratchet secret and the encapsulation randomness
/// from `rng`, and returns the X25519 jobs (as [`crate::x3dh::initiate`]) and one ML-KEM
/// encapsulation job. Complete with [`PendingInitiate::complete_with_kem`].
pub fn initiate(
    identity: &KeyPair,
    bundle: &PqxdhBundle,
    rng: &mut dyn CryptoRngCore,
) -> Result<PendingInitiate, Error> {
    bundle.verify()?;
    let pq = bundle.pq_prekey.as_ref().ok_or(Error::MissingPqPreKey)?;
    let classic = bundle.x3dh();
    let ek = generate_secret(rng)?;
    let ratchet_secret = generate_secret(rng)?;
    let mut m = Zeroizing::new([0u8; ENCAPS_RANDOMNESS_LEN]);
    rng.try_fill_bytes(&mut m[..]).map_err(|e| Error::Rng(e.to_string()))?;
    Ok(PendingInitiate {
        jobs: crate::x3dh::initiator_jobs(identity, &classic, &ek, &ratchet_secret),
        identity_key: *identity.public.as_bytes(),
        bundle: classic,
        ratchet_secret,
        kem_jobs: vec![KemJob::Encapsulate { public_key: pq.public_key.clone(), randomness: m }],
        pq: Some((pq.one_time, pq.id)),
    })
}

/// [`initiate`] to the end with blocking DH and KEM providers.
pub fn initiate_with(
    identity: &KeyPair,
    bundle: &PqxdhBundle,
    rng: &mut dyn CryptoRngCore,
    dh: &mut dyn Dh,
    kem: &mut dyn Kem,
) -> Result<Session, Error> {
    let p = initiate(identity, bundle, rng)?;
    let r = dh.run(p.jobs())?;
    let k = kem.run(p.kem_jobs())?;
    p.complete_with_kem(&r, &k)
}

/// New PQ prekeys waiting for their ML-KEM key generations (seeds and signature nonces drawn).
pub struct PendingPqPreKeys {
    jobs: Vec<KemJob>,
    seeds: Vec<Zeroizing<[u8; SEED_LEN]>>,
    nonces: Vec<Zeroizing<[u8; 64]>>,
    one_time: bool,
}

impl PendingPqPreKeys {
    /// One key generation per new PQ prekey.
    pub fn kem_jobs(&self) -> &[KemJob] {
        &self.jobs
    }
}

impl Responder {
    /// First phase of making `n` PQ prekeys (`one_time`, or last-resort): draws each key
    /// generation seed and signature nonce from `rng`; returns the key generation jobs.
    pub fn new_pq_prekeys(
        &self,
        n: usize,
        one_time: bool,
        rng: &mut dyn CryptoRngCore,
    ) -> Result<PendingPqPreKeys, Error> {
        let mut p = PendingPqPreKeys {
            jobs: Vec::with_capacity(n),
            seeds: Vec::with_capacity(n),
            nonces: Vec::with_capacity(n),
            one_time,
        };
        for _ in 0..n {
            let mut seed = Zeroizing::new([0u8; SEED_LEN]);
            let mut z = Zeroizing::new([0u8; 64]);
            rng.try_fill_bytes(&mut seed[..])
                .and_then(|_| rng.try_fill_bytes(&mut z[..]))
                .map_err(|e| Error::Rng(e.to_string()))?;
            p.jobs.push(KemJob::KeyGen { seed: seed.clone() });
            p.seeds.push(seed);
            p.nonces.push(z);
        }
        Ok(p)
    }

    /// Second phase: signs the new public keys with the identity key and stores the PQ prekeys.
    /// One-time ones are added (at most [`MAX_PQ_ONE_TIME_PREKEYS`] are held: refused beyond);
    /// a last-resort one becomes current (the oldest beyond [`MAX_SIGNED_PREKEYS`] is dropped).
    pub fn add_pq_prekeys(&mut self, pending: PendingPqPreKeys, results: &[KemOutput]) -> Result<(), Error> {
        check_kem_results(&pending.jobs, results)?;
        let n = results.len();
        if pending.one_time && self.pq_one_time.len() + n > MAX_PQ_ONE_TIME_PREKEYS {
            return Err(Error::Oversized {
                what: "one-time PQ prekeys",
                len: self.pq_one_time.len() + n,
                max: MAX_PQ_ONE_TIME_PREKEYS,
            });
        }
        let last_id =
            u32::try_from(n).ok().and_then(|n| self.next_pq_id.checked_add(n)).ok_or(Error::CounterOverflow)?;
        let mut made = Vec::with_capacity(n);
        for (i, r) in results.iter().enumerate() {
            let KemOutput::PublicKey(pk) = r else { unreachable!("checked by check_kem_results") };
            let signature = xeddsa::sign(&self.identity.secret, &encode_kem_public_key(pk), &pending.nonces[i]);
            made.push(PqPreKeyPair {
                seed: pending.seeds[i].clone(),
                signed: SignedPqPreKey {
                    one_time: pending.one_time,
                    id: self.next_pq_id + i as u32,
                    public_key: pk.clone(),
                    signature,
                },
            });
        }
        self.next_pq_id = last_id;
        if pending.one_time {
            self.pq_one_time.extend(made);
        } else {
            self.pq_last_resort.extend(made);
            while self.pq_last_resort.len() > MAX_SIGNED_PREKEYS {
                self.pq_last_resort.remove(0);
            }
        }
        Ok(())
    }

    /// Both phases with a blocking KEM provider.
    pub fn add_pq_prekeys_with(
        &mut self,
        n: usize,
        one_time: bool,
        rng: &mut dyn CryptoRngCore,
        kem: &mut dyn Kem,
    ) -> Result<(), Error> {
        let p = self.new_pq_prekeys(n, one_time, rng)?;
        let r = kem.run(p.kem_jobs())?;
        self.add_pq_prekeys(p, &r)
    }

    /// Unused one-time PQ prekeys.
    pub fn pq_one_time_prekeys(&self) -> usize {
        self.pq_one_time.len()
    }

    /// True when the responder holds a last-resort PQ prekey (it can publish a PQXDH bundle).
    pub fn has_pq_prekey(&self) -> bool {
        !self.pq_last_resort.is_empty()
    }

    /// The PQXDH bundle to publish: [`Responder::bundle`]'s curve part, plus the first unused
    /// one-time PQ prekey, or (none left) the current last-resort PQ prekey; `pq_prekey` is
    /// `None` if the responder has no PQ prekey at all (an initiator refuses such a bundle).
    pub fn pqxdh_bundle(&self) -> PqxdhBundle {
        let b = self.bundle();
        PqxdhBundle {
            identity_key: b.identity_key,
            signed_prekey: b.signed_prekey,
            signature: b.signature,
            one_time_prekey: b.one_time_prekey,
            pq_prekey: self.pq_one_time.first().or(self.pq_last_resort.last()).map(|k| k.signed.clone()),
        }
    }

    /// The public halves of all one-time PQ prekeys.
    pub fn pq_one_time_public(&self) -> Vec<SignedPqPreKey> {
        self.pq_one_time.iter().map(|k| k.signed.clone()).collect()
    }
}
