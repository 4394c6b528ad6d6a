//! The chat's cryptography timed on the simulated Precursor, one operation at a time
//! (apps/device-crypto, docs/chat.md "On the device").
//!
//! The device image boots with the program at PID 9 (allowed to power the SoC off, like the
//! self-test client); for each operation it prints `CRYPTO-BENCH-START op=<name> n=<n>`, runs
//! the operation n times, prints `CRYPTO-BENCH-END ...`, then checks the results (its
//! verdict). The simulator stamps every line with the CPU cycle at which it was written, so an
//! operation's device time is (end - start) / n cycles, at the SoC's declared 100 MHz.
//!
//! * `cargo xtask sim-crypto [--isa v1|v2]`: one run, the table printed;
//! * bench provider `device-crypto`: a run on the v1 SoC (Precursor's engine) and one on the
//!   v2 SoC. Keys `device_crypto_<op>_cycles` and `_us` for the operations that use no engine
//!   (from the v1 run; the v2 run must agree within 2 %: the same code on the same CPU), and
//!   `device_crypto_<op>_<isa>_cycles` / `_us` for those whose X25519 go to the engine.

use crate::build::power::Extra;
use crate::ctx::Ctx;
use crate::harness::precursor::{self, Phase, RunOptions};
use crate::steps::{BenchProvider, BenchResults};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::time::Duration;

/// The package and its binary.
pub const PACKAGE: &str = "device-crypto";
/// The operations the program times, with their run counts, in its order (apps/device-crypto
/// `OPS`: a name or count that differs there leaves a phase unmatched, which fails the run
/// instead of skewing a figure).
pub const OPS: &[(&str, u64)] = &[
    ("x25519_engine", 20),
    ("x25519_software", 2),
    ("xeddsa_sign", 2),
    ("xeddsa_verify", 2),
    ("hkdf_root_step", 50),
    ("hmac_chain_step", 50),
    ("message_encrypt", 20),
    ("message_decrypt", 20),
    ("x3dh_initiate_engine", 2),
    ("ratchet_step_engine", 4),
    ("ratchet_step_software", 1),
];
/// Wall-clock limit of one simulated run.
const SIM_TIMEOUT_S: u64 = 3000;

#[derive(Args, Debug)]
pub struct SimCryptoArgs {
    /// The engine the SoC is built with (v1: Precursor's; v2).
    #[arg(long, default_value = "v1", value_parser = ["v1", "v2"])]
    pub isa: String,
}

/// The phases of one run: each operation's start, end and PASS, then the program's PASS.
pub fn phases() -> Vec<Phase> {
    let mut v = Vec::new();
    for (op, n) in OPS {
        v.push(Phase::new(&format!("{op}:start"), &format!(r"^CRYPTO-BENCH-START op={op} n={n}$")));
        v.push(Phase::new(&format!("{op}:end"), &format!(r"^CRYPTO-BENCH-END op={op} n={n}$")));
        v.push(Phase::new(op, &format!(r"^VERDICT crypto/{op} PASS")));
    }
    v.push(Phase::new(PACKAGE, &format!(r"^VERDICT {PACKAGE} PASS")));
    v
}

/// Device cycles per run of each operation, from the stamped lines.
pub fn cycles_per_op(at: impl Fn(&str) -> Option<u64>) -> Result<Vec<(&'static str, f64)>> {
    let mut out = Vec::new();
    for (op, n) in OPS {
        let a = at(&format!("{op}:start")).with_context(|| format!("no start line of {op}"))?;
        let b = at(&format!("{op}:end")).with_context(|| format!("no end line of {op}"))?;
        if b <= a {
            bail!("{op}: end line at {b} cycles is not after its start line at {a}");
        }
        out.push((*op, (b - a) as f64 / *n as f64));
    }
    Ok(out)
}

/// Whether an operation's X25519 go to the engine (its figure depends on the SoC's engine).
fn uses_engine(op: &str) -> bool {
    op.ends_with("_engine")
}

/// One run on the SoC with the `isa` engine: the device image plus the program; every phase,
/// then its power-off. Returns cycles per run of each operation.
pub fn sim_run(verbose: bool, isa: &str) -> Result<Vec<(&'static str, f64)>> {
    crate::build::device::build_packages(&[PACKAGE.to_string()], &[])?;
    let elf = crate::util::target_dir().join(crate::build::target::TARGET).join("release").join(PACKAGE);
    let n = crate::build::device_xous::compressed_instructions(&elf)?;
    if n != 0 {
        bail!("{}: {n} compressed instructions (the simulated CPU has no C extension)", elf.display());
    }
    let mut all = precursor::boot_phases();
    all.extend(phases());
    let opts = RunOptions { engine_isa: Some(isa), ..Default::default() };
    let r = precursor::smoke_run_with(&[Extra::system(elf)], &all, false, SIM_TIMEOUT_S, verbose, &opts)?;
    precursor::report(&r);
    if !r.ok {
        let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
        bail!("device-crypto on the simulated Precursor ({isa} engine) failed: end {}, phases not reached: [{}], failure lines: {:?}", r.reason, missing.join(", "), r.failed_lines);
    }
    cycles_per_op(|name| r.phase(name).map(|(c, _)| c))
}

fn print_table(isa: &str, rows: &[(&str, f64)]) {
    eprintln!("device-crypto on the simulated Precursor ({isa} engine), per operation:");
    eprintln!("  {:<24} {:>14} {:>12}", "operation", "CPU cycles", "us @100MHz");
    for (op, c) in rows {
        eprintln!("  {op:<24} {c:>14.0} {:>12.1}", c / 100.0);
    }
}

/// `cargo xtask sim-crypto`.
pub fn main(a: SimCryptoArgs, verbose: bool) -> Result<()> {
    let rows = sim_run(verbose, &a.isa)?;
    print_table(&a.isa, &rows);
    Ok(())
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "device-crypto", timeout: Duration::from_secs(2 * SIM_TIMEOUT_S + 30 * 60), run: bench }]
}

fn bench(ctx: &Ctx) -> Result<BenchResults> {
    let v1 = sim_run(ctx.verbose, "v1")?;
    print_table("v1", &v1);
    let v2 = sim_run(ctx.verbose, "v2")?;
    print_table("v2", &v2);
    merge(&v1, &v2)
}

/// The bench keys from the two runs (see the module's documentation).
fn merge(v1: &[(&str, f64)], v2: &[(&str, f64)]) -> Result<BenchResults> {
    let mut out = BenchResults::new();
    for ((op, c1), (op2, c2)) in v1.iter().zip(v2) {
        if op != op2 {
            bail!("the runs list different operations ({op} / {op2})");
        }
        if uses_engine(op) {
            for (isa, c) in [("v1", c1), ("v2", c2)] {
                out.insert(format!("device_crypto_{op}_{isa}_cycles"), c.round());
                out.insert(format!("device_crypto_{op}_{isa}_us"), (c / 100.0 * 10.0).round() / 10.0);
            }
        } else {
            if (c1 - c2).abs() > 0.02 * c1 {
                bail!("{op} took {c1:.0} cycles on the v1 SoC and {c2:.0} on the v2 SoC: the same code on the same CPU should agree within 2 %");
            }
            out.insert(format!("device_crypto_{op}_cycles"), c1.round());
            out.insert(format!("device_crypto_{op}_us"), (c1 / 100.0 * 10.0).round() / 10.0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_come_from_the_stamped_lines_and_bad_ones_are_refused() {
        let at = |name: &str| -> Option<u64> {
            let i = OPS.iter().position(|(o, _)| name.starts_with(&format!("{o}:")))? as u64;
            Some(if name.ends_with(":start") { 1_000_000 * i } else { 1_000_000 * i + 40_000 })
        };
        let rows = cycles_per_op(at).unwrap();
        assert_eq!(rows[0], ("x25519_engine", 2_000.0));
        assert_eq!(rows[1], ("x25519_software", 20_000.0));
        assert!(cycles_per_op(|n| if n == "xeddsa_sign:end" { Some(0) } else { at(n) }).is_err());
        assert!(cycles_per_op(|n| if n == "hkdf_root_step:start" { None } else { at(n) }).is_err());
        let p = phases();
        assert_eq!(p.len(), 3 * OPS.len() + 1);
        assert_eq!(p[0].line, "^CRYPTO-BENCH-START op=x25519_engine n=20$");
    }

    #[test]
    fn keys_split_by_engine_and_the_cpu_figures_must_agree() {
        let v1 = vec![("x25519_engine", 270_000.0), ("x25519_software", 7_000_000.0)];
        let v2 = vec![("x25519_engine", 90_000.0), ("x25519_software", 7_010_000.0)];
        let k = merge(&v1, &v2).unwrap();
        assert_eq!(k["device_crypto_x25519_engine_v1_us"], 2_700.0);
        assert_eq!(k["device_crypto_x25519_engine_v2_cycles"], 90_000.0);
        assert_eq!(k["device_crypto_x25519_software_us"], 70_000.0);
        let bad = vec![("x25519_engine", 90_000.0), ("x25519_software", 8_000_000.0)];
        assert!(merge(&v1, &bad).is_err());
    }
}
