//! `cargo xtask smoke`: the whole hosted system plus the scripted client
//! (apps/hosted-tests/src/bin/smoke.rs), shut down through the kernel's Shutdown syscall.

use crate::hosted::{shell_quote, Launch};
use crate::xous::Flavor;
use crate::Ctx;
use anyhow::{bail, Result};
use std::time::{Duration, Instant};

pub fn smoke(ctx: &Ctx, limit: Duration) -> Result<()> {
    let bins = ctx.xous()?.clone();
    let mut launch = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    for p in ctx.server_programs()? {
        launch = launch.program(p);
    }
    launch = launch.program(shell_quote(&ctx.program("smoke")?));
    let deadline = Instant::now() + limit;
    let mut sys = launch.start()?;
    let mut current: Option<String> = None;
    let mut passed = 0;
    let mut failures: Vec<String> = Vec::new();
    // A panicking server leaves its caller blocked forever: after a panic line, give the
    // current step only a few more seconds.
    let mut deadline = deadline;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match sys.wait_line(left, "the smoke client", |l| {
            l.contains("SMOKE-") || l.contains("panicked at") || l.contains("Panic Details")
        }) {
            Ok(l) => l.text,
            Err(e) => {
                let tail = sys.tail(30);
                sys.stop();
                let step = current.map(|s| format!("step {s:?} did not finish")).unwrap_or_else(|| "the smoke client never started a step".into());
                bail!("smoke: {step}: {e}\n--- last output ---\n{tail}");
            }
        };
        let rest = |m: &str| line.split_once(m).map(|x| x.1.trim().to_string()).unwrap_or_default();
        if !line.contains("SMOKE-") {
            eprintln!("smoke: panic in the hosted system: {line}");
            deadline = deadline.min(Instant::now() + Duration::from_secs(5));
            continue;
        }
        if line.contains("SMOKE-BEGIN") {
            current = Some(rest("SMOKE-BEGIN"));
        } else if line.contains("SMOKE-PASS") {
            passed += 1;
            eprintln!("smoke: PASS {}", rest("SMOKE-PASS"));
            current = None;
        } else if line.contains("SMOKE-FAIL") {
            let f = rest("SMOKE-FAIL");
            eprintln!("smoke: FAIL {f}");
            failures.push(f);
            current = None;
        } else if line.contains("SMOKE-DONE") {
            break;
        }
    }
    // The client now calls Shutdown: the kernel must stop every process and exit 0.
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
    let exit = sys.wait_exit(left.min(Duration::from_secs(20)));
    let lines = sys.lines();
    let panics: Vec<&String> = lines.iter().filter(|l| l.contains("panicked at") || l.contains("Panic Details")).collect();
    let lingering: Vec<&String> = lines.iter().filter(|l| l.contains("did not exit within")).collect();
    let mut problems = Vec::new();
    match &exit {
        Ok(st) if st.success() => {}
        Ok(st) => problems.push(format!("kernel exited with {st} after Shutdown")),
        Err(e) => problems.push(format!("shutdown: {e:#}")),
    }
    if exit.is_ok() && !lines.iter().any(|l| l.contains("KERNEL: shutdown complete")) {
        problems.push("kernel exited without completing the Shutdown sequence".into());
    }
    for l in lingering {
        problems.push(format!("process did not stop on Shutdown: {l}"));
    }
    for p in &panics {
        problems.push(format!("panic in the hosted system: {p}"));
    }
    for f in &failures {
        problems.push(format!("step failed: {f}"));
    }
    if !problems.is_empty() {
        let tail = sys.tail(30);
        bail!("smoke: {} step(s) passed, problems:\n  {}\n--- last output ---\n{tail}", passed, problems.join("\n  "));
    }
    eprintln!("smoke: all {passed} steps passed; system shut down cleanly, no process left");
    Ok(())
}
