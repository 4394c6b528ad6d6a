//! `cargo xtask sim-layout`: boot files for the simulated Precursor (docs/sim-boot.md) from the
//! device image's ELFs, laid out by tools/xous-layout without the upstream loader:
//! target/sim/ram.bin (main RAM), rom.bin (machine-mode start stub), layout.json (what is
//! where), args.bin (the argument tags alone).
//!
//! The device image is built first (`device_image::build`): its unsigned args image, made by
//! xous-create-image from the same ELFs, supplies the memory regions (from Precursor's SVD) and
//! is the independent reference the tags written here are checked against. `xous-read-tags`
//! (xous-tools) must read every tag of args.bin with a good CRC.
//!
//! Step `sim:boot-probe` boots a layout on the simulated SoC (docs/sim.md): a probe that stands
//! in for the kernel (tools/xous-layout/probe/) checks the entry contract on the CPU's MMU and
//! enters a user program; it does not need the TRNG or anything else the real kernel touches.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::device_image::{Extra, PowerPids};
use crate::{device_xous, util};
use xous_layout::{elf, layout, tags, Params, Program};

/// Precursor's main RAM (SRAM_EXT in utralib's SVD; litex_sim's main_ram base).
pub const RAM_BASE: u32 = 0x4000_0000;
pub const RAM_SIZE: u32 = 0x0100_0000;
/// litex_sim's ROM (the CPU's reset address).
pub const ROM_BASE: u32 = 0;

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

pub fn sim_dir() -> PathBuf {
    util::target_dir().join("sim")
}

pub struct Built {
    pub dir: PathBuf,
    pub layout: layout::Layout,
}

/// Process names as the image's PNam tag has them.
fn program_name(p: &Path) -> String {
    p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Lay out the device image's programs, then `extra` (PIDs after them), into `out`. The kernel
/// and xous-susres are built for this program list's power PIDs (`PowerPids::of_image`).
pub fn build(out: &Path, extra: &[Extra], verbose: bool) -> Result<Built> {
    let power = PowerPids::of_image(extra);
    let image_path = sim_dir().join("reference").join("xous.img");
    let image = crate::device_image::build_for(&image_path, &None, &power, verbose)?;
    let presign = image.path.with_extension("presign.img");
    let kernel_path = device_xous::ensure_kernel(&power, verbose)?;
    let mut program_paths = crate::device_image::image_programs(&power, verbose)?;
    program_paths.extend(extra.iter().map(|e| e.elf.clone()));
    let reference = std::fs::read(&presign).with_context(|| format!("reading {}", presign.display()))?;
    let (ram_name, regions) = tags::regions_from_image(&reference).with_context(|| presign.display().to_string())?;
    let params = Params { ram_base: RAM_BASE, ram_size: RAM_SIZE, ram_name, regions };
    let kernel = Program { name: "kernel".into(), elf: elf::load(&kernel_path).context("kernel")? };
    let mut programs = Vec::new();
    for p in &program_paths {
        programs.push(Program { name: program_name(p), elf: elf::load(p)? });
    }
    let l = layout::build(&params, &kernel, &programs)?;
    let names: Vec<(u32, String)> = l.processes.iter().map(|p| (p.pid, p.name.clone())).collect();
    power.check(&names, extra).context("the power PIDs against the layout")?;
    let w = xous_layout::write(&l, ROM_BASE, out, true)?;
    cross_check(&l.tags, &reference)?;
    read_tags_check(&device_xous::ensure_tools(verbose)?.read_tags, &w.args, l.tags.len())?;
    Ok(Built { dir: out.to_path_buf(), layout: l })
}

/// Our tags against xous-create-image's for the same ELFs: same XArg RAM name, same MREx, one
/// IniE per program with the same entry and the same sections (address and flags; the sizes
/// may differ only by the padding xous-create-image adds to align the next section in its
/// payload, and not at all for .eh_frame/.eh_frame_hdr, which the kernel reads), the same
/// PNam entries. Programs after the image's (`--extra`) are not in the reference.
pub fn cross_check(ours: &[tags::Tag], reference_image: &[u8]) -> Result<()> {
    let theirs = tags::decode(reference_image).context("reference image")?;
    let pick = |t: &[tags::Tag], n: &[u8; 4]| t.iter().filter(|t| &t.name == n).cloned().collect::<Vec<_>>();
    if pick(ours, b"MREx") != pick(&theirs, b"MREx") {
        bail!("tag MREx differs from xous-create-image's");
    }
    let (pa, pb) = (pick(ours, b"PNam"), pick(&theirs, b"PNam"));
    if pa.len() != 1 || pb.len() != 1 || pa[0].data.len() < pb[0].data.len() || pa[0].data[..pb[0].data.len()] != pb[0].data[..] {
        bail!("tag PNam differs from xous-create-image's");
    }
    let (a, b) = (pick(ours, b"IniE"), pick(&theirs, b"IniE"));
    if a.len() < b.len() {
        bail!("{} IniE tags, xous-create-image wrote {}", a.len(), b.len());
    }
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let pid = i + 2;
        if x.data.len() != y.data.len() || x.data[1] != y.data[1] {
            bail!("PID {pid}: IniE entry/section count differ from xous-create-image's ({:x?} vs {:x?})", x.data, y.data);
        }
        for (s, t) in x.data[2..].chunks(2).zip(y.data[2..].chunks(2)) {
            let (flags, size_ours, size_theirs) = (s[1] >> 24, s[1] & 0xff_ffff, t[1] & 0xff_ffff);
            let eh = flags & (tags::MINIELF_FLG_EHF | tags::MINIELF_FLG_EHH) != 0;
            if s[0] != t[0] || flags != t[1] >> 24 || size_theirs < size_ours || size_theirs - size_ours >= 8 || (eh && size_ours != size_theirs) {
                bail!("PID {pid}: IniE section {:#010x} size/flags {:#010x}, xous-create-image has {:#010x} {:#010x}", s[0], s[1], t[0], t[1]);
            }
        }
    }
    let xa = |t: &[tags::Tag]| t[0].data[4];
    if xa(ours) != xa(&theirs) {
        bail!("XArg RAM name differs from xous-create-image's");
    }
    Ok(())
}

/// xous-read-tags (xous-tools) reads `args` and reports every tag's CRC as OK.
pub fn read_tags_check(read_tags: &Path, args: &Path, count: usize) -> Result<()> {
    let mut c = Command::new(read_tags);
    c.arg(args);
    let out = crate::supervisor::run_capture(&mut c, Duration::from_secs(60), "xous-read-tags")?;
    let ok = out.lines().filter(|l| l.trim_end().ends_with("CRC: OK")).count();
    if ok != count {
        bail!("xous-read-tags {}: {ok} tags with a good CRC, expected {count}:\n{out}", args.display());
    }
    Ok(())
}

fn print(b: &Built) {
    let l = &b.layout;
    let k = l.kernel();
    println!("sim-layout: {} (ram.bin {} bytes at {RAM_BASE:#010x}, RAM {RAM_SIZE:#x}; rom.bin at {ROM_BASE:#x}; layout.json)", b.dir.display(), l.ram_image().len());
    println!("  kernel: pc {:#010x} satp {:#010x} sp {:#010x}; a0 {:#010x} a1 {:#010x} a2 {:#010x} a7 0", k.entry, k.satp, k.sp, l.args_va, l.procs_va, l.tracker_va);
    for p in &l.processes {
        println!("  PID {:2} {:16} satp {:#010x} entry {:#010x} {:4} pages", p.pid, p.name, p.satp, p.entry, p.pages);
    }
    println!("  RAM used {RAM_BASE:#010x}..{:#010x} ({} KiB); tags checked against xous-create-image and xous-read-tags", l.end_used, (l.end_used - RAM_BASE) / 1024);
}

pub fn run(a: SimLayoutArgs, verbose: bool) -> Result<()> {
    let out = a.out.unwrap_or_else(sim_dir);
    let extra: Vec<Extra> = a.extra.iter().cloned().map(Extra::app).collect();
    let b = build(&out, &extra, verbose)?;
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

pub fn test_steps() -> Vec<crate::steps::TestStep> {
    vec![
        crate::steps::TestStep { name: "sim:layout", timeout: Duration::from_secs(3000), run: test_step },
        crate::steps::TestStep { name: "sim:boot-probe", timeout: Duration::from_secs(1200), run: boot_probe },
    ]
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
    gnu("riscv64-unknown-elf-as", &[&o("-march=rv32ima_zicsr"), &o("-mabi=ilp32"), &o("-o"), obj.as_os_str(), src.as_os_str()])?;
    let link = src_dir.join("link.ld");
    gnu(
        "riscv64-unknown-elf-ld",
        &[&o("-m"), &o("elf32lriscv"), &o("-nostdlib"), &o("-e"), &o("_start"), &o("--defsym"), &o(&format!("PROBE_BASE={base:#x}")), &o("-T"), link.as_os_str(), &o("-o"), elf.as_os_str(), obj.as_os_str()],
    )?;
    Ok(elf)
}

/// Lay out the probe (kernel stand-in + a user program) and boot it on the simulated SoC; the
/// probe prints `VERDICT sim-layout/boot PASS|FAIL` and finishes the simulation.
fn boot_probe(_ctx: &crate::Ctx) -> Result<()> {
    crate::setup::require_apt(crate::sim::APT)?;
    let dir = sim_dir().join("boot-probe");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let kernel = probe_elf("kernel", layout::KERNEL_LOAD_OFFSET, &dir)?;
    let user = probe_elf("user", 0x1_0000, &dir)?;
    // Precursor's CSR region (SVD); the probe maps its UART and simctl pages itself
    let params = Params { ram_base: RAM_BASE, ram_size: RAM_SIZE, ram_name: tags::name_word(b"SrEx"), regions: vec![tags::Region { start: 0xf000_0000, size: 0x4_0000, name: tags::name_word(b"CSRs") }] };
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
    let py = crate::gateware::python()?;
    let _ = std::fs::remove_file(json);
    let mut c = crate::gateware::py_command(&py);
    c.args(["-m", "precursor.run", "--timeout", "600", "--expect", expect, "--json"]).arg(json).arg("--rom").arg(rom).arg("--ram").arg(ram);
    let _ = crate::supervisor::run_capture(&mut c, Duration::from_secs(1100), "the boot probe on the simulated Precursor");
    let text = std::fs::read_to_string(json).with_context(|| format!("the simulator wrote no summary ({})", json.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", json.display()))
}

pub fn test_step(_ctx: &crate::Ctx) -> Result<()> {
    crate::setup::require_apt(&["binutils-riscv64-unknown-elf"])?;
    let verbose = false;
    let kernel = device_xous::ensure_kernel(&PowerPids::of_image(&[]), verbose)?;
    // unit tests, with the kernel's own argument parser compiled in
    let src = device_xous::device_dir().join("src").join(format!("{}-{}", device_xous::KERNEL.name, device_xous::KERNEL.version));
    let mut c = util::cargo();
    c.args(["test", "--release", "-p", "xous-layout"]).env("XOUS_KERNEL_SRC", &src).env("XOUS_LAYOUT_REQUIRE_KERNEL", "1").current_dir(util::root());
    let out = crate::supervisor::run_capture(&mut c, Duration::from_secs(900), "cargo test -p xous-layout")?;
    if !out.contains("the_kernels_own_parser_reads_the_tags ... ok") {
        bail!("cargo test -p xous-layout did not run the kernel-parser test:\n{out}");
    }
    // the real boot files
    let b = build(&sim_dir(), &[], verbose)?;
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
    cli_refuses(&bin, &["--kernel", &k, "--program", "/nonexistent/prog", "--out", &o], "missing ELF: /nonexistent/prog does not exist")?;
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
    println!("sim:layout: unit tests (kernel parser included), boot files, tag cross-checks and bad-input refusals passed");
    Ok(())
}
