//! Protocol behaviour between two instances of this crate (the outside references are in
//! interop.rs and rfc7748.rs).

mod common;

use common::{dec, pair, TestRng};
use rand_core::{OsRng, RngCore};
use ratchet::{x3dh, DalekDh, Decrypted, Dh, DhJob, Error, KeyPair, Limits, Responder, Session};

#[test]
fn x3dh_with_and_without_one_time_prekey() {
    for opk in [true, false] {
        let (mut a, mut b, bob) = pair(opk);
        assert_eq!(bob.one_time_prekeys(), 0, "the one-time prekey is consumed");
        for i in 0..5 {
            let m = b.encrypt(format!("b{i}").as_bytes()).unwrap();
            assert_eq!(dec(&mut a, &m).unwrap(), format!("b{i}").into_bytes());
            let m = a.encrypt(format!("a{i}").as_bytes()).unwrap();
            assert_eq!(m[0], 0x01, "after a reply Alice sends plain ratchet messages");
            assert_eq!(dec(&mut b, &m).unwrap(), format!("a{i}").into_bytes());
        }
    }
}

#[test]
fn initiator_repeats_prekey_header_until_reply() {
    let mut dh = DalekDh;
    let mut bob = Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), 2, &mut OsRng, &mut dh).unwrap();
    let alice_id = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    let mut a = x3dh::initiate_with(&alice_id, &bob.bundle(), &mut OsRng, &mut dh).unwrap();
    let m1 = a.encrypt(b"one").unwrap();
    let m2 = a.encrypt(b"two").unwrap();
    assert_eq!((m1[0], m2[0]), (0x02, 0x02));
    // Delivered out of order: the second prekey message creates the session.
    let (mut b, pt) = bob.accept_with(&m2, &mut OsRng, &mut dh).unwrap();
    assert_eq!(&pt[..], b"two");
    // The first belongs to the same session now (and the OPK is gone from the responder).
    assert_eq!(bob.accept_with(&m1, &mut OsRng, &mut dh).err(), Some(Error::UnknownPreKey("one-time prekey")));
    assert_eq!(dec(&mut b, &m1).unwrap(), b"one");
    // A prekey message of another session is refused by this one.
    let mut a2 = x3dh::initiate_with(&alice_id, &bob.bundle(), &mut OsRng, &mut dh).unwrap();
    let other = a2.encrypt(b"x").unwrap();
    assert_eq!(dec(&mut b, &other).err(), Some(Error::WrongSession));
}

/// Random conversation with reordering and loss: every delivered message decrypts exactly once.
#[test]
fn random_conversation_out_of_order_and_loss() {
    let (mut a, mut b, _) = pair(true);
    let mut rng = TestRng(7);
    let mut to_a: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut to_b: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut delivered = 0;
    for step in 0..2000u32 {
        match rng.next_u32() % 6 {
            0 => {
                let p = format!("a->b {step}").into_bytes();
                to_b.push((a.encrypt(&p).unwrap(), p));
            }
            1 => {
                let p = format!("b->a {step}").into_bytes();
                to_a.push((b.encrypt(&p).unwrap(), p));
            }
            2 | 3 if !to_b.is_empty() => {
                let i = rng.next_u32() as usize % to_b.len();
                let (m, p) = to_b.swap_remove(i);
                if rng.next_u32() % 10 != 0 {
                    assert_eq!(dec(&mut b, &m).unwrap(), p);
                    delivered += 1;
                    assert!(matches!(dec(&mut b, &m), Err(Error::Duplicate { .. })), "replay accepted");
                }
            }
            4 | 5 if !to_a.is_empty() => {
                let i = rng.next_u32() as usize % to_a.len();
                let (m, p) = to_a.swap_remove(i);
                if rng.next_u32() % 10 != 0 {
                    assert_eq!(dec(&mut a, &m).unwrap(), p);
                    delivered += 1;
                    assert!(matches!(dec(&mut a, &m), Err(Error::Duplicate { .. })), "replay accepted");
                }
            }
            _ => {}
        }
    }
    assert!(delivered > 500, "{delivered}");
}

#[test]
fn skipped_keys_and_max_skip() {
    let (mut a, mut b, _) = pair(true);
    let max = a.limits().max_skip;
    let msgs: Vec<Vec<u8>> = (0..=max + 1).map(|i| b.encrypt(&i.to_be_bytes()).unwrap()).collect();
    // Message MAX_SKIP + 1 of a new chain would skip MAX_SKIP + 1 keys: refused, before any DH.
    let before = a.to_bytes();
    assert_eq!(
        a.decrypt(&msgs[max as usize + 1], &mut OsRng).err(),
        Some(Error::TooManySkipped { skip: u64::from(max) + 1, max })
    );
    assert_eq!(a.to_bytes(), before);
    // Exactly MAX_SKIP is fine, and every skipped one decrypts later, in any order.
    assert_eq!(dec(&mut a, &msgs[max as usize]).unwrap(), max.to_be_bytes());
    assert_eq!(a.skipped_keys(), max as usize);
    for i in (0..max as usize).rev().step_by(97) {
        assert_eq!(dec(&mut a, &msgs[i]).unwrap(), (i as u32).to_be_bytes());
    }
    assert_eq!(dec(&mut a, &msgs[max as usize + 1]).unwrap(), (max + 1).to_be_bytes());
}

#[test]
fn stored_key_cap_evicts_oldest() {
    let (mut a, mut b, _) = pair(true);
    a.set_limits(Limits { max_skip: 100, max_stored_keys: 5 }).unwrap();
    let msgs: Vec<Vec<u8>> = (0..11u32).map(|i| b.encrypt(&i.to_be_bytes()).unwrap()).collect();
    assert_eq!(dec(&mut a, &msgs[10]).unwrap(), 10u32.to_be_bytes());
    assert_eq!(a.skipped_keys(), 5);
    for i in 0..5 {
        assert!(matches!(dec(&mut a, &msgs[i]), Err(Error::Duplicate { .. })), "evicted key {i} still usable");
    }
    for i in 5..10 {
        assert_eq!(dec(&mut a, &msgs[i]).unwrap(), (i as u32).to_be_bytes());
    }
}

/// Skipped keys of the previous chain (PN) are kept across a DH ratchet step.
#[test]
fn previous_chain_keys_survive_ratchet_step() {
    let (mut a, mut b, _) = pair(true);
    let old: Vec<Vec<u8>> = (0..3).map(|i| b.encrypt(&[i]).unwrap()).collect();
    assert_eq!(dec(&mut a, &old[0]).unwrap(), [0]);
    let r = a.encrypt(b"turn").unwrap();
    assert_eq!(dec(&mut b, &r).unwrap(), b"turn");
    let new = b.encrypt(b"new chain").unwrap(); // PN = 3
    assert_eq!(dec(&mut a, &new).unwrap(), b"new chain");
    assert_eq!(a.skipped_keys(), 2);
    assert_eq!(dec(&mut a, &old[2]).unwrap(), [2]);
    assert_eq!(dec(&mut a, &old[1]).unwrap(), [1]);
}

#[test]
fn two_phase_rules() {
    let (mut a, mut b, _) = pair(true);
    let m = b.encrypt(b"x").unwrap();
    let Decrypted::NeedsDh(step) = a.decrypt(&m, &mut OsRng).unwrap() else { panic!("new ratchet key needs DH") };
    assert_eq!(step.jobs().len(), 3);
    let r = DalekDh.run(step.jobs()).unwrap();
    // Wrong count.
    assert_eq!(a.complete_decrypt(step, &r[..2]).err(), Some(Error::DhResultCount { expected: 3, got: 2 }));
    // All-zero result (low-order point).
    let Decrypted::NeedsDh(step) = a.decrypt(&m, &mut OsRng).unwrap() else { panic!() };
    let mut bad = DalekDh.run(step.jobs()).unwrap();
    bad[0] = zeroize::Zeroizing::new([0u8; 32]);
    assert_eq!(a.complete_decrypt(step, &bad).err(), Some(Error::InvalidPublicKey));
    // Wrong DH result: tag fails, state unchanged.
    let before = a.to_bytes();
    let Decrypted::NeedsDh(step) = a.decrypt(&m, &mut OsRng).unwrap() else { panic!() };
    let mut wrong = DalekDh.run(step.jobs()).unwrap();
    wrong[0][5] ^= 1;
    assert_eq!(a.complete_decrypt(step, &wrong).err(), Some(Error::Authentication));
    assert_eq!(a.to_bytes(), before);
    // Stale: the session changed between the phases.
    let Decrypted::NeedsDh(step) = a.decrypt(&m, &mut OsRng).unwrap() else { panic!() };
    let r = DalekDh.run(step.jobs()).unwrap();
    a.encrypt(b"meanwhile").unwrap();
    assert_eq!(a.complete_decrypt(step, &r).err(), Some(Error::StalePending));
    // And then it works.
    assert_eq!(dec(&mut a, &m).unwrap(), b"x");
}

/// The async shape: jobs run on another thread, completed later, results in order.
#[test]
fn dh_on_another_thread() {
    let (mut a, mut b, _) = pair(true);
    for i in 0..10u8 {
        let m = b.encrypt(&[i]).unwrap();
        match a.decrypt(&m, &mut OsRng).unwrap() {
            Decrypted::Plaintext(_) => panic!("each reply here starts a new chain"),
            Decrypted::NeedsDh(step) => {
                let jobs: Vec<DhJob> = step.jobs().to_vec();
                let results =
                    std::thread::spawn(move || jobs.iter().map(DhJob::run_dalek).collect::<Vec<_>>()).join().unwrap();
                assert_eq!(&a.complete_decrypt(step, &results).unwrap()[..], [i]);
            }
        }
        let r = a.encrypt(&[i]).unwrap();
        assert_eq!(dec(&mut b, &r).unwrap(), [i]);
    }
}

#[test]
fn state_roundtrip_mid_conversation() {
    let (mut a, mut b, bob) = pair(true);
    let pending: Vec<Vec<u8>> = (0..4).map(|i| b.encrypt(&[i]).unwrap()).collect();
    assert_eq!(dec(&mut a, &pending[3]).unwrap(), [3]);
    let bytes = a.to_bytes();
    let mut a2 = Session::from_bytes(&bytes).unwrap();
    assert_eq!(a2.to_bytes(), bytes);
    assert_eq!(dec(&mut a2, &pending[1]).unwrap(), [1]);
    let m = a2.encrypt(b"after restore").unwrap();
    assert_eq!(dec(&mut b, &m).unwrap(), b"after restore");
    let rb = bob.to_bytes();
    let bob2 = Responder::from_bytes(&rb).unwrap();
    assert_eq!(bob2.to_bytes(), rb);
    assert_eq!(bob2.bundle(), bob.bundle());
}

#[test]
fn responder_cannot_send_first_and_bundle_roundtrip() {
    let mut dh = DalekDh;
    let bob = Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), 3, &mut OsRng, &mut dh).unwrap();
    let b = bob.bundle();
    assert_eq!(ratchet::PreKeyBundle::parse(&b.encode()).unwrap(), b);
    b.verify().unwrap();
    let mut forged = b.clone();
    forged.signed_prekey[0] ^= 1;
    let alice_id = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    assert_eq!(x3dh::initiate(&alice_id, &forged, &mut OsRng).err(), Some(Error::BadSignature));
    let spk = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    let mut s = Session::respond(&[1; 32], spk, b"ad").unwrap();
    assert_eq!(s.encrypt(b"x").err(), Some(Error::NoSendingChain));
}

/// A failing RNG (e.g. TRNG health failure) is an error, not a silent fallback.
#[test]
fn rng_failure_is_an_error() {
    struct Broken;
    impl rand_core::RngCore for Broken {
        fn next_u32(&mut self) -> u32 {
            unreachable!()
        }
        fn next_u64(&mut self) -> u64 {
            unreachable!()
        }
        fn fill_bytes(&mut self, _: &mut [u8]) {
            unreachable!()
        }
        fn try_fill_bytes(&mut self, _: &mut [u8]) -> Result<(), rand_core::Error> {
            Err(rand_core::Error::from(core::num::NonZeroU32::new(rand_core::Error::CUSTOM_START + 1).unwrap()))
        }
    }
    impl rand_core::CryptoRng for Broken {}
    let (mut a, mut b, _) = pair(true);
    let m = b.encrypt(b"x").unwrap();
    let before = a.to_bytes();
    assert!(matches!(a.decrypt(&m, &mut Broken), Err(Error::Rng(_))));
    assert_eq!(a.to_bytes(), before);
}
