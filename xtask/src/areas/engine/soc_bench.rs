//! The SoC benchmark (docs/gateware.md "SoC benchmark"): the LiteX SoC of
//! gateware/soc (VexRiscv imac on litex_sim, the engine at the spec's addresses, CPU 100 MHz,
//! sequencer 50 MHz, multiplier 100 MHz) runs firmware/soc-bench, which times X25519 in
//! software and on the engine (v1, v2) in CPU cycles and prints one verdict line.
//!
//! * The Verilated SoC (built once per set of inputs) and the firmware runner are
//!   harness/soc.rs; several firmwares (the bad-input cases) reuse one build.
//! * `cargo xtask gateware soc-bench`, the test step `engine:soc-bench` and the bench provider
//!   `soc-bench` (soc_* keys).

use crate::build::gateware;
use crate::ctx::Ctx;
use crate::harness::soc::{build_firmware, build_soc, firmware_command, run_firmware_as, Soc, RUN_TIMEOUT};
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use crate::supervisor;
use crate::util;
use anyhow::{anyhow, bail, Result};
use std::path::Path;
use std::time::{Duration, Instant};
use verdict::Verdict;

/// The verdict subject the firmware reports under.
pub const SUBJECT: &str = "soc-bench";
pub fn test_steps() -> Vec<TestStep> {
    vec![step!("engine:soc-bench", 50 * 60, test)]
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "soc-bench", timeout: Duration::from_secs(50 * 60), run: |_| bench() }]
}

/// Run a firmware that reports under [`SUBJECT`] on the SoC simulator until its verdict
/// (`soc::run_firmware_as`).
pub fn run_firmware(soc: &Soc, elf: &Path, tag: &str, timeout: Duration, verbose: bool) -> Result<Verdict> {
    run_firmware_as(soc, elf, tag, SUBJECT, timeout, verbose)
}

/// The benchmark figures of a PASS verdict.
pub struct Figures {
    pub sw: u64,
    /// (ISA, end-to-end cycles, GO-to-finished cycles)
    pub engines: Vec<(String, u64, u64)>,
    /// (ISA, pauses granted in the pause/resume run, which gave the same result)
    pub pauses: Vec<(String, u64)>,
    pub cpu_hz: u64,
    pub eng_hz: u64,
    pub mul_hz: u64,
}

impl Figures {
    pub fn from_verdict(v: &Verdict, isas: &[String]) -> Result<Figures> {
        let n = |k: &str| v.num(k).ok_or_else(|| anyhow!("verdict lacks {k}: {v}"));
        let mut engines = Vec::new();
        let mut pauses = Vec::new();
        let sw = n("sw_cycles")?;
        for isa in isas {
            let total = n(&format!("engine_{isa}_cycles"))?;
            engines.push((isa.clone(), total, n(&format!("engine_{isa}_run_cycles"))?));
            pauses.push((isa.clone(), n(&format!("engine_{isa}_pauses"))?));
            // the speed-up the firmware prints (what a user reads on a board's UART) is its own
            // cycle counts' ratio
            let printed = n(&format!("engine_{isa}_speedup_x10"))?;
            let want = (sw * 10 + total / 2) / total.max(1);
            if printed != want {
                bail!("firmware prints a speed-up of {printed}/10 for engine {isa}, its cycle counts give {want}/10 ({sw} / {total}): {v}");
            }
        }
        Ok(Figures { sw, engines, pauses, cpu_hz: n("cpu_hz")?, eng_hz: n("eng_hz")?, mul_hz: n("mul_hz")? })
    }

    pub fn results(&self) -> BenchResults {
        let mut r = BenchResults::new();
        r.insert("soc_sw_x25519_cycles".into(), self.sw as f64);
        for (isa, total, _) in &self.engines {
            r.insert(format!("soc_engine_{isa}_x25519_cycles"), *total as f64);
            r.insert(format!("soc_speedup_{isa}"), (self.sw as f64 / *total as f64 * 10.0).round() / 10.0);
        }
        r
    }

    pub fn table(&self) -> String {
        let mhz = |h: u64| h as f64 / 1e6;
        let mut s = format!(
            "SoC benchmark: X25519 (RFC 7748 vector 1) on litex_sim, VexRiscv imac; clocks as on Precursor: CPU {} MHz, \
             engine sequencer {} MHz (eng_clk = CPU / {}), multiplier {} MHz (mul_clk = CPU clock)\n",
            mhz(self.cpu_hz),
            mhz(self.eng_hz),
            self.cpu_hz / self.eng_hz.max(1),
            mhz(self.mul_hz)
        );
        s += &format!("{:<40} {:>12} {:>14} {:>8}\n", "", "CPU cycles", "GO->finished", "speedup");
        s += &format!("{:<40} {:>12} {:>14} {:>8}\n", "software (x25519-dalek)", self.sw, "-", "1.0");
        for (isa, total, run) in &self.engines {
            s += &format!(
                "{:<40} {:>12} {:>14} {:>8.1}\n",
                format!("engine {isa} (microcode + operands loaded)"),
                total,
                run,
                self.sw as f64 / *total as f64
            );
        }
        let p: Vec<String> = self.pauses.iter().map(|(isa, n)| format!("{isa} {n} pauses")).collect();
        s += &format!("pause/resume at MPRESUME (as the hw backend slices jobs), same result: {}\n", p.join(", "));
        s
    }
}

/// Build everything, run the benchmark firmware, return its figures.
pub fn bench_run(verbose: bool, timeout: Duration) -> Result<(Soc, Figures)> {
    let soc = build_soc(verbose)?;
    let elf = build_firmware(&soc, &[], verbose)?;
    let t0 = Instant::now();
    let v = run_firmware(&soc, &elf, "bench", timeout, verbose)?;
    let f = Figures::from_verdict(&v, &soc.isas())?;
    eprintln!("xtask: SoC run {:.1} s wall", t0.elapsed().as_secs_f64());
    check_clocks(&soc, &f)?;
    Ok((soc, f))
}

/// The firmware's clocks are the SoC's (soc.json, from the spec).
fn check_clocks(soc: &Soc, f: &Figures) -> Result<()> {
    let want = (soc.hz("sys")?, soc.hz("eng")?, soc.hz("mul")?);
    if (f.cpu_hz, f.eng_hz, f.mul_hz) != want {
        bail!("firmware reports clocks {:?}, the SoC has {want:?}", (f.cpu_hz, f.eng_hz, f.mul_hz));
    }
    Ok(())
}

fn bench() -> Result<BenchResults> {
    let (_, f) = bench_run(false, RUN_TIMEOUT)?;
    eprint!("{}", f.table());
    Ok(f.results())
}

/// `cargo xtask gateware soc-bench`.
pub fn cli(ctx: &Ctx, timeout_s: u64, json: Option<&Path>) -> Result<()> {
    let (_, f) = bench_run(ctx.verbose, Duration::from_secs(timeout_s))?;
    print!("{}", f.table());
    if let Some(p) = json {
        std::fs::write(p, serde_json::to_string_pretty(&f.results())? + "\n")?;
    }
    Ok(())
}

/// Test step: the region map equals the spec and the adapter crosses clocks exactly (pytest),
/// the benchmark passes with every engine result equal to software and RFC 7748, and the
/// harness fails a firmware whose engine result is wrong and one that never prints a verdict.
fn test(ctx: &Ctx) -> Result<()> {
    let soc = build_soc(ctx.verbose)?;
    gateware::pytest(ctx.verbose, &["soc/tests"], &[], &[("SOC_BUILD_DIR", &soc.dir)], Duration::from_secs(10 * 60))?;

    let elf = build_firmware(&soc, &[], ctx.verbose)?;
    let v = run_firmware(&soc, &elf, "test", RUN_TIMEOUT, ctx.verbose)?;
    let f = Figures::from_verdict(&v, &soc.isas())?;
    check_clocks(&soc, &f)?;
    if f.engines.len() != soc.isas().len() || f.engines.is_empty() {
        bail!("verdict has {} engine figures, the SoC {} engines", f.engines.len(), soc.isas().len());
    }
    eprint!("{}", f.table());

    // bad inputs: the harness must fail them, within their timeouts
    let bad = build_firmware(&soc, &["fault-engine-result"], ctx.verbose)?;
    match run_firmware(&soc, &bad, "fault-engine-result", RUN_TIMEOUT, ctx.verbose) {
        Ok(v) => bail!("a firmware with a corrupted engine result passed: {v}"),
        Err(e) if format!("{e:#}").contains("differs from software") => {
            eprintln!("xtask: corrupted engine result rejected (firmware verdict FAIL)")
        }
        Err(e) => bail!("corrupted engine result: the run failed, but not on the result: {e:#}"),
    }
    // a SoC map whose engine is not at the spec's address: the firmware build refuses it
    let moved = util::target_dir().join("gateware").join("soc-moved-map");
    std::fs::create_dir_all(&moved)?;
    std::fs::copy(soc.dir.join("soc.json"), moved.join("soc.json"))?;
    let csv = std::fs::read_to_string(soc.dir.join("csr.csv"))?;
    let bad_csv: String =
        csv.lines()
            .map(|l| {
                if l.starts_with("memory_region,engine_csr,") {
                    l.replacen("0xf002", "0xf003", 1)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
    if bad_csv == csv.trim_end() {
        bail!("csr.csv has no engine_csr region line to move");
    }
    std::fs::write(moved.join("csr.csv"), bad_csv + "\n")?;
    let moved_soc = Soc { dir: moved.clone(), meta: soc.meta.clone() };
    let log_path = moved.join("build.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = firmware_command(&moved_soc, &[], false);
    cmd.stdout(log.try_clone()?).stderr(log);
    let mut child = supervisor::spawn_grouped(&mut cmd)?;
    let st = supervisor::wait_timeout(&mut child, Duration::from_secs(20 * 60), "firmware build for a moved engine")?;
    let out = std::fs::read_to_string(&log_path).unwrap_or_default();
    if st.success() || !out.contains("spec csr.base") {
        bail!(
            "the firmware build did not refuse a SoC whose engine CSR block is off the spec's address ({st}):\n{out}"
        );
    }
    eprintln!("xtask: firmware build refused a SoC map with the engine off the spec's address");

    let silent = build_firmware(&soc, &["fault-no-verdict"], ctx.verbose)?;
    let limit = Duration::from_secs(20);
    let t0 = Instant::now();
    match run_firmware(&soc, &silent, "fault-no-verdict", limit, ctx.verbose) {
        Ok(v) => bail!("a firmware that prints no verdict passed: {v}"),
        Err(e) if format!("{e:#}").contains("no verdict within") && t0.elapsed() < limit + Duration::from_secs(15) => {
            eprintln!("xtask: silent firmware failed after {:.0} s (no verdict)", t0.elapsed().as_secs_f64())
        }
        Err(e) => bail!("silent firmware: unexpected failure: {e:#}"),
    }

    // the board build's first half (`cargo xtask gateware bitstream` runs the rest in the bench):
    // the ULX3S SoC elaborates and the same firmware builds against its map (no sim_finish,
    // one engine build), and an unknown board is refused
    let dir = util::target_dir().join("gateware").join("board-ulx3s-check");
    let (_, fw) = super::fpga::board_firmware("ulx3s", &dir, ctx.verbose)?;
    eprintln!(
        "xtask: ULX3S board SoC elaborated, firmware built against its map ({} bytes)",
        std::fs::metadata(&fw)?.len()
    );
    match super::fpga::board_firmware("no-such-board", &dir, ctx.verbose) {
        Ok(_) => bail!("an unknown board was accepted"),
        Err(e) if format!("{e:#}").contains("unknown board") => {}
        Err(e) => bail!("unknown board: unexpected failure: {e:#}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_a_verdict_and_missing_keys() {
        let v = Verdict::parse(
            "VERDICT soc-bench PASS sw_cycles=7000000 engine_v1_cycles=230000 engine_v1_run_cycles=228000 engine_v1_pauses=9 \
             engine_v1_speedup_x10=304 engine_v2_cycles=46000 engine_v2_run_cycles=44000 engine_v2_pauses=8 \
             engine_v2_speedup_x10=1522 cpu_hz=100000000 eng_hz=50000000 mul_hz=100000000",
        )
        .unwrap()
        .unwrap();
        let isas = vec!["v1".to_string(), "v2".to_string()];
        let f = Figures::from_verdict(&v, &isas).unwrap();
        let r = f.results();
        assert_eq!(r["soc_sw_x25519_cycles"], 7_000_000.0);
        assert_eq!(r["soc_engine_v2_x25519_cycles"], 46_000.0);
        assert_eq!(r["soc_speedup_v1"], 30.4);
        assert_eq!(r["soc_speedup_v2"], 152.2);
        assert!(f.table().contains("mul_clk = CPU clock"));
        assert!(f.table().contains("v2 8 pauses"));
        let short = Verdict::parse("VERDICT soc-bench PASS sw_cycles=1 cpu_hz=1 eng_hz=1 mul_hz=1").unwrap().unwrap();
        assert!(Figures::from_verdict(&short, &isas).is_err());
        // a printed speed-up that is not the printed cycle counts' ratio
        let wrong = Verdict::parse(
            "VERDICT soc-bench PASS sw_cycles=7000000 engine_v2_cycles=46000 engine_v2_run_cycles=44000 engine_v2_pauses=8 \
             engine_v2_speedup_x10=1530 cpu_hz=1 eng_hz=1 mul_hz=1",
        )
        .unwrap()
        .unwrap();
        let e = Figures::from_verdict(&wrong, &["v2".to_string()]).err().expect("a wrong speed-up must fail");
        assert!(format!("{e:#}").contains("speed-up of 1530/10"), "{e:#}");
    }
}
