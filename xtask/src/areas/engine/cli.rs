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
    /// yosys synth_xilinx (xc7) of the whole engine (Wishbone adapter, CSR block, engine) and
    /// per block, v1 and v2 (LUT/FF/BRAM/DSP); fails when v2's whole is over its DSP budget (30)
    /// or grew past its LUT ceiling (docs/gateware.md, "Figures").
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
    /// Place and route the engine on an ECP5 LFE5U-85F (yosys synth_ecp5, nextpnr-ecp5 from
    /// PyPI): Fmax per clock domain, cross-domain paths; fails when a domain misses its spec
    /// clock or a tool fails (its message and log path are printed). Long: minutes per ISA.
    Place {
        /// Only these ISAs (repeatable; default v1 and v2).
        #[arg(long)]
        isa: Vec<String>,
        /// Write the flat JSON (ecp5_engine_* keys) here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Post-synthesis simulation: yosys's xc7 netlist of the whole engine on Verilator against
    /// the model's vectors (RFC 7748), a Wycheproof sample and pause/resume. Long build.
    NetlistSim {
        /// Only these ISAs (repeatable; default v2 and v1).
        #[arg(long)]
        isa: Vec<String>,
        /// Wycheproof cases sampled per ISA.
        #[arg(long, default_value_t = 12)]
        wycheproof: usize,
    },
    /// Write the Xilinx constraints (XDC: clocks, the register file's multicycle paths), every
    /// name they match checked against the RTL.
    Xdc {
        #[arg(long, default_value = "v2")]
        isa: String,
        #[arg(long)]
        out: PathBuf,
    },
    /// The SoC benchmark (VexRiscv, engine v2, TRNG with its ring oscillators, the benchmark
    /// firmware in ROM) as a bitstream for an ECP5 board, with the open toolchain from PyPI;
    /// fails when nextpnr's timing misses the board's clocks. About 10 minutes on a quiet machine.
    Bitstream {
        /// Board: ulx3s (ULX3S with an LFE5U-85F).
        #[arg(long)]
        board: String,
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
        GatewareCmd::Place { isa, json } => {
            let r = super::fpga::place(&isa, json.as_deref(), true)?;
            for (k, v) in &r {
                println!("{k:<44} {v}");
            }
            Ok(())
        }
        GatewareCmd::NetlistSim { isa, wycheproof } => super::fpga::netlist_sim(ctx.verbose, &isa, wycheproof),
        GatewareCmd::Xdc { isa, out } => super::fpga::xdc(&isa, &out),
        GatewareCmd::Bitstream { board } => {
            let (r, bit) = super::fpga::bitstream(&board, ctx.verbose)?;
            for (k, v) in &r {
                println!("{k:<44} {v}");
            }
            println!("bitstream: {} (not tried on hardware here)", bit.display());
            println!("flash (SRAM): openFPGALoader --board {board} {}", bit.display());
            Ok(())
        }
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
