//! The simulated Precursor's driver (docs/sim.md): gateware/precursor/run.py boots ROM and RAM
//! images on LiteX + VexRiscv (MMU) on Verilator with Precursor's memory map, and judges the
//! run's output phase by phase; its summary JSON is read back into a [`SmokeResult`]. Used by
//! the steps and commands of areas/sim/ and by the TRNG's simulated tester. The process runs
//! on the simulation driver (driver.rs).

use super::driver::{Echo, Options, Sim};
use crate::build::gateware;
use crate::build::power::Extra;
use crate::setup;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The simulated SoC's CPU clock, Precursor's (docs/sim.md: 100,000 cycles per ticktimer
/// millisecond): device time is simulated cycles over this. The SoC declares it
/// (gateware/precursor/map.py `CLK_FREQ`); a unit test keeps the two equal.
pub const SIM_CLK_HZ: f64 = 100e6;

/// The Python that runs gateware/precursor (venv with litex, apt packages installed) and the
/// environment the SoC build needs (the TRNG's health-test cutoffs come from trng-core).
pub fn python() -> Result<(PathBuf, Vec<(&'static str, PathBuf)>)> {
    // LiteX's simulation harness; the test programs are assembled with GNU binutils
    setup::require_apt(&[setup::apt::LITEX_SIM, setup::apt::RISCV_BINUTILS].concat())?;
    let py = gateware::python()?;
    let replay = gateware::health_replay()?;
    Ok((py, vec![("TRNG_HEALTH_REPLAY", replay)]))
}

/// The runner command (gateware/precursor/run.py) for ROM and RAM images.
/// Where every run keeps what its memory LCD's panel received (the last run's screen;
/// run.py --memlcd, `cargo xtask sim-screenshot`).
pub fn memlcd_log() -> PathBuf {
    crate::build::sim_layout::sim_dir().join("memlcd.log")
}

pub fn runner(rom: &Path, ram: &Path, timeout: u64) -> Result<Command> {
    for (p, what) in [(rom, "ROM"), (ram, "RAM")] {
        if !p.is_file() {
            bail!("sim: {what} image {}: no such file", p.display());
        }
    }
    let (py, env) = python()?;
    let mut cmd = gateware::py_command(&py);
    let panel = memlcd_log();
    std::fs::create_dir_all(panel.parent().context("target/sim")?)?;
    cmd.args(["-m", "precursor.run", "--timeout", &timeout.to_string(), "--rom"])
        .arg(std::fs::canonicalize(rom)?)
        .arg("--ram")
        .arg(std::fs::canonicalize(ram)?)
        .arg("--memlcd")
        .arg(&panel);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok(cmd)
}

/// Run a runner command (with its flags) to its end, its UART lines on our stdout. The runner
/// enforces its own wall limit (`--timeout`, `sim_timeout` seconds); this one, 20 minutes
/// more, only catches a hung build of the simulator.
pub fn run_to_end(cmd: &mut Command, sim_timeout: u64) -> Result<()> {
    let mut sim = Sim::spawn(cmd, "the simulated Precursor", Options { echo: Echo::Stdout, ..Options::default() })?;
    let st = sim.wait_exit(Duration::from_secs(sim_timeout + 20 * 60))?;
    if !st.success() {
        bail!("the simulated Precursor: failed ({st})");
    }
    Ok(())
}

/// One line of the runner's output, `[<cycle> <uart>] text`: the simulated cycle at which the
/// line's first byte was written, and its text.
pub fn stamp(l: &str) -> Option<(u64, &str)> {
    let rest = l.strip_prefix('[')?;
    let (head, text) = rest.split_once("] ")?;
    let cycle = head.split_whitespace().next()?.parse().ok()?;
    Some((cycle, text))
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

/// `NAME=REGEX` (the `--phase` flag of `cargo xtask sim-smoke`).
pub fn parse_phase(s: &str) -> Result<Phase, String> {
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

/// A failed verdict (libs/verdict).
pub const FAIL_VERDICT: &str = r"VERDICT \S+ FAIL";
/// A crash: a halted program, a panic, a CPU exception.
pub const FAIL_CRASH: &str = r"PROGRAM HALT|PANIC|panicked at|CPU Exception";
/// Lines that fail a run wherever they appear: the above and any error line (a run that must
/// show an error line leaves that one out).
pub const FAIL_LINES: &[&str] = &[FAIL_VERDICT, FAIL_CRASH, "ERROR"];

/// When each phase was reached: simulated cycle and wall seconds since the simulator started.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub name: String,
    pub at: Option<(u64, f64)>,
    /// the output line that reached it
    pub line: Option<String>,
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
    /// The line that reached phase `name`.
    pub fn phase_line(&self, name: &str) -> Option<&str> {
        self.phases.iter().find(|p| p.name == name).and_then(|p| p.line.as_deref())
    }
}

/// Boot the device image (plus `extra` programs) on the simulated Precursor and judge
/// `phases` from its output. `boot_only`: end at the last phase's line; otherwise the run
/// must end by the system powering itself off (phase `shutdown`). `timeout`: wall seconds of
/// simulation (a hung system fails here).
pub fn smoke_run(
    extra: &[Extra],
    phases: &[Phase],
    boot_only: bool,
    timeout: u64,
    verbose: bool,
) -> Result<SmokeResult> {
    smoke_run_with(extra, phases, boot_only, timeout, verbose, &RunOptions::default())
}

/// PC samples of a run (`cargo xtask sim-profile`): written to `file`, one every `period` cycles.
#[derive(Clone, Debug)]
pub struct ProfileReq {
    pub file: PathBuf,
    pub period: u32,
}

/// The SoC's engine build: gateware/precursor reads it from this variable (default v1,
/// Precursor's engine); the Verilator build is cached per value.
pub const ENGINE_ISA_VAR: &str = "PRECURSOR_ENGINE_ISA";

/// What a run may set beyond the image, its phases and its time limit.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Lines that fail the run (default [`FAIL_LINES`]; a run that must show an error line
    /// gives others).
    pub fail_lines: Option<&'a [&'a str]>,
    /// The CPU sampled into a profile.
    pub profile: Option<&'a ProfileReq>,
    /// The engine on the SoC's bus (`v1`, `v2`; [`ENGINE_ISA_VAR`] for the runner).
    pub engine_isa: Option<&'a str>,
    /// The v1 engine as shipped, bus defects included ([`ENGINE_STOCK_VAR`] = 1).
    pub engine_stock: bool,
    /// Cargo features of the device programs (the image's and the extras', one build).
    pub features: &'a [&'a str],
    /// Typing on the debug UART (the keyboard block): once a line matches the regex, the text
    /// is typed (run.py `--type-after`, in order).
    pub type_after: &'a [(String, String)],
    /// Where to copy the keyboard's log (every byte it took, with its cycle; run.py `--keys-log`).
    pub keys_log: Option<&'a Path>,
    /// The boot files' directory (default target/sim/smoke) and the panel log (default
    /// [`memlcd_log`]): runs in parallel each need their own.
    pub dir: Option<&'a Path>,
    pub memlcd: Option<&'a Path>,
    /// `dir` already holds this run's boot files (laid out before; parallel runs must not lay
    /// out at the same time: they share the reference image).
    pub laid_out: bool,
}

/// The SoC's stock-faithful v1 engine build: gateware/precursor reads it from this variable.
pub const ENGINE_STOCK_VAR: &str = "PRECURSOR_ENGINE_STOCK";

/// `smoke_run` with [`RunOptions`].
pub fn smoke_run_with(
    extra: &[Extra],
    phases: &[Phase],
    boot_only: bool,
    timeout: u64,
    verbose: bool,
    opts: &RunOptions,
) -> Result<SmokeResult> {
    let dir = opts.dir.map(Path::to_path_buf).unwrap_or_else(|| crate::build::sim_layout::sim_dir().join("smoke"));
    if !opts.laid_out {
        crate::build::sim_layout::build(&dir, extra, opts.features, verbose)
            .context("the boot files (cargo xtask sim-layout)")?;
    }
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
    for f in opts.fail_lines.unwrap_or(FAIL_LINES) {
        cmd.args(["--fail", f]);
    }
    cmd.arg("--json").arg(&json);
    if let Some(isa) = opts.engine_isa {
        cmd.env(ENGINE_ISA_VAR, isa);
    }
    if opts.engine_stock {
        cmd.env(ENGINE_STOCK_VAR, "1");
    }
    if let Some(p) = opts.profile {
        cmd.arg("--profile").arg(&p.file).args(["--profile-period", &p.period.to_string()]);
    }
    for (rx, text) in opts.type_after {
        cmd.arg("--type-after").arg(rx).arg(text.escape_default().to_string());
    }
    if let Some(k) = opts.keys_log {
        cmd.arg("--keys-log").arg(k);
    }
    if let Some(m) = opts.memlcd {
        // after runner()'s own --memlcd: the last one counts
        cmd.arg("--memlcd").arg(m);
    }
    let r = run_to_end(&mut cmd, timeout);
    let text = std::fs::read_to_string(&json)
        .with_context(|| format!("the runner wrote no summary ({}): {r:?}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).with_context(|| json.display().to_string())?;
    let at =
        |m: &serde_json::Value| -> Option<(u64, f64)> { Some((m.get("cycle")?.as_u64()?, m.get("wall_s")?.as_f64()?)) };
    let mut out: Vec<PhaseResult> = phases
        .iter()
        .map(|p| PhaseResult {
            name: p.name.clone(),
            at: at(&v["expect"][&p.line]),
            line: v["expect"][&p.line]["line"].as_str().map(String::from),
        })
        .collect();
    let reason = v["reason"].as_str().unwrap_or("?").to_string();
    let cycles = v["cycles"].as_u64();
    let wall_s = v["wall_s"].as_f64().unwrap_or(0.0);
    if !boot_only {
        out.push(PhaseResult {
            name: SHUTDOWN.into(),
            at: (reason == "powerdown").then(|| (cycles.unwrap_or(0), wall_s)),
            line: None,
        });
    }
    let failed_lines = v["failed"]
        .as_array()
        .map(|a| a.iter().filter_map(|l| l.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let ok = v["ok"].as_bool() == Some(true) && r.is_ok() && out.iter().all(|p| p.at.is_some());
    Ok(SmokeResult { phases: out, reason, cycles, wall_s, failed_lines, ok })
}

/// One line per phase: simulated cycles (device time at the declared 100 MHz) and wall
/// seconds since the simulator started.
pub fn report(r: &SmokeResult) {
    eprintln!("sim-smoke phases (cycles, device time at 100 MHz, wall time of the simulation):");
    for p in &r.phases {
        match p.at {
            Some((c, w)) => {
                eprintln!("  {:<14} PASS {c:>12} cycles {:>10.3} ms {w:>8.1} s", p.name, c as f64 / SIM_CLK_HZ * 1e3)
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_the_socs() {
        let map = std::fs::read_to_string(crate::util::root().join("gateware/precursor/map.py")).unwrap();
        let line = map.lines().find(|l| l.starts_with("CLK_FREQ = ")).expect("CLK_FREQ in map.py");
        let hz: f64 = line["CLK_FREQ = ".len()..].split('#').next().unwrap().trim().replace('_', "").parse().unwrap();
        assert_eq!(hz, SIM_CLK_HZ, "map.py declares {hz} Hz");
    }

    #[test]
    fn failure_patterns_catch_verdicts_crashes_and_errors() {
        let all = super::super::driver::patterns(FAIL_LINES).unwrap();
        let hit = |rs: &[regex::Regex], l: &str| rs.iter().any(|r| r.is_match(l));
        for l in [
            "[ 12 console] VERDICT selftest/x FAIL why",
            "[ 9 uart] PROGRAM HALT",
            "thread 'main' panicked at x",
            "SYSCTL ERROR slots",
        ] {
            assert!(hit(&all, l), "{l}");
        }
        assert!(!hit(&all, "VERDICT selftest/x PASS"));
        let crash = super::super::driver::patterns(&[FAIL_VERDICT, FAIL_CRASH]).unwrap();
        assert!(!hit(&crash, "SYSCTL ERROR slots") && hit(&crash, "CPU Exception"));
    }

    #[test]
    fn output_lines_carry_the_cycle() {
        assert_eq!(
            stamp("[   10302359 console] TRNG-TESTER mailbox fill mode=2"),
            Some((10_302_359, "TRNG-TESTER mailbox fill mode=2"))
        );
        assert_eq!(stamp("no stamp"), None);
        assert_eq!(stamp("[x uart] text"), None);
    }

    #[test]
    fn phase_flags_parse_and_bad_ones_are_refused() {
        let p = parse_phase("x25519=^VERDICT selftest/x25519 PASS").unwrap();
        assert_eq!((p.name.as_str(), p.line.as_str()), ("x25519", "^VERDICT selftest/x25519 PASS"));
        for bad in ["x25519", "=re", "name="] {
            assert!(parse_phase(bad).is_err(), "{bad:?} accepted");
        }
    }
}
