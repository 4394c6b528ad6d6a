//! Building the hosted Xous system: the xous-kernel from its crates.io source (stock and with
//! kernel-patches/*.patch applied) and the base services (xous-names, xous-ticktimer, xous-log),
//! all at pinned versions with `--locked`, into target/xous/. Cached with stamp files keyed by
//! version + patch hashes, so a second run does not rebuild anything.
//!
//! Layout under target/xous/:
//!   download/xous-kernel-0.9.37.crate   pristine crate (sha256 checked)
//!   src/xous-kernel-0.9.37-{stock,patched}/   unpacked (+ patched) sources
//!   build/{kernel-stock,kernel-patched,services}/   cargo target dirs
//!   bin/xous-kernel, bin/xous-kernel-stock    the two kernels
//!   services/bin/{xous-names,xous-ticktimer,xous-log}
//!   stamps/*.stamp

use crate::build::pinned::{stamp_ok, unpack, write_stamp, Pinned};
use crate::supervisor;
use crate::util;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// xous-kernel 0.9.37 (the sha256 of its .crate as published in the crates.io index).
pub const KERNEL: Pinned = Pinned {
    name: "xous-kernel",
    version: "0.9.37",
    sha256: "413a43bcdfc94046405fd69bca1f338843ff4ba67fc176776c652c6b8f851d51",
};

/// The base services of the hosted system (docs/reference-system.md); the device runs the
/// same versions plus xous-susres (device_xous.rs). Each binary has its crate's name.
pub const LOG: Pinned = Pinned {
    name: "xous-log",
    version: "0.1.27",
    sha256: "e9a0a7718864522f8f2e3b1a3d5bccf30e275ba6d3d668bf6c19f4bd92e21675",
};
pub const NAMES: Pinned = Pinned {
    name: "xous-names",
    version: "0.9.36",
    sha256: "f6575e124d4a285b49f9d49706dc30602641bd0d333de2587c71d3215a8c4836",
};
pub const TICKTIMER: Pinned = Pinned {
    name: "xous-ticktimer",
    version: "0.1.31",
    sha256: "721ddff2edf5f37bb437e9974b1ad75e9c5bd7bc849f6ac3676801cf4ccb2cea",
};
/// In launch order.
pub const SERVICES: &[Pinned] = &[LOG, NAMES, TICKTIMER];

/// Bumped when the way we build changes (invalidates stamps).
const BUILD_RECIPE: &str = "recipe-2";

const BUILD_TIMEOUT: Duration = Duration::from_secs(40 * 60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// xous-kernel 0.9.37 with kernel-patches/ applied.
    Patched,
    /// xous-kernel 0.9.37 exactly as published.
    Stock,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Patched => "patched",
            Flavor::Stock => "stock",
        }
    }
}

/// Paths of the built hosted system.
#[derive(Clone, Debug)]
pub struct XousBins {
    pub kernel: PathBuf,
    pub kernel_stock: PathBuf,
    /// In SERVICES order: xous-log, xous-names, xous-ticktimer.
    pub services: Vec<PathBuf>,
}

impl XousBins {
    pub fn kernel(&self, f: Flavor) -> &Path {
        match f {
            Flavor::Patched => &self.kernel,
            Flavor::Stock => &self.kernel_stock,
        }
    }
}

pub fn xous_dir() -> PathBuf {
    util::target_dir().join("xous")
}

pub fn patches_dir() -> PathBuf {
    util::root().join("kernel-patches")
}

/// kernel-patches/*.patch in application order (file-name order).
pub fn patch_files() -> Result<Vec<PathBuf>> {
    patch_files_in(&patches_dir())
}

/// The *.patch files of `dir` in application order (file-name order).
pub fn patch_files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().map(|x| x == "patch").unwrap_or(false))
        .collect();
    v.sort();
    Ok(v)
}

fn kernel_key(flavor: Flavor) -> Result<String> {
    let mut text = format!("{BUILD_RECIPE} {} {} {} {}\n", KERNEL.name, KERNEL.version, KERNEL.sha256, flavor.name());
    if flavor == Flavor::Patched {
        for p in patch_files()? {
            let data = std::fs::read(&p)?;
            text.push_str(&format!("{} {}\n", p.file_name().unwrap().to_string_lossy(), util::sha256_hex(&data)));
        }
    }
    Ok(util::sha256_hex(text.as_bytes()))
}

/// Build (or reuse) both kernels and the base services.
pub fn ensure_built(verbose: bool) -> Result<XousBins> {
    let kernel = ensure_kernel(Flavor::Patched, verbose)?;
    let kernel_stock = ensure_kernel(Flavor::Stock, verbose)?;
    let services = ensure_services(verbose)?;
    Ok(XousBins { kernel, kernel_stock, services })
}

pub fn kernel_bin(flavor: Flavor) -> PathBuf {
    xous_dir().join("bin").join(match flavor {
        Flavor::Patched => "xous-kernel",
        Flavor::Stock => "xous-kernel-stock",
    })
}

/// Apply every kernel patch in order to the source tree in `dir`; fail naming the patch that
/// does not apply.
pub fn apply_patches(dir: &Path) -> Result<()> {
    apply_patch_list(dir, &patch_files()?)
}

pub fn apply_patch_list(dir: &Path, patches: &[PathBuf]) -> Result<()> {
    for p in patches {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        // git apply outside any repository (GIT_CEILING_DIRECTORIES stops discovery of the
        // project's own repository above target/), paths relative to `dir`.
        let out = Command::new("git")
            .args(["apply", "--whitespace=nowarn", "-p1"])
            .arg(p)
            .current_dir(dir)
            .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .context("running git apply (is git installed?)")?;
        if !out.status.success() {
            bail!(
                "patch {name} does not apply to {} (kernel: {} {}):\n{}",
                dir.display(),
                KERNEL.name,
                KERNEL.version,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        eprintln!("xtask: applied kernel-patches/{name}");
    }
    Ok(())
}

pub fn ensure_kernel(flavor: Flavor, verbose: bool) -> Result<PathBuf> {
    let bin = kernel_bin(flavor);
    let key = kernel_key(flavor)?;
    let stamp = format!("kernel-{}", flavor.name());
    if stamp_ok(&xous_dir(), &stamp, &key, &[&bin]) {
        return Ok(bin);
    }
    let src = xous_dir().join("src").join(format!("{}-{}", KERNEL.stem(), flavor.name()));
    eprintln!("xtask: preparing {} {} ({}) in {}", KERNEL.name, KERNEL.version, flavor.name(), src.display());
    unpack(&KERNEL, &src)?;
    if flavor == Flavor::Patched {
        apply_patches(&src)?;
    }
    // The copy lives under our workspace's target/: make it its own workspace root so cargo does
    // not attach it to ours.
    let manifest = src.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest)?;
    text.push_str("\n[workspace]\n");
    std::fs::write(&manifest, text)?;

    // One target dir per flavour: both trees are the same package (name, version, relative
    // paths), so sharing one would let cargo reuse the other flavour's binary.
    let target = xous_dir().join("build").join(format!("kernel-{}", flavor.name()));
    let mut cmd = util::cargo();
    cmd.args(["build", "--release", "--locked"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR");
    eprintln!("xtask: building {} {} ({})", KERNEL.name, KERNEL.version, flavor.name());
    supervisor::run_quiet(&mut cmd, BUILD_TIMEOUT, &format!("building {} ({})", KERNEL.name, flavor.name()), verbose)?;
    std::fs::create_dir_all(bin.parent().unwrap())?;
    let tmp = bin.with_extension("tmp");
    std::fs::copy(target.join("release").join(KERNEL.name), &tmp)?;
    std::fs::rename(&tmp, &bin)?;
    write_stamp(&xous_dir(), &stamp, &key)?;
    Ok(bin)
}

pub fn services_root() -> PathBuf {
    xous_dir().join("services")
}

pub fn ensure_services(verbose: bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for s in SERVICES {
        let (krate, version) = (s.name, s.version);
        let bin = services_root().join("bin").join(krate);
        let key = format!("{BUILD_RECIPE} {krate}@{version}");
        let stamp = format!("service-{krate}");
        if !stamp_ok(&xous_dir(), &stamp, &key, &[&bin]) {
            eprintln!("xtask: building {krate} {version} (cargo install --locked)");
            let mut cmd = util::cargo();
            cmd.args(["install", "--locked", "--force"])
                .arg("--root")
                .arg(services_root())
                .arg("--target-dir")
                .arg(xous_dir().join("build").join("services"))
                .arg(format!("{krate}@{version}"))
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("CARGO_INSTALL_ROOT");
            supervisor::run_quiet(&mut cmd, BUILD_TIMEOUT, &format!("cargo install {krate}@{version}"), verbose)?;
            write_stamp(&xous_dir(), &stamp, &key)?;
        }
        out.push(bin);
    }
    Ok(out)
}

/// Build our own Xous programs (release) and return the directory holding them.
pub fn build_programs(packages: &[&str], verbose: bool) -> Result<PathBuf> {
    let mut cmd = util::cargo();
    cmd.args(["build", "--release"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    if !verbose {
        cmd.arg("--quiet");
    }
    supervisor::run(&mut cmd, BUILD_TIMEOUT, &format!("cargo build --release {}", packages.join(" ")))?;
    Ok(util::target_dir().join("release"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = util::target_dir().join("xtask-test").join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("tree/src")).unwrap();
        std::fs::write(d.join("tree/src/a.txt"), "one\ntwo\nthree\n").unwrap();
        d
    }

    #[test]
    fn patches_apply_in_order() {
        let d = scratch("apply");
        std::fs::write(
            d.join("0001-x.patch"),
            "Header: what and why.\n\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
        )
        .unwrap();
        std::fs::write(
            d.join("0002-y.patch"),
            "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-TWO\n+2\n three\n",
        )
        .unwrap();
        apply_patch_list(&d.join("tree"), &[d.join("0001-x.patch"), d.join("0002-y.patch")]).unwrap();
        assert_eq!(std::fs::read_to_string(d.join("tree/src/a.txt")).unwrap(), "one\n2\nthree\n");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_patch_that_does_not_apply_is_named() {
        let d = scratch("reject");
        std::fs::write(
            d.join("0001-ok.patch"),
            "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
        )
        .unwrap();
        // Expects the original line, which 0001 already changed.
        std::fs::write(
            d.join("0002-stale.patch"),
            "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+deux\n three\n",
        )
        .unwrap();
        let err =
            apply_patch_list(&d.join("tree"), &[d.join("0001-ok.patch"), d.join("0002-stale.patch")]).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("0002-stale.patch") && msg.contains("does not apply"), "{msg}");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn shipped_patches_are_ordered_and_have_headers() {
        let patches = patch_files().unwrap();
        assert!(patches.len() >= 3, "{patches:?}");
        for p in &patches {
            let text = std::fs::read_to_string(p).unwrap();
            let first_diff = text.find("\n--- a/").expect("a unified diff");
            let header = &text[..first_diff];
            assert!(
                header.contains("What:") && header.contains("Why:") && header.contains("Test:"),
                "{}: header must say What/Why/Test",
                p.display()
            );
        }
    }

    #[test]
    fn kernel_key_depends_on_patch_contents_only_for_patched() {
        assert_ne!(kernel_key(Flavor::Patched).unwrap(), kernel_key(Flavor::Stock).unwrap());
    }
}
