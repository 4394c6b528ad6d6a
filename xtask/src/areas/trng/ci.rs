//! The TRNG steps of `cargo xtask test`: dieharder's CI subset on the conditioned stream,
//! rngtest + ent on the raw source models, and the hosted scenarios of apps/hosted-tests.

use super::dieharder::{run_dieharder, tests_for};
use super::report::write_report;
use super::stats::{judge_stat, run_stats, stat_json};
use super::tester::{ensure_tools, Tester};
use super::types::{Level, Source};
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::Launch;
use crate::steps::{step, TestStep};
use crate::util;
use crate::util::shell_quote;
use anyhow::{bail, Context, Result};
use std::time::{Duration, Instant};

/// Steps `trng:dieharder-ci`, `trng:raw-models` and `trng:hosted-scenarios`.
pub fn test_steps() -> Vec<TestStep> {
    vec![
        step!("trng:dieharder-ci", 40 * 60, dieharder),
        step!("trng:raw-models", 15 * 60, raw_models),
        step!("trng:hosted-scenarios", 10 * 60, scenarios),
    ]
}

/// The dieharder CI subset on the conditioned stream: 0 FAILED, at least 1 GiB consumed.
pub fn dieharder(ctx: &Ctx) -> Result<()> {
    ensure_tools()?;
    let dir = util::target_dir().join("trng-test").join("ci-cprng");
    std::fs::create_dir_all(&dir)?;
    let t0 = Instant::now();
    let mut tester = Tester::start(ctx, &dir, "hosted-os")?;
    let runs =
        run_dieharder(&mut tester, Source::Cprng, &tests_for(Level::Ci), 1 << 30, 1, &dir, Duration::from_secs(900));
    tester.stop(Some(&dir.join("hosted.log")));
    let runs = runs?;
    if !write_report(&dir, Source::Cprng, Some(Level::Ci), &runs, None, t0.elapsed().as_secs_f64())? {
        bail!("dieharder CI subset on the conditioned stream failed: see {}", dir.join("summary.json").display());
    }
    Ok(())
}

/// rngtest + ent over 64 MiB of each raw source model (av, ro) from the model-fed server.
pub fn raw_models(ctx: &Ctx) -> Result<()> {
    ensure_tools()?;
    let dir = util::target_dir().join("trng-test").join("ci-raw");
    std::fs::create_dir_all(&dir)?;
    let mut tester = Tester::start(ctx, &dir, "model")?;
    let res = (|| -> Result<Vec<String>> {
        let mut failures = Vec::new();
        for src in [Source::Av, Source::Ro] {
            let s = run_stats(&tester, src, 64 << 20, &dir, Duration::from_secs(600))?;
            std::fs::write(
                dir.join(format!("summary-{}.json", src.name())),
                serde_json::to_string_pretty(&stat_json(&s))? + "\n",
            )?;
            eprintln!(
                "xtask: {} raw model: {} MiB in {:.1} s, rngtest {}/{} blocks failed, ent {:.6} bits/byte",
                src.name(),
                s.bytes >> 20,
                s.seconds,
                s.fips_failures,
                s.fips_successes + s.fips_failures,
                s.entropy
            );
            if let Some(v) = judge_stat(&s) {
                failures.push(format!("{} raw model: {v}", src.name()));
            }
        }
        Ok(failures)
    })();
    tester.stop(Some(&dir.join("hosted.log")));
    let failures = res?;
    if !failures.is_empty() {
        bail!("raw source models: {}", failures.join("; "));
    }
    Ok(())
}

/// trng-service's hosted scenarios (apps/hosted-tests `trng-tests`: fill lengths, malformed
/// input to every opcode, fault injection + subscriptions, test modes) against a model-fed server.
pub fn scenarios(ctx: &Ctx) -> Result<()> {
    let bins = ctx.xous()?;
    let mut sys = Launch::new(bins, Flavor::Patched)
        .env("TRNG_TESTER", "0")
        .program(format!("{} --source model", shell_quote(&ctx.program("trng")?)))
        .program(shell_quote(&ctx.program("trng-tests")?))
        .echo(ctx.verbose)
        .start()?;
    let verdict = sys.wait_verdict(Duration::from_secs(480), "the trng-tests verdict", |s| s == "trng-tests");
    let failed = crate::harness::hosted::failed_verdicts(&sys.lines());
    let tail = sys.tail(30);
    sys.stop();
    let verdict = verdict.with_context(|| format!("trng-tests did not finish:\n{tail}"))?;
    if !verdict.passed() || !failed.is_empty() {
        bail!("trng hosted scenarios failed: {verdict}\n{}", failed.join("\n"));
    }
    eprintln!("xtask: {verdict}");
    Ok(())
}
