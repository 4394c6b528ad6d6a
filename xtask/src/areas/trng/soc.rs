//! The TRNG in the benchmark SoC (gateware/trng/soc.py beside the engine in gateware/soc;
//! docs/trng-gateware.md "SoC"): test step `trng:soc` and bench provider `trng-soc`.
//!
//! * `trng:soc` — the SoC's TRNG pages and interrupts are the spec's (pytest
//!   gateware/trng/tests/test_trng_soc.py over the SoC's csr.csv), then the firmware's TRNG phase
//!   (firmware/soc-bench, feature `trng-only`, libs/trng-driver) must pass: poison word and no
//!   valid bit before enabling, both ports deliver, every word taken with its valid bit, none
//!   twice, no health failure. Its verdict line (subject soc-trng) carries the throughput. A
//!   firmware that takes port words without their valid bits (`fault-trng-ignore-valid`) must
//!   fail.
//! * bench provider `trng-soc`: `soc_trng_words_per_kcycle` (conditioned words per 1,000 CPU
//!   cycles, both ports read in turn, continuously) and `soc_trng_first_word_cycles` (enable to
//!   the first conditioned word: start-up test, seeding, one block).

use crate::build::gateware;
use crate::ctx::Ctx;
use crate::harness::soc::{build_firmware, build_soc, run_firmware_as, RUN_TIMEOUT};
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use anyhow::{anyhow, bail, Result};
use std::time::Duration;
use verdict::Verdict;

/// The firmware's verdict subject in its TRNG phase (firmware/soc-bench/src/trng.rs).
const SUBJECT: &str = "soc-trng";
const FEATURE: &str = "trng-only";

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("trng:soc", 50 * 60, test)]
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "trng-soc", timeout: Duration::from_secs(50 * 60), run: |_| bench(false) }]
}

struct Figures {
    words: u64,
    cycles: u64,
    words_per_kcycle: f64,
    first_word_cycles: u64,
    empty_reads: u64,
}

fn figures(v: &Verdict) -> Result<Figures> {
    let n = |k: &str| v.num(k).ok_or_else(|| anyhow!("soc-trng verdict has no {k}: {v}"));
    let wpk: f64 = v
        .get("words_per_kcycle")
        .ok_or_else(|| anyhow!("soc-trng verdict has no words_per_kcycle: {v}"))?
        .parse()
        .map_err(|_| anyhow!("soc-trng verdict: words_per_kcycle is not a number: {v}"))?;
    let f = Figures {
        words: n("words")?,
        cycles: n("cycles")?,
        words_per_kcycle: wpk,
        first_word_cycles: n("first_word_cycles")?,
        empty_reads: n("empty_reads")?,
    };
    // the firmware's own ratio must agree with its counts (two decimals, truncated)
    let expect = (f.words * 100_000 / f.cycles.max(1)) as f64 / 100.0;
    if (expect - f.words_per_kcycle).abs() > 0.005 {
        bail!(
            "soc-trng verdict: words_per_kcycle {} does not match words {} / cycles {}",
            f.words_per_kcycle,
            f.words,
            f.cycles
        );
    }
    if n("kernel_words")? == 0 || n("server_words")? == 0 {
        bail!("soc-trng: one port delivered nothing: {v}");
    }
    Ok(f)
}

fn run(verbose: bool) -> Result<Figures> {
    let soc = build_soc(verbose)?;
    let elf = build_firmware(&soc, &[FEATURE], verbose)?;
    let v = run_firmware_as(&soc, &elf, FEATURE, SUBJECT, RUN_TIMEOUT, verbose)?;
    let f = figures(&v)?;
    eprintln!(
        "trng in the SoC: {} words in {} CPU cycles = {:.2} words/kcycle (both ports in turn, {} empty reads), first word {} cycles after enable",
        f.words, f.cycles, f.words_per_kcycle, f.empty_reads, f.first_word_cycles
    );
    Ok(f)
}

fn bench(verbose: bool) -> Result<BenchResults> {
    let f = run(verbose)?;
    let mut r = BenchResults::new();
    r.insert("soc_trng_words_per_kcycle".into(), f.words_per_kcycle);
    r.insert("soc_trng_first_word_cycles".into(), f.first_word_cycles as f64);
    Ok(r)
}

fn test(ctx: &Ctx) -> Result<()> {
    let soc = build_soc(ctx.verbose)?;
    gateware::pytest(
        ctx.verbose,
        &["trng/tests/test_trng_soc.py"],
        &[],
        &[("SOC_BUILD_DIR", &soc.dir)],
        Duration::from_secs(10 * 60),
    )?;
    run(ctx.verbose)?;
    // bad input: a firmware that takes port words without their valid bit must fail
    let bad = build_firmware(&soc, &[FEATURE, "fault-trng-ignore-valid"], ctx.verbose)?;
    match run_firmware_as(&soc, &bad, "fault-trng-ignore-valid", SUBJECT, RUN_TIMEOUT, ctx.verbose) {
        Ok(v) => bail!("a firmware that ignores the valid bits passed: {v}"),
        Err(e) if format!("{e:#}").contains("delivered twice") => {
            eprintln!("xtask: words taken without their valid bit rejected (poison word twice, firmware verdict FAIL)")
        }
        Err(e) => bail!("ignored valid bits: the run failed, but not on the repeated word: {e:#}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_a_verdict() {
        let v = Verdict::parse("VERDICT soc-trng PASS words=512 kernel_words=256 server_words=256 cycles=40000 empty_reads=9 first_word_cycles=5000 words_per_kcycle=12.80")
            .unwrap()
            .unwrap();
        let f = figures(&v).unwrap();
        assert_eq!(f.words_per_kcycle, 12.8);
        for bad in [
            "VERDICT soc-trng PASS words=512 kernel_words=256 server_words=256 cycles=40000 empty_reads=9 first_word_cycles=5000 words_per_kcycle=99.00",
            "VERDICT soc-trng PASS words=512 kernel_words=512 server_words=0 cycles=40000 empty_reads=9 first_word_cycles=5000 words_per_kcycle=12.80",
            "VERDICT soc-trng PASS words=512 cycles=40000",
        ] {
            assert!(figures(&Verdict::parse(bad).unwrap().unwrap()).is_err(), "{bad}");
        }
    }
}
