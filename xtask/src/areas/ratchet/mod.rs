//! libs/ratchet interop: the crate against independent implementations (PyPI DoubleRatchet
//! 1.3.0, x3dh 1.3.0, xeddsa 1.2.0) driven as Python peers from the project venv
//! (tools/requirements.txt pins them). The tests live in libs/ratchet/tests/interop.rs and are
//! `#[ignore]`d in plain `cargo test` because they need the venv; this step provides it.

use std::time::Duration;

use anyhow::Result;

use crate::steps::{step, TestStep};
use crate::supervisor;
use crate::ctx::Ctx;
use crate::setup;
use crate::util;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("ratchet:interop", 20 * 60, interop)]
}

fn interop(ctx: &Ctx) -> Result<()> {
    let py = setup::venv()?;
    let mut cmd = util::cargo();
    cmd.args(["test", "-p", "ratchet", "--release", "--test", "interop"]);
    if !ctx.verbose {
        cmd.arg("--quiet");
    }
    cmd.args(["--", "--ignored"]).env("RATCHET_INTEROP_PYTHON", &py);
    supervisor::run(&mut cmd, Duration::from_secs(15 * 60), "cargo test -p ratchet --test interop -- --ignored")
}
