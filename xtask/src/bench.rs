//! Bench helpers for providers: flat JSON from a native binary or from `BENCH-JSON` lines of a
//! hosted client, and the median. runner.rs runs the providers.

use crate::harness::hosted::Hosted;
use crate::steps::BenchResults;
use crate::supervisor;
use anyhow::{Context, Result};
use std::process::Command;
use std::time::Duration;

/// The median of a sample set (the mean of the middle two for an even count).
pub use verdict::bench::median;

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
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("{what}: no JSON line on stdout"))?;
    parse_flat_json(line)
}

/// Collect `BENCH-JSON {...}` lines from a hosted system until `count` were seen.
pub fn hosted_bench_json(sys: &mut Hosted, count: usize, timeout: Duration) -> Result<BenchResults> {
    let mut out = BenchResults::new();
    for _ in 0..count {
        let line = sys.wait_marker(verdict::bench::MARKER, timeout)?;
        out.extend(parse_flat_json(verdict::bench::json_of(&line.text).unwrap_or(""))?);
    }
    Ok(out)
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
}
