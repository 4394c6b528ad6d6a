//! Steps `sim:*` and the commands `sim-run`, `sim-smoke`, `sim-layout` and `sim-profile`: the
//! simulated Precursor (docs/sim.md; LiteX + VexRiscv (MMU) on Verilator with Precursor's
//! memory map and CSR blocks, gateware/precursor/, driven by harness/precursor.rs).
//!
//! * step `sim:soc`: the SoC's map against Precursor's SVD, and a bare-metal self-test
//!   (UARTs, the TRNG's kernel port, ticktimer rate, an interrupt in supervisor mode, sv32
//!   paging, a user ecall);
//! * `cargo xtask sim-run`: the device kernel and services (boot files from `sim-layout`) on
//!   it, their UART and log lines on the terminal; `--rom/--ram` runs any program instead;
//! * `cargo xtask sim-smoke`: the same boot plus the device test client and its probe
//!   (`areas::selftest::sim_extras`, passed in by main.rs), judged phase by phase, until the
//!   system powers itself off (docs/sim.md); step `sim:fail-closed` shows sysctl's fail-closed
//!   power-off;
//! * layout.rs: `sim-layout`, steps `sim:layout` and `sim:boot-probe`; selftest.rs: step
//!   `sim:selftest` and bench provider `sim-selftest`; profile.rs: `sim-profile`;
//! * crypto.rs: `sim-crypto` and bench provider `device-crypto` (the chat's cryptography per
//!   operation on the device);
//! * `cargo xtask sim-screenshot`: the last run's screen (the memory LCD's panel) as a PNG;
//!   screen.rs: step `sim:screen` and `sim-screen` (a Xous program draws, the host reads it back);
//! * bench provider `sim-boot`: sim_boot_cycles, sim_boot_to_services_s.

pub mod crypto;
pub mod layout;
pub mod profile;
pub mod screen;
pub mod selftest;

use crate::build::gateware;
use crate::build::power::Extra;
use crate::ctx::Ctx;
use crate::harness::precursor::{
    boot_phases, parse_phase, python, report, run_to_end, runner, smoke_run, smoke_run_with, Phase, RunOptions,
    FAIL_CRASH, FAIL_VERDICT,
};
use crate::steps::{step, TestStep};
use crate::supervisor;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("sim:soc", 25 * 60, soc_test), step!("sim:fail-closed", 60 * 60, fail_closed_step)]
}

/// pytest gateware/precursor/tests: the map against Precursor's SVD, the self-test program.
fn soc_test(ctx: &Ctx) -> Result<()> {
    let (_, mut env) = python()?;
    env.push(("PRECURSOR_SVD", crate::build::device_xous::precursor_svd()?));
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    gateware::pytest(ctx.verbose, &["precursor/tests"], &[], &env, Duration::from_secs(25 * 60))
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

#[derive(Args, Debug)]
pub struct SimScreenshotArgs {
    /// The panel log (default: the last simulated run's, target/sim/memlcd.log).
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// The PNG to write (default target/sim/screenshot.png).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The screen as it was at this cycle (default: after the last line the display received).
    #[arg(long)]
    pub at: Option<u64>,
    /// Pixels per LCD pixel (1..8).
    #[arg(long, default_value_t = 1)]
    pub scale: u32,
}

/// `cargo xtask sim-screenshot`: the simulated Precursor's screen (the memory LCD's panel,
/// rebuilt from the lines its memlcd block sent; gateware/precursor/memlcd.py) as a PNG.
pub fn screenshot(a: SimScreenshotArgs) -> Result<()> {
    let log = a.log.unwrap_or_else(crate::harness::precursor::memlcd_log);
    if !log.is_file() {
        bail!(
            "sim-screenshot: {}: no panel log (run the simulated Precursor first: cargo xtask sim-run / sim-smoke)",
            log.display()
        );
    }
    let out = a.out.unwrap_or_else(|| crate::build::sim_layout::sim_dir().join("screenshot.png"));
    let (py, _) = python()?;
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "precursor.memlcd"]).arg(&log).arg("--png").arg(&out).args(["--scale", &a.scale.to_string()]);
    if let Some(c) = a.at {
        cmd.args(["--at", &c.to_string()]);
    }
    supervisor::run(&mut cmd, Duration::from_secs(120), "precursor.memlcd")?;
    println!("{}", out.display());
    Ok(())
}

/// The device boot files (ram.bin, rom.bin) from `sim-layout`.
fn boot_files(verbose: bool) -> Result<(PathBuf, PathBuf)> {
    let dir = crate::build::sim_layout::sim_dir();
    crate::build::sim_layout::build(&dir, &[], &[], verbose).context("the boot files (cargo xtask sim-layout)")?;
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
    match &a.until {
        Some(u) => {
            cmd.args(["--until", u]);
        }
        // the device image runs until the system powers itself off (or the time limit)
        None if a.rom.is_none() => {
            cmd.args(["--end", "powerdown"]);
        }
        None => {}
    }
    run_to_end(&mut cmd, a.timeout)
}

#[derive(Args, Debug)]
pub struct SimSmokeArgs {
    /// Overall wall-clock limit of the simulation in seconds.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
    /// A further device program laid out after the image's (PID 9, ...), e.g. a test client
    /// (repeatable; the command adds the self-test client and its probe). An ordinary app: it may not
    /// power the device off.
    #[arg(long)]
    pub extra: Vec<PathBuf>,
    /// A further phase, NAME=REGEX: an output line matching REGEX (Python `re`; the runner
    /// refuses one that does not compile) shows it was reached (repeatable; judged like the
    /// boot phases, before the shutdown).
    #[arg(long = "phase", value_parser = parse_phase)]
    pub phases: Vec<Phase>,
    /// Stop after the boot phases (every service registered) instead of waiting for the system
    /// to power itself off.
    #[arg(long)]
    pub boot_only: bool,
}

/// `cargo xtask sim-smoke`: boot the device image on the simulated Precursor and pass only if
/// every phase's line appears (the services registered through xous-names, then the extra
/// programs' phases), nothing failed, and the system powered itself off, within the time limit.
/// `extras` gives the device-built programs laid out after the image's and the phases their
/// output proves (the device self-test client: `areas::selftest::sim_extras`).
pub fn smoke(a: SimSmokeArgs, verbose: bool, extras: fn(bool) -> Result<(Vec<Extra>, Vec<Phase>)>) -> Result<()> {
    let (mut extra, extra_phases) = extras(verbose)?;
    extra.extend(a.extra.iter().cloned().map(Extra::app));
    let mut phases = boot_phases();
    phases.extend(extra_phases);
    phases.extend(a.phases.iter().cloned());
    let r = smoke_run(&extra, &phases, a.boot_only, a.timeout, verbose)?;
    report(&r);
    if !r.ok {
        let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
        bail!(
            "sim-smoke failed: end {}, phases not reached: [{}], {} failure line(s)",
            r.reason,
            missing.join(", "),
            r.failed_lines.len()
        );
    }
    Ok(())
}

/// Step `sim:fail-closed`: the device's fail-closed path. A second sysctl laid out after the
/// image finds a control slot taken, says `SYSCTL ERROR`, and powers the SoC off (xous-susres
/// `PowerOff`); every service still boots first.
fn fail_closed_step(ctx: &Ctx) -> Result<()> {
    let sysctl = crate::build::device_xous::our_programs()
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "sysctl"))
        .context("sysctl is not in the device image")?;
    let phases = [
        Phase::new("sysctl-refused", r"^SYSCTL ERROR .*slots are already taken"),
        Phase::new("sysctl-poweroff", r"^SYSCTL POWEROFF$"),
    ];
    let fail = [FAIL_VERDICT, FAIL_CRASH];
    // a second copy of the system process: the image builder lets it power off like the first
    let r = smoke_run_with(
        &[Extra::system(sysctl)],
        &phases,
        false,
        900,
        ctx.verbose,
        &RunOptions { fail_lines: Some(&fail), ..Default::default() },
    )?;
    report(&r);
    if !r.ok {
        bail!("a second sysctl did not make the system fail closed and power off: end {}", r.reason);
    }
    Ok(())
}

/// Bench provider `sim-boot`: sim_boot_cycles (the cycle at which the last service, sysctl,
/// reported READY) and sim_boot_to_services_s (wall seconds of simulation until then).
pub fn bench_providers() -> Vec<crate::steps::BenchProvider> {
    vec![crate::steps::BenchProvider { name: "sim-boot", timeout: Duration::from_secs(40 * 60), run: bench_boot }]
}

fn bench_boot(ctx: &Ctx) -> Result<crate::steps::BenchResults> {
    let phases = boot_phases();
    let r = smoke_run(&[], &phases, true, 900, ctx.verbose)?;
    report(&r);
    let last = &phases.last().unwrap().name;
    let (c, w) =
        r.phase(last).filter(|_| r.ok).with_context(|| format!("the boot did not reach {last}: end {}", r.reason))?;
    let mut out = crate::steps::BenchResults::new();
    out.insert("sim_boot_cycles".into(), c as f64);
    out.insert("sim_boot_to_services_s".into(), w);
    Ok(out)
}
