//! Small shared helpers: workspace paths, the nested cargo, hashing, shell quoting. Running
//! child processes (process groups, timeouts) is supervisor.rs.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Workspace root (the directory holding the root Cargo.toml).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// The project's target directory (honours CARGO_TARGET_DIR like cargo does).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => {
            let p = PathBuf::from(d);
            if p.is_absolute() {
                p
            } else {
                root().join(p)
            }
        }
        _ => root().join("target"),
    }
}

/// The cargo binary to use for nested builds.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.current_dir(root());
    c
}

/// `cargo` of another rustup toolchain (e.g. "nightly"). Use this instead of `cargo +nightly`:
/// under `cargo xtask`, PATH starts with the active toolchain's own cargo, which does not
/// understand `+toolchain`.
pub fn cargo_toolchain(toolchain: &str) -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", toolchain, "cargo"]).current_dir(root());
    c
}

pub fn sha256_hex(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// Quote a path or argument for `sh -c`.
pub fn shell_quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=:,+@%".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
