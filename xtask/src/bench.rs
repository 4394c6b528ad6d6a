//! Bench helpers for providers (flat JSON from a native binary or from `BENCH-JSON` lines of a
//! hosted client) and the core providers (hosted start-up, IPC). runner.rs runs them all.

use crate::hosted::{Hosted, Launch};
use crate::supervisor;
use crate::util::shell_quote;
use crate::steps::{BenchProvider, BenchResults};
use crate::xous::Flavor;
use crate::ctx::Ctx;
use anyhow::{bail, Context, Result};
use std::process::Command;
use std::time::Duration;

pub fn core_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "hosted-startup", timeout: Duration::from_secs(300), run: hosted_startup },
        BenchProvider { name: "hosted-ipc", timeout: Duration::from_secs(300), run: hosted_ipc },
    ]
}

/// Parse one line of flat JSON (key -> number) into results.
pub fn parse_flat_json(text: &str) -> Result<BenchResults> {
    let v: serde_json::Value = serde_json::from_str(text.trim()).with_context(|| format!("not JSON: {text:?}"))?;
    let obj = v.as_object().context("bench output is not a JSON object")?;
    let mut out = BenchResults::new();
    for (k, v) in obj {
        let n = v.as_f64().with_context(|| format!("bench key {k:?} is not a number: {v}"))?;
        out.insert(k.clone(), n);
    }
    Ok(out)
}

/// A native provider: runs `cmd` (timeout), which prints ONE line of flat JSON on stdout (its
/// table goes to stderr).
pub fn native_provider(cmd: &mut Command, timeout: Duration, what: &str) -> Result<BenchResults> {
    let out = supervisor::run_capture(cmd, timeout, what)?;
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{')).with_context(|| format!("{what}: no JSON line on stdout"))?;
    parse_flat_json(line)
}

/// Collect `BENCH-JSON {...}` lines from a hosted system until `count` were seen.
pub fn hosted_bench_json(sys: &mut Hosted, count: usize, timeout: Duration) -> Result<BenchResults> {
    let mut out = BenchResults::new();
    for _ in 0..count {
        let line = sys.wait_marker("BENCH-JSON", timeout)?;
        let json = line.text.split_once("BENCH-JSON").map(|x| x.1).unwrap_or("");
        out.extend(parse_flat_json(json)?);
    }
    Ok(out)
}

fn suffix(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Patched => "",
        Flavor::Stock => "_stock",
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Rounds per kernel; the two kernels alternate so machine-load drift hits both alike.
const ROUNDS: usize = 5;

/// hosted_startup_ms: kernel launch until every one of our servers is registered with xous-names
/// (the ready-probe has connected to each). Median of 5 launches per kernel, interleaved.
fn hosted_startup(ctx: &Ctx) -> Result<BenchResults> {
    let bins = ctx.xous()?.clone();
    let probe = shell_quote(&ctx.program("ready-probe")?);
    let mut samples: [Vec<f64>; 2] = [vec![], vec![]];
    for _ in 0..ROUNDS {
        for (i, flavor) in [Flavor::Patched, Flavor::Stock].into_iter().enumerate() {
            let mut l = Launch::new(&bins, flavor).echo(ctx.verbose);
            l = ctx.add_servers(l)?;
            let mut sys = l.program(probe.clone()).start()?;
            let line = sys.wait_line(Duration::from_secs(30), "HOSTED-READY", |t| t.contains("HOSTED-READY"))?;
            if line.text.contains("FAILED") {
                bail!("ready-probe: {}", line.text);
            }
            samples[i].push(line.at.duration_since(sys.started).as_secs_f64() * 1e3);
            sys.stop();
        }
    }
    let mut out = BenchResults::new();
    for (i, flavor) in [Flavor::Patched, Flavor::Stock].into_iter().enumerate() {
        out.insert(format!("hosted_startup_ms{}", suffix(flavor)), median(samples[i].clone()));
    }
    Ok(out)
}

/// ipc_scalar_rtt_us_p50 / ipc_lend_4k_rtt_us_p50 from ipc-bench + echo-server: each run reports
/// its medians; the result is the median over ROUNDS runs per kernel, the kernels interleaved.
fn hosted_ipc(ctx: &Ctx) -> Result<BenchResults> {
    let bins = ctx.xous()?.clone();
    let mut runs: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for _ in 0..ROUNDS {
        for flavor in [Flavor::Patched, Flavor::Stock] {
            let mut bench = shell_quote(&ctx.program("ipc-bench")?);
            if flavor == Flavor::Patched {
                bench.push_str(" --shutdown");
            }
            let mut sys = Launch::new(&bins, flavor)
                .program(shell_quote(&ctx.program("echo-server")?))
                .system_program(bench)
                .echo(ctx.verbose)
                .start()?;
            let r = hosted_bench_json(&mut sys, 1, Duration::from_secs(120))?;
            if flavor == Flavor::Patched {
                let st = sys.wait_exit(Duration::from_secs(10))?;
                if !st.success() {
                    bail!("patched kernel exited with {st} after the IPC bench");
                }
            } else {
                sys.stop();
            }
            for (k, v) in r {
                runs.entry(format!("{k}{}", suffix(flavor))).or_default().push(v);
            }
        }
    }
    Ok(runs.into_iter().map(|(k, v)| (k, median(v))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_json_parses_numbers() {
        let r = parse_flat_json(r#"{"a_ms": 1.5, "b": 2}"#).unwrap();
        assert_eq!(r["a_ms"], 1.5);
        assert_eq!(r["b"], 2.0);
    }

    #[test]
    fn malformed_bench_output_is_rejected_with_a_reason() {
        for (bad, why) in [
            ("not json", "not JSON"),
            ("[1, 2]", "not a JSON object"),
            (r#"{"a": "fast"}"#, "is not a number"),
            (r#"{"a": {"nested": 1}}"#, "is not a number"),
            ("", "not JSON"),
        ] {
            let e = format!("{:#}", parse_flat_json(bad).unwrap_err());
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn median_of_even_and_odd_sets() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
