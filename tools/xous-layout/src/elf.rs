//! The subset of ELF32 the layout needs: loadable segments (with their bytes) and the allocated
//! sections (for the IniE tag's section list). Every defect is a one-line error.

use anyhow::{bail, Context, Result};
use std::path::Path;

pub const EM_RISCV: u16 = 243;
const PT_LOAD: u32 = 1;
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
const SHT_NOBITS: u32 = 8;
const SHF_WRITE: u32 = 1;
const SHF_ALLOC: u32 = 2;
const SHF_EXECINSTR: u32 = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u32,
    pub memsz: u32,
    /// PF_* flags.
    pub flags: u32,
    /// The file bytes (`filesz` of them); the rest up to `memsz` is zero.
    pub data: Vec<u8>,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.vaddr as u64 + self.memsz as u64
    }
}

/// An allocated section (SHF_ALLOC), as the kernel's IniE tag describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub addr: u32,
    pub size: u32,
    pub write: bool,
    pub nobits: bool,
    pub exec: bool,
}

#[derive(Clone, Debug)]
pub struct Elf {
    pub entry: u32,
    pub segments: Vec<Segment>,
    pub sections: Vec<Section>,
}

fn machine_name(m: u16) -> &'static str {
    match m {
        3 => "x86",
        40 => "ARM",
        62 => "x86-64",
        183 => "AArch64",
        243 => "RISC-V",
        _ => "another architecture",
    }
}

/// Read and parse one ELF; errors name the file.
pub fn load(path: &Path) -> Result<Elf> {
    if !path.exists() {
        bail!("missing ELF: {} does not exist", path.display());
    }
    let d = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&d).with_context(|| path.display().to_string())
}

/// Parse an ELF32 little-endian RISC-V executable: loadable segments inside the file, not
/// overlapping in memory, the entry point inside one of them.
pub fn parse(d: &[u8]) -> Result<Elf> {
    if d.len() < 52 || &d[0..4] != b"\x7fELF" {
        bail!("not an ELF file");
    }
    let u16at = |o: usize| -> Result<u16> {
        d.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]])).context("truncated ELF")
    };
    let u32at = |o: usize| -> Result<u32> {
        d.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).context("truncated ELF")
    };
    let (class, endian) = (d[4], d[5]);
    let machine = if endian == 1 { u16at(18)? } else { u16::from_be_bytes([d[18], d[19]]) };
    if class != 1 || endian != 1 || machine != EM_RISCV {
        bail!(
            "wrong architecture: ELF for {} ({}-bit, {}, e_machine {machine}); Xous on Precursor needs 32-bit little-endian RISC-V (e_machine {EM_RISCV})",
            machine_name(machine),
            if class == 2 { 64 } else { 32 },
            if endian == 1 { "little-endian" } else { "big-endian" }
        );
    }
    let entry = u32at(24)?;
    let phoff = u32at(28)? as usize;
    let shoff = u32at(32)? as usize;
    let phentsize = u16at(42)? as usize;
    let phnum = u16at(44)? as usize;
    let shentsize = u16at(46)? as usize;
    let shnum = u16at(48)? as usize;
    let shstrndx = u16at(50)? as usize;
    if phnum == 0 {
        bail!("no program headers (not a linked executable)");
    }
    if phentsize < 32 {
        bail!("program header size {phentsize} is too small");
    }
    let mut segments = Vec::new();
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if u32at(o)? != PT_LOAD {
            continue;
        }
        let (offset, vaddr, filesz, memsz, flags) =
            (u32at(o + 4)?, u32at(o + 8)?, u32at(o + 16)?, u32at(o + 20)?, u32at(o + 24)?);
        if offset as u64 + filesz as u64 > d.len() as u64 {
            bail!(
                "segment {i} (file bytes {offset:#x}..{:#x}) runs past the end of the file ({:#x} bytes)",
                offset as u64 + filesz as u64,
                d.len()
            );
        }
        if filesz > memsz {
            bail!("segment {i} at {vaddr:#010x}: file size {filesz:#x} exceeds memory size {memsz:#x}");
        }
        if vaddr as u64 + memsz as u64 > 1 << 32 {
            bail!("segment {i} at {vaddr:#010x} (+{memsz:#x}) wraps past the top of the address space");
        }
        if memsz > 0 {
            segments.push(Segment {
                vaddr,
                memsz,
                flags,
                data: d[offset as usize..(offset + filesz) as usize].to_vec(),
            });
        }
    }
    if segments.is_empty() {
        bail!("no loadable segments");
    }
    segments.sort_by_key(|s| s.vaddr);
    for w in segments.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a.end() > b.vaddr as u64 {
            bail!(
                "overlapping segments: {:#010x}..{:#010x} and {:#010x}..{:#010x}",
                a.vaddr,
                a.end(),
                b.vaddr,
                b.end()
            );
        }
    }
    if !segments.iter().any(|s| entry >= s.vaddr && (entry as u64) < s.end()) {
        bail!("entry point {entry:#010x} is outside every loadable segment");
    }
    let mut sections = Vec::new();
    if shnum > 0 && shoff != 0 {
        if shentsize < 40 {
            bail!("section header size {shentsize} is too small");
        }
        let strtab = {
            let o = shoff + shstrndx * shentsize;
            let (off, size) = (u32at(o + 16)? as usize, u32at(o + 20)? as usize);
            d.get(off..off + size).context("section name table runs past the end of the file")?
        };
        for i in 0..shnum {
            let o = shoff + i * shentsize;
            let (name, ty, flags, addr, size) =
                (u32at(o)? as usize, u32at(o + 4)?, u32at(o + 8)?, u32at(o + 12)?, u32at(o + 20)?);
            if flags & SHF_ALLOC == 0 || size == 0 {
                continue;
            }
            let name = strtab
                .get(name..)
                .map(|s| s.split(|&b| b == 0).next().unwrap_or(&[]))
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .unwrap_or_default();
            sections.push(Section {
                name,
                addr,
                size,
                write: flags & SHF_WRITE != 0,
                nobits: ty == SHT_NOBITS,
                exec: flags & SHF_EXECINSTR != 0,
            });
        }
        sections.sort_by_key(|s| s.addr);
    }
    Ok(Elf { entry, segments, sections })
}

/// Synthetic ELFs for tests (here and in xtask's image tests).
pub mod testelf {
    use super::PT_LOAD;
    #[cfg(test)]
    use super::*;

    /// A minimal ELF32 (class, machine) whose PT_LOAD segments are (vaddr, memsz, filesz, flags);
    /// segment i's file bytes are the byte `0x40 + i` repeated, so loads can be checked.
    pub fn elf(class: u8, machine: u16, entry: u32, segs: &[(u32, u32, u32, u32)]) -> Vec<u8> {
        let phoff = 52u32;
        let mut off = phoff + 32 * segs.len() as u32;
        let mut d = vec![0u8; 52];
        d[0..4].copy_from_slice(b"\x7fELF");
        d[4] = class;
        d[5] = 1;
        d[6] = 1;
        d[16..18].copy_from_slice(&2u16.to_le_bytes());
        d[18..20].copy_from_slice(&machine.to_le_bytes());
        d[24..28].copy_from_slice(&entry.to_le_bytes());
        d[28..32].copy_from_slice(&phoff.to_le_bytes());
        d[40..42].copy_from_slice(&52u16.to_le_bytes());
        d[42..44].copy_from_slice(&32u16.to_le_bytes());
        d[44..46].copy_from_slice(&(segs.len() as u16).to_le_bytes());
        for &(vaddr, memsz, filesz, flags) in segs {
            for w in [PT_LOAD, off, vaddr, vaddr, filesz, memsz, flags | 4, 4096] {
                d.extend_from_slice(&w.to_le_bytes());
            }
            off += filesz;
        }
        for (i, &(_, _, filesz, _)) in segs.iter().enumerate() {
            d.extend(std::iter::repeat_n(0x40 + i as u8, filesz as usize));
        }
        d
    }

    #[cfg(test)]
    #[test]
    fn parses_segments_and_refuses_bad_input() {
        let e = parse(&elf(
            1,
            EM_RISCV,
            0x2000_0000,
            &[(0x2000_0000, 0x100, 0x80, PF_X), (0x2000_1000, 0x200, 0x10, PF_W)],
        ))
        .unwrap();
        assert_eq!(e.segments.len(), 2);
        assert_eq!(e.segments[1].data, vec![0x41; 0x10]);
        let err = |d: Vec<u8>| format!("{:#}", parse(&d).unwrap_err());
        assert!(err(elf(1, 62, 0x1000, &[(0x1000, 0x10, 0x10, 0)])).contains("wrong architecture: ELF for x86-64"));
        assert!(err(elf(2, EM_RISCV, 0x1000, &[(0x1000, 0x10, 0x10, 0)])).contains("64-bit"));
        assert!(err(b"#!/bin/sh\n".repeat(10)).contains("not an ELF"));
        let e = err(elf(1, EM_RISCV, 0x2000_0000, &[(0x2000_0000, 0x2000, 0x10, 0), (0x2000_1000, 0x100, 0x10, 0)]));
        assert!(e.contains("overlapping segments: 0x20000000..0x20002000 and 0x20001000..0x20001100"), "{e}");
        assert!(err(elf(1, EM_RISCV, 0x3000_0000, &[(0x2000_0000, 0x100, 0x10, 0)]))
            .contains("entry point 0x30000000 is outside"));
        let mut d = elf(1, EM_RISCV, 0x2000_0000, &[(0x2000_0000, 0x100, 0x80, 0)]);
        d.truncate(d.len() - 1);
        assert!(err(d).contains("runs past the end of the file"));
        let e = format!("{:#}", load(Path::new("/nonexistent/xous-names")).unwrap_err());
        assert_eq!(e, "missing ELF: /nonexistent/xous-names does not exist");
    }
}
