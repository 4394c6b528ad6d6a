//! Step `rust:cargo-test`: `cargo test --workspace --release`.

use crate::ctx::Ctx;
use crate::steps::{step, TestStep};
use crate::supervisor;
use crate::util;
use anyhow::Result;
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("rust:cargo-test", 40 * 60, cargo_test)]
}

/// `cargo test --workspace --release`.
pub fn cargo_test(ctx: &Ctx) -> Result<()> {
    let mut cmd = util::cargo();
    cmd.args(["test", "--workspace", "--release"]);
    if !ctx.verbose {
        cmd.arg("--quiet");
    }
    supervisor::run(&mut cmd, Duration::from_secs(40 * 60), "cargo test --workspace --release")
}
