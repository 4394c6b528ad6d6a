//! Generator of `docs/engine-isa.md` from the ISA tables (themselves generated from
//! `spec/engine25519.toml`). Run `cargo xtask gen-docs` (or
//! `ENGINE_ISA_UPDATE_DOCS=1 cargo test -p engine25519-core --test docs`) after editing the spec;
//! the `docs` test fails while the committed file is stale.

use crate::asm::operand_usage;
use crate::isa::{self, csr, field, mem, Isa};
use std::fmt::Write as _;

/// Workspace-relative path of the generated document.
pub const DOC_PATH: &str = "docs/engine-isa.md";

fn hex256(words: &[u32; 8]) -> String {
    let mut s = String::from("0x");
    let mut started = false;
    for (i, w) in words.iter().enumerate().rev() {
        if !started && *w == 0 && i > 0 {
            continue;
        }
        if started {
            write!(s, "_{w:08x}").unwrap();
        } else {
            write!(s, "{w:x}").unwrap();
            started = true;
        }
    }
    s
}

fn bits(f: isa::Field) -> String {
    if f.width == 1 {
        format!("[{}]", f.lsb)
    } else {
        format!("[{}:{}]", f.lsb + f.width - 1, f.lsb)
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

const SYNTAX: &str = r#"One statement per line. Everything after `;` or `//` is a comment.

| element | syntax | notes |
|---|---|---|
| label | `name:` | identifier (`[A-Za-z_][A-Za-z0-9_]*`) followed by `:`; several labels may precede a statement on one line; case-sensitive |
| instruction | `mnemonic op, op, ...` | mnemonics are case-insensitive; operands are separated by `,`; whitespace inside an operand is an error |
| register | `%n` | `n` decimal, `%0`..`%31` of the job's window |
| constant | `#n` | constant ROM slot `n`, `#0`..`#31`, allowed where the operand kind is `ra`/`rb`; unlisted slots read 0 |
| branch target | `label`, `.`, `.+n`, `.-n` | `.` is the branch itself; encoded imm = target - pc - 1; the target must lie inside the program and the offset must fit the signed imm field |
| raw word | `.word value` | `value` in 0..=0xFFFFFFFF (decimal, `0x` hex or `0b` binary, `_` separators allowed) |
| illegal word | `udf` | emits the explicitly illegal word (see below); never a legal instruction |
| ISA declaration | `.isa v1` | optional, once, before any instruction; assembling the file for another ISA is an error (`cargo xtask asm` uses it as the default ISA) |
| include | `.include "name.s"` | assembles the named file's text in place (name in double quotes, without whitespace, `,`, `;` or `//`); labels are shared by the including and included files; an included file may declare `.isa` (checked) before its own first instruction |

`.include` names are resolved by the caller of the assembler: `cargo xtask asm FILE` reads them
relative to FILE's directory (also for includes inside included files), and the built-in programs
(`libs/engine25519-core/src/programs.rs`) take them from a table of fragments in
`libs/engine25519-core/programs/`. The plain `asm::assemble` has no resolver (`.include` is an
error there; use `asm::assemble_with`). Include cycles, nesting deeper than @MAX_INCLUDE_DEPTH@ levels and missing
files are errors.

Errors are reported as `line:column: message` in the main file, and as
`file:line:column: message` in an included file (`cargo xtask asm` always prefixes the file), for:
unknown mnemonics and directives, wrong operand count or form, registers/constants out of range,
bad integers, undefined or duplicate labels (also across files), branch offsets that do not fit
the immediate, branch targets outside the program, programs longer than the microcode RAM, and
includes that cannot be followed.

The disassembler is total: a canonical instruction (all fields its operands do not use are zero)
prints as assembly, with labels `L0000`.. at branch targets; anything else prints as
`.word 0x........ ; reason` (illegal opcode, non-canonical fields, branch target outside the
program). Reassembling the disassembly of any word sequence reproduces it bit for bit."#;

const VECTORS: &str = r#"`cargo xtask engine-vectors --out DIR [--count N] [--seed S]` writes, for every program in
`libs/engine25519-core/programs/` and every ISA it is written for, the program image, inputs,
expected outputs and cycle counts. Include fragments in that directory (`x25519_invert.s`: the
inversion and affine result shared by `x25519_v1.s` and `x25519_v2.s`; `x25519_v2_ladder.s`: the
v2 ladder of `x25519_v2.s`; `x25519_v2_ladder_sched.s`: that ladder rescheduled, the ladder of
`x25519_batch_v2.s`) are assembled into the programs that
`.include` them and are not programs of their own. `x25519_batch_v2.s` (v2 only) runs 1 to 3
X25519 in one run (the jobs' ladders one after another, then their inversions interleaved in
one block): operands in a ring of six registers, N - 1 in `%30`, job j's result in
`engine25519_core::programs::x25519_batch_result_reg(N, j)`; its vectors are runs of each length.
Expected outputs and cycles come from the cycle-exact model; the RFC 7748 X25519 vectors (every
job of a batch run) are checked against the RFC's outputs before anything is written, and the command re-reads every file and re-runs every vector before
it reports success.

| file | content |
|---|---|
| `manifest.json` | `format` = `"engine25519-vectors/1"`, `spec_version`, `seed`, `programs`: per program `name`, `isa`, `source`, `words`, `hex`, `bin`, `vect` (file names), `window`, `mpstart`, `mplen`, `inputs` (register numbers in argument order), `output` (register), `constant_cycles`, `vectors`: `[{kind, inputs: [hex], expected: hex, cycles, instructions, stop_reason}]` (the X25519 batch program's vectors also `outputs`: `[[register, hex]]`, every job's result in job order) |
| `NAME_ISA.hex` | program image, one word per line, 8 hex digits (`$readmemh`) |
| `NAME_ISA.bin` | program image, little-endian u32 words (the microcode RAM window's bytes) |
| `NAME_ISA.vect` | upstream VECT layout, little-endian u32 words: `0x56454354` ("VECT"); `load_addr << 16 \| code_len`; `nargs << 27 \| window << 23 \| nvectors`; the microcode; zero words up to a multiple of 8 words; then per vector `nargs` x 8 words of arguments (argument i goes to register `inputs[i]` of the manifest) followed by 8 words of the expected output register |

Register values in the manifest are 64 hex digits: the 32 little-endian bytes, byte 0 first
(= the register file's 8 u32 words, least significant word first). `cycles` are engine cycles
(eng_clk) from GO to the finished event; the gateware must match them exactly."#;

/// The full Markdown text of `docs/engine-isa.md`.
pub fn isa_markdown() -> String {
    let mut o = String::new();
    macro_rules! w { ($($t:tt)*) => { writeln!(o, $($t)*).unwrap() } }
    w!("<!-- GENERATED from spec/engine25519.toml by engine25519_core::docs (`cargo xtask gen-docs`). Do not edit. -->");
    w!("");
    w!("# engine25519 ISA (spec version {})", isa::SPEC_VERSION);
    w!("");
    w!("{}", isa::SPEC_DESCRIPTION);
    w!("");
    w!("Single source of truth: `spec/engine25519.toml`. Consumers: `engine25519_core::isa` (Rust,");
    w!("generated by `libs/engine25519-core/build.rs`), `gateware/engine_isa.py` (Python, `tomllib`),");
    w!(
        "and this document. ISAs defined: {}.",
        Isa::ALL.iter().map(|i| format!("`{}`", i.name())).collect::<Vec<_>>().join(", ")
    );
    w!("");
    w!("## Instruction word");
    w!("");
    w!("{}-bit words, fields listed from the least significant bit:", isa::WORD_BITS);
    w!("");
    w!("| bits | field | description |");
    w!("|---|---|---|");
    for f in isa::FIELDS {
        let signed = if f.field.signed { " (signed)" } else { "" };
        w!("| {} | `{}`{} | {} |", bits(f.field), f.name, signed, cell(f.description));
    }
    w!("");
    let (lo, hi) = field::IMM.signed_range();
    w!(
        "The immediate spans {lo}..={hi}; a branch at `pc` reaches `pc + imm + 1`, i.e. {}..={} words away.",
        lo + 1,
        hi + 1
    );
    w!("");
    w!(
        "`udf` assembles to `{:#010x}` (opcode {}), an opcode that is illegal in every ISA: executing it",
        isa::UDF_WORD,
        field::OPCODE.get(isa::UDF_WORD)
    );
    w!("halts the engine with the `illegal_opcode` event.");
    w!("");
    w!("### Operand kinds");
    w!("");
    w!("| kind | syntax | encoding |");
    w!("|---|---|---|");
    for k in isa::OPERAND_KINDS {
        w!("| `{}` | `{}` | {} |", k.name, cell(k.syntax), cell(k.description));
    }
    w!("");
    w!("## Assembly syntax");
    w!("");
    w!("{}", SYNTAX.replace("@MAX_INCLUDE_DEPTH@", &crate::asm::MAX_INCLUDE_DEPTH.to_string()));
    w!("");
    for isa in Isa::ALL {
        let info = isa.info();
        let parent = info.inherits.and_then(Isa::from_name);
        w!("## {} (`{}`)", info.title, info.name);
        w!("");
        w!("{}", info.description);
        w!("");
        if let Some(p) = info.inherits {
            w!("Inherits the opcodes and constants of `{p}`; entries marked *new* or *changed* differ from it.");
            w!("");
        }
        w!(
            "Clocks: eng_clk {} MHz, mul_clk {} MHz, register file {} MHz. Cycle costs are eng_clk cycles,",
            info.eng_clk_hz as f64 / 1e6,
            info.mul_clk_hz as f64 / 1e6,
            info.rf_clk_hz as f64 / 1e6
        );
        w!("issue to issue.");
        w!("");
        w!("| code | mnemonic | operands | cycles | latency | unit | semantics |");
        w!("|---|---|---|---|---|---|---|");
        for op in info.opcodes {
            let mark = match parent.map(|p| p.opcode(op.code as u32)) {
                Some(None) => " *new*",
                Some(Some(po)) if po != op => " *changed*",
                _ => "",
            };
            w!(
                "| {} | `{}`{} | {} | {} | {} | {} | {} |",
                op.code,
                op.mnemonic,
                mark,
                usage(op),
                op.cycles,
                op.latency,
                op.unit,
                cell(op.semantics)
            );
        }
        if !info.units.is_empty() {
            w!("");
            w!(
                "Execution units with more than the implicit single instance: {}.",
                info.units.iter().map(|u| format!("`{}` x {}", u.unit, u.count)).collect::<Vec<_>>().join(", ")
            );
        }
        let illegal: Vec<u32> = (0..=field::OPCODE.max()).filter(|&c| isa.opcode(c).is_none()).collect();
        w!("");
        w!(
            "Illegal opcodes: {} ({} values); an illegal opcode costs {} cycles, then the engine halts",
            ranges(&illegal),
            illegal.len(),
            info.illegal_cycles
        );
        w!(
            "and raises `illegal_opcode`. A job starts {} cycle(s) after GO (`go_cycles`): the cycle count of a",
            info.go_cycles
        );
        w!("job is `go_cycles` plus the costs of what it executes.");
        w!("");
        w!("### Cycle costs: derivation");
        w!("");
        w!("{}", info.cycle_derivation);
        w!("");
        w!("### Constant ROM");
        w!("");
        w!(
            "Selected by `ca`/`cb` = 1 in place of register `ra`/`rb`. {} slots; slots not listed read 0.",
            isa::CONST_SLOTS
        );
        w!("");
        w!("| slot | name | value | description |");
        w!("|---|---|---|---|");
        for c in info.constants {
            let v = isa.constant(c.index as usize);
            w!("| `#{}` | {} | `{}` | {} |", c.index, c.name, hex256(&v), cell(c.description));
        }
        w!("");
    }
    w!("## Register file and microcode RAM");
    w!("");
    w!(
        "- {} windows x {} registers x {} bits ({} registers); a job uses one window (CSR `WINDOW`).",
        isa::WINDOWS,
        isa::REGS_PER_WINDOW,
        isa::REG_BITS,
        isa::WINDOWS * isa::REGS_PER_WINDOW
    );
    w!("- A register is {} little-endian u32 words, least significant word first.", isa::REG_WORDS);
    w!("- Microcode RAM: {} words x 32 bits (the maximum program length).", isa::UCODE_WORDS);
    w!("");
    w!("## CSR block");
    w!("");
    w!("Base `{:#010x}`, interrupt {}.", csr::BASE, csr::IRQ);
    w!("");
    w!("| offset | register | access | field | bits | description |");
    w!("|---|---|---|---|---|---|");
    for r in csr::REGISTERS {
        w!("| `{:#04x}` | `{}` | {} | | | {} |", r.offset, r.name, r.access, cell(r.description));
        for f in r.fields {
            let pulse = if f.pulse { " (pulse)" } else { "" };
            w!("| | | | `{}`{} | {} | {} |", f.name, pulse, bits(f.field), cell(f.description));
        }
    }
    w!("");
    w!("## Memory window");
    w!("");
    w!("| region | address | size |");
    w!("|---|---|---|");
    w!("| whole window | `{:#010x}` | `{:#x}` |", mem::BASE, mem::SIZE);
    w!(
        "| microcode RAM | `{:#010x}` (+`{:#x}`) | `{:#x}` |",
        mem::BASE + mem::UCODE_OFFSET,
        mem::UCODE_OFFSET,
        mem::UCODE_SIZE
    );
    w!("| register file | `{:#010x}` (+`{:#x}`) | `{:#x}` |", mem::BASE + mem::RF_OFFSET, mem::RF_OFFSET, mem::RF_SIZE);
    w!("");
    w!(
        "Register `r` of window `w`: `base + {:#x} + w * {:#x} + r * {:#x}` ({} windows per {} KiB page).",
        mem::RF_OFFSET,
        mem::WINDOW_STRIDE,
        mem::REG_STRIDE,
        mem::PAGE_SIZE / mem::WINDOW_STRIDE,
        mem::PAGE_SIZE / 1024
    );
    w!("Undecoded reads return `{:#010x}`.", mem::UNDECODED_READ);
    w!("");
    w!("{}", mem::DESCRIPTION);
    w!("");
    w!("## Golden encodings");
    w!("");
    w!("Computed by hand in the spec; the Rust assembler and the Python reader are tested against them.");
    w!("");
    w!("| ISA | assembly | word | note |");
    w!("|---|---|---|---|");
    for e in isa::EXAMPLES {
        w!("| {} | `{}` | `{:#010x}` | {} |", e.isa, e.asm, e.word, cell(e.note));
    }
    w!("");
    w!("## Test vectors for the gateware");
    w!("");
    w!("{VECTORS}");
    o
}

fn usage(op: &isa::OpcodeInfo) -> String {
    if op.operands.is_empty() {
        "(none)".into()
    } else {
        format!("`{}`", cell(&operand_usage(op)))
    }
}

fn ranges(v: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        while i + 1 < v.len() && v[i + 1] == v[i] + 1 {
            i += 1;
        }
        parts.push(if v[i] == start { start.to_string() } else { format!("{start}..={}", v[i]) });
        i += 1;
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
