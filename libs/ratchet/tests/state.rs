//! The saved-state format (version 3): sealed and unsealed round trips, states written by the
//! previous version (files in tests/data, written by the version 2 code) still load and go on
//! working, the initiator's header dropped once the session is confirmed, and truncated,
//! garbled or mislabelled input refused with a clear error, never a panic.

mod common;

use common::{dec, TestRng};
use rand_core::RngCore;
use ratchet::wire::TYPE_PQ_PREKEY;
use ratchet::{Error, Session, STATE_VERSION};

/// A PQXDH initiator's session saved by the version 2 code after its first message (not yet
/// answered: it still sends the PQXDH header), and the responder's session that accepted it.
const ALICE_V2: &[u8] = include_bytes!("data/pqxdh-initiator-v2.state");
const BOB_V2: &[u8] = include_bytes!("data/pqxdh-responder-session-v2.state");

/// The version 3 header: magic, version, seal, body length.
const HEADER: usize = 11;

#[test]
fn version_2_states_load_and_the_initiator_drops_its_header_once_answered() {
    assert_eq!(STATE_VERSION, 3);
    assert_eq!(&ALICE_V2[4..6], &2u16.to_be_bytes(), "the fixture is a version 2 state");
    assert_eq!(&BOB_V2[4..6], &2u16.to_be_bytes());
    let mut alice = Session::from_bytes(ALICE_V2).unwrap();
    let mut bob = Session::from_bytes(BOB_V2).unwrap();
    assert!(alice.is_pqxdh() && bob.is_pqxdh());
    assert!(alice.pq_header().is_some());
    assert_eq!(alice.pq_header(), bob.pq_header());
    // Saved again, they are version 3 and read back the same.
    for s in [&alice, &bob] {
        let v3 = s.to_bytes();
        assert_eq!(&v3[4..7], &[0, 3, 1], "version 3, sealed");
        assert!(Session::from_bytes(&v3).unwrap().to_bytes() == v3);
        let un = s.to_bytes_unsealed();
        assert_eq!(&un[4..7], &[0, 3, 0], "version 3, unsealed");
        assert_eq!(un.len(), v3.len() - 32);
        assert!(Session::from_bytes(&un).unwrap().to_bytes() == v3);
    }
    // Alice still attaches the header; Bob recognises it from his restored state.
    let w = alice.encrypt(b"again").unwrap();
    assert_eq!(w[0], TYPE_PQ_PREKEY);
    assert_eq!(dec(&mut bob, &w).unwrap(), b"again");
    let before = alice.to_bytes().len();
    // Bob answers: Alice drops the header (1,573 bytes of PQXDH header and its X3DH part).
    assert_eq!(dec(&mut alice, &bob.encrypt(b"hello Alice").unwrap()).unwrap(), b"hello Alice");
    assert!(alice.is_pqxdh(), "still a PQXDH session");
    assert!(alice.pq_header().is_none() && alice.x3dh_header().is_none());
    let after = alice.to_bytes();
    assert!(after.len() + 1_573 < before, "{} -> {}", before, after.len());
    let mut alice = Session::from_bytes(&after).unwrap();
    assert!(alice.is_pqxdh() && alice.pq_header().is_none());
    let w = alice.encrypt(b"plain now").unwrap();
    assert_eq!(w[0], 0x01, "a ratchet message: no header");
    assert_eq!(dec(&mut bob, &w).unwrap(), b"plain now");
    // Bob keeps his (a repeated prekey message is recognised by it).
    assert!(bob.pq_header().is_some());
}

#[test]
fn unsealed_states_round_trip_and_bad_frames_are_refused() {
    let (mut a, mut b, _) = common::pair(true);
    dec(&mut a, &b.encrypt(b"r").unwrap()).unwrap();
    for _ in 0..3 {
        let _ = b.encrypt(b"skipped").unwrap();
    }
    dec(&mut a, &b.encrypt(b"last").unwrap()).unwrap();
    let sealed = a.to_bytes();
    let good = a.to_bytes_unsealed();
    assert_eq!(good.len() + 32, sealed.len());
    assert_eq!(&good[HEADER..], &sealed[HEADER..sealed.len() - 32], "the same body");
    assert!(Session::from_bytes(&good).unwrap().to_bytes() == sealed);
    // Every truncation and an extension.
    for len in 0..good.len() {
        assert!(matches!(Session::from_bytes(&good[..len]), Err(Error::StateCorrupt(_))), "len {len}");
    }
    let mut ext = good.to_vec();
    ext.push(0);
    assert!(matches!(Session::from_bytes(&ext), Err(Error::StateCorrupt(_))));
    // The seal byte: unknown kinds refused; a sealed state called unsealed (or the reverse)
    // no longer matches its length.
    for v in 2..=255u8 {
        let mut t = good.to_vec();
        t[6] = v;
        assert_eq!(Session::from_bytes(&t).err(), Some(Error::StateCorrupt("unknown seal kind")));
    }
    let mut t = sealed.to_vec();
    t[6] = 0;
    assert!(matches!(Session::from_bytes(&t), Err(Error::StateCorrupt(m)) if m.contains("length")));
    let mut t = good.to_vec();
    t[6] = 1;
    assert!(matches!(Session::from_bytes(&t), Err(Error::StateCorrupt(_))));
    // Every single-bit flip of the header is refused; in the sealed form every flip anywhere
    // is (tests/bad_input.rs); in the unsealed form damage to the body is the container's to
    // find (the chat's store seals its whole file), and here it must never cause a panic.
    for bit in 0..HEADER * 8 {
        let mut t = good.to_vec();
        t[bit / 8] ^= 1 << (bit % 8);
        assert!(Session::from_bytes(&t).is_err(), "header bit {bit} flipped: accepted");
    }
    let probe = b.encrypt(b"probe").unwrap();
    let mut g = TestRng(7);
    let mut refused = 0;
    for _ in 0..3000 {
        let mut t = good.to_vec();
        for _ in 0..1 + g.next_u32() % 4 {
            let i = HEADER + g.next_u32() as usize % (t.len() - HEADER);
            t[i] = g.next_u32() as u8;
        }
        match Session::from_bytes(&t) {
            Err(Error::StateCorrupt(_)) => refused += 1,
            Err(e) => panic!("{e}"),
            Ok(mut s) => {
                let _ = s.encrypt(b"x");
                let _ = dec(&mut s, &probe);
                let _ = s.to_bytes_unsealed();
            }
        }
    }
    assert!(refused > 100, "{refused}");
    // Garbage.
    assert!(Session::from_bytes(b"XRS1\x00\x03\x00").is_err());
    assert!(Session::from_bytes(&[0u8; 64]).is_err());
}

#[test]
fn responder_keys_round_trip_unsealed() {
    let (_, _, bob) = common::pair(true);
    let sealed = bob.to_bytes();
    let un = bob.to_bytes_unsealed();
    assert_eq!(un.len() + 32, sealed.len());
    assert!(ratchet::Responder::from_bytes(&un).unwrap().to_bytes() == sealed);
    for len in 0..un.len() {
        assert!(ratchet::Responder::from_bytes(&un[..len]).is_err(), "len {len}");
    }
    // A responder's state is not a session, sealed or not.
    assert!(matches!(Session::from_bytes(&un), Err(Error::StateCorrupt(m)) if m.contains("other kind")));
}
