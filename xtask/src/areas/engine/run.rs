//! `cargo xtask engine-run PROG.s|PROG.hex|PROG.bin --isa v1|v2 --backend model|rtl --reg N=HEX ...`:
//! run any program on the cycle-exact model or on the Verilated RTL (gateware/engine/run.py) and
//! print the registers the program writes (the destinations of its words) and the cycle count.
//! For people writing microcode, and for checking model against RTL by hand: both backends print
//! the same lines for the same program.

use crate::areas::engine::isa as isa_cli;
use crate::build::gateware;
use crate::supervisor;
use crate::util;
use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use engine25519_core::isa::{Instr, Isa, OperandKind};
use engine25519_core::model::{EngineModel, Job, ModelError};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Model,
    Rtl,
}

#[derive(Args, Debug)]
pub struct EngineRunArgs {
    /// Program: assembly (.s) or an image (.hex, .bin).
    pub program: PathBuf,
    /// ISA to run on (v1, v2).
    #[arg(long, default_value = "v2")]
    pub isa: String,
    #[arg(long, value_enum, default_value = "model")]
    pub backend: Backend,
    /// Initial register value: N=HEX (N in 0..31, HEX a number of up to 256 bits, big-endian
    /// digits, optional 0x). Repeatable; other registers start at 0.
    #[arg(long = "reg", value_parser = parse_reg)]
    pub regs: Vec<(usize, [u8; 32])>,
    /// Register window.
    #[arg(long, default_value_t = 0)]
    pub window: usize,
    /// Microcode address to load the program at.
    #[arg(long, default_value_t = 0)]
    pub mpstart: usize,
    /// Stop a runaway program after this many cycles.
    #[arg(long, default_value_t = 10_000_000)]
    pub max_cycles: u64,
}

/// `N=HEX` -> (N, little-endian bytes).
pub fn parse_reg(s: &str) -> Result<(usize, [u8; 32]), String> {
    let (n, v) = s.split_once('=').ok_or_else(|| format!("{s:?}: expected N=HEX"))?;
    let n: usize =
        n.trim().trim_start_matches('%').parse().map_err(|_| format!("{s:?}: register {n:?} is not a number"))?;
    if n >= engine25519_core::isa::REGS_PER_WINDOW {
        return Err(format!("{s:?}: register {n} out of range (0..{})", engine25519_core::isa::REGS_PER_WINDOW));
    }
    let h = v.trim().trim_start_matches("0x").trim_start_matches("0X").replace('_', "");
    if h.is_empty() || h.len() > 64 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("{s:?}: value must be 1 to 64 hex digits"));
    }
    let h = format!("{h:0>64}");
    let mut out = [0u8; 32];
    for i in 0..32 {
        out[31 - i] = u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap();
    }
    Ok((n, out))
}

fn load_program(a: &EngineRunArgs, isa: Isa) -> Result<Vec<u32>> {
    let ext = a.program.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let words = if ext == "s" || ext == "asm" {
        isa_cli::assemble_file(&a.program, Some(isa))?.words
    } else {
        isa_cli::read_image(&a.program, None)?
    };
    if words.is_empty() {
        bail!("{}: empty program", a.program.display());
    }
    Ok(words)
}

/// Registers named as a destination by the program's words (Wd; CSWAP also Ra).
fn destinations(isa: Isa, words: &[u32]) -> Vec<usize> {
    let mut set = std::collections::BTreeSet::new();
    for &w in words {
        if let Some(op) = isa.opcode_of(w) {
            let i = Instr::decode(w);
            if op.operands.contains(&OperandKind::Wd) {
                set.insert(i.wd as usize);
            }
            if op.operands.contains(&OperandKind::RaReg) && op.mnemonic == "cswap" {
                set.insert(i.ra as usize);
            }
        }
    }
    set.into_iter().collect()
}

struct Outcome {
    event: String,
    cycles: u64,
    instructions: Option<u64>,
    regs: Vec<[u8; 32]>,
}

fn run_model(a: &EngineRunArgs, isa: Isa, words: &[u32]) -> Result<Outcome> {
    let mut m = EngineModel::new(isa);
    m.load_program(words, a.mpstart).map_err(|e| anyhow!("{e}"))?;
    for (n, v) in &a.regs {
        m.set_reg(a.window, *n, v).map_err(|e| anyhow!("{e}"))?;
    }
    let job = Job { window: a.window, mpstart: a.mpstart, mplen: words.len(), cycle_budget: a.max_cycles };
    let (event, cycles, instructions) = match m.run(&job) {
        Ok(o) => ("finished".to_string(), o.cycles, Some(o.instructions)),
        Err(ModelError::IllegalOpcode { cycles, .. }) => ("illegal".into(), cycles, None),
        Err(ModelError::BranchOutOfProgram { cycles, .. }) => ("finished".into(), cycles, None),
        Err(ModelError::CycleBudgetExceeded { cycles, .. }) => ("timeout".into(), cycles, None),
        Err(e) => bail!("{e}"),
    };
    let regs = (0..32).map(|r| m.reg(a.window, r).map_err(|e| anyhow!("{e}"))).collect::<Result<_>>()?;
    Ok(Outcome { event, cycles, instructions, regs })
}

fn run_rtl(a: &EngineRunArgs, isa: Isa, words: &[u32]) -> Result<Outcome> {
    if a.window >= engine25519_core::isa::WINDOWS || a.mpstart + words.len() > engine25519_core::isa::UCODE_WORDS {
        bail!("window {} / program at {} of {} words does not fit the engine", a.window, a.mpstart, words.len());
    }
    let regs: serde_json::Map<String, Value> = a
        .regs
        .iter()
        .map(|(n, v)| (n.to_string(), json!(v.iter().map(|b| format!("{b:02x}")).collect::<String>())))
        .collect();
    let job = json!({"isa": isa.name(), "words": words, "window": a.window, "mpstart": a.mpstart, "regs": regs, "max_cycles": a.max_cycles});
    let dir = util::target_dir().join("gateware");
    std::fs::create_dir_all(&dir)?;
    let jf = dir.join(format!("engine-run-{}.json", std::process::id()));
    std::fs::write(&jf, job.to_string())?;
    let py = gateware::python()?;
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "engine.run"]).stdin(std::fs::File::open(&jf)?);
    let out = supervisor::run_capture(&mut cmd, Duration::from_secs(600), "engine.run (Verilator)");
    std::fs::remove_file(&jf).ok();
    let out = out?;
    let v: Value = serde_json::from_str(out.trim()).context("engine.run output")?;
    let regs = v["regs"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| engine25519_core::vectors::parse32(h.as_str().unwrap_or("")).map_err(|e| anyhow!("{e}")))
                .collect::<Result<Vec<_>>>()
        })
        .transpose()?
        .unwrap_or_default();
    Ok(Outcome {
        event: v["event"].as_str().unwrap_or("?").to_string(),
        cycles: v["cycles"].as_u64().unwrap_or(0),
        instructions: v["instructions"].as_u64(),
        regs,
    })
}

pub fn run(a: EngineRunArgs) -> Result<()> {
    let isa = Isa::from_name(&a.isa).ok_or_else(|| anyhow!("unknown ISA {:?} (v1, v2)", a.isa))?;
    if a.window >= engine25519_core::isa::WINDOWS {
        bail!("--window {} out of range (0..{})", a.window, engine25519_core::isa::WINDOWS);
    }
    let words = load_program(&a, isa)?;
    let o = match a.backend {
        Backend::Model => run_model(&a, isa, &words)?,
        Backend::Rtl => run_rtl(&a, isa, &words)?,
    };
    let ins = o.instructions.map(|n| format!(", {n} instructions")).unwrap_or_default();
    let backend = match a.backend {
        Backend::Model => "model",
        Backend::Rtl => "rtl",
    };
    println!("{backend} {}: {} after {} cycles{ins}", isa.name(), o.event, o.cycles);
    for r in destinations(isa, &words) {
        if let Some(v) = o.regs.get(r) {
            let be: String = v.iter().rev().map(|b| format!("{b:02x}")).collect();
            println!("%{r:<2} = 0x{be}");
        }
    }
    if o.event == "timeout" {
        bail!("the program ran past --max-cycles {}", a.max_cycles);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reg_arguments() {
        let (n, v) = parse_reg("31=0x1").unwrap();
        assert_eq!(n, 31);
        assert_eq!(v[0], 1);
        assert_eq!(parse_reg("%2=ff00").unwrap().1[1], 0xff);
        for bad in ["", "3", "=1", "x=1", "32=1", "3=", "3=0x", "3=xyz", &format!("3={}", "f".repeat(65)), "-1=1"] {
            assert!(parse_reg(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn model_run_and_malformed_programs() {
        let d = std::env::temp_dir().join(format!("engine-run-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let s = d.join("p.s");
        std::fs::write(&s, "add %3, %1, %2\nfin\n").unwrap();
        let args = |p: &PathBuf, isa: &str| EngineRunArgs {
            program: p.clone(),
            isa: isa.into(),
            backend: Backend::Model,
            regs: vec![parse_reg("1=5").unwrap(), parse_reg("2=7").unwrap()],
            window: 0,
            mpstart: 0,
            max_cycles: 1000,
        };
        let a = args(&s, "v1");
        let isa = Isa::V1;
        let w = load_program(&a, isa).unwrap();
        let o = run_model(&a, isa, &w).unwrap();
        assert_eq!((o.event.as_str(), o.cycles, o.regs[3][0]), ("finished", 1 + 3 + 2, 12));
        assert_eq!(destinations(isa, &w), vec![3]);
        assert!(run(args(&s, "v9")).is_err());
        let bad = d.join("bad.s");
        std::fs::write(&bad, "add %3, %1\n").unwrap();
        assert!(run(args(&bad, "v1")).is_err());
        let hex = d.join("bad.hex");
        std::fs::write(&hex, "zzzz\n").unwrap();
        assert!(run(args(&hex, "v1")).is_err());
        let empty = d.join("empty.hex");
        std::fs::write(&empty, "").unwrap();
        assert!(run(args(&empty, "v1")).is_err());
        assert!(run(args(&d.join("missing.s"), "v1")).is_err());
        let mut far = args(&s, "v1");
        far.mpstart = 1023;
        assert!(run(far).is_err());
        std::fs::remove_dir_all(&d).ok();
    }
}
