//! TRNG gateware (gateware/trng, docs/trng-gateware.md): test step and bench provider.
//!
//! * `trng:gateware-rtl` — writes the conditioner/health vector file from the software model
//!   (`trng-core` example `trng_vectors`), runs gateware/trng/tests under Migen's simulator and
//!   Verilator (conditioner word for word, health failures on the same samples, RFC 8439,
//!   Wycheproof counter carry, ports, gating), the block's register pages (every spec field
//!   bound, the reference's wiring defects absent) and fault injection through the simulated
//!   noise source, replayed through the software health tests (`trng_health_replay`)
//!   and the yosys synthesis with the block's acceptance rules (`python -m trng.synth --check`,
//!   gateware/trng/synth.py: conditioner + health tests within 5% of an XC7S50's LUTs, and
//!   with self-mix off a reader polling one port never waits longer than one block).
//! * bench provider `trng-gateware`: `synth_trng_luts`, `synth_trng_ffs`,
//!   `rtl_trng_words_per_kcycle` (and per-block detail).

use crate::bench::parse_flat_json;
use crate::build::gateware;
use crate::ctx::Ctx;
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use crate::supervisor;
use crate::util;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Duration;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("trng:gateware-rtl", 20 * 60, gateware_rtl)]
}

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "trng-gateware", timeout: Duration::from_secs(20 * 60), run: |_| synth(false) }]
}

/// The vector file from the software model (target/trng-vectors/trng.vec).
fn vectors() -> Result<PathBuf> {
    let path = util::target_dir().join("trng-vectors").join("trng.vec");
    std::fs::create_dir_all(path.parent().unwrap())?;
    let mut cmd = util::cargo();
    cmd.args(["run", "-q", "--release", "-p", "trng-core", "--example", "trng_vectors", "--"])
        .arg(&path)
        .current_dir(util::root());
    supervisor::run(&mut cmd, Duration::from_secs(600), "trng_vectors")?;
    Ok(path)
}

/// The synthesis report; with `check`, it fails unless the block meets its acceptance rules.
fn synth(check: bool) -> Result<BenchResults> {
    let py = gateware::python()?;
    let dir = util::target_dir().join("trng-gateware");
    std::fs::create_dir_all(&dir)?;
    let json = dir.join("synth.json");
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "trng.synth", "--json"]).arg(&json).arg("--workdir").arg(dir.join("synth"));
    if check {
        cmd.arg("--check");
    }
    supervisor::run(&mut cmd, Duration::from_secs(15 * 60), "trng.synth (yosys)")?;
    parse_flat_json(&std::fs::read_to_string(&json).context("synth JSON")?)
}

fn gateware_rtl(ctx: &Ctx) -> Result<()> {
    let vec = vectors()?;
    let replay = gateware::health_replay()?;
    gateware::pytest(
        ctx.verbose,
        &["trng/tests"],
        // the SoC test needs the built SoC: step trng:soc runs it
        &["--ignore=trng/tests/test_trng_soc.py".to_string()],
        &[("TRNG_VECTORS", vec.as_path()), ("TRNG_HEALTH_REPLAY", replay.as_path())],
        Duration::from_secs(15 * 60),
    )?;
    synth(true)?;
    Ok(())
}
