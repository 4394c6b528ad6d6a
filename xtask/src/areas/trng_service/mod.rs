//! Step `trng-service:privilege`, the TRNG service's privilege test (docs/security.md):
//! 1. the hosted system with sysctl and an ordinary client (`trng-privilege`): the control name
//!    is refused, every privileged opcode on the public server is refused `NotPermitted` as
//!    every message kind, and the service keeps serving (`VERDICT trng-privilege PASS ...`);
//!    the system's TRNG started no tester (raw samples over TCP): no tester port was given;
//! 2. a second system where sysctl, the system's own process, uses the control server
//!    (test mode, ClearErrors, refusal of public opcodes there) and then stops the service
//!    with Quit: a request afterwards is answered `Stopped` at once, it does not hang.

use crate::ctx::Ctx;
use crate::harness::hosted::Report;
use crate::steps::{step, TestStep};
use crate::system::{sysctl_checks, system};
use crate::util::shell_quote;
use anyhow::{bail, Result};
use std::time::Duration;
use trng_core::spec;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("trng-service:privilege", 180, privilege)]
}

pub fn privilege(ctx: &Ctx) -> Result<()> {
    let mut sys = system(ctx, &[shell_quote(&ctx.program("trng-privilege")?)])?;
    let r = (|| -> Result<()> {
        let v = loop {
            match sys
                .next_report(Duration::from_secs(60), "the trng-privilege verdict", |l| l.contains("SYSCTL ERROR"))?
            {
                Report::Verdict(v) if v.subject == "trng-privilege" => break v,
                Report::Verdict(_) => {}
                Report::Panic(l) | Report::Line(l) => bail!("{l}"),
            }
        };
        eprintln!("trng-service: {v}");
        if !v.passed() {
            bail!("an ordinary client was not refused cleanly: {v}");
        }
        // the server prints its ready line after the tester would have announced itself
        if !sys.lines().iter().any(|l| l.contains(spec::server::READY_MARKER)) {
            bail!("no {:?} line", spec::server::READY_MARKER);
        }
        if let Some(l) = sys.lines().iter().find(|l| l.contains(spec::tester::LISTEN_MARKER)) {
            bail!("the TRNG tester (raw samples over TCP) listens in an ordinary system: {l}");
        }
        Ok(())
    })();
    let tail = sys.tail(30);
    sys.stop();
    r.map_err(|e| anyhow::anyhow!("{e}\n--- last output ---\n{tail}"))?;

    sysctl_checks(ctx, "trng-service", &["trng-control", "trng-quit"])
}
