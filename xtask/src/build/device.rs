//! Device builds: our Xous programs cross-compiled for Precursor (riscv32imac-unknown-xous-elf)
//! the way the device image needs them: nightly + rust-src, `-Zbuild-std=std,panic_abort`,
//! panic = abort (see docs/hosted.md). The nightly toolchain and rust-src are installed through
//! rustup when they are missing (`target::ensure_toolchain`). `cargo xtask device-build` and the
//! steps `device:*` are in areas/device/.

use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::build::target::{ensure_toolchain, DEVICE_BENCH_PACKAGES, DEVICE_PACKAGES, TARGET, TOOLCHAIN};

/// The cross-build command for `packages` with extra cargo `features` (`package/feature`, e.g.
/// `trng-server/tester` for the TRNG tester's image; none for the default builds). Cargo keeps
/// every variant's artifacts, so switching back costs a relink.
pub fn build_command(packages: &[String], features: &[&str]) -> Command {
    let mut c = crate::util::cargo_toolchain(TOOLCHAIN);
    c.args(["build", "--release", "--target", TARGET, "-Zbuild-std=std,panic_abort"]);
    for p in packages {
        c.args(["-p", p]);
    }
    if !features.is_empty() {
        c.args(["--features", &features.join(",")]);
    }
    // std for Xous is built from source; the device profile (fat LTO, one codegen unit, panics
    // abort: device_xous::DEVICE_PROFILE); no compressed instructions (the simulated SoC's CPU
    // has none; Precursor's runs such code unchanged)
    c.env("CARGO_TARGET_RISCV32IMAC_UNKNOWN_XOUS_ELF_RUSTFLAGS", crate::build::device_xous::DEVICE_RUSTFLAGS)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO");
    crate::build::device_xous::device_profile(&mut c);
    c
}

/// Build some device programs (each in DEVICE_PACKAGES or DEVICE_BENCH_PACKAGES) with `features`.
pub fn build_packages(packages: &[String], features: &[&str]) -> Result<()> {
    for p in packages {
        if !DEVICE_PACKAGES.contains(&p.as_str()) && !DEVICE_BENCH_PACKAGES.contains(&p.as_str()) {
            anyhow::bail!(
                "device-build: unknown package '{p}' (device programs: {}, {})",
                DEVICE_PACKAGES.join(", "),
                DEVICE_BENCH_PACKAGES.join(", ")
            );
        }
    }
    ensure_toolchain()?;
    crate::supervisor::run(
        &mut build_command(packages, features),
        Duration::from_secs(2300),
        &format!("cross-build of {} for {TARGET}", packages.join(", ")),
    )?;
    for p in packages {
        eprintln!("device-build: target/{TARGET}/release/{p}");
    }
    Ok(())
}

/// Build every device program with `features`.
pub fn build_all(features: &[&str]) -> Result<()> {
    build_packages(&DEVICE_PACKAGES.iter().map(|s| s.to_string()).collect::<Vec<_>>(), features)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_package_is_refused_before_building() {
        let e = build_packages(&["not-a-device-program".into()], &[]).unwrap_err().to_string();
        assert!(e.contains("unknown package 'not-a-device-program'"), "{e}");
    }

    #[test]
    fn command_targets_the_device_with_build_std() {
        let c = build_command(&["trng-server".into()], &["trng-server/tester"]);
        let args: Vec<String> = c.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.windows(2).any(|w| w == ["--target", TARGET]));
        assert!(args.iter().any(|a| a == "-Zbuild-std=std,panic_abort"));
        assert!(args.windows(2).any(|w| w == ["-p", "trng-server"]));
        assert!(args.windows(2).any(|w| w == ["--features", "trng-server/tester"]));
        let plain: Vec<String> =
            build_command(&["trng-server".into()], &[]).get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!plain.iter().any(|a| a == "--features"));
    }
}
