#![allow(dead_code)]

use rand_core::{CryptoRng, OsRng, RngCore};
use ratchet::{x3dh, DalekDh, KeyPair, Responder, Session};

/// Deterministic test RNG (SplitMix64) so failures reproduce.
#[derive(Clone)]
pub struct TestRng(pub u64);

impl RngCore for TestRng {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for c in dest.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}
impl CryptoRng for TestRng {}

/// Alice and Bob with an X3DH session where both can send (Alice's first message delivered).
pub fn pair(one_time: bool) -> (Session, Session, Responder) {
    let mut dh = DalekDh;
    let mut bob = Responder::generate(
        KeyPair::generate(&mut OsRng, &mut dh).unwrap(),
        usize::from(one_time),
        &mut OsRng,
        &mut dh,
    )
    .unwrap();
    let alice_id = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    let mut alice = x3dh::initiate_with(&alice_id, &bob.bundle(), &mut OsRng, &mut dh).unwrap();
    let first = alice.encrypt(b"first").unwrap();
    let (bob_s, pt) = bob.accept_with(&first, &mut OsRng, &mut dh).unwrap();
    assert_eq!(&pt[..], b"first");
    (alice, bob_s, bob)
}

pub fn dec(s: &mut Session, wire: &[u8]) -> Result<Vec<u8>, ratchet::Error> {
    s.decrypt_with(wire, &mut OsRng, &mut DalekDh).map(|p| p.to_vec())
}
