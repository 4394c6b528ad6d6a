//! The engine's gateware (gateware/engine, docs/gateware.md): test steps on Verilator.
//!
//! * `engine:rtl-units` — the field multiplier at its edges (operands near p, in
//!   [2^255 - 19, 2^256), limbs of 0x1ffff, the normalize overflow case) and 3,000 random
//!   products against Python integers, fixed latency.

use crate::ctx::Ctx;
use crate::gateware;
use crate::steps::TestStep;
use anyhow::Result;
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![TestStep { name: "engine:rtl-units", timeout: Duration::from_secs(15 * 60), run: |c| units(c) }]
}

fn units(ctx: &Ctx) -> Result<()> {
    gateware::pytest(ctx, &["engine/tests/test_mul.py"], &[], &[], Duration::from_secs(12 * 60))
}

/// `cargo xtask gateware test [-k EXPR]`.
pub fn run_tests(ctx: &Ctx, extra: &[String]) -> Result<()> {
    gateware::pytest(ctx, &["engine/tests"], extra, &[], Duration::from_secs(30 * 60))
}
