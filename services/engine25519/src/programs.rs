//! The server's program table: the built-in microcode it pins in microcode RAM at start-up and
//! the register convention each program uses. The words come from engine25519_core::programs
//! (assembled from programs/*.s for the ISA the server runs).

use engine25519_core::isa::Isa;

/// The built-in X25519 microcode and its register convention.
#[derive(Clone, Debug)]
pub struct X25519Program {
    pub words: Vec<u32>,
    /// register receiving the (clamped) scalar
    pub scalar_reg: usize,
    /// register receiving u
    pub u_reg: usize,
    /// register holding the result
    pub out_reg: usize,
}

/// The built-in X25519 microcode of `isa` (engine25519_core::programs) and its register
/// convention. The microcode clamps the scalar and reduces u itself (RFC 7748).
pub fn x25519_program(isa: Isa) -> X25519Program {
    use engine25519_core::programs as p;
    X25519Program {
        words: p::x25519_program(isa).words().to_vec(),
        scalar_reg: p::X25519_SCALAR_REG,
        u_reg: p::X25519_U_REG,
        out_reg: p::RESULT_REG,
    }
}

#[cfg(test)]
mod tests {
    use crate::api;
    use engine25519_core::isa;

    /// The client crate states the engine geometry without linking the core (which carries the
    /// model); it must equal the spec's (generated into engine25519_core::isa).
    #[test]
    fn api_geometry_matches_the_spec() {
        assert_eq!(api::NUM_WINDOWS, isa::WINDOWS);
        assert_eq!(api::UCODE_WORDS, isa::UCODE_WORDS);
        assert_eq!(api::NUM_REGS, isa::REGS_PER_WINDOW);
        assert_eq!(32, isa::REG_WORDS * 4, "256-bit registers");
    }

    #[test]
    fn x25519_program_table_uses_the_programs_registers() {
        for i in [isa::Isa::V1, isa::Isa::V2] {
            let p = super::x25519_program(i);
            assert!(!p.words.is_empty() && p.words.len() <= api::UCODE_WORDS);
            assert!(p.scalar_reg < api::NUM_REGS && p.u_reg < api::NUM_REGS && p.out_reg < api::NUM_REGS);
        }
    }
}
