//! Generates `isa_gen.rs` (included by `src/isa.rs`) from `spec/engine25519.toml`, the single
//! source of truth for the engine's ISA. Every table in the generated file comes from the TOML;
//! nothing is restated here. The script also validates the spec (field layout, opcode uniqueness,
//! `udf` illegal in every ISA, operand kinds known) so a bad edit fails the build with a message.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Spec {
    meta: Meta,
    encoding: Encoding,
    geometry: Geometry,
    csr: Csr,
    memory: Memory,
    isa: BTreeMap<String, IsaSpec>,
    #[serde(default)]
    examples: Vec<Example>,
}
#[derive(Deserialize)]
struct Meta {
    name: String,
    spec_version: u32,
    description: String,
}
#[derive(Deserialize)]
struct Encoding {
    word_bits: u32,
    udf_word: u32,
    fields: Vec<FieldSpec>,
    operand_kinds: Vec<OperandKindSpec>,
}
#[derive(Deserialize)]
struct FieldSpec {
    name: String,
    lsb: u32,
    width: u32,
    #[serde(default)]
    signed: bool,
    description: String,
}
#[derive(Deserialize)]
struct OperandKindSpec {
    name: String,
    syntax: String,
    description: String,
}
#[derive(Deserialize)]
struct Geometry {
    windows: u32,
    regs_per_window: u32,
    reg_bits: u32,
    ucode_words: u32,
    ucode_word_bits: u32,
    const_slots: u32,
}
#[derive(Deserialize)]
struct Csr {
    base: u32,
    irq: u32,
    registers: Vec<CsrReg>,
}
#[derive(Deserialize)]
struct CsrReg {
    name: String,
    offset: u32,
    access: String,
    description: String,
    fields: Vec<CsrField>,
}
#[derive(Deserialize)]
struct CsrField {
    name: String,
    lsb: u32,
    width: u32,
    #[serde(default)]
    pulse: bool,
    description: String,
}
#[derive(Deserialize)]
struct Memory {
    base: u32,
    size: u32,
    ucode_offset: u32,
    ucode_size: u32,
    rf_offset: u32,
    rf_size: u32,
    window_stride: u32,
    reg_stride: u32,
    page_size: u32,
    undecoded_read: u32,
    reg_word_order: String,
    description: String,
}
#[derive(Deserialize, Clone)]
struct IsaSpec {
    title: String,
    description: String,
    #[serde(default)]
    inherits: Option<String>,
    eng_clk_hz: u64,
    mul_clk_hz: u64,
    rf_clk_hz: u64,
    go_cycles: u32,
    illegal_cycles: u32,
    cycle_derivation: String,
    #[serde(default)]
    opcodes: Vec<OpcodeSpec>,
    #[serde(default)]
    constants: Vec<ConstSpec>,
    /// Instance counts of execution units (e.g. `mul = 2`); inherited, overridable by name.
    #[serde(default)]
    units: BTreeMap<String, u32>,
}
#[derive(Deserialize, Clone)]
struct OpcodeSpec {
    code: u32,
    mnemonic: String,
    operands: Vec<String>,
    cycles: u32,
    #[serde(default)]
    latency: Option<u32>,
    #[serde(default)]
    unit: String,
    semantics: String,
}
#[derive(Deserialize, Clone)]
struct ConstSpec {
    index: u32,
    value: String,
    name: String,
    #[serde(default)]
    description: String,
}
#[derive(Deserialize)]
struct Example {
    isa: String,
    asm: String,
    word: u32,
    #[serde(default)]
    note: String,
}

const FIELD_NAMES: [&str; 7] = ["opcode", "ra", "ca", "rb", "cb", "wd", "imm"];
const KIND_VARIANTS: [(&str, &str); 7] = [
    ("wd", "Wd"),
    ("ra", "Ra"),
    ("rb", "Rb"),
    ("ra_reg", "RaReg"),
    ("rb_reg", "RbReg"),
    ("target", "Target"),
    ("imm", "Imm"),
];

fn fail(msg: String) -> ! {
    panic!("spec/engine25519.toml: {msg}");
}

fn parse_u256(s: &str, what: &str) -> [u32; 8] {
    let hex = s
        .strip_prefix("0x")
        .unwrap_or_else(|| fail(format!("{what}: value {s:?} must be a 0x hex string")))
        .replace('_', "");
    if hex.is_empty() || hex.len() > 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        fail(format!("{what}: bad 256-bit hex value {s:?}"));
    }
    let padded = format!("{hex:0>64}");
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        // word i (LSW first) = hex digits [64 - 8(i+1), 64 - 8i)
        let lo = 64 - 8 * (i + 1);
        *w = u32::from_str_radix(&padded[lo..lo + 8], 16).unwrap();
    }
    words
}

fn variant(name: &str) -> String {
    let mut c = name.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => fail("empty ISA name".into()),
    }
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().unwrap().is_ascii_alphabetic()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Resolved (inheritance applied) opcode and constant tables of one ISA.
fn resolve(name: &str, isas: &BTreeMap<String, IsaSpec>, depth: u32) -> (Vec<OpcodeSpec>, Vec<ConstSpec>) {
    if depth > 8 {
        fail(format!("isa.{name}: inheritance cycle"));
    }
    // (units are resolved separately by `resolve_units`)
    let isa = &isas[name];
    let (mut ops, mut consts) = match &isa.inherits {
        Some(parent) => {
            if !isas.contains_key(parent) {
                fail(format!("isa.{name}: inherits unknown ISA {parent:?}"));
            }
            resolve(parent, isas, depth + 1)
        }
        None => (Vec::new(), Vec::new()),
    };
    let mut seen_codes = std::collections::BTreeSet::new();
    for op in &isa.opcodes {
        if !seen_codes.insert(op.code) {
            fail(format!("isa.{name}: opcode code {} listed twice", op.code));
        }
        ops.retain(|o| o.code != op.code);
        ops.push(op.clone());
    }
    let mut seen_idx = std::collections::BTreeSet::new();
    for c in &isa.constants {
        if !seen_idx.insert(c.index) {
            fail(format!("isa.{name}: constant index {} listed twice", c.index));
        }
        consts.retain(|o| o.index != c.index);
        consts.push(c.clone());
    }
    ops.sort_by_key(|o| o.code);
    consts.sort_by_key(|c| c.index);
    (ops, consts)
}

/// Resolved unit instance counts of one ISA (parent first, then overrides by name).
fn resolve_units(name: &str, isas: &BTreeMap<String, IsaSpec>, depth: u32) -> BTreeMap<String, u32> {
    if depth > 8 {
        fail(format!("isa.{name}: inheritance cycle"));
    }
    let isa = &isas[name];
    let mut units = match &isa.inherits {
        Some(parent) if isas.contains_key(parent) => resolve_units(parent, isas, depth + 1),
        _ => BTreeMap::new(),
    };
    for (u, &n) in &isa.units {
        units.insert(u.clone(), n);
    }
    units
}

/// `writeln!` into the generated source (a `String` never fails).
macro_rules! w {
    ($o:expr, $($t:tt)*) => { writeln!($o, $($t)*).unwrap() };
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let spec_path = manifest.join("../../spec/engine25519.toml");
    println!("cargo:rerun-if-changed={}", spec_path.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text =
        std::fs::read_to_string(&spec_path).unwrap_or_else(|e| panic!("cannot read {}: {e}", spec_path.display()));
    let spec: Spec = toml::from_str(&text).unwrap_or_else(|e| fail(format!("{e}")));

    let mut o = String::new();
    emit_meta(&mut o, &spec.meta, &spec_path);
    let reg_field_w = emit_encoding(&mut o, &spec.encoding);
    emit_geometry(&mut o, &spec.geometry, reg_field_w);
    emit_csr(&mut o, &spec.csr);
    emit_memory(&mut o, &spec.memory, &spec.geometry);
    emit_isas(&mut o, &spec);
    emit_examples(&mut o, &spec);

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("isa_gen.rs");
    std::fs::write(&out, o).unwrap();
}

/// A field of the instruction word by name (its presence is checked by `emit_encoding`).
fn field_of<'a>(enc: &'a Encoding, name: &str) -> &'a FieldSpec {
    enc.fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| fail(format!("encoding.fields: missing field {name:?}")))
}

/// File header, `[meta]` and the spec text itself.
fn emit_meta(o: &mut String, meta: &Meta, spec_path: &Path) {
    w!(o, "// @generated by build.rs from spec/engine25519.toml. Do not edit.");
    w!(o, "");
    w!(o, "/// Spec name and version (`[meta]`).");
    w!(o, "pub const SPEC_NAME: &str = {:?};", meta.name);
    w!(o, "pub const SPEC_VERSION: u32 = {};", meta.spec_version);
    w!(o, "pub const SPEC_DESCRIPTION: &str = {:?};", meta.description);
    w!(o, "/// The raw spec text, for tools that want to show it.");
    w!(o, "pub const SPEC_TOML: &str = include_str!({:?});", spec_path.display().to_string());
}

/// `[encoding]`: checks the field layout and operand kinds, emits the field and kind tables.
/// Returns the width of the register fields.
fn emit_encoding(o: &mut String, enc: &Encoding) -> u32 {
    if enc.word_bits != 32 {
        fail("encoding.word_bits must be 32".into());
    }
    let mut covered = 0u64;
    for f in &enc.fields {
        if !FIELD_NAMES.contains(&f.name.as_str()) {
            fail(format!("encoding.fields: unknown field {:?}", f.name));
        }
        if f.width == 0 || f.lsb + f.width > 32 {
            fail(format!("encoding.fields.{}: outside the 32-bit word", f.name));
        }
        let m = ((1u64 << f.width) - 1) << f.lsb;
        if covered & m != 0 {
            fail(format!("encoding.fields.{}: overlaps another field", f.name));
        }
        covered |= m;
    }
    for n in FIELD_NAMES {
        if !enc.fields.iter().any(|f| f.name == n) {
            fail(format!("encoding.fields: missing field {n:?}"));
        }
    }
    for (n, width) in [("ca", 1), ("cb", 1)] {
        if field_of(enc, n).width != width {
            fail(format!("encoding.fields.{n} must be 1 bit"));
        }
    }
    let reg_field_w = field_of(enc, "wd").width;
    if field_of(enc, "ra").width != reg_field_w || field_of(enc, "rb").width != reg_field_w {
        fail("ra, rb and wd must have the same width".into());
    }
    w!(o, "");
    w!(o, "/// Instruction word width in bits.");
    w!(o, "pub const WORD_BITS: u32 = {};", enc.word_bits);
    w!(o, "/// The word `udf` assembles to; its opcode is illegal in every ISA.");
    w!(o, "pub const UDF_WORD: u32 = {:#010x};", enc.udf_word);
    w!(o, "/// Instruction word fields (`[[encoding.fields]]`).");
    w!(o, "pub mod field {{");
    w!(o, "    use super::Field;");
    for f in &enc.fields {
        w!(
            o,
            "    pub const {}: Field = Field {{ lsb: {}, width: {}, signed: {} }};",
            f.name.to_uppercase(),
            f.lsb,
            f.width,
            f.signed
        );
    }
    w!(o, "}}");
    w!(o, "/// Field table with descriptions, in spec order.");
    w!(o, "pub static FIELDS: &[FieldInfo] = &[");
    for f in &enc.fields {
        w!(
            o,
            "    FieldInfo {{ name: {:?}, field: field::{}, description: {:?} }},",
            f.name,
            f.name.to_uppercase(),
            f.description
        );
    }
    w!(o, "];");
    for k in &enc.operand_kinds {
        if !KIND_VARIANTS.iter().any(|(n, _)| *n == k.name) {
            fail(format!("encoding.operand_kinds: unknown kind {:?}", k.name));
        }
    }
    w!(o, "/// Operand kinds with their syntax (`[[encoding.operand_kinds]]`).");
    w!(o, "pub static OPERAND_KINDS: &[OperandKindInfo] = &[");
    for k in &enc.operand_kinds {
        let v = KIND_VARIANTS.iter().find(|(n, _)| *n == k.name).unwrap().1;
        w!(
            o,
            "    OperandKindInfo {{ kind: OperandKind::{v}, name: {:?}, syntax: {:?}, description: {:?} }},",
            k.name,
            k.syntax,
            k.description
        );
    }
    w!(o, "];");

    reg_field_w
}

/// `[geometry]`: register file and microcode RAM sizes.
fn emit_geometry(o: &mut String, g: &Geometry, reg_field_w: u32) {
    if !g.reg_bits.is_multiple_of(32) || g.ucode_word_bits != 32 {
        fail("geometry: reg_bits must be a multiple of 32 and ucode_word_bits 32".into());
    }
    if g.regs_per_window > (1 << reg_field_w) || g.const_slots > (1 << reg_field_w) {
        fail("geometry: registers/constant slots exceed the register field".into());
    }
    w!(o, "");
    w!(o, "/// Register windows in the register file.");
    w!(o, "pub const WINDOWS: usize = {};", g.windows);
    w!(o, "/// Registers per window (`%0..`).");
    w!(o, "pub const REGS_PER_WINDOW: usize = {};", g.regs_per_window);
    w!(o, "/// Bits per register.");
    w!(o, "pub const REG_BITS: usize = {};", g.reg_bits);
    w!(o, "/// 32-bit words per register (little-endian, least significant word first).");
    w!(o, "pub const REG_WORDS: usize = {};", g.reg_bits / 32);
    w!(o, "/// Microcode RAM depth in instruction words (= maximum program length).");
    w!(o, "pub const UCODE_WORDS: usize = {};", g.ucode_words);
    w!(o, "/// Constant ROM slots addressable by ra/rb with ca/cb set (unlisted slots read 0).");
    w!(o, "pub const CONST_SLOTS: usize = {};", g.const_slots);
}

/// `[csr]`: one module per register with its offset and fields, plus the register table.
fn emit_csr(o: &mut String, csr: &Csr) {
    w!(o, "");
    w!(o, "/// CSR block: base address, IRQ, one module per register with OFFSET and its fields.");
    w!(o, "pub mod csr {{");
    w!(o, "    use super::{{CsrFieldInfo, CsrRegisterInfo, Field}};");
    w!(o, "    /// CSR block base address.");
    w!(o, "    pub const BASE: u32 = {:#010x};", csr.base);
    w!(o, "    /// Interrupt line of the engine's event manager.");
    w!(o, "    pub const IRQ: u32 = {};", csr.irq);
    let mut offs = std::collections::BTreeSet::new();
    for r in &csr.registers {
        if !ident_ok(&r.name) || r.offset % 4 != 0 || !offs.insert(r.offset) {
            fail(format!("csr.registers.{}: bad name, misaligned or duplicate offset", r.name));
        }
        w!(o, "    /// {}", r.description);
        w!(o, "    pub mod {} {{", r.name.to_lowercase());
        w!(o, "        use super::Field;");
        w!(o, "        pub const OFFSET: u32 = {:#04x};", r.offset);
        for f in &r.fields {
            if !ident_ok(&f.name) || f.lsb + f.width > 32 || f.width == 0 {
                fail(format!("csr.registers.{}.{}: bad field", r.name, f.name));
            }
            w!(o, "        /// {}", f.description);
            w!(
                o,
                "        pub const {}: Field = Field {{ lsb: {}, width: {}, signed: false }};",
                f.name.to_uppercase(),
                f.lsb,
                f.width
            );
        }
        w!(o, "    }}");
    }
    w!(o, "    /// All CSRs in offset order, with access and field descriptions.");
    w!(o, "    pub static REGISTERS: &[CsrRegisterInfo] = &[");
    let mut regs: Vec<&CsrReg> = csr.registers.iter().collect();
    regs.sort_by_key(|r| r.offset);
    for r in regs {
        w!(
            o,
            "        CsrRegisterInfo {{ name: {:?}, offset: {:#04x}, access: {:?}, description: {:?}, fields: &[",
            r.name,
            r.offset,
            r.access,
            r.description
        );
        for f in &r.fields {
            w!(o,
                "            CsrFieldInfo {{ name: {:?}, field: Field {{ lsb: {}, width: {}, signed: false }}, pulse: {}, description: {:?} }},",
                f.name,
                f.lsb,
                f.width,
                f.pulse,
                f.description
            );
        }
        w!(o, "        ] }},");
    }
    w!(o, "    ];");
    w!(o, "}}");
}

/// `[memory]`: the bus-mapped window (checked against the geometry).
fn emit_memory(o: &mut String, m: &Memory, g: &Geometry) {
    if m.rf_offset + m.window_stride * g.windows > m.size
        || m.reg_stride * g.regs_per_window > m.window_stride
        || m.reg_stride < g.reg_bits / 8
        || m.ucode_size < g.ucode_words * 4
        || m.reg_word_order != "lsw_first"
    {
        fail("memory: layout does not hold the register file / microcode".into());
    }
    w!(o, "");
    w!(o, "/// Bus-mapped memory window: microcode RAM and register file.");
    w!(o, "pub mod mem {{");
    w!(o, "    pub const DESCRIPTION: &str = {:?};", m.description);
    w!(o, "    pub const BASE: u32 = {:#010x};", m.base);
    w!(o, "    pub const SIZE: u32 = {:#x};", m.size);
    w!(o, "    pub const UCODE_OFFSET: u32 = {:#x};", m.ucode_offset);
    w!(o, "    pub const UCODE_SIZE: u32 = {:#x};", m.ucode_size);
    w!(o, "    pub const RF_OFFSET: u32 = {:#x};", m.rf_offset);
    w!(o, "    pub const RF_SIZE: u32 = {:#x};", m.rf_size);
    w!(o, "    pub const WINDOW_STRIDE: u32 = {:#x};", m.window_stride);
    w!(o, "    pub const REG_STRIDE: u32 = {:#x};", m.reg_stride);
    w!(o, "    pub const PAGE_SIZE: u32 = {:#x};", m.page_size);
    w!(o, "    /// Value read from undecoded addresses of the window.");
    w!(o, "    pub const UNDECODED_READ: u32 = {:#010x};", m.undecoded_read);
    w!(o, "}}");
}

/// `[isa.*]`: the `Isa` enum and, per ISA, its checked opcode, decode, constant and unit tables.
fn emit_isas(o: &mut String, spec: &Spec) {
    let names: Vec<&String> = spec.isa.keys().collect();
    for n in &names {
        if !ident_ok(n) {
            fail(format!("isa.{n}: bad ISA name"));
        }
    }
    w!(o, "");
    w!(o, "/// Instruction set versions (`[isa.*]`). A program is assembled for exactly one.");
    w!(o, "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]");
    w!(o, "pub enum Isa {{");
    for n in &names {
        w!(o, "    {},", variant(n));
    }
    w!(o, "}}");
    w!(o, "impl Isa {{");
    w!(o, "    /// Every ISA, in spec order.");
    w!(
        o,
        "    pub const ALL: [Isa; {}] = [{}];",
        names.len(),
        names.iter().map(|n| format!("Isa::{}", variant(n))).collect::<Vec<_>>().join(", ")
    );
    w!(o, "    /// Lower-case name as used in the spec and on command lines (`v1`, `v2`).");
    w!(o, "    pub const fn name(self) -> &'static str {{");
    w!(o, "        match self {{");
    for n in &names {
        w!(o, "            Isa::{} => {:?},", variant(n), n);
    }
    w!(o, "        }}");
    w!(o, "    }}");
    w!(o, "    /// Tables of this ISA.");
    w!(o, "    pub fn info(self) -> &'static IsaInfo {{");
    w!(o, "        match self {{");
    for (i, n) in names.iter().enumerate() {
        w!(o, "            Isa::{} => &ISA_INFO[{i}],", variant(n));
    }
    w!(o, "        }}");
    w!(o, "    }}");
    w!(o, "}}");
    let opcode_space = 1u32 << field_of(&spec.encoding, "opcode").width;
    let mut infos = String::new();
    for n in &names {
        let (ops, consts) = resolve(n, &spec.isa, 0);
        let units = resolve_units(n, &spec.isa, 0);
        check_isa(n, &ops, &units, &spec.encoding, opcode_space);
        emit_isa_tables(o, n, &ops, &consts, &units, &spec.geometry, opcode_space);
        emit_isa_info(&mut infos, n, &spec.isa[*n]);
    }
    w!(o, "");
    w!(o, "/// Per-ISA tables, in `Isa::ALL` order.");
    w!(o, "pub static ISA_INFO: [IsaInfo; {}] = [", names.len());
    o.push_str(&infos);
    w!(o, "];");
}

/// Checks one resolved ISA: opcodes fit the field, mnemonics unique and not `udf`, cycles > 0,
/// operand kinds known and on distinct fields, units used, and `encoding.udf_word` illegal.
fn check_isa(n: &str, ops: &[OpcodeSpec], units: &BTreeMap<String, u32>, enc: &Encoding, opcode_space: u32) {
    let mut mnems = std::collections::BTreeSet::new();
    for op in ops {
        if op.code >= opcode_space {
            fail(format!("isa.{n}: opcode {} exceeds the opcode field", op.code));
        }
        if !ident_ok(&op.mnemonic) || op.mnemonic != op.mnemonic.to_lowercase() {
            fail(format!("isa.{n}: mnemonic {:?} must be a lower-case identifier", op.mnemonic));
        }
        if op.mnemonic == "udf" || !mnems.insert(op.mnemonic.clone()) {
            fail(format!("isa.{n}: mnemonic {:?} duplicated or reserved", op.mnemonic));
        }
        if op.cycles == 0 {
            fail(format!("isa.{n}.{}: cycles must be > 0", op.mnemonic));
        }
        let mut used = std::collections::BTreeSet::new();
        for k in &op.operands {
            if !KIND_VARIANTS.iter().any(|(kn, _)| kn == k) {
                fail(format!("isa.{n}.{}: unknown operand kind {k:?}", op.mnemonic));
            }
            let slot = match k.as_str() {
                "ra" | "ra_reg" => "ra",
                "rb" | "rb_reg" => "rb",
                "target" | "imm" => "imm",
                o => o,
            };
            if !used.insert(slot) {
                fail(format!("isa.{n}.{}: two operands use field {slot}", op.mnemonic));
            }
        }
    }
    for (u, &count) in units {
        if count == 0 || !ident_ok(u) {
            fail(format!("isa.{n}.units.{u}: count must be >= 1"));
        }
        if !ops.iter().any(|o| &o.unit == u) {
            fail(format!("isa.{n}.units.{u}: no opcode uses this unit"));
        }
    }
    let udf_op = (enc.udf_word >> field_of(enc, "opcode").lsb) & (opcode_space - 1);
    if ops.iter().any(|o| o.code == udf_op) {
        fail(format!("isa.{n}: opcode {udf_op} is used, but encoding.udf_word must be illegal"));
    }
}

/// The static tables of one resolved ISA (`<ISA>_OPCODES`, `_DECODE`, `_CONST_ROM`, `_UNITS`,
/// `_CONST_INFO`).
fn emit_isa_tables(
    o: &mut String,
    n: &str,
    ops: &[OpcodeSpec],
    consts: &[ConstSpec],
    units: &BTreeMap<String, u32>,
    g: &Geometry,
    opcode_space: u32,
) {
    let up = n.to_uppercase();
    w!(o, "");
    w!(o, "/// Opcode table of ISA {n}, sorted by code.");
    w!(o, "pub static {up}_OPCODES: [OpcodeInfo; {}] = [", ops.len());
    for op in ops {
        let kinds: Vec<String> = op
            .operands
            .iter()
            .map(|k| format!("OperandKind::{}", KIND_VARIANTS.iter().find(|(kn, _)| kn == k).unwrap().1))
            .collect();
        w!(o,
            "    OpcodeInfo {{ code: {}, mnemonic: {:?}, operands: &[{}], cycles: {}, latency: {}, unit: {:?}, semantics: {:?} }},",
            op.code,
            op.mnemonic,
            kinds.join(", "),
            op.cycles,
            op.latency.unwrap_or(op.cycles),
            op.unit,
            op.semantics
        );
    }
    w!(o, "];");
    let mut decode = vec!["NONE".to_string(); opcode_space as usize];
    for (i, op) in ops.iter().enumerate() {
        decode[op.code as usize] = i.to_string();
    }
    w!(o, "/// Opcode field value -> index into {up}_OPCODES (NONE = illegal).");
    w!(o, "static {up}_DECODE: [u8; {opcode_space}] = [{}];", decode.join(", "));
    let mut rom = vec![[0u32; 8]; g.const_slots as usize];
    for c in consts {
        if c.index >= g.const_slots {
            fail(format!("isa.{n}: constant index {} out of range", c.index));
        }
        rom[c.index as usize] = parse_u256(&c.value, &format!("isa.{n}.constants[{}]", c.index));
    }
    w!(o, "/// Constant ROM of ISA {n}: 256-bit values as 8 u32 words, LSW first.");
    w!(o, "pub static {up}_CONST_ROM: [[u32; 8]; {}] = [", g.const_slots);
    for v in &rom {
        w!(o, "    [{}],", v.iter().map(|x| format!("{x:#010x}")).collect::<Vec<_>>().join(", "));
    }
    w!(o, "];");
    w!(
        o,
        "static {up}_UNITS: [UnitCount; {}] = [{}];",
        units.len(),
        units.iter().map(|(u, c)| format!("UnitCount {{ unit: {u:?}, count: {c} }}")).collect::<Vec<_>>().join(", ")
    );
    w!(o, "static {up}_CONST_INFO: [ConstantInfo; {}] = [", consts.len());
    for c in consts {
        w!(
            o,
            "    ConstantInfo {{ index: {}, name: {:?}, value_hex: {:?}, description: {:?} }},",
            c.index,
            c.name,
            c.value,
            c.description
        );
    }
    w!(o, "];");
}

/// One `IsaInfo` entry of `ISA_INFO`.
fn emit_isa_info(infos: &mut String, n: &str, isa: &IsaSpec) {
    let up = n.to_uppercase();
    writeln!(
        infos,
        "    IsaInfo {{ isa: Isa::{}, name: {:?}, title: {:?}, description: {:?}, inherits: {:?}, eng_clk_hz: {}, mul_clk_hz: {}, rf_clk_hz: {}, go_cycles: {}, illegal_cycles: {}, cycle_derivation: {:?}, opcodes: &{up}_OPCODES, decode: &{up}_DECODE, const_rom: &{up}_CONST_ROM, constants: &{up}_CONST_INFO, units: &{up}_UNITS }},",
        variant(n),
        n,
        isa.title,
        isa.description,
        isa.inherits,
        isa.eng_clk_hz,
        isa.mul_clk_hz,
        isa.rf_clk_hz,
        isa.go_cycles,
        isa.illegal_cycles,
        isa.cycle_derivation
    )
    .unwrap();
}

/// `[[examples]]`: hand-computed golden encodings.
fn emit_examples(o: &mut String, spec: &Spec) {
    w!(o, "");
    w!(o, "/// Golden encodings computed by hand in the spec (`[[examples]]`).");
    w!(o, "pub static EXAMPLES: &[Example] = &[");
    for e in &spec.examples {
        if !spec.isa.contains_key(&e.isa) {
            fail(format!("examples: unknown isa {:?}", e.isa));
        }
        w!(
            o,
            "    Example {{ isa: Isa::{}, asm: {:?}, word: {:#010x}, note: {:?} }},",
            variant(&e.isa),
            e.asm,
            e.word,
            e.note
        );
    }
    w!(o, "];");
}
