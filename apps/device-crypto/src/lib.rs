//! Per-operation timings of the chat's cryptography on the device (docs/chat.md, "On the
//! device"): the operations and their checks, kept here so that `cargo test -p device-crypto`
//! runs every one of them on the host (x25519-dalek standing in for the engine service).
//!
//! Each operation runs `n` times between two marks: [`Mark::Start`] and [`Mark::End`]. On the
//! simulated Precursor the program prints them as lines, and the simulator stamps each line
//! with the CPU cycle at which it was written; the cycles between the two over `n` are the
//! operation's device time at 100 MHz (`cargo xtask bench --only device-crypto`). Everything
//! an operation needs is prepared before its start mark, and every result is checked after its
//! end mark: a wrong result fails the operation's verdict (and the run).

use rand_core::CryptoRngCore;
use ratchet::{kdf, x3dh, xeddsa, DalekDh, Decrypted, Dh, KeyPair, Responder, Session};
use zeroize::Zeroizing;

/// The verdict subject of the whole program (its final line).
pub const PROGRAM: &str = "device-crypto";
/// Printed right before an operation's timed runs: `CRYPTO-BENCH-START op=<name> n=<n>`.
pub const START_MARKER: &str = "CRYPTO-BENCH-START";
/// Printed right after them: `CRYPTO-BENCH-END op=<name> n=<n>`.
pub const END_MARKER: &str = "CRYPTO-BENCH-END";

/// One timed operation: its name (the bench key's stem) and how many times it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub name: &'static str,
    pub n: u32,
    pub what: &'static str,
}

/// The operations, in the order they run. The counts keep the run short on the simulated CPU
/// (software X25519 and the Edwards operations cost millions of cycles each).
pub const OPS: &[Op] = &[
    Op { name: "x25519_engine", n: 20, what: "one X25519 through the engine service (RFC 7748 5.2 vector 1)" },
    Op { name: "x25519_software", n: 2, what: "one X25519 with x25519-dalek on the CPU (same vector)" },
    Op { name: "xeddsa_sign", n: 2, what: "XEdDSA signature of an encoded signed prekey (33 bytes)" },
    Op { name: "xeddsa_verify", n: 2, what: "XEdDSA verification of that signature" },
    Op { name: "hkdf_root_step", n: 50, what: "KDF_RK: HKDF-SHA256 of a DH output under the root key (a DH ratchet step's KDF)" },
    Op { name: "hmac_chain_step", n: 50, what: "KDF_CK: the two HMAC-SHA256 of a symmetric chain step" },
    Op { name: "message_encrypt", n: 20, what: "one 64-byte message: keys from HKDF, AES-256-CBC, HMAC-SHA256 tag" },
    Op { name: "message_decrypt", n: 20, what: "the same message: tag checked, AES-256-CBC decrypted" },
    Op { name: "x3dh_initiate_engine", n: 2, what: "a whole X3DH initiation: bundle signature verified, 7 X25519 through the engine service, SK and the first sending chain" },
    Op { name: "ratchet_step_engine", n: 4, what: "a whole DH ratchet step on receipt: 3 X25519 through the engine service, two KDF_RK, the message decrypted" },
    Op { name: "ratchet_step_software", n: 1, what: "the same step with x25519-dalek on the CPU" },
];

/// The marks around an operation's timed runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Start(&'static Op),
    End(&'static Op),
}

impl core::fmt::Display for Mark {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Mark::Start(o) => write!(f, "{START_MARKER} op={} n={}", o.name, o.n),
            Mark::End(o) => write!(f, "{END_MARKER} op={} n={}", o.name, o.n),
        }
    }
}

/// An operation's outcome: its checks passed (with a short note), or why not.
pub type Outcome = Result<String, String>;

/// RFC 7748 5.2's first vector: scalar, u, result.
fn rfc_vector() -> Result<([u8; 32], [u8; 32], [u8; 32]), String> {
    let (k, u, w) = engine25519_core::vectors::RFC7748.first().ok_or("no RFC 7748 vector")?;
    Ok((device_selftest::unhex32(k)?, device_selftest::unhex32(u)?, device_selftest::unhex32(w)?))
}

fn op(name: &str) -> &'static Op {
    OPS.iter().find(|o| o.name == name).expect("an operation of OPS")
}

/// Run `body` `op.n` times between the two marks.
fn timed<S>(
    o: &'static Op,
    mark: &mut dyn FnMut(Mark),
    state: &mut S,
    mut body: impl FnMut(&mut S, u32) -> Result<(), String>,
) -> Result<(), String> {
    mark(Mark::Start(o));
    let mut r = Ok(());
    for i in 0..o.n {
        if let Err(e) = body(state, i) {
            r = Err(format!("run {i}: {e}"));
            break;
        }
    }
    mark(Mark::End(o));
    r
}

/// Run every operation of [`OPS`] in order; `engine` runs X25519 jobs on the engine service
/// (on the host, in tests: x25519-dalek), `rng` gives every secret. `mark` is called at every
/// start and end; `report` once per operation with its outcome, right after its end mark.
pub fn run_all(
    engine: &mut dyn Dh,
    rng: &mut dyn CryptoRngCore,
    mark: &mut dyn FnMut(Mark),
    report: &mut dyn FnMut(&'static Op, Outcome),
) {
    let (k, u, want) = match rfc_vector() {
        Ok(v) => v,
        Err(e) => {
            for o in OPS {
                report(o, Err(e.clone()));
            }
            return;
        }
    };

    // X25519 through the engine service: one job per call, as the chat submits them
    let o = op("x25519_engine");
    let job = ratchet::DhJob {
        secret: x25519_dalek::StaticSecret::from(k),
        public: u,
        purpose: ratchet::DhPurpose::PublicKey,
    };
    let mut got = Vec::new();
    let r = timed(o, mark, &mut got, |got, _| {
        got.push(engine.run(core::slice::from_ref(&job)).map_err(|e| e.to_string())?);
        Ok(())
    });
    report(o, r.and_then(|_| check_all_equal(got.iter().map(|v| *v[0]), want, "engine X25519")));

    // X25519 in software on this CPU (x25519-dalek: what the chat's `--engine software` runs)
    let o = op("x25519_software");
    let mut got: Vec<[u8; 32]> = Vec::new();
    let r = timed(o, mark, &mut got, |got, _| {
        got.push(x25519_dalek::x25519(k, u));
        Ok(())
    });
    report(o, r.and_then(|_| check_all_equal(got.into_iter(), want, "x25519-dalek")));

    // XEdDSA: sign an encoded prekey with an identity key, then verify
    let signer = x25519_dalek::StaticSecret::from(random32(rng));
    let signer_pub = *x25519_dalek::PublicKey::from(&signer).as_bytes();
    let msg = ratchet::wire::encode_public_key(&random32(rng));
    let mut zs = Vec::new();
    for _ in 0..op("xeddsa_sign").n {
        let mut z = [0u8; 64];
        rng.fill_bytes(&mut z);
        zs.push(z);
    }
    let o = op("xeddsa_sign");
    let mut sigs: Vec<[u8; 64]> = Vec::new();
    let r = timed(o, mark, &mut sigs, |sigs, i| {
        sigs.push(xeddsa::sign(&signer, &msg, &zs[i as usize]));
        Ok(())
    });
    report(
        o,
        r.and_then(|_| {
            for s in &sigs {
                xeddsa::verify(&signer_pub, &msg, s).map_err(|e| format!("a signature does not verify: {e}"))?;
            }
            Ok(format!("{} signatures verify", sigs.len()))
        }),
    );
    let o = op("xeddsa_verify");
    let sig = sigs.first().copied().unwrap_or([0u8; 64]);
    let mut verified = 0u32;
    let r = timed(o, mark, &mut verified, |v, _| {
        xeddsa::verify(&signer_pub, &msg, &sig).map_err(|e| e.to_string())?;
        *v += 1;
        Ok(())
    });
    report(
        o,
        r.and_then(|_| {
            let mut bad = sig;
            bad[40] ^= 1;
            if xeddsa::verify(&signer_pub, &msg, &bad).is_ok() {
                return Err("a signature with a flipped bit verifies".into());
            }
            Ok(format!("{verified} verified, a flipped bit refused"))
        }),
    );

    // KDF_RK (HKDF-SHA256): a chain of root steps, each under the last root key
    let o = op("hkdf_root_step");
    let rk0 = random32(rng);
    let dh = random32(rng);
    let mut rk = Zeroizing::new(rk0);
    let r = timed(o, mark, &mut rk, |rk, _| {
        let (next, _ck) = kdf::kdf_rk(rk, &dh);
        *rk = next;
        Ok(())
    });
    report(
        o,
        r.and_then(|_| {
            let again = (0..o.n).fold(Zeroizing::new(rk0), |rk, _| kdf::kdf_rk(&rk, &dh).0);
            if *again != *rk || *rk == rk0 {
                return Err("the root chain does not reproduce".into());
            }
            Ok(String::new())
        }),
    );

    // KDF_CK (HMAC-SHA256 twice): a chain of symmetric steps; the message keys are kept for
    // the next two operations
    let o = op("hmac_chain_step");
    let ck0 = random32(rng);
    let mut chain = (Zeroizing::new(ck0), Vec::<Zeroizing<[u8; 32]>>::new());
    let r = timed(o, mark, &mut chain, |(ck, mks), _| {
        let (next, mk) = kdf::kdf_ck(ck);
        *ck = next;
        mks.push(mk);
        Ok(())
    });
    let (_, mks) = chain;
    report(
        o,
        r.and_then(|_| {
            let mut ck = Zeroizing::new(ck0);
            for (i, mk) in mks.iter().enumerate() {
                let (next, m) = kdf::kdf_ck(&ck);
                if *m != **mk {
                    return Err(format!("message key {i} does not reproduce"));
                }
                ck = next;
            }
            Ok(String::new())
        }),
    );

    // one message: ENCRYPT and DECRYPT with the chain's message keys
    let plaintext: Vec<u8> = (0..64u8).map(|i| b'a' + i % 26).collect();
    let ad = [0x05u8; 66];
    let o = op("message_encrypt");
    let mut cts: Vec<Vec<u8>> = Vec::new();
    let r = timed(o, mark, &mut cts, |cts, i| {
        let mk = mks.get(i as usize).ok_or("fewer message keys than messages")?;
        cts.push(kdf::encrypt(mk, &plaintext, &ad));
        Ok(())
    });
    report(
        o,
        r.and_then(|_| {
            if cts.windows(2).any(|w| w[0] == w[1]) || cts.iter().any(|c| c.len() != 80 + 32) {
                return Err("ciphertexts repeat or have the wrong length (64 bytes + padding + tag = 112)".into());
            }
            Ok(format!("{} bytes each", cts.first().map(|c| c.len()).unwrap_or(0)))
        }),
    );
    let o = op("message_decrypt");
    let mut pts: Vec<Zeroizing<Vec<u8>>> = Vec::new();
    let r = timed(o, mark, &mut pts, |pts, i| {
        let mk = mks.get(i as usize).ok_or("fewer message keys than messages")?;
        let ct = cts.get(i as usize).ok_or("fewer ciphertexts than messages")?;
        pts.push(kdf::decrypt(mk, ct, &ad).map_err(|e| e.to_string())?);
        Ok(())
    });
    report(
        o,
        r.and_then(|_| {
            if pts.iter().any(|p| **p != plaintext) {
                return Err("a decrypted message differs from the plaintext".into());
            }
            let mut bad = cts[0].clone();
            bad[3] ^= 0x80;
            if kdf::decrypt(&mks[0], &bad, &ad).is_ok() {
                return Err("a tampered ciphertext decrypts".into());
            }
            Ok("a tampered ciphertext refused".into())
        }),
    );

    // X3DH and the DH ratchet: Bob's keys and Alice's identity are made first (through the
    // engine, untimed); then the timed initiations and ratchet steps
    let setup = (|| -> Result<(KeyPair, Responder), ratchet::Error> {
        let bob = Responder::generate(KeyPair::generate(rng, engine)?, 2, rng, engine)?;
        let alice = KeyPair::generate(rng, engine)?;
        Ok((alice, bob))
    })();
    let (alice_id, mut bob) = match setup {
        Ok(v) => v,
        Err(e) => {
            for name in ["x3dh_initiate_engine", "ratchet_step_engine", "ratchet_step_software"] {
                report(op(name), Err(format!("key set-up: {e}")));
            }
            return;
        }
    };
    let bundle = bob.bundle();
    let o = op("x3dh_initiate_engine");
    let mut sessions: Vec<Session> = Vec::new();
    let r = timed(o, mark, &mut sessions, |s, _| {
        let p = x3dh::initiate(&alice_id, &bundle, rng).map_err(|e| e.to_string())?;
        let results = engine.run(p.jobs()).map_err(|e| e.to_string())?;
        s.push(p.complete(&results).map_err(|e| e.to_string())?);
        Ok(())
    });
    // Bob accepts the first session's message; his reply carries a new ratchet key, so
    // Alice's decryption of it is a DH ratchet step
    let conversation = r.and_then(|_| {
        let mut alice = sessions.into_iter().next().ok_or("no session")?;
        let hello = alice.encrypt(b"hello Bob").map_err(|e| e.to_string())?;
        let (mut bob_s, text) =
            bob.accept_with(&hello, rng, engine).map_err(|e| format!("Bob cannot accept Alice's X3DH message: {e}"))?;
        if &text[..] != b"hello Bob" {
            return Err("Bob decrypted something else".into());
        }
        let reply = bob_s.encrypt(b"hi Alice").map_err(|e| e.to_string())?;
        Ok((alice, reply))
    });
    let (alice, reply) = match conversation {
        Ok(v) => {
            report(o, Ok(format!("{} initiations; Bob accepted one", o.n)));
            v
        }
        Err(e) => {
            for name in ["x3dh_initiate_engine", "ratchet_step_engine", "ratchet_step_software"] {
                report(op(name), Err(e.clone()));
            }
            return;
        }
    };

    // each run decrypts the same reply from its own copy of Alice's session (copied before the
    // start mark): a full DH ratchet step every time, with a fresh ratchet secret from `rng`
    for (name, software) in [("ratchet_step_engine", false), ("ratchet_step_software", true)] {
        let o = op(name);
        let mut copies: Vec<Session> = (0..o.n).map(|_| alice.clone()).collect();
        let mut texts: Vec<Zeroizing<Vec<u8>>> = Vec::new();
        let mut jobs = 0usize;
        let r = timed(o, mark, &mut copies, |copies, i| {
            let s = &mut copies[i as usize];
            let step = match s.decrypt(&reply, rng).map_err(|e| e.to_string())? {
                Decrypted::NeedsDh(step) => step,
                Decrypted::Plaintext(_) => return Err("a new ratchet key decrypted without DH".into()),
            };
            jobs += step.jobs().len();
            let results =
                if software { DalekDh.run(step.jobs()) } else { engine.run(step.jobs()) }.map_err(|e| e.to_string())?;
            texts.push(s.complete_decrypt(step, &results).map_err(|e| e.to_string())?);
            Ok(())
        });
        report(
            o,
            r.and_then(|_| {
                if texts.len() != o.n as usize || texts.iter().any(|t| &t[..] != b"hi Alice") {
                    return Err("a step decrypted something else".into());
                }
                if jobs != 3 * o.n as usize {
                    return Err(format!("{jobs} X25519 jobs in {} steps (expected 3 each)", o.n));
                }
                Ok(format!("{} X25519 per step", jobs / o.n as usize))
            }),
        );
    }
}

fn check_all_equal(got: impl Iterator<Item = [u8; 32]>, want: [u8; 32], what: &str) -> Outcome {
    let mut n = 0;
    for g in got {
        if g != want {
            return Err(format!(
                "{what} returned {} (RFC 7748: {})",
                device_selftest::hex(&g),
                device_selftest::hex(&want)
            ));
        }
        n += 1;
    }
    Ok(format!("{n} results equal RFC 7748's"))
}

fn random32(rng: &mut dyn CryptoRngCore) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation runs, passes its checks and is bracketed by its two marks, in order.
    #[test]
    fn every_operation_runs_and_passes_on_the_host() {
        let mut marks = Vec::new();
        let mut outcomes = Vec::new();
        run_all(&mut DalekDh, &mut rand_core::OsRng, &mut |m| marks.push(m), &mut |o, r| outcomes.push((o.name, r)));
        let names: Vec<&str> = outcomes.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, OPS.iter().map(|o| o.name).collect::<Vec<_>>());
        for (n, r) in &outcomes {
            assert!(r.is_ok(), "{n}: {r:?}");
        }
        let want: Vec<Mark> = OPS.iter().flat_map(|o| [Mark::Start(o), Mark::End(o)]).collect();
        assert_eq!(marks, want);
        assert_eq!(Mark::Start(&OPS[0]).to_string(), "CRYPTO-BENCH-START op=x25519_engine n=20");
    }

    /// A DH provider that returns wrong results fails the operations that use it.
    #[test]
    fn a_wrong_engine_fails_its_operations() {
        let mut wrong = |jobs: &[ratchet::DhJob]| -> Result<Vec<ratchet::DhOutput>, ratchet::Error> {
            Ok(jobs.iter().map(|_| Zeroizing::new([7u8; 32])).collect())
        };
        let mut outcomes = Vec::new();
        run_all(&mut wrong, &mut rand_core::OsRng, &mut |_| {}, &mut |o, r| outcomes.push((o.name, r)));
        let failed: Vec<&str> = outcomes.iter().filter(|(_, r)| r.is_err()).map(|(n, _)| *n).collect();
        assert!(failed.contains(&"x25519_engine"), "{outcomes:?}");
        assert!(failed.contains(&"x3dh_initiate_engine") && failed.contains(&"ratchet_step_engine"), "{outcomes:?}");
        assert!(!failed.contains(&"x25519_software") && !failed.contains(&"message_decrypt"), "{outcomes:?}");
    }
}
