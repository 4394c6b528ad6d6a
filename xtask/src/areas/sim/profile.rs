//! `cargo xtask sim-profile`: where the simulated Precursor's CPU spends its cycles while the
//! device self-test times its X25519 calls (docs/sim.md, "Profiling").
//!
//! This command runs the device image plus the self-test client (`sim:selftest`'s run, on the
//! `--isa` engine) with sampling on, keeps the samples inside a window (default: the client's
//! timed calls, between its two stamped timing lines), and attributes each to a function
//! (harness/profile.rs). Output: a table per process and per function (share of samples,
//! device microseconds per call at 100 MHz) and `profile.json`.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

use crate::areas::sim::selftest::profiled_selftest;
use crate::harness::precursor;
use crate::harness::profile::{out_dir, report, RunInfo, Show, Window};

#[derive(Args, Debug)]
pub struct SimProfileArgs {
    /// The engine on the simulated SoC's bus.
    #[arg(long, default_value = "v2", value_parser = ["v1", "v2"])]
    pub isa: String,
    /// Cycles between two samples (16..=1048576; smaller is finer and slower to write).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(16..=1 << 20))]
    pub period: u32,
    /// Which samples to count.
    #[arg(long, value_enum, default_value_t = Window::Timing)]
    pub window: Window,
    /// Functions to list.
    #[arg(long, default_value_t = 30)]
    pub top: usize,
    /// Also print a timeline of the window's first CYCLES cycles (consecutive samples in the
    /// same process, mode and function collapsed into one row): one call's path, in order.
    #[arg(long, value_name = "CYCLES")]
    pub trace: Option<u64>,
    /// Start the timeline this many cycles into the window (default 0).
    #[arg(long, value_name = "CYCLES", default_value_t = 0, requires = "trace")]
    pub trace_from: u64,
    /// Analyse the samples of an earlier run (its directory: samples.txt, run.json) instead of
    /// running the simulation.
    #[arg(long)]
    pub from: Option<PathBuf>,
}

pub fn main(a: SimProfileArgs, verbose: bool) -> Result<()> {
    let dir = a.from.clone().unwrap_or_else(out_dir);
    let info = match &a.from {
        Some(d) => {
            let p = d.join("run.json");
            let text = std::fs::read_to_string(&p).with_context(|| format!("--from {}: no run.json", d.display()))?;
            RunInfo::from_json(&serde_json::from_str(&text).with_context(|| p.display().to_string())?)?
        }
        None => {
            let (r, info) = profiled_selftest(&a.isa, a.period, verbose, &dir)?;
            precursor::report(&r);
            info
        }
    };
    report(&dir, &info, &Show { window: a.window, top: a.top, trace: a.trace.map(|n| (a.trace_from, n)) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct TestCli {
        #[command(flatten)]
        a: SimProfileArgs,
    }

    #[test]
    fn malformed_options_are_refused() {
        use clap::Parser;
        let parse = |args: &[&str]| {
            TestCli::try_parse_from(std::iter::once("sim-profile").chain(args.iter().copied())).map(|c| c.a)
        };
        let a = parse(&[]).unwrap();
        assert_eq!((a.isa.as_str(), a.period, a.window, a.top, a.trace), ("v2", 256, Window::Timing, 30, None));
        assert!(parse(&["--isa", "v1", "--period", "16", "--window", "all", "--trace", "5000", "--trace-from", "10"])
            .is_ok());
        for bad in [
            &["--isa", "v3"][..],
            &["--period", "15"],
            &["--period", "2000000"],
            &["--period", "often"],
            &["--window", "half"],
            &["--top", "-1"],
            &["--trace-from", "10"],
            &["--trace", "x"],
            &["--frobnicate"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
