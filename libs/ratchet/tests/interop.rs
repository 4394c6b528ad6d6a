//! Interop with independent implementations: PyPI DoubleRatchet 1.3.0 and x3dh 1.3.0 (and the
//! xeddsa 1.2.0 they use), driven through libs/ratchet/interop/peer.py; and PQXDH written from
//! Signal's specification in Python (libs/ratchet/interop/pqxdh_spec.py: kyber-py 1.2.0's
//! ML-KEM-1024, `cryptography`'s X25519 and HKDF).
//!
//! These tests need the project's Python venv and are run by `cargo xtask test --only
//! ratchet:interop`, which creates the venv (tools/requirements.txt) and sets
//! RATCHET_INTEROP_PYTHON. Run by hand:
//!   RATCHET_INTEROP_PYTHON=target/venv/bin/python cargo test -p ratchet --test interop -- --ignored
//! Without the variable they fail (they never pass silently).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use common::TestRng;
use rand_core::{OsRng, RngCore};
use ratchet::pqxdh::{self, PqxdhBundle};
use ratchet::x25519_dalek::{PublicKey, StaticSecret};
use ratchet::{x3dh, xeddsa, CpuKem, DalekDh, Decrypted, KeyPair, PreKeyBundle, Responder, Session};
use serde_json::{json, Value};

const PEER_TIMEOUT: Duration = Duration::from_secs(60);

struct Peer {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<String>,
}

impl Peer {
    fn spawn() -> Peer {
        let py = std::env::var("RATCHET_INTEROP_PYTHON").unwrap_or_else(|_| {
            panic!(
                "RATCHET_INTEROP_PYTHON is not set: run `cargo xtask test --only ratchet:interop` \
                 (it creates the venv with DoubleRatchet==1.3.0 and x3dh==1.3.0)"
            )
        });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/interop/peer.py");
        let mut child = Command::new(&py)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {py} {script}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        let mut p = Peer { child, stdin, rx };
        let v = p.call(json!({"op": "versions"})).expect("versions");
        assert_eq!(v["DoubleRatchet"], "1.3.0", "{v}");
        assert_eq!(v["x3dh"], "1.3.0", "{v}");
        assert_eq!(v["kyber-py"], "1.2.0", "{v}");
        p
    }

    /// One request; Ok(reply) or Err(the peer's exception text).
    fn call(&mut self, req: Value) -> Result<Value, String> {
        writeln!(self.stdin, "{req}").expect("write to the Python peer");
        self.stdin.flush().unwrap();
        let line = self
            .rx
            .recv_timeout(PEER_TIMEOUT)
            .unwrap_or_else(|_| panic!("Python peer did not answer {req} within {PEER_TIMEOUT:?}"));
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad reply {line:?}: {e}"));
        if v["ok"] == true {
            Ok(v)
        } else {
            Err(v["error"].as_str().unwrap_or("?").to_string())
        }
    }

    fn privs(&mut self, privs: &[[u8; 32]]) {
        let p: Vec<String> = privs.iter().map(|k| hex(k)).collect();
        self.call(json!({"op": "privs", "privs": p})).unwrap();
    }
    fn encrypt(&mut self, id: &str, pt: &[u8]) -> Vec<u8> {
        unhex(self.call(json!({"op": "encrypt", "id": id, "pt": hex(pt)})).unwrap()["wire"].as_str().unwrap())
    }
    fn decrypt(&mut self, id: &str, wire: &[u8]) -> Result<Vec<u8>, String> {
        self.call(json!({"op": "decrypt", "id": id, "wire": hex(wire)})).map(|v| unhex(v["pt"].as_str().unwrap()))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"op": "quit"}));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

use hex::encode as hex;
fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}
fn rand32(r: &mut impl RngCore) -> [u8; 32] {
    let mut b = [0u8; 32];
    r.fill_bytes(&mut b);
    b
}

/// Mirror: the same role played by this crate and by DoubleRatchet 1.3.0 with the same injected
/// ratchet keys, fed the same messages (reordered, skipped, some never delivered). Every
/// ciphertext must be byte-identical, every plaintext equal, every refusal shared. The other role
/// is played by this crate and reads the mirrored side's messages.
fn mirror(seed: u64, mirror_alice: bool) {
    let mut peer = Peer::spawn();
    let mut g = TestRng(seed);
    let sk = rand32(&mut g);
    let ad = b"interop associated data".to_vec();
    let bob_secret = rand32(&mut g);
    let bob_kp = KeyPair::from_secret(StaticSecret::from(bob_secret));
    // The mirrored Rust session draws its ratchet secrets from `rm`; `predict` is a copy that
    // tells the Python side which secret to use next.
    let mut rm = TestRng(seed ^ 0x5151);
    let mut predict = rm.clone();
    let mut next_priv = |peer: &mut Peer| peer.privs(&[rand32(&mut predict)]);

    let (mut m, mut o) = if mirror_alice {
        next_priv(&mut peer);
        let mut m = Session::initiate_with(&sk, &bob_kp.public, &ad, &mut rm, &mut DalekDh).unwrap();
        let w = m.encrypt(b"m0").unwrap();
        let v = peer
            .call(json!({"op": "dr_alice", "id": "M", "sk": hex(&sk), "other_pub": hex(bob_kp.public.as_bytes()), "ad": hex(&ad), "pt": hex(b"m0")}))
            .unwrap();
        assert_eq!(hex(&w), v["wire"].as_str().unwrap(), "first message differs");
        let mut o = Session::respond(&sk, bob_kp.clone(), &ad).unwrap();
        assert_eq!(&o.decrypt_with(&w, &mut OsRng, &mut DalekDh).unwrap()[..], b"m0");
        (m, o)
    } else {
        let mut o = Session::initiate_with(&sk, &bob_kp.public, &ad, &mut OsRng, &mut DalekDh).unwrap();
        let w = o.encrypt(b"o0").unwrap();
        let mut m = Session::respond(&sk, bob_kp.clone(), &ad).unwrap();
        let Decrypted::NeedsDh(step) = m.decrypt(&w, &mut rm).unwrap() else { panic!("first message needs DH") };
        next_priv(&mut peer);
        let r = DalekDh.run_jobs(step.jobs());
        assert_eq!(&m.complete_decrypt(step, &r).unwrap()[..], b"o0");
        let v = peer
            .call(json!({"op": "dr_bob", "id": "M", "sk": hex(&sk), "own_priv": hex(&bob_secret), "ad": hex(&ad), "wire": hex(&w)}))
            .unwrap();
        assert_eq!(v["pt"], hex(b"o0"));
        (m, o)
    };

    let mut late_to_m: Vec<Vec<u8>> = Vec::new();
    let mut compared = 0;
    for round in 0..16 {
        // The mirrored side sends: both implementations must produce the same bytes.
        let mut to_o = Vec::new();
        for i in 0..1 + g.next_u32() % 4 {
            let pt = format!("m r{round} #{i}").into_bytes();
            let a = m.encrypt(&pt).unwrap();
            let b = peer.encrypt("M", &pt);
            assert_eq!(hex(&a), hex(&b), "ciphertext differs (round {round}, message {i})");
            compared += 1;
            to_o.push((a, pt));
        }
        shuffle(&mut to_o, &mut g);
        for (w, pt) in to_o {
            if g.next_u32() % 5 != 0 {
                assert_eq!(o.decrypt_with(&w, &mut OsRng, &mut DalekDh).unwrap().to_vec(), pt);
            }
        }
        // The other side sends; the mirrored side reads them out of order, some late, some never.
        let mut to_m = Vec::new();
        for i in 0..g.next_u32() % 5 {
            let pt = format!("o r{round} #{i}").into_bytes();
            to_m.push(o.encrypt(&pt).unwrap());
        }
        shuffle(&mut to_m, &mut g);
        let mut deliver = Vec::new();
        for w in to_m {
            match g.next_u32() % 6 {
                0 => {} // lost
                1 => late_to_m.push(w),
                _ => deliver.push(w),
            }
        }
        if round % 3 == 2 {
            deliver.append(&mut late_to_m);
        }
        for w in deliver {
            let rs = match m.decrypt(&w, &mut rm) {
                Ok(Decrypted::Plaintext(p)) => Ok(p.to_vec()),
                Ok(Decrypted::NeedsDh(step)) => {
                    next_priv(&mut peer);
                    let r = DalekDh.run_jobs(step.jobs());
                    m.complete_decrypt(step, &r).map(|p| p.to_vec())
                }
                Err(e) => Err(e),
            };
            let py = peer.decrypt("M", &w);
            match (&rs, &py) {
                (Ok(a), Ok(b)) => assert_eq!(a, b),
                (Err(_), Err(_)) => {}
                _ => panic!("implementations disagree on a message: rust {rs:?}, python {py:?}"),
            }
        }
    }
    assert!(compared >= 16);
}

trait RunJobs {
    fn run_jobs(&mut self, jobs: &[ratchet::DhJob]) -> Vec<ratchet::DhOutput>;
}
impl RunJobs for DalekDh {
    fn run_jobs(&mut self, jobs: &[ratchet::DhJob]) -> Vec<ratchet::DhOutput> {
        jobs.iter().map(ratchet::DhJob::run_dalek).collect()
    }
}

fn shuffle<T>(v: &mut [T], g: &mut TestRng) {
    for i in (1..v.len()).rev() {
        let j = g.next_u32() as usize % (i + 1);
        v.swap(i, j);
    }
}

#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn double_ratchet_byte_exact_alice() {
    for seed in [1, 2, 3] {
        mirror(seed, true);
    }
}

#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn double_ratchet_byte_exact_bob() {
    for seed in [11, 12, 13] {
        mirror(seed, false);
    }
}

enum Side {
    Rs(Session),
    Py(&'static str),
}

impl Side {
    fn send(&mut self, peer: &mut Peer, pt: &[u8]) -> Vec<u8> {
        match self {
            Side::Rs(s) => s.encrypt(pt).unwrap(),
            Side::Py(id) => peer.encrypt(id, pt),
        }
    }
    fn recv(&mut self, peer: &mut Peer, w: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Side::Rs(s) => s.decrypt_with(w, &mut OsRng, &mut DalekDh).map(|p| p.to_vec()).map_err(|e| e.to_string()),
            Side::Py(id) => peer.decrypt(id, w),
        }
    }
}

/// A conversation between a Rust and a Python side with loss, reordering, replays and
/// tampering: every legitimate delivered message decrypts, every replay or tampered one is
/// refused by both implementations.
fn converse(peer: &mut Peer, a: &mut Side, b: &mut Side, seed: u64) {
    converse_n(peer, a, b, seed, 800)
}

fn converse_n(peer: &mut Peer, a: &mut Side, b: &mut Side, seed: u64, steps: u32) {
    let mut g = TestRng(seed);
    let mut q_ab: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut q_ba: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let (mut ok, mut refused) = (0, 0);
    for step in 0..steps {
        let r = g.next_u32() % 8;
        let (from_a, deliver) = (r % 2 == 0, r >= 2);
        let (q, to) = if from_a { (&mut q_ab, &mut *b) } else { (&mut q_ba, &mut *a) };
        if !deliver {
            let pt = format!("{} {step}", if from_a { "a->b" } else { "b->a" }).into_bytes();
            let w = if from_a { a.send(peer, &pt) } else { b.send(peer, &pt) };
            q.push((w, pt));
            continue;
        }
        if q.is_empty() {
            continue;
        }
        let i = g.next_u32() as usize % q.len();
        let (w, pt) = q.swap_remove(i);
        if g.next_u32() % 8 == 0 {
            continue; // lost
        }
        if g.next_u32() % 6 == 0 {
            let mut t = w.clone();
            let bit = g.next_u32() as usize % (t.len() * 8);
            t[bit / 8] ^= 1 << (bit % 8);
            assert!(to.recv(peer, &t).is_err(), "tampered message accepted (bit {bit})");
            refused += 1;
        }
        assert_eq!(to.recv(peer, &w).unwrap_or_else(|e| panic!("step {step}: {e}")), pt);
        ok += 1;
        if g.next_u32() % 6 == 0 {
            assert!(to.recv(peer, &w).is_err(), "replay accepted");
            refused += 1;
        }
    }
    assert!(ok > steps / 8 && refused > steps / 40, "ok {ok} refused {refused}");
}

#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn double_ratchet_cross_conversation_both_directions() {
    for (seed, rust_is_alice) in [(21, true), (22, false)] {
        let mut peer = Peer::spawn();
        let mut g = TestRng(seed);
        let sk = rand32(&mut g);
        let ad = b"cross".to_vec();
        let bob_secret = rand32(&mut g);
        let bob_kp = KeyPair::from_secret(StaticSecret::from(bob_secret));
        let (mut a, mut b) = if rust_is_alice {
            let mut s = Session::initiate_with(&sk, &bob_kp.public, &ad, &mut OsRng, &mut DalekDh).unwrap();
            let w = s.encrypt(b"hello").unwrap();
            let v = peer
                .call(json!({"op": "dr_bob", "id": "P", "sk": hex(&sk), "own_priv": hex(&bob_secret), "ad": hex(&ad), "wire": hex(&w)}))
                .unwrap();
            assert_eq!(v["pt"], hex(b"hello"));
            (Side::Rs(s), Side::Py("P"))
        } else {
            let v = peer
                .call(json!({"op": "dr_alice", "id": "P", "sk": hex(&sk), "other_pub": hex(bob_kp.public.as_bytes()), "ad": hex(&ad), "pt": hex(b"hello")}))
                .unwrap();
            let mut s = Session::respond(&sk, bob_kp, &ad).unwrap();
            assert_eq!(
                &s.decrypt_with(&unhex(v["wire"].as_str().unwrap()), &mut OsRng, &mut DalekDh).unwrap()[..],
                b"hello"
            );
            (Side::Py("P"), Side::Rs(s))
        };
        converse(&mut peer, &mut a, &mut b, seed);
    }
}

/// x3dh 1.3.0 as initiator, this crate as responder (with and without a one-time prekey).
#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn x3dh_python_initiator_rust_responder() {
    for (seed, opks) in [(31u64, 1usize), (32, 0)] {
        let mut peer = Peer::spawn();
        let mut dh = DalekDh;
        let mut bob =
            Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), opks, &mut OsRng, &mut dh).unwrap();
        let alice_priv = rand32(&mut OsRng);
        peer.call(json!({"op": "x3dh_new", "id": "A", "identity_priv": hex(&alice_priv)})).unwrap();
        let bundle = bob.bundle();
        let pre_keys: Vec<String> = bundle.one_time_prekey.iter().map(|k| hex(k)).collect();
        // The Python side verifies our XEdDSA signature here.
        let v = peer
            .call(json!({"op": "x3dh_active", "id": "A", "sess": "S", "pt": hex(b"hi from python"), "bundle": {
                "identity_key": hex(&bundle.identity_key), "signed_pre_key": hex(&bundle.signed_prekey),
                "signature": hex(&bundle.signature), "pre_keys": pre_keys}}))
            .unwrap();
        let wire = unhex(v["wire"].as_str().unwrap());
        let (s, pt) = bob.accept_with(&wire, &mut OsRng, &mut dh).unwrap();
        assert_eq!(&pt[..], b"hi from python");
        assert_eq!(hex(s.associated_data()), v["ad"].as_str().unwrap(), "X3DH associated data differs");
        assert_eq!(bob.one_time_prekeys(), 0);
        // A forged signature is refused by the Python side.
        let mut bad = bundle.signature;
        bad[3] ^= 1;
        let e = peer
            .call(json!({"op": "x3dh_active", "id": "A", "sess": "X", "pt": "00", "bundle": {
                "identity_key": hex(&bundle.identity_key), "signed_pre_key": hex(&bundle.signed_prekey),
                "signature": hex(&bad), "pre_keys": [hex(&[9u8; 32])]}}))
            .unwrap_err();
        assert!(e.contains("KeyAgreementException"), "{e}");
        converse(&mut peer, &mut Side::Py("S"), &mut Side::Rs(s), seed);
    }
}

/// This crate as initiator, x3dh 1.3.0 as responder (its bundle, its XEdDSA signature).
#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn x3dh_rust_initiator_python_responder() {
    for (seed, use_opk) in [(41u64, true), (42, false)] {
        let mut peer = Peer::spawn();
        let mut dh = DalekDh;
        let bob_priv = rand32(&mut OsRng);
        let v = peer.call(json!({"op": "x3dh_new", "id": "B", "identity_priv": hex(&bob_priv)})).unwrap();
        let k = |name: &str| -> [u8; 32] { unhex(v[name].as_str().unwrap()).try_into().unwrap() };
        let bundle = PreKeyBundle {
            identity_key: k("identity_key"),
            signed_prekey: k("signed_pre_key"),
            signature: unhex(v["signature"].as_str().unwrap()).try_into().unwrap(),
            one_time_prekey: if use_opk {
                Some(unhex(v["pre_keys"][0].as_str().unwrap()).try_into().unwrap())
            } else {
                None
            },
        };
        assert_eq!(bundle.identity_key, *PublicKey::from(&StaticSecret::from(bob_priv)).as_bytes());
        bundle.verify().expect("XEdDSA signature made by libxeddsa verifies");
        let alice = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
        let mut s = x3dh::initiate_with(&alice, &bundle, &mut OsRng, &mut dh).unwrap();
        let w1 = s.encrypt(b"hi from rust").unwrap();
        let r = peer.call(json!({"op": "x3dh_passive", "id": "B", "sess": "S", "wire": hex(&w1)})).unwrap();
        assert_eq!(r["pt"], hex(b"hi from rust"));
        assert_eq!(hex(s.associated_data()), r["ad"].as_str().unwrap(), "X3DH associated data differs");
        converse(&mut peer, &mut Side::Rs(s), &mut Side::Py("S"), seed);
    }
}

/// XEdDSA signatures are byte-identical to libxeddsa's (same key, message and nonce Z).
#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn xeddsa_byte_exact_with_libxeddsa() {
    let mut peer = Peer::spawn();
    let mut g = TestRng(51);
    for i in 0..64usize {
        let k = rand32(&mut g);
        let mut z = [0u8; 64];
        g.fill_bytes(&mut z);
        let mut msg = vec![0u8; i * 3];
        g.fill_bytes(&mut msg);
        let ours = xeddsa::sign(&StaticSecret::from(k), &msg, &z);
        let v = peer.call(json!({"op": "xeddsa_sign", "priv": hex(&k), "msg": hex(&msg), "nonce": hex(&z)})).unwrap();
        assert_eq!(hex(&ours), v["sig"].as_str().unwrap(), "signature {i} differs");
        xeddsa::verify(PublicKey::from(&StaticSecret::from(k)).as_bytes(), &msg, &ours).unwrap();
    }
}

/// The one documented behavioural difference (docs/ratchet.md): a new chain whose PN skips more
/// than MAX_SKIP keys of the previous chain. DoubleRatchet 1.3.0 drops those keys and accepts;
/// this crate refuses the message, as the spec's SkipMessageKeys does.
#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn previous_chain_beyond_max_skip_difference() {
    let mut peer = Peer::spawn();
    let mut g = TestRng(61);
    let sk = rand32(&mut g);
    let ad = b"pn".to_vec();
    let bob_secret = rand32(&mut g);
    let bob_kp = KeyPair::from_secret(StaticSecret::from(bob_secret));
    let mut a = Session::initiate_with(&sk, &bob_kp.public, &ad, &mut OsRng, &mut DalekDh).unwrap();
    let w = a.encrypt(b"hello").unwrap();
    peer.call(json!({"op": "dr_bob", "id": "B", "sk": hex(&sk), "own_priv": hex(&bob_secret), "ad": hex(&ad), "wire": hex(&w)}))
        .unwrap();
    let n = ratchet::MAX_SKIP as usize + 2;
    // Python -> Rust: Rust gets only the first of n, replies, then Python's new chain has PN = n.
    let v = peer.call(json!({"op": "encrypt_n", "id": "B", "pt": hex(b"x"), "n": n})).unwrap();
    let wires: Vec<Vec<u8>> = v["wires"].as_array().unwrap().iter().map(|w| unhex(w.as_str().unwrap())).collect();
    a.decrypt_with(&wires[0], &mut OsRng, &mut DalekDh).unwrap();
    let r = a.encrypt(b"reply").unwrap();
    peer.decrypt("B", &r).unwrap();
    let next = peer.encrypt("B", b"new chain");
    let before = a.to_bytes();
    assert!(matches!(a.decrypt_with(&next, &mut OsRng, &mut DalekDh), Err(ratchet::Error::TooManySkipped { .. })));
    assert!(a.to_bytes() == before);
    // Rust -> Python: the same situation is accepted by DoubleRatchet 1.3.0 (it only warns).
    let v = peer
        .call(json!({"op": "dr_alice", "id": "A", "sk": hex(&sk), "other_pub": hex(bob_kp.public.as_bytes()), "ad": hex(&ad), "pt": hex(b"hi")}))
        .unwrap();
    let first = unhex(v["wire"].as_str().unwrap());
    let mut b = Session::respond(&sk, bob_kp, &ad).unwrap();
    b.decrypt_with(&first, &mut OsRng, &mut DalekDh).unwrap();
    let many: Vec<Vec<u8>> = (0..n).map(|_| b.encrypt(b"y").unwrap()).collect();
    peer.decrypt("A", &many[0]).unwrap();
    let r = peer.encrypt("A", b"reply");
    b.decrypt_with(&r, &mut OsRng, &mut DalekDh).unwrap();
    let next = b.encrypt(b"new chain").unwrap();
    assert_eq!(peer.decrypt("A", &next).unwrap(), b"new chain", "DoubleRatchet 1.3.0 accepts (documented difference)");
}

/// A responder of this crate with `opks` curve and `pq_opks` PQ one-time prekeys and a
/// last-resort PQ prekey.
fn pq_responder(opks: usize, pq_opks: usize) -> Responder {
    let mut dh = DalekDh;
    let mut bob =
        Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), opks, &mut OsRng, &mut dh).unwrap();
    bob.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).unwrap();
    if pq_opks > 0 {
        bob.add_pq_prekeys_with(pq_opks, true, &mut OsRng, &mut CpuKem).unwrap();
    }
    bob
}

/// The from-spec Python PQXDH (kyber-py + cryptography) as initiator, this crate as responder:
/// the Python side verifies our XEdDSA signatures (curve and PQ prekey), encapsulates to our
/// ML-KEM-1024 key with kyber-py; we decapsulate with libcrux-ml-kem and read its first message
/// (so SK agrees), the AD agrees, then a conversation. With and without one-time prekeys. The
/// Python side refuses a bundle whose PQ signature is flipped and one without a PQ prekey; we
/// refuse a second use of the one-time PQ prekey.
#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn pqxdh_python_initiator_rust_responder() {
    for (seed, opks, pq_opks) in [(71u64, 1usize, 1usize), (72, 0, 0)] {
        let mut peer = Peer::spawn();
        let mut bob = pq_responder(opks, pq_opks);
        let bundle = bob.pqxdh_bundle();
        assert_eq!(bundle.pq_prekey.as_ref().unwrap().one_time, pq_opks > 0);
        let alice_priv = rand32(&mut OsRng);
        // refusals first (they use no key)
        let mut bad = bundle.clone();
        bad.pq_prekey.as_mut().unwrap().signature[10] ^= 4;
        let e = peer
            .call(json!({"op": "pq_alice", "sess": "X", "identity_priv": hex(&alice_priv), "bundle": hex(&bad.encode()), "pt": "00"}))
            .unwrap_err();
        assert!(e.contains("PQ prekey signature does not verify"), "{e}");
        let mut none = bundle.clone();
        none.pq_prekey = None;
        let e = peer
            .call(json!({"op": "pq_alice", "sess": "X", "identity_priv": hex(&alice_priv), "bundle": hex(&none.encode()), "pt": "00"}))
            .unwrap_err();
        assert!(e.contains("without a PQ prekey"), "{e}");
        let v = peer
            .call(json!({"op": "pq_alice", "sess": "S", "identity_priv": hex(&alice_priv), "bundle": hex(&bundle.encode()), "pt": hex(b"hi from the spec")}))
            .unwrap();
        let wire = unhex(v["wire"].as_str().unwrap());
        assert_eq!(wire[0], ratchet::wire::TYPE_PQ_PREKEY);
        let (s, pt) = bob.accept_with_kem(&wire, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap();
        assert_eq!(&pt[..], b"hi from the spec");
        assert!(s.is_pqxdh());
        assert_eq!(hex(s.associated_data()), v["ad"].as_str().unwrap(), "PQXDH associated data differs");
        assert_eq!(bob.one_time_prekeys(), 0);
        assert_eq!(bob.pq_one_time_prekeys(), 0);
        if pq_opks > 0 {
            // (its one-time curve prekey is looked up first, and is gone too)
            assert!(matches!(
                bob.accept_with_kem(&wire, &mut OsRng, &mut DalekDh, &mut CpuKem),
                Err(ratchet::Error::UnknownPreKey(_))
            ));
        }
        converse_n(&mut peer, &mut Side::Py("S"), &mut Side::Rs(s), seed, 200);
    }
}

/// This crate as initiator, the from-spec Python PQXDH as responder: we parse its bundle and
/// verify its libxeddsa signatures (curve and PQ prekey), encapsulate to its kyber-py key with
/// libcrux-ml-kem; it decapsulates with kyber-py and reads our first message (SK agrees), the AD
/// agrees, then a conversation (our initiator repeats the PQXDH header until the first reply,
/// the peer checks it). A second use of its one-time PQ prekey is refused by the peer.
#[test]
#[ignore = "needs the project venv: cargo xtask test --only ratchet:interop"]
fn pqxdh_rust_initiator_python_responder() {
    for (seed, opks, pq_opks) in [(81u64, 1usize, 1usize), (82, 0, 0)] {
        let mut peer = Peer::spawn();
        let bob_priv = rand32(&mut OsRng);
        let v = peer
            .call(json!({"op": "pq_bob_new", "id": "B", "identity_priv": hex(&bob_priv), "opks": opks, "pq_opks": pq_opks}))
            .unwrap();
        let bundle = PqxdhBundle::parse(&unhex(v["bundle"].as_str().unwrap())).unwrap();
        assert_eq!(bundle.identity_key, *PublicKey::from(&StaticSecret::from(bob_priv)).as_bytes());
        assert_eq!(bundle.one_time_prekey.is_some(), opks > 0);
        assert_eq!(bundle.pq_prekey.as_ref().unwrap().one_time, pq_opks > 0);
        bundle.verify().expect("libxeddsa signatures over the curve and the PQ prekey verify");
        let alice = KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap();
        let mut s = pqxdh::initiate_with(&alice, &bundle, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap();
        let w1 = s.encrypt(b"hi from rust").unwrap();
        let r = peer.call(json!({"op": "pq_accept", "id": "B", "sess": "S", "wire": hex(&w1)})).unwrap();
        assert_eq!(r["pt"], hex(b"hi from rust"));
        assert_eq!(hex(s.associated_data()), r["ad"].as_str().unwrap(), "PQXDH associated data differs");
        if pq_opks > 0 {
            let mut again = pqxdh::initiate_with(&alice, &bundle, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap();
            let w = again.encrypt(b"reused").unwrap();
            let e = peer.call(json!({"op": "pq_accept", "id": "B", "sess": "T", "wire": hex(&w)})).unwrap_err();
            assert!(e.contains("unknown one-time"), "{e}");
        }
        converse_n(&mut peer, &mut Side::Rs(s), &mut Side::Py("S"), seed, 200);
    }
}
