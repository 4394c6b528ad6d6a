//! The LiteX SoC of gateware/soc on Verilator (litex_sim) and the runner of its firmware,
//! shared by the engine's SoC benchmark (areas/engine/soc_bench.rs) and the TRNG's SoC test
//! (areas/trng/soc.rs).
//!
//! * The Verilated SoC is cached under target/gateware/soc/<hash of its inputs>: the Python
//!   gateware, the spec files, the pinned requirements and the Verilator version. Unchanged
//!   inputs never rebuild it.
//! * A firmware runs by writing its image into a private copy of the ROM init file (a run
//!   directory next to the build), so several firmwares reuse one build; the simulator runs on
//!   the simulation driver (driver.rs) until the firmware's verdict line.

use super::driver::{Echo, Options, Sim, Stop};
use crate::build::gateware;
use crate::setup;
use crate::supervisor;
use crate::util;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use verdict::{Status, Verdict};

/// The SoC's CPU target.
pub const FW_TARGET: &str = "riscv32imac-unknown-none-elf";
/// Wall-clock limit of one firmware run (~9 M simulated cycles at ~0.3-0.8 M cycles/s).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(240);

/// A built SoC simulator.
pub struct Soc {
    /// LiteX build directory (csr.csv, soc.json, gateware/).
    pub dir: PathBuf,
    pub meta: serde_json::Value,
}

impl Soc {
    pub fn gateware(&self) -> PathBuf {
        self.dir.join("gateware")
    }
    pub fn rom_words(&self) -> Result<usize> {
        let n = self.meta["rom_size"].as_u64().ok_or_else(|| anyhow!("soc.json: rom_size"))?;
        Ok(n as usize / 4)
    }
    pub fn hz(&self, domain: &str) -> Result<u64> {
        self.meta["clock_hz"][domain].as_u64().ok_or_else(|| anyhow!("soc.json: clock_hz.{domain}"))
    }
    pub fn isas(&self) -> Vec<String> {
        self.meta["isas"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default()
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
    // the LiteX simulation (Verilator, its C++ build, the sim core's libraries) and the
    // firmware image (objcopy)
    setup::require_apt(&[setup::apt::GATEWARE, setup::apt::LITEX_SIM, setup::apt::RISCV_BINUTILS].concat())?;
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
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("soc.json"))?).context("soc.json")?;
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
pub fn firmware_command(soc: &Soc, features: &[&str], verbose: bool) -> Command {
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

/// Run a firmware on the SoC simulator until its verdict for `subject` (PASS: Ok; FAIL, no
/// verdict, a malformed verdict, another subject, or the timeout: Err). `tag` names the private
/// run directory.
pub fn run_firmware_as(
    soc: &Soc,
    elf: &Path,
    tag: &str,
    subject: &str,
    timeout: Duration,
    verbose: bool,
) -> Result<Verdict> {
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
    cmd.current_dir(&run).stderr(Stdio::null());
    let echo = if verbose { Echo::Stderr } else { Echo::Off };
    let mut sim = Sim::spawn(&mut cmd, tag, Options { echo, ..Options::default() })?;
    let decided = sim.wait_for(Instant::now() + timeout, |line| match Verdict::parse(line) {
        None => None,
        Some(Err(e)) => Some(Err(anyhow!("{tag}: malformed verdict line {line:?}: {e}"))),
        Some(Ok(v)) if v.subject != subject => {
            Some(Err(anyhow!("{tag}: verdict for {:?}, expected {subject}", v.subject)))
        }
        Some(Ok(v)) => match v.status {
            Status::Begin => None,
            Status::Pass => Some(Ok(v)),
            Status::Fail => Some(Err(anyhow!("{tag}: firmware verdict FAIL: {v}"))),
        },
    });
    let outcome = match decided {
        Ok(r) => r,
        Err(Stop::Timeout) => Err(anyhow!("{tag}: no verdict within {:?} (simulation killed)", timeout)),
        Err(Stop::Ended) => Err(anyhow!("{tag}: the simulation ended without a verdict")),
        Err(e @ Stop::Failed(_)) => Err(anyhow!("{tag}: {e}")),
    };
    // after a verdict the firmware ends the simulation itself (a short grace); otherwise, or if
    // it does not, the simulation is killed
    if sim.lines().iter().any(|l| Verdict::parse(l).is_some_and(|v| v.is_ok_and(|v| v.status != Status::Begin))) {
        let _ = sim.wait_exit(Duration::from_secs(5));
    }
    sim.stop(Duration::ZERO);
    outcome.map_err(|e| anyhow!("{e:#}\n  last output:\n{}", sim.tail()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
