//! Bench provider `ratchet` of `cargo xtask bench` (a native provider, docs/hosted.md): prints ONE
//! line of flat JSON (key -> number) on stdout and a readable table on stderr. Host CPU, one
//! thread, release build, medians over `--runs` (default 200) timed operations on fresh keys.
//!
//! Keys (microseconds):
//! - ratchet_mlkem1024_keygen_us, ratchet_mlkem1024_encaps_us, ratchet_mlkem1024_decaps_us:
//!   one ML-KEM-1024 operation as a KEM job runs it (`KemJob::run`, libcrux-ml-kem portable;
//!   encapsulation includes FIPS 203's modulus check of the key; decapsulation here is the job,
//!   which regenerates the key pair from the stored seed first);
//! - ratchet_mlkem1024_decaps_only_us: libcrux's decapsulation alone (expanded key at hand);
//! - ratchet_pqxdh_init_us: a whole PQXDH initiation (two signature checks, 6 X25519 with
//!   x25519-dalek (no one-time curve prekey), one encapsulation, the KDFs;
//!   `pqxdh::initiate_with`), and the first message;
//! - ratchet_x3dh_init_us: the same for X3DH (what PQXDH adds is the difference);
//! - ratchet_pqxdh_accept_us: the responder's side (6 X25519, one decapsulation job, the first
//!   message decrypted).

use std::time::Instant;

use rand_core::OsRng;
use ratchet::kem::{KemJob, KemOutput};
use ratchet::{pqxdh, x3dh, CpuKem, DalekDh, KeyPair, Responder};
use zeroize::Zeroizing;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm-up
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect(),
    )
}

fn seed(i: usize) -> Zeroizing<[u8; 64]> {
    let mut s = Zeroizing::new([0u8; 64]);
    for (j, b) in s.iter_mut().enumerate() {
        *b = (i * 131 + j * 7) as u8;
    }
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut runs = 200usize;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--runs" => {
                runs = args.get(i + 1).and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or_else(|| {
                    eprintln!("--runs needs a positive number");
                    std::process::exit(2)
                });
                i += 1;
            }
            "--quick" => runs = 20,
            other => {
                eprintln!("unknown argument {other}; usage: ratchet-bench [--runs N] [--quick]");
                std::process::exit(2);
            }
        }
        i += 1;
    }
    let mut out = serde_json::Map::new();
    let mut put = |k: &str, v: f64| {
        eprintln!("{k:<36} {v:>10.1}");
        out.insert(k.to_string(), serde_json::json!((v * 10.0).round() / 10.0));
    };

    // ML-KEM-1024 jobs on fresh keys.
    let mut n = 0;
    put(
        "ratchet_mlkem1024_keygen_us",
        time(runs, || {
            n += 1;
            let r = (KemJob::KeyGen { seed: seed(n) }).run().unwrap();
            assert!(matches!(r, KemOutput::PublicKey(_)));
        }),
    );
    let KemOutput::PublicKey(pk) = (KemJob::KeyGen { seed: seed(0) }).run().unwrap() else { unreachable!() };
    let mut ct = None;
    put(
        "ratchet_mlkem1024_encaps_us",
        time(runs, || {
            n += 1;
            let job = KemJob::Encapsulate { public_key: pk.clone(), randomness: Zeroizing::new([n as u8; 32]) };
            let KemOutput::Encapsulated { ciphertext, .. } = job.run().unwrap() else { unreachable!() };
            ct = Some(ciphertext);
        }),
    );
    let ct = ct.unwrap();
    put(
        "ratchet_mlkem1024_decaps_us",
        time(runs, || {
            let r = (KemJob::Decapsulate { seed: seed(0), ciphertext: ct.clone() }).run().unwrap();
            assert!(matches!(r, KemOutput::SharedSecret(_)));
        }),
    );
    {
        use libcrux_ml_kem::mlkem1024;
        let kp = mlkem1024::generate_key_pair(*seed(0));
        let c = mlkem1024::MlKem1024Ciphertext::from(&*ct);
        put(
            "ratchet_mlkem1024_decaps_only_us",
            time(runs, || {
                std::hint::black_box(mlkem1024::decapsulate(kp.private_key(), &c));
            }),
        );
    }

    // Whole initiations (a fresh bundle each time: one-time curve and PQ prekeys).
    let mut dh = DalekDh;
    let mut bob = Responder::generate(KeyPair::generate(&mut OsRng, &mut dh).unwrap(), 0, &mut OsRng, &mut dh).unwrap();
    bob.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).unwrap();
    let alice = KeyPair::generate(&mut OsRng, &mut dh).unwrap();
    let pq_bundle = bob.pqxdh_bundle();
    let x_bundle = bob.bundle();
    put(
        "ratchet_x3dh_init_us",
        time(runs, || {
            let mut s = x3dh::initiate_with(&alice, &x_bundle, &mut OsRng, &mut DalekDh).unwrap();
            std::hint::black_box(s.encrypt(b"hello").unwrap());
        }),
    );
    let mut first = Vec::new();
    put(
        "ratchet_pqxdh_init_us",
        time(runs, || {
            let mut s = pqxdh::initiate_with(&alice, &pq_bundle, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap();
            first = s.encrypt(b"hello").unwrap();
        }),
    );
    // The responder's side with the last-resort PQ prekey (not consumed, so every run accepts).
    put(
        "ratchet_pqxdh_accept_us",
        time(runs, || {
            let (_s, pt) = bob.accept_with_kem(&first, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap();
            assert_eq!(&pt[..], b"hello");
        }),
    );
    println!("{}", serde_json::Value::Object(out));
}
