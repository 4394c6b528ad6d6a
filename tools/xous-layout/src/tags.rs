//! The kernel's boot argument tags (xous-kernel 0.9.37 `src/args.rs`, `src/mem.rs`,
//! `src/services.rs`; the same format xous-tools' `xous-create-image` writes): a list of
//! `name: u32, crc16: u16, words: u16, data: [u32; words]`, starting with `XArg` whose first
//! data word is the size of the whole list in bytes / 4.
//!
//! Tags written here, in the order the kernel relies on (`IniE` tags consecutive, in PID order):
//! - `XArg` [total words, version 1, RAM base, RAM size, RAM name]
//! - `MREx` [start, size, name, 0] per extra memory region (the page tracker covers them)
//! - `IniE` per program: [load offset, entry, (vaddr, size | flags << 24)...]; the kernel reads
//!   the `.eh_frame`/`.eh_frame_hdr` flags. The load offset (where a loader copies the payload
//!   from) is 0: nothing is copied at boot here, the payload is already in RAM.
//! - `XKrn` [load offset 0, text vaddr, text size, data vaddr, data size, bss size, entry]
//! - `PNam` [(pid, length, UTF-8 name padded to 4 bytes)...]

use anyhow::{bail, Context, Result};

use crate::elf::{Elf, Section};

pub const MINIELF_FLG_W: u32 = 1;
pub const MINIELF_FLG_NC: u32 = 2;
pub const MINIELF_FLG_X: u32 = 4;
pub const MINIELF_FLG_EHF: u32 = 8;
pub const MINIELF_FLG_EHH: u32 = 0x10;

/// CRC-16/X-25 (reflected CCITT, init and xorout 0xffff): the tags' checksum.
pub fn crc16_x25(data: &[u8]) -> u16 {
    let mut crc: u16 = 0xffff;
    for &b in data {
        crc ^= b as u16;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x8408 } else { crc >> 1 };
        }
    }
    !crc
}

pub fn name_word(n: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*n)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tag {
    pub name: [u8; 4],
    pub data: Vec<u32>,
}

impl Tag {
    pub fn name_str(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Region {
    pub start: u32,
    pub size: u32,
    pub name: u32,
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Serialise tags; the first must be `XArg`, whose total-size word is filled in here.
pub fn encode(tags: &[Tag]) -> Result<Vec<u8>> {
    if tags.first().map(|t| &t.name) != Some(b"XArg") {
        bail!("the first tag must be XArg");
    }
    let total: usize = tags.iter().map(|t| 2 + t.data.len()).sum();
    let mut out = Vec::with_capacity(total * 4);
    for (i, t) in tags.iter().enumerate() {
        let mut data = t.data.clone();
        if i == 0 {
            data[0] = total as u32;
        }
        if data.len() > u16::MAX as usize {
            bail!("tag {} has {} words, more than a tag can hold", t.name_str(), data.len());
        }
        let b = bytes(&data);
        out.extend_from_slice(&t.name);
        out.extend_from_slice(&crc16_x25(&b).to_le_bytes());
        out.extend_from_slice(&(data.len() as u16).to_le_bytes());
        out.extend_from_slice(&b);
    }
    Ok(out)
}

/// Parse tags (checking each CRC and the XArg size) from the start of `d`.
pub fn decode(d: &[u8]) -> Result<Vec<Tag>> {
    let word = |o: usize| u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]);
    if d.len() < 28 || &d[0..4] != b"XArg" {
        bail!("bad tags: the list does not start with an XArg tag");
    }
    let total = word(8) as usize * 4;
    if total > d.len() {
        bail!("bad tags: XArg says {total} bytes, only {} present", d.len());
    }
    let mut tags = Vec::new();
    let mut o = 0;
    while o < total {
        if o + 8 > total {
            bail!("bad tags: truncated tag header at {o:#x}");
        }
        let name: [u8; 4] = d[o..o + 4].try_into().unwrap();
        let crc = u16::from_le_bytes([d[o + 4], d[o + 5]]);
        let n = u16::from_le_bytes([d[o + 6], d[o + 7]]) as usize;
        let body = d
            .get(o + 8..o + 8 + n * 4)
            .filter(|_| o + 8 + n * 4 <= total)
            .with_context(|| format!("bad tags: {} at {o:#x} runs past the list", String::from_utf8_lossy(&name)))?;
        let got = crc16_x25(body);
        if got != crc {
            bail!(
                "bad tags: {} at {o:#x}: CRC-16 mismatch ({got:#06x}, stored {crc:#06x})",
                String::from_utf8_lossy(&name)
            );
        }
        tags.push(Tag { name, data: (0..n).map(|i| word(o + 8 + i * 4)).collect() });
        o += 8 + n * 4;
    }
    Ok(tags)
}

pub fn xarg(ram_base: u32, ram_size: u32, ram_name: u32) -> Tag {
    Tag { name: *b"XArg", data: vec![0, 1, ram_base, ram_size, ram_name] }
}

pub fn mrex(regions: &[Region]) -> Tag {
    Tag { name: *b"MREx", data: regions.iter().flat_map(|r| [r.start, r.size, r.name, 0]).collect() }
}

/// The flags byte of one IniE section, from its ELF section header.
pub fn section_flags(s: &Section) -> u32 {
    let mut f = 0;
    if s.write {
        f |= MINIELF_FLG_W;
    }
    if s.nobits {
        f |= MINIELF_FLG_NC;
    }
    if s.exec {
        f |= MINIELF_FLG_X;
    }
    match s.name.as_str() {
        ".eh_frame" => f |= MINIELF_FLG_EHF,
        ".eh_frame_hdr" => f |= MINIELF_FLG_EHH,
        _ => {}
    }
    f
}

/// The IniE tag of one program: its allocated sections (or, for an ELF without section headers,
/// its loadable segments).
pub fn inie(e: &Elf) -> Result<Tag> {
    let mut data = vec![0, e.entry];
    let list: Vec<(u32, u32, u32)> = if e.sections.is_empty() {
        e.segments
            .iter()
            .map(|s| {
                (
                    s.vaddr,
                    s.memsz,
                    if s.flags & crate::elf::PF_W != 0 { MINIELF_FLG_W } else { 0 }
                        | if s.flags & crate::elf::PF_X != 0 { MINIELF_FLG_X } else { 0 },
                )
            })
            .collect()
    } else {
        e.sections.iter().map(|s| (s.addr, s.size, section_flags(s))).collect()
    };
    for (addr, size, flags) in list {
        if size > 0x00ff_ffff {
            bail!("section at {addr:#010x} is {size:#x} bytes, more than an IniE section can describe (16 MiB)");
        }
        data.push(addr);
        data.push(size | flags << 24);
    }
    Ok(Tag { name: *b"IniE", data })
}

/// The XKrn tag: text = the non-writable segments, data/bss = the writable ones.
pub fn xkrn(e: &Elf) -> Tag {
    let ro: Vec<_> = e.segments.iter().filter(|s| s.flags & crate::elf::PF_W == 0).collect();
    let rw: Vec<_> = e.segments.iter().filter(|s| s.flags & crate::elf::PF_W != 0).collect();
    let text = ro.first().map(|s| s.vaddr).unwrap_or(0);
    let text_size = ro.last().map(|s| s.end() as u32 - text).unwrap_or(0);
    let data = rw.first().map(|s| s.vaddr).unwrap_or(0);
    let data_size: u32 = rw.iter().map(|s| s.data.len() as u32).sum();
    let total = rw.last().map(|s| s.end() as u32 - data).unwrap_or(0);
    Tag { name: *b"XKrn", data: vec![0, text, text_size, data, data_size, total - data_size, e.entry] }
}

pub fn pnam(names: &[(u32, String)]) -> Tag {
    let mut b = Vec::new();
    for (pid, name) in names {
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&(name.len() as u32).to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        while b.len() % 4 != 0 {
            b.push(0);
        }
    }
    Tag { name: *b"PNam", data: b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect() }
}

/// Regions from an `MREx` tag.
pub fn regions_of(t: &Tag) -> Vec<Region> {
    t.data.chunks_exact(4).map(|c| Region { start: c[0], size: c[1], name: c[2] }).collect()
}

/// (RAM name, regions) from the tags of an existing args image (xous-create-image's output).
pub fn regions_from_image(d: &[u8]) -> Result<(u32, Vec<Region>)> {
    let tags = decode(d)?;
    let ram_name = tags[0].data.get(4).copied().context("bad tags: XArg has fewer than 5 words")?;
    let regions = tags.iter().find(|t| &t.name == b"MREx").map(regions_of).unwrap_or_default();
    Ok((ram_name, regions))
}

pub fn name_of(w: u32) -> String {
    w.to_le_bytes().iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value() {
        assert_eq!(crc16_x25(b"123456789"), 0x906e);
    }

    #[test]
    fn round_trip_and_pnam_padding() {
        let tags = vec![
            xarg(0x4000_0000, 0x100_0000, name_word(b"SrEx")),
            mrex(&[Region { start: 0xf000_0000, size: 0x1000, name: name_word(b"CSRs") }]),
            pnam(&[(1, "kernel".into()), (2, "abc".into())]),
        ];
        let enc = encode(&tags).unwrap();
        let dec = decode(&enc).unwrap();
        assert_eq!(dec[0].data[0] as usize * 4, enc.len());
        assert_eq!(dec[1..], tags[1..]);
        // pid 1, len 6, "kernel" + 2 pad; pid 2, len 3, "abc" + 1 pad
        assert_eq!(dec[2].data.len(), 2 + 2 + 2 + 1);
        let mut bad = enc.clone();
        bad[40] ^= 1;
        assert!(format!("{:#}", decode(&bad).unwrap_err()).contains("CRC-16 mismatch"));
    }
}
