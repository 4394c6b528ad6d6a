//! Device builds of the Xous system for Precursor (riscv32imac-unknown-xous-elf), all from pinned
//! crates.io sources and cached under target/xous/device/ with stamp files:
//!
//! - the kernel: xous-kernel 0.9.37 with `--features precursor` (utralib's `precursor-pvt`
//!   register map), plus kernel-patches/device/*.patch, built without compressed instructions
//!   (`-C target-feature=-c,-zca`; the simulated SoC's VexRiscv has no C extension, and code
//!   without it runs unchanged on Precursor's RV32IMAC);
//! - the base services xous-log, xous-names, xous-ticktimer at the hosted set's versions, and
//!   xous-susres 0.1.35 (the release built against the same xous 0.9.35 / xous-api-susres 0.9.30;
//!   the hosted system does not run it), same features and flags, plus
//!   kernel-patches/device/<crate>/*.patch (xous-ticktimer: its alarm interrupt's argument;
//!   xous-susres: the power privilege and its suspend interrupt's argument) (lock files holding proc-macro2 1.0.5x are updated to 1.0.86, the oldest
//!   that builds on the current nightly);
//! - xous-tools 0.1.2 (host binaries: xous-create-image, xous-sign-image, xous-read-tags) and
//!   utralib 0.1.15's Precursor SVD (the memory map the image creator reads).
//!
//! Layout under target/xous/device/ (the pristine crates: target/xous/download, pinned.rs):
//!   src/<crate>-<version>/      unpacked (+ patched) sources
//!   build/<crate>/              cargo target dirs
//!   bin/                        xous-log, xous-names, xous-ticktimer (device ELFs)
//!   bin/power-<pids>/           xous-kernel, xous-susres built for one list of power PIDs
//!                               (`XOUS_POWER_PIDS`, power::PowerPids)
//!   tools/bin/                  xous-tools binaries
//!   stamps/*.stamp

use crate::build::pinned::{stamp_ok, unpack, write_stamp, Pinned};
use crate::build::power::PowerPids;
use crate::util;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The device target triple.
pub const TARGET: &str = crate::build::target::TARGET;
/// rustflags of every device build: no compressed instructions (see the module doc).
pub const DEVICE_RUSTFLAGS: &str = "-C target-feature=-c,-zca";
/// The cargo profile of every device build (kernel, base services, our programs), set through
/// cargo's environment: as xous-core builds its release images (its workspace Cargo.toml:
/// `[profile.release] codegen-units = 1`, `lto = "fat"`), and panics abort. docs/device.md.
pub const DEVICE_PROFILE: &[(&str, &str)] = &[
    ("CARGO_PROFILE_RELEASE_PANIC", "abort"),
    ("CARGO_PROFILE_RELEASE_LTO", "fat"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1"),
];

/// Apply [`DEVICE_PROFILE`] to a cargo command.
pub fn device_profile(c: &mut Command) -> &mut Command {
    for (k, v) in DEVICE_PROFILE {
        c.env(k, v);
    }
    c
}

/// Cargo features that select Precursor's register map.
pub const PRECURSOR_FEATURES: &str = "precursor,utralib/precursor-pvt";

pub const KERNEL: Pinned = crate::build::xous::KERNEL;
/// The susres server of the same generation as the hosted set (xous 0.9.35, xous-api-susres
/// 0.9.30, utralib 0.1.15): xous-ticktimer connects to it before it serves anyone, and it runs
/// the OS preemption timer (timer0).
pub const SUSRES: Pinned = Pinned {
    name: "xous-susres",
    version: "0.1.35",
    sha256: "e3aeef55b84bb5e7f6b1f0d2cea946945a28ba69e53ac248edd6332f5cdcd2a8",
};
/// Base services: the hosted set's versions (docs/reference-system.md) and susres.
pub const SERVICES: &[Pinned] =
    &[crate::build::xous::LOG, crate::build::xous::NAMES, crate::build::xous::TICKTIMER, SUSRES];
pub const XOUS_TOOLS_VERSION: &str = "0.1.2";
pub const XOUS_RISCV: Pinned = Pinned {
    name: "xous-riscv",
    version: "0.5.6",
    sha256: "63ec51bd5669f944bc375cc2c8ba93e28d7e697d13605a3454c331ea5f0b461a",
};
pub const UTRALIB: Pinned = Pinned {
    name: "utralib",
    version: "0.1.15",
    sha256: "9cc32203e2f81b6b8133a644d61def05387e2385d653cb1e923a65d5eee5f864",
};

/// Bumped when the way we build changes (invalidates stamps).
const RECIPE: &str = "device-recipe-2";
const BUILD_TIMEOUT: Duration = Duration::from_secs(40 * 60);

pub fn device_dir() -> PathBuf {
    crate::build::xous::xous_dir().join("device")
}

pub fn device_patches_dir() -> PathBuf {
    crate::build::xous::patches_dir().join("device")
}

/// kernel-patches/device/<crate>/*.patch: patches of a base service's device build, in
/// application order (none for most).
pub fn service_patch_files(krate: &str) -> Result<Vec<PathBuf>> {
    let dir = device_patches_dir().join(krate);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    crate::build::xous::patch_files_in(&dir)
}

/// kernel-patches/device/*.patch in application order.
pub fn device_patch_files() -> Result<Vec<PathBuf>> {
    let dir = device_patches_dir();
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    crate::build::xous::patch_files_in(&dir)
}

/// Unpack a pinned crate into target/xous/device/src/<name>-<version> (replacing it).
pub fn unpack_crate(c: &Pinned) -> Result<PathBuf> {
    unpack(c, &device_dir().join("src").join(c.stem()))
}

/// Make an unpacked crate its own workspace root (it lives under our workspace's target/).
fn workspace_root(dir: &Path) -> Result<()> {
    let manifest = dir.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest)?;
    if !text.contains("\n[workspace]") {
        text.push_str("\n[workspace]\n");
        std::fs::write(&manifest, text)?;
    }
    Ok(())
}

/// The cargo command of a device build of the crate unpacked in `src`.
fn device_cargo(src: &Path, build_std: &str, name: &str) -> Command {
    let mut c = util::cargo_toolchain(crate::build::target::TOOLCHAIN);
    c.args([
        "build",
        "--release",
        "--locked",
        "--target",
        TARGET,
        &format!("-Zbuild-std={build_std}"),
        "--features",
        PRECURSOR_FEATURES,
    ])
    .arg("--manifest-path")
    .arg(src.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(device_dir().join("build").join(name))
    .env_remove("CARGO_TARGET_DIR")
    .env_remove("RUSTUP_TOOLCHAIN")
    .env_remove("CARGO")
    .env("RUSTFLAGS", DEVICE_RUSTFLAGS);
    device_profile(&mut c);
    c
}

pub fn bin_dir() -> PathBuf {
    device_dir().join("bin")
}

fn install(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to.parent().unwrap())?;
    let tmp = to.with_extension("tmp");
    std::fs::copy(from, &tmp).with_context(|| format!("copying {}", from.display()))?;
    std::fs::rename(&tmp, to)?;
    Ok(())
}

fn kernel_key() -> Result<String> {
    let mut text = format!(
        "{RECIPE} {} {} {} {} {PRECURSOR_FEATURES} {DEVICE_RUSTFLAGS} {DEVICE_PROFILE:?}\n",
        KERNEL.name, KERNEL.version, KERNEL.sha256, XOUS_RISCV.sha256
    );
    for p in device_patch_files()? {
        text.push_str(&format!(
            "{} {}\n",
            p.file_name().unwrap().to_string_lossy(),
            util::sha256_hex(&std::fs::read(&p)?)
        ));
    }
    Ok(util::sha256_hex(text.as_bytes()))
}

/// The variable the device kernel and xous-susres read at build time: the PIDs that may power
/// off / shut down (kernel-patches/device/0004, kernel-patches/device/xous-susres/0001).
pub const POWER_PIDS_ENV: &str = "XOUS_POWER_PIDS";

/// The variable the device kernel reads at build time: physical pages only the processes of
/// `XOUS_POWER_PIDS` may map (kernel-patches/device/0005).
pub const SYSTEM_PAGES_ENV: &str = "XOUS_SYSTEM_PAGES";
/// The image's system pages, the simulated Precursor's own blocks (gateware/precursor map.py):
/// `simfault` (0xF001_0000: it can drop the engine's interrupts) and `simctl` (0xF003_F000: a
/// write to FINISH ends the run, WAKE decides whether a power-down is a suspend). On a Precursor
/// both pages of the CSR region are empty. A unit test keeps them equal to map.py.
pub const SYSTEM_PAGES: &[u32] = &[0xF001_0000, 0xF003_F000];

fn system_pages_value() -> String {
    SYSTEM_PAGES.iter().map(|p| format!("{p:08x}")).collect::<Vec<_>>().join(",")
}

/// The device kernel ELF built for `power` (built once per list, then cached in
/// bin/<power tag>/).
pub fn ensure_kernel(power: &PowerPids, verbose: bool) -> Result<PathBuf> {
    let bin = bin_dir().join(power.tag()).join("xous-kernel");
    let key = util::sha256_hex(
        format!("{} {POWER_PIDS_ENV}={} {SYSTEM_PAGES_ENV}={}", kernel_key()?, power.env_value(), system_pages_value())
            .as_bytes(),
    );
    let stamp = format!("kernel-{}", power.tag());
    if stamp_ok(&device_dir(), &stamp, &key, &[&bin]) {
        return Ok(bin);
    }
    crate::build::target::ensure_toolchain()?;
    crate::setup::require_apt(crate::setup::apt::RISCV_BINUTILS)?;
    let src = unpack_crate(&KERNEL)?;
    crate::build::xous::apply_patch_list(&src, &device_patch_files()?)?;
    workspace_root(&src)?;
    // the prebuilt rv32imac archives of the kernel and of xous-riscv, rebuilt for rv32ima
    let riscv = unpack(&XOUS_RISCV, &src.join("vendor/xous-riscv"))?;
    reassemble(&src.join("src/asm.S"), &src.join("bin").join(format!("{TARGET}.a")))?;
    reassemble(&riscv.join("asm.S"), &riscv.join("bin").join(format!("{TARGET}.a")))?;
    eprintln!("xtask: building {} {} for the device ({PRECURSOR_FEATURES})", KERNEL.name, KERNEL.version);
    let mut cmd = device_cargo(&src, "core,alloc", "kernel");
    // vendor/xous-riscv is a path dependency now, so cargo no longer caps its lints (it denies
    // warnings that today's compiler raises about its own cfgs)
    cmd.env("RUSTFLAGS", format!("{DEVICE_RUSTFLAGS} --cap-lints warn"));
    cmd.env(POWER_PIDS_ENV, power.env_value());
    cmd.env(SYSTEM_PAGES_ENV, system_pages_value());
    crate::supervisor::run_quiet(&mut cmd, BUILD_TIMEOUT, "device build of xous-kernel", verbose)?;
    let built = device_dir().join("build/kernel").join(TARGET).join("release").join(KERNEL.name);
    let n = compressed_instructions(&built)?;
    if n != 0 {
        bail!("the device kernel still has {n} compressed instructions ({})", built.display());
    }
    install(&built, &bin)?;
    write_stamp(&device_dir(), &stamp, &key)?;
    Ok(bin)
}

const OBJDUMP: &str = "riscv64-unknown-elf-objdump";

/// Number of 16-bit (compressed) instructions in an ELF's code, by disassembly.
pub fn compressed_instructions(elf: &Path) -> Result<usize> {
    let out = Command::new(OBJDUMP)
        .arg("-d")
        .arg(elf)
        .output()
        .with_context(|| format!("running {OBJDUMP} (Debian: binutils-riscv64-unknown-elf)"))?;
    if !out.status.success() {
        bail!("{OBJDUMP} -d {}: {}", elf.display(), String::from_utf8_lossy(&out.stderr));
    }
    Ok(count_compressed(&String::from_utf8_lossy(&out.stdout)))
}

/// Count objdump instruction lines whose encoding is one 16-bit halfword ("addr:\t4501 \tli ...").
pub fn count_compressed(objdump: &str) -> usize {
    objdump
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let addr = f.next()?.trim();
            let enc = f.next()?.trim();
            (addr.ends_with(':') && u64::from_str_radix(addr.trim_end_matches(':'), 16).is_ok()).then_some(enc)
        })
        .filter(|enc| enc.len() == 4 && enc.chars().all(|c| c.is_ascii_hexdigit()))
        .count()
}

fn global_symbols(obj: &Path) -> Result<std::collections::BTreeSet<String>> {
    let out = Command::new("riscv64-unknown-elf-nm")
        .args(["-g", "--defined-only"])
        .arg(obj)
        .output()
        .context("running riscv64-unknown-elf-nm")?;
    if !out.status.success() {
        bail!("riscv64-unknown-elf-nm {}: {}", obj.display(), String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect())
}

/// Rebuild a prebuilt assembly archive from its source with Debian's GNU assembler for rv32ima
/// (no C extension): preprocess `asm` (it is a .S file), assemble, check that the new object
/// defines exactly the global symbols of the old archive, and replace the archive.
pub fn reassemble(asm: &Path, archive: &Path) -> Result<()> {
    let dir = archive.parent().unwrap();
    let pre = dir.join("asm-rv32ima.s");
    let obj = dir.join("asm-rv32ima.o");
    let run = |c: &mut Command, what: &str| -> Result<()> {
        let o = c.output().with_context(|| format!("running {what}"))?;
        if !o.status.success() {
            bail!("{what} failed: {}", String::from_utf8_lossy(&o.stderr));
        }
        Ok(())
    };
    run(
        Command::new("cpp")
            .args(["-P", "-x", "assembler-with-cpp", "-D__riscv_xlen=32", "-D__riscv=1", "-I"])
            .arg(asm.parent().unwrap())
            .arg(asm)
            .arg("-o")
            .arg(&pre),
        &format!("cpp {}", asm.display()),
    )?;
    run(
        Command::new("riscv64-unknown-elf-as")
            .args(["-march=rv32ima_zicsr_zifencei", "-mabi=ilp32"])
            .arg(&pre)
            .arg("-o")
            .arg(&obj),
        &format!("riscv64-unknown-elf-as {}", asm.display()),
    )?;
    let (old, new) = (global_symbols(archive)?, global_symbols(&obj)?);
    if old != new {
        bail!("reassembled {} defines {new:?}, the prebuilt archive {old:?}", asm.display());
    }
    let n = compressed_instructions(&obj)?;
    if n != 0 {
        bail!("reassembled {} still has {n} compressed instructions", asm.display());
    }
    std::fs::remove_file(archive)?;
    run(Command::new("riscv64-unknown-elf-ar").arg("crs").arg(archive).arg(&obj), "riscv64-unknown-elf-ar")?;
    std::fs::remove_file(&pre).ok();
    std::fs::remove_file(&obj).ok();
    Ok(())
}

/// Base services built per power list (they read `XOUS_POWER_PIDS`).
pub const POWER_SERVICES: &[&str] = &["xous-susres"];

/// The device base services, in SERVICES order; those in [`POWER_SERVICES`] built for `power`
/// (cached in bin/<power tag>/, the others in bin/).
pub fn ensure_services(power: &PowerPids, verbose: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for s in SERVICES {
        let per_power = POWER_SERVICES.contains(&s.name);
        let bin = if per_power { bin_dir().join(power.tag()).join(s.name) } else { bin_dir().join(s.name) };
        let patches = service_patch_files(s.name)?;
        let mut key = format!(
            "{RECIPE} {}@{} {} {PRECURSOR_FEATURES} {DEVICE_RUSTFLAGS} {DEVICE_PROFILE:?}",
            s.name, s.version, s.sha256
        );
        for p in &patches {
            key.push_str(&format!(
                " {} {}",
                p.file_name().unwrap().to_string_lossy(),
                util::sha256_hex(&std::fs::read(p)?)
            ));
        }
        if per_power {
            key.push_str(&format!(" {POWER_PIDS_ENV}={}", power.env_value()));
        }
        let stamp =
            if per_power { format!("service-{}-{}", s.name, power.tag()) } else { format!("service-{}", s.name) };
        if !stamp_ok(&device_dir(), &stamp, &key, &[&bin]) {
            crate::build::target::ensure_toolchain()?;
            let src = unpack_crate(s)?;
            crate::build::xous::apply_patch_list(&src, &patches)?;
            workspace_root(&src)?;
            if std::fs::read_to_string(src.join("Cargo.lock"))
                .unwrap_or_default()
                .contains("name = \"proc-macro2\"\nversion = \"1.0.5")
            {
                // proc-macro2 1.0.5x in the lock file uses a proc_macro feature the nightly
                // no longer has; 1.0.86 is the oldest that builds
                let mut c = util::cargo();
                c.args(["update", "-p", "proc-macro2", "--precise", "1.0.86", "--manifest-path"])
                    .arg(src.join("Cargo.toml"))
                    .env_remove("CARGO_TARGET_DIR");
                crate::supervisor::run_quiet(
                    &mut c,
                    Duration::from_secs(300),
                    &format!("cargo update -p proc-macro2 ({})", s.name),
                    verbose,
                )?;
            }
            eprintln!("xtask: building {} {} for the device", s.name, s.version);
            // one target dir for the three: std is built once
            let mut cmd = device_cargo(&src, "std,panic_abort", "services");
            if per_power {
                cmd.env(POWER_PIDS_ENV, power.env_value());
            }
            crate::supervisor::run_quiet(&mut cmd, BUILD_TIMEOUT, &format!("device build of {}", s.name), verbose)?;
            install(&device_dir().join("build/services").join(TARGET).join("release").join(s.name), &bin)?;
            write_stamp(&device_dir(), &stamp, &key)?;
        }
        out.push(bin);
    }
    Ok(out)
}

/// Paths of the xous-tools binaries.
pub struct XousTools {
    pub create_image: PathBuf,
    pub sign_image: PathBuf,
    pub read_tags: PathBuf,
}

/// Install xous-tools (crates.io, --locked) into target/xous/device/tools once.
pub fn ensure_tools(verbose: bool) -> Result<XousTools> {
    let root = device_dir().join("tools");
    let b = |n: &str| root.join("bin").join(n);
    let tools = XousTools {
        create_image: b("xous-create-image"),
        sign_image: b("xous-sign-image"),
        read_tags: b("xous-read-tags"),
    };
    let key = format!("{RECIPE} xous-tools@{XOUS_TOOLS_VERSION}");
    if stamp_ok(&device_dir(), "xous-tools", &key, &[&tools.create_image, &tools.sign_image, &tools.read_tags]) {
        return Ok(tools);
    }
    eprintln!("xtask: installing xous-tools {XOUS_TOOLS_VERSION} (cargo install --locked)");
    let mut c = util::cargo();
    c.args(["install", "--locked", "--force", "--root"])
        .arg(&root)
        .arg("--target-dir")
        .arg(device_dir().join("build").join("xous-tools"))
        .arg(format!("xous-tools@{XOUS_TOOLS_VERSION}"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_INSTALL_ROOT");
    crate::supervisor::run_quiet(&mut c, BUILD_TIMEOUT, "cargo install xous-tools", verbose)?;
    write_stamp(&device_dir(), "xous-tools", &key)?;
    Ok(tools)
}

/// Precursor's SoC description (soc-pvt.svd from utralib 0.1.15): the memory regions and
/// peripherals the image creator gives the kernel.
pub fn precursor_svd() -> Result<PathBuf> {
    let out = device_dir().join("precursor-soc-pvt.svd");
    if out.is_file() {
        return Ok(out);
    }
    let src = unpack_crate(&UTRALIB)?;
    install(&src.join("precursor/soc-pvt.svd"), &out)?;
    Ok(out)
}

/// Our device programs (cross-built by `device::build`), in image order.
pub fn our_programs() -> Vec<PathBuf> {
    let dir = util::target_dir().join(TARGET).join("release");
    crate::build::target::IMAGE_PROGRAMS.iter().map(|(_, bin)| dir.join(bin)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_page_is_the_socs_fault_injector() {
        let map = std::fs::read_to_string(util::root().join("gateware/precursor/map.py")).unwrap();
        let num = |key: &str| -> u32 {
            let line =
                map.lines().find(|l| l.trim_start().starts_with(key)).unwrap_or_else(|| panic!("{key} in map.py"));
            let v = line
                .split_once(if key.starts_with('"') { ':' } else { '=' })
                .unwrap()
                .1
                .split('#')
                .next()
                .unwrap()
                .trim()
                .trim_end_matches(',');
            u32::from_str_radix(v.trim_start_matches("0x").replace('_', "").as_str(), 16).unwrap()
        };
        let page = |block: &str| num("CSR_BASE =") + num(&format!("\"{block}\"")) * num("CSR_PAGING =");
        assert_eq!(SYSTEM_PAGES, &[page("simfault"), page("simctl")], "map.py's simfault and simctl pages");
        assert_eq!(system_pages_value(), "f0010000,f003f000");
    }

    #[test]
    fn compressed_instructions_are_counted_from_objdump() {
        let text = "\nk.o:     file format elf32-littleriscv\n\nDisassembly of section .text:\n\n00000000 <_start>:\n   0:\t00000297          \tauipc\tt0,0x0\n   4:\t4501                \tli\ta0,0\n   6:\t8082                \tret\nffd00010:\t30529073          \tcsrw\tmtvec,t0\n";
        assert_eq!(count_compressed(text), 2);
        assert_eq!(count_compressed("0000 <x>:\n"), 0);
    }

    #[test]
    fn device_patches_have_headers() {
        let mut all = device_patch_files().unwrap();
        for s in SERVICES {
            all.extend(service_patch_files(s.name).unwrap());
        }
        assert!(all.iter().any(|p| p.parent().unwrap().ends_with("xous-ticktimer")));
        for p in all {
            let text = std::fs::read_to_string(&p).unwrap();
            let header = &text[..text.find("\n--- a/").expect("a unified diff")];
            assert!(header.contains("What:") && header.contains("Why:") && header.contains("Test:"), "{}", p.display());
        }
    }
}
