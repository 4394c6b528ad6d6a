//! The SoC benchmark (issue 10 item 4; docs/gateware.md "SoC benchmark"): the LiteX SoC of
//! gateware/soc (VexRiscv imac on litex_sim, the engine at the spec's addresses, CPU 100 MHz,
//! sequencer 50 MHz, multiplier 100 MHz) runs firmware/soc-bench, which times X25519 in
//! software and on the engine (v1, v2) in CPU cycles and prints one verdict line.
//!
//! * The Verilated SoC is cached under target/gateware/soc/<hash of its inputs>: the Python
//!   gateware, the spec files, the pinned requirements and the Verilator version. Unchanged
//!   inputs never rebuild it.
//! * A firmware runs by writing its image into a private copy of the ROM init file (a run
//!   directory next to the build), so several firmwares (the bad-input cases) reuse one build.
//! * `cargo xtask gateware soc-bench`, the test step `engine:soc-bench` and the bench provider
//!   `soc-bench` (soc_* keys).

use crate::ctx::Ctx;
use crate::steps::{BenchProvider, BenchResults, TestStep};
use crate::{gateware, setup, supervisor, util};
use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use verdict::{Status, Verdict};

/// Debian packages of the LiteX simulation (Verilator, its C++ build, the sim core's libraries)
/// and of the firmware image (objcopy).
pub const APT: &[&str] =
    &["verilator", "g++", "make", "libevent-dev", "libjson-c-dev", "zlib1g-dev", "binutils-riscv64-unknown-elf"];
/// The SoC's CPU target.
pub const FW_TARGET: &str = "riscv32imac-unknown-none-elf";
/// The verdict subject the firmware reports under.
pub const SUBJECT: &str = "soc-bench";
/// Wall-clock limit of one firmware run (~9 M simulated cycles at ~0.3-0.8 M cycles/s).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(240);

pub fn test_steps() -> Vec<TestStep> {
    vec![TestStep { name: "engine:soc-bench", timeout: Duration::from_secs(50 * 60), run: test }]
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "soc-bench", timeout: Duration::from_secs(50 * 60), run: |_| bench() }]
}

/// A built SoC simulator.
pub struct Soc {
    /// LiteX build directory (csr.csv, soc.json, gateware/).
    pub dir: PathBuf,
    pub meta: serde_json::Value,
}

impl Soc {
    fn gateware(&self) -> PathBuf {
        self.dir.join("gateware")
    }
    fn rom_words(&self) -> Result<usize> {
        let n = self.meta["rom_size"].as_u64().ok_or_else(|| anyhow!("soc.json: rom_size"))?;
        Ok(n as usize / 4)
    }
    fn hz(&self, domain: &str) -> Result<u64> {
        self.meta["clock_hz"][domain].as_u64().ok_or_else(|| anyhow!("soc.json: clock_hz.{domain}"))
    }
    pub fn isas(&self) -> Vec<String> {
        self.meta["isas"].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default()
    }
}

fn soc_root() -> PathBuf {
    util::target_dir().join("gateware").join("soc")
}

/// Every file the SoC build depends on: the gateware's Python (tests excluded), the spec files
/// and the pinned requirements.
fn inputs() -> Result<Vec<PathBuf>> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(d)?.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if p.is_dir() {
                if name != "tests" && name != "__pycache__" {
                    walk(&p, out)?;
                }
            } else if name.ends_with(".py") {
                out.push(p);
            }
        }
        Ok(())
    }
    let root = util::root();
    let mut v = Vec::new();
    walk(&root.join("gateware"), &mut v)?;
    for e in std::fs::read_dir(root.join("spec"))?.flatten() {
        if e.path().extension().is_some_and(|x| x == "toml") {
            v.push(e.path());
        }
    }
    v.push(root.join("tools").join("requirements.txt"));
    v.sort();
    Ok(v)
}

/// Hash of the build inputs (file names relative to the root, contents) and the Verilator
/// version.
fn input_hash() -> Result<String> {
    let root = util::root();
    let mut data = Vec::new();
    for p in inputs()? {
        data.extend_from_slice(p.strip_prefix(&root).unwrap_or(&p).to_string_lossy().as_bytes());
        data.push(0);
        data.extend_from_slice(&std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?);
        data.push(0);
    }
    let v = Command::new("verilator").arg("--version").output().context("verilator --version")?;
    data.extend_from_slice(&v.stdout);
    Ok(util::sha256_hex(&data)[..16].to_string())
}

/// Build the SoC simulator (or reuse the cached one).
pub fn build_soc(verbose: bool) -> Result<Soc> {
    setup::require_apt(APT)?;
    let py = gateware::python()?;
    let dir = soc_root().join(input_hash()?);
    let stamp = dir.join(".complete");
    if !stamp.is_file() {
        let root = soc_root();
        // older builds (other inputs) are dead weight: ~40 MB each
        if let Ok(rd) = std::fs::read_dir(&root) {
            for e in rd.flatten() {
                if e.path() != dir {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        eprintln!("xtask: building the SoC simulator (LiteX + Verilator, a few minutes) in {}", dir.display());
        let t0 = Instant::now();
        let mut cmd = gateware::py_command(&py);
        cmd.args(["-m", "soc.soc", "--out"]).arg(&dir);
        supervisor::run_quiet(&mut cmd, Duration::from_secs(40 * 60), "SoC build (python -m soc.soc)", verbose)?;
        std::fs::write(&stamp, format!("{:.1}\n", t0.elapsed().as_secs_f64()))?;
        eprintln!("xtask: SoC simulator built in {:.0} s", t0.elapsed().as_secs_f64());
    }
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("soc.json"))?).context("soc.json")?;
    Ok(Soc { dir, meta })
}

/// The rustup target of the firmware (installed when missing).
fn ensure_fw_target() -> Result<()> {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().context("rustc --print sysroot")?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(FW_TARGET).is_dir() {
        return Ok(());
    }
    supervisor::run(
        Command::new("rustup").args(["target", "add", FW_TARGET]),
        Duration::from_secs(600),
        &format!("rustup target add {FW_TARGET}"),
    )
}

fn fw_target_dir() -> PathBuf {
    util::target_dir().join("firmware").join("soc-bench")
}

/// The cargo command building firmware/soc-bench for `soc` with `features`.
fn firmware_command(soc: &Soc, features: &[&str], verbose: bool) -> Command {
    let mut cmd = util::cargo();
    cmd.current_dir(util::root().join("firmware").join("soc-bench"))
        .args(["build", "--release", "--locked", "--target", FW_TARGET])
        .env("SOC_DIR", &soc.dir)
        .env("CARGO_TARGET_DIR", fw_target_dir());
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    if !verbose {
        cmd.arg("--quiet");
    }
    cmd
}

/// Build firmware/soc-bench for `soc` with `features`; returns its ELF.
pub fn build_firmware(soc: &Soc, features: &[&str], verbose: bool) -> Result<PathBuf> {
    ensure_fw_target()?;
    let target_dir = fw_target_dir();
    let mut cmd = firmware_command(soc, features, verbose);
    supervisor::run(&mut cmd, Duration::from_secs(30 * 60), "firmware/soc-bench build")?;
    let elf = target_dir.join(FW_TARGET).join("release").join("soc-bench");
    // copy per feature set: the next build overwrites the binary
    let tag = if features.is_empty() { "default".to_string() } else { features.join("+") };
    let out = target_dir.join(format!("soc-bench-{tag}.elf"));
    std::fs::copy(&elf, &out).with_context(|| format!("copying {}", elf.display()))?;
    Ok(out)
}

/// The ROM init file (one 32-bit little-endian word per line, hex) of a firmware ELF.
fn rom_init(soc: &Soc, elf: &Path) -> Result<String> {
    let bin = elf.with_extension("bin");
    supervisor::run(
        Command::new("riscv64-unknown-elf-objcopy").args(["-O", "binary"]).arg(elf).arg(&bin),
        Duration::from_secs(60),
        "objcopy (firmware image)",
    )?;
    let mut bytes = std::fs::read(&bin)?;
    let words = soc.rom_words()?;
    if bytes.len() > 4 * words {
        bail!("firmware image is {} bytes, the SoC's ROM {} bytes", bytes.len(), 4 * words);
    }
    bytes.resize(4 * words, 0);
    let mut s = String::with_capacity(9 * words);
    for w in bytes.chunks(4) {
        s.push_str(&format!("{:08X}\n", u32::from_le_bytes([w[0], w[1], w[2], w[3]])));
    }
    Ok(s)
}

/// Run a firmware on the SoC simulator until its verdict (PASS: Ok; FAIL, no verdict, a
/// malformed verdict, or the timeout: Err). `tag` names the private run directory.
pub fn run_firmware(soc: &Soc, elf: &Path, tag: &str, timeout: Duration, verbose: bool) -> Result<Verdict> {
    run_firmware_as(soc, elf, tag, SUBJECT, timeout, verbose)
}

/// `run_firmware` for a firmware that reports under `subject` (the TRNG phase: soc-trng).
pub fn run_firmware_as(soc: &Soc, elf: &Path, tag: &str, subject: &str, timeout: Duration, verbose: bool) -> Result<Verdict> {
    let gw = soc.gateware();
    let rom_name = soc.meta["rom_init"].as_str().ok_or_else(|| anyhow!("soc.json: rom_init"))?;
    let run = soc_root().join(format!("run-{tag}"));
    if run.exists() {
        std::fs::remove_dir_all(&run)?;
    }
    std::fs::create_dir_all(&run)?;
    for e in std::fs::read_dir(&gw)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".init") || name == "sim_config.js" {
            std::fs::copy(e.path(), run.join(&name))?;
        }
    }
    std::os::unix::fs::symlink(gw.join("modules"), run.join("modules"))?;
    std::fs::write(run.join(rom_name), rom_init(soc, elf)?)?;

    let mut cmd = Command::new(gw.join("obj_dir").join("Vsim"));
    cmd.current_dir(&run).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = supervisor::spawn_grouped(&mut cmd)?;
    let pgid = child.id() as i32;
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let t0 = Instant::now();
    let mut tail: Vec<String> = Vec::new();
    let outcome = loop {
        let left = timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            break Err(anyhow!("{tag}: no verdict within {:?} (simulation killed)", timeout));
        }
        match rx.recv_timeout(left.min(Duration::from_millis(500))) {
            Ok(line) => {
                if verbose {
                    eprintln!("  | {line}");
                }
                tail.push(line.clone());
                if tail.len() > 20 {
                    tail.remove(0);
                }
                match Verdict::parse(&line) {
                    None => {}
                    Some(Err(e)) => break Err(anyhow!("{tag}: malformed verdict line {line:?}: {e}")),
                    Some(Ok(v)) if v.subject != subject => {
                        break Err(anyhow!("{tag}: verdict for {:?}, expected {subject}", v.subject))
                    }
                    Some(Ok(v)) => match v.status {
                        Status::Begin => {}
                        Status::Pass => break Ok(v),
                        Status::Fail => break Err(anyhow!("{tag}: firmware verdict FAIL: {v}")),
                    },
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Err(anyhow!("{tag}: the simulation ended without a verdict"));
            }
        }
    };
    // after a verdict the firmware ends the simulation itself (a short grace); otherwise, or if
    // it does not, the simulation is killed
    if tail.iter().any(|l| Verdict::parse(l).is_some_and(|v| v.is_ok_and(|v| v.status != Status::Begin))) {
        let _ = supervisor::wait_timeout(&mut child, Duration::from_secs(5), "SoC simulation exit");
    }
    supervisor::signal_group(pgid, libc::SIGKILL);
    let _ = child.wait();
    supervisor::reap_group(pgid);
    supervisor::unregister_group(pgid);
    outcome.map_err(|e| anyhow!("{e:#}\n  last output:\n    {}", tail.join("\n    ")))
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
        for isa in isas {
            engines.push((isa.clone(), n(&format!("engine_{isa}_cycles"))?, n(&format!("engine_{isa}_run_cycles"))?));
            pauses.push((isa.clone(), n(&format!("engine_{isa}_pauses"))?));
        }
        Ok(Figures { sw: n("sw_cycles")?, engines, pauses, cpu_hz: n("cpu_hz")?, eng_hz: n("eng_hz")?, mul_hz: n("mul_hz")? })
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
    gateware::pytest(ctx, &["soc/tests"], &[], &[("SOC_BUILD_DIR", &soc.dir)], Duration::from_secs(10 * 60))?;

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
    let bad_csv: String = csv
        .lines()
        .map(|l| if l.starts_with("memory_region,engine_csr,") { l.replacen("0xf002", "0xf003", 1) } else { l.to_string() })
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
        bail!("the firmware build did not refuse a SoC whose engine CSR block is off the spec's address ({st}):\n{out}");
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_a_verdict_and_missing_keys() {
        let v = Verdict::parse(
            "VERDICT soc-bench PASS sw_cycles=7000000 engine_v1_cycles=230000 engine_v1_run_cycles=228000 engine_v1_pauses=9 \
             engine_v2_cycles=46000 engine_v2_run_cycles=44000 engine_v2_pauses=8 cpu_hz=100000000 eng_hz=50000000 mul_hz=100000000",
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
    }

    #[test]
    fn inputs_cover_the_gateware_and_the_spec() {
        let v = inputs().unwrap();
        let root = util::root();
        for f in ["gateware/soc/soc.py", "gateware/engine/csr.py", "spec/engine25519.toml", "tools/requirements.txt"] {
            assert!(v.contains(&root.join(f)), "{f} missing from the SoC build inputs");
        }
        assert!(!v.iter().any(|p| p.components().any(|c| c.as_os_str() == "tests")), "tests are not build inputs");
    }
}
