//! Constant time by construction: no branch in the X25519 microcode (the single program of each
//! ISA and the v2 batch program) depends on a secret scalar.
//!
//! A deliberately over-approximating taint analysis over the program text: the scalar register is
//! tainted; any instruction that names a tainted register (as Wd, Ra or Rb, read or written) taints
//! every register it names; taint is never removed and control flow is ignored, so the result
//! covers every path and every iteration. A BRZ whose condition register is tainted would be a
//! secret-dependent branch and fails the test. (Equal cycle counts over random inputs are asserted
//! separately in tests/x25519.rs.)

use engine25519_core::isa::{Instr, Isa, OperandKind};
use engine25519_core::programs;

/// Register fields an instruction names, from the ISA tables (constants excluded).
fn registers(isa: Isa, word: u32) -> (Vec<u8>, Option<u8>) {
    let op = isa.opcode_of(word).expect("X25519 microcode only uses legal opcodes");
    let i = Instr::decode(word);
    let mut regs = Vec::new();
    let mut cond = None;
    for k in op.operands {
        match k {
            OperandKind::Wd => regs.push(i.wd),
            OperandKind::Ra if !i.ca => regs.push(i.ra),
            OperandKind::Rb if !i.cb => regs.push(i.rb),
            OperandKind::RaReg => regs.push(i.ra),
            OperandKind::RbReg => regs.push(i.rb),
            _ => {}
        }
    }
    if op.mnemonic == "brz" && !i.ca {
        cond = Some(i.ra);
    }
    (regs, cond)
}

fn tainted_registers(isa: Isa, words: &[u32], secrets: &[u8]) -> [bool; 32] {
    let mut t = [false; 32];
    for &s in secrets {
        t[s as usize] = true;
    }
    loop {
        let mut changed = false;
        for &w in words {
            let (regs, _) = registers(isa, w);
            if regs.iter().any(|&r| t[r as usize]) {
                for &r in &regs {
                    changed |= !t[r as usize];
                    t[r as usize] = true;
                }
            }
        }
        if !changed {
            return t;
        }
    }
}

/// The X25519 programs and their secret registers: the scalar of the single program; every
/// scalar slot of the batch program's ring.
fn secret_programs() -> Vec<(&'static programs::MicroProgram, Vec<u8>)> {
    let mut v: Vec<_> =
        Isa::ALL.iter().map(|&isa| (programs::x25519_program(isa), vec![programs::X25519_SCALAR_REG as u8])).collect();
    let batch = programs::x25519_batch_program(Isa::V2).expect("the v2 batch program");
    v.push((batch, programs::X25519_BATCH_SLOTS.iter().step_by(2).map(|&r| r as u8).collect()));
    v
}

#[test]
fn no_branch_depends_on_the_scalar() {
    for (p, secrets) in secret_programs() {
        let (isa, words) = (p.isa, p.words());
        let t = tainted_registers(isa, words, &secrets);
        let mut branches = 0;
        for (pc, &w) in words.iter().enumerate() {
            if let (_, Some(c)) = registers(isa, w) {
                branches += 1;
                assert!(!t[c as usize], "{} ({isa}): brz at word {pc} tests %{c}, which depends on the scalar", p.file);
            }
        }
        assert!(branches >= 2, "{isa}: expected the ladder/inversion loop branches, found {branches}");
        // the analysis is not vacuous: the ladder state does depend on the scalar
        assert!(t[programs::RESULT_REG], "{isa}: result register not reached by the scalar?");
        if p.name == "x25519_batch" {
            // every result register is reached, and the job counter is not
            assert!(programs::X25519_BATCH_SLOTS.iter().all(|&r| t[r]), "batch: a ring slot not reached?");
            assert!(!t[programs::X25519_BATCH_COUNT_REG], "batch: the job counter depends on a scalar");
        }
    }
}

#[test]
fn the_analysis_catches_a_secret_branch() {
    // a program that branches on a scalar bit must be flagged
    let src = "xbt %16, %31\nshl %1, %16\nbrz skip, %1\npsa %2, #1\nskip: fin\n";
    for &isa in Isa::ALL.iter() {
        let p = engine25519_core::asm::assemble(src, isa).unwrap();
        let t = tainted_registers(isa, &p.words, &[31]);
        let flagged = p.words.iter().filter_map(|&w| registers(isa, w).1).any(|c| t[c as usize]);
        assert!(flagged, "{isa}: the taint analysis missed a secret-dependent branch");
    }
}
