//! Assembler / disassembler tests: golden encodings from the spec, exhaustive round trips over
//! every opcode and operand form of every ISA, random-word totality, the upstream encoding bugs,
//! and malformed input with line:column errors.

use engine25519_core::asm::{assemble, declared_isa, AsmErrorKind};
use engine25519_core::disasm::{decode, disassemble, disassemble_word, Decoded};
use engine25519_core::isa::{self, field, Instr, Isa, OperandKind};

/// Assemble one statement in the middle of a program of `fin`s so relative targets resolve.
fn assemble_one(isa: Isa, stmt: &str) -> u32 {
    let mut src = String::new();
    for _ in 0..8 {
        src.push_str("fin\n");
    }
    src.push_str(stmt);
    src.push('\n');
    for _ in 0..8 {
        src.push_str("fin\n");
    }
    let p = assemble(&src, isa).unwrap_or_else(|e| panic!("{stmt}: {e}"));
    p.words[8]
}

#[test]
fn golden_examples_from_spec() {
    assert!(isa::EXAMPLES.len() >= 8);
    for ex in isa::EXAMPLES {
        assert_eq!(assemble_one(ex.isa, ex.asm), ex.word, "{} ({})", ex.asm, ex.note);
        // and the word disassembles back to the same text
        assert_eq!(disassemble_word(ex.word, ex.isa), ex.asm.to_lowercase(), "{:#010x}", ex.word);
    }
}

#[test]
fn upstream_encoding_bugs_absent() {
    for isa in Isa::ALL {
        // `not %wd, #c` must be NOT with ca set, never PSA.
        let w = assemble_one(isa, "not %5, #3");
        let f = Instr::decode(w);
        assert_eq!(isa.opcode(f.opcode as u32).unwrap().mnemonic, "not");
        assert!(f.ca && f.ra == 3 && f.wd == 5);
        let w = assemble_one(isa, "not %7, %9");
        assert_eq!(isa.opcode_of(w).unwrap().mnemonic, "not");
        // `udf` must be an illegal word, never a legal instruction (upstream: PSB).
        let w = assemble_one(isa, "udf");
        assert_eq!(w, isa::UDF_WORD);
        assert!(isa.opcode_of(w).is_none(), "udf decodes as a legal opcode in {isa}");
        assert_eq!(decode(w, isa), Decoded::Udf);
        assert_eq!(disassemble_word(w, isa), "udf");
    }
}

/// Operand values to try for each operand kind.
fn values(kind: OperandKind) -> Vec<(u8, bool, i16)> {
    let regs = [0u8, 1, 17, 30, 31];
    let consts = [0u8, 1, 3, 9, 10, 31];
    match kind {
        OperandKind::Wd | OperandKind::RaReg | OperandKind::RbReg => regs.iter().map(|&r| (r, false, 0)).collect(),
        OperandKind::Ra | OperandKind::Rb => {
            regs.iter().map(|&r| (r, false, 0)).chain(consts.iter().map(|&c| (c, true, 0))).collect()
        }
        OperandKind::Target | OperandKind::Imm => {
            let (lo, hi) = field::IMM.signed_range();
            [lo, lo + 1, -2, -1, 0, 1, 2, hi - 1, hi].iter().map(|&i| (0, false, i as i16)).collect()
        }
    }
}

/// Every canonical word of every opcode over the value sets above.
fn all_forms(isa: Isa) -> Vec<(bool, u32)> {
    let mut out = Vec::new();
    for op in isa.opcodes() {
        let mut combos: Vec<Instr> = vec![Instr { opcode: op.code, ..Instr::default() }];
        for &k in op.operands {
            let mut next = Vec::new();
            for c in &combos {
                for &(n, is_const, imm) in &values(k) {
                    let mut i = *c;
                    match k {
                        OperandKind::Wd => i.wd = n,
                        OperandKind::Ra | OperandKind::RaReg => (i.ra, i.ca) = (n, is_const),
                        OperandKind::Rb | OperandKind::RbReg => (i.rb, i.cb) = (n, is_const),
                        OperandKind::Target | OperandKind::Imm => i.imm = imm,
                    }
                    next.push(i);
                }
            }
            combos = next;
        }
        let is_branch = op.operands.contains(&OperandKind::Target);
        out.extend(combos.iter().map(|i| (is_branch, i.encode())));
    }
    out
}

#[test]
fn exhaustive_roundtrip_every_opcode_and_form() {
    for isa in Isa::ALL {
        let forms = all_forms(isa);
        let (branches, plain): (Vec<_>, Vec<_>) = forms.into_iter().partition(|(b, _)| *b);
        let plain: Vec<u32> = plain.into_iter().map(|(_, w)| w).collect();
        let branches: Vec<u32> = branches.into_iter().map(|(_, w)| w).collect();
        assert!(!plain.is_empty() && !branches.is_empty());
        // Programs of 1024 words: branches sit in [256, 768) so every 9-bit offset stays inside;
        // the rest is filled with the non-branch forms (cycled).
        let mut plain_iter = plain.iter().cycle();
        let mut b = 0;
        let mut plain_seen = 0;
        while b < branches.len() || plain_seen < plain.len() {
            let mut words = Vec::with_capacity(isa::UCODE_WORDS);
            for pc in 0..isa::UCODE_WORDS {
                if (256..768).contains(&pc) && b < branches.len() {
                    words.push(branches[b]);
                    b += 1;
                } else {
                    words.push(*plain_iter.next().unwrap());
                    plain_seen += 1;
                }
            }
            for &w in &words {
                assert!(matches!(decode(w, isa), Decoded::Insn { .. }), "{w:#010x} not canonical");
            }
            let text = disassemble(&words, isa);
            assert!(!text.contains(".word"), "canonical words must disassemble to instructions");
            let p = assemble(&text, isa).unwrap_or_else(|e| panic!("{isa}: {e}"));
            assert_eq!(p.words, words);
            assert_eq!(disassemble(&p.words, isa), text, "disassemble(assemble(x)) == x");
        }
    }
}

/// xorshift64*: deterministic pseudo-random words for the totality test.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

#[test]
fn disassembler_is_total_and_reassembles_any_words() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let opcodes_mask = field::OPCODE.mask();
    for isa in Isa::ALL {
        for round in 0..64 {
            let len = 1 + (rng.next() as usize % isa::UCODE_WORDS);
            let words: Vec<u32> = (0..len)
                .map(|_| {
                    let w = rng.next();
                    match round % 3 {
                        // mostly-legal opcodes with random (often non-canonical) fields
                        0 => (w & !opcodes_mask) | field::OPCODE.put(0, w % 16),
                        // canonical instructions of random legal opcodes
                        1 => {
                            let ops = isa.opcodes();
                            let op = &ops[w as usize % ops.len()];
                            engine25519_core::disasm::canonical_word(op, &Instr::decode(rng.next()))
                        }
                        _ => w,
                    }
                })
                .collect();
            let text = disassemble(&words, isa);
            let p = assemble(&text, isa).unwrap_or_else(|e| panic!("{isa} round {round}: {e}\n{text}"));
            assert_eq!(p.words, words, "{isa} round {round}");
        }
        // every opcode value, with all other bits set and clear
        for code in 0..=field::OPCODE.max() {
            for rest in [0u32, !opcodes_mask] {
                let w = field::OPCODE.put(rest, code);
                let line = disassemble_word(w, isa);
                let legal = isa.opcode(code).is_some();
                assert_eq!(line.contains("illegal"), !legal && w != isa::UDF_WORD, "{w:#010x}: {line}");
                let p = assemble(&disassemble(&[w], isa), isa).unwrap();
                assert_eq!(p.words, [w]);
            }
        }
    }
}

#[test]
fn source_syntax() {
    let src = "\
        .isa v1          ; header\n\
        // full-line comment\n\
        start:  MUL %0, %30, %30   // upper-case mnemonic\n\
        \tpsa %28, #5\n\
        loop: sub %28,%28,#1\n\
        a: b:  brz done, %28\n\
           brz loop, #0\n\
        done: fin ; tail\n\
        .word 0xdead_beef\n\
        .word 42\n\
        udf\n";
    let p = assemble(src, Isa::V1).unwrap();
    assert_eq!(p.len(), 9);
    assert_eq!(p.label("start"), Some(0));
    assert_eq!(p.label("loop"), Some(2));
    assert_eq!(p.label("a"), Some(3));
    assert_eq!(p.label("b"), Some(3));
    assert_eq!(p.label("done"), Some(5));
    assert_eq!(p.source_lines[0], 3);
    assert_eq!(p.words[6], 0xdead_beef);
    assert_eq!(p.words[7], 42);
    assert_eq!(p.words[8], isa::UDF_WORD);
    let brz = Instr::decode(p.words[3]);
    assert_eq!((brz.imm, brz.ra, brz.ca), (1, 28, false)); // 3 + 1 + 1 = 5
    let jmp = Instr::decode(p.words[4]);
    assert_eq!((jmp.imm, jmp.ra, jmp.ca), (-3, 0, true)); // 4 - 3 + 1 = 2
    assert_eq!(declared_isa(src).unwrap(), Some(Isa::V1));
    assert_eq!(declared_isa("fin").unwrap(), None);
    // relative targets
    let p = assemble("fin\nbrz ., #0\nbrz .-1, #0\nbrz .+1, %1\nfin", Isa::V1).unwrap();
    assert_eq!(Instr::decode(p.words[1]).imm, -1);
    assert_eq!(Instr::decode(p.words[2]).imm, -2);
    assert_eq!(Instr::decode(p.words[3]).imm, 0);
    // empty program
    assert!(assemble("; nothing\n\n", Isa::V2).unwrap().is_empty());
}

#[test]
fn program_size_limit() {
    let ok = "fin\n".repeat(isa::UCODE_WORDS);
    assert_eq!(assemble(&ok, Isa::V1).unwrap().len(), isa::UCODE_WORDS);
    let too_long = format!("{ok}  fin\n");
    let e = assemble(&too_long, Isa::V1).unwrap_err();
    assert_eq!((e.kind, e.line, e.col), (AsmErrorKind::ProgramTooLong, isa::UCODE_WORDS + 1, 3));
}

#[test]
fn branch_range_limits() {
    let (lo, hi) = field::IMM.signed_range();
    // forward: target = pc + off + 1, max off = hi
    let fwd = |gap: usize| format!("brz end, %1\n{}end: fin\n", "fin\n".repeat(gap));
    assert!(assemble(&fwd(hi as usize), Isa::V1).is_ok());
    let e = assemble(&fwd(hi as usize + 1), Isa::V1).unwrap_err();
    assert_eq!((e.kind, e.line, e.col), (AsmErrorKind::BranchOutOfRange, 1, 5));
    // backward: min off = lo -> target = pc + lo + 1
    let back = |gap: usize| format!("top: fin\n{}brz top, #0\n", "fin\n".repeat(gap));
    assert!(assemble(&back((-lo - 2) as usize), Isa::V1).is_ok());
    let e = assemble(&back((-lo - 1) as usize), Isa::V1).unwrap_err();
    assert_eq!(e.kind, AsmErrorKind::BranchOutOfRange);
    assert_eq!((e.line, e.col), ((-lo + 1) as usize, 5));
}

fn error_of(src: &str) -> (AsmErrorKind, usize, usize) {
    let e = assemble(src, Isa::V1).expect_err(src);
    assert!(!e.message.is_empty());
    assert_eq!(e.to_string(), format!("{}:{}: {}", e.line, e.col, e.message));
    (e.kind, e.line, e.col)
}

#[test]
fn malformed_input_errors_with_line_and_column() {
    use AsmErrorKind::*;
    let cases: &[(&str, (AsmErrorKind, usize, usize))] = &[
        ("fin\n  frob %1, %2\n", (UnknownMnemonic, 2, 3)),
        ("mul %1, %2\n", (BadOperand, 1, 1)),
        ("mul %1, %2, %3, %4\n", (BadOperand, 1, 17)),
        ("fin %1\n", (BadOperand, 1, 5)),
        ("add %1, , %2\n", (BadOperand, 1, 9)),
        ("add %1, %2,\n", (BadOperand, 1, 12)),
        ("add %1 %2, %3\n", (BadOperand, 1, 7)),
        ("psa %32, %1\n", (RegisterOutOfRange, 1, 5)),
        ("psa %1, %99999999999999999999\n", (RegisterOutOfRange, 1, 9)),
        ("psa %1, #32\n", (ConstantOutOfRange, 1, 9)),
        ("psa #1, %1\n", (BadOperand, 1, 5)),
        ("psa %1, r2\n", (BadOperand, 1, 9)),
        ("psa %1, %\n", (BadOperand, 1, 9)),
        ("psa %1, %-1\n", (BadOperand, 1, 9)),
        ("psa %1, %0x1\n", (BadOperand, 1, 9)),
        ("brz nowhere, %1\nfin\n", (UndefinedLabel, 1, 5)),
        ("brz %1, %1\nfin\n", (BadOperand, 1, 5)),
        ("brz .+x, %1\nfin\n", (BadOperand, 1, 5)),
        ("brz .++1, %1\nfin\n", (BadOperand, 1, 5)),
        ("brz .+1, %1\n", (TargetOutsideProgram, 1, 5)),
        ("brz .-1, #0\nfin\n", (TargetOutsideProgram, 1, 5)),
        ("x: fin\n x: fin\n", (DuplicateLabel, 2, 2)),
        ("1abel: fin\n", (Syntax, 1, 1)),
        ("fin:: fin\n", (Syntax, 1, 5)),
        ("mul%1, %2, %3\n", (Syntax, 1, 4)),
        ("é fin\n", (Syntax, 1, 1)),
        ("fin\n\u{a0}fin\n", (Syntax, 2, 1)),
        (".word\n", (BadOperand, 1, 1)),
        (".word 0x1_0000_0000\n", (BadOperand, 1, 7)),
        (".word -1\n", (BadOperand, 1, 7)),
        (".word 0xZZ\n", (BadOperand, 1, 7)),
        (".bogus 1\n", (Syntax, 1, 1)),
        (".isa v9\n", (IsaMismatch, 1, 6)),
        (".isa v2\nfin\n", (IsaMismatch, 1, 6)),
        ("fin\n.isa v1\n", (Syntax, 2, 1)),
        (".isa\n", (Syntax, 1, 1)),
        ("udf %1\n", (BadOperand, 1, 5)),
    ];
    for (src, want) in cases {
        assert_eq!(error_of(src), *want, "source {src:?}");
    }
    // a mnemonic that exists in no ISA is unknown in every ISA
    for isa in Isa::ALL {
        let e = assemble("xyzzy %1", isa).unwrap_err();
        assert_eq!(e.kind, UnknownMnemonic);
    }
}

#[test]
fn garbage_never_panics() {
    let mut rng = Rng(99);
    let alphabet: Vec<char> = "%#.,:;/ \t\nabfinmulsz0123456789+-xé\u{a0}_".chars().collect();
    for _ in 0..2000 {
        let n = rng.next() as usize % 60;
        let s: String = (0..n).map(|_| alphabet[rng.next() as usize % alphabet.len()]).collect();
        for isa in Isa::ALL {
            if let Err(e) = assemble(&s, isa) {
                assert!(e.line >= 1 && e.col >= 1, "{s:?}: {e}");
            }
        }
    }
}

/// The registers a program names (what the server wipes after an X25519): destinations and
/// register sources, never constants; CSWAP's second register; every register for a word the
/// ISA does not define.
#[test]
fn named_registers_are_the_register_operands() {
    use engine25519_core::disasm::named_registers;
    let words = |text: &str, isa: Isa| assemble(text, isa).unwrap_or_else(|e| panic!("{text}: {e}")).words;
    let w = words("xor %3, %4, #5\nmul %6, #2, %7\nfin\n", Isa::V1);
    assert_eq!(named_registers(&w, Isa::V1), 1 << 3 | 1 << 4 | 1 << 6 | 1 << 7);
    let w = words("cswap %1, %2, %9\nfin\n", Isa::V2);
    assert_eq!(named_registers(&w, Isa::V2), 1 << 1 | 1 << 2 | 1 << 9);
    let all = (1u64 << isa::REGS_PER_WINDOW) - 1;
    assert_eq!(named_registers(&[isa::UDF_WORD], Isa::V1), all);
    let fadd = words("fadd %1, %2, %3\nfin\n", Isa::V2);
    assert_eq!(named_registers(&fadd, Isa::V1), all, "fadd is not a v1 opcode");
    assert_eq!(named_registers(&[], Isa::V1), 0);
    // the ladder names fewer registers than a window has (else the narrow wipe saves nothing)
    for isa in [Isa::V1, Isa::V2] {
        let n = named_registers(engine25519_core::programs::x25519_program(isa).words(), isa);
        assert!(n != all && n != 0, "{isa}: {n:#x}");
    }
}
