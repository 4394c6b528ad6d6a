//! Scripted smoke client: runs every scenario step (src/scenarios/), prints a verdict per step
//! and then its own (`VERDICT smoke PASS pass=N fail=0`, libs/verdict), then shuts the whole hosted system down through the kernel's Shutdown syscall.
//! `smoke --no-shutdown` leaves the system running.
//! `smoke --shutdown-after PATH` waits (at most 600 s) until PATH exists before the Shutdown: the
//! harness creates it once the other clients of the scenario (e.g. the engine load processes)
//! have reported.

#[path = "../scenarios/mod.rs"]
mod scenarios;

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let no_shutdown = args.iter().any(|a| a == "--no-shutdown");
    let gate = match args.iter().position(|a| a == "--shutdown-after") {
        Some(i) => match args.get(i + 1) {
            Some(p) => Some(std::path::PathBuf::from(p)),
            None => {
                eprintln!("smoke: --shutdown-after needs a path");
                std::process::exit(2);
            }
        },
        None => None,
    };
    if let Some(bad) = args.iter().enumerate().find(|(i, a)| {
        a.starts_with("--")
            && *a != "--no-shutdown"
            && *a != "--shutdown-after"
            && !(*i > 0 && args[i - 1] == "--shutdown-after")
    }) {
        eprintln!("smoke: unknown argument {:?} (use --no-shutdown, --shutdown-after PATH)", bad.1);
        std::process::exit(2);
    }
    xous_api_log::init_wait().expect("log server");
    log::set_max_level(log::LevelFilter::Info);
    log::info!("smoke client starting");
    let failed = hosted_tests::run_steps("smoke", &scenarios::all());
    if let Some(gate) = gate {
        let t0 = Instant::now();
        while !gate.exists() && t0.elapsed() < Duration::from_secs(600) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if !no_shutdown {
        hosted_tests::marker("SMOKE-SHUTDOWN");
        if let Err(e) = hosted_tests::shutdown_system() {
            hosted_tests::marker(&format!("SMOKE-SHUTDOWN-FAILED {e:?}"));
        }
    }
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
