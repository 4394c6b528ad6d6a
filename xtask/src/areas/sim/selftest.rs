//! Step `sim:selftest` and bench provider `sim-selftest`: the device image plus the self-test
//! client (areas/selftest/: its checks, phases and probe) on the simulated Precursor, judged
//! phase by phase, profiled (harness/profile.rs), the bench on v1 and v2 engine SoCs. The bench
//! key `sim_x25519_hw_us_at_100mhz` is one X25519 through the service's `hw` backend on the
//! engine RTL, end to end, in device time at the SoC's declared 100 MHz: the cycles between the
//! client's timing-start and timing-end lines (stamped by the simulator with the CPU cycle at
//! which each was written) over the number of calls.

use crate::areas::selftest::{
    sim_extras, sim_extras_with, BATCH_END, BATCH_JOBS, BATCH_START, DEVICE_CALLS, LONG_SUSPEND_FEATURE, PACKAGE,
    RESUMED_LAST, SPIN_BUSY_END, SPIN_BUSY_START, SPIN_IDLE_END, SPIN_IDLE_START, SUSPEND_CYCLES_LONG, SUSPEND_FIRST,
    TIMING_END, TIMING_START,
};
use crate::ctx::Ctx;
use crate::harness::precursor::{self, ProfileReq, RunOptions, SmokeResult, SIM_CLK_HZ};
use crate::harness::profile::{self, RunInfo};
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::time::Duration;

/// Wall-clock limit of the simulated run (boot + client + power-off).
const SIM_TIMEOUT_S: u64 = 2400;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("sim:selftest", SIM_TIMEOUT_S + 30 * 60, sim_step)]
}

/// Step `sim:selftest`: the device image plus the client on the simulated Precursor (v1
/// engine): every boot phase, every check, the client's PASS, then its power-off.
fn sim_step(ctx: &Ctx) -> Result<()> {
    // the run is profiled (sampling costs no device time): where the timed calls spend their
    // cycles is printed, and the profiler's attribution is checked on a real system
    let dir = profile::out_dir();
    let (r, info) = profiled_selftest("v1", 256, ctx.verbose, &dir)?;
    eprintln!(
        "sim:selftest: one X25519 through the hw backend, end to end: {:.1} us at 100 MHz ({DEVICE_CALLS} calls); in X25519Batch requests {:.1} us per X25519; beside a spinner {:.1} us, which got {:.1}% of the CPU meanwhile",
        us_per_call(&r)?,
        us_per_batched_job(&r)?,
        us_per_call_beside_spinner(&r)?,
        cpu_free_pct(&r)?
    );
    let show = profile::Show { window: profile::Window::Timing, top: 12, trace: None };
    let p = profile::report(&dir, &info, &show)?;
    check_profile(&p)
}

/// The timed calls' profile must name what ran: every sample in a process of the layout, no
/// more than 2% in code outside every symbol, and the two ends of the call (the client and the
/// engine server) present.
fn check_profile(p: &profile::Profile) -> Result<()> {
    let unnamed: u64 = p.by_function.iter().filter(|((_, _, f), _)| f.starts_with('?')).map(|(_, n)| n).sum();
    if p.other > 0 {
        bail!(
            "sim-profile: {} of {} samples in the timed calls ran in machine mode or under no process",
            p.other,
            p.samples
        );
    }
    if unnamed * 50 > p.samples {
        bail!("sim-profile: {unnamed} of {} samples in the timed calls fall outside every symbol", p.samples);
    }
    for proc_ in [PACKAGE, "engine25519"] {
        if !p.by_process.contains_key(proc_) {
            bail!("sim-profile: no sample of {proc_} in the timed calls");
        }
    }
    Ok(())
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "sim-selftest", timeout: Duration::from_secs(SIM_TIMEOUT_S + 30 * 60), run: sim_bench },
        BenchProvider {
            name: "sim-suspend",
            timeout: Duration::from_secs(2 * SIM_TIMEOUT_S + 30 * 60),
            run: suspend_bench,
        },
    ]
}

/// Bench provider `sim-suspend`: the self-test's suspend check with 20 suspends (the client's
/// `long-suspend` build) on the stock-faithful v1 engine (MPRESUME undriven) and on v2, every
/// phase and check as in `sim:selftest`. Keys per engine (`v1_stock`, `v2`):
/// `sim_suspend_cycles_passed_*` (suspend/resume cycles that came back, with every client's
/// answers right: 20, or the run fails), `sim_suspend_resume_ms_*` (device ms per cycle at
/// 100 MHz, from the first suspend request to the last resume, X25519s included),
/// `sim_suspend_x25519_jobs_*` (the clients' X25519s meanwhile, every one checked).
fn suspend_bench(ctx: &Ctx) -> Result<BenchResults> {
    let mut out = BenchResults::new();
    for (isa, stock, tag) in [("v1", true, "v1_stock"), ("v2", false, "v2")] {
        let (extra, mine) = sim_extras_with(ctx.verbose, true)?;
        let mut phases = precursor::boot_phases();
        phases.extend(mine);
        if stock {
            // the engine server found the shipped engine's defect (and pauses jobs only for a
            // suspend, restarting them from their inputs)
            phases.push(precursor::Phase::new("mpresume-undriven", r"engine25519: hw MPRESUME undriven"));
        }
        let features = [LONG_SUSPEND_FEATURE];
        let opts = RunOptions { engine_isa: Some(isa), engine_stock: stock, features: &features, ..Default::default() };
        let r = precursor::smoke_run_with(&extra, &phases, false, 2 * SIM_TIMEOUT_S, ctx.verbose, &opts)?;
        precursor::report(&r);
        if !r.ok {
            let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
            bail!(
                "sim-suspend ({tag}): end {}, phases not reached: [{}], failure lines: {:?}",
                r.reason,
                missing.join(", "),
                r.failed_lines
            );
        }
        let (a, _) = r.phase(SUSPEND_FIRST).context("no first suspend line")?;
        let (b, _) = r.phase(RESUMED_LAST).context("no last resume line")?;
        let line = r.phase_line("selftest/suspend-resume").context("no suspend-resume verdict")?;
        let jobs: f64 = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("jobs="))
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("no jobs= in '{line}'"))?;
        let ms = (b - a) as f64 / SUSPEND_CYCLES_LONG as f64 / SIM_CLK_HZ * 1e3;
        eprintln!("sim-suspend: {tag}: {SUSPEND_CYCLES_LONG} suspend/resume cycles, {ms:.2} ms of device time each, {jobs} X25519s checked meanwhile");
        out.insert(format!("sim_suspend_cycles_passed_{tag}"), SUSPEND_CYCLES_LONG as f64);
        out.insert(format!("sim_suspend_resume_ms_{tag}"), ms);
        out.insert(format!("sim_suspend_x25519_jobs_{tag}"), jobs);
    }
    Ok(out)
}

/// Boot the device image plus the client on the simulated Precursor with the `engine_isa`
/// engine on its bus; every phase, then the power-off the client asks for. The same device
/// image serves both SoCs: the engine server probes the engine's ISA at start-up.
pub fn sim_run(verbose: bool, engine_isa: &str, profile: Option<&ProfileReq>) -> Result<SmokeResult> {
    let (extra, mine) = sim_extras(verbose)?;
    let mut phases = precursor::boot_phases();
    phases.extend(mine);
    let opts = RunOptions { profile, engine_isa: Some(engine_isa), ..Default::default() };
    let r = precursor::smoke_run_with(&extra, &phases, false, SIM_TIMEOUT_S, verbose, &opts)?;
    precursor::report(&r);
    if !r.ok {
        let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
        bail!("the device self-test on the simulated Precursor failed: end {}, phases not reached: [{}], failure lines: {:?}", r.reason, missing.join(", "), r.failed_lines);
    }
    Ok(r)
}

/// Device microseconds per X25519 at the SoC's clock from the two stamped lines.
fn us_per_call(r: &SmokeResult) -> Result<f64> {
    let (a, _) = r.phase(TIMING_START).context("no timing-start line")?;
    let (b, _) = r.phase(TIMING_END).context("no timing-end line")?;
    if b <= a {
        bail!("timing lines out of order ({a} .. {b} cycles)");
    }
    Ok((b - a) as f64 / DEVICE_CALLS as f64 / SIM_CLK_HZ * 1e6)
}

/// Device microseconds per X25519 at the SoC's clock in the batched calls (X25519Batch requests,
/// the two stamped batch lines).
pub fn us_per_batched_job(r: &SmokeResult) -> Result<f64> {
    us_per_job_between(r, BATCH_START, BATCH_END, BATCH_JOBS)
}

/// Device microseconds per job between two stamped lines (`start` .. `end`, `jobs` jobs).
fn us_per_job_between(r: &SmokeResult, start: &str, end: &str, jobs: u64) -> Result<f64> {
    let (a, _) = r.phase(start).with_context(|| format!("no {start} line"))?;
    let (b, _) = r.phase(end).with_context(|| format!("no {end} line"))?;
    if b <= a {
        bail!("{start} .. {end} lines out of order ({a} .. {b} cycles)");
    }
    Ok((b - a) as f64 / jobs as f64 / SIM_CLK_HZ * 1e6)
}

/// The share of the CPU (percent) the spinner got during the second run of the timed calls: its
/// loop rate there over its rate while it had the CPU to itself (the client's idle window), each
/// rate its count difference over the cycles between the two stamped lines that carry the counts.
pub fn cpu_free_pct(r: &SmokeResult) -> Result<f64> {
    let at = |name: &str| -> Result<(u64, u64)> {
        let (cycle, _) = r.phase(name).with_context(|| format!("no {name} line"))?;
        let line = r.phase_line(name).with_context(|| format!("no {name} line text"))?;
        let spin = line
            .rsplit("spin=")
            .next()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .with_context(|| format!("no spin count in '{line}'"))?;
        Ok((cycle, spin))
    };
    let rate = |a: (u64, u64), b: (u64, u64)| -> Result<f64> {
        if b.0 <= a.0 || b.1 < a.1 {
            bail!("spinner lines out of order: {a:?} .. {b:?}");
        }
        Ok((b.1 - a.1) as f64 / (b.0 - a.0) as f64)
    };
    let idle = rate(at(SPIN_IDLE_START)?, at(SPIN_IDLE_END)?)?;
    let busy = rate(at(SPIN_BUSY_START)?, at(SPIN_BUSY_END)?)?;
    if idle <= 0.0 {
        bail!("the spinner did not count while the client slept");
    }
    Ok(100.0 * busy / idle)
}

/// Device microseconds per X25519 beside the spinner (the busy window's lines).
pub fn us_per_call_beside_spinner(r: &SmokeResult) -> Result<f64> {
    us_per_job_between(r, SPIN_BUSY_START, SPIN_BUSY_END, DEVICE_CALLS)
}

/// sim_x25519_hw_us_at_100mhz on Precursor's v1 engine, and _v2 on a SoC with the v2 engine.
/// With each, from the same (profiled) run, where the time of one call went:
/// `sim_x25519_hw_profile_{engine_wait,server,kernel,client}_us` (and `_v2`), `sim_profile::Split`.
fn sim_bench(ctx: &Ctx) -> Result<BenchResults> {
    let mut out = BenchResults::new();
    for (isa, key, suffix) in [("v1", "sim_x25519_hw_us_at_100mhz", ""), ("v2", "sim_x25519_hw_us_at_100mhz_v2", "_v2")]
    {
        let dir = profile::out_dir().with_file_name(format!("profile-bench-{isa}"));
        let (r, info) = profiled_selftest(isa, 256, ctx.verbose, &dir)?;
        let us = us_per_call(&r)?;
        let free = cpu_free_pct(&r)?;
        let beside = us_per_call_beside_spinner(&r)?;
        let batched = us_per_batched_job(&r)?;
        eprintln!("sim-selftest: engine {isa}: {us:.1} us per X25519 at 100 MHz; beside a spinner {beside:.1} us, which got {free:.1}% of the CPU meanwhile; in X25519Batch requests {batched:.1} us per X25519");
        out.insert(key.into(), us);
        out.insert(format!("sim_x25519_batch_hw_us_per_job_at_100mhz{suffix}"), batched);
        out.insert(format!("sim_cpu_free_during_x25519_pct_{isa}"), free);
        out.insert(format!("sim_x25519_hw_us_beside_spinner_{isa}"), beside);
        let show = profile::Show { window: profile::Window::Timing, top: 8, trace: None };
        let p = profile::report(&dir, &info, &show)?;
        check_profile(&p)?;
        let s = profile::split(&p, info.period, info.calls, PACKAGE);
        for (name, v) in [
            ("engine_wait", s.engine_wait_us),
            ("server", s.server_us),
            ("kernel", s.kernel_us),
            ("client", s.client_us),
        ] {
            out.insert(format!("sim_x25519_hw_profile_{name}_us{suffix}"), v);
        }
    }
    Ok(out)
}

/// The self-test's run on the `isa` engine with the CPU sampled every `period` cycles into
/// `dir` (samples.txt, run.json). Fails as `sim:selftest` fails.
pub fn profiled_selftest(isa: &str, period: u32, verbose: bool, dir: &Path) -> Result<(SmokeResult, RunInfo)> {
    std::fs::create_dir_all(dir)?;
    let req = ProfileReq { file: dir.join("samples.txt"), period };
    let r = sim_run(verbose, isa, Some(&req))?;
    let (from, _) = r.phase(TIMING_START).context("no timing-start line")?;
    let (to, _) = r.phase(TIMING_END).context("no timing-end line")?;
    let (extra, _) = sim_extras(verbose)?;
    let info = RunInfo::new(
        isa,
        period,
        DEVICE_CALLS,
        (from, to),
        r.cycles.unwrap_or(0),
        profile::programs(verbose, &extra, &crate::build::sim_layout::sim_dir().join("smoke"))?,
    );
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&info.to_json())? + "\n")?;
    Ok((r, info))
}
