//! Our hosted system: the patched kernel and base services (ctx.rs builds them once) plus our
//! servers, sysctl last ([`SERVER_BINS`], [`SYSTEM_BINS`]), started through the launcher
//! (harness/hosted.rs), which knows nothing of which programs are ours.

use crate::build::target::{SERVER_BINS, SYSTEM_BINS};
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{Hosted, Launch};
use anyhow::{bail, Result};
use std::time::Duration;

/// Add our servers to a hosted system, in [`SERVER_BINS`] order, the ones in
/// [`SYSTEM_BINS`] as programs that may shut the system down.
pub fn add_servers(ctx: &Ctx, mut l: Launch) -> Result<Launch> {
    for b in SERVER_BINS {
        let cmd = ctx.server_program(b)?;
        l = if SYSTEM_BINS.contains(b) { l.system_program(cmd) } else { l.program(cmd) };
    }
    Ok(l)
}

/// A hosted system: our servers (sysctl included, last) plus `clients`.
pub fn system(ctx: &Ctx, clients: &[String]) -> Result<Hosted> {
    system_env(ctx, clients, &[])
}

/// [`system`] with extra environment variables for every process.
pub fn system_env(ctx: &Ctx, clients: &[String], env: &[(&str, &str)]) -> Result<Hosted> {
    system_on(ctx, clients, env, None)
}

/// [`system_env`] on one host CPU (`Some`, [`Launch::cpu`]) or wherever the host places it.
pub fn system_on(ctx: &Ctx, clients: &[String], env: &[(&str, &str)], cpu: Option<usize>) -> Result<Hosted> {
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose).cpu(cpu);
    for (k, v) in env {
        l = l.env(*k, *v);
    }
    l = add_servers(ctx, l)?;
    for c in clients {
        l = l.program(c.clone());
    }
    l.start()
}

/// A hosted system (our servers, no client) in which sysctl, the system's own process, runs
/// `checks` through the services' control servers (`SYSCTL_CHECK`); each must report
/// `SYSCTL CHECK <name> ok`. `who` prefixes the log lines.
pub fn sysctl_checks(ctx: &Ctx, who: &str, checks: &[&str]) -> Result<()> {
    let mut sys = system_env(ctx, &[], &[("SYSCTL_CHECK", &checks.join(","))])?;
    let r = (|| -> Result<()> {
        for check in checks {
            let l = sys
                .wait_line(Duration::from_secs(60), &format!("SYSCTL CHECK {check}"), |l| {
                    l.contains("SYSCTL CHECK") || l.contains("SYSCTL ERROR")
                })?
                .text;
            eprintln!("{who}: {l}");
            if !l.contains(&format!("SYSCTL CHECK {check} ok")) {
                bail!("the system's own process could not run {check} through the control server: {l}");
            }
        }
        Ok(())
    })();
    let tail = sys.tail(30);
    sys.stop();
    r.map_err(|e| anyhow::anyhow!("{e}\n--- last output ---\n{tail}"))
}
