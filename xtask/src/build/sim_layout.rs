//! Boot files for the simulated Precursor (docs/sim-boot.md) from the
//! device image's ELFs, laid out by tools/xous-layout without the upstream loader:
//! target/sim/ram.bin (main RAM), rom.bin (machine-mode start stub), layout.json (what is
//! where), args.bin (the argument tags alone).
//!
//! The device image is built first (`image::build_for`): its unsigned args image, made by
//! xous-create-image from the same ELFs, supplies the memory regions (from Precursor's SVD) and
//! is the independent reference the tags written here are checked against. `xous-read-tags`
//! (xous-tools) must read every tag of args.bin with a good CRC.
//!
//! `cargo xtask sim-layout` and the steps `sim:layout` and `sim:boot-probe` are in
//! areas/sim/layout.rs.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::build::device_xous;
use crate::build::power::{Extra, PowerPids};
use crate::util;
use xous_layout::{elf, layout, tags, Params, Program};

/// Precursor's main RAM (SRAM_EXT in utralib's SVD; litex_sim's main_ram base).
pub const RAM_BASE: u32 = 0x4000_0000;
pub const RAM_SIZE: u32 = 0x0100_0000;
/// litex_sim's ROM (the CPU's reset address).
pub const ROM_BASE: u32 = 0;

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
pub fn build(out: &Path, extra: &[Extra], features: &[&str], verbose: bool) -> Result<Built> {
    let power = PowerPids::of_image(extra);
    let image_path = sim_dir().join("reference").join("xous.img");
    let image = crate::build::image::build_for(&image_path, &None, &power, features, verbose)?;
    let presign = image.path.with_extension("presign.img");
    // the ELFs the image was made of (built once: no second cargo run)
    let kernel_path = image.kernel.clone();
    let mut program_paths = image.programs.clone();
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
    if pa.len() != 1
        || pb.len() != 1
        || pa[0].data.len() < pb[0].data.len()
        || pa[0].data[..pb[0].data.len()] != pb[0].data[..]
    {
        bail!("tag PNam differs from xous-create-image's");
    }
    let (a, b) = (pick(ours, b"IniE"), pick(&theirs, b"IniE"));
    if a.len() < b.len() {
        bail!("{} IniE tags, xous-create-image wrote {}", a.len(), b.len());
    }
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let pid = i + 2;
        if x.data.len() != y.data.len() || x.data[1] != y.data[1] {
            bail!(
                "PID {pid}: IniE entry/section count differ from xous-create-image's ({:x?} vs {:x?})",
                x.data,
                y.data
            );
        }
        for (s, t) in x.data[2..].chunks(2).zip(y.data[2..].chunks(2)) {
            let (flags, size_ours, size_theirs) = (s[1] >> 24, s[1] & 0xff_ffff, t[1] & 0xff_ffff);
            let eh = flags & (tags::MINIELF_FLG_EHF | tags::MINIELF_FLG_EHH) != 0;
            if s[0] != t[0]
                || flags != t[1] >> 24
                || size_theirs < size_ours
                || size_theirs - size_ours >= 8
                || (eh && size_ours != size_theirs)
            {
                bail!(
                    "PID {pid}: IniE section {:#010x} size/flags {:#010x}, xous-create-image has {:#010x} {:#010x}",
                    s[0],
                    s[1],
                    t[0],
                    t[1]
                );
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
