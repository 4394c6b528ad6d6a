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
    /// engine cycles of one run (the model's exact count, build time; the ladder is constant time)
    pub cycles: u64,
    /// window registers the microcode names (`engine25519_core::disasm::named_registers`, plus
    /// the three above): the only ones a run can leave non-zero, so the only ones to wipe
    pub named: u64,
    /// the engine program that wipes them ([`wipe_program`])
    pub wipe: Vec<u32>,
}

include!(concat!(env!("OUT_DIR"), "/x25519_build.rs"));

/// The built-in X25519 microcode of `isa` (engine25519_core::programs) and its register
/// convention. The microcode clamps the scalar and reduces u itself (RFC 7748).
pub fn x25519_program(isa: Isa) -> X25519Program {
    use engine25519_core::programs as p;
    let words = p::x25519_program(isa).words().to_vec();
    let (scalar_reg, u_reg, out_reg) = (p::X25519_SCALAR_REG, p::X25519_U_REG, p::RESULT_REG);
    let named = engine25519_core::disasm::named_registers(&words, isa) | 1 << scalar_reg | 1 << u_reg | 1 << out_reg;
    let cycles = match isa {
        Isa::V1 => X25519_CYCLES_V1,
        Isa::V2 => X25519_CYCLES_V2,
    };
    let wipe = wipe_program(isa, named);
    X25519Program { words, scalar_reg, u_reg, out_reg, cycles, named, wipe }
}

/// The window wipe the server runs on the engine after every finished X25519: `xor %r, %r, %r`
/// for each register in `mask`, then `fin`. Constant time (no branch, no data dependence); on
/// the engine it costs a few dozen engine cycles, where writing zeros over the bus costs eight
/// bus writes per register.
pub fn wipe_program(isa: Isa, mask: u64) -> Vec<u32> {
    use engine25519_core::isa::Instr;
    let xor = isa.by_mnemonic("xor").expect("every ISA has xor").code;
    let fin = isa.by_mnemonic("fin").expect("every ISA has fin").code;
    let mut words: Vec<u32> = (0..crate::api::NUM_REGS as u8)
        .filter(|&r| mask >> r & 1 != 0)
        .map(|r| Instr { opcode: xor, wd: r, ra: r, ca: false, rb: r, cb: false, imm: 0 }.encode())
        .collect();
    words.push(Instr { opcode: fin, ..Instr::default() }.encode());
    words
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

    /// The wipe program zeroes exactly the registers of its mask, on the model, on both ISAs,
    /// and disassembles to what it says (xor %r, %r, %r ... fin).
    #[test]
    fn wipe_program_zeroes_its_registers_and_nothing_else() {
        use engine25519_core::model::{EngineModel, Job};
        for i in [isa::Isa::V1, isa::Isa::V2] {
            let mask = super::x25519_program(i).named;
            let words = super::wipe_program(i, mask);
            assert_eq!(words.len(), mask.count_ones() as usize + 1);
            let text = engine25519_core::disasm::disassemble(&words, i);
            assert!(text.contains("xor") && text.trim_end().ends_with("fin"), "{text}");
            let mut m = EngineModel::new(i);
            m.load_program(&words, 0).unwrap();
            for r in 0..api::NUM_REGS {
                m.set_reg(3, r, &[r as u8 + 1; 32]).unwrap();
            }
            let out = m.run(&Job { window: 3, mpstart: 0, mplen: words.len(), cycle_budget: 100_000 }).unwrap();
            for r in 0..api::NUM_REGS {
                let want = if mask >> r & 1 != 0 { [0u8; 32] } else { [r as u8 + 1; 32] };
                assert_eq!(m.reg(3, r).unwrap(), want, "{i}: register {r}");
            }
            assert!(out.cycles < 200, "{i}: {} cycles", out.cycles);
        }
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
