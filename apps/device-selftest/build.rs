//! Expected engine cycles of one X25519 for each ISA, from the cycle-exact model running the
//! real ladder microcode (engine25519-core, the one source of cycle costs: spec/engine25519.toml).
//! The ladder is constant time, so every input takes the same count; the script checks that on
//! every RFC 7748 vector before writing the numbers.

use engine25519_core::isa::Isa;
use engine25519_core::vectors::RFC7748;

fn unhex32(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex vector");
    }
    out
}

fn main() {
    let mut text = String::new();
    for (isa, name) in [(Isa::V1, "V1"), (Isa::V2, "V2")] {
        let mut cycles = None;
        for (k, u, want) in RFC7748 {
            let (got, c) = engine25519_core::programs::x25519(isa, &unhex32(k), &unhex32(u));
            assert_eq!(got, unhex32(want), "model X25519 ({isa}) disagrees with RFC 7748");
            match cycles {
                None => cycles = Some(c),
                Some(prev) => assert_eq!(prev, c, "X25519 cycles depend on the input ({isa})"),
            }
        }
        text.push_str(&format!("/// Engine cycles of one X25519 on ISA {isa} (cycle-exact model, build time).\npub const X25519_CYCLES_{name}: u64 = {};\n", cycles.unwrap()));
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("expected.rs");
    std::fs::write(out, text).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
