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
