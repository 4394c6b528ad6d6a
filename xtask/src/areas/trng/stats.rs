//! rngtest (FIPS 140-2 blocks) and ent over one stream at once, their parsers and the gates.

use super::tester::{spawn_tool, Tester};
use super::types::Source;
use crate::supervisor;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Figures from rngtest and ent over one stream.
#[derive(Clone, Debug, Default)]
pub struct Stat {
    pub bytes: u64,
    pub seconds: f64,
    pub fips_successes: u64,
    pub fips_failures: u64,
    pub entropy: f64,
    pub chi_square: f64,
    pub mean: f64,
    pub pi: f64,
    pub serial_correlation: f64,
}

impl Stat {
    pub fn fips_failure_ratio(&self) -> f64 {
        let n = self.fips_successes + self.fips_failures;
        if n == 0 {
            1.0
        } else {
            self.fips_failures as f64 / n as f64
        }
    }
}

fn rngtest_count(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.split_once(key).and_then(|(_, v)| v.trim().parse().ok()))
}

/// `ent -t` output: header line, then "1,bytes,entropy,chi,mean,pi,serial".
pub fn parse_ent(text: &str) -> Option<(f64, f64, f64, f64, f64)> {
    let l = text.lines().find(|l| l.starts_with("1,"))?;
    let f: Vec<f64> = l.split(',').skip(2).filter_map(|x| x.trim().parse().ok()).collect();
    (f.len() >= 5).then(|| (f[0], f[1], f[2], f[3], f[4]))
}

/// Stream `bytes` of `source` into rngtest and ent at once (tee), parse both.
pub fn run_stats(tester: &Tester, source: Source, bytes: u64, dir: &Path, timeout: Duration) -> Result<Stat> {
    let t0 = Instant::now();
    let tag = source.name();
    let stats_path = dir.join(format!("tool-stats-{tag}.json"));
    let mut tool = spawn_tool(
        &tester.py,
        tester.port,
        source,
        Some(bytes),
        &stats_path,
        File::create(dir.join(format!("tool-stats-{tag}.log")))?,
    )?;
    let mut src = tool.stdout.take().unwrap();
    let rng_out = dir.join(format!("rngtest-{tag}.txt"));
    let ent_out = dir.join(format!("ent-{tag}.txt"));
    let mut rng = supervisor::spawn_grouped(
        Command::new("rngtest")
            .stdin(Stdio::piped())
            .stdout(File::create(&rng_out)?)
            .stderr(File::create(&rng_out.with_extension("log"))?),
    )?;
    let mut ent = supervisor::spawn_grouped(
        Command::new("ent").arg("-t").stdin(Stdio::piped()).stdout(File::create(&ent_out)?).stderr(Stdio::null()),
    )?;
    let (mut a, mut b) = (rng.stdin.take().unwrap(), ent.stdin.take().unwrap());
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 1 << 20];
    let copy = (|| -> Result<u64> {
        let mut n = 0u64;
        loop {
            let k = src.read(&mut buf)?;
            if k == 0 {
                return Ok(n);
            }
            a.write_all(&buf[..k]).context("writing to rngtest")?;
            b.write_all(&buf[..k]).context("writing to ent")?;
            n += k as u64;
            if Instant::now() > deadline {
                bail!("rngtest/ent stream of {tag}: timed out after {timeout:?}");
            }
        }
    })();
    drop((a, b));
    let tst = supervisor::wait_timeout(&mut tool, Duration::from_secs(30), "trng_test.py")?;
    let rst = supervisor::wait_timeout(&mut rng, Duration::from_secs(120), "rngtest")?;
    let est = supervisor::wait_timeout(&mut ent, Duration::from_secs(120), "ent")?;
    let n = copy?;
    if !tst.success() {
        bail!(
            "trng_test.py --source {tag} exited {tst}: {}",
            std::fs::read_to_string(dir.join(format!("tool-stats-{tag}.log"))).unwrap_or_default().trim()
        );
    }
    if n != bytes {
        bail!("stream of {tag}: got {n} bytes, wanted {bytes}");
    }
    let _ = rst; // rngtest exits 1 whenever any block failed; its counts are judged below
    if !est.success() {
        bail!("ent exited {est}");
    }
    let rt = std::fs::read_to_string(rng_out.with_extension("log"))?;
    let (entropy, chi_square, mean, pi, serial_correlation) =
        parse_ent(&std::fs::read_to_string(&ent_out)?).context("cannot parse ent -t output")?;
    Ok(Stat {
        bytes: n,
        seconds: t0.elapsed().as_secs_f64(),
        fips_successes: rngtest_count(&rt, "FIPS 140-2 successes:").context("cannot parse rngtest output")?,
        fips_failures: rngtest_count(&rt, "FIPS 140-2 failures:").context("cannot parse rngtest output")?,
        entropy,
        chi_square,
        mean,
        pi,
        serial_correlation,
    })
}

/// Gates for rngtest/ent. Ideal data: ~0.08% FIPS blocks fail; entropy -> 8 bits/byte.
pub const MAX_FIPS_FAILURE_RATIO: f64 = 0.005;
pub const MIN_ENTROPY_BITS_PER_BYTE: f64 = 7.99;

pub fn judge_stat(s: &Stat) -> Option<String> {
    let r = s.fips_failure_ratio();
    if r > MAX_FIPS_FAILURE_RATIO {
        return Some(format!(
            "rngtest: {:.3}% of FIPS 140-2 blocks failed (limit {:.1}%)",
            r * 100.0,
            MAX_FIPS_FAILURE_RATIO * 100.0
        ));
    }
    if s.entropy < MIN_ENTROPY_BITS_PER_BYTE {
        return Some(format!("ent: entropy {:.6} bits/byte < {MIN_ENTROPY_BITS_PER_BYTE}", s.entropy));
    }
    None
}

pub fn stat_json(s: &Stat) -> Value {
    json!({
        "bytes": s.bytes, "seconds": s.seconds, "mb_s": s.bytes as f64 / s.seconds.max(1e-9) / 1e6,
        "rngtest": {"successes": s.fips_successes, "failures": s.fips_failures, "failure_ratio": s.fips_failure_ratio()},
        "ent": {"entropy_bits_per_byte": s.entropy, "chi_square": s.chi_square, "mean": s.mean,
                "monte_carlo_pi": s.pi, "serial_correlation": s.serial_correlation},
        "verdict": judge_stat(s).unwrap_or_else(|| "pass".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ent_terse() {
        let t = "0,File-bytes,Entropy,Chi-square,Mean,Monte-Carlo-Pi,Serial-Correlation\n1,2000000,7.999917,229.017856,127.466745,3.145095,0.000048\n";
        let (e, chi, m, pi, sc) = parse_ent(t).unwrap();
        assert!((e - 7.999917).abs() < 1e-9 && (chi - 229.017856).abs() < 1e-6 && m > 127.0 && pi > 3.1 && sc < 0.001);
        assert!(parse_ent("garbage").is_none());
    }

    #[test]
    fn stat_gates() {
        let mut s = Stat { fips_successes: 9990, fips_failures: 10, entropy: 7.9999, ..Default::default() };
        assert!(judge_stat(&s).is_none());
        s.fips_failures = 100;
        assert!(judge_stat(&s).unwrap().contains("rngtest"));
        s.fips_failures = 10;
        s.entropy = 7.5;
        assert!(judge_stat(&s).unwrap().contains("ent"));
    }
}
