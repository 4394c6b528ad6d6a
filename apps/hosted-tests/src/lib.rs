//! Shared helpers for the Xous client processes that `cargo xtask` runs under the hosted kernel.
//!
//! Every binary here is a real Xous process: it is started by the kernel (which passes
//! `XOUS_SERVER`, `XOUS_PID` and `XOUS_PROCESS_KEY`) and talks to it over TCP.
//! Programs report to the harness with marker lines on stdout (the kernel's stdout, captured by
//! `xtask/src/hosted.rs`); see docs/hosted.md for the line protocol.

use std::time::Instant;

pub mod echo;
pub mod privilege;

/// Marker printed by the smoke runner before a step starts.
pub const STEP_BEGIN: &str = "SMOKE-BEGIN";
/// Marker printed when a step passed.
pub const STEP_PASS: &str = "SMOKE-PASS";
/// Marker printed when a step failed.
pub const STEP_FAIL: &str = "SMOKE-FAIL";
/// Marker printed once every step ran: `SMOKE-DONE pass=N fail=M`.
pub const DONE: &str = "SMOKE-DONE";

/// Result type of one scenario step: `Err` carries a human-readable reason.
pub type StepResult = Result<(), String>;

/// One scripted step: a name (`area/what`) and the code that performs it.
pub struct Step {
    pub name: &'static str,
    pub run: fn() -> StepResult,
}

/// Print a marker line and flush it immediately (the harness waits on these lines).
pub fn marker(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Run steps in order, printing BEGIN/PASS/FAIL markers. A panicking step counts as failed.
/// Returns the number of failed steps.
pub fn run_steps(steps: &[Step]) -> usize {
    let mut failed = 0;
    let mut passed = 0;
    for step in steps {
        marker(&format!("{STEP_BEGIN} {}", step.name));
        let t0 = Instant::now();
        let outcome = std::panic::catch_unwind(step.run)
            .unwrap_or_else(|p| Err(format!("panicked: {}", panic_text(&p))));
        let us = t0.elapsed().as_micros();
        match outcome {
            Ok(()) => {
                passed += 1;
                marker(&format!("{STEP_PASS} {} ({us} us)", step.name));
            }
            Err(why) => {
                failed += 1;
                marker(&format!("{STEP_FAIL} {}: {why}", step.name));
            }
        }
    }
    marker(&format!("{DONE} pass={passed} fail={failed}"));
    failed
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Ask the hosted kernel to stop every process and exit (needs the Shutdown kernel patch;
/// the stock 0.9.37 kernel panics here). Returns the kernel's answer.
pub fn shutdown_system() -> Result<(), xous::Error> {
    xous::rsyscall(xous::SysCall::Shutdown).map(|_| ())
}

/// Block until every named server is registered with xous-names; returns the connections.
pub fn connect_all(names: &[String]) -> Result<Vec<xous::CID>, xous::Error> {
    let xns = xous_api_names::XousNames::new()?;
    names.iter().map(|n| xns.request_connection_blocking(n)).collect()
}

/// Median of a sample set (sorts in place). Panics on an empty set.
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}
