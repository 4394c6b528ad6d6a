//! engine25519 service: hosted test steps and bench providers (docs/engine-service.md).
//!
//! Test steps:
//! * `engine-service:load-fuzz` — the hosted system with 8 `engine-load` processes x 100 X25519
//!   (blocking + async, each checked against x25519-dalek in the client) running concurrently
//!   with `engine-fuzz` (10,000 random malformed messages, each must get an error answer, then
//!   valid X25519 calls must still succeed).
//! * `engine-service:privilege` — docs/security.md: an ordinary client (`engine-privilege`) is
//!   refused the control name and every privileged opcode on the public server while two
//!   `engine-load` clients keep being served; then a second system where sysctl, the system's
//!   own process, suspends, resumes and finally quits the engine through the control server;
//!   then a third where an app started before sysctl takes the control slot: sysctl must report
//!   `SYSCTL ERROR` and shut the system down.
//! (The device cross-build of the server's `hw` backend is the step `device:cross-build`,
//! xtask/src/build/device.rs.)
//!
//! Bench provider `engine-service`: `engine-service-bench` (hosted client: service_x25519_us_p50, overhead ratio,
//! per-backend provider table) and a fairness run (8 clients, fixed window -> service_fairness_spread).

use crate::bench;
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{Launch, Report};
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use crate::system::{sysctl_checks, system, system_env, system_on};
use crate::util::shell_quote;
use anyhow::{bail, Context, Result};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use verdict::Status;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("engine-service:load-fuzz", 300, load_fuzz), step!("engine-service:privilege", 180, privilege)]
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "engine-service", timeout: Duration::from_secs(300), run: bench_service }]
}

fn load_fuzz(ctx: &Ctx) -> Result<()> {
    let load = shell_quote(&ctx.program("engine-load")?);
    let fuzz = shell_quote(&ctx.program("engine-fuzz")?);
    let mut clients: Vec<String> = (1..=8).map(|i| format!("{load} --id {i} --calls 100")).collect();
    clients.push(format!("{fuzz} --count 10000"));
    let mut sys = system(ctx, &clients)?;
    let r = (|| -> Result<()> {
        let (mut loads, mut fuzz) = (0, false);
        while loads < 8 || !fuzz {
            let v =
                match sys
                    .next_report(Duration::from_secs(180), "8 engine-load and the engine-fuzz verdicts", |_| false)?
                {
                    Report::Verdict(v) => v,
                    Report::Panic(l) => bail!("panic: {l}"),
                    Report::Line(_) => continue,
                };
            eprintln!("engine-service: {v}");
            if v.subject.starts_with("engine-load/") {
                loads += 1;
            } else if v.subject == "engine-fuzz" {
                fuzz = true;
            }
            if v.status == Status::Fail {
                bail!("{v}");
            }
        }
        Ok(())
    })();
    let tail = sys.tail(40);
    sys.stop();
    r.map_err(|e| anyhow::anyhow!("engine-service load/fuzz failed: {e}\n--- last output ---\n{tail}"))
}

fn privilege(ctx: &Ctx) -> Result<()> {
    let load = shell_quote(&ctx.program("engine-load")?);
    let mut clients: Vec<String> = (1..=2).map(|i| format!("{load} --id {i} --calls 50")).collect();
    clients.push(shell_quote(&ctx.program("engine-privilege")?));
    let mut sys = system(ctx, &clients)?;
    let r = (|| -> Result<()> {
        // verdicts arrive in any order: collect them as they come
        let (mut ready, mut privilege, mut loads) = (false, false, 0);
        while !ready || !privilege || loads < 2 {
            let v = match sys.next_report(
                Duration::from_secs(60),
                "SYSCTL READY and the engine-privilege and 2 engine-load verdicts",
                |l| l.contains("SYSCTL"),
            )? {
                Report::Verdict(v) => v,
                Report::Panic(l) => bail!("{l}"),
                Report::Line(l) if l.contains("SYSCTL ERROR") => bail!("{l}"),
                Report::Line(l) => {
                    ready |= l.contains("SYSCTL READY");
                    continue;
                }
            };
            if v.subject == "engine-privilege" {
                eprintln!("engine-service: {v}");
                if !v.passed() {
                    bail!("an ordinary client was not refused cleanly: {v}");
                }
                privilege = true;
            } else if v.subject.starts_with("engine-load/") {
                loads += 1;
                if !v.passed() {
                    bail!("a concurrent client was not served: {v}");
                }
            }
        }
        Ok(())
    })();
    let tail = sys.tail(30);
    sys.stop();
    r.map_err(|e| anyhow::anyhow!("{e}\n--- last output ---\n{tail}"))?;

    // the system's own process may do what the ordinary client may not
    sysctl_checks(ctx, "engine-service", &["engine-suspend-resume", "engine-quit"])?;

    // the race: an app that starts before sysctl and takes the control slot is noticed, and
    // the system shuts down instead of running with the slot in the app's hands
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    for b in crate::build::target::SERVER_BINS.iter().filter(|b| **b != "sysctl") {
        l = l.program(ctx.server_program(b)?);
    }
    l = l.program(format!("{} --steal", shell_quote(&ctx.program("engine-privilege")?)));
    // sysctl late (the kernel runs each command line through sh -c)
    l = l.system_program(format!("sleep 1; exec {}", ctx.server_program("sysctl")?));
    let mut sys = l.start()?;
    let r = (|| -> Result<()> {
        let stole = sys.wait_verdict(Duration::from_secs(60), "the engine-privilege/steal verdict", |s| {
            s == "engine-privilege/steal"
        })?;
        if !stole.passed() {
            bail!("the early app could not take the slot, the race was not exercised: {stole}");
        }
        let l = sys.wait_line(Duration::from_secs(60), "SYSCTL ERROR or READY", |l| l.contains("SYSCTL "))?.text;
        eprintln!("engine-service: early app took the control slot; sysctl: {l}");
        if !l.contains("SYSCTL ERROR") || !l.contains("refused the connection") {
            bail!("sysctl did not notice the stolen slot: {l}");
        }
        let st = sys.wait_exit(Duration::from_secs(30))?;
        if !st.success() {
            bail!("the system did not shut down cleanly after SYSCTL ERROR: {st}");
        }
        Ok(())
    })();
    let tail = sys.tail(30);
    sys.stop();
    r.map_err(|e| anyhow::anyhow!("{e}\n--- last output ---\n{tail}"))
}

fn bench_service(ctx: &Ctx) -> Result<BenchResults> {
    // latency, overhead ratio and the provider table; then the same with the whole system on one
    // host CPU (`_one_cpu` keys: no cross-CPU wake-ups, docs/hosted.md), in the same run
    let client = [shell_quote(&ctx.program("engine-service-bench")?)];
    let mut sys = system(ctx, &client)?;
    let mut out = bench::hosted_bench_json(&mut sys, 1, Duration::from_secs(180))?;
    for l in sys.lines().iter().filter(|l| l.contains("ENGINE-BENCH-TABLE")) {
        eprintln!("{}", l.split_once("ENGINE-BENCH-TABLE ").map(|x| x.1).unwrap_or(l));
    }
    sys.stop();
    let one = crate::harness::hosted::first_allowed_cpu()?;
    let mut sys = system_on(ctx, &client, &[], Some(one))?;
    let r = bench::hosted_bench_json(&mut sys, 1, Duration::from_secs(180));
    sys.stop();
    for key in
        ["service_x25519_us_p50", "service_model_inproc_us_p50", "service_ipc_floor_us_p50", "service_overhead_ratio"]
    {
        let v = r.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?.get(key).copied();
        out.insert(format!("{key}_one_cpu"), v.with_context(|| format!("the one-CPU run reported no {key}"))?);
    }

    // fairness: 8 clients, each keeping 2 async requests in flight, same fixed wall-clock window,
    // server paced to the device engine clock (50 MHz: 2.28 ms per X25519 on v1) so the engine, not
    // the host CPU scheduling the client processes, is the bottleneck being shared
    let load = shell_quote(&ctx.program("engine-load")?);
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
    let (start, window) = (now_ms + 3000, 4000);
    let clients: Vec<String> =
        (1..=8).map(|i| format!("{load} --id {i} --start-at-ms {start} --window-ms {window}")).collect();
    let mut sys = system_env(ctx, &clients, &[("ENGINE25519_PACE_HZ", "50000000")])?;
    let mut counts = Vec::new();
    let mut bad = 0;
    for _ in 0..8 {
        let v =
            sys.wait_verdict(Duration::from_secs(60), "8 engine-load verdicts", |s| s.starts_with("engine-load/"))?;
        let n = |k: &str| v.num(k).with_context(|| format!("no {k}= in {v}"));
        counts.push(n("completed")? as f64);
        bad += n("wrong")? + n("errors")?;
    }
    sys.stop();
    let (max, min) = counts.iter().fold((0f64, f64::MAX), |(a, b), &c| (a.max(c), b.min(c)));
    if min == 0.0 {
        bail!("a client completed no job in the fairness window: {counts:?}");
    }
    eprintln!("engine-service fairness: completed per client in {window} ms: {counts:?}");
    out.insert("service_fairness_spread".into(), max / min);
    out.insert("service_fairness_jobs_total".into(), counts.iter().sum());
    out.insert("service_fairness_bad_results".into(), bad as f64);
    Ok(out)
}
