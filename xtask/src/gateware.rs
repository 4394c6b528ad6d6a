//! Gateware tooling shared by every block (engine, TRNG): the tools it needs (verilator, yosys,
//! a C++ compiler, apt-installed; migen/litex pinned in tools/requirements.txt, in the venv),
//! the Verilator build cache (target/gateware/verilator, keyed by a hash of the generated
//! Verilog: gateware/common/verilator.py), pytest over gateware test directories, and
//! `cargo xtask gateware ...`. The engine's RTL steps live in gateware_engine.rs.

use crate::ctx::Ctx;
use crate::{setup, supervisor, util};
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Debian packages the gateware flow runs (Verilator builds with the system C++ compiler).
pub const APT: &[&str] = &["verilator", "yosys", "g++", "make"];

/// Where Verilated models are cached.
pub fn build_dir() -> PathBuf {
    util::target_dir().join("gateware").join("verilator")
}

/// The venv's python with the gateware tools installed (apt + pinned pip).
pub fn python() -> Result<PathBuf> {
    setup::require_apt(APT)?;
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
pub fn pytest(ctx: &Ctx, tests: &[&str], extra: &[String], env: &[(&str, &Path)], timeout: Duration) -> Result<()> {
    let py = python()?;
    let mut cmd = py_command(&py);
    cmd.args(["-m", "pytest", "-p", "no:cacheprovider", if ctx.verbose { "-v" } else { "-q" }]).args(tests).args(extra);
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

#[derive(Args)]
pub struct GatewareArgs {
    #[command(subcommand)]
    pub cmd: GatewareCmd,
}

#[derive(Subcommand)]
pub enum GatewareCmd {
    /// Run gateware tests on Verilator (all of gateware/engine/tests, or those matching -k).
    Test {
        /// pytest -k expression.
        #[arg(short = 'k')]
        filter: Option<String>,
    },
    /// yosys synth_xilinx (xc7) of the engine per block, v1 and v2 (LUT/FF/BRAM/DSP); fails
    /// when v2 is over its DSP or LUT budget (30 / 4,000).
    Synth {
        /// Only these ISAs (repeatable; default v1 and v2).
        #[arg(long)]
        isa: Vec<String>,
        /// Write the flat JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// SoC benchmark: the engine on a LiteX SoC (VexRiscv imac, litex_sim); firmware times
    /// X25519 in software and on the engine (v1, v2) in CPU cycles (docs/gateware.md).
    SocBench {
        /// Wall-clock limit of the simulation run, seconds.
        #[arg(long, default_value_t = 240)]
        timeout: u64,
        /// Write the flat JSON (soc_* keys) here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Remove the Verilator build cache (target/gateware/verilator).
    Clean,
}

pub fn run(ctx: &Ctx, a: GatewareArgs) -> Result<()> {
    match a.cmd {
        GatewareCmd::Test { filter } => {
            let extra: Vec<String> = filter.map(|f| vec!["-k".into(), f]).unwrap_or_default();
            crate::gateware_engine::run_tests(ctx, &extra)
        }
        GatewareCmd::Synth { isa, json } => crate::gateware_engine::synth(&isa, json.as_deref()).map(|_| ()),
        GatewareCmd::SocBench { timeout, json } => crate::gateware_soc::cli(ctx, timeout, json.as_deref()),
        GatewareCmd::Clean => {
            let d = build_dir();
            if d.exists() {
                std::fs::remove_dir_all(&d)?;
            }
            if d.exists() {
                bail!("could not remove {}", d.display());
            }
            eprintln!("removed {}", d.display());
            Ok(())
        }
    }
}
