//! The two runners: `cargo xtask test` (every registered step, each under its timeout, a summary
//! table) and `cargo xtask bench` (every provider, a table and flat JSON).
//!
//! Each step and provider runs in a child xtask (`xtask __run`, hidden from `--help`) that
//! leads a session of its own and writes its outcome to a file. When the child ends, or when
//! the timeout expires, every process still in that session is killed (SIGTERM, a grace, then
//! SIGKILL): a timed-out step leaves no thread and no process running.

use crate::ctx::Ctx;
use crate::registry;
use crate::steps::{BenchResults, TestStep};
use crate::supervisor;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What a child xtask runs (`xtask __run --step NAME` / `--bench NAME`).
#[derive(Clone, Copy, Debug)]
pub enum Job<'a> {
    Step(&'a str),
    Bench(&'a str),
}

/// How long a child's processes get to leave after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(3);

/// The command running `job` in a child xtask that writes its outcome to `out`.
fn child_command(ctx: &Ctx, job: Job, out: &Path) -> Result<Command> {
    let mut cmd = Command::new(std::env::current_exe().context("the xtask binary")?);
    if ctx.verbose {
        cmd.arg("--verbose");
    }
    match job {
        Job::Step(n) => cmd.args(["__run", "--step", n]),
        Job::Bench(n) => cmd.args(["__run", "--bench", n]),
    };
    cmd.arg("--out").arg(out);
    Ok(cmd)
}

/// Run `cmd` (a child xtask, or any command writing `out`) as the leader of a new session
/// under `timeout`; then kill whatever of that session is still running. Returns the outcome
/// the child wrote to `out` (`{"error": null | "..."}`, plus `"results"` from a provider).
pub fn run_isolated(name: &str, timeout: Duration, mut cmd: Command, out: &Path) -> Result<serde_json::Value> {
    let _ = std::fs::remove_file(out);
    let mut child = supervisor::spawn_session(&mut cmd)?;
    let sid = child.id() as i32;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if t0.elapsed() < timeout => std::thread::sleep(Duration::from_millis(50)),
            _ => break None,
        }
    };
    // ended or not: nothing of the step outlives it
    let left = supervisor::kill_session(sid, GRACE);
    let _ = child.try_wait();
    if !left.is_empty() {
        bail!("{name}: processes {left:?} of the step survived SIGKILL");
    }
    let Some(st) = status else {
        bail!("{name}: timed out after {timeout:?} (its processes were killed)");
    };
    let text = std::fs::read_to_string(out)
        .map_err(|_| anyhow!("{name}: the step's process ended ({st}) without an outcome"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{name}: outcome {}", out.display()))?;
    match v["error"].as_str() {
        Some(e) => Err(anyhow!("{e}")),
        None => Ok(v),
    }
}

/// `xtask __run`: the child side of [`run_isolated`]: run one step or provider in this process
/// and write its outcome to `out`.
pub fn cmd_child(ctx: &Ctx, job: Job, out: &Path) -> Result<()> {
    let outcome = match job {
        Job::Step(n) => {
            let all = registry::all_test_steps();
            let s = all.iter().find(|s| s.name == n).ok_or_else(|| anyhow!("unknown step {n:?}"))?;
            (s.run)(ctx).map(|()| serde_json::json!({ "error": null }))
        }
        Job::Bench(n) => {
            let all = registry::all_bench_providers();
            let p = all.iter().find(|p| p.name == n).ok_or_else(|| anyhow!("unknown bench provider {n:?}"))?;
            (p.run)(ctx).map(|r| serde_json::json!({ "error": null, "results": r }))
        }
    };
    let v = outcome.unwrap_or_else(|e| serde_json::json!({ "error": format!("{e:#}") }));
    std::fs::write(out, v.to_string()).with_context(|| format!("writing {}", out.display()))
}

/// Where a child writes the outcome of `name`.
fn outcome_path(name: &str) -> PathBuf {
    crate::util::target_dir().join("xtask-runs").join(format!("{}.json", name.replace(':', "-")))
}

fn run_job(ctx: &Ctx, job: Job, name: &str, timeout: Duration) -> Result<serde_json::Value> {
    let out = outcome_path(name);
    std::fs::create_dir_all(out.parent().context("outcome dir")?)?;
    run_isolated(name, timeout, child_command(ctx, job, &out)?, &out)
}

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
    let mut errors: Vec<(&str, String)> = Vec::new();
    let t_all = Instant::now();
    for s in selected {
        eprintln!("\n=== xtask test: {} (timeout {} s)", s.name, s.timeout.as_secs());
        let t0 = Instant::now();
        let r = run_job(ctx, Job::Step(s.name), s.name, s.timeout).map(|_| ());
        let secs = t0.elapsed().as_secs_f64();
        match &r {
            Ok(()) => eprintln!("=== {}: PASS ({secs:.1} s)", s.name),
            Err(e) => eprintln!("=== {}: FAIL ({secs:.1} s): {e:#}", s.name),
        }
        if let Err(e) = &r {
            errors.push((s.name, format!("{e:#}")));
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
    eprintln!(
        "total {:.1} s; {} passed, {} failed (times: {})",
        t_all.elapsed().as_secs_f64(),
        results.len() - failed,
        failed,
        times_path().display()
    );
    // the failures again, last: a log read from its end (a CI page) shows why, not only which
    for (n, e) in &errors {
        eprintln!("\n=== why {n} failed:\n{}", tail_lines(e, FAILURE_TAIL_LINES));
    }
    if failed > 0 {
        bail!("{failed} test step(s) failed");
    }
    Ok(())
}

/// How many lines of each failed step's error the summary repeats.
const FAILURE_TAIL_LINES: usize = 40;

/// The last `n` lines of `s` (all of it when shorter), with a note of how many were left out.
fn tail_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    if lines.len() <= n {
        return s.to_string();
    }
    format!("[{} earlier lines left out]\n{}", lines.len() - n, lines[lines.len() - n..].join("\n"))
}

/// Where `cargo xtask test` records each step's result and wall time.
pub fn times_path() -> PathBuf {
    crate::util::target_dir().join("xtask-test-times.json")
}

/// The steps run so far: `[{"step", "pass", "seconds"}, ...]` in run order.
fn write_times(results: &[(&str, bool, f64)]) -> Result<()> {
    let v: Vec<serde_json::Value> = results
        .iter()
        .map(|(n, ok, s)| serde_json::json!({"step": n, "pass": ok, "seconds": (s * 10.0).round() / 10.0}))
        .collect();
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
        let r = run_job(ctx, Job::Bench(p.name), p.name, p.timeout).and_then(|v| {
            serde_json::from_value::<BenchResults>(v["results"].clone()).with_context(|| format!("{}: results", p.name))
        });
        match r {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = crate::util::target_dir().join("xtask-test").join(format!("runner-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn running(pid: i32) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat[stat.rfind(')').unwrap() + 1..].trim_start().starts_with('Z')
    }

    /// A step that hangs: it starts a process in a process group of its own (as
    /// `supervisor::spawn_grouped` does) and one in its own, then waits forever. The runner
    /// reports the timeout, and neither the step nor anything it started is left running.
    #[test]
    fn a_hanging_step_is_killed_and_reported_and_nothing_of_it_runs_on() {
        let d = scratch("hang");
        let pids = d.join("pids");
        let script = format!(
            "set -m; sleep 300 & echo $! >> {p}; set +m; sleep 300 & echo $! >> {p}; echo $$ >> {p}; wait",
            p = pids.display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        let t0 = Instant::now();
        let e = run_isolated("test:hang", Duration::from_secs(1), cmd, &d.join("out.json")).unwrap_err();
        let took = t0.elapsed();
        assert!(format!("{e:#}").contains("test:hang: timed out after 1s (its processes were killed)"), "{e:#}");
        assert!(took < Duration::from_secs(1) + GRACE + Duration::from_secs(5), "took {took:?}");
        let pids: Vec<i32> = std::fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(pids.len(), 3, "the step started its processes");
        for pid in pids {
            assert!(!running(pid), "process {pid} of the timed-out step still runs");
        }
    }

    #[test]
    fn a_failure_summary_keeps_the_last_lines() {
        assert_eq!(tail_lines("a\nb", 3), "a\nb");
        let long: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        let t = tail_lines(&long, 40);
        assert!(t.starts_with("[10 earlier lines left out]\nline 11\n"), "{t}");
        assert!(t.ends_with("line 50"), "{t}");
    }

    #[test]
    fn outcomes_pass_fail_and_missing() {
        let d = scratch("outcome");
        let out = d.join("out.json");
        let sh = |script: String| {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        };
        let ok = run_isolated(
            "t:ok",
            Duration::from_secs(20),
            sh(format!("echo '{{\"error\":null,\"results\":{{\"k\":1.5}}}}' > {}", out.display())),
            &out,
        )
        .unwrap();
        assert_eq!(ok["results"]["k"], 1.5);
        let e = run_isolated(
            "t:fail",
            Duration::from_secs(20),
            sh(format!("echo '{{\"error\":\"it broke\"}}' > {}", out.display())),
            &out,
        )
        .unwrap_err();
        assert_eq!(format!("{e:#}"), "it broke");
        let e = run_isolated("t:crash", Duration::from_secs(20), sh("exit 3".into()), &out).unwrap_err();
        assert!(format!("{e:#}").contains("ended (exit status: 3) without an outcome"), "{e:#}");
        // a process the step leaves behind is ended with it
        let pid = d.join("pid");
        run_isolated(
            "t:leak",
            Duration::from_secs(20),
            sh(format!("sleep 300 & echo $! > {}; echo '{{\"error\":null}}' > {}", pid.display(), out.display())),
            &out,
        )
        .unwrap();
        let pid: i32 = std::fs::read_to_string(&pid).unwrap().trim().parse().unwrap();
        assert!(!running(pid), "the step's leftover {pid} still runs");
    }
}
