//! The engine's gateware (gateware/engine, docs/gateware.md): test steps on Verilator.
//!
//! * `engine:rtl-units` — the field multiplier at its edges (operands near p, in
//!   [2^255 - 19, 2^256), limbs of 0x1ffff, the normalize overflow case) and 3,000 random
//!   products against Python integers, fixed latency; the ALU: every op on edge operand pairs
//!   (around p, 2^255, 2^256) and random ones, FADD/FSUB in their two passes; the register file
//!   alone (two ports in two phases per eng_clk) against a model of its read/write contract, on
//!   the RTL and on yosys's netlist of it; the FPGA flows' bad input (tests/test_fpga_tools.py).
//! * `engine:rtl-vectors` — every vector the model exports (`engine25519_core::formats::export`,
//!   the same directory as `cargo xtask engine-vectors`) on the Verilated engine, v2 and v1:
//!   bit-exact outputs, the model's cycle and instruction counts; and the CSR block / memory
//!   window / interrupt (gateware/engine/csr.py) running X25519 over the bus.
//! * `engine:rtl-netlist` — yosys's synth_xilinx netlist of the whole v2 engine on Verilator
//!   (gateware/engine/tests/test_netlist.py, ENGINE_NETLIST=ci): the directed programs and the
//!   fewest random ones that use every opcode (event, cycles, instructions, all 32 registers as
//!   the model's), then RFC 7748's first X25519 vector paused and resumed (the RFC's output, the
//!   model's cycle count). The long set (v1 too, every vector, a Wycheproof sample) is the
//!   bench provider `engine-netlist`.

use crate::bench::parse_flat_json;
use crate::build::gateware;
use crate::ctx::Ctx;
use crate::setup;
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use crate::supervisor;
use crate::util;
use anyhow::{anyhow, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![
        step!("engine:rtl-units", 15 * 60, |c| units(c)),
        step!("engine:rtl-vectors", 20 * 60, |c| rtl_vectors(c)),
        step!("engine:rtl-cases", 20 * 60, |c| rtl_cases(c)),
        step!("engine:rtl-x25519", 30 * 60, |c| rtl_x25519(c)),
        step!("engine:rtl-netlist", 30 * 60, |c| rtl_netlist(c)),
        step!("engine:rtl-backend", 15 * 60, |c| rtl_backend(c)),
        step!("engine:rtl-synth", 20 * 60, |_| synth_whole_v2()),
    ]
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "engine-gateware", timeout: Duration::from_secs(30 * 60), run: |_| bench() }]
}

/// The engine server's rtl backend (services/engine25519/src/rtl_backend.rs) against the model:
/// X25519 on v1 and v2, an illegal word, malformed requests.
fn rtl_backend(ctx: &Ctx) -> Result<()> {
    let mut cmd = util::cargo();
    cmd.args(["test", "--release", "-p", "engine25519-server", "--lib", "rtl_backend", "--", "--ignored"]);
    if !ctx.verbose {
        cmd.arg("--quiet");
    }
    for (k, v) in gateware::rtl_backend_env() {
        cmd.env(k, v);
    }
    supervisor::run(&mut cmd, Duration::from_secs(12 * 60), "cargo test rtl_backend (Verilated engine)")
}

/// `engine:rtl-synth`: yosys on the whole v2 engine only (the top the SoC carries), its budgets
/// checked (gateware/engine/synth.py --check); the per-block breakdown is in the bench.
fn synth_whole_v2() -> Result<()> {
    synth_with(&["v2".into()], None, true).map(|_| ())
}

/// yosys on the whole engine and per block (gateware/engine/synth.py), v2's budgets checked
/// on the whole; flat results.
pub fn synth(isas: &[String], json: Option<&Path>) -> Result<BenchResults> {
    synth_with(isas, json, false)
}

fn synth_with(isas: &[String], json: Option<&Path>, whole_only: bool) -> Result<BenchResults> {
    setup::require_apt(setup::apt::GATEWARE)?;
    let py = gateware::python()?;
    let dir = util::target_dir().join("gateware").join("engine-synth");
    std::fs::create_dir_all(&dir)?;
    let out = json.map(Path::to_path_buf).unwrap_or_else(|| dir.join("synth.json"));
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "engine.synth", "--check", "--json"]).arg(&out).arg("--workdir").arg(dir.join("work"));
    if whole_only {
        cmd.arg("--whole-only");
    }
    for i in isas {
        cmd.args(["--isa", i]);
    }
    supervisor::run(&mut cmd, Duration::from_secs(18 * 60), "engine.synth (yosys)")?;
    parse_flat_json(&std::fs::read_to_string(&out).context("synth JSON")?)
}

/// Bench: synthesis figures (v1, v2) and the RTL's X25519 cycle counts (equal to the model's).
fn bench() -> Result<BenchResults> {
    let mut r = synth(&[], None)?;
    let vec = vectors(8)?;
    let py = gateware::python()?;
    let out = util::target_dir().join("gateware").join("engine-bench.json");
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "engine.bench"]).arg(&vec).arg("--json").arg(&out);
    supervisor::run(&mut cmd, Duration::from_secs(10 * 60), "engine.bench (Verilator)")?;
    r.extend(parse_flat_json(&std::fs::read_to_string(&out).context("bench JSON")?)?);
    Ok(r)
}

/// The model-run case files (random + directed programs) for v1 and v2, in one directory.
pub fn case_dir() -> Result<PathBuf> {
    let dir = util::target_dir().join("gateware").join("engine-cases");
    std::fs::create_dir_all(&dir)?;
    for isa in engine25519_core::isa::Isa::ALL {
        let n = cases::write(&dir.join(format!("cases_{}.json", isa.name())), isa, 400, 0x5EED_2551)?;
        eprintln!("engine cases: {n} {} programs run on the model", isa.name());
    }
    Ok(dir)
}

fn rtl_cases(ctx: &Ctx) -> Result<()> {
    let dir = case_dir()?;
    gateware::pytest(
        ctx.verbose,
        &["engine/tests/test_engine_cases.py"],
        &[],
        &[("ENGINE_CASES", &dir)],
        Duration::from_secs(15 * 60),
    )
}

fn rtl_x25519(ctx: &Ctx) -> Result<()> {
    let dir = vectors(8)?;
    gateware::pytest(
        ctx.verbose,
        &["engine/tests/test_engine_x25519.py"],
        &[],
        &[("ENGINE_VECTORS", &dir)],
        Duration::from_secs(25 * 60),
    )
}

/// The whole v2 engine's netlist on the short set (test_netlist.py, ENGINE_NETLIST=ci).
fn rtl_netlist(ctx: &Ctx) -> Result<()> {
    let dir = vectors(8)?;
    let cases = case_dir()?;
    gateware::pytest(
        ctx.verbose,
        &["engine/tests/test_netlist.py"],
        &[],
        &[("ENGINE_VECTORS", &dir), ("ENGINE_CASES", &cases), ("ENGINE_NETLIST", Path::new("ci"))],
        Duration::from_secs(28 * 60),
    )
}

/// The model's vector directory (fixed seed), exported and re-checked on the model.
pub fn vectors(count: usize) -> Result<PathBuf> {
    let dir = util::target_dir().join("gateware").join(format!("engine-vectors-{count}"));
    crate::areas::engine::isa::vectors::export(&dir, count, 0x25519).map_err(|e| anyhow!(e))?;
    crate::areas::engine::isa::vectors::verify(&dir).map_err(|e| anyhow!(e))?;
    Ok(dir)
}

fn rtl_vectors(ctx: &Ctx) -> Result<()> {
    let dir = vectors(8)?;
    gateware::pytest(
        ctx.verbose,
        &["engine/tests/test_engine_vectors.py", "engine/tests/test_csr.py"],
        &[],
        &[("ENGINE_VECTORS", &dir)],
        Duration::from_secs(15 * 60),
    )
}

fn units(ctx: &Ctx) -> Result<()> {
    gateware::pytest(
        ctx.verbose,
        &[
            "engine/tests/test_mul.py",
            "engine/tests/test_alu.py",
            "engine/tests/test_regfile.py",
            "tests/test_fpga_tools.py",
        ],
        &[],
        &[],
        Duration::from_secs(12 * 60),
    )
}

/// `cargo xtask gateware test [-k EXPR]`.
pub fn run_tests(ctx: &Ctx, extra: &[String]) -> Result<()> {
    let dir = vectors(8)?;
    let cases = case_dir()?;
    gateware::pytest(
        ctx.verbose,
        &["engine/tests"],
        extra,
        &[("ENGINE_VECTORS", &dir), ("ENGINE_CASES", &cases)],
        Duration::from_secs(30 * 60),
    )
}

/// Random and directed programs run on the model, written as a case file for the RTL
/// (gateware/engine/tests/test_engine_cases.py): illegal opcodes (also with multiplies in
/// flight), branches to the last word, past it, before the start and wrapping below 0, FIN,
/// end of program, every opcode of the ISA with random registers and constant operands.
/// Each case: job, program, the window's 32 registers before, and from the model: the event
/// (finished / illegal), the cycle count, the instruction count (null for halts the model
/// reports as errors) and the 32 registers after.
pub mod cases {
    use anyhow::Result;
    use engine25519_core::isa::{Instr, Isa, OperandKind};
    use engine25519_core::model::{EngineModel, Job, ModelError};
    use serde_json::{json, Value};
    use std::path::Path;

    use det_rng::XorShift64 as Rng;

    use hex::encode as hex;

    fn reg_value(r: &mut Rng) -> [u8; 32] {
        let mut v = [0u8; 32];
        match r.below(6) {
            0 => {} // zero
            1 => v[0] = 1,
            2 => {
                // near p = 2^255 - 19
                v = [0xff; 32];
                v[31] = 0x7f;
                v[0] = 0xed - r.below(4) as u8;
            }
            _ => v.iter_mut().for_each(|b| *b = r.next() as u8),
        }
        v
    }

    fn legal_word(isa: Isa, r: &mut Rng, brz_ok: bool) -> u32 {
        loop {
            let ops = isa.opcodes();
            let op = &ops[r.below(ops.len() as u64) as usize];
            if (op.mnemonic == "brz" && !brz_ok) || op.mnemonic == "fin" {
                continue;
            }
            let reg_only = |k: OperandKind| op.operands.contains(&k);
            let i = Instr {
                opcode: op.code,
                ra: r.below(32) as u8,
                ca: !reg_only(OperandKind::RaReg) && r.below(4) == 0,
                rb: r.below(32) as u8,
                cb: !reg_only(OperandKind::RbReg) && r.below(4) == 0,
                wd: r.below(32) as u8,
                imm: r.below(9) as i16 - 2,
            };
            return i.encode();
        }
    }

    fn illegal_word(isa: Isa, r: &mut Rng) -> u32 {
        loop {
            let w = (r.next() as u32 & !0x3f) | r.below(64) as u32;
            if isa.opcode_of(w).is_none() {
                return w;
            }
        }
    }

    fn brz(imm: i16, ra: u8, ca: bool, isa: Isa) -> u32 {
        Instr { opcode: isa.by_mnemonic("brz").unwrap().code, ra, ca, imm, ..Default::default() }.encode()
    }

    fn run_case(isa: Isa, words: &[u32], window: usize, mpstart: usize, regs: &[[u8; 32]]) -> Option<Value> {
        let mut m = EngineModel::new(isa);
        m.load_program(words, mpstart).ok()?;
        for (k, v) in regs.iter().enumerate() {
            m.set_reg(window, k, v).ok()?;
        }
        let job = Job { window, mpstart, mplen: words.len(), cycle_budget: 200_000 };
        let (event, cycles, instructions) = match m.run(&job) {
            Ok(o) => ("finished", o.cycles, Some(o.instructions)),
            Err(ModelError::IllegalOpcode { cycles, .. }) => ("illegal", cycles, None),
            Err(ModelError::BranchOutOfProgram { cycles, .. }) => ("finished", cycles, None),
            Err(_) => return None, // runaway loop: no case
        };
        let after: Vec<String> = (0..32).map(|k| hex(&m.reg(window, k).unwrap())).collect();
        Some(json!({
            "window": window, "mpstart": mpstart, "mplen": words.len(), "words": words,
            "regs": regs.iter().map(hex).collect::<Vec<_>>(), "event": event, "cycles": cycles,
            "instructions": instructions, "after": after,
        }))
    }

    /// Write `n` random cases plus the directed ones for `isa` to `path`.
    pub fn write(path: &Path, isa: Isa, n: usize, seed: u64) -> Result<usize> {
        let mut r = Rng(seed | 1);
        let mut out = Vec::new();
        let mul =
            Instr { opcode: isa.by_mnemonic("mul").unwrap().code, ra: 1, rb: 2, wd: 3, ..Default::default() }.encode();
        let psa = |wd: u8, ra: u8| {
            Instr { opcode: isa.by_mnemonic("psa").unwrap().code, ra, wd, ..Default::default() }.encode()
        };
        let fin = Instr { opcode: isa.by_mnemonic("fin").unwrap().code, ..Default::default() }.encode();
        // directed: (program, mpstart)
        let directed: Vec<(Vec<u32>, usize)> = vec![
            (vec![illegal_word(isa, &mut r)], 0),
            (vec![mul, illegal_word(isa, &mut r), psa(4, 3)], 5), // illegal with a multiply in flight
            (vec![mul, psa(5, 1), brz(1, 0, true, isa), psa(6, 2), psa(7, 2)], 10), // branch to the last word
            (vec![psa(5, 1), brz(2, 0, true, isa), psa(6, 2), psa(7, 2)], 10), // branch past the end
            (vec![psa(5, 1), brz(-3, 0, true, isa), psa(6, 2), psa(7, 2)], 10), // branch before the start
            (vec![brz(-2, 0, true, isa), psa(6, 2)], 0),          // target wraps to 1023
            (vec![psa(5, 1), brz(0, 9, false, isa), psa(6, 2), psa(7, 2)], 20), // not taken unless %9 == 0
            (vec![mul, fin, psa(6, 3)], 0),                       // FIN drains the multiply
            (vec![mul, psa(6, 1)], 1023 - 1),                     // end of program at the RAM's end
        ];
        for (words, mpstart) in directed {
            let regs: Vec<[u8; 32]> = (0..32).map(|_| reg_value(&mut r)).collect();
            out.push(run_case(isa, &words, r.below(16) as usize, mpstart, &regs).expect("directed case runs"));
        }
        let mut tries = 0;
        while out.len() < n + 9 && tries < 20 * n {
            tries += 1;
            let len = 1 + r.below(24) as usize;
            let mpstart = r.below(1024 - len as u64) as usize;
            let words: Vec<u32> = (0..len)
                .map(|_| match r.below(40) {
                    0 => illegal_word(isa, &mut r),
                    1 => fin,
                    2..=5 => brz(r.below(9) as i16 - 2, r.below(32) as u8, r.below(3) == 0, isa),
                    _ => legal_word(isa, &mut r, false),
                })
                .collect();
            let regs: Vec<[u8; 32]> = (0..32).map(|_| reg_value(&mut r)).collect();
            if let Some(c) = run_case(isa, &words, r.below(16) as usize, mpstart, &regs) {
                out.push(c);
            }
        }
        let count = out.len();
        std::fs::write(path, serde_json::to_string(&json!({"isa": isa.name(), "cases": out}))?)?;
        Ok(count)
    }
}
