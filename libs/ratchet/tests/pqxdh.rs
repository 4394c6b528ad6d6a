//! PQXDH (X3DH + ML-KEM-1024): both roles of this crate together, the two-phase API, state
//! round trips, and every bad input of docs/ratchet.md's PQXDH list refused with a clear error,
//! the state unchanged and nothing stored. The independent peer (from-spec Python) is in
//! tests/interop.rs; ML-KEM against NIST's ACVP vectors in tests/mlkem_acvp.rs.

mod common;

use common::dec;
use rand_core::OsRng;
use ratchet::kem::{CIPHERTEXT_LEN, PUBLIC_KEY_LEN};
use ratchet::pqxdh::{self, PqxdhBundle};
use ratchet::wire::TYPE_PQ_PREKEY;
use ratchet::{x3dh, CpuKem, DalekDh, Dh, Envelope, Error, Kem, KemJob, KemOp, KemOutput, KeyPair, Responder, Session};

/// A responder with `opks` curve one-time prekeys, `pq_opks` one-time PQ prekeys and a
/// last-resort PQ prekey.
fn bob(opks: usize, pq_opks: usize) -> Responder {
    let mut dh = DalekDh;
    let mut b =
        Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), opks, &mut OsRng, &mut dh).unwrap();
    b.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).unwrap();
    if pq_opks > 0 {
        b.add_pq_prekeys_with(pq_opks, true, &mut OsRng, &mut CpuKem).unwrap();
    }
    b
}

fn alice_id() -> KeyPair {
    KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap()
}

/// Runs a pending initiation's jobs (DH and KEM) and completes it.
fn initiate(id: &KeyPair, bundle: &PqxdhBundle) -> Session {
    pqxdh::initiate_with(id, bundle, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap()
}

fn accept(bob: &mut Responder, wire: &[u8]) -> Result<(Session, Vec<u8>), Error> {
    bob.accept_with_kem(wire, &mut OsRng, &mut DalekDh, &mut CpuKem).map(|(s, p)| (s, p.to_vec()))
}

#[test]
fn pqxdh_both_roles_every_prekey_combination() {
    for (opks, pq_opks) in [(1, 1), (0, 1), (1, 0), (0, 0)] {
        let mut b = bob(opks, pq_opks);
        let bundle = b.pqxdh_bundle();
        let pq = bundle.pq_prekey.as_ref().unwrap();
        assert_eq!(pq.one_time, pq_opks > 0);
        assert_eq!(bundle.one_time_prekey.is_some(), opks > 0);
        // The bundle survives its encoding.
        assert_eq!(PqxdhBundle::parse(&bundle.encode()).unwrap(), bundle);
        let a_id = alice_id();
        let p = pqxdh::initiate(&a_id, &bundle, &mut OsRng).unwrap();
        assert_eq!(p.jobs().len(), 6 + opks);
        assert_eq!(p.kem_jobs().len(), 1);
        assert_eq!(p.kem_jobs()[0].op(), KemOp::Encapsulate);
        let r = DalekDh.run(p.jobs()).unwrap();
        let k = CpuKem.run(p.kem_jobs()).unwrap();
        let mut alice = p.complete_with_kem(&r, &k).unwrap();
        assert!(alice.is_pqxdh());
        let w = alice.encrypt(b"hello, post-quantum Bob").unwrap();
        assert_eq!(w[0], TYPE_PQ_PREKEY);
        assert_eq!(w.len(), 2 + 96 + 32 * opks + 4 + CIPHERTEXT_LEN + 41 + 32 + 32, "PQXDH prekey message size");
        // Bob: the decapsulation is a job too.
        let pa = b.accept(&w, &mut OsRng).unwrap();
        assert_eq!(pa.jobs().len(), 6 + opks);
        assert_eq!(pa.kem_jobs().len(), 1);
        assert_eq!(pa.kem_jobs()[0].op(), KemOp::Decapsulate);
        let r = DalekDh.run(pa.jobs()).unwrap();
        let k = CpuKem.run(pa.kem_jobs()).unwrap();
        let (mut bs, pt) = b.complete_accept_with_kem(pa, &r, &k).unwrap();
        assert_eq!(&pt[..], b"hello, post-quantum Bob");
        assert_eq!(bs.associated_data(), alice.associated_data());
        assert!(bs.started_by(&Envelope::parse(&w).unwrap()));
        // One-time prekeys (curve and PQ) are consumed, the last-resort one is not.
        assert_eq!(b.one_time_prekeys(), 0);
        assert_eq!(b.pq_one_time_prekeys(), 0);
        assert!(b.has_pq_prekey());
        // Alice repeats the PQXDH header until she hears back; Bob's session reads it.
        let w2 = alice.encrypt(b"again").unwrap();
        assert_eq!(w2[0], TYPE_PQ_PREKEY);
        assert_eq!(dec(&mut bs, &w2).unwrap(), b"again");
        // The states (with the PQXDH header) survive serialization.
        let mut bs = Session::from_bytes(&bs.to_bytes()).unwrap();
        let mut alice = Session::from_bytes(&alice.to_bytes()).unwrap();
        assert_eq!(alice.pq_header(), bs.pq_header());
        let reply = bs.encrypt(b"hi Alice").unwrap();
        assert_eq!(dec(&mut alice, &reply).unwrap(), b"hi Alice");
        let w3 = alice.encrypt(b"ratchet message now").unwrap();
        assert_eq!(w3[0], 0x01, "the header stops after the first reply");
        assert_eq!(dec(&mut bs, &w3).unwrap(), b"ratchet message now");
        let b2 = Responder::from_bytes(&b.to_bytes()).unwrap();
        assert_eq!(b2.pqxdh_bundle(), b.pqxdh_bundle());
    }
}

/// docs/ratchet.md quotes these sizes.
#[test]
fn documented_sizes() {
    let mut b = bob(1, 1);
    let bundle = b.pqxdh_bundle();
    assert_eq!(bundle.encode().len(), 1_798);
    assert_eq!(b.bundle().encode().len(), 162);
    let mut a = initiate(&alice_id(), &bundle);
    assert_eq!(a.encrypt(b"fifteen bytes!!").unwrap().len(), 1_791);
    let mut a = initiate(&alice_id(), &PqxdhBundle { one_time_prekey: None, ..b.pqxdh_bundle() });
    assert_eq!(a.encrypt(b"").unwrap().len(), 1_759);
    let mut c = x3dh::initiate_with(&alice_id(), &b.bundle(), &mut OsRng, &mut DalekDh).unwrap();
    assert_eq!(c.encrypt(b"").unwrap().len(), 219);
    accept(&mut b, &c.encrypt(b"").unwrap()).unwrap();
    // State: a PQXDH session holds its PQXDH header (1,573 bytes more than the same X3DH
    // session); a responder's PQ section (version 2) is 9 bytes plus 1,700 per PQ prekey.
    let id = alice_id();
    let classic =
        Responder::generate(KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap(), 0, &mut OsRng, &mut DalekDh).unwrap();
    let l0 = classic.to_bytes().len();
    let mut withpq = classic.clone();
    withpq.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).unwrap();
    assert_eq!(withpq.to_bytes().len(), l0 + 1_700);
    withpq.add_pq_prekeys_with(2, true, &mut OsRng, &mut CpuKem).unwrap();
    assert_eq!(withpq.to_bytes().len(), l0 + 3 * 1_700);
    let mut xs = x3dh::initiate_with(&id, &withpq.bundle(), &mut OsRng, &mut DalekDh).unwrap();
    let mut ps = initiate(&id, &withpq.pqxdh_bundle());
    let (wx, wp) = (xs.encrypt(b"m").unwrap(), ps.encrypt(b"m").unwrap());
    assert_eq!(ps.to_bytes().len(), xs.to_bytes().len() + 1_573);
    let (bx, _) = accept(&mut withpq, &wx).unwrap();
    let (bp, _) = accept(&mut withpq, &wp).unwrap();
    assert_eq!(bp.to_bytes().len(), bx.to_bytes().len() + 1_573);
    eprintln!(
        "state sizes: initiator X3DH {} PQXDH {}; responder X3DH {} PQXDH {}; responder keys without PQ prekeys {l0}",
        xs.to_bytes().len(),
        ps.to_bytes().len(),
        bx.to_bytes().len(),
        bp.to_bytes().len()
    );
    assert_eq!(
        (xs.to_bytes().len(), ps.to_bytes().len(), bx.to_bytes().len(), bp.to_bytes().len()),
        (370, 1_943, 434, 2_007)
    );
    // Without the state's own SHA-256 (a container that seals its bytes itself): 32 less.
    assert_eq!(ps.to_bytes_unsealed().len(), 1_911);
    // Once the first reply arrives, the initiator drops its header (X3DH: 97 bytes here, no
    // one-time prekey; PQXDH 1,573 more): both initiators' states are the same size again.
    let (mut bx, mut bp) = (bx, bp);
    dec(&mut xs, &bx.encrypt(b"r").unwrap()).unwrap();
    dec(&mut ps, &bp.encrypt(b"r").unwrap()).unwrap();
    assert!(ps.is_pqxdh() && ps.pq_header().is_none() && ps.x3dh_header().is_none());
    assert_eq!((xs.to_bytes().len(), ps.to_bytes().len()), (337, 337));
    assert_eq!(ps.to_bytes_unsealed().len(), 305);
    // The chat's Bob: 32 one-time curve prekeys; with PQXDH also 1 last-resort and 8 one-time PQ
    // prekeys.
    let mut chat_bob =
        Responder::generate(KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap(), 32, &mut OsRng, &mut DalekDh)
            .unwrap();
    assert_eq!(chat_bob.to_bytes().len(), 2_297);
    chat_bob.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).unwrap();
    chat_bob.add_pq_prekeys_with(8, true, &mut OsRng, &mut CpuKem).unwrap();
    assert_eq!(chat_bob.to_bytes().len(), 17_597);
    let chat_doc = include_str!("../../../docs/chat.md");
    for n in ["370 bytes", "1,943", "434", "2,007", "337 bytes", "2,297 bytes", "17,597"] {
        assert!(chat_doc.contains(n), "docs/chat.md should say {n}");
    }
    let doc = include_str!("../../../docs/ratchet.md");
    for n in ["1,759 bytes", "1,791 with", "187 (219)", "1,798 bytes", "162 for", "1,573 bytes", "1,700 bytes each"] {
        assert!(doc.contains(n), "docs/ratchet.md should say {n}");
    }
}

/// SK depends on the ML-KEM shared secret: a responder given a wrong shared secret (the result
/// of a failed or substituted decapsulation) cannot read the first message.
#[test]
fn decapsulation_failure_is_refused_and_changes_nothing() {
    let mut b = bob(1, 1);
    let a_id = alice_id();
    let mut alice = initiate(&a_id, &b.pqxdh_bundle());
    let w = alice.encrypt(b"m").unwrap();
    let before = b.to_bytes();
    // (1) a KEM result that is not the decapsulation of this ciphertext
    let pa = b.accept(&w, &mut OsRng).unwrap();
    let r = DalekDh.run(pa.jobs()).unwrap();
    let mut k = CpuKem.run(pa.kem_jobs()).unwrap();
    if let KemOutput::SharedSecret(ss) = &mut k[0] {
        ss[0] ^= 1;
    }
    assert_eq!(b.complete_accept_with_kem(pa, &r, &k).err(), Some(Error::Authentication));
    assert!(b.to_bytes() == before, "responder changed");
    // (2) a ciphertext of the right length made for another key: ML-KEM's implicit rejection
    // gives a pseudo-random key, the first message's tag fails.
    let other = bob(0, 1);
    let mut eve_session = initiate(&a_id, &other.pqxdh_bundle());
    let w_other = eve_session.encrypt(b"x").unwrap();
    let mut t = w.clone();
    let ct_at = 2 + 128 + 4;
    t[ct_at..ct_at + CIPHERTEXT_LEN].copy_from_slice(&w_other[ct_at..ct_at + CIPHERTEXT_LEN]);
    assert_eq!(accept(&mut b, &t).err(), Some(Error::Authentication));
    assert!(b.to_bytes() == before, "responder changed");
    // (3) wrong number or kind of KEM results
    let pa = b.accept(&w, &mut OsRng).unwrap();
    let r = DalekDh.run(pa.jobs()).unwrap();
    assert_eq!(b.complete_accept_with_kem(pa, &r, &[]).err(), Some(Error::KemResultCount { expected: 1, got: 0 }));
    let pa = b.accept(&w, &mut OsRng).unwrap();
    let r = DalekDh.run(pa.jobs()).unwrap();
    let wrong = vec![KemOutput::PublicKey(Box::new([0u8; PUBLIC_KEY_LEN]))];
    assert_eq!(
        b.complete_accept_with_kem(pa, &r, &wrong).err(),
        Some(Error::KemResultKind { expected: "decaps", got: "keygen" })
    );
    // (4) an X3DH completion of a PQXDH step
    let pa = b.accept(&w, &mut OsRng).unwrap();
    let r = DalekDh.run(pa.jobs()).unwrap();
    assert!(matches!(b.complete_accept(pa, &r), Err(Error::KemResultCount { .. })));
    assert!(b.to_bytes() == before, "responder changed");
    // The original is still accepted.
    assert_eq!(accept(&mut b, &w).unwrap().1, b"m");
}

/// Every single-bit flip of a PQXDH initial message (with a one-time curve prekey and a
/// one-time PQ prekey: every field present) is refused by the responder, which stays unchanged
/// and returns no session; the same flips to the session the message started are refused with
/// the session unchanged. Then the original is accepted.
#[test]
fn every_bit_flip_of_the_initial_message_is_refused() {
    let mut b = bob(1, 2);
    let a_id = alice_id();
    let mut alice = initiate(&a_id, &b.pqxdh_bundle());
    let w = alice.encrypt(b"flip me").unwrap();
    let before = b.to_bytes();
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for bit in 0..w.len() * 8 {
        let mut t = w.clone();
        t[bit / 8] ^= 1 << (bit % 8);
        let e = accept(&mut b, &t).err().unwrap_or_else(|| panic!("bit {bit}: accepted"));
        *kinds.entry(format!("{e:?}").split([' ', '(']).next().unwrap().to_string()).or_default() += 1;
        assert!(b.to_bytes() == before, "bit {bit}: responder changed ({e})");
    }
    // The refusals are of the expected kinds: the ciphertext and keys fail the tag.
    eprintln!("{} flips refused: {kinds:?}", w.len() * 8);
    assert!(kinds["Authentication"] > CIPHERTEXT_LEN * 8, "{kinds:?}");
    let (mut bs, pt) = accept(&mut b, &w).unwrap();
    assert_eq!(pt, b"flip me");
    // To the session: a flipped copy of its own prekey message.
    let w2 = alice.encrypt(b"second").unwrap();
    let s_before = bs.to_bytes();
    for bit in 0..w2.len() * 8 {
        let mut t = w2.clone();
        t[bit / 8] ^= 1 << (bit % 8);
        assert!(dec(&mut bs, &t).is_err(), "bit {bit}: accepted by the session");
        assert!(bs.to_bytes() == s_before, "bit {bit}: session changed");
    }
    assert_eq!(dec(&mut bs, &w2).unwrap(), b"second");
}

/// A KEM ciphertext of the wrong length (one byte short or long, the rest shifted; or the whole
/// message cut inside the ciphertext) is refused before any work, with a clear error.
#[test]
fn wrong_length_ciphertext_is_refused() {
    let mut b = bob(0, 1);
    let mut alice = initiate(&alice_id(), &b.pqxdh_bundle());
    let w = alice.encrypt(b"m").unwrap();
    let before = b.to_bytes();
    let ct_at = 2 + 96 + 4;
    for delta in [-32i64, -1, 1, 16, 32] {
        let mut t = w[..ct_at + CIPHERTEXT_LEN].to_vec();
        if delta < 0 {
            t.truncate((t.len() as i64 + delta) as usize);
        } else {
            t.extend(std::iter::repeat(0x5a).take(delta as usize));
        }
        t.extend_from_slice(&w[ct_at + CIPHERTEXT_LEN..]);
        let e = accept(&mut b, &t).err().expect("wrong-length ciphertext accepted");
        assert!(
            matches!(e, Error::Malformed(_) | Error::UnknownMessageType(_) | Error::Truncated { .. }),
            "delta {delta}: {e}"
        );
        assert!(b.to_bytes() == before);
    }
    for len in 0..ct_at + CIPHERTEXT_LEN + 41 {
        let e = accept(&mut b, &w[..len]).err().expect("truncated message accepted");
        assert!(matches!(e, Error::Truncated { .. }), "len {len}: {e}");
    }
    assert!(b.to_bytes() == before);
    assert_eq!(
        accept(&mut b, &w[..ct_at + 100]).err().unwrap().to_string(),
        format!(
            "truncated PQXDH prekey message: needs at least {} bytes, got {}",
            ct_at + CIPHERTEXT_LEN + 41 + 16 + 32,
            ct_at + 100
        )
    );
}

/// A PQ prekey whose signature does not verify, a bundle without a PQ prekey (policy: PQXDH
/// requires one, as Signal's clients do; no silent fall-back to X3DH), and an encapsulation key
/// that fails the FIPS 203 modulus check are refused before any work is returned.
#[test]
fn bad_bundles_are_refused() {
    let b = bob(1, 1);
    let good = b.pqxdh_bundle();
    let a_id = alice_id();
    // Every single-bit flip of the PQ signature and of the PQ public key.
    for i in 0..64 * 8 {
        let mut t = good.clone();
        t.pq_prekey.as_mut().unwrap().signature[i / 8] ^= 1 << (i % 8);
        assert_eq!(pqxdh::initiate(&a_id, &t, &mut OsRng).err(), Some(Error::BadPqSignature), "sig bit {i}");
    }
    for i in (0..PUBLIC_KEY_LEN * 8).step_by(7) {
        let mut t = good.clone();
        t.pq_prekey.as_mut().unwrap().public_key[i / 8] ^= 1 << (i % 8);
        assert_eq!(pqxdh::initiate(&a_id, &t, &mut OsRng).err(), Some(Error::BadPqSignature), "pk bit {i}");
    }
    // A PQ prekey signed by another identity.
    let mut t = good.clone();
    t.pq_prekey = bob(0, 0).pqxdh_bundle().pq_prekey;
    assert_eq!(pqxdh::initiate(&a_id, &t, &mut OsRng).err(), Some(Error::BadPqSignature));
    // The curve prekey's signature is still checked.
    let mut t = good.clone();
    t.signature[0] ^= 1;
    assert_eq!(pqxdh::initiate(&a_id, &t, &mut OsRng).err(), Some(Error::BadSignature));
    // No PQ prekey: in memory and on the wire, from a responder that has none.
    let mut t = good.clone();
    t.pq_prekey = None;
    let e = pqxdh::initiate(&a_id, &t, &mut OsRng).err().unwrap();
    assert_eq!(e, Error::MissingPqPreKey);
    assert!(e.to_string().contains("PQXDH requires one"));
    let parsed = PqxdhBundle::parse(&t.encode()).unwrap();
    assert_eq!(pqxdh::initiate(&a_id, &parsed, &mut OsRng).err(), Some(Error::MissingPqPreKey));
    let classic_only =
        Responder::generate(KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap(), 1, &mut OsRng, &mut DalekDh).unwrap();
    assert!(classic_only.pqxdh_bundle().pq_prekey.is_none());
    assert_eq!(pqxdh::initiate(&a_id, &classic_only.pqxdh_bundle(), &mut OsRng).err(), Some(Error::MissingPqPreKey));
    // Every truncation of an encoded bundle, an extension, unknown flags.
    let enc = good.encode();
    for len in 0..enc.len() {
        assert!(PqxdhBundle::parse(&enc[..len]).is_err(), "len {len}");
    }
    let mut ext = enc.clone();
    ext.push(0);
    assert!(matches!(PqxdhBundle::parse(&ext), Err(Error::Oversized { .. })));
    for f in [8u8, 0x10, 0x80, 4] {
        let mut t = enc.clone();
        t[1] = if f == 4 { 1 | 4 } else { t[1] | f };
        assert!(matches!(PqxdhBundle::parse(&t), Err(Error::Malformed(_))), "flags {f:#x}");
    }
    // A key that fails the modulus check, validly signed: the encapsulation job refuses it.
    let mut bad_key = Box::new([0u8; PUBLIC_KEY_LEN]);
    bad_key[0] = 0xff;
    bad_key[1] = 0x0f;
    let job = KemJob::Encapsulate { public_key: bad_key, randomness: Default::default() };
    assert_eq!(job.run().err(), Some(Error::InvalidKemKey));
}

/// A one-time PQ prekey is used once: a second initial message naming it (made from the same
/// bundle before the first was accepted) is refused, and so is a replay of the first; the
/// responder is unchanged by both. A last-resort PQ prekey stays usable.
#[test]
fn reused_one_time_pq_prekey_is_refused() {
    let mut b = bob(0, 1);
    let bundle = b.pqxdh_bundle();
    assert!(bundle.pq_prekey.as_ref().unwrap().one_time);
    let mut a1 = initiate(&alice_id(), &bundle);
    let mut a2 = initiate(&alice_id(), &bundle);
    let w1 = a1.encrypt(b"first").unwrap();
    let w2 = a2.encrypt(b"second, same PQ prekey").unwrap();
    // Both phase ones are fine while the key is there; the first to complete consumes it.
    let p2 = b.accept(&w2, &mut OsRng).unwrap();
    assert_eq!(accept(&mut b, &w1).unwrap().1, b"first");
    let before = b.to_bytes();
    let r = DalekDh.run(p2.jobs()).unwrap();
    let k = CpuKem.run(p2.kem_jobs()).unwrap();
    let e = b.complete_accept_with_kem(p2, &r, &k).err().unwrap();
    assert_eq!(e, Error::UnknownPreKey("one-time PQ prekey"));
    assert_eq!(e.to_string(), "unknown one-time PQ prekey (already used or never issued)");
    assert_eq!(accept(&mut b, &w2).err(), Some(Error::UnknownPreKey("one-time PQ prekey")));
    assert_eq!(accept(&mut b, &w1).err(), Some(Error::UnknownPreKey("one-time PQ prekey")));
    assert!(b.to_bytes() == before, "responder changed");
    // The bundle now offers the last-resort PQ prekey, which works for any number of sessions.
    let lr = b.pqxdh_bundle();
    assert!(!lr.pq_prekey.as_ref().unwrap().one_time);
    for i in 0..2 {
        let mut a = initiate(&alice_id(), &lr);
        let w = a.encrypt(format!("last resort {i}").as_bytes()).unwrap();
        accept(&mut b, &w).unwrap();
    }
}

/// The PQ identifiers a message names must exist in the set its flag names.
#[test]
fn unknown_pq_prekey_identifiers_are_refused() {
    let mut b = bob(0, 1);
    let mut a = initiate(&alice_id(), &b.pqxdh_bundle());
    let w = a.encrypt(b"m").unwrap();
    let before = b.to_bytes();
    let id_at = 2 + 96;
    let mut t = w.clone();
    t[id_at..id_at + 4].copy_from_slice(&999u32.to_be_bytes());
    assert_eq!(accept(&mut b, &t).err(), Some(Error::UnknownPreKey("one-time PQ prekey")));
    let mut t = w.clone();
    t[1] &= !2; // claims the last-resort key with the one-time key's identifier
    assert_eq!(accept(&mut b, &t).err(), Some(Error::UnknownPreKey("last-resort PQ prekey")));
    assert!(b.to_bytes() == before);
}

/// X3DH stays available beside PQXDH; the two kinds of prekey message are not interchangeable
/// for a session.
#[test]
fn x3dh_still_works_and_sessions_do_not_mix() {
    let mut b = bob(2, 1);
    let mut dh = DalekDh;
    let mut classic = x3dh::initiate_with(&alice_id(), &b.bundle(), &mut OsRng, &mut dh).unwrap();
    let wc = classic.encrypt(b"classic").unwrap();
    let (mut bc, pt) = accept(&mut b, &wc).unwrap();
    assert_eq!(pt, b"classic");
    assert!(!bc.is_pqxdh());
    let mut pq = initiate(&alice_id(), &b.pqxdh_bundle());
    let wp = pq.encrypt(b"pq").unwrap();
    let (mut bp, _) = accept(&mut b, &wp).unwrap();
    assert_eq!(dec(&mut bc, &wp).err(), Some(Error::WrongSession));
    assert_eq!(dec(&mut bp, &wc).err(), Some(Error::WrongSession));
}

/// A state in the frame of versions 1 and 2: magic, version, body length, body, SHA-256.
fn old_frame(magic: &[u8; 4], version: u16, body: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    let mut v = magic.to_vec();
    v.extend_from_slice(&version.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    let sum = sha2::Sha256::digest(&v);
    v.extend_from_slice(&sum);
    v
}

/// PQ prekey management: identifiers are unique and never reused, one-time prekeys are capped,
/// last-resort ones rotate, wrong results are refused, and version-1 states (before PQXDH) are
/// still read.
#[test]
fn pq_prekey_management_and_state_versions() {
    let mut b = bob(0, 3);
    let ids: Vec<u32> = b.pq_one_time_public().iter().map(|k| k.id).collect();
    assert_eq!(ids, vec![2, 3, 4]);
    for _ in 0..4 {
        b.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).unwrap();
    }
    assert_eq!(b.pqxdh_bundle().pq_prekey.unwrap().id, 2, "one-time first");
    let p = b.new_pq_prekeys(2, true, &mut OsRng).unwrap();
    assert_eq!(p.kem_jobs().len(), 2);
    assert!(p.kem_jobs().iter().all(|j| j.op() == KemOp::KeyGen));
    let r = CpuKem.run(&p.kem_jobs()[..1]).unwrap();
    let before = b.to_bytes();
    assert_eq!(b.add_pq_prekeys(p, &r).err(), Some(Error::KemResultCount { expected: 2, got: 1 }));
    assert!(b.to_bytes() == before);
    assert!(matches!(
        b.add_pq_prekeys_with(200, true, &mut OsRng, &mut |jobs: &[KemJob]| -> Result<Vec<KemOutput>, Error> {
            Ok(jobs.iter().map(|_| KemOutput::PublicKey(Box::new([0u8; PUBLIC_KEY_LEN]))).collect())
        }),
        Err(Error::Oversized { .. })
    ));
    assert!(b.to_bytes() == before);
    let r2 = Responder::from_bytes(&b.to_bytes()).unwrap();
    assert_eq!(r2.to_bytes()[..], b.to_bytes()[..]);
    // A version-1 responder state (an X3DH-only responder, written before PQXDH) is read.
    let classic =
        Responder::generate(KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap(), 2, &mut OsRng, &mut DalekDh).unwrap();
    let v3 = classic.to_bytes_unsealed();
    let body = &v3[11..v3.len() - 9]; // without next id, 0 last-resort, 0 one-time
    let v1 = old_frame(b"XRR1", 1, body);
    let r1 = Responder::from_bytes(&v1).unwrap();
    assert_eq!(r1.bundle(), classic.bundle());
    assert!(!r1.has_pq_prekey());
    // Version 1 knows no PQXDH header flag.
    let (mut a, _, _) = common::pair(false);
    let s = a.to_bytes_unsealed();
    let mut s1 = old_frame(b"XRS1", 1, &s[11..]);
    let mut a1 = Session::from_bytes(&s1).unwrap();
    assert_eq!(a1.encrypt(b"x").unwrap().len(), a.encrypt(b"x").unwrap().len());
    s1[10] |= 0x10;
    let n = s1.len() - 32;
    use sha2::Digest;
    let sum = sha2::Sha256::digest(&s1[..n]);
    s1[n..].copy_from_slice(&sum);
    assert!(matches!(Session::from_bytes(&s1), Err(Error::StateCorrupt(_))));
}
