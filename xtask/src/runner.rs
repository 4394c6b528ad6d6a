//! The two runners: `cargo xtask test` (every registered step, each under its timeout, a summary
//! table) and `cargo xtask bench` (every provider, a table and flat JSON).

use crate::ctx::Ctx;
use crate::registry;
use crate::steps::{with_timeout, BenchResults, TestStep};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::time::Instant;

pub fn cmd_test(ctx: &Ctx, only: Vec<String>, skip: Vec<String>, list: bool) -> Result<()> {
    let all = registry::all_test_steps();
    if list {
        for s in &all {
            println!("{:<28} timeout {:>5} s  {}:{}", s.name, s.timeout.as_secs(), s.file, s.line);
        }
        return Ok(());
    }
    for n in only.iter().chain(skip.iter()) {
        if !all.iter().any(|s| s.name == n) {
            bail!("unknown step {n:?} (see cargo xtask test --list)");
        }
    }
    let selected: Vec<&TestStep> = all
        .iter()
        .filter(|s| (only.is_empty() || only.iter().any(|o| o == s.name)) && !skip.iter().any(|o| o == s.name))
        .collect();
    let mut results = Vec::new();
    let t_all = Instant::now();
    for s in selected {
        eprintln!("\n=== xtask test: {} (timeout {} s)", s.name, s.timeout.as_secs());
        let t0 = Instant::now();
        let c = ctx.clone();
        let run = s.run;
        let r = with_timeout(s.name, s.timeout, move || run(&c));
        let secs = t0.elapsed().as_secs_f64();
        match &r {
            Ok(()) => eprintln!("=== {}: PASS ({secs:.1} s)", s.name),
            Err(e) => eprintln!("=== {}: FAIL ({secs:.1} s): {e:#}", s.name),
        }
        results.push((s.name, r.is_ok(), secs));
        // after every step, so that a run cut short still leaves its times
        if let Err(e) = write_times(&results) {
            eprintln!("xtask: could not write {}: {e:#}", times_path().display());
        }
    }
    eprintln!("\n{:<28} {:>6} {:>9}", "step", "result", "seconds");
    for (n, ok, secs) in &results {
        eprintln!("{:<28} {:>6} {:>9.1}", n, if *ok { "PASS" } else { "FAIL" }, secs);
    }
    let failed = results.iter().filter(|r| !r.1).count();
    eprintln!("total {:.1} s; {} passed, {} failed (times: {})", t_all.elapsed().as_secs_f64(), results.len() - failed, failed, times_path().display());
    if failed > 0 {
        bail!("{failed} test step(s) failed");
    }
    Ok(())
}

/// Where `cargo xtask test` records each step's result and wall time.
pub fn times_path() -> PathBuf {
    crate::util::target_dir().join("xtask-test-times.json")
}

/// The steps run so far: `[{"step", "pass", "seconds"}, ...]` in run order.
fn write_times(results: &[(&str, bool, f64)]) -> Result<()> {
    let v: Vec<serde_json::Value> = results.iter().map(|(n, ok, s)| serde_json::json!({"step": n, "pass": ok, "seconds": (s * 10.0).round() / 10.0})).collect();
    let path = times_path();
    std::fs::create_dir_all(path.parent().unwrap())?;
    std::fs::write(&path, serde_json::to_string_pretty(&v)? + "\n")?;
    Ok(())
}

pub fn cmd_bench(ctx: &Ctx, json: Option<PathBuf>, only: Vec<String>) -> Result<()> {
    let providers = registry::all_bench_providers();
    for o in &only {
        if !providers.iter().any(|p| p.name == o) {
            bail!("unknown bench provider {o:?}; known: {:?}", providers.iter().map(|p| p.name).collect::<Vec<_>>());
        }
    }
    // Build first, outside the providers' time limits.
    ctx.xous()?;
    ctx.programs()?;
    let mut all = BenchResults::new();
    let mut failed = Vec::new();
    for p in providers.iter().filter(|p| only.is_empty() || only.iter().any(|o| o == p.name)) {
        eprintln!("xtask bench: {} ...", p.name);
        let c = ctx.clone();
        let run = p.run;
        match with_timeout(p.name, p.timeout, move || run(&c)) {
            Ok(r) => {
                for k in r.keys() {
                    if all.contains_key(k) {
                        eprintln!("xtask bench: warning: key {k} reported twice; keeping the later value");
                    }
                }
                all.extend(r);
            }
            Err(e) => {
                eprintln!("xtask bench: provider {} FAILED: {e:#}", p.name);
                failed.push(p.name);
            }
        }
    }
    let w = all.keys().map(|k| k.len()).max().unwrap_or(10).max(10);
    println!("{:<w$}  {:>14}", "key", "value");
    println!("{}", "-".repeat(w + 16));
    for (k, v) in &all {
        println!("{:<w$}  {:>14.3}", k, v);
    }
    if let Some(path) = json {
        let obj: serde_json::Map<String, serde_json::Value> =
            all.iter().map(|(k, v)| (k.clone(), serde_json::json!(v))).collect();
        std::fs::write(&path, serde_json::to_string_pretty(&serde_json::Value::Object(obj))? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("xtask bench: wrote {}", path.display());
    }
    if !failed.is_empty() {
        bail!("bench providers failed: {failed:?}");
    }
    Ok(())
}
