//! The X25519 batch program (`x25519_batch_v2.s`: up to three X25519 in one engine run) on the
//! model against outside references: RFC 7748 (5.2 and 6.1) for N = 1, 2, 3 and x25519-dalek on
//! random inputs; one cycle count per N for every input; the jobs' inversions interleaved (two
//! in the time of one); its register convention as engine25519_core::programs states it; and
//! bad N refused.

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
/// one instruction count for every input; one job costs no more than the single program, N jobs
/// less than N single runs.
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
        eprintln!("{n} jobs: {c} cycles (one X25519: {single})");
    }
    // one job costs no more than the single program; N jobs less than N single runs
    assert!(cycles[1].unwrap().0 <= single, "1 job: {:?} cycles, one X25519 {single}", cycles[1]);
    for n in 2..=3 {
        assert!(cycles[n].unwrap().0 < n as u64 * single, "{n} jobs: {:?}, one X25519 {single}", cycles[n]);
    }
}

/// The cycle at which a run of `runner`'s program on `inputs` first reaches the word at `pc`
/// (stepping one instruction at a time), and the run's total.
fn arrival(runner: &mut Runner, inputs: &[[u8; 32]], pc: usize) -> (u64, u64) {
    use engine25519_core::model::RunStatus;
    for (&reg, v) in runner.program.inputs.iter().zip(inputs) {
        runner.engine.set_reg(runner.window, reg, v).unwrap();
    }
    let job = runner.job();
    let mut st = runner.engine.run_limited(&job, 1).unwrap();
    let mut at = None;
    loop {
        match st {
            RunStatus::Paused(p) => {
                if p.mpc == pc && at.is_none() {
                    at = Some(p.cycle);
                }
                st = runner.engine.resume(&p, 1).unwrap();
            }
            RunStatus::Finished(o) => return (at.unwrap_or_else(|| panic!("word {pc} not reached")), o.cycles),
        }
    }
}

/// The inversions run interleaved: after the ladders, the inversions of two jobs take about the
/// time of the single program's one inversion and those of three about one and a half, while
/// the ladders cost what the single program's ladder costs, per job. The single program's split
/// is measured on the model too (its first word of x25519_invert.s).
#[test]
fn inversions_run_interleaved() {
    let single = programs::x25519_v2();
    let inv_start = (0..single.len())
        .find(|&i| single.program.source_files[i].as_deref() == Some("x25519_invert.s"))
        .expect("x25519_v2.s includes the inversion");
    let (k, u, _) = RFC7748[0];
    let (ladder, total) = arrival(&mut Runner::new(single), &[bytes32(k), bytes32(u)], inv_start);
    let inversion = total - ladder;
    assert!(inversion > 3_000 && ladder > 18_000, "ladder {ladder}, inversion {inversion}");
    let batch = programs::x25519_batch_program(Isa::V2).unwrap();
    let done = batch.label("ladders_done").expect("the batch program's label after the ladders");
    for n in 1..=programs::X25519_BATCH_MAX {
        let jobs: Vec<_> = (0..n).map(|j| (bytes32(RFC7748[j].0), bytes32(RFC7748[j].1))).collect();
        let inputs = programs::x25519_batch_inputs(&jobs).unwrap();
        let (ladders, total) = arrival(&mut runner(), &inputs, done);
        let inversions = total - ladders;
        eprintln!("{n} jobs: ladders {ladders}, inversions {inversions} (single program: {ladder} + {inversion})");
        let n = n as u64;
        assert!(ladders <= n * ladder + 20 * n, "{n} jobs: ladders take {ladders}");
        // N = 1 and 2: one chain's time (N = 1 starts its chain faster: below it); N = 3: 1.5
        let bound = if n == 3 { inversion * 3 / 2 } else { inversion };
        assert!(inversions <= bound + 20, "{n} jobs: inversions take {inversions}, single {inversion}");
        if n == 1 {
            assert!(inversions < inversion, "1 job: its inversion takes {inversions}, single {inversion}");
        }
        assert_eq!(total, programs::x25519_batch_cycles_checked(Isa::V2, n as usize));
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

/// Every Wycheproof X25519 case with a 32-byte public key (low-order points, non-canonical u,
/// twist points among them) as a job of a batch run, for each N (the cases taken N at a time,
/// each run's jobs rotated so every case runs in every slot position once over the three
/// rotations of N = 3): each result equal to x25519-dalek and, for the valid and acceptable
/// cases, to Wycheproof's shared secret.
#[test]
fn wycheproof_cases_as_batch_jobs() {
    use wycheproof::xdh::{TestName, TestSet};
    use wycheproof::TestResult;
    let set = TestSet::load(TestName::X25519).expect("wycheproof x25519 set loads");
    let cases: Vec<_> = set
        .test_groups
        .iter()
        .flat_map(|g| g.tests.iter())
        .filter_map(|t| {
            let k: [u8; 32] = t.private_key.as_ref().try_into().ok()?;
            let u: [u8; 32] = t.public_key.as_ref().try_into().ok()?;
            Some((t, k, u))
        })
        .collect();
    assert!(cases.len() > 500, "{} cases", cases.len());
    let mut r = runner();
    for n in 1..=programs::X25519_BATCH_MAX {
        for rot in 0..n {
            for chunk in cases.chunks(n) {
                let mut idx: Vec<usize> = (0..chunk.len()).collect();
                idx.rotate_left(rot % chunk.len());
                let jobs: Vec<_> = idx.iter().map(|&i| (chunk[i].1, chunk[i].2)).collect();
                let (got, _) = programs::run_x25519_batch(&mut r, &jobs).unwrap();
                for (j, &i) in idx.iter().enumerate() {
                    let (t, k, u) = &chunk[i];
                    assert_eq!(got[j], dalek(k, u), "{n} jobs: wycheproof tc {} ({}) in slot {j}", t.tc_id, t.comment);
                    if t.result != TestResult::Invalid {
                        assert_eq!(&got[j][..], t.shared_secret.as_ref(), "{n} jobs: tc {} ({})", t.tc_id, t.comment);
                    }
                }
                r.engine.clear_window(r.window).unwrap();
            }
        }
    }
}
