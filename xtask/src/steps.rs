//! What a test step (`cargo xtask test`) and a bench provider (`cargo xtask bench`) are, and
//! the hard timeout every one of them runs under. The modules of an area (xtask/src/areas/P/
//! for the steps named `P:...`) expose `pub fn test_steps() -> Vec<TestStep>` (each step made
//! with [`step!`], which records where it is registered) and/or `pub fn bench_providers() ->
//! Vec<BenchProvider>`; registry.rs lists them in run order. runner.rs runs each one in a child
//! xtask of its own session and enforces the timeout by killing every process of that session.

use crate::ctx::Ctx;
use anyhow::Result;
use std::collections::BTreeMap;
use std::time::Duration;

/// One step of `cargo xtask test`.
pub struct TestStep {
    /// Short unique name (`area:what`), selectable with `cargo xtask test --only NAME`.
    pub name: &'static str,
    /// Hard limit: the runner fails the step and kills its processes after this.
    pub timeout: Duration,
    pub run: fn(&Ctx) -> Result<()>,
    /// Where the step is registered (`file!()`, `line!()` of its [`step!`]), shown by
    /// `cargo xtask test --list`; registry.rs checks it is in the folder of the step's area.
    pub file: &'static str,
    pub line: u32,
}

/// `step!("area:name", timeout_seconds, run)`: a [`TestStep`] that knows where it was written.
macro_rules! step {
    ($name:expr, $timeout_s:expr, $run:expr) => {
        $crate::steps::TestStep {
            name: $name,
            timeout: ::std::time::Duration::from_secs($timeout_s),
            run: $run,
            file: file!(),
            line: line!(),
        }
    };
}
pub(crate) use step;

/// Flat benchmark results: key -> number.
pub type BenchResults = BTreeMap<String, f64>;

/// One provider of `cargo xtask bench`. Helpers for the two provider shapes:
/// `bench::native_provider(cmd)` (one line of flat JSON on stdout) and
/// `bench::hosted_bench_json(...)` (`BENCH-JSON {...}` lines from a hosted client).
pub struct BenchProvider {
    pub name: &'static str,
    pub timeout: Duration,
    pub run: fn(&Ctx) -> Result<BenchResults>,
}
