//! The simulated Precursor (docs/sim.md): LiteX + VexRiscv (MMU) on Verilator with Precursor's
//! memory map and CSR blocks (gateware/precursor/).
//!
//! * step `sim:soc`: the SoC's map against Precursor's SVD, and a bare-metal self-test
//!   (UARTs, the TRNG's kernel port, ticktimer rate, an interrupt in supervisor mode, sv32
//!   paging, a user ecall);
//! * `cargo xtask sim-run`: the device kernel and services (boot files from `sim-layout`) on
//!   it, their UART and log lines on the terminal; `--rom/--ram` runs any program instead;
//! * `cargo xtask sim-smoke`: the same boot, judged phase by phase (docs/sim.md).

use crate::ctx::Ctx;
use crate::steps::TestStep;
use crate::{gateware, setup, supervisor};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Debian packages the simulator needs beyond the gateware flow's: LiteX's simulation harness
/// links libevent and json-c (and zlib); the test programs are assembled with GNU binutils.
pub const APT: &[&str] = &["libevent-dev", "libjson-c-dev", "zlib1g-dev", "binutils-riscv64-unknown-elf"];

pub fn test_steps() -> Vec<TestStep> {
    vec![TestStep { name: "sim:soc", timeout: Duration::from_secs(25 * 60), run: soc_test }]
}

/// The Python that runs gateware/precursor (venv with litex, apt packages installed) and the
/// environment the SoC build needs (the TRNG's health-test cutoffs come from trng-core).
fn python() -> Result<(PathBuf, Vec<(&'static str, PathBuf)>)> {
    setup::require_apt(APT)?;
    let py = gateware::python()?;
    let replay = crate::trng_gateware::health_replay()?;
    Ok((py, vec![("TRNG_HEALTH_REPLAY", replay)]))
}

/// pytest gateware/precursor/tests: the map against Precursor's SVD, the self-test program.
fn soc_test(ctx: &Ctx) -> Result<()> {
    let (_, mut env) = python()?;
    env.push(("PRECURSOR_SVD", crate::device_xous::precursor_svd()?));
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    gateware::pytest(ctx, &["precursor/tests"], &[], &env, Duration::from_secs(25 * 60))
}

#[derive(Args, Debug)]
pub struct SimRunArgs {
    /// ROM image (binary, loaded at 0x0: the reset vector). Default: the device boot files
    /// (`cargo xtask sim-layout`: start stub + the kernel, base services and our servers in RAM).
    #[arg(long, requires = "ram")]
    pub rom: Option<PathBuf>,
    /// RAM image (binary, loaded at 0x4000_0000).
    #[arg(long)]
    pub ram: Option<PathBuf>,
    /// Wall-clock limit in seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Stop when an output line matches this regex.
    #[arg(long)]
    pub until: Option<String>,
}

/// The runner command (gateware/precursor/run.py) for ROM and RAM images.
fn runner(rom: &Path, ram: &Path, timeout: u64) -> Result<Command> {
    for (p, what) in [(rom, "ROM"), (ram, "RAM")] {
        if !p.is_file() {
            bail!("sim: {what} image {}: no such file", p.display());
        }
    }
    let (py, env) = python()?;
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "precursor.run", "--timeout", &timeout.to_string(), "--rom"])
        .arg(std::fs::canonicalize(rom)?)
        .arg("--ram")
        .arg(std::fs::canonicalize(ram)?);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok(cmd)
}

/// The device boot files (ram.bin, rom.bin) from `sim-layout`.
fn boot_files(verbose: bool) -> Result<(PathBuf, PathBuf)> {
    let dir = crate::sim_layout::sim_dir();
    crate::sim_layout::build(&dir, &[], verbose).context("the boot files (cargo xtask sim-layout)")?;
    Ok((dir.join("rom.bin"), dir.join("ram.bin")))
}

/// `cargo xtask sim-run`: the simulated Precursor, its UART lines on the terminal.
pub fn run(a: SimRunArgs, verbose: bool) -> Result<()> {
    let (rom, ram) = match (&a.rom, &a.ram) {
        (Some(r), Some(m)) => (r.clone(), m.clone()),
        (None, None) => boot_files(verbose)?,
        _ => bail!("sim-run: give both --rom and --ram, or neither (the device boot files)"),
    };
    let mut cmd = runner(&rom, &ram, a.timeout)?;
    if let Some(u) = &a.until {
        cmd.args(["--until", u]);
    }
    // the runner enforces the wall limit itself; this one only catches a hung build
    supervisor::run(&mut cmd, Duration::from_secs(a.timeout + 20 * 60), "the simulated Precursor")
}

#[derive(Args, Debug)]
pub struct SimSmokeArgs {
    /// Overall wall-clock limit of the simulation in seconds.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
}

/// The boot phases sim-smoke waits for, in order: (name, regex on an output line).
pub const PHASES: &[(&str, &str)] = &[
    ("kernel", r"^KMAIN \(clean boot\): Supervisor mode started"),
    ("log", r"^LOG: Server listening on address"),
    ("names", r"xous_names: started"),
    ("ticktimer", r"xous_ticktimer: Server started with SID"),
    ("engine25519", r"engine25519: registered 'engine25519'"),
    ("trng", r"^TRNG-SERVER ready"),
    ("sysctl", r"^SYSCTL READY claimed="),
];

/// `cargo xtask sim-smoke`: boot the device image on the simulated Precursor and pass only if
/// every phase's line appears (the services registered through xous-names: sysctl looks every
/// control server up there before it says READY), nothing failed, within the time limit.
pub fn smoke(a: SimSmokeArgs, verbose: bool) -> Result<()> {
    let (rom, ram) = boot_files(verbose)?;
    let json = crate::sim_layout::sim_dir().join("smoke.json");
    let mut cmd = runner(&rom, &ram, a.timeout)?;
    for (_, re) in PHASES {
        cmd.args(["--expect", re]);
    }
    cmd.args(["--until", PHASES[PHASES.len() - 1].1, "--fail", r"VERDICT \S+ FAIL", "--fail", r"PROGRAM HALT|PANIC|ERROR", "--json"])
        .arg(&json);
    let r = supervisor::run(&mut cmd, Duration::from_secs(a.timeout + 20 * 60), "sim-smoke");
    report_phases(&json);
    r
}

/// One line per phase: simulated cycles (and device time at the declared 100 MHz) and wall
/// seconds at which its line appeared.
fn report_phases(json: &Path) {
    let Ok(text) = std::fs::read_to_string(json) else { return };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { return };
    eprintln!("sim-smoke phases (cycles at 100 MHz / wall):");
    for (name, re) in PHASES {
        match &v["expect"][*re] {
            serde_json::Value::Object(m) => {
                let c = m.get("cycle").and_then(|c| c.as_u64()).unwrap_or(0);
                let w = m.get("wall_s").and_then(|w| w.as_f64()).unwrap_or(0.0);
                eprintln!("  {name:<12} {c:>12} cycles  {:>9.3} ms device  {w:>8.1} s wall", c as f64 / 1e5);
            }
            _ => eprintln!("  {name:<12} not reached"),
        }
    }
    eprintln!(
        "  end: {} after {} cycles, {} s wall",
        v["reason"].as_str().unwrap_or("?"),
        v["cycles"].as_u64().map(|c| c.to_string()).unwrap_or("?".into()),
        v["wall_s"]
    );
}
