//! Step `python:pytest`: pytest over tools/ in the project venv, with the hosted kernel, base
//! services and our programs built and their paths in the environment.

use crate::ctx::Ctx;
use crate::setup::venv;
use crate::steps::{step, TestStep};
use crate::supervisor;
use crate::util;
use anyhow::Result;
use std::process::Command;
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("python:pytest", 20 * 60, pytest)]
}

/// pytest over tools/ in the project venv (skipped when tools/ has no tests).
pub fn pytest(ctx: &Ctx) -> Result<()> {
    let tools = util::root().join("tools");
    let has_tests = tools.join("tests").is_dir()
        || std::fs::read_dir(&tools)
            .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("test_")))
            .unwrap_or(false);
    if !has_tests {
        eprintln!("xtask: tools/ has no Python tests; nothing to run");
        return Ok(());
    }
    let py = venv()?;
    // Hosted tests in tools/ may need our binaries and the kernel: build them and say where.
    let bins = ctx.xous()?;
    let progs = ctx.programs()?;
    let mut cmd = Command::new(py);
    cmd.args(["-m", "pytest", "-p", "no:cacheprovider"])
        .arg(if ctx.verbose { "-v" } else { "-q" })
        .arg(&tools)
        .current_dir(util::root())
        .env("XTASK_XOUS_KERNEL", &bins.kernel)
        .env("XTASK_XOUS_SERVICES", bins.services.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":"))
        .env("XTASK_PROGRAMS_DIR", progs);
    supervisor::run(&mut cmd, Duration::from_secs(20 * 60), "pytest tools/")
}
