"""engine25519 ISA tables for the gateware, read from spec/engine25519.toml (the single source of
truth; this module keeps no copy of any table).

    from engine_isa import load
    spec = load()                       # or load(path)
    v1 = spec.isas["v1"]
    v1.by_mnemonic["mul"].cycles        # 26
    spec.encode(opcode=7, ra=2, rb=3, wd=1)
    spec.assemble_line("v1", "mul %1, %2, %3")
    spec.csr.registers["STATUS"].fields["mpc"]

Inheritance (`inherits = "v1"`) is resolved exactly as libs/engine25519-core/build.rs does:
the child starts from the parent's opcodes/constants and its own entries add or replace by
code/index.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SPEC_PATH = Path(__file__).resolve().parent.parent / "spec" / "engine25519.toml"


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    signed: bool = False
    description: str = ""

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def get(self, word: int) -> int:
        v = (word & self.mask) >> self.lsb
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v

    def put(self, word: int, value: int) -> int:
        return (word & ~self.mask & 0xFFFF_FFFF) | ((value << self.lsb) & self.mask)

    @property
    def signed_range(self) -> tuple[int, int]:
        return -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1


@dataclass(frozen=True)
class Opcode:
    code: int
    mnemonic: str
    operands: tuple[str, ...]
    cycles: int
    latency: int
    unit: str
    semantics: str


@dataclass
class Isa:
    name: str
    title: str
    eng_clk_hz: int
    mul_clk_hz: int
    rf_clk_hz: int
    go_cycles: int
    illegal_cycles: int
    opcodes: list[Opcode]
    const_rom: list[int]  # one int per slot, CONST_SLOTS long, unlisted slots 0
    units: dict[str, int] = field(default_factory=dict)  # declared unit instance counts
    by_code: dict[int, Opcode] = field(default_factory=dict)
    by_mnemonic: dict[str, Opcode] = field(default_factory=dict)

    def cycles_of(self, word: int, opcode_field: Field) -> int:
        op = self.by_code.get(opcode_field.get(word))
        return op.cycles if op else self.illegal_cycles


@dataclass(frozen=True)
class CsrRegister:
    name: str
    offset: int
    access: str
    fields: dict[str, Field]


@dataclass(frozen=True)
class Csr:
    base: int
    irq: int
    registers: dict[str, CsrRegister]


class SpecError(ValueError):
    pass


class Spec:
    def __init__(self, raw: dict):
        self.raw = raw
        enc = raw["encoding"]
        self.word_bits: int = enc["word_bits"]
        self.udf_word: int = enc["udf_word"]
        self.fields: dict[str, Field] = {
            f["name"]: Field(f["name"], f["lsb"], f["width"], f.get("signed", False), f.get("description", ""))
            for f in enc["fields"]
        }
        self.operand_kinds: list[str] = [k["name"] for k in enc["operand_kinds"]]
        self.geometry: dict = dict(raw["geometry"])
        self.memory: dict = dict(raw["memory"])
        c = raw["csr"]
        self.csr = Csr(
            c["base"],
            c["irq"],
            {
                r["name"]: CsrRegister(
                    r["name"],
                    r["offset"],
                    r["access"],
                    {f["name"]: Field(f["name"], f["lsb"], f["width"], False, f.get("description", "")) for f in r["fields"]},
                )
                for r in c["registers"]
            },
        )
        # INSTRUCTION shows the executing word in Precursor's field layout: [encoding]'s fields
        # (`imm` named `immediate` there), the same positions
        instr = self.csr.registers.get("INSTRUCTION")
        if instr is not None:
            want = {("immediate" if f.name == "imm" else f.name): (f.lsb, f.width) for f in self.fields.values()}
            got = {f.name: (f.lsb, f.width) for f in instr.fields.values()}
            if got != want:
                raise SpecError(f"csr INSTRUCTION fields {got} differ from [encoding] {want}")
        self.isas: dict[str, Isa] = {name: self._resolve(name, 0) for name in sorted(raw["isa"])}
        self.examples: list[dict] = list(raw.get("examples", []))

    def _resolve_tables(self, name: str, depth: int) -> tuple[dict[int, dict], dict[int, dict]]:
        if depth > 8:
            raise SpecError(f"isa.{name}: inheritance cycle")
        spec = self.raw["isa"][name]
        ops: dict[int, dict] = {}
        consts: dict[int, dict] = {}
        parent = spec.get("inherits")
        if parent is not None:
            if parent not in self.raw["isa"]:
                raise SpecError(f"isa.{name}: inherits unknown ISA {parent!r}")
            ops, consts = self._resolve_tables(parent, depth + 1)
            ops, consts = dict(ops), dict(consts)
        for op in spec.get("opcodes", []):
            ops[op["code"]] = op
        for cst in spec.get("constants", []):
            consts[cst["index"]] = cst
        return ops, consts

    def _resolve_units(self, name: str, depth: int) -> dict[str, int]:
        if depth > 8:
            raise SpecError(f"isa.{name}: inheritance cycle")
        spec = self.raw["isa"][name]
        parent = spec.get("inherits")
        units = dict(self._resolve_units(parent, depth + 1)) if parent in self.raw["isa"] else {}
        units.update(spec.get("units", {}))
        return units

    def _resolve(self, name: str, depth: int) -> Isa:
        spec = self.raw["isa"][name]
        ops, consts = self._resolve_tables(name, depth)
        opcodes = [
            Opcode(
                o["code"],
                o["mnemonic"],
                tuple(o["operands"]),
                o["cycles"],
                o.get("latency", o["cycles"]),
                o.get("unit", ""),
                o["semantics"],
            )
            for _, o in sorted(ops.items())
        ]
        rom = [0] * self.geometry["const_slots"]
        for idx, cst in consts.items():
            rom[idx] = int(cst["value"].replace("_", ""), 16)
        isa = Isa(
            name,
            spec["title"],
            spec["eng_clk_hz"],
            spec["mul_clk_hz"],
            spec["rf_clk_hz"],
            spec["go_cycles"],
            spec["illegal_cycles"],
            opcodes,
            rom,
        )
        isa.units = self._resolve_units(name, depth)
        isa.by_code = {o.code: o for o in opcodes}
        isa.by_mnemonic = {o.mnemonic: o for o in opcodes}
        return isa

    # ---- encoding -------------------------------------------------------------------------
    def encode(self, opcode: int, ra: int = 0, ca: int = 0, rb: int = 0, cb: int = 0, wd: int = 0, imm: int = 0) -> int:
        values = {"opcode": opcode, "ra": ra, "ca": ca, "rb": rb, "cb": cb, "wd": wd, "imm": imm}
        word = 0
        for name, v in values.items():
            f = self.fields[name]
            lo, hi = f.signed_range if f.signed else (0, (1 << f.width) - 1)
            if not lo <= v <= hi:
                raise SpecError(f"{name}={v} does not fit {f.width}-bit field")
            word = f.put(word, v & ((1 << f.width) - 1))
        return word

    def decode(self, word: int) -> dict[str, int]:
        return {name: f.get(word) for name, f in self.fields.items()}

    def rf_offset(self, window: int, reg: int) -> int:
        m = self.memory
        return m["rf_offset"] + window * m["window_stride"] + reg * m["reg_stride"]

    def assemble_line(self, isa: str, text: str) -> int:
        """Encode one statement (no labels; branch targets as `.`, `.+n`, `.-n`). For tests and
        gateware testbenches; programs are assembled by the Rust assembler (`cargo xtask asm`)."""
        text = text.split(";")[0].split("//")[0].strip()
        head, _, rest = text.partition(" ")
        if head.lower() == "udf":
            return self.udf_word
        op = self.isas[isa].by_mnemonic.get(head.lower())
        if op is None:
            raise SpecError(f"unknown mnemonic {head!r} for {isa}")
        args = [a.strip() for a in rest.split(",")] if rest.strip() else []
        if len(args) != len(op.operands):
            raise SpecError(f"{op.mnemonic} takes {len(op.operands)} operands")
        v = {"opcode": op.code}
        for kind, a in zip(op.operands, args):
            if kind == "wd":
                v["wd"] = _reg(a, False)[0]
            elif kind in ("ra", "ra_reg"):
                v["ra"], v["ca"] = _reg(a, kind == "ra")
            elif kind in ("rb", "rb_reg"):
                v["rb"], v["cb"] = _reg(a, kind == "rb")
            elif kind == "target":
                if not a.startswith("."):
                    raise SpecError("only relative targets (., .+n, .-n) here")
                v["imm"] = (int(a[1:]) if len(a) > 1 else 0) - 1
            elif kind == "imm":
                v["imm"] = int(a, 0)
            else:
                raise SpecError(f"unknown operand kind {kind!r}")
        return self.encode(**v)


def _reg(a: str, allow_const: bool) -> tuple[int, int]:
    if a.startswith("%") and a[1:].isdigit():
        return int(a[1:]), 0
    if allow_const and a.startswith("#") and a[1:].isdigit():
        return int(a[1:]), 1
    raise SpecError(f"bad register operand {a!r}")


def load(path: str | Path | None = None) -> Spec:
    with open(path or SPEC_PATH, "rb") as fh:
        return Spec(tomllib.load(fh))
