//! Shared helpers for the Xous client processes that `cargo xtask` runs under the hosted kernel.
//!
//! Every binary here is a real Xous process: it is started by the kernel (which passes
//! `XOUS_SERVER`, `XOUS_PID` and `XOUS_PROCESS_KEY`) and talks to it over TCP.
//! Programs report to the harness with marker lines on stdout (the kernel's stdout, captured by
//! `xtask/src/harness/hosted.rs`); each judges its own result and prints it as one [`Verdict`] line
//! (libs/verdict, the format xtask parses); see docs/hosted.md.

use std::time::Instant;

pub mod echo;
pub mod privilege;

pub use verdict::{Status, Verdict};

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

/// Print a verdict line (flushed).
pub fn report(v: &Verdict) {
    marker(&v.to_string());
}

/// Run steps in order, printing a `BEGIN` and then a `PASS` (with `us=`) or `FAIL` (with the
/// reason) verdict per step, and finally the verdict of `program`: PASS only if every step
/// passed, with `pass=N fail=M`. A panicking step counts as failed. Returns the number of
/// failed steps.
pub fn run_steps(program: &str, steps: &[Step]) -> usize {
    let mut failed = 0;
    let mut passed = 0;
    for step in steps {
        report(&Verdict::new(step.name, Status::Begin));
        let t0 = Instant::now();
        let outcome =
            std::panic::catch_unwind(step.run).unwrap_or_else(|p| Err(format!("panicked: {}", panic_text(&p))));
        let us = t0.elapsed().as_micros();
        match outcome {
            Ok(()) => {
                passed += 1;
                report(&Verdict::new(step.name, Status::Pass).with("us", us));
            }
            Err(why) => {
                failed += 1;
                report(&Verdict::new(step.name, Status::Fail).with("us", us).detail(why));
            }
        }
    }
    report(&Verdict::judged(program, failed == 0).with("pass", passed).with("fail", failed));
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
pub use verdict::bench::median;
