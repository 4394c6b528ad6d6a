//! The engine on real FPGAs (docs/gateware.md, "Timing" and "Post-synthesis simulation"):
//! placed-and-routed timing on an ECP5 (yosys synth_ecp5 + nextpnr-ecp5 from PyPI,
//! gateware/engine/place.py), the post-synthesis simulation of the whole engine
//! (gateware/engine/tests/test_netlist.py) and the Xilinx constraints (gateware/engine/xdc.py).
//!
//! * bench provider `engine-ecp5`: `ecp5_engine_{v1,v2}_fmax_mhz_{eng,mul,sys}`,
//!   `ecp5_engine_{v1,v2}_{luts,ffs,brams,dsps}`, `ecp5_engine_{v1,v2}_dsps_registered` (the
//!   MULT18X18Ds with their own output register: all of them in the engine's ECP5 form,
//!   gateware/engine/dsp.py), `ecp5_engine_{v1,v2}_timing_met` (every domain at its spec clock,
//!   every cross-domain path within its budget and every MULT18X18D registered: 1, else 0).
//! * bench provider `engine-netlist`: the synthesized netlist of v2 and v1 on Verilator
//!   (RFC 7748 and the model's vectors, a Wycheproof sample, pause / resume), results and cycle
//!   counts equal to the model's: `netlist_engine_pass` = 1 when all pass (the provider fails
//!   otherwise).
//! * bench provider `trng-ecp5`: the whole TRNG (ring oscillators in LUT4s, Wishbone adapter)
//!   placed on the same ECP5 (gateware/trng/place.py): `ecp5_trng_fmax_mhz_sys`,
//!   `ecp5_trng_{luts,ffs,brams,dsps}`, `ecp5_trng_timing_met`.
//! * bench provider `board-ecp5`: the SoC benchmark as a bitstream for the ULX3S 85F
//!   (gateware/soc/board.py): `ecp5_board_ulx3s_*` (Fmax per clock against the board's clocks,
//!   cells, `ecp5_board_ulx3s_timing_met`); fails when timing is not met or a tool fails.
//! * `cargo xtask gateware place|netlist-sim|xdc|bitstream` (areas/engine/cli.rs).
//!
//! Long runs (minutes to an hour on 2 shared cores): none of this is in `cargo xtask test`; the
//! register file's netlist runs in `engine:rtl-units`, and the whole v2 engine's netlist on a
//! short set (every opcode, RFC 7748 paused) in `engine:rtl-netlist` (areas/engine/rtl.rs).

use crate::bench::parse_flat_json;
use crate::build::gateware;
use crate::harness::soc::{build_firmware, Soc};
use crate::setup;
use crate::steps::{BenchProvider, BenchResults};
use crate::supervisor;
use crate::util;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "engine-ecp5", timeout: Duration::from_secs(150 * 60), run: |_| place(&[], None, false) },
        BenchProvider { name: "trng-ecp5", timeout: Duration::from_secs(60 * 60), run: |_| trng_place() },
        BenchProvider {
            name: "board-ecp5",
            timeout: Duration::from_secs(150 * 60),
            run: |c| bitstream("ulx3s", c.verbose).map(|(r, _)| r),
        },
        BenchProvider {
            name: "engine-netlist",
            timeout: Duration::from_secs(90 * 60),
            run: |c| netlist_sim(c.verbose, &[], 12).map(|_| pass()),
        },
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

/// Boards `cargo xtask gateware bitstream --board` knows (gateware/soc/board.py, BOARDS).
pub const BOARDS: &[&str] = &["ulx3s"];

/// The board SoC's map (csr.csv, soc.json: LiteX elaborates the whole SoC, PLL and rings
/// included) and firmware/soc-bench built against it, as a raw image, in `dir`: the board
/// build's first half (about a minute; `engine:soc-bench` runs it). Returns `dir` and the image.
pub fn board_firmware(board: &str, dir: &Path, verbose: bool) -> Result<(PathBuf, PathBuf)> {
    if !BOARDS.contains(&board) {
        bail!("unknown board {board:?}: one of {}", BOARDS.join(", "));
    }
    setup::require_apt(&[setup::apt::GATEWARE, setup::apt::RISCV_BINUTILS].concat())?;
    let py = gateware::python()?;
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(&dir)?;
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "soc.board", "--board", board, "--out"]).arg(&dir).arg("--map-only");
    supervisor::run_quiet(
        &mut cmd,
        Duration::from_secs(20 * 60),
        "the board SoC's map (python -m soc.board --map-only)",
        verbose,
    )?;
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("soc.json"))?).context("the board SoC's soc.json")?;
    if meta["clock_hz"]["sys"].as_u64().unwrap_or(0) == 0 || meta.get("rom_init").is_some() {
        bail!("{}: not a board SoC's soc.json", dir.join("soc.json").display());
    }
    let soc = Soc { dir: dir.clone(), meta };
    let elf = build_firmware(&soc, &[], verbose)?;
    let fw_elf = dir.join("soc-bench.elf");
    std::fs::copy(&elf, &fw_elf)?;
    let fw = dir.join("soc-bench.bin");
    supervisor::run(
        std::process::Command::new("riscv64-unknown-elf-objcopy").args(["-O", "binary"]).arg(&fw_elf).arg(&fw),
        Duration::from_secs(60),
        "objcopy (firmware image)",
    )?;
    if std::fs::metadata(&fw)?.len() == 0 {
        bail!("empty firmware image {}", fw.display());
    }
    Ok((dir, fw))
}

/// The SoC benchmark as a bitstream for `board` (gateware/soc/board.py): the SoC's map, the
/// firmware built against it (firmware/soc-bench), then the SoC with the firmware in its ROM
/// through yosys synth_ecp5, nextpnr-ecp5 (timing checked against the board's clocks) and
/// ecppack. Returns the flat figures and the bitstream's path; fails on an unknown board, a
/// tool's failure or a timing miss (the tool's message and log path in the error).
pub fn bitstream(board: &str, verbose: bool) -> Result<(BenchResults, PathBuf)> {
    let (dir, fw) =
        board_firmware(board, &util::target_dir().join("gateware").join(format!("board-{board}")), verbose)?;
    let py = gateware::python()?;
    let report = dir.join("report.json");
    std::fs::remove_file(&report).ok();
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "soc.board", "--board", board, "--out"]).arg(&dir).arg("--firmware").arg(&fw);
    supervisor::run(
        &mut cmd,
        Duration::from_secs(140 * 60),
        "the board bitstream (yosys synth_ecp5, nextpnr-ecp5, ecppack)",
    )?;
    let r = parse_flat_json(
        &std::fs::read_to_string(&report).with_context(|| format!("no report at {}", report.display()))?,
    )?;
    let bit = dir.join(format!("{board}.bit"));
    if !bit.is_file() {
        bail!("no bitstream at {}", bit.display());
    }
    Ok((r, bit))
}

/// ECP5 place and route of the whole TRNG (gateware/trng/place.py): flat figures, timing
/// reported (`ecp5_trng_timing_met`), a tool failure is an error.
pub fn trng_place() -> Result<BenchResults> {
    let py = gateware::python()?;
    let dir = util::target_dir().join("gateware").join("trng-ecp5");
    std::fs::create_dir_all(&dir)?;
    let out = dir.join("place.json");
    std::fs::remove_file(&out).ok();
    let mut cmd = gateware::py_command(&py);
    cmd.args(["-m", "trng.place", "--json"]).arg(&out).arg("--workdir").arg(dir.join("work"));
    supervisor::run(&mut cmd, Duration::from_secs(55 * 60), "trng.place (yosys synth_ecp5, nextpnr-ecp5)")?;
    parse_flat_json(&std::fs::read_to_string(&out).with_context(|| format!("no place report at {}", out.display()))?)
}
