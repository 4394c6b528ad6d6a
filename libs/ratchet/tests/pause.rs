//! The pause a process names (`ratchet::set_pause`) is called between the pieces of a DH
//! ratchet step, of a decryption and of an encryption, and the results are those without it.
//! (Its own test binary: the pause is named once per process.)

use std::sync::atomic::{AtomicUsize, Ordering};

use rand_core::OsRng;
use ratchet::{DalekDh, KeyPair, Session};
use x25519_dalek::StaticSecret;

static PAUSES: AtomicUsize = AtomicUsize::new(0);

fn count() {
    PAUSES.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_named_pause_is_called_between_the_pieces_of_a_step() {
    let sk = [7u8; 32];
    let bob_kp = KeyPair::from_secret(StaticSecret::from([9u8; 32]));
    let mut alice = Session::initiate_with(&sk, &bob_kp.public, b"ad", &mut OsRng, &mut DalekDh).unwrap();
    let mut bob = Session::respond(&sk, bob_kp, b"ad").unwrap();
    // before any pause is named: nothing called
    let w = alice.encrypt(b"m0").unwrap();
    bob.decrypt_with(&w, &mut OsRng, &mut DalekDh).unwrap();
    assert_eq!(PAUSES.load(Ordering::SeqCst), 0);

    assert!(ratchet::set_pause(count));
    assert!(!ratchet::set_pause(count), "named once per process");
    // an encryption: a pause after its keys, one inside ENCRYPT
    let w = bob.encrypt(b"reply with a new ratchet key").unwrap();
    let after_encrypt = PAUSES.load(Ordering::SeqCst);
    assert_eq!(after_encrypt, 2);
    // Alice's DH ratchet step on receipt: after each KDF_RK, the chain, and inside DECRYPT
    let pt = alice.decrypt_with(&w, &mut OsRng, &mut DalekDh).unwrap();
    assert_eq!(&pt[..], b"reply with a new ratchet key");
    assert_eq!(PAUSES.load(Ordering::SeqCst) - after_encrypt, 5);
    // a tampered message: refused as before (the pause changes nothing)
    let mut bad = alice.encrypt(b"m1").unwrap();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(bob.decrypt_with(&bad, &mut OsRng, &mut DalekDh).is_err());
    bad[last] ^= 1;
    assert_eq!(&bob.decrypt_with(&bad, &mut OsRng, &mut DalekDh).unwrap()[..], b"m1");
}
