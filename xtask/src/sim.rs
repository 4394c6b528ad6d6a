//! The simulated Precursor (docs/sim.md): LiteX + VexRiscv (MMU) on Verilator with Precursor's
//! memory map and CSR blocks (gateware/precursor/).
//!
//! * step `sim:soc`: the SoC's map against Precursor's SVD, and a bare-metal self-test
//!   (UARTs, the TRNG's kernel port, ticktimer rate, an interrupt in supervisor mode, sv32
//!   paging, a user ecall);
//! * `cargo xtask sim-run`: the device kernel and services (boot files from `sim-layout`) on
//!   it, their UART and log lines on the terminal; `--rom/--ram` runs any program instead;
//! * `cargo xtask sim-smoke`: the same boot plus the programs of `smoke_extras` (the device test
//!   client), judged phase by phase, until the system powers itself off (docs/sim.md); the
//!   step `sim:selftest` (selftest.rs) runs it; step `sim:fail-closed` shows sysctl's
//!   fail-closed power-off;
//! * bench provider `sim-boot`: sim_boot_cycles, sim_boot_to_services_s.

use crate::ctx::Ctx;
use crate::device_image::Extra;
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
    vec![
        TestStep { name: "sim:soc", timeout: Duration::from_secs(25 * 60), run: soc_test },
        TestStep { name: "sim:fail-closed", timeout: Duration::from_secs(60 * 60), run: fail_closed_step },
    ]
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
pub fn runner(rom: &Path, ram: &Path, timeout: u64) -> Result<Command> {
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
    // the runner enforces the wall limit itself; this one only catches a hung build
    supervisor::run(&mut cmd, Duration::from_secs(a.timeout + 20 * 60), "the simulated Precursor")
}

#[derive(Args, Debug)]
pub struct SimSmokeArgs {
    /// Overall wall-clock limit of the simulation in seconds.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
    /// A further device program laid out after the image's (PID 9, ...), e.g. a test client
    /// (repeatable; the step adds the ones `smoke_extras` names). An ordinary app: it may not
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

/// One sim-smoke phase: its name and the regex of the output line that shows it was reached.
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: String,
    pub line: String,
}

impl Phase {
    pub fn new(name: &str, line: &str) -> Phase {
        Phase { name: name.into(), line: line.into() }
    }
}

fn parse_phase(s: &str) -> Result<Phase, String> {
    let (name, re) = s.split_once('=').ok_or_else(|| format!("--phase {s:?}: expected NAME=REGEX"))?;
    if name.is_empty() || re.is_empty() {
        return Err(format!("--phase {s:?}: expected NAME=REGEX, both non-empty"));
    }
    Ok(Phase::new(name, re))
}

/// The boot of the device image: one line per service, each printed once the service has
/// registered its names with xous-names or started its server (sysctl looks every control
/// server up there before it says READY, so READY is the last of them).
pub fn boot_phases() -> Vec<Phase> {
    vec![
        Phase::new("kernel", r"^KMAIN \(clean boot\): Supervisor mode started"),
        Phase::new("log", r"^LOG: Server listening on address"),
        Phase::new("names", r"xous_names: started"),
        Phase::new("susres", r"xous_susres: my PID is"),
        Phase::new("ticktimer", r"xous_ticktimer: Server started with SID"),
        Phase::new("engine25519", r"engine25519: registered '"),
        Phase::new("trng", r"^TRNG-SERVER ready"),
        Phase::new("sysctl", r"^SYSCTL READY claimed="),
    ]
}

/// The name of the last phase: the system powered the SoC off itself (susres POWERDOWN ends
/// the simulation, docs/sim.md), after every other phase.
pub const SHUTDOWN: &str = "shutdown";

/// Lines that fail a run wherever they appear.
pub const FAIL_LINES: &[&str] = &[r"VERDICT \S+ FAIL", r"PROGRAM HALT|PANIC|panicked at|CPU Exception|ERROR"];

/// The hook for programs beyond the device image: the device-built programs sim-smoke (and
/// the step `sim:selftest`) lays out after the image's, and the phases their output proves
/// (judged after the boot phases, before the shutdown). A test client goes here.
pub fn smoke_extras(verbose: bool) -> Result<(Vec<Extra>, Vec<Phase>)> {
    crate::selftest::sim_extras(verbose)
}

/// When each phase was reached: simulated cycle and wall seconds since the simulator started.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub name: String,
    pub at: Option<(u64, f64)>,
}

#[derive(Debug)]
pub struct SmokeResult {
    pub phases: Vec<PhaseResult>,
    /// How the run ended: powerdown | until | finish | timeout | exited (precursor.run).
    pub reason: String,
    pub cycles: Option<u64>,
    pub wall_s: f64,
    pub failed_lines: Vec<String>,
    /// The runner's verdict: every phase reached, the expected end, no failure line.
    pub ok: bool,
}

impl SmokeResult {
    pub fn phase(&self, name: &str) -> Option<(u64, f64)> {
        self.phases.iter().find(|p| p.name == name).and_then(|p| p.at)
    }
}

/// Boot the device image (plus `extra` programs) on the simulated Precursor and judge
/// `phases` from its output. `boot_only`: end at the last phase's line; otherwise the run
/// must end by the system powering itself off (phase `shutdown`). `timeout`: wall seconds of
/// simulation (a hung system fails here).
pub fn smoke_run(extra: &[Extra], phases: &[Phase], boot_only: bool, timeout: u64, verbose: bool) -> Result<SmokeResult> {
    smoke_run_with(extra, phases, boot_only, timeout, verbose, FAIL_LINES, None)
}

/// PC samples of a run (`cargo xtask sim-profile`): written to `file`, one every `period` cycles.
#[derive(Clone, Debug)]
pub struct ProfileReq {
    pub file: PathBuf,
    pub period: u32,
}

/// `smoke_run` with other failure lines (a run that must show an error line) and, optionally,
/// the CPU sampled into a profile.
pub fn smoke_run_with(extra: &[Extra], phases: &[Phase], boot_only: bool, timeout: u64, verbose: bool, fail_lines: &[&str], profile: Option<&ProfileReq>) -> Result<SmokeResult> {
    let dir = crate::sim_layout::sim_dir().join("smoke");
    crate::sim_layout::build(&dir, extra, verbose).context("the boot files (cargo xtask sim-layout)")?;
    let json = dir.join("smoke.json");
    let _ = std::fs::remove_file(&json);
    let mut cmd = runner(&dir.join("rom.bin"), &dir.join("ram.bin"), timeout)?;
    for p in phases {
        cmd.args(["--expect", &p.line]);
    }
    if boot_only {
        let last = phases.last().context("no phases")?;
        cmd.args(["--until", &last.line]);
    } else {
        cmd.args(["--end", "powerdown"]);
    }
    for f in fail_lines {
        cmd.args(["--fail", f]);
    }
    cmd.arg("--json").arg(&json);
    if let Some(p) = profile {
        cmd.arg("--profile").arg(&p.file).args(["--profile-period", &p.period.to_string()]);
    }
    // the runner enforces the wall limit itself; this one only catches a hung build
    let r = supervisor::run(&mut cmd, Duration::from_secs(timeout + 20 * 60), "the simulated Precursor");
    let text = std::fs::read_to_string(&json).with_context(|| format!("the runner wrote no summary ({}): {r:?}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| json.display().to_string())?;
    let at = |m: &serde_json::Value| -> Option<(u64, f64)> { Some((m.get("cycle")?.as_u64()?, m.get("wall_s")?.as_f64()?)) };
    let mut out: Vec<PhaseResult> = phases.iter().map(|p| PhaseResult { name: p.name.clone(), at: at(&v["expect"][&p.line]) }).collect();
    let reason = v["reason"].as_str().unwrap_or("?").to_string();
    let cycles = v["cycles"].as_u64();
    let wall_s = v["wall_s"].as_f64().unwrap_or(0.0);
    if !boot_only {
        out.push(PhaseResult { name: SHUTDOWN.into(), at: (reason == "powerdown").then(|| (cycles.unwrap_or(0), wall_s)) });
    }
    let failed_lines = v["failed"].as_array().map(|a| a.iter().filter_map(|l| l.as_str().map(String::from)).collect()).unwrap_or_default();
    let ok = v["ok"].as_bool() == Some(true) && r.is_ok() && out.iter().all(|p| p.at.is_some());
    Ok(SmokeResult { phases: out, reason, cycles, wall_s, failed_lines, ok })
}

/// One line per phase: simulated cycles (device time at the declared 100 MHz) and wall
/// seconds since the simulator started.
pub fn report(r: &SmokeResult) {
    eprintln!("sim-smoke phases (cycles, device time at 100 MHz, wall time of the simulation):");
    for p in &r.phases {
        match p.at {
            Some((c, w)) => eprintln!("  {:<14} PASS {c:>12} cycles {:>10.3} ms {w:>8.1} s", p.name, c as f64 / 1e5),
            None => eprintln!("  {:<14} FAIL not reached", p.name),
        }
    }
    for l in &r.failed_lines {
        eprintln!("  failure line: {l}");
    }
    eprintln!(
        "  end: {} after {} cycles, {:.1} s of simulation ({:.2} M cycles/s)",
        r.reason,
        r.cycles.map(|c| c.to_string()).unwrap_or("?".into()),
        r.wall_s,
        r.cycles.unwrap_or(0) as f64 / r.wall_s.max(1e-9) / 1e6
    );
}

/// `cargo xtask sim-smoke`: boot the device image on the simulated Precursor and pass only if
/// every phase's line appears (the services registered through xous-names, then the extra
/// programs' phases), nothing failed, and the system powered itself off, within the time limit.
pub fn smoke(a: SimSmokeArgs, verbose: bool) -> Result<()> {
    let (mut extra, extra_phases) = smoke_extras(verbose)?;
    extra.extend(a.extra.iter().cloned().map(Extra::app));
    let mut phases = boot_phases();
    phases.extend(extra_phases);
    phases.extend(a.phases.iter().cloned());
    let r = smoke_run(&extra, &phases, a.boot_only, a.timeout, verbose)?;
    report(&r);
    if !r.ok {
        let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
        bail!("sim-smoke failed: end {}, phases not reached: [{}], {} failure line(s)", r.reason, missing.join(", "), r.failed_lines.len());
    }
    Ok(())
}

/// Step `sim:fail-closed`: the device's fail-closed path. A second sysctl laid out after the
/// image finds a control slot taken, says `SYSCTL ERROR`, and powers the SoC off (xous-susres
/// `PowerOff`); every service still boots first.
fn fail_closed_step(ctx: &Ctx) -> Result<()> {
    let sysctl = crate::device_xous::our_programs().into_iter().find(|p| p.file_name().is_some_and(|n| n == "sysctl")).context("sysctl is not in the device image")?;
    let phases = [Phase::new("sysctl-refused", r"^SYSCTL ERROR .*slots are already taken"), Phase::new("sysctl-poweroff", r"^SYSCTL POWEROFF$")];
    let fail: Vec<&str> = [FAIL_LINES[0], r"PROGRAM HALT|PANIC|panicked at|CPU Exception"].into();
    // a second copy of the system process: the image builder lets it power off like the first
    let r = smoke_run_with(&[Extra::system(sysctl)], &phases, false, 900, ctx.verbose, &fail, None)?;
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
    let (c, w) = r.phase(last).filter(|_| r.ok).with_context(|| format!("the boot did not reach {last}: end {}", r.reason))?;
    let mut out = crate::steps::BenchResults::new();
    out.insert("sim_boot_cycles".into(), c as f64);
    out.insert("sim_boot_to_services_s".into(), w);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_flags_parse_and_bad_ones_are_refused() {
        let p = parse_phase("x25519=^VERDICT selftest/x25519 PASS").unwrap();
        assert_eq!((p.name.as_str(), p.line.as_str()), ("x25519", "^VERDICT selftest/x25519 PASS"));
        for bad in ["x25519", "=re", "name="] {
            assert!(parse_phase(bad).is_err(), "{bad:?} accepted");
        }
    }
}
