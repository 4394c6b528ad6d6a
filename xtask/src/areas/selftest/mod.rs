//! The device self-test client (apps/device-selftest, docs/selftest.md): one Xous program,
//! built for the host (hosted system, model backend) and for the device (riscv32imac-unknown-xous-elf,
//! run on the simulated Precursor by `cargo xtask sim-smoke`).
//!
//! * step `selftest:hosted`: the hosted system (our servers, sysctl) plus `device-selftest
//!   --shutdown`: every check must pass and the client's Shutdown must stop the kernel cleanly;
//!   then malformed options, each refused with a FAIL verdict naming the option;
//! * `device_elf_with()`: the device build of the client (cargo's cache, like our servers'), checked
//!   for compressed instructions (the simulated CPU has none);
//! * `sim_extras()`: the client and its phases for `cargo xtask sim-smoke` and the step
//!   `sim:selftest` (areas/sim/selftest.rs): one phase per check's PASS line, then the
//!   client's own PASS; the client (allowed to: `Extra::system`) then powers the SoC off through
//!   xous-susres (sim-smoke's last phase); beside it `power-probe`, an ordinary app, whose
//!   power-off, suspend and Shutdown must be refused (docs/security.md).

use crate::build::power::{Extra, PowerPids};
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{failed_verdicts, is_panic, Launch, Report};
use crate::harness::precursor::Phase;
use crate::steps::{step, TestStep};
use crate::util::shell_quote;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::time::Duration;

/// The client's plan (apps/device-selftest/src/plan.rs, the client's own module): the checks it
/// runs in order, the lines around its timed calls, its default calls and its refusals of
/// malformed options. Included as source, so the harness needs none of the client's
/// dependencies.
#[path = "../../../../apps/device-selftest/src/plan.rs"]
#[allow(dead_code)] // the whole plan; the harness needs most of it
mod plan;
pub use plan::{BAD_OPTIONS, CHECKS, DEVICE_CHECKS, PROGRAM};
use plan::{
    BATCH_END_MARKER, BATCH_ROUNDS, BATCH_SIZE, BATCH_START_MARKER, RESUMED_MARKER, SPIN_BUSY_END_MARKER,
    SPIN_BUSY_START_MARKER, SPIN_IDLE_END_MARKER, SPIN_IDLE_START_MARKER, SUSPEND_MARKER, TIMED_CHECK,
    TIMING_END_MARKER, TIMING_START_MARKER,
};

/// The package and its binary.
pub const PACKAGE: &str = "device-selftest";
/// Timed X25519 calls of the device client (its default; the phases below match `calls=` on
/// the client's lines, so a different count fails the run instead of skewing the figure).
pub const DEVICE_CALLS: u64 = plan::DEFAULT_CALLS;
/// Suspend/resume cycles of `selftest/suspend-resume` in the client's default build, and in its
/// build with [`LONG_SUSPEND_FEATURE`] (the bench's).
pub const SUSPEND_CYCLES: u32 = plan::SUSPEND_CYCLES_SHORT;
pub use plan::SUSPEND_CYCLES_LONG;
pub const LONG_SUSPEND_FEATURE: &str = "device-selftest/long-suspend";
pub fn test_steps() -> Vec<TestStep> {
    vec![step!("selftest:hosted", 300, hosted)]
}

/// The phases the client's output proves on the simulated device, in order.
pub fn sim_phases() -> Vec<Phase> {
    let mut v = Vec::new();
    for c in CHECKS {
        if *c == TIMED_CHECK {
            v.push(Phase::new(TIMING_START, &format!(r"^{TIMING_START_MARKER} calls={DEVICE_CALLS}$")));
            v.push(Phase::new(TIMING_END, &format!(r"^{TIMING_END_MARKER} calls={DEVICE_CALLS}$")));
            v.push(Phase::new(BATCH_START, &format!(r"^{BATCH_START_MARKER} jobs={BATCH_JOBS}$")));
            v.push(Phase::new(BATCH_END, &format!(r"^{BATCH_END_MARKER} jobs={BATCH_JOBS}$")));
            v.push(Phase::new(SPIN_IDLE_START, &format!(r"^{SPIN_IDLE_START_MARKER} spin=\d+$")));
            v.push(Phase::new(SPIN_IDLE_END, &format!(r"^{SPIN_IDLE_END_MARKER} spin=\d+$")));
            v.push(Phase::new(SPIN_BUSY_START, &format!(r"^{SPIN_BUSY_START_MARKER} spin=\d+$")));
            v.push(Phase::new(SPIN_BUSY_END, &format!(r"^{SPIN_BUSY_END_MARKER} spin=\d+$")));
        }
        v.push(Phase::new(c, &format!(r"^VERDICT {} PASS", regex_escape(c))));
        // the A/B build whose engine server polls (ENGINE25519_HW_WAIT=poll in the device
        // builds' environment, docs/selftest.md) has no interrupt to lose: the client skips
        // the lost-interrupt check
        if *c == TIMED_CHECK && std::env::var("ENGINE25519_HW_WAIT").as_deref() != Ok("poll") {
            for d in DEVICE_CHECKS {
                v.push(Phase::new(d, &format!(r"^VERDICT {} PASS", regex_escape(d))));
            }
        }
    }
    v.push(Phase::new(PROGRAM, &format!(r"^VERDICT {PROGRAM} PASS")));
    v
}
pub const TIMING_START: &str = "timing-start";
pub const TIMING_END: &str = "timing-end";
/// Around the batched calls after the timed ones (X25519Batch requests of BATCH_SIZE jobs).
pub const BATCH_START: &str = "batch-start";
pub const BATCH_END: &str = "batch-end";
/// X25519s between the two batch lines.
pub const BATCH_JOBS: u64 = BATCH_ROUNDS * BATCH_SIZE as u64;
/// The spinner's counts around the client's idle window and around its second run of the
/// timed calls (docs/selftest.md, "CPU left to other processes").
pub const SPIN_IDLE_START: &str = "spin-idle-start";
pub const SPIN_IDLE_END: &str = "spin-idle-end";
pub const SPIN_BUSY_START: &str = "spin-busy-start";
pub const SPIN_BUSY_END: &str = "spin-busy-end";
/// The low-priority process that counts loop iterations (apps/device-selftest/src/bin/spinner.rs).
pub const SPINNER: &str = "spinner";

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == ' ' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

/// The ordinary app that asks to stop the system and must be refused (docs/security.md).
pub const POWER_PROBE: &str = "power-probe";

/// The extras of `cargo xtask sim-smoke` and `sim:selftest`: the device client, this run's
/// harness (it powers the SoC off at the end: the image builder allows it), then
/// `power-probe`, an ordinary app, with their phases: the client's checks, susres's list of
/// allowed PIDs (the one the image was built with), and every power request of the probe
/// refused while the system keeps serving it.
pub fn sim_extras(verbose: bool) -> Result<(Vec<Extra>, Vec<Phase>)> {
    sim_extras_with(verbose, false)
}

/// [`sim_extras`], with the client's 20-suspend build (`long_suspend`: feature
/// [`LONG_SUSPEND_FEATURE`], which the run's image build must be given too).
pub fn sim_extras_with(verbose: bool, long_suspend: bool) -> Result<(Vec<Extra>, Vec<Phase>)> {
    let features: &[&str] = if long_suspend { &[LONG_SUSPEND_FEATURE] } else { &[] };
    let client = device_elf_with(verbose, features)?;
    let probe = client.with_file_name(POWER_PROBE);
    check_device_elf(&probe)?;
    let spinner = client.with_file_name(SPINNER);
    check_device_elf(&spinner)?;
    let extras = vec![Extra::system(client), Extra::app(probe), Extra::app(spinner)];
    let allowed = PowerPids::of_image(&extras).0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
    let mut phases = sim_phases();
    phases.extend([
        Phase::new("power-pids", &format!(r"xous_susres: power operations allowed to PID\(s\) \[{allowed}\]")),
        Phase::new("poweroff-refused", r"xous_susres: PowerOff refused to PID \d+: not a system process"),
        Phase::new("suspend-refused", r"xous_susres: SuspendRequest refused to PID \d+: not a system process"),
        Phase::new(
            "simfault-page-refused",
            &format!(
                r"KERNEL: MapMemory of {:08x} refused to PID \d+: not a system process",
                crate::build::device_xous::SYSTEM_PAGES[0]
            ),
        ),
        Phase::new(
            "simctl-page-refused",
            &format!(
                r"KERNEL: MapMemory of {:08x} refused to PID \d+: not a system process",
                crate::build::device_xous::SYSTEM_PAGES[1]
            ),
        ),
        Phase::new("shutdown-refused", r"KERNEL: Shutdown refused to PID \d+: not a system process"),
        Phase::new(POWER_PROBE, &format!(r"^VERDICT {POWER_PROBE} PASS")),
    ]);
    phases.extend(suspend_phases(if long_suspend { SUSPEND_CYCLES_LONG } else { SUSPEND_CYCLES }));
    Ok((extras, phases))
}

/// What a run of `selftest/suspend-resume` with `cycles` suspends shows besides the check's
/// PASS: the engine and TRNG servers registered with xous-susres, the start stub found the
/// clean-suspend marker and resumed the kernel (the loader's path), the engine server restored
/// the engine after a resume, the TRNG server programmed its page again (its configuration read
/// back as written) and serves, and the client's last cycle came back.
pub fn suspend_phases(cycles: u32) -> Vec<Phase> {
    vec![
        Phase::new("engine-susres", r"engine25519: registered with xous-susres"),
        Phase::new("trng-susres", r"trng: registered with xous-susres"),
        Phase::new(
            "trng-resumed",
            r"TRNG hw: resumed: registers programmed again \(AV_NIST read back 0x[0-9a-f]+, as written\), serving",
        ),
        Phase::new(SUSPEND_FIRST, &format!(r"^{SUSPEND_MARKER} 1$")),
        Phase::new("stub-resume", r"^STUB RESUME clean suspend marker found"),
        Phase::new("engine-resumed", r"engine25519: resumed \(clean Ok\(true\)\): engine restored \(Ok\)"),
        Phase::new(RESUMED_LAST, &format!(r"^{RESUMED_MARKER} {cycles}$")),
    ]
}
pub const SUSPEND_FIRST: &str = "suspend-first";
pub const RESUMED_LAST: &str = "resumed-last";

/// The hosted run and the malformed-option runs.
fn hosted(ctx: &Ctx) -> Result<()> {
    let client = shell_quote(&ctx.program(PACKAGE)?);
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    l = crate::system::add_servers(ctx, l)?;
    // the hosted engine server runs the model on ISA v2 (its default): the probe must find it;
    // the client is this run's harness: it ends the run through the kernel's Shutdown
    let mut sys = l.system_program(format!("{client} --isa v2 --shutdown")).start()?;
    let r = (|| -> Result<()> {
        let mut passed = Vec::new();
        loop {
            let v = match sys.next_report(Duration::from_secs(120), "the device-selftest verdicts", |_| false)? {
                Report::Verdict(v) => v,
                Report::Panic(l) => bail!("panic: {l}"),
                Report::Line(_) => continue,
            };
            if v.status == verdict::Status::Begin {
                continue;
            }
            eprintln!("selftest: {v}");
            if v.subject == PROGRAM {
                if !v.passed() {
                    bail!("{v}");
                }
                break;
            }
            if !v.passed() {
                bail!("{v}");
            }
            passed.push(v.subject);
        }
        for c in CHECKS {
            if !passed.iter().any(|p| p == c) {
                bail!("check {c} did not report PASS");
            }
        }
        let st = sys.wait_exit(Duration::from_secs(20))?;
        if !st.success() || !sys.lines().iter().any(|l| l.contains("KERNEL: shutdown complete")) {
            bail!("the kernel did not complete the client's Shutdown ({st})");
        }
        Ok(())
    })();
    let lines = sys.lines();
    let tail = sys.tail(30);
    sys.stop();
    if let Err(e) = r {
        bail!("selftest:hosted: {e}\nfailed: {:?}\n--- last output ---\n{tail}", failed_verdicts(&lines));
    }
    if let Some(p) = lines.iter().find(|l| is_panic(l)) {
        bail!("selftest:hosted: panic in the system: {p}");
    }
    bad_options(ctx, &client)
}

/// Every malformed option: the client refuses it with a FAIL verdict naming it (before it
/// connects to anything), exits, and the other processes keep running.
fn bad_options(ctx: &Ctx, client: &str) -> Result<()> {
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    for (opt, _) in BAD_OPTIONS {
        l = l.program(format!("{client} {opt}"));
    }
    let mut sys = l.start()?;
    let r = (|| -> Result<()> {
        let mut seen = Vec::new();
        while seen.len() < BAD_OPTIONS.len() {
            let v = sys.wait_verdict(Duration::from_secs(60), "the refusals of malformed options", |s| s == PROGRAM)?;
            if v.passed() || !v.detail.starts_with("options: ") {
                bail!("a malformed option was not refused: {v}");
            }
            seen.push(v.detail);
        }
        for (opt, why) in BAD_OPTIONS {
            if !seen.iter().any(|d| d.contains(why)) {
                bail!("'{opt}': no refusal saying '{why}' (got {seen:?})");
            }
            eprintln!("selftest: '{opt}' refused");
        }
        Ok(())
    })();
    let tail = sys.tail(20);
    sys.stop();
    r.map_err(|e| anyhow::anyhow!("selftest:hosted (malformed options): {e}\n--- last output ---\n{tail}"))
}

/// The device build of the client (cached by cargo in our target dir), without compressed
/// instructions. Built with every device program, as the image builds them: cargo unifies
/// features over the packages it is given (alone, the client gets trng-core without its
/// `pipeline` feature), so building it alone and then with the image rebuilt trng-core and
/// relinked the client (fat LTO) at each switch, several times per simulated self-test.
/// With cargo `features` for the device programs' build (the run's image build must be given the
/// same: one build of every program).
pub fn device_elf_with(verbose: bool, features: &[&str]) -> Result<PathBuf> {
    let _ = verbose;
    crate::build::device::build_all(features)?;
    let elf = crate::util::target_dir().join(crate::build::target::TARGET).join("release").join(PACKAGE);
    check_device_elf(&elf)?;
    Ok(elf)
}

/// A device ELF of this package (built by [`device_elf`]) without compressed instructions.
fn check_device_elf(elf: &std::path::Path) -> Result<()> {
    let n = crate::build::device_xous::compressed_instructions(elf)?;
    if n != 0 {
        bail!("{}: {n} compressed instructions (the simulated CPU has no C extension)", elf.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_phases_cover_every_check_in_order() {
        let p = sim_phases();
        for c in CHECKS {
            assert!(p.iter().any(|x| x.name == *c), "{c}");
        }
        assert_eq!(p.last().unwrap().name, PROGRAM);
        let i = |n: &str| p.iter().position(|x| x.name == n).unwrap();
        assert!(i(TIMING_START) < i(TIMING_END) && i(TIMING_END) < i("selftest/x25519-timing"));
        assert!(i(TIMING_END) < i(BATCH_START) && i(BATCH_START) < i(BATCH_END) && i(BATCH_END) < i(SPIN_IDLE_START));
        assert!(i(SPIN_IDLE_START) < i(SPIN_IDLE_END));
        assert!(
            i(SPIN_IDLE_END) < i(SPIN_BUSY_START)
                && i(SPIN_BUSY_START) < i(SPIN_BUSY_END)
                && i(SPIN_BUSY_END) < i("selftest/x25519-timing")
        );
        for d in DEVICE_CHECKS {
            assert!(i("selftest/x25519-timing") < i(d) && i(d) < i("selftest/trng-words"), "{d}");
        }
        assert_eq!(regex_escape("selftest/x25519-rfc7748-0"), "selftest/x25519\\-rfc7748\\-0");
    }
}
