//! Finds the unpacked xous-kernel 0.9.37 source (cargo xtask unpacks it under
//! target/xous/device/src/) so the tests can compile the kernel's own argument parser
//! (src/args.rs) on the host and read the tags this crate writes with it. Without the source
//! those tests are left out, unless XOUS_LAYOUT_REQUIRE_KERNEL=1 (set by `cargo xtask test`),
//! which makes its absence an error.

use std::path::PathBuf;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(kernel_src)");
    println!("cargo:rerun-if-env-changed=XOUS_KERNEL_SRC");
    println!("cargo:rerun-if-env-changed=XOUS_LAYOUT_REQUIRE_KERNEL");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    let rel = "xous/device/src/xous-kernel-0.9.37";
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let candidates: Vec<PathBuf> = [
        std::env::var("XOUS_KERNEL_SRC").ok().map(PathBuf::from),
        std::env::var("CARGO_TARGET_DIR").ok().map(|t| PathBuf::from(t).join(rel)),
        Some(manifest.join("../../target").join(rel)),
    ]
    .into_iter()
    .flatten()
    .collect();
    let found = candidates.iter().find(|p| p.join("src/args.rs").is_file());
    match found {
        Some(p) => {
            let p = p.canonicalize().unwrap();
            println!("cargo:rerun-if-changed={}", p.join("src/args.rs").display());
            println!("cargo:rustc-cfg=kernel_src");
            println!("cargo:rustc-env=XOUS_KERNEL_SRC_DIR={}", p.display());
        }
        None => {
            if std::env::var("XOUS_LAYOUT_REQUIRE_KERNEL").map(|v| v == "1").unwrap_or(false) {
                panic!(
                    "XOUS_LAYOUT_REQUIRE_KERNEL=1 but no unpacked xous-kernel source (src/args.rs) in {candidates:?}"
                );
            }
        }
    }
}
