//! ML-KEM-1024 (the libcrux-ml-kem build this crate uses, through its KEM jobs) against NIST's
//! FIPS 203 known-answer vectors: the ACVP vector sets ML-KEM-keyGen-FIPS203 and
//! ML-KEM-encapDecap-FIPS203 (prompt.json + expectedResults.json, from NIST's ACVP-Server; vsId
//! 42), as shipped in the PyPI sdist of kyber-py 1.2.0 (assets/). `cargo xtask test --only
//! ratchet:interop` downloads that sdist with pip (version and SHA-256 pinned in xtask), unpacks
//! the two directories and sets RATCHET_ACVP_DIR. Run by hand:
//!   RATCHET_ACVP_DIR=target/acvp/kyber_py-1.2.0/assets cargo test -p ratchet --test mlkem_acvp -- --ignored
//! Without the variable the test fails (it never passes silently).
//!
//! Checked for every ML-KEM-1024 case: key generation (d, z -> ek through our KeyGen job, and
//! the expanded dk), encapsulation (ek, m -> c, K through our Encapsulate job), decapsulation
//! (dk, c -> K, including the set's invalid ciphertexts, which must give the implicit-rejection
//! key), and our Decapsulate job (seed d || z) on an encapsulation to each generated key.

use libcrux_ml_kem::mlkem1024;
use ratchet::kem::{KemJob, KemOutput};
use serde_json::Value;
use zeroize::Zeroizing;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn load(dir: &str, set: &str) -> (Value, Value) {
    let read = |f: &str| -> Value {
        let p = format!("{dir}/{set}/{f}");
        let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
        serde_json::from_str(&t).unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    (read("prompt.json"), read("expectedResults.json"))
}

/// (group of the prompt, matching group of the expected results) for ML-KEM-1024.
fn groups<'a>(p: &'a Value, e: &'a Value) -> Vec<(&'a Value, &'a Value)> {
    p["testGroups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["parameterSet"] == "ML-KEM-1024")
        .map(|g| {
            let eg = e["testGroups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["tgId"] == g["tgId"])
                .expect("expected results for the group");
            (g, eg)
        })
        .collect()
}

fn expected<'a>(eg: &'a Value, tc: &Value) -> &'a Value {
    eg["tests"].as_array().unwrap().iter().find(|x| x["tcId"] == tc["tcId"]).expect("expected result for the case")
}

fn h(v: &Value, k: &str) -> Vec<u8> {
    unhex(v[k].as_str().unwrap_or_else(|| panic!("field {k}")))
}

#[test]
#[ignore = "needs the ACVP files: cargo xtask test --only ratchet:interop"]
fn mlkem1024_acvp_fips203() {
    let dir = std::env::var("RATCHET_ACVP_DIR")
        .unwrap_or_else(|_| panic!("RATCHET_ACVP_DIR is not set: run `cargo xtask test --only ratchet:interop`"));
    let mut counts = [0usize; 4];

    // Key generation.
    let (p, e) = load(&dir, "ML-KEM-keyGen-FIPS203");
    assert_eq!(p["algorithm"], "ML-KEM");
    for (g, eg) in groups(&p, &e) {
        for tc in g["tests"].as_array().unwrap() {
            let x = expected(eg, tc);
            let mut seed = Zeroizing::new([0u8; 64]);
            seed[..32].copy_from_slice(&h(tc, "d"));
            seed[32..].copy_from_slice(&h(tc, "z"));
            let KemOutput::PublicKey(ek) = (KemJob::KeyGen { seed: seed.clone() }).run().unwrap() else {
                panic!("keygen result")
            };
            assert_eq!(ek[..], h(x, "ek")[..], "keyGen tcId {}: ek", tc["tcId"]);
            let kp = mlkem1024::generate_key_pair(*seed);
            assert_eq!(kp.sk()[..], h(x, "dk")[..], "keyGen tcId {}: dk", tc["tcId"]);
            // Our decapsulation job (from the seed) opens an encapsulation to this key.
            let enc = KemJob::Encapsulate {
                public_key: ek.clone(),
                randomness: Zeroizing::new([tc["tcId"].as_u64().unwrap() as u8; 32]),
            };
            let KemOutput::Encapsulated { ciphertext, shared_secret } = enc.run().unwrap() else {
                panic!("encaps result")
            };
            let KemOutput::SharedSecret(k) = (KemJob::Decapsulate { seed, ciphertext }).run().unwrap() else {
                panic!("decaps result")
            };
            assert_eq!(*k, *shared_secret, "keyGen tcId {}: round trip", tc["tcId"]);
            counts[0] += 1;
        }
    }

    // Encapsulation and decapsulation.
    let (p, e) = load(&dir, "ML-KEM-encapDecap-FIPS203");
    for (g, eg) in groups(&p, &e) {
        match g["function"].as_str().unwrap() {
            "encapsulation" => {
                for tc in g["tests"].as_array().unwrap() {
                    let x = expected(eg, tc);
                    let job = KemJob::Encapsulate {
                        public_key: Box::new(h(tc, "ek").try_into().unwrap()),
                        randomness: Zeroizing::new(h(tc, "m").try_into().unwrap()),
                    };
                    let KemOutput::Encapsulated { ciphertext, shared_secret } = job.run().unwrap() else {
                        panic!("encaps result")
                    };
                    assert_eq!(ciphertext[..], h(x, "c")[..], "encaps tcId {}: c", tc["tcId"]);
                    assert_eq!(shared_secret[..], h(x, "k")[..], "encaps tcId {}: k", tc["tcId"]);
                    counts[1] += 1;
                }
            }
            "decapsulation" => {
                let dk: [u8; 3168] = h(g, "dk").try_into().unwrap();
                let dk = mlkem1024::MlKem1024PrivateKey::from(dk);
                for tc in g["tests"].as_array().unwrap() {
                    let x = expected(eg, tc);
                    let c: [u8; 1568] = h(tc, "c").try_into().unwrap();
                    let k = mlkem1024::decapsulate(&dk, &mlkem1024::MlKem1024Ciphertext::from(c));
                    assert_eq!(k[..], h(x, "k")[..], "decaps tcId {}: k", tc["tcId"]);
                    counts[2] += 1;
                }
            }
            other => panic!("unknown function {other}"),
        }
    }
    eprintln!(
        "ML-KEM-1024 ACVP: {} keyGen, {} encapsulation, {} decapsulation cases passed",
        counts[0], counts[1], counts[2]
    );
    assert_eq!(counts[..3], [25, 25, 10], "the vector set's ML-KEM-1024 cases");
}
