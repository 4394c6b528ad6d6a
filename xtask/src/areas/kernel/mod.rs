//! Step `kernel:patches` (`cargo xtask kernel-test`), the tests for kernel-patches/: each runs the behaviour on the stock kernel (where it must fail,
//! proving the test can fail) and on the patched kernel (where it must pass).

use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{is_panic, Launch};
use crate::steps::{step, TestStep};
use crate::util::shell_quote;
use anyhow::{anyhow, bail, Result};
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("kernel:patches", 5 * 60, all)]
}

pub fn all(ctx: &Ctx) -> Result<()> {
    let mut failed = Vec::new();
    for (name, f) in [
        ("shutdown", shutdown as fn(&Ctx) -> Result<()>),
        ("shutdown-privilege", shutdown_privilege),
        ("randomness", randomness),
        ("startup", startup),
        ("process-exit", process_exit),
    ] {
        match f(ctx) {
            Ok(()) => eprintln!("kernel-test {name}: PASS"),
            Err(e) => {
                eprintln!("kernel-test {name}: FAIL: {e:#}");
                failed.push(name);
            }
        }
    }
    if !failed.is_empty() {
        bail!("kernel-patch tests failed: {failed:?}");
    }
    Ok(())
}

fn probe(ctx: &Ctx, mode: &str) -> Result<String> {
    Ok(format!("{} {mode}", shell_quote(&ctx.program("kernel-probe")?)))
}

/// Does the system exit 0 by itself after a Shutdown syscall, leaving no process behind?
fn shutdown_case(ctx: &Ctx, flavor: Flavor) -> Result<()> {
    let bins = ctx.xous()?;
    let mut sys = Launch::new(bins, flavor)
        .program(probe(ctx, "idle")?)
        .system_program(probe(ctx, "shutdown")?)
        .echo(ctx.verbose)
        .start()?;
    sys.wait_marker("PROBE-IDLE", Duration::from_secs(10))?;
    let st = sys.wait_exit(Duration::from_secs(8))?;
    if !st.success() {
        bail!("kernel exited with {st}");
    }
    Ok(())
}

fn shutdown(ctx: &Ctx) -> Result<()> {
    if shutdown_case(ctx, Flavor::Stock).is_ok() {
        bail!("the stock kernel already shuts down cleanly: this test cannot detect a missing patch");
    }
    shutdown_case(ctx, Flavor::Patched).map_err(|e| e.context("patched kernel: Shutdown"))
}

/// Shutdown is a privilege (kernel-patches/0006): an ordinary process asking for it is answered
/// AccessDenied and the system keeps serving; a program the command line allows then shuts the
/// system down cleanly.
fn shutdown_privilege_case(ctx: &Ctx, flavor: Flavor) -> Result<()> {
    shutdown_privilege_run(ctx, flavor, None)
}

/// One run: `raw` replaces the computed `XOUS_SHUTDOWN_ALLOWED` (the malformed-value case).
fn shutdown_privilege_run(ctx: &Ctx, flavor: Flavor, raw: Option<&dyn Fn(usize) -> String>) -> Result<()> {
    let bins = ctx.xous()?;
    let mut l = Launch::new(bins, flavor)
        .program(probe(ctx, "slow-server")?)
        .program(probe(ctx, "shutdown-refused")?)
        .system_program(probe(ctx, "shutdown-last")?)
        .echo(ctx.verbose);
    if let Some(raw) = raw {
        l.shutdown_allowed_raw = Some(raw(*l.may_shut_down.last().unwrap()));
    }
    let mut sys = l.start()?;
    let r = (|| -> Result<()> {
        let v = sys.wait_verdict(Duration::from_secs(15), "the kernel-probe/shutdown-refused verdict", |s| {
            s == "kernel-probe/shutdown-refused"
        })?;
        if !v.passed() {
            bail!("{v}");
        }
        let st = sys.wait_exit(Duration::from_secs(8))?;
        if !st.success() || !sys.lines().iter().any(|l| l.contains("PROBE-SHUTDOWN-OK")) {
            bail!("the allowed program's Shutdown did not end the system cleanly ({st})");
        }
        if raw.is_some() {
            // "0", "x", "-1" and the overlong number, each named on stderr
            let n = sys.lines().iter().filter(|l| l.contains("is not a command-line position")).count();
            if n != 4 {
                bail!("the kernel reported {n} malformed XOUS_SHUTDOWN_ALLOWED entries, expected 4");
            }
        }
        Ok(())
    })();
    if r.is_err() {
        sys.stop();
    }
    r.map_err(|e| anyhow!("{e:#}; last lines:\n{}", sys.tail(12)))
}

fn shutdown_privilege(ctx: &Ctx) -> Result<()> {
    if shutdown_privilege_case(ctx, Flavor::Stock).is_ok() {
        bail!(
            "the stock kernel already refuses an ordinary process's Shutdown: this test cannot detect a missing patch"
        );
    }
    shutdown_privilege_case(ctx, Flavor::Patched).map_err(|e| e.context("patched kernel: Shutdown privilege"))?;
    // malformed entries grant nothing, are reported, and leave the valid one working (the
    // refused probe, at last - 1, stays refused)
    let malformed = |last: usize| format!("0, x,-1,, 99999999999999999999 ,{last}");
    shutdown_privilege_run(ctx, Flavor::Patched, Some(&malformed))
        .map_err(|e| e.context("patched kernel: malformed XOUS_SHUTDOWN_ALLOWED"))
}

/// Server IDs of one run (two servers created by the probe).
fn sids(ctx: &Ctx, flavor: Flavor, seed: Option<u64>) -> Result<Vec<String>> {
    let bins = ctx.xous()?;
    let mut l = Launch::bare(bins.kernel(flavor)).program(probe(ctx, "sid")?).echo(ctx.verbose);
    if let Some(s) = seed {
        l = l.env("XOUS_KERNEL_DETERMINISTIC_SEED", s.to_string());
    }
    let mut sys = l.start()?;
    let mut out = Vec::new();
    for _ in 0..2 {
        let line = sys.wait_marker("PROBE-SID", Duration::from_secs(10))?;
        out.push(line.text.split_whitespace().last().unwrap_or("").to_string());
    }
    sys.stop();
    Ok(out)
}

fn randomness(ctx: &Ctx) -> Result<()> {
    let (a, b) = (sids(ctx, Flavor::Stock, None)?, sids(ctx, Flavor::Stock, None)?);
    if a != b {
        bail!("stock kernel gave different SIDs on two runs ({a:?} vs {b:?}): this test cannot detect a missing patch");
    }
    let (a, b) = (sids(ctx, Flavor::Patched, None)?, sids(ctx, Flavor::Patched, None)?);
    if a == b || a[0] == a[1] {
        bail!("patched kernel: server IDs repeat across runs or within a run: {a:?} / {b:?}");
    }
    let (a, b) = (sids(ctx, Flavor::Patched, Some(42))?, sids(ctx, Flavor::Patched, Some(42))?);
    if a != b {
        bail!("patched kernel with XOUS_KERNEL_DETERMINISTIC_SEED=42: runs differ ({a:?} vs {b:?})");
    }
    Ok(())
}

/// Milliseconds from kernel launch until a probe process completed its first syscall (median of 3).
/// How long the probe's shell waits before starting it, so that its connection always arrives
/// after the kernel's first accept attempt. Without it, a client quick enough to connect before
/// that attempt was accepted at once even by the stock kernel (its 500 ms poll never showed, and
/// the test could not tell the kernels apart: seen on an idle machine).
const STARTUP_DELAY_MS: f64 = 100.0;

/// Milliseconds from the probe's start until its first syscall was answered (median of 3).
pub fn first_syscall_ms(ctx: &Ctx, flavor: Flavor) -> Result<f64> {
    let bins = ctx.xous()?;
    let mut v = Vec::new();
    for _ in 0..3 {
        let cmd = format!("sleep {}; {}", STARTUP_DELAY_MS / 1e3, probe(ctx, "ready")?);
        let mut sys = Launch::bare(bins.kernel(flavor)).program(cmd).echo(ctx.verbose).start()?;
        let line = sys.wait_marker("PROBE-READY", Duration::from_secs(10))?;
        v.push(line.at.duration_since(sys.started).as_secs_f64() * 1e3 - STARTUP_DELAY_MS);
        sys.stop();
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Ok(v[1])
}

fn startup(ctx: &Ctx) -> Result<()> {
    let stock = first_syscall_ms(ctx, Flavor::Stock)?;
    let patched = first_syscall_ms(ctx, Flavor::Patched)?;
    eprintln!(
        "kernel-test startup: first syscall {stock:.1} ms (stock), {patched:.1} ms (patched) after the program started"
    );
    // the stock kernel polls accept every 500 ms: a client that starts after the first poll
    // waits for the next one (start-up delay + answer ~ 500 ms)
    if stock < 400.0 - STARTUP_DELAY_MS {
        bail!("stock kernel answered after {stock:.1} ms: this test cannot detect a missing patch");
    }
    if patched >= 100.0 {
        bail!("patched kernel: first syscall after {patched:.1} ms (limit 100)");
    }
    Ok(())
}

/// The system broke down before the client started after the exiting process was served (what
/// the stock kernel must do), as opposed to failing later (Shutdown, leftovers, panics).
#[derive(Debug)]
struct NotServed(String);

impl std::fmt::Display for NotServed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotServed {}

/// A process exits from main while its threads are inside Xous calls (held by a slow server,
/// or in flight in the kernel); another client must still be served afterwards, then Shutdown
/// must end everything cleanly.
fn process_exit_case(ctx: &Ctx, flavor: Flavor) -> Result<()> {
    let bins = ctx.xous()?;
    let mut sys = Launch::new(bins, flavor)
        .program(probe(ctx, "slow-server")?)
        .program(probe(ctx, "exit-with-threads")?)
        .system_program(probe(ctx, "after-exit")?)
        .echo(ctx.verbose)
        .start()?;
    sys.wait_marker("PROBE-EXITING", Duration::from_secs(15))?;
    let served = sys
        .wait_verdict(Duration::from_secs(15), "the kernel-probe/after-exit verdict", |s| {
            s == "kernel-probe/after-exit"
        })
        .and_then(|v| if v.passed() { Ok(()) } else { Err(anyhow!("{v}")) });
    if let Err(e) = served {
        let status = sys.try_status().ok().flatten();
        sys.stop();
        return Err(anyhow!(NotServed(format!(
            "no client was served after a process exited with calls in flight ({e:#}); kernel status {status:?}; last lines:\n{}",
            sys.tail(12)
        ))));
    }
    let st = sys.wait_exit(Duration::from_secs(8))?;
    let panics: Vec<String> = sys.lines().into_iter().filter(|l| is_panic(l)).collect();
    if !panics.is_empty() {
        bail!("a process or the kernel panicked: {panics:?}");
    }
    if !st.success() {
        bail!("kernel exited with {st} after Shutdown");
    }
    Ok(())
}

fn process_exit(ctx: &Ctx) -> Result<()> {
    match process_exit_case(ctx, Flavor::Stock) {
        Err(e) if e.downcast_ref::<NotServed>().is_some() => {}
        Err(e) => bail!("stock kernel failed for another reason than the exiting process: {e:#}"),
        Ok(()) => bail!("the stock kernel survives the process exit: this test cannot detect a missing patch"),
    }
    process_exit_case(ctx, Flavor::Patched).map_err(|e| e.context("patched kernel: process exit"))
}
