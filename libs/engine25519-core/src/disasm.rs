//! Disassembler, the inverse of [`crate::asm`]. Total: every 32-bit word disassembles, either to
//! its instruction in canonical syntax or to a `.word 0x........ ; reason` line, and
//! `assemble(&disassemble(words, isa), isa)` reproduces `words` exactly for any word sequence of
//! at most `UCODE_WORDS` words. Like the assembler it is driven by the tables in [`crate::isa`].

use crate::isa::{self, field, Instr, Isa, OpcodeInfo, OperandKind};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// How one word decodes in an ISA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A legal instruction whose unused fields are all zero (what the assembler emits).
    Insn { op: &'static OpcodeInfo, fields: Instr },
    /// A legal opcode with non-zero bits in fields its operands do not use. The engine executes
    /// it as `Insn` (unused fields are ignored), but the assembler never emits it.
    NonCanonical { op: &'static OpcodeInfo, fields: Instr },
    /// The explicitly illegal word `udf` ([`isa::UDF_WORD`]).
    Udf,
    /// An opcode that is illegal in this ISA.
    Illegal { opcode: u8 },
}

/// The word the assembler would emit for `op` with these fields (unused fields cleared).
pub fn canonical_word(op: &OpcodeInfo, f: &Instr) -> u32 {
    let mut c = Instr { opcode: op.code, ..Instr::default() };
    for k in op.operands {
        match k {
            OperandKind::Wd => c.wd = f.wd,
            OperandKind::Ra => (c.ra, c.ca) = (f.ra, f.ca),
            OperandKind::RaReg => c.ra = f.ra,
            OperandKind::Rb => (c.rb, c.cb) = (f.rb, f.cb),
            OperandKind::RbReg => c.rb = f.rb,
            OperandKind::Target | OperandKind::Imm => c.imm = f.imm,
        }
    }
    c.encode()
}

/// Classify one word.
pub fn decode(word: u32, isa: Isa) -> Decoded {
    if word == isa::UDF_WORD {
        return Decoded::Udf;
    }
    let fields = Instr::decode(word);
    match isa.opcode(fields.opcode as u32) {
        None => Decoded::Illegal { opcode: fields.opcode },
        Some(op) if canonical_word(op, &fields) == word => Decoded::Insn { op, fields },
        Some(op) => Decoded::NonCanonical { op, fields },
    }
}

/// Bit mask of the window registers `words` names in any register operand (destination or
/// source; constants excluded). No instruction writes a register its operands do not name
/// (spec/engine25519.toml: CSWAP writes Wd and Ra, every other writer only Wd), so a program
/// started on an all-zero window leaves every register outside this mask zero. A word that
/// does not decode to a legal instruction of `isa` names every register (the mask is then
/// all ones): what it would do is not known.
pub fn named_registers(words: &[u32], isa: Isa) -> u64 {
    let all = if isa::REGS_PER_WINDOW >= 64 { u64::MAX } else { (1u64 << isa::REGS_PER_WINDOW) - 1 };
    let mut mask = 0u64;
    for &w in words {
        let (op, f) = match decode(w, isa) {
            Decoded::Insn { op, fields } | Decoded::NonCanonical { op, fields } => (op, fields),
            Decoded::Udf | Decoded::Illegal { .. } => return all,
        };
        for k in op.operands {
            let reg = match k {
                OperandKind::Wd => Some(f.wd),
                OperandKind::Ra => (!f.ca).then_some(f.ra),
                OperandKind::RaReg => Some(f.ra),
                OperandKind::Rb => (!f.cb).then_some(f.rb),
                OperandKind::RbReg => Some(f.rb),
                OperandKind::Target | OperandKind::Imm => None,
            };
            if let Some(r) = reg {
                mask |= 1u64 << (r as usize % isa::REGS_PER_WINDOW);
            }
        }
    }
    mask & all
}

fn reg_or_const(n: u8, c: bool) -> String {
    if c {
        format!("#{n}")
    } else {
        format!("%{n}")
    }
}

/// Branch target of a decoded instruction at `pc` (`None` if it has no target operand).
pub fn branch_target(op: &OpcodeInfo, f: &Instr, pc: usize) -> Option<i64> {
    op.operands.contains(&OperandKind::Target).then(|| pc as i64 + f.imm as i64 + 1)
}

/// Format an instruction; `target` renders the branch target operand.
fn format_insn(op: &OpcodeInfo, f: &Instr, target: &dyn Fn(i64) -> String) -> String {
    let ops: Vec<String> = op
        .operands
        .iter()
        .map(|k| match k {
            OperandKind::Wd => format!("%{}", f.wd),
            OperandKind::Ra | OperandKind::RaReg => reg_or_const(f.ra, f.ca),
            OperandKind::Rb | OperandKind::RbReg => reg_or_const(f.rb, f.cb),
            OperandKind::Target => target(f.imm as i64),
            OperandKind::Imm => f.imm.to_string(),
        })
        .collect();
    if ops.is_empty() {
        op.mnemonic.to_string()
    } else {
        format!("{} {}", op.mnemonic, ops.join(", "))
    }
}

fn rel(imm: i64) -> String {
    let off = imm + 1;
    match off {
        0 => ".".to_string(),
        o if o > 0 => format!(".+{o}"),
        o => format!(".{o}"),
    }
}

/// One word as one line, without program context: branch targets are written relative to the
/// instruction (`.+n` / `.-n`). Non-canonical and illegal words become `.word` lines with a
/// comment. Useful for traces and the INSTRUCTION CSR.
pub fn disassemble_word(word: u32, isa: Isa) -> String {
    match decode(word, isa) {
        Decoded::Insn { op, fields } => format_insn(op, &fields, &rel),
        Decoded::NonCanonical { op, fields } => {
            format!("{} ; non-canonical: {}", word_line(word), format_insn(op, &fields, &rel))
        }
        Decoded::Udf => "udf".to_string(),
        Decoded::Illegal { opcode } => format!("{} ; illegal opcode {opcode}", word_line(word)),
    }
}

fn word_line(word: u32) -> String {
    format!(".word {word:#010x}")
}

/// Label name the disassembler gives to word address `addr`.
pub fn label_name(addr: usize) -> String {
    format!("L{addr:04}")
}

/// Disassemble a whole program: a `.isa` line, then one statement per word, with labels
/// `L0000`.. at branch targets. The output assembles back to exactly `words`.
pub fn disassemble(words: &[u32], isa: Isa) -> String {
    let len = words.len();
    let (imm_min, imm_max) = field::IMM.signed_range();
    let in_program = |t: i64| t >= 0 && t < len as i64;
    let mut targets = BTreeSet::new();
    for (pc, &w) in words.iter().enumerate() {
        if let Decoded::Insn { op, fields } = decode(w, isa) {
            if let Some(t) = branch_target(op, &fields, pc) {
                if in_program(t) {
                    targets.insert(t as usize);
                }
            }
        }
    }
    let mut out = String::new();
    writeln!(out, ".isa {isa}").unwrap();
    for (pc, &w) in words.iter().enumerate() {
        if targets.contains(&pc) {
            writeln!(out, "{}:", label_name(pc)).unwrap();
        }
        let line = match decode(w, isa) {
            Decoded::Insn { op, fields } => match branch_target(op, &fields, pc) {
                Some(t) if !in_program(t) => {
                    debug_assert!((imm_min as i64..=imm_max as i64).contains(&(fields.imm as i64)));
                    format!("{} ; {} (target {t} outside the program)", word_line(w), format_insn(op, &fields, &rel))
                }
                _ => format_insn(op, &fields, &|imm| label_name((pc as i64 + imm + 1) as usize)),
            },
            _ => disassemble_word(w, isa),
        };
        writeln!(out, "    {line}").unwrap();
    }
    out
}
