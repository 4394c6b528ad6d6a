//! Steps `device:*` and the commands `cargo xtask device-build` and `cargo xtask device-image`.
//!
//! `cargo xtask device-build [-p PKG]...` cross-builds our device programs (default: every one,
//! build/device.rs); the same build is the step `device:cross-build`, which keeps the `hw`
//! backends (engine25519 CSR/memory-window driver, TRNG register driver) compiling.
//! `cargo xtask device-image` makes (or `--check`s) the signed image (build/image.rs); the step
//! `device:image` builds it and shows that a damaged copy is refused. A bootable image also
//! needs the Xous loader and the SoC bitstream, which are not built here.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

use crate::build::device::build_packages;
use crate::build::device_xous;
use crate::build::image::{
    build, check_signed_image, default_out, ensure_key, key_for, key_path, parse_tags, ImageReport,
    KERNEL_FLASH_OFFSET, KERNEL_IMAGE_MAX, MIN_XOUS_VER, SIG_SECTOR,
};
use crate::build::target::DEVICE_PACKAGES;
use crate::ctx::Ctx;
use crate::steps::{step, TestStep};

#[derive(Args, Debug)]
pub struct DeviceBuildArgs {
    /// Package to build (repeatable; default: every device program).
    #[arg(short = 'p', long = "package")]
    pub packages: Vec<String>,
}

/// `cargo xtask device-build`.
pub fn build_cli(a: DeviceBuildArgs) -> Result<()> {
    let packages =
        if a.packages.is_empty() { DEVICE_PACKAGES.iter().map(|s| s.to_string()).collect() } else { a.packages };
    build_packages(&packages, &[])
}

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("device:cross-build", 2400, cross_build), step!("device:image", 3000, image_step)]
}

fn cross_build(_ctx: &Ctx) -> Result<()> {
    build_packages(&DEVICE_PACKAGES.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &[])
}

#[derive(Args, Debug)]
pub struct DeviceImageArgs {
    /// Output file (default: target/xous/device/xous.img).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Check an existing signed image instead of building one.
    #[arg(long)]
    pub check: Option<PathBuf>,
    /// Sign with (or check against) this Ed25519 PKCS#8 PEM key instead of the generated
    /// development key, e.g. xous-core's devkey/dev.key, which Precursor's loader accepts
    /// (docs/device.md).
    #[arg(long)]
    pub key: Option<PathBuf>,
}

fn print_report(path: &Path, r: &ImageReport, key: &Path) {
    let tags: Vec<String> = r.tags.iter().map(|t| t.name.clone()).collect();
    println!("device-image: {} ({} bytes, {} signed; limit {KERNEL_IMAGE_MAX} in the flash region at {KERNEL_FLASH_OFFSET:#x})", path.display(), r.total_len, r.signed_len);
    println!("  version {} (min {MIN_XOUS_VER}); signature OK (Ed25519ph, key {})", r.semver, key.display());
    println!("  tags (CRC-16 OK): {}", tags.join(" "));
    println!(
        "  kernel entry {:#010x}; processes: {}",
        r.kernel_entry,
        r.names.iter().map(|(p, n)| format!("{p}={n}")).collect::<Vec<_>>().join(" ")
    );
}

/// `cargo xtask device-image`.
pub fn image_cli(a: DeviceImageArgs, verbose: bool) -> Result<()> {
    if let Some(p) = a.check {
        let (key, pk) = key_for(&a.key)?;
        let d = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
        let n = parse_tags(&d[SIG_SECTOR.min(d.len())..])
            .map(|t| t.iter().filter(|t| t.name == "IniE" || t.name == "IniF").count())
            .unwrap_or(0);
        let r = check_signed_image(&d, &pk, KERNEL_IMAGE_MAX, n)?;
        print_report(&p, &r, &key);
        return Ok(());
    }
    let out = a.out.unwrap_or_else(default_out);
    let built = build(&out, &a.key, verbose)?;
    print_report(&built.path, &built.report, &key_for(&a.key)?.0);
    Ok(())
}

/// Step `device:image`.
fn image_step(_ctx: &Ctx) -> Result<()> {
    let out = device_xous::device_dir().join("test").join("xous.img");
    let built = build(&out, &None, false)?;
    print_report(&built.path, &built.report, &key_path());
    // a damaged copy must be refused: one bit of a payload, one bit of a tag
    let (_, pk) = ensure_key()?;
    let mut d = std::fs::read(&built.path)?;
    let n = built.report.programs;
    let last = d.len() - 100;
    d[last] ^= 1;
    let e = check_signed_image(&d, &pk, KERNEL_IMAGE_MAX, n).unwrap_err().to_string();
    if !e.contains("signature") {
        bail!("a flipped payload bit was not caught by the signature check: {e}");
    }
    Ok(())
}
