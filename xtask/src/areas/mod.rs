//! The test areas: one folder per step prefix. A step `P:name` (`engine:rtl-units`,
//! `trng-service:privilege`) is registered with `step!` in xtask/src/areas/P/ (`-` becomes
//! `_`), and `cargo xtask test --list` shows the file and line; registry.rs lists the areas'
//! `test_steps()` and `bench_providers()` in run order, and its unit test refuses a step
//! registered outside its area's folder. An area may use system.rs, ctx.rs, the harness and the
//! builds, and another area's public items, never registry.rs or runner.rs.

pub mod chat;
pub mod device;
pub mod engine;
pub mod engine_service;
pub mod hosted;
pub mod kernel;
pub mod programs;
pub mod python;
pub mod ratchet;
pub mod rust;
pub mod selftest;
pub mod sim;
pub mod trng;
pub mod trng_service;
pub mod xous;
