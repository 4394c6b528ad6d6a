//! The TRNG bench providers: `trng-stream` (the tester's stream through tools/trng_test.py) and
//! `trng-ipc` (fill/u32 over IPC from a hosted client).

use super::tester::{read_stats, tool_path, Tester};
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::Launch;
use crate::steps::BenchResults;
use crate::supervisor;
use crate::util;
use crate::util::shell_quote;
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `trng_stream_mb_s`: tools/trng_test.py streaming 256 MiB of conditioned output from the
/// hosted tester to stdout (/dev/null); the tool times its own streaming loop.
pub fn stream(ctx: &Ctx) -> Result<BenchResults> {
    let dir = util::target_dir().join("trng-test").join("bench");
    std::fs::create_dir_all(&dir)?;
    let mut tester = Tester::start(ctx, &dir, "hosted-os")?;
    let res = (|| -> Result<f64> {
        let stats = dir.join("stream.json");
        let mut cmd = Command::new(&tester.py);
        cmd.arg(tool_path())
            .args([
                "--quiet",
                "--timeout",
                "30",
                "--source",
                "cprng",
                "--bytes",
                "256M",
                "--port",
                &tester.port.to_string(),
            ])
            .arg("--stats-json")
            .arg(&stats)
            .stdin(Stdio::null())
            .stdout(File::create("/dev/null")?);
        supervisor::run(&mut cmd, Duration::from_secs(300), "trng_test.py (bench)")?;
        let v = read_stats(&stats);
        let b = v["bytes"].as_u64().unwrap_or(0);
        if b != 256 << 20 {
            bail!("bench stream delivered {b} bytes");
        }
        v["mb_s"].as_f64().context("no mb_s in the tool's stats")
    })();
    tester.stop(Some(&dir.join("hosted.log")));
    let mut out = BenchResults::new();
    out.insert("trng_stream_mb_s".into(), res?);
    Ok(out)
}

/// `trng_fill_mb_s`, `trng_u32_us_p50`: trng-service's hosted client (`trng-tests bench`).
pub fn ipc(ctx: &Ctx) -> Result<BenchResults> {
    let bins = ctx.xous()?;
    let mut sys = Launch::new(bins, Flavor::Patched)
        .env("TRNG_TESTER", "0")
        .program(shell_quote(&ctx.program("trng")?))
        .program(format!("{} bench", shell_quote(&ctx.program("trng-tests")?)))
        .echo(ctx.verbose)
        .start()?;
    let r = crate::bench::hosted_bench_json(&mut sys, 1, Duration::from_secs(300));
    sys.stop();
    r
}
