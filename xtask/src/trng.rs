//! `cargo xtask trng-test`: the TRNG server's tester, streamed by tools/trng_test.py into
//! dieharder (and rngtest/ent), with a report. Also the TRNG step of `cargo xtask test` and the
//! `trng_stream_mb_s` bench provider. Protocol: docs/trng-tester-protocol.md.
//!
//! Pipeline per dieharder test (one process per test, each fed by its own tester connection):
//!   hosted kernel + trng server (tester on 127.0.0.1:PORT)
//!     -> python3 tools/trng_test.py --port PORT --source S   (verified buffers, stdout)
//!     -> dieharder -g 200 -d N [-n M]                         (stdin, closes it when done)
//! No `-Y 1`: its ambiguity resolution adds psamples until a marginal p-value settles, which has
//! no bound (one d205 run consumed 62 GB). We gate on FAILED only and report WEAK, so every
//! process reads a bounded, predictable amount.
//! The tool exits 0 when dieharder closes the pipe; its --stats-json says how many bytes went in.

use crate::bench;
use crate::supervisor;
use crate::hosted::{Hosted, Launch};
use crate::util::shell_quote;
use crate::setup;
use crate::steps::{BenchProvider, BenchResults, TestStep};
use crate::util;
use crate::xous::Flavor;
use crate::ctx::Ctx;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Tester sources (names as in spec/trng.toml [tester.modes] and the tool's --source).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Cprng,
    Av,
    Ro,
    Both,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Cprng => "cprng",
            Source::Av => "av",
            Source::Ro => "ro",
            Source::Both => "both",
        }
    }
}

/// How much of dieharder to run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// A few fast tests (~30 s): smoke level.
    Quick,
    /// The CI subset (docs/trng-tester-protocol.md), one process per test.
    Ci,
    /// `dieharder -a` (about an hour and ~250 GB of input).
    Full,
}

/// The `cargo xtask` subcommands of this module (flattened into main.rs's Cmd).
#[derive(clap::Subcommand, Debug)]
pub enum TrngCmd {
    /// Stream the TRNG server's tester (hosted) through tools/trng_test.py into dieharder
    /// (--dieharder quick|ci|full) or rngtest + ent, and write a report (docs/trng-tester-protocol.md).
    TrngTest(TrngTestArgs),
}

pub fn run(ctx: &Ctx, c: TrngCmd) -> Result<()> {
    match c {
        TrngCmd::TrngTest(a) => trng_test(ctx, &a),
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

// ------------------------------------------------------------------------------------------
// dieharder test lists

/// One dieharder process: its arguments after `-g 200`.
#[derive(Clone, Debug)]
pub struct DhTest {
    pub label: String,
    pub args: Vec<String>,
}

fn dh(d: u32, n: Option<u32>) -> DhTest {
    let mut args = vec!["-d".to_string(), d.to_string()];
    let mut label = format!("d{d}");
    if let Some(n) = n {
        args.extend(["-n".to_string(), n.to_string()]);
        label.push_str(&format!("n{n}"));
    }
    DhTest { label, args }
}

/// The test processes of a level. CI: the subset measured for CI (245 s / 7.1 GB measured there;
/// 5, 6, 7 are suspect, 14 is not to be used, 17 is slow, 203 is huge).
pub fn tests_for(level: Level) -> Vec<DhTest> {
    match level {
        Level::Quick => [0u32, 1, 3, 8, 100].iter().map(|&d| dh(d, None)).chain([dh(200, Some(2))]).collect(),
        Level::Ci => {
            let mut v: Vec<DhTest> =
                [0u32, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 15, 16, 100, 101, 102].iter().map(|&d| dh(d, None)).collect();
            v.extend((1..=4).map(|n| dh(200, Some(n))));
            v.push(dh(201, Some(2)));
            v.push(dh(202, Some(3)));
            v.extend([204u32, 205, 206, 207, 208, 209].iter().map(|&d| dh(d, None)));
            v
        }
        Level::Full => vec![DhTest { label: "all".into(), args: vec!["-a".into()] }],
    }
}

/// One assessment line of dieharder's table.
#[derive(Clone, Debug, PartialEq)]
pub struct DhLine {
    pub name: String,
    pub ntup: u32,
    pub tsamples: u64,
    pub psamples: u64,
    pub pvalue: f64,
    pub assessment: String,
}

/// Parse dieharder's result table. (Run with `-Y 1`, dieharder re-runs an ambiguous test with
/// more psamples and prints it again: for each test name only the lines with its largest psamples
/// count are kept, so reports from either mode parse.)
pub fn parse_dieharder(text: &str) -> Vec<DhLine> {
    let mut all = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('|').map(|s| s.trim()).collect();
        if f.len() != 6 || !matches!(f[5], "PASSED" | "WEAK" | "FAILED") {
            continue;
        }
        let (Ok(ntup), Ok(ts), Ok(ps), Ok(p)) = (f[1].parse(), f[2].parse(), f[3].parse(), f[4].parse()) else {
            continue;
        };
        all.push(DhLine {
            name: f[0].to_string(),
            ntup,
            tsamples: ts,
            psamples: ps,
            pvalue: p,
            assessment: f[5].to_string(),
        });
    }
    let max_ps = |name: &str| all.iter().filter(|l| l.name == name).map(|l| l.psamples).max().unwrap_or(0);
    all.iter().filter(|l| l.psamples == max_ps(&l.name)).cloned().collect()
}

#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub passed: u32,
    pub weak: u32,
    pub failed: u32,
}

pub fn count(lines: &[DhLine]) -> Counts {
    let mut c = Counts::default();
    for l in lines {
        match l.assessment.as_str() {
            "PASSED" => c.passed += 1,
            "WEAK" => c.weak += 1,
            _ => c.failed += 1,
        }
    }
    c
}

// ------------------------------------------------------------------------------------------
// external tools

/// dieharder, rngtest (rng-tools5) and ent from Debian: installed when missing (as root),
/// otherwise the exact apt-get command is printed and we fail.
pub fn ensure_tools() -> Result<()> {
    setup::require_apt(&["dieharder", "rng-tools5", "ent"])
}

fn tool_path() -> PathBuf {
    util::root().join("tools").join("trng_test.py")
}

// ------------------------------------------------------------------------------------------
// the tester (hosted system or an external one)

/// A running tester: the hosted system (kernel + base services + trng) or just a port.
pub struct Tester {
    pub port: u16,
    pub hosted: Option<Hosted>,
    /// The project's venv python (tools/requirements.txt) that runs the tool.
    pub py: PathBuf,
}

impl Tester {
    /// Build and start the hosted system with the TRNG server; wait for its tester's port file.
    pub fn start(ctx: &Ctx, work: &Path, feed: &str) -> Result<Tester> {
        let py = setup::venv()?;
        let bins = ctx.xous()?;
        let trng = ctx.program("trng")?;
        std::fs::create_dir_all(work)?;
        let portfile = work.join("tester.port");
        let _ = std::fs::remove_file(&portfile);
        let mut sys = Launch::new(&bins, Flavor::Patched)
            .env("TRNG_TESTER_PORT", "0")
            .env("TRNG_TESTER_PORTFILE", portfile.display().to_string())
            .program(format!("{} --source {}", shell_quote(&trng), shell_quote(Path::new(feed))))
            .echo(ctx.verbose)
            .start()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&portfile) {
                if let Some(p) = text.strip_suffix('\n').and_then(|t| t.trim().parse::<u16>().ok()) {
                    break p;
                }
            }
            if let Some(st) = sys.try_status()? {
                bail!("hosted system exited ({st}) before the TRNG tester listened:\n{}", sys.tail(30));
            }
            if Instant::now() > deadline {
                bail!("the TRNG tester wrote no port file ({}) within 60 s:\n{}", portfile.display(), sys.tail(30));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Ok(Tester { port, hosted: Some(sys), py })
    }

    pub fn external(port: u16) -> Result<Tester> {
        Ok(Tester { port, hosted: None, py: setup::venv()? })
    }

    /// Fails when the hosted system died meanwhile (then its output tail is in the error).
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(h) = self.hosted.as_mut() {
            if let Some(st) = h.try_status()? {
                bail!("hosted system exited ({st}):\n{}", h.tail(30));
            }
        }
        Ok(())
    }

    pub fn stop(&mut self, log: Option<&Path>) {
        if let Some(mut h) = self.hosted.take() {
            h.stop();
            if let Some(p) = log {
                let _ = std::fs::write(p, h.lines().join("\n") + "\n");
            }
        }
    }
}

/// The tool as a child process (own process group), stdout piped, stats to `stats`.
fn spawn_tool(py: &Path, port: u16, source: Source, limit: Option<u64>, stats: &Path, stderr: File) -> Result<std::process::Child> {
    let mut cmd = Command::new(py);
    cmd.arg(tool_path())
        .args(["--quiet", "--timeout", "30", "--retries", "5", "--source", source.name()])
        .args(["--port", &port.to_string()])
        .arg("--stats-json")
        .arg(stats)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    if let Some(n) = limit {
        cmd.args(["--bytes", &n.to_string()]);
    }
    supervisor::spawn_grouped(&mut cmd)
}

fn read_stats(path: &Path) -> Value {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

/// Result of one dieharder process.
#[derive(Clone, Debug)]
pub struct DhRun {
    pub test: DhTest,
    pub lines: Vec<DhLine>,
    pub bytes: u64,
    pub seconds: f64,
    pub error: Option<String>,
}

/// Run one dieharder process fed by its own tool stream.
pub fn run_one(py: &Path, port: u16, source: Source, t: &DhTest, dir: &Path, timeout: Duration) -> DhRun {
    let t0 = Instant::now();
    let out_path = dir.join(format!("dieharder-{}.txt", t.label));
    let stats_path = dir.join(format!("tool-{}.json", t.label));
    let res = (|| -> Result<(Vec<DhLine>, Option<String>)> {
        let tool_log = File::create(dir.join(format!("tool-{}.log", t.label)))?;
        let mut tool = spawn_tool(py, port, source, None, &stats_path, tool_log)?;
        let pipe = tool.stdout.take().unwrap();
        let out = File::create(&out_path)?;
        let mut cmd = Command::new("dieharder");
        cmd.args(["-g", "200"]).args(&t.args).stdin(pipe).stdout(out.try_clone()?).stderr(out);
        let mut d = supervisor::spawn_grouped(&mut cmd)?;
        drop(cmd); // the Command still holds the pipe's read end: close ours so the tool sees EPIPE
        let st = supervisor::wait_timeout(&mut d, timeout, &format!("dieharder {}", t.args.join(" ")));
        // dieharder closed its stdin: the tool sees EPIPE and exits 0.
        let tst = supervisor::wait_timeout(&mut tool, Duration::from_secs(60), "trng_test.py");
        let st = st?;
        let tst = tst?;
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        let lines = parse_dieharder(&text);
        let mut err = None;
        if !st.success() {
            err = Some(format!("dieharder exited {st}"));
        } else if !tst.success() {
            err = Some(format!("trng_test.py exited {tst} (see tool-{}.log)", t.label));
        } else if lines.is_empty() {
            err = Some("no assessment lines in dieharder's output".into());
        }
        Ok((lines, err))
    })();
    let stats = read_stats(&stats_path);
    let bytes = stats.get("bytes").and_then(Value::as_u64).unwrap_or(0);
    let (lines, error) = match res {
        Ok(v) => v,
        Err(e) => (vec![], Some(format!("{e:#}"))),
    };
    DhRun { test: t.clone(), lines, bytes, seconds: t0.elapsed().as_secs_f64(), error }
}

/// Run `tests` (repeated until `min_bytes` consumed), `jobs` at a time.
pub fn run_dieharder(tester: &mut Tester, source: Source, tests: &[DhTest], min_bytes: u64, jobs: usize, dir: &Path, timeout: Duration) -> Result<Vec<DhRun>> {
    let mut runs: Vec<DhRun> = Vec::new();
    let mut total = 0u64;
    let mut round = 0;
    while round == 0 || total < min_bytes {
        round += 1;
        let round_tests: Vec<DhTest> = tests
            .iter()
            .map(|t| {
                let mut t = t.clone();
                if round > 1 {
                    t.label = format!("{}-r{round}", t.label);
                }
                t
            })
            .collect();
        for chunk in round_tests.chunks(jobs) {
            tester.check_alive()?;
            let (port, py) = (tester.port, tester.py.as_path());
            let results: Vec<DhRun> = std::thread::scope(|s| {
                let hs: Vec<_> = chunk.iter().map(|t| s.spawn(move || run_one(py, port, source, t, dir, timeout))).collect();
                hs.into_iter().map(|h| h.join().expect("dieharder runner panicked")).collect()
            });
            for r in results {
                let c = count(&r.lines);
                eprintln!(
                    "xtask: dieharder {:<8} {:>6.1} s {:>7.1} MB  PASSED {:>2} WEAK {} FAILED {}{}",
                    r.test.label,
                    r.seconds,
                    r.bytes as f64 / 1e6,
                    c.passed,
                    c.weak,
                    c.failed,
                    r.error.as_ref().map(|e| format!("  ERROR: {e}")).unwrap_or_default()
                );
                total += r.bytes;
                runs.push(r);
            }
        }
        if total == 0 {
            break; // nothing flowed at all: the errors say why; do not loop forever
        }
    }
    Ok(runs)
}

// ------------------------------------------------------------------------------------------
// rngtest + ent

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
        if n == 0 { 1.0 } else { self.fips_failures as f64 / n as f64 }
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
    let mut tool = spawn_tool(&tester.py, tester.port, source, Some(bytes), &stats_path, File::create(dir.join(format!("tool-stats-{tag}.log")))?)?;
    let mut src = tool.stdout.take().unwrap();
    let rng_out = dir.join(format!("rngtest-{tag}.txt"));
    let ent_out = dir.join(format!("ent-{tag}.txt"));
    let mut rng = supervisor::spawn_grouped(
        Command::new("rngtest").stdin(Stdio::piped()).stdout(File::create(&rng_out)?).stderr(File::create(&rng_out.with_extension("log"))?),
    )?;
    let mut ent = supervisor::spawn_grouped(Command::new("ent").arg("-t").stdin(Stdio::piped()).stdout(File::create(&ent_out)?).stderr(Stdio::null()))?;
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
        bail!("trng_test.py --source {tag} exited {tst}: {}", std::fs::read_to_string(dir.join(format!("tool-stats-{tag}.log"))).unwrap_or_default().trim());
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
        return Some(format!("rngtest: {:.3}% of FIPS 140-2 blocks failed (limit {:.1}%)", r * 100.0, MAX_FIPS_FAILURE_RATIO * 100.0));
    }
    if s.entropy < MIN_ENTROPY_BITS_PER_BYTE {
        return Some(format!("ent: entropy {:.6} bits/byte < {MIN_ENTROPY_BITS_PER_BYTE}", s.entropy));
    }
    None
}

fn stat_json(s: &Stat) -> Value {
    json!({
        "bytes": s.bytes, "seconds": s.seconds, "mb_s": s.bytes as f64 / s.seconds.max(1e-9) / 1e6,
        "rngtest": {"successes": s.fips_successes, "failures": s.fips_failures, "failure_ratio": s.fips_failure_ratio()},
        "ent": {"entropy_bits_per_byte": s.entropy, "chi_square": s.chi_square, "mean": s.mean,
                "monte_carlo_pi": s.pi, "serial_correlation": s.serial_correlation},
        "verdict": judge_stat(s).unwrap_or_else(|| "pass".into()),
    })
}

// ------------------------------------------------------------------------------------------
// entry points

fn default_report(source: Source) -> PathBuf {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    util::target_dir().join("trng-test").join(format!("{}-{t}", source.name()))
}

fn summarize(source: Source, level: Option<Level>, runs: &[DhRun], stat: Option<&Stat>, seconds: f64) -> (Value, bool) {
    let all: Vec<DhLine> = runs.iter().flat_map(|r| r.lines.clone()).collect();
    let c = count(&all);
    let bytes: u64 = runs.iter().map(|r| r.bytes).sum::<u64>() + stat.map(|s| s.bytes).unwrap_or(0);
    let errors: Vec<String> = runs.iter().filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.test.label))).collect();
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
            Some(level) => Ok((run_dieharder(&mut tester, a.source, &tests_for(level), a.bytes, a.jobs as usize, &dir, timeout)?, None)),
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

/// dieharder.txt (all processes' output) + summary.json; prints the one-line verdict.
fn write_report(dir: &Path, source: Source, level: Option<Level>, runs: &[DhRun], stat: Option<&Stat>, seconds: f64) -> Result<bool> {
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

/// Steps of `cargo xtask test` (listed in registry.rs).
pub fn test_steps() -> Vec<TestStep> {
    vec![
        TestStep { name: "trng:dieharder-ci", timeout: Duration::from_secs(40 * 60), run: ci_dieharder },
        TestStep { name: "trng:raw-models", timeout: Duration::from_secs(15 * 60), run: ci_raw_models },
        TestStep { name: "trng:hosted-scenarios", timeout: Duration::from_secs(10 * 60), run: ci_scenarios },
    ]
}

/// The dieharder CI subset on the conditioned stream: 0 FAILED, at least 1 GiB consumed.
fn ci_dieharder(ctx: &Ctx) -> Result<()> {
    ensure_tools()?;
    let dir = util::target_dir().join("trng-test").join("ci-cprng");
    std::fs::create_dir_all(&dir)?;
    let t0 = Instant::now();
    let mut tester = Tester::start(ctx, &dir, "hosted-os")?;
    let runs = run_dieharder(&mut tester, Source::Cprng, &tests_for(Level::Ci), 1 << 30, 1, &dir, Duration::from_secs(900));
    tester.stop(Some(&dir.join("hosted.log")));
    let runs = runs?;
    if !write_report(&dir, Source::Cprng, Some(Level::Ci), &runs, None, t0.elapsed().as_secs_f64())? {
        bail!("dieharder CI subset on the conditioned stream failed: see {}", dir.join("summary.json").display());
    }
    Ok(())
}

/// rngtest + ent over 64 MiB of each raw source model (av, ro) from the model-fed server.
fn ci_raw_models(ctx: &Ctx) -> Result<()> {
    ensure_tools()?;
    let dir = util::target_dir().join("trng-test").join("ci-raw");
    std::fs::create_dir_all(&dir)?;
    let mut tester = Tester::start(ctx, &dir, "model")?;
    let res = (|| -> Result<Vec<String>> {
        let mut failures = Vec::new();
        for src in [Source::Av, Source::Ro] {
            let s = run_stats(&tester, src, 64 << 20, &dir, Duration::from_secs(600))?;
            std::fs::write(dir.join(format!("summary-{}.json", src.name())), serde_json::to_string_pretty(&stat_json(&s))? + "\n")?;
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
fn ci_scenarios(ctx: &Ctx) -> Result<()> {
    let bins = ctx.xous()?;
    let mut sys = Launch::new(bins, Flavor::Patched)
        .env("TRNG_TESTER", "0")
        .program(format!("{} --source model", shell_quote(&ctx.program("trng")?)))
        .program(shell_quote(&ctx.program("trng-tests")?))
        .echo(ctx.verbose)
        .start()?;
    let line = sys.wait_marker("SMOKE-DONE", Duration::from_secs(480));
    let failed: Vec<String> = sys.lines().into_iter().filter(|l| l.contains("SMOKE-FAIL") || l.contains("panicked")).collect();
    let tail = sys.tail(30);
    sys.stop();
    let line = line.with_context(|| format!("trng-tests did not finish:\n{tail}"))?;
    if !line.text.contains("fail=0") || !failed.is_empty() {
        bail!("trng hosted scenarios failed: {}\n{}", line.text, failed.join("\n"));
    }
    eprintln!("xtask: {}", line.text.trim());
    Ok(())
}

/// Bench providers (listed in registry.rs).
pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "trng-stream", timeout: Duration::from_secs(600), run: bench_stream },
        BenchProvider { name: "trng-ipc", timeout: Duration::from_secs(600), run: bench_ipc },
    ]
}

/// `trng_stream_mb_s`: tools/trng_test.py streaming 256 MiB of conditioned output from the
/// hosted tester to stdout (/dev/null); the tool times its own streaming loop.
fn bench_stream(ctx: &Ctx) -> Result<BenchResults> {
    let dir = util::target_dir().join("trng-test").join("bench");
    std::fs::create_dir_all(&dir)?;
    let mut tester = Tester::start(ctx, &dir, "hosted-os")?;
    let res = (|| -> Result<f64> {
        let stats = dir.join("stream.json");
        let mut cmd = Command::new(&tester.py);
        cmd.arg(tool_path())
            .args(["--quiet", "--timeout", "30", "--source", "cprng", "--bytes", "256M", "--port", &tester.port.to_string()])
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
fn bench_ipc(ctx: &Ctx) -> Result<BenchResults> {
    let bins = ctx.xous()?;
    let mut sys = Launch::new(bins, Flavor::Patched)
        .env("TRNG_TESTER", "0")
        .program(shell_quote(&ctx.program("trng")?))
        .program(format!("{} bench", shell_quote(&ctx.program("trng-tests")?)))
        .echo(ctx.verbose)
        .start()?;
    let r = bench::hosted_bench_json(&mut sys, 1, Duration::from_secs(300));
    sys.stop();
    r
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
        })
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

    #[test]
    fn ci_subset_matches_environment_md() {
        let t = tests_for(Level::Ci);
        assert_eq!(t.len(), 16 + 4 + 1 + 1 + 6);
        assert!(t.iter().all(|t| !["d5", "d6", "d7", "d14", "d17", "d203"].contains(&t.label.as_str())));
        assert!(t.iter().any(|t| t.args == ["-d", "202", "-n", "3"]));
    }

    #[test]
    fn dieharder_table_and_rerun() {
        let text = "#=====#\n   rng_name    |filename             |rands/second|\n stdin_input_raw|                stdin|  1.21e+08  |\n\
#=============================================================================#\n\
        test_name   |ntup| tsamples |psamples|  p-value |Assessment\n\
   diehard_birthdays|   0|       100|     100|0.15149076|  PASSED  \n\
      rgb_lagged_sum|  13|   1000000|     100|0.99605178|   WEAK   \n\
      rgb_lagged_sum|  13|   1000000|     200|0.81428571|  PASSED  \n\
          sts_serial|   1|    100000|     100|0.01000000|  PASSED  \n\
          sts_serial|   1|    100000|     100|0.00000010|  FAILED  \n";
        let l = parse_dieharder(text);
        assert_eq!(l.len(), 4);
        let c = count(&l);
        assert_eq!((c.passed, c.weak, c.failed), (3, 0, 1));
        assert_eq!(l[1].psamples, 200);
    }

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
