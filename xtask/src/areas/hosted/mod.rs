//! Step `hosted:smoke` (`cargo xtask smoke`): the whole hosted system plus the scripted client
//! (apps/hosted-tests/src/bin/smoke.rs) and, at the same time, LOAD_CLIENTS engine25519 load
//! processes x LOAD_CALLS X25519 each (blocking and async, every result checked against
//! x25519-dalek in the client). When the scripted steps are done and every load process has
//! reported, xtask releases the client's shutdown gate and the client shuts the system down
//! through the kernel's Shutdown syscall. bench.rs: the providers `hosted-startup` and
//! `hosted-ipc`.

use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{is_panic, Launch, Report};
use crate::steps::{step, TestStep};
use crate::system::add_servers;
use crate::util::shell_quote;
use anyhow::{bail, Result};
use std::time::{Duration, Instant};
use verdict::Status;

pub mod bench;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("hosted:smoke", 5 * 60, |c| smoke(c, Duration::from_secs(120)))]
}

/// Concurrent engine25519 client processes in the smoke run, and X25519 calls each.
pub const LOAD_CLIENTS: usize = 8;
pub const LOAD_CALLS: u64 = 100;
/// Verdict subjects: the smoke client's own, and the load clients' (`engine-load/<id>`).
const SMOKE: &str = "smoke";
const LOAD: &str = "engine-load/";

pub fn smoke(ctx: &Ctx, limit: Duration) -> Result<()> {
    let bins = ctx.xous()?.clone();
    let gate = crate::util::root().join("target").join("tmp").join(format!("smoke-gate-{}", std::process::id()));
    std::fs::create_dir_all(gate.parent().unwrap())?;
    let _ = std::fs::remove_file(&gate);
    let mut launch = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    launch = add_servers(ctx, launch)?;
    let load = shell_quote(&ctx.program("engine-load")?);
    for i in 1..=LOAD_CLIENTS {
        launch = launch.program(format!("{load} --id {i} --calls {LOAD_CALLS}"));
    }
    // the smoke client is the run's harness: it ends the run through the kernel's Shutdown
    launch = launch.system_program(format!(
        "{} --shutdown-after {}",
        shell_quote(&ctx.program("smoke")?),
        shell_quote(&gate)
    ));
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
    while !steps_done || loads_seen < LOAD_CLIENTS {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = match sys.next_report(left, "the smoke client and the engine load clients", |_| false) {
            Ok(Report::Verdict(v)) => v,
            Ok(Report::Panic(l)) => {
                eprintln!("smoke: panic in the hosted system: {l}");
                deadline = deadline.min(Instant::now() + Duration::from_secs(5));
                continue;
            }
            Ok(Report::Line(_)) => continue,
            Err(e) => {
                let tail = sys.tail(30);
                sys.stop();
                let step = if steps_done {
                    format!("engine load: {loads_seen} of {LOAD_CLIENTS} load clients reported")
                } else {
                    current
                        .map(|s| format!("step {s:?} did not finish"))
                        .unwrap_or_else(|| "the smoke client never started a step".into())
                };
                bail!("smoke: {step}: {e}\n--- last output ---\n{tail}");
            }
        };
        if v.subject == SMOKE {
            // the smoke client's own verdict: every step has reported
            steps_done = true;
            if !v.passed() && failures.is_empty() {
                failures.push(v.to_string());
            }
            continue;
        }
        if v.subject.starts_with(LOAD) {
            loads_seen += 1;
        }
        match v.status {
            Status::Begin => current = Some(v.subject),
            Status::Pass => {
                passed += 1;
                eprintln!("smoke: {v}");
                current = None;
            }
            Status::Fail => {
                eprintln!("smoke: {v}");
                failures.push(v.to_string());
                current = None;
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
    let panics: Vec<&String> = lines.iter().filter(|l| is_panic(l)).collect();
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
    // the chat, scripted (apps/ratchet-demo, xtask/src/areas/chat/)
    crate::areas::chat::smoke(ctx)
}
