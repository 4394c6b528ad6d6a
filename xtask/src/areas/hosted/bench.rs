//! Bench providers `hosted-startup` and `hosted-ipc`: the hosted system's start-up and IPC
//! round trips on the patched and the stock kernel.

use crate::bench::{hosted_bench_json, median};
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::Launch;
use crate::steps::{BenchProvider, BenchResults};
use crate::system::add_servers;
use crate::util::shell_quote;
use anyhow::{bail, Result};
use std::time::Duration;

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "hosted-startup", timeout: Duration::from_secs(300), run: hosted_startup },
        BenchProvider { name: "hosted-ipc", timeout: Duration::from_secs(300), run: hosted_ipc },
    ]
}

fn suffix(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Patched => "",
        Flavor::Stock => "_stock",
    }
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
            l = add_servers(ctx, l)?;
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
        out.insert(format!("hosted_startup_ms{}", suffix(flavor)), median(&mut samples[i]));
    }
    Ok(out)
}

/// ipc_scalar_rtt_us_p50 / ipc_lend_4k_rtt_us_p50 from ipc-bench + echo-server: each run reports
/// its medians; the result is the median over ROUNDS runs per kernel, the kernels interleaved.
/// Each round runs both kernels twice: placed by the host (the plain keys) and with the whole
/// system on one host CPU (`_one_cpu`). Where the host's idle CPUs halt, a hand-off between
/// processes on two CPUs costs a wake-up that one CPU does not pay (docs/hosted.md), so the two
/// placements in one run show how much of a figure is that machine effect. The patched / stock
/// ratios of the scalar round trip are keys too (`ipc_scalar_patched_over_stock[_one_cpu]`).
fn hosted_ipc(ctx: &Ctx) -> Result<BenchResults> {
    let bins = ctx.xous()?.clone();
    let one = crate::harness::hosted::first_allowed_cpu()?;
    let mut runs: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for _ in 0..ROUNDS {
        for (cpu, place) in [(None, ""), (Some(one), "_one_cpu")] {
            for flavor in [Flavor::Patched, Flavor::Stock] {
                let mut bench = shell_quote(&ctx.program("ipc-bench")?);
                if flavor == Flavor::Patched {
                    bench.push_str(" --shutdown");
                }
                let mut sys = Launch::new(&bins, flavor)
                    .program(shell_quote(&ctx.program("echo-server")?))
                    .system_program(bench)
                    .cpu(cpu)
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
                    runs.entry(format!("{k}{}{place}", suffix(flavor))).or_default().push(v);
                }
            }
        }
    }
    let mut out: BenchResults = runs.into_iter().map(|(k, v)| (k, median(&mut v.clone()))).collect();
    for place in ["", "_one_cpu"] {
        let (p, s) = (format!("ipc_scalar_rtt_us_p50{place}"), format!("ipc_scalar_rtt_us_p50_stock{place}"));
        match (out.get(&p), out.get(&s)) {
            (Some(&p), Some(&s)) if s > 0.0 => {
                out.insert(format!("ipc_scalar_patched_over_stock{place}"), p / s);
            }
            _ => bail!("ipc-bench reported no {p} / {s}"),
        }
    }
    Ok(out)
}
