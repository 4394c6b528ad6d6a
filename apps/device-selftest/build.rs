//! Expected engine cycles of one X25519 for each ISA, from the cycle-exact model running the
//! real ladder microcode (engine25519-core, the one source of cycle costs: spec/engine25519.toml).
//! The ladder is constant time, so every input takes the same count; the script checks that on
//! every RFC 7748 vector before writing the numbers.

use engine25519_core::isa::Isa;
use engine25519_core::vectors::{bytes32 as unhex32, RFC7748};

fn main() {
    let mut text = String::new();
    for (isa, name) in [(Isa::V1, "V1"), (Isa::V2, "V2")] {
        let cycles = engine25519_core::programs::x25519_cycles_checked(isa);
        text.push_str(&format!("/// Engine cycles of one X25519 on ISA {isa} (cycle-exact model, build time).\npub const X25519_CYCLES_{name}: u64 = {cycles};\n"));
    }
    // The ISA probe (a custom job): field_add for v2 uses `fadd`, an opcode v1 does not define,
    // so a v1 engine halts on it (IllegalInstruction); a v2 engine returns a + b mod p. Its
    // words and, from the model, the result for two RFC vector inputs (a sum above p).
    let p = engine25519_core::programs::get("field_add", Isa::V2).expect("field_add v2");
    let (a, b) = (unhex32(RFC7748[0].1), unhex32(RFC7748[1].1));
    let (sum, _) = engine25519_core::programs::Runner::new(p).run(&[a, b]).expect("model runs field_add v2");
    text.push_str(&format!("/// field_add for ISA v2 (programs/field_add_v2.s, assembled at build time).\npub const FIELD_ADD_V2: &[u32] = &{:?};\n", p.words()));
    text.push_str(&format!("/// Its input registers.\npub const FIELD_ADD_INPUT_REGS: [usize; 2] = [{}, {}];\n/// Its output register.\npub const FIELD_ADD_OUTPUT_REG: usize = {};\n", p.inputs[0], p.inputs[1], p.output));
    text.push_str(&format!("/// Its inputs (the u coordinates of RFC 7748 5.2's two vectors) and the model's result.\npub const FIELD_ADD_PROBE: ([u8; 32], [u8; 32], [u8; 32]) = ({a:?}, {b:?}, {sum:?});\n"));
    // the same sum through the v1 program (the custom-job path on a v1 engine)
    let p1 = engine25519_core::programs::get("field_add", Isa::V1).expect("field_add v1");
    let (sum1, _) = engine25519_core::programs::Runner::new(p1).run(&[a, b]).expect("model runs field_add v1");
    assert_eq!(sum1, sum, "field_add v1 and v2 disagree");
    assert_eq!((p1.inputs, p1.output), (p.inputs, p.output));
    text.push_str(&format!("/// field_add for ISA v1 (programs/field_add_v1.s), same registers.\npub const FIELD_ADD_V1: &[u32] = &{:?};\n", p1.words()));
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("expected.rs");
    std::fs::write(out, text).unwrap();
    println!("cargo:rerun-if-changed=build.rs");
}
