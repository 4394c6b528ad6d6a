//! Outside references for the DH plumbing: RFC 7748 vectors through `DhJob` (the form the engine
//! service receives), and a check that every X25519 of the protocol goes through the provider.

use rand_core::OsRng;
use ratchet::x25519_dalek::{PublicKey, StaticSecret};
use ratchet::{x3dh, DalekDh, Dh, DhJob, DhOutput, DhPurpose, Error, KeyPair, Responder, BASEPOINT};

fn h32(s: &str) -> [u8; 32] {
    let v: Vec<u8> = (0..64).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect();
    v.try_into().unwrap()
}

/// RFC 7748 section 5.2, the two single-shot vectors.
#[test]
fn rfc7748_section_5_2() {
    let cases = [
        (
            "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
        ),
        (
            "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
        ),
    ];
    for (k, u, out) in cases {
        let job = DhJob { secret: StaticSecret::from(h32(k)), public: h32(u), purpose: DhPurpose::RatchetReceive };
        assert_eq!(*job.run_dalek(), h32(out));
        assert_eq!(*DalekDh.run(&[job]).unwrap()[0], h32(out));
    }
}

/// RFC 7748 section 6.1: key generation as `X25519(k, 9)` and the shared secret.
#[test]
fn rfc7748_section_6_1() {
    let a = StaticSecret::from(h32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"));
    let b = StaticSecret::from(h32("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"));
    let a_pub = h32("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    let b_pub = h32("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    let k = h32("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    let out = DalekDh
        .run(&[
            DhJob::public_key(&a),
            DhJob::public_key(&b),
            DhJob::agree(&a, &PublicKey::from(b_pub), DhPurpose::X3dh(1)),
            DhJob::agree(&b, &PublicKey::from(a_pub), DhPurpose::X3dh(1)),
        ])
        .unwrap();
    assert_eq!([*out[0], *out[1], *out[2], *out[3]], [a_pub, b_pub, k, k]);
    assert_eq!(DhJob::public_key(&a).public, BASEPOINT);
}

/// Every X25519 of a whole exchange goes through the caller's provider (here a closure that
/// counts, as the engine service client would): 5 + 7 + 7 + 3 per turn, nothing on the side.
#[test]
fn all_dh_goes_through_the_provider() {
    let mut count = 0usize;
    let mut provider = |jobs: &[DhJob]| -> Result<Vec<DhOutput>, Error> {
        count += jobs.len();
        Ok(jobs.iter().map(DhJob::run_dalek).collect())
    };
    let bob_id = KeyPair::generate(&mut OsRng, &mut provider).unwrap();
    let mut bob = Responder::generate(bob_id, 1, &mut OsRng, &mut provider).unwrap();
    let alice_id = KeyPair::generate(&mut OsRng, &mut provider).unwrap();
    let setup = 1 + 1 + 1 + 1; // two identities, the signed prekey, one one-time prekey
    let mut a = x3dh::initiate_with(&alice_id, &bob.bundle(), &mut OsRng, &mut provider).unwrap();
    let m = a.encrypt(b"x").unwrap();
    let (mut b, _) = bob.accept_with(&m, &mut OsRng, &mut provider).unwrap();
    let r = b.encrypt(b"y").unwrap();
    a.decrypt_with(&r, &mut OsRng, &mut provider).unwrap();
    drop(provider);
    assert_eq!(count, setup + 7 + 7 + 3);
}
