//! Build-time facts the device server cannot afford to compute (it does not run the model):
//! the exact engine cycles of one X25519 per ISA (the cycle-exact model runs the ladder
//! microcode on every RFC 7748 vector, checking results and constant time:
//! `engine25519_core::programs::x25519_cycles_checked`) and of the batch program per number of
//! jobs (`x25519_batch_cycles_checked`), and the start-up known-answer test's
//! vector (RFC 7748 5.2, first vector) as bytes.

use engine25519_core::isa::Isa;
use engine25519_core::vectors::{bytes32, RFC7748};

fn main() {
    let mut text = String::new();
    for (isa, name) in [(Isa::V1, "V1"), (Isa::V2, "V2")] {
        let cycles = engine25519_core::programs::x25519_cycles_checked(isa);
        text.push_str(&format!("/// Engine cycles of one X25519 on ISA {isa} (cycle-exact model, build time).\npub const X25519_CYCLES_{name}: u64 = {cycles};\n"));
        // the batch program's cycles per run of N = 1..=X25519_BATCH_MAX jobs (none: no program)
        let batch: Vec<u64> = match engine25519_core::programs::x25519_batch_program(isa) {
            Some(_) => (1..=engine25519_core::programs::X25519_BATCH_MAX)
                .map(|n| engine25519_core::programs::x25519_batch_cycles_checked(isa, n))
                .collect(),
            None => Vec::new(),
        };
        text.push_str(&format!("/// Engine cycles of one run of the X25519 batch program on ISA {isa}, for 1, 2, ... jobs (cycle-exact model, build time; empty: no batch program).\npub const X25519_BATCH_CYCLES_{name}: &[u64] = &{batch:?};\n"));
    }
    let (k, u, out) = RFC7748[0];
    text.push_str(&format!(
        "/// The hw backend's start-up known-answer test: RFC 7748 5.2's first vector (scalar, u, result).\npub const X25519_KAT: ([u8; 32], [u8; 32], [u8; 32]) = ({:?}, {:?}, {:?});\n",
        bytes32(k),
        bytes32(u),
        bytes32(out)
    ));
    let path = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("x25519_build.rs");
    std::fs::write(path, text).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
