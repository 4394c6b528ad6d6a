//! Installing what the test suite needs: apt packages and the project's Python venv.

use crate::supervisor;
use crate::util;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The Debian packages xtask installs, one list per need; `require_apt` takes one or several
/// (`&[apt::GATEWARE, apt::LITEX_SIM].concat()`).
pub mod apt {
    /// GNU binutils for RISC-V: objdump of device ELFs (compressed-instruction checks), as and
    /// ld for the boot probe, objcopy for firmware images.
    pub const RISCV_BINUTILS: &[&str] = &["binutils-riscv64-unknown-elf"];
    /// The gateware flow: Verilator (built with the system C++ compiler and make) and yosys.
    pub const GATEWARE: &[&str] = &["verilator", "yosys", "g++", "make"];
    /// LiteX's simulation harness (litex_sim) links libevent, json-c and zlib.
    pub const LITEX_SIM: &[&str] = &["libevent-dev", "libjson-c-dev", "zlib1g-dev"];
    /// The TRNG stream's statistical tests: dieharder, rngtest, ent.
    pub const TRNG_TOOLS: &[&str] = &["dieharder", "rng-tools5", "ent"];
    /// The chat's terminal test drives a real terminal.
    pub const TMUX: &[&str] = &["tmux"];
}

/// Ensure Debian packages are installed: installs them when root, otherwise fails printing the
/// exact command to run. For area modules (e.g. `setup::require_apt(&["dieharder"])`).
pub fn require_apt(packages: &[&str]) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
                .unwrap_or(false)
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let cmd_text = format!("apt-get update && apt-get install -y --no-install-recommends {}", missing.join(" "));
    if !util::is_root() {
        bail!("missing Debian packages {missing:?}; run as root:\n    sudo sh -c '{cmd_text}'");
    }
    eprintln!("xtask: installing Debian packages {missing:?}");
    std::fs::create_dir_all("/var/cache/apt/archives/partial").ok();
    supervisor::run(Command::new("apt-get").arg("update"), Duration::from_secs(600), "apt-get update")?;
    supervisor::run(
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        Duration::from_secs(1200),
        "apt-get install",
    )
}

/// The project's Python venv (target/venv) with tools/requirements.txt installed (pinned);
/// returns its python. Cached: reinstalled only when requirements.txt changes.
pub fn venv() -> Result<PathBuf> {
    let venv = util::target_dir().join("venv");
    let py = venv.join("bin").join("python");
    let req = util::root().join("tools").join("requirements.txt");
    let key = if req.is_file() { util::sha256_hex(&std::fs::read(&req)?) } else { "none".into() };
    let stamp = venv.join(".xtask-requirements.sha256");
    if py.is_file() && std::fs::read_to_string(&stamp).map(|s| s.trim() == key).unwrap_or(false) {
        return Ok(py);
    }
    if !py.is_file() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let made = supervisor::run(
            Command::new(&python).args(["-m", "venv"]).arg(&venv),
            Duration::from_secs(300),
            "python3 -m venv",
        );
        if made.is_err() {
            // Debian splits venv/ensurepip out of python3.
            std::fs::remove_dir_all(&venv).ok();
            let minor = Command::new(&python)
                .args(["-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            require_apt(&["python3-venv", &format!("python{minor}-venv")])
                .context("creating the Python venv needs the venv module")?;
            supervisor::run(
                Command::new(&python).args(["-m", "venv"]).arg(&venv),
                Duration::from_secs(300),
                "python3 -m venv",
            )?;
        }
    }
    if req.is_file() {
        supervisor::run(
            Command::new(&py).args(["-m", "pip", "install", "--disable-pip-version-check", "-q", "-r"]).arg(&req),
            Duration::from_secs(900),
            "pip install -r tools/requirements.txt",
        )?;
    }
    std::fs::write(&stamp, format!("{key}\n"))?;
    Ok(py)
}
