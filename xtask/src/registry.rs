//! Every test step and bench provider of xtask, in run order: the generic steps first, then one
//! line per area module. An area adds its `test_steps()` / `bench_providers()` here (and its
//! `mod` in main.rs); nothing else lists areas.

use crate::steps::{BenchProvider, TestStep};
use crate::{kernel_test, setup, smoke};
use std::time::Duration;

/// The generic steps (builds, cargo test, kernel patches, pytest, smoke).
pub fn core_test_steps() -> Vec<TestStep> {
    vec![
        TestStep { name: "xous:build", timeout: Duration::from_secs(40 * 60), run: |c| c.xous().map(|_| ()) },
        TestStep { name: "programs:build", timeout: Duration::from_secs(30 * 60), run: |c| c.programs().map(|_| ()) },
        TestStep { name: "rust:cargo-test", timeout: Duration::from_secs(40 * 60), run: setup::cargo_test },
        TestStep { name: "kernel:patches", timeout: Duration::from_secs(5 * 60), run: kernel_test::all },
        TestStep { name: "python:pytest", timeout: Duration::from_secs(20 * 60), run: setup::pytest },
        TestStep { name: "hosted:smoke", timeout: Duration::from_secs(5 * 60), run: |c| smoke::smoke(c, Duration::from_secs(120)) },
    ]
}

pub fn all_test_steps() -> Vec<TestStep> {
    let mut v = core_test_steps();
    // Area modules: one line each, e.g.
    // v.extend(crate::isa::test_steps());
    v.extend(crate::isa::test_steps());
    v.extend(crate::trng::test_steps());
    v.extend(crate::trng_gateware::test_steps());
    v.extend(crate::gateware_engine::test_steps());
    v.extend(crate::gateware_soc::test_steps());
    v.extend(crate::trng_soc::test_steps());
    v.extend(crate::engine_service::test_steps());
    v.extend(crate::chat::test_steps());
    v.extend(crate::device::test_steps());
    v.extend(crate::ratchet::test_steps());
    v.extend(crate::sim::test_steps());
    v.extend(crate::sim_layout::test_steps());
    v.extend(crate::selftest::test_steps());
    v
}

pub fn all_bench_providers() -> Vec<BenchProvider> {
    let mut v = crate::bench::core_providers();
    // Area modules: one line each, e.g.
    // v.extend(crate::isa::bench_providers());
    v.extend(crate::isa::bench_providers());
    v.extend(crate::trng::bench_providers());
    v.extend(crate::trng_gateware::bench_providers());
    v.extend(crate::gateware_engine::bench_providers());
    v.extend(crate::gateware_soc::bench_providers());
    v.extend(crate::trng_soc::bench_providers());
    v.extend(crate::engine_service::bench_providers());
    v.extend(crate::chat::bench_providers());
    v.extend(crate::sim::bench_providers());
    v.extend(crate::selftest::bench_providers());
    v
}
