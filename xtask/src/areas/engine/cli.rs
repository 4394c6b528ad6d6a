//! `cargo xtask gateware ...` (docs/gateware.md): the engine's RTL tests on Verilator, its
//! synthesis, the SoC benchmark, and cleaning the Verilator cache.

use crate::build::gateware::build_dir;
use crate::ctx::Ctx;
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

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
            super::rtl::run_tests(ctx, &extra)
        }
        GatewareCmd::Synth { isa, json } => super::rtl::synth(&isa, json.as_deref()).map(|_| ()),
        GatewareCmd::SocBench { timeout, json } => super::soc_bench::cli(ctx, timeout, json.as_deref()),
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
