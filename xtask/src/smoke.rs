//! `cargo xtask smoke`: the whole hosted system plus the scripted client
//! (apps/hosted-tests/src/bin/smoke.rs) and, at the same time, LOAD_CLIENTS engine25519 load
//! processes x LOAD_CALLS X25519 each (blocking and async, every result checked against
//! x25519-dalek in the client). When the scripted steps are done and every load process has
//! reported, xtask releases the client's shutdown gate and the client shuts the system down
//! through the kernel's Shutdown syscall.

use crate::hosted::{Launch};
use crate::util::shell_quote;
use crate::xous::Flavor;
use crate::ctx::Ctx;
use anyhow::{bail, Result};
use std::time::{Duration, Instant};

/// Concurrent engine25519 client processes in the smoke run, and X25519 calls each.
pub const LOAD_CLIENTS: usize = 8;
pub const LOAD_CALLS: u64 = 100;

pub fn smoke(ctx: &Ctx, limit: Duration) -> Result<()> {
    let bins = ctx.xous()?.clone();
    let gate = crate::util::root().join("target").join("tmp").join(format!("smoke-gate-{}", std::process::id()));
    std::fs::create_dir_all(gate.parent().unwrap())?;
    let _ = std::fs::remove_file(&gate);
    let mut launch = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    for p in ctx.server_programs()? {
        launch = launch.program(p);
    }
    let load = shell_quote(&ctx.program("engine-load")?);
    for i in 1..=LOAD_CLIENTS {
        launch = launch.program(format!("{load} --id {i} --calls {LOAD_CALLS}"));
    }
    launch = launch.program(format!("{} --shutdown-after {}", shell_quote(&ctx.program("smoke")?), shell_quote(&gate)));
    let deadline = Instant::now() + limit;
    let mut sys = launch.start()?;
    let mut current: Option<String> = None;
    let mut passed = 0;
    let mut failures: Vec<String> = Vec::new();
    let mut loads_seen = 0usize;
    let mut steps_done = false;
    // A panicking server leaves its caller blocked forever: after a panic line, give the
    // current step only a few more seconds.
    let mut deadline = deadline;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match sys.wait_line(left, "the smoke client and the engine load clients", |l| {
            l.contains("SMOKE-") || l.contains("ENGINE-LOAD") || l.contains("panicked at") || l.contains("Panic Details")
        }) {
            Ok(l) => l.text,
            Err(e) => {
                let tail = sys.tail(30);
                sys.stop();
                let step = if steps_done {
                    format!("engine load: {loads_seen} of {LOAD_CLIENTS} load clients reported")
                } else {
                    current.map(|s| format!("step {s:?} did not finish")).unwrap_or_else(|| "the smoke client never started a step".into())
                };
                bail!("smoke: {step}: {e}\n--- last output ---\n{tail}");
            }
        };
        let rest = |m: &str| line.split_once(m).map(|x| x.1.trim().to_string()).unwrap_or_default();
        if line.contains("ENGINE-LOAD") && !line.contains("panicked") {
            loads_seen += 1;
            let m = rest("ENGINE-LOAD");
            let field = |k: &str| m.split_whitespace().find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('='))).map(str::to_string);
            let ok = field("done").as_deref() == Some(&LOAD_CALLS.to_string()[..])
                && field("wrong").as_deref() == Some("0")
                && field("errors").as_deref() == Some("0");
            if ok {
                passed += 1;
                eprintln!("smoke: PASS engine/load {m}");
            } else {
                eprintln!("smoke: FAIL engine/load {m}");
                failures.push(format!("engine/load {m}"));
            }
            if steps_done && loads_seen == LOAD_CLIENTS {
                break;
            }
            continue;
        }
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
            steps_done = true;
            if loads_seen == LOAD_CLIENTS {
                break;
            }
        }
    }
    // Everyone has reported: release the client's gate; it calls Shutdown.
    std::fs::write(&gate, b"go\n")?;
    // The client now calls Shutdown: the kernel must stop every process and exit 0.
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
    let exit = sys.wait_exit(left.min(Duration::from_secs(20)));
    let _ = std::fs::remove_file(&gate);
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
    // the chat, scripted (apps/chat, xtask/src/chat.rs)
    crate::chat::smoke(ctx)
}
