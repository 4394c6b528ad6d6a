//! Device builds: our Xous servers cross-compiled for Precursor (riscv32imac-unknown-xous-elf).
//!
//! `cargo xtask device-build [-p PKG]...` builds them (default: every server) the way the device
//! image needs them: nightly + rust-src, `-Zbuild-std=std,panic_abort`, panic = abort (see
//! docs/hosted.md). It installs the nightly toolchain and rust-src through rustup
//! when they are missing. The same build is the test step `device:cross-build`, which keeps the
//! `hw` backends (engine25519 CSR/memory-window driver, TRNG register driver) compiling.
//! A bootable image also needs the Xous loader and the SoC bitstream, which are not built here.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use crate::steps::TestStep;
use crate::ctx::Ctx;

/// The device target triple.
pub const TARGET: &str = "riscv32imac-unknown-xous-elf";
/// The toolchain that can build std for it.
pub const TOOLCHAIN: &str = "nightly";
/// Our programs that run on the device (their `hw` backends only exist there).
/// device-selftest is the test client the simulated Precursor runs (xtask/src/selftest.rs); it is
/// not in the flashed image.
pub const DEVICE_PACKAGES: &[&str] = &["engine25519-server", "trng-server", "sysctl", "device-selftest"];
/// Our programs in a device image, in PID order: (package, binary). sysctl comes last, as in
/// hosted mode: it claims every server's control connection once they run.
pub const IMAGE_PROGRAMS: &[(&str, &str)] = &[("engine25519-server", "engine25519"), ("trng-server", "trng"), ("sysctl", "sysctl")];

#[derive(Args, Debug)]
pub struct DeviceBuildArgs {
    /// Package to build (repeatable; default: every device program).
    #[arg(short = 'p', long = "package")]
    pub packages: Vec<String>,
}

/// Make sure the nightly toolchain with rust-src is installed (no-op when it is).
pub fn ensure_toolchain() -> Result<()> {
    // installed already: no rustup call (it syncs the channel over the network every time)
    if let Ok(o) = Command::new("rustc").args([&format!("+{TOOLCHAIN}"), "--print", "sysroot"]).env_remove("RUSTUP_TOOLCHAIN").output() {
        let sysroot = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if o.status.success() && std::path::Path::new(&sysroot).join("lib/rustlib/src/rust/library/std/Cargo.toml").is_file() {
            return Ok(());
        }
    }
    let mut c = Command::new("rustup");
    c.args(["toolchain", "install", TOOLCHAIN, "--profile", "minimal", "--component", "rust-src", "--no-self-update"]);
    crate::supervisor::run(&mut c, Duration::from_secs(900), "rustup toolchain install nightly + rust-src")
        .context("the device build needs rustup (https://rustup.rs)")
}

/// Extra cargo features of the device programs (`package/feature`), set only inside
/// [`with_features`].
static FEATURES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Run `f` with the device programs built with `features` (`package/feature`, e.g.
/// `trng-server/tester` for the TRNG tester's image), then back to the default builds. Cargo
/// keeps both variants' artifacts, so switching back costs a relink.
pub fn with_features<T>(features: &[&str], f: impl FnOnce() -> T) -> T {
    let before = std::mem::replace(&mut *FEATURES.lock().unwrap(), features.iter().map(|s| s.to_string()).collect());
    let r = f();
    *FEATURES.lock().unwrap() = before;
    r
}

/// The cross-build command for `packages`.
pub fn build_command(packages: &[String]) -> Command {
    let mut c = crate::util::cargo_toolchain(TOOLCHAIN);
    c.args(["build", "--release", "--target", TARGET, "-Zbuild-std=std,panic_abort"]);
    for p in packages {
        c.args(["-p", p]);
    }
    let features = FEATURES.lock().unwrap().clone();
    if !features.is_empty() {
        c.args(["--features", &features.join(",")]);
    }
    // std for Xous is built from source; the device profile (fat LTO, one codegen unit, panics
    // abort: device_xous::DEVICE_PROFILE); no compressed instructions (the simulated SoC's CPU
    // has none; Precursor's runs such code unchanged)
    c.env("CARGO_TARGET_RISCV32IMAC_UNKNOWN_XOUS_ELF_RUSTFLAGS", crate::device_xous::DEVICE_RUSTFLAGS).env_remove("RUSTUP_TOOLCHAIN").env_remove("CARGO");
    crate::device_xous::device_profile(&mut c);
    c
}

/// Build some device programs (each must be in DEVICE_PACKAGES).
pub fn build_packages(packages: &[String]) -> Result<()> {
    build(packages)
}

fn build(packages: &[String]) -> Result<()> {
    for p in packages {
        if !DEVICE_PACKAGES.contains(&p.as_str()) {
            anyhow::bail!("device-build: unknown package '{p}' (device programs: {})", DEVICE_PACKAGES.join(", "));
        }
    }
    ensure_toolchain()?;
    crate::supervisor::run(&mut build_command(packages), Duration::from_secs(2300), &format!("cross-build of {} for {TARGET}", packages.join(", ")))?;
    for p in packages {
        eprintln!("device-build: target/{TARGET}/release/{p}");
    }
    Ok(())
}

/// Build every device program.
pub fn build_default() -> Result<()> {
    build(&DEVICE_PACKAGES.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

pub fn run(a: DeviceBuildArgs) -> Result<()> {
    let packages = if a.packages.is_empty() { DEVICE_PACKAGES.iter().map(|s| s.to_string()).collect() } else { a.packages };
    build(&packages)
}

pub fn test_steps() -> Vec<TestStep> {
    vec![
        TestStep { name: "device:cross-build", timeout: Duration::from_secs(2400), run: cross_build },
        TestStep { name: "device:image", timeout: Duration::from_secs(3000), run: crate::device_image::test_step },
    ]
}

fn cross_build(_ctx: &Ctx) -> Result<()> {
    build(&DEVICE_PACKAGES.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_package_is_refused_before_building() {
        let e = build(&["not-a-device-program".into()]).unwrap_err().to_string();
        assert!(e.contains("unknown package 'not-a-device-program'"), "{e}");
    }

    #[test]
    fn command_targets_the_device_with_build_std() {
        let c = build_command(&["trng-server".into()]);
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.windows(2).any(|w| w == ["--target", TARGET]));
        assert!(args.iter().any(|a| a == "-Zbuild-std=std,panic_abort"));
        assert!(args.windows(2).any(|w| w == ["-p", "trng-server"]));
    }
}
