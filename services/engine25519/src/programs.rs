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
    /// the batch program (up to `max_jobs` X25519 in one engine run), pinned next to this one;
    /// None on an ISA without one (v1: per-job runs)
    pub batch: Option<X25519BatchProgram>,
}

/// The built-in X25519 batch program (`x25519_batch_v2.s`) and its register convention
/// (`engine25519_core::programs::X25519_BATCH_*`).
#[derive(Clone, Debug)]
pub struct X25519BatchProgram {
    pub words: Vec<u32>,
    /// the ring: job j's scalar in `slots[2 j]`, its u in `slots[2 j + 1]`
    pub slots: [usize; 6],
    /// register receiving N - 1
    pub count_reg: usize,
    /// jobs one run takes (1..=max_jobs)
    pub max_jobs: usize,
    /// `result_regs[n - 1][j]`: where job j of a run of n jobs leaves its result
    pub result_regs: [[usize; 3]; 3],
    /// engine cycles of one run of n jobs, `cycles[n - 1]` (the model's exact count, build time)
    pub cycles: Vec<u64>,
}

include!(concat!(env!("OUT_DIR"), "/x25519_build.rs"));

/// The built-in X25519 microcode of `isa` (engine25519_core::programs) and its register
/// convention. The microcode clamps the scalar and reduces u itself (RFC 7748).
///
/// On an ISA with a batch program (v2) that program comes along, and `named` (so the wipe
/// program) covers the registers of both.
pub fn x25519_program(isa: Isa) -> X25519Program {
    use engine25519_core::programs as p;
    let words = p::x25519_program(isa).words().to_vec();
    let (scalar_reg, u_reg, out_reg) = (p::X25519_SCALAR_REG, p::X25519_U_REG, p::RESULT_REG);
    let mut named =
        engine25519_core::disasm::named_registers(&words, isa) | 1 << scalar_reg | 1 << u_reg | 1 << out_reg;
    let (cycles, batch_cycles) = match isa {
        Isa::V1 => (X25519_CYCLES_V1, X25519_BATCH_CYCLES_V1),
        Isa::V2 => (X25519_CYCLES_V2, X25519_BATCH_CYCLES_V2),
    };
    let batch = p::x25519_batch_program(isa).map(|bp| {
        let words = bp.words().to_vec();
        named |= engine25519_core::disasm::named_registers(&words, isa);
        for &r in bp.inputs {
            named |= 1 << r;
        }
        let mut result_regs = [[0; 3]; 3];
        for (n, row) in result_regs.iter_mut().enumerate().take(p::X25519_BATCH_MAX) {
            for (j, r) in row.iter_mut().enumerate().take(n + 1) {
                *r = p::x25519_batch_result_reg(n + 1, j).expect("j < n <= X25519_BATCH_MAX");
                named |= 1 << *r;
            }
        }
        assert_eq!(batch_cycles.len(), p::X25519_BATCH_MAX, "build.rs counted every run length");
        X25519BatchProgram {
            words,
            slots: p::X25519_BATCH_SLOTS,
            count_reg: p::X25519_BATCH_COUNT_REG,
            max_jobs: p::X25519_BATCH_MAX,
            result_regs,
            cycles: batch_cycles.to_vec(),
        }
    });
    let wipe = wipe_program(isa, named);
    X25519Program { words, scalar_reg, u_reg, out_reg, cycles, named, wipe, batch }
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

    /// v2 carries the batch program (v1 does not): its slots begin with the X25519 program's
    /// inputs, the wipe covers every register it names, and its cycles per run length are the
    /// model's (one job no slower than the X25519 program, n jobs less than n runs of it).
    #[test]
    fn batch_program_on_v2_only() {
        assert!(super::x25519_program(isa::Isa::V1).batch.is_none());
        let p = super::x25519_program(isa::Isa::V2);
        let b = p.batch.as_ref().expect("v2 has a batch program");
        assert_eq!((b.slots[0], b.slots[1]), (p.scalar_reg, p.u_reg));
        assert_eq!(b.result_regs[0][0], p.out_reg);
        let named = engine25519_core::disasm::named_registers(&b.words, isa::Isa::V2);
        assert_eq!(named & !p.named, 0, "the wipe misses a register of the batch program");
        for r in b.slots.iter().chain([&b.count_reg]) {
            assert!(p.named >> r & 1 != 0, "%{r}");
        }
        for n in 1..=b.max_jobs {
            assert_eq!(b.cycles[n - 1], engine25519_core::programs::x25519_batch_cycles_checked(isa::Isa::V2, n));
            // one job no slower than the X25519 program; n jobs less than n runs of it (their
            // inversions run interleaved)
            assert!(b.cycles[n - 1] <= p.cycles + (n as u64 - 1) * (p.cycles - 1), "{n} jobs");
        }
        assert!(p.words.len() + b.words.len() + p.wipe.len() <= api::UCODE_WORDS / 2);
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
