//! Registration of test steps (`cargo xtask test`) and bench providers (`cargo xtask bench`).
//!
//! Area modules (xtask/src/engine.rs, xtask/src/trng.rs, ...) contribute by exposing
//! `pub fn test_steps() -> Vec<TestStep>` and/or `pub fn bench_providers() -> Vec<BenchProvider>`
//! and adding ONE line each to `all_test_steps()` / `all_bench_providers()` below (plus
//! `mod <area>;` in main.rs). Every step has a timeout; the runner enforces it by killing the
//! process groups started through `util::spawn_grouped`/`hosted::Launch`.

use crate::Ctx;
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
}

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

pub fn all_test_steps() -> Vec<TestStep> {
    let mut v = crate::core_test_steps();
    // Area modules: one line each, e.g.
    // v.extend(crate::engine::test_steps());
    v.extend(crate::engine::test_steps());
    v.extend(crate::trng::test_steps());
    v.extend(crate::trng_gateware::test_steps());
    v.extend(crate::engine_service::test_steps());
    v.extend(crate::trng_service::test_steps());
    v.extend(crate::chat::test_steps());
    v.extend(crate::device::test_steps());
    v.extend(crate::ratchet::test_steps());
    v
}

pub fn all_bench_providers() -> Vec<BenchProvider> {
    let mut v = crate::bench::core_providers();
    // Area modules: one line each, e.g.
    // v.extend(crate::engine::bench_providers());
    v.extend(crate::engine::bench_providers());
    v.extend(crate::trng::bench_providers());
    v.extend(crate::trng_gateware::bench_providers());
    v.extend(crate::engine_service::bench_providers());
    v.extend(crate::chat::bench_providers());
    v
}

/// Run `f` with a hard timeout; on timeout kill every process group started meanwhile.
pub fn with_timeout<T: Send + 'static>(
    name: &str,
    timeout: Duration,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("step {name}"))
        .spawn(move || {
            let r = f();
            let _ = tx.send(r);
        })?;
    match rx.recv_timeout(timeout) {
        Ok(r) => r,
        Err(_) => {
            crate::util::kill_all_groups();
            anyhow::bail!("{name}: timed out after {timeout:?} (its processes were killed)")
        }
    }
}
