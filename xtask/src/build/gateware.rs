//! Gateware tooling shared by every block (engine, TRNG): the tools it needs (verilator, yosys,
//! a C++ compiler, apt-installed; migen/litex pinned in tools/requirements.txt, in the venv),
//! the Verilator build cache (target/gateware/verilator, keyed by a hash of the generated
//! Verilog: gateware/common/verilator.py), pytest over gateware test directories, and the
//! TRNG's software health tests as a replay tool for the SoC builds. `cargo xtask gateware ...`
//! is in areas/engine/cli.rs, the engine's RTL steps in areas/engine/rtl.rs.

use crate::setup;
use crate::supervisor;
use crate::util;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Where Verilated models are cached.
pub fn build_dir() -> PathBuf {
    util::target_dir().join("gateware").join("verilator")
}

/// The venv's python with the gateware tools installed (apt + pinned pip).
pub fn python() -> Result<PathBuf> {
    setup::require_apt(setup::apt::GATEWARE)?;
    setup::venv()
}

/// A python command in gateware/ with the shared environment (build cache, target dir).
pub fn py_command(py: &Path) -> Command {
    let mut cmd = Command::new(py);
    cmd.current_dir(util::root().join("gateware"))
        .env("GATEWARE_BUILD_DIR", build_dir())
        .env("CARGO_TARGET_DIR", util::target_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// pytest over `tests` (paths relative to gateware/), extra args (e.g. `-k`), with a timeout.
pub fn pytest(verbose: bool, tests: &[&str], extra: &[String], env: &[(&str, &Path)], timeout: Duration) -> Result<()> {
    let py = python()?;
    let mut cmd = py_command(&py);
    cmd.args(["-m", "pytest", "-p", "no:cacheprovider", if verbose { "-v" } else { "-q" }]).args(tests).args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    supervisor::run(&mut cmd, timeout, &format!("pytest {}", tests.join(" ")))
}

/// Environment for the engine server's `rtl` backend (services/engine25519/src/rtl_backend.rs):
/// the venv's python, the gateware directory and the Verilator cache.
pub fn rtl_backend_env() -> Vec<(String, String)> {
    let py = python().unwrap_or_else(|e| {
        eprintln!("xtask: gateware tools unavailable ({e:#}); the rtl backend will report itself unavailable");
        PathBuf::from("python3")
    });
    vec![
        ("ENGINE25519_RTL_PYTHON".into(), py.display().to_string()),
        ("ENGINE25519_RTL_DIR".into(), util::root().join("gateware").display().to_string()),
        ("GATEWARE_BUILD_DIR".into(), build_dir().display().to_string()),
    ]
}

/// The software health tests as a replay tool (`trng-core` example `trng_health_replay`): the
/// fault-injection benches feed it the samples their simulated noise source produced.
pub fn health_replay() -> Result<PathBuf> {
    let mut cmd = util::cargo();
    cmd.args(["build", "-q", "--release", "-p", "trng-core", "--example", "trng_health_replay"])
        .current_dir(util::root());
    supervisor::run(&mut cmd, Duration::from_secs(600), "trng_health_replay")?;
    Ok(util::target_dir().join("release").join("examples").join("trng_health_replay"))
}
