"""spec/trng.toml for the TRNG gateware: register maps, health parameters, conditioner defaults.

The TOML file is the single source of truth (libs/trng-core/build.rs generates the Rust constants
from the same file); this module keeps no copy of any number in it. The health-test cutoffs
derived from it are computed by one formula, in Rust: trng.cutoffs reads them from trng-core.

    from trng.spec import load
    s = load()
    s.server.registers["CHACHA"].fields["reseed_interval"]   # Field(lsb=0, width=12)
    s.constants["urandom_invalid"]                          # 0xDEADBEEF
    s.health["av"]["apt_window"]                            # 512
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SPEC_PATH = Path(__file__).resolve().parent.parent.parent / "spec" / "trng.toml"


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb

    def get(self, word: int) -> int:
        return (word & self.mask) >> self.lsb

    def put(self, word: int, value: int) -> int:
        if value >> self.width:
            raise ValueError(f"{self.name}: {value:#x} does not fit in {self.width} bits")
        return (word & ~self.mask & 0xFFFF_FFFF) | (value << self.lsb)


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: str  # "ro", "rw", "wo"
    fields: dict[str, Field]

    def pack(self, **values: int) -> int:
        w = 0
        for k, v in values.items():
            w = self.fields[k].put(w, v)
        return w


@dataclass(frozen=True)
class Page:
    name: str
    base: int
    irq: int
    registers: dict[str, Register]  # in offset order

    def by_offset(self) -> list[Register]:
        return sorted(self.registers.values(), key=lambda r: r.offset)


@dataclass(frozen=True)
class Spec:
    raw: dict
    server: Page
    kernel: Page
    constants: dict[str, int]
    health: dict
    conditioner: dict = field(default_factory=dict)


def _page(name: str, t: dict) -> Page:
    regs = {}
    for rname, d in sorted(t["registers"].items(), key=lambda kv: kv[1]["offset"]):
        if d["access"] not in ("ro", "rw", "wo"):
            raise ValueError(f"{name}.{rname}: bad access {d['access']!r}")
        fields = {}
        for fname, (lsb, width) in sorted(d["fields"].items(), key=lambda kv: kv[1][0]):
            if not (0 <= lsb and width >= 1 and lsb + width <= 32):
                raise ValueError(f"{name}.{rname}.{fname}: bad field [{lsb}, {width}]")
            fields[fname] = Field(fname, lsb, width)
        regs[rname] = Register(rname, d["offset"], d["access"], fields)
    return Page(name, t["base"], t["irq"], regs)


def load(path: Path | str = SPEC_PATH) -> Spec:
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    return Spec(
        raw=raw,
        server=_page("server", raw["regs"]["server"]),
        kernel=_page("kernel", raw["regs"]["kernel"]),
        constants=dict(raw["regs"]["constants"]),
        health=raw["health"],
        conditioner=raw["conditioner"],
    )
