//! The engine's gateware (gateware/engine, docs/gateware.md): test steps on Verilator.
//!
//! * `engine:rtl-units` — the field multiplier at its edges (operands near p, in
//!   [2^255 - 19, 2^256), limbs of 0x1ffff, the normalize overflow case) and 3,000 random
//!   products against Python integers, fixed latency.
//! * `engine:rtl-vectors` — every vector the model exports (`engine25519_core::formats::export`,
//!   the same directory as `cargo xtask engine-vectors`) on the Verilated engine, v2 and v1:
//!   bit-exact outputs, the model's cycle and instruction counts.

use crate::ctx::Ctx;
use crate::gateware;
use crate::steps::TestStep;
use crate::util;
use anyhow::{anyhow, Result};
use std::path::PathBuf;
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![
        TestStep { name: "engine:rtl-units", timeout: Duration::from_secs(15 * 60), run: |c| units(c) },
        TestStep { name: "engine:rtl-vectors", timeout: Duration::from_secs(20 * 60), run: |c| rtl_vectors(c) },
    ]
}

/// The model's vector directory (fixed seed), exported and re-checked on the model.
pub fn vectors(count: usize) -> Result<PathBuf> {
    let dir = util::target_dir().join("gateware").join(format!("engine-vectors-{count}"));
    crate::isa::vectors::export(&dir, count, 0x25519).map_err(|e| anyhow!(e))?;
    crate::isa::vectors::verify(&dir).map_err(|e| anyhow!(e))?;
    Ok(dir)
}

fn rtl_vectors(ctx: &Ctx) -> Result<()> {
    let dir = vectors(8)?;
    gateware::pytest(ctx, &["engine/tests/test_engine_vectors.py"], &[], &[("ENGINE_VECTORS", &dir)], Duration::from_secs(15 * 60))
}

fn units(ctx: &Ctx) -> Result<()> {
    gateware::pytest(ctx, &["engine/tests/test_mul.py"], &[], &[], Duration::from_secs(12 * 60))
}

/// `cargo xtask gateware test [-k EXPR]`.
pub fn run_tests(ctx: &Ctx, extra: &[String]) -> Result<()> {
    let dir = vectors(8)?;
    gateware::pytest(ctx, &["engine/tests"], extra, &[("ENGINE_VECTORS", &dir)], Duration::from_secs(30 * 60))
}
