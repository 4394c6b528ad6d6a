//! xous-layout: boot the Xous kernel without the upstream loader. From the kernel ELF and the
//! program ELFs it lays out main RAM the way the kernel expects to find it (docs/sim-boot.md):
//! `ram.bin` (RAM contents), `rom.bin` (machine-mode start stub) and `layout.json` (what is
//! where), for litex_sim's `--ram-init` / `--rom-init`.

pub mod elf;
pub mod layout;
pub mod stub;
pub mod tags;

#[cfg(test)]
mod tests;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub use layout::{build, Layout, Params, Program};

/// The manifest written next to ram.bin / rom.bin.
#[derive(serde::Serialize)]
pub struct Manifest<'a> {
    pub format: u32,
    pub ram_base: u32,
    pub ram_size: u32,
    pub rom_base: u32,
    pub ram_file: &'a str,
    pub rom_file: &'a str,
    /// Register values the stub sets before `mret` into supervisor mode.
    pub entry: serde_json::Value,
    /// ram.bin holds RAM from `ram_base` up to here; RAM from here on must read as zero.
    pub end_used: u32,
    pub kernel_structures: serde_json::Value,
    pub regions: Vec<serde_json::Value>,
    pub processes: &'a [layout::ProcessInfo],
}

pub fn manifest(l: &Layout, rom_base: u32) -> serde_json::Value {
    let k = l.kernel();
    let m = Manifest {
        format: 1,
        ram_base: l.params.ram_base,
        ram_size: l.params.ram_size,
        rom_base,
        ram_file: "ram.bin",
        rom_file: "rom.bin",
        entry: serde_json::json!({
            "mode": "supervisor", "pc": k.entry, "satp": k.satp, "sp": k.sp,
            "a0_args": l.args_va, "a1_processes": l.procs_va, "a2_page_tracker": l.tracker_va, "a7_resume": 0,
        }),
        end_used: l.end_used,
        kernel_structures: serde_json::json!({
            "phys": l.kstruct.0, "bytes": l.kstruct.1, "virt": layout::KERNEL_ARGUMENT_OFFSET,
            "tags": l.tags.iter().map(|t| t.name_str()).collect::<Vec<_>>(),
            "page_tracker_bytes": l.tracker_len,
        }),
        regions: l
            .params
            .regions
            .iter()
            .map(|r| serde_json::json!({"name": tags::name_of(r.name), "start": r.start, "size": r.size}))
            .collect(),
        processes: &l.processes,
    };
    serde_json::to_value(&m).expect("manifest serialises")
}

pub struct Written {
    pub ram: PathBuf,
    pub rom: Option<PathBuf>,
    pub manifest: PathBuf,
    pub args: PathBuf,
}

/// Write ram.bin, args.bin (the tags alone, for `xous-read-tags`), rom.S/rom.bin (unless
/// `stub` is false) and layout.json into `dir`.
pub fn write(l: &Layout, rom_base: u32, dir: &Path, stub: bool) -> Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ram = dir.join("ram.bin");
    std::fs::write(&ram, l.ram_image()).with_context(|| format!("writing {}", ram.display()))?;
    let args = dir.join("args.bin");
    std::fs::write(&args, tags::encode(&l.tags)?)?;
    let rom = if stub {
        let p = dir.join("rom.bin");
        stub::assemble(&stub::source(l, rom_base), rom_base, &p)?;
        Some(p)
    } else {
        None
    };
    let manifest = dir.join("layout.json");
    std::fs::write(&manifest, serde_json::to_string_pretty(&self::manifest(l, rom_base))? + "\n")?;
    Ok(Written { ram, rom, manifest, args })
}
