//! `cargo xtask trng-test`: its flags (clap) and the entry point that starts (or attaches to) a
//! tester, runs dieharder or rngtest + ent over its stream, and writes the report.

use super::dieharder::{run_dieharder, tests_for, DhRun};
use super::report::{default_report, write_report};
use super::stats::{run_stats, Stat};
use super::tester::{ensure_tools, Tester};
use super::types::{Level, Source};
use crate::ctx::Ctx;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The `cargo xtask` subcommands of this module (flattened into main.rs's Cmd).
#[derive(clap::Subcommand, Debug)]
pub enum TrngCmd {
    /// Stream the TRNG server's tester (hosted) through tools/trng_test.py into dieharder
    /// (--dieharder quick|ci|full) or rngtest + ent, and write a report (docs/trng-tester-protocol.md).
    TrngTest(TrngTestArgs),
    /// Boot the simulated Precursor with the TRNG server's device tester and stream conditioned
    /// and raw frames through its UART Wishbone bridge with tools/trng_test.py --transport sim.
    TrngSimTester(super::sim_tester::SimTesterArgs),
}

pub fn run(ctx: &Ctx, c: TrngCmd) -> Result<()> {
    match c {
        TrngCmd::TrngTest(a) => trng_test(ctx, &a),
        TrngCmd::TrngSimTester(a) => super::sim_tester::run(&a, ctx.verbose),
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct TrngTestArgs {
    /// Tester source: conditioned output or a raw source model.
    #[arg(long, value_enum, default_value = "cprng")]
    pub source: Source,
    /// Minimum number of bytes to test (K/M/G suffixes, powers of 1024). With --dieharder the
    /// test list is repeated until at least this much has been consumed; without it this many
    /// bytes go through rngtest and ent.
    #[arg(long, value_parser = parse_size, default_value = "64M")]
    pub bytes: u64,
    /// Run dieharder at this level (otherwise rngtest + ent only).
    #[arg(long, value_enum)]
    pub dieharder: Option<Level>,
    /// Report directory (default target/trng-test/<source>-<unix time>).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Use an already running tester on 127.0.0.1:PORT instead of starting the hosted system.
    #[arg(long)]
    pub port: Option<u16>,
    /// dieharder processes run at the same time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub jobs: u16,
    /// Time limit for each dieharder process, seconds.
    #[arg(long, default_value_t = 900)]
    pub test_timeout: u64,
    /// What feeds the server's conditioner (its --source): hosted-os or model.
    #[arg(long, default_value = "hosted-os", value_parser = ["hosted-os", "model"])]
    pub feed: String,
}

/// "512", "64K", "256M", "1G", "1GiB" -> bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix("ib")).or_else(|| t.strip_suffix('B')).unwrap_or(t);
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("invalid size {s:?} (examples: 4096, 64K, 256M, 1G)"))?;
    n.checked_mul(mul).ok_or_else(|| format!("size {s:?} too large"))
}

/// `cargo xtask trng-test ...`
pub fn trng_test(ctx: &Ctx, a: &TrngTestArgs) -> Result<()> {
    ensure_tools()?;
    let dir = a.report.clone().unwrap_or_else(|| default_report(a.source));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating report dir {}", dir.display()))?;
    let t0 = Instant::now();
    let mut tester = match a.port {
        Some(p) => Tester::external(p)?,
        None => Tester::start(ctx, &dir, &a.feed)?,
    };
    let timeout = Duration::from_secs(a.test_timeout);
    let res = (|| -> Result<(Vec<DhRun>, Option<Stat>)> {
        match a.dieharder {
            Some(level) => Ok((
                run_dieharder(&mut tester, a.source, &tests_for(level), a.bytes, a.jobs as usize, &dir, timeout)?,
                None,
            )),
            None => Ok((vec![], Some(run_stats(&tester, a.source, a.bytes, &dir, timeout)?))),
        }
    })();
    tester.stop(Some(&dir.join("hosted.log")));
    let (runs, stat) = res?;
    let ok = write_report(&dir, a.source, a.dieharder, &runs, stat.as_ref(), t0.elapsed().as_secs_f64())?;
    if !ok {
        bail!("trng-test {} failed: see {}", a.source.name(), dir.join("summary.json").display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        cmd: TrngCmd,
    }

    fn parse(args: &[&str]) -> Result<TrngTestArgs, clap::Error> {
        use clap::Parser;
        let mut v = vec!["xtask", "trng-test"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).map(|c| match c.cmd {
            TrngCmd::TrngTest(a) => a,
            TrngCmd::TrngSimTester(_) => unreachable!("parsed as trng-test"),
        })
    }

    fn parse_sim(args: &[&str]) -> Result<super::super::sim_tester::SimTesterArgs, clap::Error> {
        use clap::Parser;
        let mut v = vec!["xtask", "trng-sim-tester"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).map(|c| match c.cmd {
            TrngCmd::TrngSimTester(a) => a,
            TrngCmd::TrngTest(_) => unreachable!("parsed as trng-sim-tester"),
        })
    }

    #[test]
    fn sim_tester_flags() {
        let d = parse_sim(&[]).unwrap();
        assert_eq!((d.sources, d.frames, d.timeout), (vec![Source::Cprng, Source::Av], 1, 2400));
        let a = parse_sim(&["--source", "ro", "--source", "both", "--frames", "3", "--timeout", "60"]).unwrap();
        assert_eq!((a.sources, a.frames, a.timeout), (vec![Source::Ro, Source::Both], 3, 60));
        for bad in [
            &["--source", "xyz"][..],
            &["--frames", "0"],
            &["--frames", "-1"],
            &["--timeout", "soon"],
            &["--bridge", "1"],
        ] {
            assert!(parse_sim(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn cli_flags() {
        let a = parse(&["--source", "av", "--bytes", "1G", "--dieharder", "ci", "--jobs", "2"]).unwrap();
        assert_eq!((a.source, a.bytes, a.dieharder, a.jobs), (Source::Av, 1 << 30, Some(Level::Ci), 2));
        let d = parse(&[]).unwrap();
        assert_eq!((d.source, d.bytes, d.dieharder, d.feed.as_str()), (Source::Cprng, 64 << 20, None, "hosted-os"));
        for bad in [
            &["--source", "xyz"][..],
            &["--bytes", "lots"],
            &["--bytes", "-1"],
            &["--dieharder", "medium"],
            &["--jobs", "0"],
            &["--jobs", "9"],
            &["--port", "70000"],
            &["--feed", "hw"],
            &["--test-timeout", "soon"],
            &["--frobnicate"],
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
