//! What our programs are and which target and toolchain build them for the device: the one
//! place every build, image and launcher reads these from.

use anyhow::{Context, Result};
use std::process::Command;
use std::time::Duration;

/// Our packages with Xous programs, built (release) before anything is launched.
pub const PROGRAM_PACKAGES: &[&str] =
    &["engine25519-server", "trng-server", "sysctl", "hosted-tests", "ratchet-demo", "device-selftest"];

/// Our servers, started in every hosted system (binary names in target/release), then sysctl,
/// the system controller that claims their control connections (docs/security.md).
pub const SERVER_BINS: &[&str] = &["engine25519", "trng", "sysctl"];

/// The system's own processes among [`SERVER_BINS`]: the only programs of a system, besides the
/// harness that ends a test run, allowed to shut it down (hosted: the kernel's Shutdown,
/// kernel-patches/0006; device: xous-susres's power operations and the kernel's Shutdown,
/// kernel-patches/device/). docs/security.md, "Power-off and shutdown".
pub const SYSTEM_BINS: &[&str] = &["sysctl"];

/// The device target triple.
pub const TARGET: &str = "riscv32imac-unknown-xous-elf";
/// The toolchain that can build std for it.
pub const TOOLCHAIN: &str = "nightly";
/// Our programs that run on the device (their `hw` backends only exist there).
/// device-selftest is the test client the simulated Precursor runs (xtask/src/selftest.rs); it is
/// not in the flashed image.
/// device-screen draws on the simulated Precursor's display (step sim:screen), not in the image.
pub const DEVICE_PACKAGES: &[&str] =
    &["engine25519-server", "trng-server", "sysctl", "device-selftest", "device-screen"];
/// Device programs only the benchmarks build and run (not in the image, not built by the test
/// steps, whose time is short): device-crypto times the chat's cryptography on the simulated
/// Precursor (xtask/src/areas/sim/crypto.rs); its operations are tested on the host by cargo test.
pub const DEVICE_BENCH_PACKAGES: &[&str] = &["device-crypto"];
/// Our programs in a device image, in PID order: (package, binary). sysctl comes last, as in
/// hosted mode: it claims every server's control connection once they run.
pub const IMAGE_PROGRAMS: &[(&str, &str)] =
    &[("engine25519-server", "engine25519"), ("trng-server", "trng"), ("sysctl", "sysctl")];

/// Make sure the nightly toolchain with rust-src is installed (no-op when it is).
pub fn ensure_toolchain() -> Result<()> {
    // installed already: no rustup call (it syncs the channel over the network every time)
    if let Ok(o) = Command::new("rustc")
        .args([&format!("+{TOOLCHAIN}"), "--print", "sysroot"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
    {
        let sysroot = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if o.status.success()
            && std::path::Path::new(&sysroot).join("lib/rustlib/src/rust/library/std/Cargo.toml").is_file()
        {
            return Ok(());
        }
    }
    let mut c = Command::new("rustup");
    c.args(["toolchain", "install", TOOLCHAIN, "--profile", "minimal", "--component", "rust-src", "--no-self-update"]);
    crate::supervisor::run(&mut c, Duration::from_secs(900), "rustup toolchain install nightly + rust-src")
        .context("the device build needs rustup (https://rustup.rs)")
}

/// The base services in the image's PID order (xous-core's): PIDs 2, 3, 4, 5.
pub const BASE_SERVICES: [&str; 4] = ["xous-ticktimer", "xous-log", "xous-names", "xous-susres"];
