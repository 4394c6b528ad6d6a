//! Model behaviour: error cases, stop rules, pause/resume at random points, timing rules taken
//! from the spec tables (no cycle number is restated here).

use engine25519_core::asm::assemble;
use engine25519_core::isa::{self, Isa};
use engine25519_core::model::{self, EngineModel, Job, ModelError, RunStatus, StopReason};
use engine25519_core::programs::{self, Runner};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn load(isa: Isa, src: &str) -> (EngineModel, Job) {
    let p = assemble(src, isa).unwrap();
    let mut e = EngineModel::new(isa);
    e.load_program(&p.words, 100).unwrap();
    (e, Job { window: 3, mpstart: 100, mplen: p.words.len(), cycle_budget: 1_000_000 })
}

fn cost(isa: Isa, m: &str) -> u64 {
    isa.by_mnemonic(m).unwrap().cycles as u64
}
fn lat(isa: Isa, m: &str) -> u64 {
    isa.by_mnemonic(m).unwrap().latency as u64
}

#[test]
fn every_spec_opcode_is_implemented() {
    for isa in Isa::ALL {
        assert!(model::unimplemented_mnemonics(isa).is_empty(), "{isa}: {:?}", model::unimplemented_mnemonics(isa));
    }
}

#[test]
fn illegal_opcode_halts_with_error() {
    for isa in Isa::ALL {
        let (mut e, job) = load(isa, "psa %1, #1\nudf\nfin\n");
        match e.run(&job) {
            Err(ModelError::IllegalOpcode { mpc, word, cycles }) => {
                assert_eq!(mpc, 101);
                assert_eq!(word, isa::UDF_WORD);
                let go = isa.info().go_cycles as u64;
                assert_eq!(cycles, go + cost(isa, "psa") + isa.info().illegal_cycles as u64);
            }
            other => panic!("{isa}: expected IllegalOpcode, got {other:?}"),
        }
        // the instruction before the illegal one took effect
        assert_eq!(e.reg(3, 1).unwrap()[0], 1);
        // every undefined opcode value is illegal
        for code in 0..64u32 {
            if isa.opcode(code).is_none() {
                let mut e = EngineModel::new(isa);
                e.load_program(&[code], 0).unwrap();
                let job = Job { window: 0, mpstart: 0, mplen: 1, cycle_budget: 100 };
                assert!(matches!(e.run(&job), Err(ModelError::IllegalOpcode { .. })), "{isa}: opcode {code}");
            }
        }
    }
}

#[test]
fn branch_out_of_program_halts() {
    for isa in Isa::ALL {
        // backwards out of the program (target mpstart - 1); the assembler refuses such
        // targets, so the word is built by hand
        let brz = isa.by_mnemonic("brz").unwrap().code;
        let back = isa::Instr { opcode: brz, ra: 1, imm: -3, ..Default::default() }.encode();
        let (mut e, job) = load(isa, &format!("psa %1, #0\n.word {back:#x}\nfin\n"));
        assert!(matches!(e.run(&job), Err(ModelError::BranchOutOfProgram { mpc: 101, target: 99, .. })), "{isa}");
        // forwards past the end
        let fwd = isa::Instr { opcode: brz, ca: true, imm: 2, ..Default::default() }.encode();
        let (mut e, job) = load(isa, &format!(".word {fwd:#x}\nfin\nfin\n"));
        assert!(matches!(e.run(&job), Err(ModelError::BranchOutOfProgram { mpc: 100, target: 103, .. })));
        // a not-taken branch to outside is fine
        let far = isa::Instr { opcode: brz, ca: true, ra: 1, imm: 39, ..Default::default() }.encode();
        let (mut e, job) = load(isa, &format!(".word {far:#x}\nfin\n"));
        assert_eq!(e.run(&job).unwrap().stop_reason, StopReason::Fin);
        // a branch to the last word halts with finished without executing it (the shipped RTL
        // follows a branch only if target < mpstart + mplen - 1)
        let (mut e, job) = load(isa, "brz .+2, #0\nudf\npsa %2, #1\n");
        let o = e.run(&job).unwrap();
        assert_eq!(o.stop_reason, StopReason::BranchToEnd);
        assert_eq!(e.reg(3, 2).unwrap()[0], 0);
        assert_eq!(o.cycles, isa.info().go_cycles as u64 + cost(isa, "brz"));
        // one word before the last is a normal branch
        let (mut e, job) = load(isa, "brz .+2, #0\nudf\npsa %2, #1\npsa %3, #1\n");
        assert_eq!(e.run(&job).unwrap().stop_reason, StopReason::EndOfProgram);
        assert_eq!((e.reg(3, 2).unwrap()[0], e.reg(3, 3).unwrap()[0]), (1, 1));
        // the 10-bit program counter wraps: a program spanning the top and bottom of the
        // microcode RAM is not possible (mpstart + mplen <= 1024), so a wrapped target lands
        // outside the program and is reported with its wrapped address
        let back = isa::Instr { opcode: brz, ca: true, imm: -2, ..Default::default() }.encode();
        let mut e = EngineModel::new(isa);
        e.load_program(&[back, 10], 0).unwrap();
        let job = Job { window: 0, mpstart: 0, mplen: 2, cycle_budget: 100 };
        assert!(matches!(e.run(&job), Err(ModelError::BranchOutOfProgram { mpc: 0, target: 1023, .. })), "{isa}");
    }
}

#[test]
fn a_job_starts_go_cycles_after_go() {
    for isa in Isa::ALL {
        let (mut e, job) = load(isa, "fin\n");
        let o = e.run(&job).unwrap();
        assert_eq!(o.cycles, isa.info().go_cycles as u64 + cost(isa, "fin"));
    }
    // v1: the shipped sequencer's costs (FETCH, EXEC, ...): the plain sum plus the GO cycle
    let (mut e, job) = load(Isa::V1, "psa %1, #1\nmul %2, %1, %1\nbrz .+1, %1\nfin\n");
    let o = e.run(&job).unwrap();
    let v1 = Isa::V1;
    let sum = cost(v1, "psa") + cost(v1, "mul") + cost(v1, "brz") + cost(v1, "fin");
    assert_eq!(o.cycles, v1.info().go_cycles as u64 + sum);
}

#[test]
fn runaway_program_hits_the_budget() {
    for isa in Isa::ALL {
        // (two words: a branch to the last word would halt)
        let (mut e, mut job) = load(isa, "loop: brz loop, #0\nfin\n");
        job.cycle_budget = 5000;
        match e.run(&job) {
            Err(ModelError::CycleBudgetExceeded { cycles, budget, mpc }) => {
                assert_eq!(budget, 5000);
                assert!(cycles > 5000 && cycles <= 5000 + cost(isa, "brz"));
                assert_eq!(mpc, 100);
            }
            other => panic!("{isa}: expected CycleBudgetExceeded, got {other:?}"),
        }
        // the X25519 program does not fit a small budget
        let mut r = Runner::new(programs::x25519_program(isa));
        let mut job = r.job();
        job.cycle_budget = 1000;
        assert!(matches!(r.engine.run(&job), Err(ModelError::CycleBudgetExceeded { .. })));
    }
}

#[test]
fn bad_job_parameters() {
    let mut e = EngineModel::new(Isa::V1);
    let ok = Job { window: 0, mpstart: 0, mplen: 1, cycle_budget: 10 };
    assert_eq!(e.run(&Job { window: 16, ..ok }), Err(ModelError::BadWindow { window: 16 }));
    assert_eq!(e.run(&Job { mplen: 0, ..ok }), Err(ModelError::BadProgramRange { mpstart: 0, mplen: 0 }));
    assert_eq!(
        e.run(&Job { mpstart: 1000, mplen: 25, ..ok }),
        Err(ModelError::BadProgramRange { mpstart: 1000, mplen: 25 })
    );
    assert_eq!(e.run(&Job { mpstart: 1024, ..ok }), Err(ModelError::BadProgramRange { mpstart: 1024, mplen: 1 }));
    assert_eq!(e.load_program(&[0; 10], 1020), Err(ModelError::ProgramTooLong { at: 1020, len: 10 }));
    assert_eq!(e.load_program(&[0; 1025], 0), Err(ModelError::ProgramTooLong { at: 0, len: 1025 }));
    assert!(e.load_program(&[0; 1024], 0).is_ok());
    assert_eq!(e.set_reg(16, 0, &[0; 32]), Err(ModelError::BadWindow { window: 16 }));
    assert_eq!(e.reg(0, 32), Err(ModelError::BadRegister { reg: 32 }));
    // errors print something useful
    assert!(ModelError::BadWindow { window: 16 }.to_string().contains("window 16"));
}

#[test]
fn end_of_program_stops_after_the_last_word() {
    for isa in Isa::ALL {
        let (mut e, job) = load(isa, "psa %1, #1\npsa %2, #1\n");
        let o = e.run(&job).unwrap();
        assert_eq!((o.stop_reason, o.instructions, o.last_mpc), (StopReason::EndOfProgram, 2, 101));
        // a job covering only part of the loaded words stops early
        let (mut e, mut job) = load(isa, "psa %1, #1\npsa %2, #1\npsa %3, #1\n");
        job.mplen = 2;
        e.run(&job).unwrap();
        assert_eq!(e.reg(3, 2).unwrap()[0], 1);
        assert_eq!(e.reg(3, 3).unwrap()[0], 0);
    }
}

#[test]
fn v1_cycles_are_the_sum_of_the_costs() {
    let isa = Isa::V1;
    let (mut e, job) = load(isa, "mul %1, #2, #2\nadd %2, %1, %1\nmul %3, %2, %1\nbrz .+1, #0\nxbt %4, %3\nfin\n");
    let o = e.run(&job).unwrap();
    let want = isa.info().go_cycles as u64
        + 2 * cost(isa, "mul")
        + cost(isa, "add")
        + cost(isa, "brz")
        + cost(isa, "xbt")
        + cost(isa, "fin");
    assert_eq!(o.cycles, want);
}

#[test]
fn v2_scoreboard_timing_follows_the_tables() {
    let isa = Isa::V2;
    let go = isa.info().go_cycles as u64;
    let units = model::unit_counts(isa);
    assert_eq!(units, vec![("mul".to_string(), 2)]);
    // a dependent instruction waits for the MUL result
    let (mut e, job) = load(isa, "mul %1, #2, #2\npsa %2, %1\nfin\n");
    let o = e.run(&job).unwrap();
    // psa issues when the product is written; FIN issues after psa's cost and after the drain
    let psa_issue = go + lat(isa, "mul");
    let fin_issue = (psa_issue + cost(isa, "psa")).max(psa_issue + lat(isa, "psa"));
    assert_eq!(o.cycles, fin_issue + cost(isa, "fin"));
    // an independent one does not
    let (mut e, job) = load(isa, "mul %1, #2, #2\npsa %2, #1\npsa %3, %2\n");
    let o = e.run(&job).unwrap();
    assert_eq!(o.cycles, go + lat(isa, "mul"), "ALU work overlaps the multiply; the end waits for the write");
    // a third MUL waits for a free multiplier (two units)
    let (mut e, job) = load(isa, "mul %1, #2, #2\nmul %2, #2, #2\nmul %3, #2, #2\npsa %4, #1\nfin\n");
    let o = e.run(&job).unwrap();
    let third_issue = go + lat(isa, "mul"); // unit 0 frees at issue(0) + latency
    assert_eq!(o.cycles, third_issue + lat(isa, "mul") + cost(isa, "fin"));
    // ALU chains: a dependent ALU op waits for the latency, an independent one issues next cycle
    let (mut e, job) = load(isa, "psa %1, #1\npsa %2, %1\n");
    assert_eq!(e.run(&job).unwrap().cycles, go + lat(isa, "psa") + lat(isa, "psa"));
    let (mut e, job) = load(isa, "psa %1, #1\npsa %2, #1\n");
    assert_eq!(e.run(&job).unwrap().cycles, go + cost(isa, "psa") + lat(isa, "psa"));
    // writing a register with a pending MUL result waits (no write-after-write reordering)
    let (mut e, job) = load(isa, "mul %1, #2, #2\npsa %1, #5\nfin\n");
    let o = e.run(&job).unwrap();
    assert_eq!(o.cycles, go + lat(isa, "mul") + lat(isa, "psa") + cost(isa, "fin"));
    assert_eq!(e.reg(3, 1).unwrap()[0], 5);
}

#[test]
fn v2_new_opcodes() {
    let isa = Isa::V2;
    // cswap: swaps exactly when the condition bit is set
    let (mut e, job) = load(isa, "psa %1, #5\npsa %2, #6\npsa %3, #1\ncswap %1, %2, %3\ncswap %1, %2, #0\nfin\n");
    e.run(&job).unwrap();
    assert_eq!((e.reg(3, 1).unwrap()[0], e.reg(3, 2).unwrap()[0]), (10, 5));
    // fadd / fsub wrap at p
    let (mut e, job) = load(isa, "sub %1, #3, #1\nfadd %2, %1, #1\nfsub %3, #0, #1\nfin\n");
    e.run(&job).unwrap();
    assert_eq!(e.reg(3, 2).unwrap(), [0; 32]);
    assert_eq!(e.reg(3, 3).unwrap(), e.reg(3, 1).unwrap()); // 0 - 1 = p - 1
                                                            // v1 does not have them
    assert!(assemble("fadd %1, %2, %3\n", Isa::V1).is_err());
}

#[test]
fn memory_window_access() {
    let mut e = EngineModel::new(Isa::V1);
    e.mem_write(isa::mem::UCODE_OFFSET + 8, 0x1234_5678);
    assert_eq!(e.ucode()[2], 0x1234_5678);
    assert_eq!(e.mem_read(isa::mem::UCODE_OFFSET + 8), 0x1234_5678);
    let off = isa::rf_offset(5, 7);
    e.mem_write(off + 4, 0xAABB_CCDD);
    assert_eq!(e.reg_words(5, 7).unwrap()[1], 0xAABB_CCDD);
    assert_eq!(e.mem_read(off + 4), 0xAABB_CCDD);
    assert_eq!(e.mem_read(isa::mem::UCODE_SIZE + 4), isa::mem::UNDECODED_READ);
    assert_eq!(e.mem_read(isa::mem::RF_OFFSET + isa::mem::RF_SIZE), isa::mem::UNDECODED_READ);
}

/// Run to completion by pausing at the given instruction counts, moving the saved state through
/// JSON and onto a fresh engine each time.
fn run_with_pauses(isa: Isa, k: &[u8; 32], u: &[u8; 32], pauses: &[u64]) -> ([u8; 32], u64) {
    let prog = programs::x25519_program(isa);
    let mut r = Runner::new(prog);
    r.window = 7;
    r.engine.set_reg(7, programs::X25519_SCALAR_REG, k).unwrap();
    r.engine.set_reg(7, programs::X25519_U_REG, u).unwrap();
    let job = r.job();
    let mut done = 0;
    let mut st = r.engine.run_limited(&job, pauses.first().copied().unwrap_or(u64::MAX)).unwrap();
    let mut i = 1;
    let mut engine = r.engine;
    loop {
        match st {
            RunStatus::Finished(o) => {
                assert!(o.instructions > done);
                return (engine.reg(7, programs::RESULT_REG).unwrap(), o.cycles);
            }
            RunStatus::Paused(p) => {
                done = p.instructions;
                let json = serde_json::to_string(&p).unwrap();
                let p2: model::PausedJob = serde_json::from_str(&json).unwrap();
                assert_eq!(p, p2);
                // resume on a fresh engine holding the same microcode
                let mut fresh = EngineModel::new(isa);
                fresh.load_program(prog.words(), 0).unwrap();
                engine = fresh;
                let step = pauses.get(i).map(|&x| x - pauses[i - 1]).unwrap_or(u64::MAX);
                i += 1;
                st = engine.resume(&p2, step).unwrap();
            }
        }
    }
}

#[test]
fn pause_and_resume_at_random_points() {
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    for isa in Isa::ALL {
        let mut k = [0u8; 32];
        let mut u = [0u8; 32];
        rng.fill_bytes(&mut k);
        rng.fill_bytes(&mut u);
        let (want, cycles) = programs::x25519(isa, &k, &u);
        let mut r = Runner::new(programs::x25519_program(isa));
        let total = r.run(&[k, u]).unwrap().1.instructions;
        for trial in 0..6 {
            let n = 1 + trial * 3;
            let mut pts: Vec<u64> = (0..n).map(|_| 1 + rng.next_u64() % (total - 1)).collect();
            pts.sort();
            pts.dedup();
            if trial == 0 {
                pts = vec![0, 1, 2, total - 1]; // edges: before the first, after the last
            }
            let (got, c) = run_with_pauses(isa, &k, &u, &pts);
            assert_eq!(got, want, "{isa}: result after pauses at {pts:?}");
            assert_eq!(c, cycles, "{isa}: cycle count after pauses at {pts:?}");
        }
    }
}

#[test]
fn resume_rejects_bad_state() {
    let prog = programs::x25519_v2();
    let mut r = Runner::new(prog);
    let job = r.job();
    let RunStatus::Paused(p) = r.engine.run_limited(&job, 50).unwrap() else { panic!() };
    let mut v1 = EngineModel::new(Isa::V1);
    assert!(matches!(v1.resume(&p, 1), Err(ModelError::BadPausedState { .. })));
    let mut bad = p.clone();
    bad.mpc = 5000;
    assert!(matches!(r.engine.resume(&bad, 1), Err(ModelError::BadPausedState { .. })));
    let mut bad = p.clone();
    bad.ready.pop();
    assert!(matches!(r.engine.resume(&bad, 1), Err(ModelError::BadPausedState { .. })));
    let mut bad = p;
    bad.job.window = 99;
    assert!(matches!(r.engine.resume(&bad, 1), Err(ModelError::BadWindow { window: 99 })));
}
