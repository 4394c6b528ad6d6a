//! The X25519 batch program (`x25519_batch_v2.s`: up to three X25519 in one engine run) on the
//! model against outside references: RFC 7748 (5.2 and 6.1) for N = 1, 2, 3 and x25519-dalek on
//! random inputs; one cycle count per N for every input; its register convention as
//! engine25519_core::programs states it; and bad N refused.

use engine25519_core::isa::Isa;
use engine25519_core::programs::{self, BatchError, Runner};
use engine25519_core::vectors::{bytes32, RFC7748};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use x25519_dalek::{PublicKey, StaticSecret};

fn dalek(k: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
    *StaticSecret::from(*k).diffie_hellman(&PublicKey::from(*u)).as_bytes()
}

fn runner() -> Runner {
    Runner::new(programs::x25519_batch_program(Isa::V2).expect("the v2 batch program"))
}

#[test]
fn only_v2_has_a_batch_program() {
    assert!(programs::x25519_batch_program(Isa::V1).is_none());
    let p = programs::x25519_batch_program(Isa::V2).unwrap();
    assert_eq!(p.file, "x25519_batch_v2.s");
    // inputs: the six ring slots, then the counter
    let mut want = programs::X25519_BATCH_SLOTS.to_vec();
    want.push(programs::X25519_BATCH_COUNT_REG);
    assert_eq!(p.inputs, &want[..]);
    assert_eq!(programs::X25519_BATCH_MAX, 3);
}

#[test]
fn rfc7748_vectors_for_one_two_and_three_jobs() {
    let mut r = runner();
    for n in 1..=programs::X25519_BATCH_MAX {
        for start in 0..RFC7748.len() {
            let pick: Vec<_> = (0..n).map(|j| RFC7748[(start + j) % RFC7748.len()]).collect();
            let jobs: Vec<_> = pick.iter().map(|(k, u, _)| (bytes32(k), bytes32(u))).collect();
            let (got, _) = programs::run_x25519_batch(&mut r, &jobs).unwrap();
            for (j, (k, _, want)) in pick.iter().enumerate() {
                assert_eq!(got[j], bytes32(want), "{n} jobs from vector {start}: job {j} (k={k})");
            }
            r.engine.clear_window(r.window).unwrap();
        }
    }
}

/// Every job's result where `x25519_batch_result_reg` says, each equal to x25519-dalek (and to
/// the single X25519 program), for random scalars and points; each N takes one cycle count and
/// one instruction count for every input, and N jobs cost less than N single runs.
#[test]
fn random_jobs_match_dalek_with_constant_cycles_per_n() {
    let mut rng = ChaCha20Rng::seed_from_u64(0xba7c_4255);
    let mut r = runner();
    let single = programs::x25519_cycles_checked(Isa::V2);
    let mut cycles = [None; 4];
    for case in 0..300 {
        let n = 1 + case % programs::X25519_BATCH_MAX;
        let jobs: Vec<([u8; 32], [u8; 32])> = (0..n)
            .map(|j| {
                let mut k = [0u8; 32];
                let mut u = [0u8; 32];
                rng.fill_bytes(&mut k);
                rng.fill_bytes(&mut u);
                if (case + j) % 4 == 0 {
                    let mut s = [0u8; 32];
                    rng.fill_bytes(&mut s);
                    u = PublicKey::from(&StaticSecret::from(s)).to_bytes();
                }
                (k, u)
            })
            .collect();
        // the previous run's leftovers stay in the window: the program must not depend on them
        let (got, o) = programs::run_x25519_batch(&mut r, &jobs).unwrap();
        for (j, (k, u)) in jobs.iter().enumerate() {
            assert_eq!(got[j], dalek(k, u), "case {case} ({n} jobs): job {j} differs from x25519-dalek");
        }
        let seen = cycles[n].get_or_insert((o.cycles, o.instructions));
        assert_eq!(*seen, (o.cycles, o.instructions), "{n} jobs: cycles depend on the data");
    }
    // extreme scalars and points, three jobs at a time
    let extreme = [[0u8; 32], [0xff; 32], bytes32(RFC7748[2].1)];
    for k in extreme {
        let jobs: Vec<_> = extreme.iter().map(|u| (k, *u)).collect();
        let (got, o) = programs::run_x25519_batch(&mut r, &jobs).unwrap();
        for (j, (k, u)) in jobs.iter().enumerate() {
            assert_eq!(got[j], dalek(k, u));
        }
        assert_eq!(Some((o.cycles, o.instructions)), cycles[3], "3 jobs: cycles depend on the data");
    }
    for n in 1..=3 {
        let (c, _) = cycles[n].unwrap();
        assert_eq!(c, programs::x25519_batch_cycles_checked(Isa::V2, n), "{n} jobs");
        // N single runs' cycles, give or take a few, plus a few dozen per turn of the ring
        let n = n as u64;
        assert!(
            c + 10 >= n * single && c <= n * single + 40 * (n - 1) + 10,
            "{n} jobs: {c} cycles, one X25519 {single}"
        );
        eprintln!("{n} jobs: {c} cycles (one X25519: {single})");
    }
}

/// The program's results sit exactly where the convention says and the slots of jobs that do
/// not run are neither read nor needed: with junk in them the results are the same.
#[test]
fn unused_slots_are_not_read() {
    let mut r = runner();
    let (k0, u0, want0) = RFC7748[0];
    let (k1, u1, want1) = RFC7748[1];
    for n in 1..=2 {
        let mut inputs =
            programs::x25519_batch_inputs(&[(bytes32(k0), bytes32(u0)), (bytes32(k1), bytes32(u1))][..n]).unwrap();
        for slot in inputs.iter_mut().take(programs::X25519_BATCH_SLOTS.len()).skip(2 * n) {
            *slot = [0xa5; 32];
        }
        r.run(&inputs).unwrap();
        let at = |j| r.engine.reg(r.window, programs::x25519_batch_result_reg(n, j).unwrap()).unwrap();
        assert_eq!(at(0), bytes32(want0), "{n} jobs");
        if n == 2 {
            assert_eq!(at(1), bytes32(want1));
        }
    }
}

#[test]
fn result_registers_follow_the_ring() {
    use programs::x25519_batch_result_reg as at;
    assert_eq!(at(1, 0), Ok(31));
    assert_eq!((at(2, 0), at(2, 1)), (Ok(23), Ok(31)));
    assert_eq!((at(3, 0), at(3, 1), at(3, 2)), (Ok(21), Ok(23), Ok(31)));
}

#[test]
fn bad_job_counts_are_refused() {
    for n in [0, 4, 17] {
        assert_eq!(programs::x25519_batch_count_value(n), Err(BatchError::BadCount(n)));
        assert_eq!(programs::x25519_batch_result_reg(n, 0), Err(BatchError::BadCount(n)));
        let jobs = vec![([1u8; 32], [9u8; 32]); n];
        let e = programs::run_x25519_batch(&mut runner(), &jobs).unwrap_err();
        assert_eq!(e.to_string(), format!("the X25519 batch program runs 1..=3 jobs, not {n}"));
    }
    assert_eq!(programs::x25519_batch_result_reg(2, 2), Err(BatchError::BadJob { n: 2, job: 2 }));
    assert_eq!(programs::x25519_batch_count_value(3).unwrap()[0], 2);
}
