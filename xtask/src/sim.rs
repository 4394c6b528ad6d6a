//! The simulated Precursor (docs/sim.md): LiteX + VexRiscv (MMU) on Verilator with Precursor's
//! memory map and CSR blocks (gateware/precursor/).
//!
//! * step `sim:soc`: the SoC's map against Precursor's SVD, and a bare-metal self-test
//!   (UARTs, ticktimer rate, an interrupt in supervisor mode, sv32 paging, a user ecall);
//! * `cargo xtask sim-run --rom R [--ram M]`: run a program on it and show its UART lines.

use crate::ctx::Ctx;
use crate::steps::TestStep;
use crate::{gateware, setup, supervisor};
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Debian packages the simulator needs beyond the gateware flow's: LiteX's simulation harness
/// links libevent and json-c (and zlib); the test programs are assembled with GNU binutils.
pub const APT: &[&str] = &["libevent-dev", "libjson-c-dev", "zlib1g-dev", "binutils-riscv64-unknown-elf"];

pub fn test_steps() -> Vec<TestStep> {
    vec![TestStep { name: "sim:soc", timeout: Duration::from_secs(20 * 60), run: soc_test }]
}

/// The Python that runs gateware/precursor (venv with litex, apt packages installed).
fn python() -> Result<PathBuf> {
    setup::require_apt(APT)?;
    gateware::python()
}

/// pytest gateware/precursor/tests: the map against Precursor's SVD, the self-test program.
fn soc_test(ctx: &Ctx) -> Result<()> {
    setup::require_apt(APT)?;
    let svd = crate::device_xous::precursor_svd()?;
    gateware::pytest(ctx, &["precursor/tests"], &[], &[("PRECURSOR_SVD", svd.as_path())], Duration::from_secs(20 * 60))
}

#[derive(Args, Debug)]
pub struct SimRunArgs {
    /// ROM image (binary, loaded at 0x0: the reset vector).
    #[arg(long)]
    pub rom: PathBuf,
    /// RAM image (binary, loaded at 0x4000_0000).
    #[arg(long)]
    pub ram: Option<PathBuf>,
    /// Wall-clock limit in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Stop when an output line matches this regex.
    #[arg(long)]
    pub until: Option<String>,
}

/// `cargo xtask sim-run`: a program on the simulated Precursor, its UART lines on the terminal.
pub fn run(a: SimRunArgs) -> Result<()> {
    for (p, what) in [(Some(&a.rom), "--rom"), (a.ram.as_ref(), "--ram")] {
        if let Some(p) = p {
            if !p.is_file() {
                bail!("sim-run: {what} {}: no such file", p.display());
            }
        }
    }
    let py = python()?;
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "precursor.run", "--timeout", &a.timeout.to_string(), "--rom"]).arg(std::fs::canonicalize(&a.rom)?);
    if let Some(r) = &a.ram {
        cmd.arg("--ram").arg(std::fs::canonicalize(r)?);
    }
    if let Some(u) = &a.until {
        cmd.args(["--until", u]);
    }
    // the runner enforces the wall limit itself; this one only catches a hung build
    supervisor::run(&mut cmd, Duration::from_secs(a.timeout + 15 * 60), "the simulated Precursor")
}
