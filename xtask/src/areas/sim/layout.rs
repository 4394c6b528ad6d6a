//! `cargo xtask sim-layout` (the boot files, build/sim_layout.rs) and its steps:
//!
//! * `sim:layout`: tools/xous-layout's unit tests (with the kernel's own argument parser
//!   compiled in), the real boot files with their tag cross-checks, and the CLI's refusals of
//!   bad input;
//! * `sim:boot-probe`: boots a layout on the simulated SoC (docs/sim.md): a probe that stands in
//!   for the kernel (tools/xous-layout/probe/) checks the entry contract on the CPU's MMU and
//!   enters a user program; it does not need the TRNG or anything else the real kernel touches.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use xous_layout::{elf, layout, tags, Params, Program};

use crate::build::device_xous;
use crate::build::power::{Extra, PowerPids};
use crate::build::sim_layout::{build, sim_dir, Built, RAM_BASE, RAM_SIZE, ROM_BASE};
use crate::ctx::Ctx;
use crate::steps::{step, TestStep};
use crate::util;

#[derive(Args, Debug)]
pub struct SimLayoutArgs {
    /// Output directory (default: target/sim).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A further program ELF after the image's programs (PID 9, 10, ...), e.g. a device-built
    /// test client (repeatable). An ordinary app: it may not power the device off.
    #[arg(long = "extra")]
    pub extra: Vec<PathBuf>,
}

fn print(b: &Built) {
    let l = &b.layout;
    let k = l.kernel();
    println!("sim-layout: {} (ram.bin {} bytes at {RAM_BASE:#010x}, RAM {RAM_SIZE:#x}; rom.bin at {ROM_BASE:#x}; layout.json)", b.dir.display(), l.ram_image().len());
    println!(
        "  kernel: pc {:#010x} satp {:#010x} sp {:#010x}; a0 {:#010x} a1 {:#010x} a2 {:#010x} a7 0",
        k.entry, k.satp, k.sp, l.args_va, l.procs_va, l.tracker_va
    );
    for p in &l.processes {
        println!("  PID {:2} {:16} satp {:#010x} entry {:#010x} {:4} pages", p.pid, p.name, p.satp, p.entry, p.pages);
    }
    println!(
        "  RAM used {RAM_BASE:#010x}..{:#010x} ({} KiB); tags checked against xous-create-image and xous-read-tags",
        l.end_used,
        (l.end_used - RAM_BASE) / 1024
    );
}

pub fn run(a: SimLayoutArgs, verbose: bool) -> Result<()> {
    let out = a.out.unwrap_or_else(sim_dir);
    let extra: Vec<Extra> = a.extra.iter().cloned().map(Extra::app).collect();
    let b = build(&out, &extra, &[], verbose)?;
    print(&b);
    Ok(())
}

/// The CLI refuses bad input: exit status 1 and one line on stderr (a malformed flag: clap's
/// usage error, status 2, whose first line names the problem).
fn cli_refuses(bin: &Path, args: &[&str], expect: &str) -> Result<()> {
    let o = Command::new(bin).args(args).output().with_context(|| format!("running {}", bin.display()))?;
    let err = String::from_utf8_lossy(&o.stderr);
    let ok = match o.status.code() {
        Some(1) => err.lines().count() == 1 && err.contains(expect),
        Some(2) => err.lines().next().map(|l| l.contains(expect)).unwrap_or(false),
        _ => false,
    };
    if !ok {
        bail!("xous-layout {args:?}: expected a refusal naming {expect:?}, got status {:?}: {err}", o.status.code());
    }
    Ok(())
}

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("sim:layout", 3000, test_step), step!("sim:boot-probe", 1200, boot_probe)]
}

fn gnu(tool: &str, args: &[&std::ffi::OsStr]) -> Result<()> {
    let o = Command::new(tool).args(args).output().with_context(|| format!("running {tool}"))?;
    if !o.status.success() {
        bail!("{tool} {:?}: {}", args, String::from_utf8_lossy(&o.stderr).trim());
    }
    Ok(())
}

/// Assemble and link one probe program (tools/xous-layout/probe/NAME.S) at `base`.
fn probe_elf(name: &str, base: u32, dir: &Path) -> Result<PathBuf> {
    let src_dir = util::root().join("tools/xous-layout/probe");
    let obj = dir.join(format!("{name}.o"));
    let elf = dir.join(format!("{name}.elf"));
    let src = src_dir.join(format!("{name}.S"));
    let o = |s: &str| std::ffi::OsString::from(s);
    gnu(
        "riscv64-unknown-elf-as",
        &[&o("-march=rv32ima_zicsr"), &o("-mabi=ilp32"), &o("-o"), obj.as_os_str(), src.as_os_str()],
    )?;
    let link = src_dir.join("link.ld");
    gnu(
        "riscv64-unknown-elf-ld",
        &[
            &o("-m"),
            &o("elf32lriscv"),
            &o("-nostdlib"),
            &o("-e"),
            &o("_start"),
            &o("--defsym"),
            &o(&format!("PROBE_BASE={base:#x}")),
            &o("-T"),
            link.as_os_str(),
            &o("-o"),
            elf.as_os_str(),
            obj.as_os_str(),
        ],
    )?;
    Ok(elf)
}

/// Lay out the probe (kernel stand-in + a user program) and boot it on the simulated SoC; the
/// probe prints `VERDICT sim-layout/boot PASS|FAIL` and finishes the simulation.
fn boot_probe(_ctx: &Ctx) -> Result<()> {
    crate::setup::require_apt(&[crate::setup::apt::LITEX_SIM, crate::setup::apt::RISCV_BINUTILS].concat())?;
    let dir = sim_dir().join("boot-probe");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let kernel = probe_elf("kernel", layout::KERNEL_LOAD_OFFSET, &dir)?;
    let user = probe_elf("user", 0x1_0000, &dir)?;
    // Precursor's CSR region (SVD); the probe maps its UART and simctl pages itself
    let params = Params {
        ram_base: RAM_BASE,
        ram_size: RAM_SIZE,
        ram_name: tags::name_word(b"SrEx"),
        regions: vec![tags::Region { start: 0xf000_0000, size: 0x4_0000, name: tags::name_word(b"CSRs") }],
    };
    let k = Program { name: "probe-kernel".into(), elf: elf::load(&kernel)? };
    let u = Program { name: "probe-user".into(), elf: elf::load(&user)? };
    let l = layout::build(&params, &k, &[u])?;
    let w = xous_layout::write(&l, ROM_BASE, &dir.join("out"), true)?;
    let pass = "VERDICT sim-layout/boot PASS";
    let r = run_probe(&w.rom.clone().unwrap(), &w.ram, pass, &dir.join("run.json"))?;
    if r["ok"] != true || r["expect"][pass].is_null() {
        bail!("the boot probe did not pass: {r}");
    }
    let cycles = r["expect"][pass]["cycle"].clone();
    // the MMU enforces these tables: PID 2's text page without its U bit faults on the first
    // fetch in user mode (instruction page fault, scause 12), which the probe reports
    let user_satp = l.processes[1].satp;
    let root = (user_satp & 0x3f_ffff) << 12;
    let entry = l.processes[1].entry;
    let rd = |pa: u32| u32::from_le_bytes(l.ram[(pa - RAM_BASE) as usize..][..4].try_into().unwrap());
    let l0 = (rd(root + (entry >> 22) * 4) >> 10) << 12;
    let pte_at = (l0 + ((entry >> 12) & 0x3ff) * 4 - RAM_BASE) as usize;
    let mut bad = l.ram_image().to_vec();
    bad[pte_at] &= !(layout::FLG_U as u8);
    let bad_ram = dir.join("ram-no-user-bit.bin");
    std::fs::write(&bad_ram, bad)?;
    let fault = "VERDICT sim-layout/boot FAIL -- unexpected trap scause=0000000c";
    let r = run_probe(&w.rom.unwrap(), &bad_ram, fault, &dir.join("run-no-user-bit.json"))?;
    if r["reason"] != "finish" || r["code"] != 1 || r["expect"][fault].is_null() {
        bail!("the boot probe did not catch a user page without its U bit: {r}");
    }
    println!("sim:boot-probe: the layout boots on the simulated SoC ({cycles} cycles to the verdict); a page without its U bit faults as it must");
    Ok(())
}

/// One run of the probe; the runner's summary (its exit status is judged by the caller).
fn run_probe(rom: &Path, ram: &Path, expect: &str, json: &Path) -> Result<serde_json::Value> {
    let py = crate::build::gateware::python()?;
    let _ = std::fs::remove_file(json);
    let mut c = crate::build::gateware::py_command(&py);
    c.args(["-m", "precursor.run", "--timeout", "600", "--expect", expect, "--json"])
        .arg(json)
        .arg("--rom")
        .arg(rom)
        .arg("--ram")
        .arg(ram);
    let _ =
        crate::supervisor::run_capture(&mut c, Duration::from_secs(1100), "the boot probe on the simulated Precursor");
    let text = std::fs::read_to_string(json)
        .with_context(|| format!("the simulator wrote no summary ({})", json.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", json.display()))
}

pub fn test_step(_ctx: &Ctx) -> Result<()> {
    crate::setup::require_apt(crate::setup::apt::RISCV_BINUTILS)?;
    let verbose = false;
    let kernel = device_xous::ensure_kernel(&PowerPids::of_image(&[]), verbose)?;
    // unit tests, with the kernel's own argument parser compiled in
    let src = device_xous::device_dir().join("src").join(format!(
        "{}-{}",
        device_xous::KERNEL.name,
        device_xous::KERNEL.version
    ));
    let mut c = util::cargo();
    c.args(["test", "--release", "-p", "xous-layout"])
        .env("XOUS_KERNEL_SRC", &src)
        .env("XOUS_LAYOUT_REQUIRE_KERNEL", "1")
        .current_dir(util::root());
    let out = crate::supervisor::run_capture(&mut c, Duration::from_secs(900), "cargo test -p xous-layout")?;
    if !out.contains("the_kernels_own_parser_reads_the_tags ... ok") {
        bail!("cargo test -p xous-layout did not run the kernel-parser test:\n{out}");
    }
    // the real boot files
    let b = build(&sim_dir(), &[], &[], verbose)?;
    print(&b);
    // the CLI on bad input
    let mut c = util::cargo();
    c.args(["build", "--release", "-q", "-p", "xous-layout"]).current_dir(util::root());
    crate::supervisor::run_capture(&mut c, Duration::from_secs(900), "cargo build -p xous-layout")?;
    let bin = util::target_dir().join("release").join("xous-layout");
    let scratch = sim_dir().join("bad-input");
    std::fs::create_dir_all(&scratch)?;
    let x86 = scratch.join("x86-64.elf");
    std::fs::write(&x86, std::fs::read("/bin/true").context("/bin/true as a foreign-architecture ELF")?)?;
    let k = kernel.to_string_lossy().into_owned();
    let o = scratch.to_string_lossy().into_owned();
    cli_refuses(
        &bin,
        &["--kernel", &k, "--program", "/nonexistent/prog", "--out", &o],
        "missing ELF: /nonexistent/prog does not exist",
    )?;
    cli_refuses(&bin, &["--kernel", &k, "--program", &x86.to_string_lossy(), "--out", &o], "wrong architecture")?;
    cli_refuses(&bin, &["--kernel", &k, "--ram-size", "0x10000", "--out", &o], "image does not fit RAM")?;
    cli_refuses(&bin, &["--kernel", &k, "--program", &k, "--out", &o], "reaches the kernel's area")?;
    // the kernel with its second loadable segment moved onto its first
    let mut d = std::fs::read(&kernel)?;
    let w = |d: &[u8], o: usize| u32::from_le_bytes(d[o..o + 4].try_into().unwrap()) as usize;
    let phoff = w(&d, 28);
    let first = w(&d, phoff + 8);
    d[phoff + 32 + 8..phoff + 32 + 12].copy_from_slice(&(first as u32 + 0x100).to_le_bytes());
    let overlap = scratch.join("overlapping-kernel.elf");
    std::fs::write(&overlap, d)?;
    cli_refuses(&bin, &["--kernel", &overlap.to_string_lossy(), "--out", &o], "overlapping segments")?;
    cli_refuses(&bin, &["--kernel", &k, "--region", "toolong:0:0x1000", "--out", &o], "NAME of 1-4 ASCII")?;
    println!(
        "sim:layout: unit tests (kernel parser included), boot files, tag cross-checks and bad-input refusals passed"
    );
    Ok(())
}
