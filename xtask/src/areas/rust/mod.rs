//! Steps `rust:fmt` (`cargo fmt --all --check`, as rustfmt.toml at the root says) and
//! `rust:cargo-test` (`cargo test --workspace --release`).

use crate::ctx::Ctx;
use crate::steps::{step, TestStep};
use crate::supervisor;
use crate::util;
use anyhow::{Context, Result};
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("rust:fmt", 5 * 60, fmt_check), step!("rust:cargo-test", 40 * 60, cargo_test)]
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

/// `cargo fmt --all --check`: every Rust file of the workspace is formatted as rustfmt.toml says;
/// the diff it prints is what to change (`cargo fmt --all` does it). rustfmt is installed
/// through rustup when it is missing.
pub fn fmt_check(_ctx: &Ctx) -> Result<()> {
    let have = util::cargo().args(["fmt", "--version"]).output().map(|o| o.status.success()).unwrap_or(false);
    if !have {
        let mut c = std::process::Command::new("rustup");
        c.args(["component", "add", "rustfmt"]);
        supervisor::run(&mut c, Duration::from_secs(600), "rustup component add rustfmt")
            .context("step rust:fmt needs rustfmt")?;
    }
    let mut cmd = util::cargo();
    cmd.args(["fmt", "--all", "--check"]);
    supervisor::run(&mut cmd, Duration::from_secs(5 * 60), "cargo fmt --all --check (`cargo fmt --all` fixes it)")
}
