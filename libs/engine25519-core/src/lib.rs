//! engine25519-core: the Curve25519 engine's ISA (generated from `spec/engine25519.toml`),
//! assembler, disassembler and (helper engine-model) the cycle-exact model.

pub mod isa;
pub mod asm;
pub mod disasm;
pub mod docs;
pub mod model;
pub mod model_field;
pub mod programs;
