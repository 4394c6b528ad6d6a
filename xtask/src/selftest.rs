//! The device self-test client (apps/device-selftest, docs/selftest.md): one Xous program,
//! built for the host (hosted system, model backend) and for the device (riscv32imac-unknown-xous-elf,
//! run on the simulated Precursor by `cargo xtask sim-smoke`).
//!
//! * step `selftest:hosted`: the hosted system (our servers, sysctl) plus `device-selftest
//!   --shutdown`: every check must pass and the client's Shutdown must stop the kernel cleanly;
//!   then malformed options, each refused with a FAIL verdict naming the option;
//! * `device_elf()`: the device build of the client (cargo's cache, like our servers'), checked
//!   for compressed instructions (the simulated CPU has none).

use crate::ctx::Ctx;
use crate::hosted::{failed_verdicts, is_panic, Launch, Report};
use crate::steps::TestStep;
use crate::util::shell_quote;
use crate::xous::Flavor;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::time::Duration;

/// The package and its binary.
pub const PACKAGE: &str = "device-selftest";
/// The client's own verdict subject (its last line).
pub const PROGRAM: &str = "device-selftest";
/// Checks the client runs (docs/selftest.md); the hosted step wants a PASS for each.
pub const CHECKS: &[&str] = &[
    "selftest/control-refused",
    "selftest/engine-version",
    "selftest/x25519-rfc7748-0",
    "selftest/x25519-rfc7748-1",
    "selftest/x25519-rfc7748-2",
    "selftest/x25519-rfc7748-3",
    "selftest/x25519-rfc7748-4",
    "selftest/x25519-rfc7748-5",
    "selftest/x25519-exchange",
    "selftest/x25519-timing",
    "selftest/trng-words",
    "selftest/trng-fill",
    "selftest/trng-health",
    "selftest/kernel-trng",
];
/// Malformed options and the text the refusal must contain.
pub const BAD_OPTIONS: &[(&str, &str)] = &[
    ("--calls many", "--calls: 'many' is not a number"),
    ("--calls 0", "out of range"),
    ("--isa v9", "unknown ISA 'v9'"),
    ("--backend fpga", "unknown value 'fpga'"),
    ("--frobnicate", "--frobnicate"),
];

pub fn test_steps() -> Vec<TestStep> {
    vec![TestStep { name: "selftest:hosted", timeout: Duration::from_secs(300), run: hosted }]
}

/// The hosted run and the malformed-option runs.
fn hosted(ctx: &Ctx) -> Result<()> {
    let client = shell_quote(&ctx.program(PACKAGE)?);
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    for p in ctx.server_programs()? {
        l = l.program(p);
    }
    let mut sys = l.program(format!("{client} --shutdown")).start()?;
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
/// instructions. (Used by the simulated boot once it reaches the client: `sim-smoke`.)
#[allow(dead_code)]
pub fn device_elf(verbose: bool) -> Result<PathBuf> {
    let _ = verbose;
    crate::device::build_packages(&[PACKAGE.to_string()])?;
    let elf = crate::util::target_dir().join(crate::device::TARGET).join("release").join(PACKAGE);
    let n = crate::device_xous::compressed_instructions(&elf)?;
    if n != 0 {
        bail!("{}: {n} compressed instructions (the simulated CPU has no C extension)", elf.display());
    }
    Ok(elf)
}
