//! The engine's instruction set, generated at build time from `spec/engine25519.toml` (the single
//! source of truth) plus the hand-written types and encode/decode helpers those tables use.
//!
//! Everything numeric here (field positions, opcode codes and cycle costs, constant ROM, geometry,
//! CSR offsets and fields, memory window layout) comes from the TOML; see `docs/engine-isa.md`.

/// A bit field of a 32-bit word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    pub lsb: u32,
    pub width: u32,
    /// Sign-extended when read with [`Field::get_signed`] (the immediate).
    pub signed: bool,
}

impl Field {
    /// Mask of the field in its position.
    pub const fn mask(self) -> u32 {
        (((1u64 << self.width) - 1) as u32) << self.lsb
    }
    /// Largest unsigned value the field holds.
    pub const fn max(self) -> u32 {
        ((1u64 << self.width) - 1) as u32
    }
    /// Unsigned field value of `word`.
    pub const fn get(self, word: u32) -> u32 {
        (word & self.mask()) >> self.lsb
    }
    /// Sign-extended field value of `word`.
    pub const fn get_signed(self, word: u32) -> i32 {
        let shift = 32 - self.width;
        ((self.get(word) << shift) as i32) >> shift
    }
    /// `word` with the field replaced by `value` (truncated to the field width).
    pub const fn put(self, word: u32, value: u32) -> u32 {
        (word & !self.mask()) | ((value << self.lsb) & self.mask())
    }
    /// Signed range `(min, max)` of the field as a two's-complement value.
    pub const fn signed_range(self) -> (i32, i32) {
        (-(1i32 << (self.width - 1)), (1i32 << (self.width - 1)) - 1)
    }
}

/// A field of the instruction word, with its description.
#[derive(Clone, Copy, Debug)]
pub struct FieldInfo {
    pub name: &'static str,
    pub field: Field,
    pub description: &'static str,
}

/// How an operand is written in assembly and which instruction fields it fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperandKind {
    /// `%n` -> wd.
    Wd,
    /// `%n` -> ra (ca = 0) or `#c` -> ra (ca = 1).
    Ra,
    /// `%n` -> rb (cb = 0) or `#c` -> rb (cb = 1).
    Rb,
    /// `%n` -> ra, ca = 0 (no constant allowed).
    RaReg,
    /// `%n` -> rb, cb = 0 (no constant allowed).
    RbReg,
    /// Branch target (label or `.+n`/`.-n`) -> imm = target - pc - 1.
    Target,
    /// Signed integer -> imm.
    Imm,
}

/// Documentation of an operand kind.
#[derive(Clone, Copy, Debug)]
pub struct OperandKindInfo {
    pub kind: OperandKind,
    pub name: &'static str,
    pub syntax: &'static str,
    pub description: &'static str,
}

/// One opcode of one ISA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpcodeInfo {
    /// Value of the opcode field.
    pub code: u8,
    /// Lower-case assembly mnemonic.
    pub mnemonic: &'static str,
    /// Operands in assembly order.
    pub operands: &'static [OperandKind],
    /// Issue-to-issue cost in engine cycles (eng_clk).
    pub cycles: u32,
    /// Cycles until the result is written (= `cycles` unless the spec says otherwise).
    pub latency: u32,
    /// Execution unit (informational: "logic", "mul", "control", ...).
    pub unit: &'static str,
    /// Semantics in prose.
    pub semantics: &'static str,
}

/// A named constant ROM entry.
#[derive(Clone, Copy, Debug)]
pub struct ConstantInfo {
    pub index: u32,
    pub name: &'static str,
    /// Value as written in the spec (hex).
    pub value_hex: &'static str,
    pub description: &'static str,
}

/// All tables of one ISA.
#[derive(Debug)]
pub struct IsaInfo {
    pub isa: Isa,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub inherits: Option<&'static str>,
    pub eng_clk_hz: u64,
    pub mul_clk_hz: u64,
    pub rf_clk_hz: u64,
    /// Cycles from the GO pulse to the first instruction's issue (FETCH in v1).
    pub go_cycles: u32,
    /// Cycles an illegal opcode costs before the engine halts.
    pub illegal_cycles: u32,
    /// How the cycle costs follow from the hardware (prose, Markdown).
    pub cycle_derivation: &'static str,
    /// Opcodes sorted by code.
    pub opcodes: &'static [OpcodeInfo],
    decode: &'static [u8],
    /// Constant ROM: `CONST_SLOTS` values, 8 u32 words each, LSW first (unlisted slots are 0).
    pub const_rom: &'static [[u32; 8]],
    /// The named (non-zero-by-default) constant ROM entries.
    pub constants: &'static [ConstantInfo],
    /// Execution units with a declared instance count (`[isa.<name>.units]`, inherited).
    pub units: &'static [UnitCount],
}

/// Number of instances of an execution unit (`OpcodeInfo::unit`) the hardware has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitCount {
    pub unit: &'static str,
    pub count: u32,
}

/// A CSR field.
#[derive(Clone, Copy, Debug)]
pub struct CsrFieldInfo {
    pub name: &'static str,
    pub field: Field,
    /// Write-1-to-pulse (self-clearing) field.
    pub pulse: bool,
    pub description: &'static str,
}

/// A CSR.
#[derive(Clone, Copy, Debug)]
pub struct CsrRegisterInfo {
    pub name: &'static str,
    /// Byte offset from `csr::BASE`.
    pub offset: u32,
    /// "r", "w", "rw" or "rw1c".
    pub access: &'static str,
    pub description: &'static str,
    pub fields: &'static [CsrFieldInfo],
}

/// A golden encoding from the spec.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    pub isa: Isa,
    pub asm: &'static str,
    pub word: u32,
    pub note: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/isa_gen.rs"));

const NONE: u8 = u8::MAX;

impl Isa {
    /// Parse an ISA name (`"v1"`, `"V2"`, ...), case-insensitive.
    pub fn from_name(name: &str) -> Option<Isa> {
        Isa::ALL.iter().copied().find(|i| i.name().eq_ignore_ascii_case(name))
    }
    /// Opcode table, sorted by code.
    pub fn opcodes(self) -> &'static [OpcodeInfo] {
        self.info().opcodes
    }
    /// The opcode with this opcode-field value, or `None` if it is illegal in this ISA.
    pub fn opcode(self, code: u32) -> Option<&'static OpcodeInfo> {
        let info = self.info();
        match info.decode.get(code as usize) {
            Some(&i) if i != NONE => Some(&info.opcodes[i as usize]),
            _ => None,
        }
    }
    /// The opcode with this mnemonic (case-insensitive).
    pub fn by_mnemonic(self, mnemonic: &str) -> Option<&'static OpcodeInfo> {
        self.info().opcodes.iter().find(|o| o.mnemonic.eq_ignore_ascii_case(mnemonic))
    }
    /// The opcode executed by instruction `word`, or `None` if illegal.
    pub fn opcode_of(self, word: u32) -> Option<&'static OpcodeInfo> {
        self.opcode(field::OPCODE.get(word))
    }
    /// Constant ROM value of slot `index` (0 for unlisted or out-of-range slots).
    pub fn constant(self, index: usize) -> [u32; 8] {
        self.info().const_rom.get(index).copied().unwrap_or([0; 8])
    }
    /// Declared instance count of execution unit `unit` (`None` if the spec declares none).
    pub fn unit_count(self, unit: &str) -> Option<u32> {
        self.info().units.iter().find(|u| u.unit == unit).map(|u| u.count)
    }
    /// Cycle cost of executing `word` (the illegal-opcode cost if it is illegal).
    pub fn cycles_of(self, word: u32) -> u32 {
        match self.opcode_of(word) {
            Some(op) => op.cycles,
            None => self.info().illegal_cycles,
        }
    }
}

impl core::fmt::Display for Isa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "std")]
impl std::str::FromStr for Isa {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Isa::from_name(s).ok_or_else(|| {
            let names: Vec<&str> = Isa::ALL.iter().map(|i| i.name()).collect();
            format!("unknown ISA {s:?} (expected one of: {})", names.join(", "))
        })
    }
}

/// An instruction word split into its fields (no ISA knowledge: any word decodes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Instr {
    pub opcode: u8,
    pub ra: u8,
    pub ca: bool,
    pub rb: u8,
    pub cb: bool,
    pub wd: u8,
    /// Sign-extended immediate.
    pub imm: i16,
}

impl Instr {
    /// Split a word into fields. Total: every word decodes.
    pub const fn decode(word: u32) -> Instr {
        Instr {
            opcode: field::OPCODE.get(word) as u8,
            ra: field::RA.get(word) as u8,
            ca: field::CA.get(word) != 0,
            rb: field::RB.get(word) as u8,
            cb: field::CB.get(word) != 0,
            wd: field::WD.get(word) as u8,
            imm: field::IMM.get_signed(word) as i16,
        }
    }
    /// Pack the fields into a word (each value truncated to its field width).
    pub const fn encode(&self) -> u32 {
        let mut w = 0;
        w = field::OPCODE.put(w, self.opcode as u32);
        w = field::RA.put(w, self.ra as u32);
        w = field::CA.put(w, self.ca as u32);
        w = field::RB.put(w, self.rb as u32);
        w = field::CB.put(w, self.cb as u32);
        w = field::WD.put(w, self.wd as u32);
        field::IMM.put(w, self.imm as i32 as u32)
    }
}

/// Byte offset of register `reg` of window `window` inside the memory window.
pub const fn rf_offset(window: usize, reg: usize) -> u32 {
    mem::RF_OFFSET + window as u32 * mem::WINDOW_STRIDE + reg as u32 * mem::REG_STRIDE
}

/// Bus address of register `reg` of window `window`.
pub const fn rf_addr(window: usize, reg: usize) -> u32 {
    mem::BASE + rf_offset(window, reg)
}

/// Bus address of microcode word `index`.
pub const fn ucode_addr(index: usize) -> u32 {
    mem::BASE + mem::UCODE_OFFSET + 4 * index as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_and_map_match_anchor() {
        assert_eq!((WINDOWS, REGS_PER_WINDOW, REG_BITS, REG_WORDS, UCODE_WORDS), (16, 32, 256, 8, 1024));
        assert_eq!(csr::BASE, 0xF002_0000);
        assert_eq!(csr::IRQ, 18);
        assert_eq!(csr::status::OFFSET, 0x18);
        assert_eq!(csr::status::MPC, Field { lsb: 1, width: 10, signed: false });
        assert_eq!(csr::instruction::OFFSET, 0x28);
        assert_eq!(rf_addr(0, 0), 0xE003_0000);
        assert_eq!(rf_addr(3, 31), 0xE002_0000 + 0x1_0000 + 3 * 0x400 + 31 * 0x20);
        assert_eq!(ucode_addr(1023), 0xE002_0FFC);
        // RF windows 0..3 share the first 4 KiB page, windows 4..7 the next.
        assert_eq!(rf_offset(4, 0) - rf_offset(0, 0), mem::PAGE_SIZE);
    }

    #[test]
    fn v1_opcodes_and_costs() {
        let v1 = Isa::V1;
        let names: Vec<&str> = (0..13).map(|c| v1.opcode(c).unwrap().mnemonic).collect();
        assert_eq!(names, ["psa", "psb", "msk", "xor", "not", "add", "sub", "mul", "trd", "brz", "fin", "shl", "xbt"]);
        for c in 13..64 {
            assert!(v1.opcode(c).is_none(), "opcode {c} must be illegal in v1");
        }
        assert!(v1.opcode(64).is_none());
        // the shipped engine's sequencer/multiplier FSMs (betrusted-io/gateware engine.py)
        assert_eq!(v1.by_mnemonic("MUL").unwrap().cycles, 28);
        assert_eq!(v1.by_mnemonic("add").unwrap().cycles, 3);
        assert_eq!(v1.by_mnemonic("brz").unwrap().cycles, 3);
        assert_eq!(v1.by_mnemonic("fin").unwrap().cycles, 2);
        assert_eq!(v1.info().illegal_cycles, 3);
        assert_eq!(v1.info().go_cycles, 1);
        assert!(v1.opcode_of(UDF_WORD).is_none());
        assert!(Isa::V2.opcode_of(UDF_WORD).is_none());
        assert_eq!(v1.cycles_of(UDF_WORD), v1.info().illegal_cycles);
    }

    #[test]
    fn constant_rom() {
        let v1 = Isa::V1;
        let small = [0u32, 1, 121665, 0, 121666, 5, 10, 20, 50, 100];
        for (i, &v) in small.iter().enumerate() {
            if i == 3 {
                continue;
            }
            let mut want = [0u32; 8];
            want[0] = v;
            assert_eq!(v1.constant(i), want, "slot {i}");
        }
        let mut p = [0xFFFF_FFFFu32; 8];
        p[0] = 0xFFFF_FFED;
        p[7] = 0x7FFF_FFFF;
        assert_eq!(v1.constant(3), p);
        for i in 10..40 {
            assert_eq!(v1.constant(i), [0; 8], "slot {i} reads 0");
        }
    }

    #[test]
    fn field_encode_decode_roundtrip() {
        for &w in &[0u32, 1, 0xFFFF_FFFF, 0x8000_0000, 0x1234_5678, UDF_WORD] {
            assert_eq!(Instr::decode(w).encode(), w);
        }
        let i = Instr { opcode: 9, ra: 18, ca: false, rb: 0, cb: false, wd: 0, imm: -256 };
        assert_eq!(Instr::decode(i.encode()), i);
        assert_eq!(field::IMM.signed_range(), (-256, 255));
    }

    #[test]
    fn isa_names() {
        assert_eq!("v1".parse::<Isa>().unwrap(), Isa::V1);
        assert_eq!("V2".parse::<Isa>().unwrap(), Isa::V2);
        assert!("v3".parse::<Isa>().is_err());
        assert_eq!(Isa::V2.to_string(), "v2");
    }
}
