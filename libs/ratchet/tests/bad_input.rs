//! Bad input: every failure is a clear error, never a panic, and leaves the state exactly as it
//! was (compared through the serialized state, which covers every field).

mod common;

use common::{dec, pair, TestRng};
use rand_core::{OsRng, RngCore};
use ratchet::wire::{HEADER_LEN, MAX_RATCHET_MESSAGE_LEN, MIN_RATCHET_MESSAGE_LEN};
use ratchet::{x3dh, DalekDh, Error, KeyPair, Limits, Responder, Session, MAX_MESSAGE_LEN, MAX_PLAINTEXT_LEN};

/// Flips every bit of `wire`; each variant must be refused with `s` unchanged; then the original
/// must still decrypt to `pt`.
fn every_bit_flip_rejected(s: &mut Session, wire: &[u8], pt: &[u8]) {
    let before = s.to_bytes();
    for bit in 0..wire.len() * 8 {
        let mut t = wire.to_vec();
        t[bit / 8] ^= 1 << (bit % 8);
        let r = dec(s, &t);
        assert!(r.is_err(), "bit {bit} flipped: accepted");
        assert!(s.to_bytes() == before, "bit {bit} flipped: state changed ({:?})", r);
    }
    assert_eq!(dec(s, wire).unwrap(), pt);
}

#[test]
fn bit_flips_same_chain_message() {
    let (mut a, mut b, _) = pair(true);
    let m = b.encrypt(b"one").unwrap();
    assert_eq!(dec(&mut a, &m).unwrap(), b"one");
    let m2 = b.encrypt(b"same chain, no DH").unwrap();
    every_bit_flip_rejected(&mut a, &m2, b"same chain, no DH");
}

#[test]
fn bit_flips_new_ratchet_key_message() {
    let (mut a, mut b, _) = pair(true);
    let m = b.encrypt(b"starts a DH ratchet step").unwrap();
    every_bit_flip_rejected(&mut a, &m, b"starts a DH ratchet step");
}

#[test]
fn bit_flips_skipped_key_message() {
    let (mut a, mut b, _) = pair(true);
    let m0 = b.encrypt(b"skipped").unwrap();
    let m1 = b.encrypt(b"first delivered").unwrap();
    assert_eq!(dec(&mut a, &m1).unwrap(), b"first delivered");
    assert_eq!(a.skipped_keys(), 1);
    every_bit_flip_rejected(&mut a, &m0, b"skipped");
    assert_eq!(a.skipped_keys(), 0);
}

#[test]
fn bit_flips_prekey_message() {
    let mut dh = DalekDh;
    let mut bob = Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), 1, &mut OsRng, &mut dh).unwrap();
    let alice_id = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    let mut a = x3dh::initiate_with(&alice_id, &bob.bundle(), &mut OsRng, &mut dh).unwrap();
    let m = a.encrypt(b"prekey").unwrap();
    let m2 = a.encrypt(b"second prekey").unwrap();
    let before = bob.to_bytes();
    for bit in 0..m.len() * 8 {
        let mut t = m.clone();
        t[bit / 8] ^= 1 << (bit % 8);
        assert!(bob.accept_with(&t, &mut OsRng, &mut dh).is_err(), "bit {bit} flipped: accepted");
        assert!(bob.to_bytes() == before, "bit {bit} flipped: responder changed");
    }
    let (mut s, pt) = bob.accept_with(&m, &mut OsRng, &mut dh).unwrap();
    assert_eq!(&pt[..], b"prekey");
    // The session also refuses every flip of the next prekey message (X3DH header included).
    every_bit_flip_rejected(&mut s, &m2, b"second prekey");
}

#[test]
fn replays_rejected() {
    let (mut a, mut b, mut bob) = pair(true);
    // Same chain.
    let m0 = b.encrypt(b"0").unwrap();
    let m1 = b.encrypt(b"1").unwrap();
    let m2 = b.encrypt(b"2").unwrap();
    dec(&mut a, &m0).unwrap();
    dec(&mut a, &m2).unwrap();
    let before = a.to_bytes();
    assert!(matches!(dec(&mut a, &m0), Err(Error::Duplicate { n: 0, .. })));
    assert!(matches!(dec(&mut a, &m2), Err(Error::Duplicate { n: 2, .. })));
    assert!(a.to_bytes() == before);
    // A skipped key is used once.
    dec(&mut a, &m1).unwrap();
    assert!(matches!(dec(&mut a, &m1), Err(Error::Duplicate { n: 1, .. })));
    // A message of a chain we have left: refused as a duplicate with no DH step.
    let r = a.encrypt(b"turn").unwrap();
    dec(&mut b, &r).unwrap();
    let n0 = b.encrypt(b"new chain").unwrap();
    dec(&mut a, &n0).unwrap();
    let before = a.to_bytes();
    assert!(matches!(a.decrypt(&m0, &mut OsRng), Err(Error::Duplicate { .. })));
    assert!(a.to_bytes() == before);
    // The first (prekey) message again: its one-time prekey is gone.
    let mut dh = DalekDh;
    let alice_id = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    bob.add_one_time_prekeys(1, &mut OsRng, &mut dh).unwrap();
    let mut a2 = x3dh::initiate_with(&alice_id, &bob.bundle(), &mut OsRng, &mut dh).unwrap();
    let first = a2.encrypt(b"first").unwrap();
    bob.accept_with(&first, &mut OsRng, &mut dh).unwrap();
    assert_eq!(bob.accept_with(&first, &mut OsRng, &mut dh).err(), Some(Error::UnknownPreKey("one-time prekey")));
}

#[test]
fn skip_beyond_max_skip_rejected_in_every_chain() {
    let limits = Limits { max_skip: 20, max_stored_keys: 100 };
    let (mut a, mut b, _) = pair(true);
    a.set_limits(limits).unwrap();
    // New chain: N = 21.
    let msgs: Vec<Vec<u8>> = (0..23u8).map(|i| b.encrypt(&[i]).unwrap()).collect();
    let before = a.to_bytes();
    assert_eq!(dec(&mut a, &msgs[21]).err(), Some(Error::TooManySkipped { skip: 21, max: 20 }));
    assert!(a.to_bytes() == before);
    // Current chain: after message 0, N = 22 skips 21.
    dec(&mut a, &msgs[0]).unwrap();
    let before = a.to_bytes();
    assert_eq!(dec(&mut a, &msgs[22]).err(), Some(Error::TooManySkipped { skip: 21, max: 20 }));
    assert!(a.to_bytes() == before);
    // Exactly MAX_SKIP is accepted.
    assert_eq!(dec(&mut a, &msgs[21]).unwrap(), [21]);
    // Previous chain: the peer sent 40 in a chain of which we got 1, then ratchets: PN = 40.
    let (mut a, mut b, _) = pair(true);
    a.set_limits(limits).unwrap();
    let msgs: Vec<Vec<u8>> = (0..40u8).map(|i| b.encrypt(&[i]).unwrap()).collect();
    dec(&mut a, &msgs[0]).unwrap();
    let r = a.encrypt(b"r").unwrap();
    dec(&mut b, &r).unwrap();
    let next = b.encrypt(b"pn=40").unwrap();
    let before = a.to_bytes();
    assert_eq!(dec(&mut a, &next).err(), Some(Error::TooManySkipped { skip: 39, max: 20 }));
    assert!(a.to_bytes() == before);
}

#[test]
fn truncated_oversized_and_malformed_messages() {
    let (mut a, mut b, _) = pair(true);
    dec(&mut a, &b.encrypt(b"x").unwrap()).unwrap();
    let m = b.encrypt(&[0x42; 40]).unwrap(); // 41 + 48 + 32 bytes
    let before = a.to_bytes();
    for len in 0..m.len() {
        let e = dec(&mut a, &m[..len]).unwrap_err();
        let body = len.saturating_sub(HEADER_LEN + 32);
        match e {
            Error::Truncated { .. } => assert!(len < MIN_RATCHET_MESSAGE_LEN, "{len}: {e}"),
            Error::Malformed(_) => assert!(body % 16 != 0, "{len}: {e}"),
            // Cut at a block boundary: looks well-formed, the tag cannot match.
            Error::Authentication => {
                assert!(body % 16 == 0 && len >= MIN_RATCHET_MESSAGE_LEN, "{len}")
            }
            other => panic!("prefix of {len} bytes: unexpected {other}"),
        }
        assert!(!e.to_string().is_empty());
        assert!(a.to_bytes() == before);
    }
    // Extended by whole blocks, or by stray bytes.
    let mut ext = m.clone();
    ext.extend_from_slice(&[0; 16]);
    assert_eq!(dec(&mut a, &ext).err(), Some(Error::Authentication));
    ext.push(0);
    assert!(matches!(dec(&mut a, &ext), Err(Error::Malformed(_))));
    // Oversized: beyond every limit, and a ratchet message beyond its own.
    let big = vec![1u8; MAX_MESSAGE_LEN + 1];
    assert!(
        matches!(dec(&mut a, &big), Err(Error::Oversized { len, max, .. }) if len == MAX_MESSAGE_LEN + 1 && max == MAX_MESSAGE_LEN)
    );
    let mut big = m[..HEADER_LEN].to_vec();
    big.resize(MAX_RATCHET_MESSAGE_LEN + 16, 0);
    assert!(matches!(dec(&mut a, &big), Err(Error::Oversized { what: "ratchet message", .. })));
    assert!(matches!(b.encrypt(&vec![0; MAX_PLAINTEXT_LEN + 1]), Err(Error::Oversized { what: "plaintext", .. })));
    b.encrypt(&vec![0; MAX_PLAINTEXT_LEN]).unwrap();
    // Unknown type bytes, bad prekey flags.
    for t in 0..=255u8 {
        if t == 1 || t == 2 || t == 4 {
            continue;
        }
        let mut x = m.clone();
        x[0] = t;
        assert_eq!(dec(&mut a, &x).err(), Some(Error::UnknownMessageType(t)));
    }
    let mut p = vec![0x02, 0x80];
    p.extend_from_slice(&[0; 200]);
    assert!(matches!(dec(&mut a, &p), Err(Error::Malformed(_))));
    // type 0x04 (PQXDH prekey message): the ratchet message's type byte must follow CT.
    let mut x = m.clone();
    x[0] = 4;
    assert!(matches!(dec(&mut a, &x), Err(Error::Malformed(_) | Error::Truncated { .. })));
    let mut p = vec![0x04, 0x04];
    p.extend_from_slice(&[0; 2000]);
    assert!(matches!(dec(&mut a, &p), Err(Error::Malformed(_))));
    assert!(a.to_bytes() == before);
}

#[test]
fn low_order_ratchet_key_refused() {
    let (mut a, mut b, _) = pair(true);
    let m = b.encrypt(b"x").unwrap();
    let before = a.to_bytes();
    let mut one = [0u8; 32];
    one[0] = 1;
    for u in [[0u8; 32], one] {
        let mut t = m.clone();
        t[1..33].copy_from_slice(&u);
        assert_eq!(dec(&mut a, &t).err(), Some(Error::InvalidPublicKey));
        assert!(a.to_bytes() == before);
    }
}

#[test]
fn corrupted_session_state_refused() {
    let (mut a, mut b, _) = pair(true);
    for i in 0..3u8 {
        let _ = b.encrypt(&[i]).unwrap(); // leaves skipped keys behind
    }
    dec(&mut a, &b.encrypt(b"last").unwrap()).unwrap();
    let probe_same = b.encrypt(b"probe").unwrap();
    let good = a.to_bytes();
    let probe_new = {
        let r = a.clone().encrypt(b"r").unwrap();
        let mut b2 = b.clone();
        dec(&mut b2, &r).unwrap();
        b2.encrypt(b"new chain").unwrap()
    };
    Session::from_bytes(&good).unwrap();
    // Every single-bit flip.
    for bit in 0..good.len() * 8 {
        let mut t = good.to_vec();
        t[bit / 8] ^= 1 << (bit % 8);
        let e = Session::from_bytes(&t).err().unwrap_or_else(|| panic!("bit {bit} flipped: accepted"));
        assert!(matches!(e, Error::StateCorrupt(_) | Error::StateVersion { .. }), "bit {bit}: {e}");
    }
    // Every truncation and an extension.
    for len in 0..good.len() {
        assert!(matches!(Session::from_bytes(&good[..len]), Err(Error::StateCorrupt(_))), "len {len}");
    }
    let mut ext = good.to_vec();
    ext.push(0);
    assert!(Session::from_bytes(&ext).is_err());
    // Another version, with a valid checksum.
    let mut v4 = good.to_vec();
    v4[4..6].copy_from_slice(&4u16.to_be_bytes());
    refresh_checksum(&mut v4);
    let e = Session::from_bytes(&v4).err().unwrap();
    assert_eq!(e, Error::StateVersion { found: 4, supported: 3 });
    assert_eq!(e.to_string(), "state is version 4, this build reads versions 1 to 3");
    // A responder state is not a session.
    let (_, _, bob) = pair(false);
    assert!(matches!(Session::from_bytes(&bob.to_bytes()), Err(Error::StateCorrupt(m)) if m.contains("other kind")));
    // Garbage.
    assert!(Session::from_bytes(b"").is_err());
    assert!(Session::from_bytes(&[0u8; 4096]).is_err());
    let mut t = good.to_vec();
    // max_stored_keys (2000) is followed by the AD length (66).
    let limits_at = t.windows(6).position(|w| w == [0, 0, 0x07, 0xd0, 0, 66]).expect("layout changed; update the test");
    t[limits_at..limits_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    refresh_checksum(&mut t);
    assert_eq!(Session::from_bytes(&t).err(), Some(Error::StateCorrupt("limits above MAX_LIMIT")));
    // Damage that passes the checksum (fields rewritten, checksum recomputed): never a panic.
    let mut g = TestRng(99);
    let mut refused = 0;
    for _ in 0..5000 {
        let mut t = good.to_vec();
        for _ in 0..1 + g.next_u32() % 4 {
            let i = HEADER + g.next_u32() as usize % (t.len() - HEADER - 32);
            t[i] = g.next_u32() as u8;
        }
        if g.next_u32() % 4 == 0 {
            // Also lie about the body length.
            let len = (t.len() - HEADER - 32) as u32 ^ (1 << (g.next_u32() % 12));
            t[HEADER - 4..HEADER].copy_from_slice(&len.to_be_bytes());
        }
        refresh_checksum(&mut t);
        match Session::from_bytes(&t) {
            Err(_) => refused += 1,
            // A damaged session that parses must still never panic when used.
            Ok(mut s) => {
                let _ = s.encrypt(b"probe");
                let _ = dec(&mut s, &probe_same);
                let _ = dec(&mut s, &probe_new);
                let _ = s.to_bytes();
            }
        }
    }
    assert!(refused > 100, "{refused}");
}

#[test]
fn corrupted_responder_state_refused() {
    let mut dh = DalekDh;
    let bob = Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), 3, &mut OsRng, &mut dh).unwrap();
    let good = bob.to_bytes();
    for bit in 0..good.len() * 8 {
        let mut t = good.to_vec();
        t[bit / 8] ^= 1 << (bit % 8);
        assert!(Responder::from_bytes(&t).is_err(), "bit {bit}");
    }
    for len in 0..good.len() {
        assert!(Responder::from_bytes(&good[..len]).is_err(), "len {len}");
    }
    let mut t = good.to_vec();
    t[HEADER + 64] = 0; // signed prekey count 0
    refresh_checksum(&mut t);
    assert_eq!(Responder::from_bytes(&t).err(), Some(Error::StateCorrupt("signed prekey count")));
}

/// A version 3 state's header: magic, version, seal, body length.
const HEADER: usize = 11;

fn refresh_checksum(t: &mut Vec<u8>) {
    use sha2_for_tests::digest;
    let n = t.len() - 32;
    let d = digest(&t[..n]);
    t[n..].copy_from_slice(&d);
}

/// SHA-256 for the tests (through the crate's own dependency, re-hashed here).
mod sha2_for_tests {
    pub fn digest(b: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::digest(b).into()
    }
}
