//! Assembler for engine25519 microcode. Table-driven: mnemonics, operand lists and encodings
//! come from [`crate::isa`] (generated from `spec/engine25519.toml`), so opcodes added to the
//! spec for any ISA are assembled without code changes here.
//!
//! Syntax (one statement per line; see `docs/engine-isa.md`):
//!
//! ```text
//! .isa v1                 ; optional: the ISA this file is written for (must match the caller's)
//! start:                  ; label: identifier followed by ':' (several per line allowed)
//!     mul %1, %30, %30    ; mnemonic (case-insensitive), operands separated by ','
//!     sub %28, %28, #1    // '#n' = constant ROM slot n in an ra/rb slot
//! loop: brz done, %28     ; branch target: a label, '.' (this instruction), '.+n' or '.-n'
//!     brz loop, #0        ; #0 reads 0: unconditional jump
//! done: fin
//!     .word 0x0000003f    ; raw instruction word
//!     udf                 ; the explicitly illegal word (encoding.udf_word)
//!     .include "inv.s"    ; the text of another file, here (labels are shared across files)
//! ```
//!
//! `.include` needs a resolver from the caller ([`assemble_with`]): it maps the quoted name to
//! the file's text (`programs.rs` uses a table of `include_str!`'d fragments, `cargo xtask asm`
//! reads files relative to the main file's directory). Nested includes go through the same
//! resolver; cycles and nesting deeper than [`MAX_INCLUDE_DEPTH`] are errors.
//!
//! Errors carry the 1-based line and column of the offending token, and the include name when
//! the token is in an included file.

use crate::isa::{self, field, Instr, Isa, OpcodeInfo, OperandKind};
use std::collections::BTreeMap;
use std::fmt;

/// What went wrong (the message in [`AsmError`] gives the details).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsmErrorKind {
    /// Malformed statement (stray characters, bad label syntax, bad directive argument).
    Syntax,
    /// Mnemonic not defined for the ISA being assembled.
    UnknownMnemonic,
    /// Operand of the wrong form, or wrong number of operands.
    BadOperand,
    /// `%n` beyond the register window.
    RegisterOutOfRange,
    /// `#n` beyond the constant ROM slots.
    ConstantOutOfRange,
    /// Integer immediate does not fit the immediate field.
    ImmediateOutOfRange,
    /// Branch to a label that is never defined.
    UndefinedLabel,
    /// Label defined twice.
    DuplicateLabel,
    /// Branch offset does not fit the signed immediate field.
    BranchOutOfRange,
    /// Branch target lies outside the program (the engine would halt).
    TargetOutsideProgram,
    /// More words than the microcode RAM holds.
    ProgramTooLong,
    /// `.isa` directive disagrees with the requested ISA, or names an unknown ISA.
    IsaMismatch,
    /// `.include` could not be followed: no resolver, include cycle, nesting too deep.
    Include,
    /// `.include` names a file the resolver does not know.
    IncludeNotFound,
}

/// Maximum nesting of `.include` (the main file is depth 0).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// An assembly error at a 1-based line and column of the main source (`file` = `None`) or of
/// the included file `file` (the name as written in `.include`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    pub file: Option<String>,
    pub line: usize,
    pub col: usize,
    pub kind: AsmErrorKind,
    pub message: String,
}

impl AsmError {
    /// Attribute an error without a file to `file`.
    fn in_file(mut self, file: Option<&str>) -> AsmError {
        if self.file.is_none() {
            self.file = file.map(str::to_string);
        }
        self
    }
}

/// `line:col: message` for the main source, `file:line:col: message` for an included file.
impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}:")?;
        }
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for AsmError {}

/// An assembled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub isa: Isa,
    /// Instruction words, to be loaded at any microcode address (branches are PC-relative).
    pub words: Vec<u32>,
    /// Label name -> word address within the program.
    pub labels: BTreeMap<String, usize>,
    /// 1-based source line of each word (in the file named by `source_files`).
    pub source_lines: Vec<usize>,
    /// Included file each word comes from (`None` = the main source).
    pub source_files: Vec<Option<String>>,
}

impl Program {
    /// Number of instruction words.
    pub fn len(&self) -> usize {
        self.words.len()
    }
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
    /// Word address of a label.
    pub fn label(&self, name: &str) -> Option<usize> {
        self.labels.get(name).copied()
    }
    /// The words as little-endian bytes (the layout of the microcode RAM window).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

fn err(line: usize, col: usize, kind: AsmErrorKind, message: impl Into<String>) -> AsmError {
    AsmError { file: None, line, col, kind, message: message.into() }
}

/// A token with its 1-based column.
#[derive(Clone, Debug)]
struct Tok<'a> {
    text: &'a str,
    col: usize,
}

enum Stmt {
    /// Operands as (text, column): owned, since included texts live only while they are read.
    Insn {
        op: &'static OpcodeInfo,
        operands: Vec<(String, usize)>,
    },
    Word(u32),
}

struct Item {
    /// Index into `Pass::files` (0 = the main source).
    file: usize,
    line: usize,
    stmt: Stmt,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}
fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Byte offset -> 1-based column (characters).
fn col_of(line: &str, byte: usize) -> usize {
    line[..byte].chars().count() + 1
}

/// Strip a `;` or `//` comment.
fn strip_comment(line: &str) -> &str {
    let semi = line.find(';');
    let slashes = line.find("//");
    match (semi, slashes) {
        (Some(a), Some(b)) => &line[..a.min(b)],
        (Some(a), None) => &line[..a],
        (None, Some(b)) => &line[..b],
        (None, None) => line,
    }
}

/// Parse an integer literal: optional sign, decimal, `0x` hex or `0b` binary, `_` separators.
pub fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        (16, h)
    } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        (2, b)
    } else {
        (10, body)
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || !clean.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i64::from_str_radix(&clean, radix).ok()?;
    Some(if neg { -v } else { v })
}

/// Parsed line: labels, then an optional statement head and its operands.
struct Line<'a> {
    labels: Vec<Tok<'a>>,
    head: Option<Tok<'a>>,
    operands: Vec<Tok<'a>>,
}

fn split_line<'a>(raw: &'a str, lineno: usize) -> Result<Line<'a>, AsmError> {
    let code = strip_comment(raw);
    let mut labels = Vec::new();
    let mut pos = 0;
    let bytes = code.as_bytes();
    let skip_ws = |mut p: usize| {
        while p < bytes.len() && bytes[p].is_ascii_whitespace() {
            p += 1;
        }
        p
    };
    loop {
        pos = skip_ws(pos);
        if pos >= bytes.len() {
            return Ok(Line { labels, head: None, operands: Vec::new() });
        }
        // identifier (or .directive)
        let start = pos;
        let c = code[pos..].chars().next().unwrap();
        if c == '.' {
            pos += 1;
        }
        if pos < bytes.len() && is_ident_start(code[pos..].chars().next().unwrap()) {
            while pos < bytes.len() && is_ident_char(bytes[pos] as char) {
                pos += 1;
            }
        } else {
            return Err(err(
                lineno,
                col_of(code, start),
                AsmErrorKind::Syntax,
                format!("expected a label or mnemonic, found {:?}", code[start..].trim_end()),
            ));
        }
        let word = &code[start..pos];
        let after = skip_ws(pos);
        if after < bytes.len() && bytes[after] == b':' {
            if word.starts_with('.') {
                return Err(err(lineno, col_of(code, start), AsmErrorKind::Syntax, format!("bad label name {word:?}")));
            }
            labels.push(Tok { text: word, col: col_of(code, start) });
            pos = after + 1;
            continue;
        }
        // statement head; the rest is a comma-separated operand list
        let head = Tok { text: word, col: col_of(code, start) };
        let rest_start = pos;
        if rest_start < bytes.len() && !bytes[rest_start].is_ascii_whitespace() {
            return Err(err(
                lineno,
                col_of(code, rest_start),
                AsmErrorKind::Syntax,
                format!("unexpected character {:?} after {word:?}", code[rest_start..].chars().next().unwrap()),
            ));
        }
        let mut operands = Vec::new();
        if !code[rest_start..].trim().is_empty() {
            let mut seg_start = rest_start;
            for (i, ch) in code[rest_start..].char_indices().chain(std::iter::once((code.len() - rest_start, ','))) {
                if ch != ',' {
                    continue;
                }
                let seg_end = rest_start + i;
                let seg = &code[seg_start..seg_end];
                let lead = seg.len() - seg.trim_start().len();
                let text = seg.trim();
                let col = col_of(code, seg_start + lead);
                if text.is_empty() {
                    return Err(err(lineno, col, AsmErrorKind::BadOperand, "empty operand"));
                }
                if let Some(off) = text.find(char::is_whitespace) {
                    return Err(err(
                        lineno,
                        col + text[..off].chars().count(),
                        AsmErrorKind::BadOperand,
                        format!("operand {text:?} contains whitespace (missing ','?)"),
                    ));
                }
                operands.push(Tok { text, col });
                seg_start = seg_end + 1;
            }
        }
        return Ok(Line { labels, head: Some(head), operands });
    }
}

/// The ISA named by a `.isa` directive in `src`, if any.
pub fn declared_isa(src: &str) -> Result<Option<Isa>, AsmError> {
    for (i, raw) in src.lines().enumerate() {
        let line = split_line(raw, i + 1)?;
        if let Some(h) = &line.head {
            if h.text.eq_ignore_ascii_case(".isa") {
                return isa_directive(&line, i + 1).map(Some);
            }
        }
    }
    Ok(None)
}

fn isa_directive(line: &Line, lineno: usize) -> Result<Isa, AsmError> {
    let h = line.head.as_ref().unwrap();
    match line.operands.as_slice() {
        [t] => t.text.parse::<Isa>().map_err(|e| err(lineno, t.col, AsmErrorKind::IsaMismatch, e)),
        _ => Err(err(lineno, h.col, AsmErrorKind::Syntax, ".isa takes exactly one ISA name")),
    }
}

/// Resolves an `.include` name to the included file's text (`None`: no such file).
pub type IncludeResolver<'r> = dyn Fn(&str) -> Option<String> + 'r;

/// Assemble `src` for `isa`. There is no include resolver: `.include` is an error (use
/// [`assemble_with`]).
pub fn assemble(src: &str, isa: Isa) -> Result<Program, AsmError> {
    Pass::new(isa, None).run(src)
}

/// Assemble `src` for `isa`, reading `.include`d files through `resolve` (also for includes
/// inside included files). Labels are shared by all files of the program.
pub fn assemble_with(src: &str, isa: Isa, resolve: &IncludeResolver) -> Result<Program, AsmError> {
    Pass::new(isa, Some(resolve)).run(src)
}

struct Pass<'r> {
    isa: Isa,
    resolve: Option<&'r IncludeResolver<'r>>,
    items: Vec<Item>,
    labels: BTreeMap<String, usize>,
    /// Label -> (file index, line) of its definition.
    label_sites: BTreeMap<String, (usize, usize)>,
    /// File names by index: 0 is the main source (no name), then each included name.
    files: Vec<Option<String>>,
    /// Names of the included files being read, outermost first (cycle detection).
    stack: Vec<String>,
}

impl<'r> Pass<'r> {
    fn new(isa: Isa, resolve: Option<&'r IncludeResolver<'r>>) -> Pass<'r> {
        Pass {
            isa,
            resolve,
            items: Vec::new(),
            labels: BTreeMap::new(),
            label_sites: BTreeMap::new(),
            files: vec![None],
            stack: Vec::new(),
        }
    }

    fn run(mut self, src: &str) -> Result<Program, AsmError> {
        self.read(src, 0, 0)?;
        let len = self.items.len();
        let mut words = Vec::with_capacity(len);
        let mut source_lines = Vec::with_capacity(len);
        let mut source_files = Vec::with_capacity(len);
        for (pc, item) in self.items.iter().enumerate() {
            let word = match &item.stmt {
                Stmt::Word(w) => *w,
                Stmt::Insn { op, operands } => {
                    let toks: Vec<Tok> = operands.iter().map(|(text, col)| Tok { text, col: *col }).collect();
                    encode_insn(op, &toks, pc, len, &self.labels, item.line)
                        .map_err(|e| e.in_file(self.files[item.file].as_deref()))?
                }
            };
            words.push(word);
            source_lines.push(item.line);
            source_files.push(self.files[item.file].clone());
        }
        Ok(Program { isa: self.isa, words, labels: self.labels, source_lines, source_files })
    }

    /// Read the text of file `file` at include nesting `depth` (0 = the main source).
    fn read(&mut self, src: &str, file: usize, depth: usize) -> Result<(), AsmError> {
        let name = self.files[file].clone();
        self.read_lines(src, file, depth).map_err(|e| e.in_file(name.as_deref()))
    }

    fn read_lines(&mut self, src: &str, file: usize, depth: usize) -> Result<(), AsmError> {
        let isa = self.isa;
        let first_item = self.items.len();
        let mut seen_isa = false;
        for (i, raw) in src.lines().enumerate() {
            let lineno = i + 1;
            let line = split_line(raw, lineno)?;
            for l in &line.labels {
                if let Some(&(prev_file, prev_line)) = self.label_sites.get(l.text) {
                    let place = if prev_file == file {
                        format!("on line {prev_line}")
                    } else {
                        match &self.files[prev_file] {
                            Some(f) => format!("on line {prev_line} of {f}"),
                            None => format!("on line {prev_line} of the main source"),
                        }
                    };
                    return Err(err(
                        lineno,
                        l.col,
                        AsmErrorKind::DuplicateLabel,
                        format!("label {:?} already defined {place}", l.text),
                    ));
                }
                self.label_sites.insert(l.text.to_string(), (file, lineno));
                self.labels.insert(l.text.to_string(), self.items.len());
            }
            let Some(head) = line.head.clone() else { continue };
            let stmt = if head.text.eq_ignore_ascii_case(".isa") {
                let declared = isa_directive(&line, lineno)?;
                if seen_isa || self.items.len() != first_item {
                    return Err(err(
                        lineno,
                        head.col,
                        AsmErrorKind::Syntax,
                        ".isa must come once, before any instruction",
                    ));
                }
                seen_isa = true;
                if declared != isa {
                    return Err(err(
                        lineno,
                        line.operands[0].col,
                        AsmErrorKind::IsaMismatch,
                        format!("source declares .isa {declared} but is being assembled for {isa}"),
                    ));
                }
                continue;
            } else if head.text.eq_ignore_ascii_case(".include") {
                self.include(&line, lineno, depth)?;
                continue;
            } else if head.text.eq_ignore_ascii_case(".word") {
                let [t] = line.operands.as_slice() else {
                    return Err(err(lineno, head.col, AsmErrorKind::BadOperand, ".word takes exactly one value"));
                };
                match parse_int(t.text) {
                    Some(v) if (0..=u32::MAX as i64).contains(&v) => Stmt::Word(v as u32),
                    _ => {
                        return Err(err(
                            lineno,
                            t.col,
                            AsmErrorKind::BadOperand,
                            format!(".word value {:?} is not an integer in 0..=0xFFFFFFFF", t.text),
                        ))
                    }
                }
            } else if head.text.starts_with('.') {
                return Err(err(lineno, head.col, AsmErrorKind::Syntax, format!("unknown directive {:?}", head.text)));
            } else if head.text.eq_ignore_ascii_case("udf") {
                if let Some(t) = line.operands.first() {
                    return Err(err(lineno, t.col, AsmErrorKind::BadOperand, "udf takes no operands"));
                }
                Stmt::Word(isa::UDF_WORD)
            } else {
                let Some(op) = isa.by_mnemonic(head.text) else {
                    return Err(err(
                        lineno,
                        head.col,
                        AsmErrorKind::UnknownMnemonic,
                        format!("unknown mnemonic {:?} for ISA {isa}", head.text),
                    ));
                };
                if line.operands.len() != op.operands.len() {
                    let col = line.operands.get(op.operands.len()).map_or(head.col, |t| t.col);
                    return Err(err(
                        lineno,
                        col,
                        AsmErrorKind::BadOperand,
                        format!(
                            "{} takes {} operand(s) ({}), found {}",
                            op.mnemonic,
                            op.operands.len(),
                            operand_usage(op),
                            line.operands.len()
                        ),
                    ));
                }
                Stmt::Insn { op, operands: line.operands.iter().map(|t| (t.text.to_string(), t.col)).collect() }
            };
            if self.items.len() >= isa::UCODE_WORDS {
                return Err(err(
                    lineno,
                    head.col,
                    AsmErrorKind::ProgramTooLong,
                    format!("program exceeds the microcode RAM ({} words)", isa::UCODE_WORDS),
                ));
            }
            self.items.push(Item { file, line: lineno, stmt });
        }
        Ok(())
    }

    /// `.include "name"`: read the named file's text here.
    fn include(&mut self, line: &Line, lineno: usize, depth: usize) -> Result<(), AsmError> {
        let head = line.head.as_ref().unwrap();
        let [t] = line.operands.as_slice() else {
            return Err(err(lineno, head.col, AsmErrorKind::Syntax, ".include takes exactly one quoted file name"));
        };
        let name = t
            .text
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .filter(|n| !n.is_empty() && !n.contains('"'))
            .ok_or_else(|| {
                err(
                    lineno,
                    t.col,
                    AsmErrorKind::Syntax,
                    format!(".include takes a quoted file name, found {:?}", t.text),
                )
            })?;
        let Some(resolve) = self.resolve else {
            return Err(err(
                lineno,
                head.col,
                AsmErrorKind::Include,
                format!("cannot include {name:?}: no include resolver (assemble with assemble_with)"),
            ));
        };
        if self.stack.iter().any(|n| n == name) {
            let chain: Vec<&str> = self.stack.iter().map(String::as_str).chain(std::iter::once(name)).collect();
            return Err(err(lineno, t.col, AsmErrorKind::Include, format!("include cycle: {}", chain.join(" -> "))));
        }
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(err(
                lineno,
                t.col,
                AsmErrorKind::Include,
                format!("cannot include {name:?}: includes nested deeper than {MAX_INCLUDE_DEPTH} levels"),
            ));
        }
        let Some(text) = resolve(name) else {
            return Err(err(lineno, t.col, AsmErrorKind::IncludeNotFound, format!("include file {name:?} not found")));
        };
        let idx = match self.files.iter().position(|f| f.as_deref() == Some(name)) {
            Some(i) => i,
            None => {
                self.files.push(Some(name.to_string()));
                self.files.len() - 1
            }
        };
        self.stack.push(name.to_string());
        let r = self.read(&text, idx, depth + 1);
        self.stack.pop();
        r
    }
}

/// Human-readable operand list of an opcode, e.g. `%wd, %ra|#c, %rb|#c`.
pub fn operand_usage(op: &OpcodeInfo) -> String {
    op.operands
        .iter()
        .map(|k| match k {
            OperandKind::Wd => "%wd",
            OperandKind::Ra => "%ra|#c",
            OperandKind::Rb => "%rb|#c",
            OperandKind::RaReg => "%ra",
            OperandKind::RbReg => "%rb",
            OperandKind::Target => "target",
            OperandKind::Imm => "imm",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_reg(t: &Tok, line: usize, allow_const: bool) -> Result<(u8, bool), AsmError> {
    let (is_const, body) = if let Some(b) = t.text.strip_prefix('%') {
        (false, b)
    } else if let Some(b) = t.text.strip_prefix('#') {
        if !allow_const {
            return Err(err(
                line,
                t.col,
                AsmErrorKind::BadOperand,
                format!("expected a register %n, found constant {:?}", t.text),
            ));
        }
        (true, b)
    } else {
        let want = if allow_const { "a register %n or constant #n" } else { "a register %n" };
        return Err(err(line, t.col, AsmErrorKind::BadOperand, format!("expected {want}, found {:?}", t.text)));
    };
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit()) {
        return Err(err(line, t.col, AsmErrorKind::BadOperand, format!("bad register/constant {:?}", t.text)));
    }
    let n: u64 = body.parse().unwrap_or(u64::MAX);
    if is_const {
        if n >= isa::CONST_SLOTS as u64 {
            return Err(err(
                line,
                t.col,
                AsmErrorKind::ConstantOutOfRange,
                format!("constant {} out of range (#0..#{})", t.text, isa::CONST_SLOTS - 1),
            ));
        }
    } else if n >= isa::REGS_PER_WINDOW as u64 {
        return Err(err(
            line,
            t.col,
            AsmErrorKind::RegisterOutOfRange,
            format!("register {} out of range (%0..%{})", t.text, isa::REGS_PER_WINDOW - 1),
        ));
    }
    Ok((n as u8, is_const))
}

fn parse_target(t: &Tok, line: usize, pc: usize, labels: &BTreeMap<String, usize>) -> Result<i64, AsmError> {
    let s = t.text;
    if let Some(rest) = s.strip_prefix('.') {
        if rest.is_empty() {
            return Ok(pc as i64);
        }
        let ok = rest.starts_with('+') || rest.starts_with('-');
        match parse_int(rest) {
            Some(off) if ok && !rest[1..].starts_with(['+', '-']) => return Ok(pc as i64 + off),
            _ => {
                return Err(err(
                    line,
                    t.col,
                    AsmErrorKind::BadOperand,
                    format!("bad relative target {s:?} (use .+n or .-n)"),
                ))
            }
        }
    }
    let mut chars = s.chars();
    if !chars.next().is_some_and(is_ident_start) || !chars.all(is_ident_char) {
        return Err(err(
            line,
            t.col,
            AsmErrorKind::BadOperand,
            format!("expected a branch target (label, .+n, .-n), found {s:?}"),
        ));
    }
    labels
        .get(s)
        .map(|&a| a as i64)
        .ok_or_else(|| err(line, t.col, AsmErrorKind::UndefinedLabel, format!("undefined label {s:?}")))
}

fn encode_insn(
    op: &OpcodeInfo,
    operands: &[Tok],
    pc: usize,
    len: usize,
    labels: &BTreeMap<String, usize>,
    line: usize,
) -> Result<u32, AsmError> {
    let mut ins = Instr { opcode: op.code, ..Instr::default() };
    let (imm_min, imm_max) = field::IMM.signed_range();
    for (kind, t) in op.operands.iter().zip(operands) {
        match kind {
            OperandKind::Wd => ins.wd = parse_reg(t, line, false)?.0,
            OperandKind::Ra | OperandKind::RaReg => {
                (ins.ra, ins.ca) = parse_reg(t, line, *kind == OperandKind::Ra)?;
            }
            OperandKind::Rb | OperandKind::RbReg => {
                (ins.rb, ins.cb) = parse_reg(t, line, *kind == OperandKind::Rb)?;
            }
            OperandKind::Target => {
                let target = parse_target(t, line, pc, labels)?;
                let off = target - pc as i64 - 1;
                if off < imm_min as i64 || off > imm_max as i64 {
                    return Err(err(
                        line,
                        t.col,
                        AsmErrorKind::BranchOutOfRange,
                        format!(
                            "branch to {target} from {pc}: offset {off} does not fit the {}-bit immediate ({imm_min}..={imm_max})",
                            field::IMM.width
                        ),
                    ));
                }
                if target < 0 || target >= len as i64 {
                    return Err(err(
                        line,
                        t.col,
                        AsmErrorKind::TargetOutsideProgram,
                        format!("branch target {target} is outside the program (0..{len})"),
                    ));
                }
                ins.imm = off as i16;
            }
            OperandKind::Imm => match parse_int(t.text) {
                Some(v) if v >= imm_min as i64 && v <= imm_max as i64 => ins.imm = v as i16,
                Some(_) => {
                    return Err(err(
                        line,
                        t.col,
                        AsmErrorKind::ImmediateOutOfRange,
                        format!("immediate {} out of range ({imm_min}..={imm_max})", t.text),
                    ))
                }
                None => {
                    return Err(err(
                        line,
                        t.col,
                        AsmErrorKind::BadOperand,
                        format!("expected an integer, found {:?}", t.text),
                    ))
                }
            },
        }
    }
    Ok(ins.encode())
}
