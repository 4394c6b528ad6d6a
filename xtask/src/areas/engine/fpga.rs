//! The engine on real FPGAs (docs/gateware.md, "Timing" and "Post-synthesis simulation"):
//! placed-and-routed timing on an ECP5 (yosys synth_ecp5 + nextpnr-ecp5 from PyPI,
//! gateware/engine/place.py), the post-synthesis simulation of the whole engine
//! (gateware/engine/tests/test_netlist.py) and the Xilinx constraints (gateware/engine/xdc.py).
//!
//! * bench provider `engine-ecp5`: `ecp5_engine_{v1,v2}_fmax_mhz_{eng,mul,sys}`,
//!   `ecp5_engine_{v1,v2}_{luts,ffs,brams,dsps}`, `ecp5_engine_{v1,v2}_timing_met` (every domain
//!   at its spec clock and every cross-domain path within its budget: 1, else 0).
//! * bench provider `engine-netlist`: the synthesized netlist of v2 and v1 on Verilator
//!   (RFC 7748 and the model's vectors, a Wycheproof sample, pause / resume), results and cycle
//!   counts equal to the model's: `netlist_engine_pass` = 1 when all pass (the provider fails
//!   otherwise).
//! * `cargo xtask gateware place|netlist-sim|xdc` (areas/engine/cli.rs).
//!
//! Long runs (minutes to an hour on 2 shared cores): none of this is in `cargo xtask test`; the
//! register file's netlist runs in `engine:rtl-units`.

use crate::bench::parse_flat_json;
use crate::build::gateware;
use crate::steps::{BenchProvider, BenchResults};
use crate::supervisor;
use crate::util;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "engine-ecp5", timeout: Duration::from_secs(150 * 60), run: |_| place(&[], None, false) },
        BenchProvider { name: "engine-netlist", timeout: Duration::from_secs(90 * 60), run: |c| netlist_sim(c.verbose, &[], 12).map(|_| pass()) },
    ]
}

fn pass() -> BenchResults {
    let mut r = BenchResults::new();
    r.insert("netlist_engine_pass".into(), 1.0);
    r
}

/// ECP5 place and route of the engine (gateware/engine/place.py); with `check`, fails when a
/// domain misses its spec clock or a cross-domain path its budget (the tool's report path in
/// the message). Flat results either way when it does not fail.
pub fn place(isas: &[String], json: Option<&Path>, check: bool) -> Result<BenchResults> {
    let py = gateware::python()?;
    let dir = util::target_dir().join("gateware").join("engine-ecp5");
    std::fs::create_dir_all(&dir)?;
    let out = json.map(Path::to_path_buf).unwrap_or_else(|| dir.join("place.json"));
    std::fs::remove_file(&out).ok();
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "engine.place", "--json"]).arg(&out).arg("--workdir").arg(dir.join("work"));
    if check {
        cmd.arg("--check");
    }
    for i in isas {
        cmd.args(["--isa", i]);
    }
    supervisor::run(&mut cmd, Duration::from_secs(140 * 60), "engine.place (yosys synth_ecp5, nextpnr-ecp5)")?;
    parse_flat_json(&std::fs::read_to_string(&out).with_context(|| format!("no place report at {}", out.display()))?)
}

/// The post-synthesis simulation of the whole engine (ISAs, Wycheproof sample size).
pub fn netlist_sim(verbose: bool, isas: &[String], wycheproof: usize) -> Result<()> {
    let vec: PathBuf = super::rtl::vectors(8)?;
    let isas = if isas.is_empty() { "v2,v1".to_string() } else { isas.join(",") };
    for i in isas.split(',') {
        if !["v1", "v2"].contains(&i) {
            bail!("unknown ISA {i:?} (v1 or v2)");
        }
    }
    let n = wycheproof.to_string();
    gateware::pytest(
        verbose,
        &["engine/tests/test_netlist.py"],
        &[],
        &[
            ("ENGINE_VECTORS", vec.as_path()),
            ("ENGINE_NETLIST", Path::new("1")),
            ("ENGINE_NETLIST_ISAS", Path::new(&isas)),
            ("ENGINE_NETLIST_WYCHEPROOF", Path::new(&n)),
        ],
        Duration::from_secs(85 * 60),
    )
}

/// The XDC (gateware/engine/xdc.py), written to `out`, its names checked against the RTL.
pub fn xdc(isa: &str, out: &Path) -> Result<()> {
    let py = gateware::python()?;
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "engine.xdc", "--check", "--isa", isa, "--out"]).arg(std::path::absolute(out)?);
    supervisor::run(&mut cmd, Duration::from_secs(10 * 60), "engine.xdc")
}
