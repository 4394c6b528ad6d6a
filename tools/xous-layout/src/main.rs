//! `xous-layout`: see the library doc and docs/sim-boot.md.

use anyhow::{bail, Context, Result};
use clap::Parser;
use std::path::PathBuf;
use xous_layout::{elf, layout, tags, Params, Program};

fn num(s: &str) -> Result<u32, String> {
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(&h.replace('_', ""), 16)
    } else {
        s.replace('_', "").parse()
    };
    r.map_err(|e| format!("{s:?} is not a 32-bit number ({e})"))
}

/// NAME:START:SIZE, NAME at most 4 ASCII characters.
fn region(s: &str) -> Result<tags::Region, String> {
    let p: Vec<&str> = s.split(':').collect();
    if p.len() != 3 || p[0].is_empty() || p[0].len() > 4 || !p[0].is_ascii() {
        return Err(format!("{s:?}: expected NAME:START:SIZE with a NAME of 1-4 ASCII characters"));
    }
    let mut n = [0u8; 4];
    n[..p[0].len()].copy_from_slice(p[0].as_bytes());
    Ok(tags::Region { name: u32::from_le_bytes(n), start: num(p[1])?, size: num(p[2])? })
}

#[derive(Parser)]
#[command(
    about = "Lay out main RAM (ram.bin), a machine-mode start stub (rom.bin) and a manifest (layout.json) that boot the Xous kernel without the upstream loader"
)]
struct Cli {
    /// The kernel ELF (PID 1), linked at 0xffd0_0000.
    #[arg(long)]
    kernel: PathBuf,
    /// A program ELF; PIDs 2, 3, ... in the order given.
    #[arg(long = "program")]
    programs: Vec<PathBuf>,
    /// Process names (PNam) in program order; default: the file names.
    #[arg(long = "name")]
    names: Vec<String>,
    #[arg(long, value_parser = num, default_value = "0x40000000")]
    ram_base: u32,
    #[arg(long, value_parser = num, default_value = "0x01000000")]
    ram_size: u32,
    /// Base of the ROM the stub is linked for (litex_sim: 0).
    #[arg(long, value_parser = num, default_value = "0")]
    rom_base: u32,
    /// Extra memory region NAME:START:SIZE (repeatable).
    #[arg(long = "region", value_parser = region)]
    regions: Vec<tags::Region>,
    /// Take the RAM name and the MREx regions from an unsigned args image (xous-create-image's
    /// output, which reads them from the SoC's SVD).
    #[arg(long)]
    regions_from: Option<PathBuf>,
    /// Do not assemble the start stub (no rom.bin).
    #[arg(long)]
    no_stub: bool,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("xous-layout: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(c: Cli) -> Result<()> {
    if !c.names.is_empty() && c.names.len() != c.programs.len() {
        bail!("{} --name for {} --program", c.names.len(), c.programs.len());
    }
    let mut p =
        Params { ram_base: c.ram_base, ram_size: c.ram_size, ram_name: tags::name_word(b"SrEx"), regions: c.regions };
    if let Some(img) = &c.regions_from {
        let d = std::fs::read(img).with_context(|| format!("reading {}", img.display()))?;
        let (name, regions) = tags::regions_from_image(&d).with_context(|| img.display().to_string())?;
        p.ram_name = name;
        p.regions.extend(regions);
    }
    let stem = |p: &PathBuf| p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let kernel = Program { name: "kernel".into(), elf: elf::load(&c.kernel).context("kernel")? };
    let mut programs = Vec::new();
    for (i, path) in c.programs.iter().enumerate() {
        programs.push(Program { name: c.names.get(i).cloned().unwrap_or_else(|| stem(path)), elf: elf::load(path)? });
    }
    let l = layout::build(&p, &kernel, &programs)?;
    let w = xous_layout::write(&l, c.rom_base, &c.out, !c.no_stub)?;
    let k = l.kernel();
    println!(
        "xous-layout: {} ({} bytes at {:#010x}), {}{}",
        w.ram.display(),
        l.ram_image().len(),
        p.ram_base,
        w.rom.map(|r| format!("{} (at {:#010x}), ", r.display(), c.rom_base)).unwrap_or_default(),
        w.manifest.display()
    );
    println!(
        "  kernel entry {:#010x} satp {:#010x} sp {:#010x}; a0 {:#010x} a1 {:#010x} a2 {:#010x}",
        k.entry, k.satp, k.sp, l.args_va, l.procs_va, l.tracker_va
    );
    for pr in &l.processes {
        println!(
            "  PID {:2} {:16} satp {:#010x} entry {:#010x} {:5} pages",
            pr.pid, pr.name, pr.satp, pr.entry, pr.pages
        );
    }
    println!(
        "  RAM used {:#010x}..{:#010x} ({} KiB of {} KiB)",
        p.ram_base,
        l.end_used,
        (l.end_used - p.ram_base) / 1024,
        p.ram_size / 1024
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_regions_parse_or_say_why_not() {
        assert_eq!(num("0x4000_0000"), Ok(0x4000_0000));
        assert_eq!(num("4096"), Ok(4096));
        assert!(num("0x1_0000_0000").unwrap_err().contains("not a 32-bit number"));
        assert!(num("16M").unwrap_err().contains("\"16M\""));
        let r = region("SimC:0xF003F000:0x1000").unwrap();
        assert_eq!((r.name, r.start, r.size), (u32::from_le_bytes(*b"SimC"), 0xf003_f000, 0x1000));
        assert_eq!(region("ab:0:4096").unwrap().name, u32::from_le_bytes(*b"ab\0\0"));
        for bad in ["toolong:0:0x1000", ":0:0x1000", "CSRs:0", "CSRs:0:1:2", "CSRs:x:0x1000"] {
            assert!(region(bad).is_err(), "{bad}");
        }
    }
}
