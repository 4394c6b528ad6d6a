//! The report of a `trng-test` run: dieharder.txt (every process's output), summary.json and the
//! one-line verdict.

use super::dieharder::{count, DhLine, DhRun};
use super::stats::{judge_stat, stat_json, Stat};
use super::types::{Level, Source};
use crate::util;
use anyhow::Result;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub fn default_report(source: Source) -> PathBuf {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    util::target_dir().join("trng-test").join(format!("{}-{t}", source.name()))
}

fn summarize(source: Source, level: Option<Level>, runs: &[DhRun], stat: Option<&Stat>, seconds: f64) -> (Value, bool) {
    let all: Vec<DhLine> = runs.iter().flat_map(|r| r.lines.clone()).collect();
    let c = count(&all);
    let bytes: u64 = runs.iter().map(|r| r.bytes).sum::<u64>() + stat.map(|s| s.bytes).unwrap_or(0);
    let errors: Vec<String> =
        runs.iter().filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.test.label))).collect();
    let stat_verdict = stat.and_then(judge_stat);
    let ok = c.failed == 0 && errors.is_empty() && stat_verdict.is_none();
    let v = json!({
        "source": source.name(),
        "dieharder_level": level.map(|l| format!("{l:?}").to_lowercase()),
        "dieharder_processes": runs.len(),
        "tests_run": all.len(),
        "passed": c.passed, "weak": c.weak, "failed": c.failed,
        "bytes": bytes,
        "seconds": seconds,
        "rate_mb_s": bytes as f64 / seconds.max(1e-9) / 1e6,
        "errors": errors,
        "processes": runs.iter().map(|r| {
            let c = count(&r.lines);
            json!({"label": r.test.label, "args": r.test.args, "bytes": r.bytes, "seconds": r.seconds,
                   "passed": c.passed, "weak": c.weak, "failed": c.failed, "error": r.error,
                   "tests": r.lines.iter().map(|l| json!({"name": l.name, "ntup": l.ntup, "psamples": l.psamples,
                            "pvalue": l.pvalue, "assessment": l.assessment})).collect::<Vec<_>>()})
        }).collect::<Vec<_>>(),
        "stats": stat.map(stat_json),
        "pass": ok,
    });
    (v, ok)
}

/// dieharder.txt (all processes' output) + summary.json; prints the one-line verdict.
pub fn write_report(
    dir: &Path,
    source: Source,
    level: Option<Level>,
    runs: &[DhRun],
    stat: Option<&Stat>,
    seconds: f64,
) -> Result<bool> {
    let (summary, ok) = summarize(source, level, runs, stat, seconds);
    if !runs.is_empty() {
        let text: String = runs
            .iter()
            .map(|r| std::fs::read_to_string(dir.join(format!("dieharder-{}.txt", r.test.label))).unwrap_or_default())
            .collect();
        std::fs::write(dir.join("dieharder.txt"), text)?;
    }
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&summary)? + "\n")?;
    eprintln!(
        "xtask: trng-test {}: {} tests, PASSED {} WEAK {} FAILED {}, {:.1} MB in {:.1} s ({:.1} MB/s){} -> {}",
        source.name(),
        summary["tests_run"],
        summary["passed"],
        summary["weak"],
        summary["failed"],
        summary["bytes"].as_u64().unwrap_or(0) as f64 / 1e6,
        summary["seconds"].as_f64().unwrap_or(0.0),
        summary["rate_mb_s"].as_f64().unwrap_or(0.0),
        summary["stats"]["verdict"].as_str().map(|v| format!(", rngtest/ent: {v}")).unwrap_or_default(),
        dir.join("summary.json").display()
    );
    Ok(ok)
}
