"""ALU: every single-cycle operation of the ISA, selected by mnemonic (the spec's opcode table
says which mnemonics an ISA has and their codes; this file holds only what each one computes).
Combinational: result = f(a, b)."""

from __future__ import annotations

from migen import Case, Cat, Module, Mux, Replicate, Signal

from . import spec

# the ALU's operations, by mnemonic (MUL, BRZ, FIN, CSWAP are handled elsewhere)
OPS = ["psa", "psb", "msk", "xor", "not", "add", "sub", "trd", "shl", "xbt", "fadd", "fsub"]


class Alu(Module):
    def __init__(self, isa: str):
        p = spec.prime()
        n = spec.field_bits()
        mnemonics = set(spec.load().isas[isa].by_mnemonic)
        self.ops = [m for m in OPS if m in mnemonics]
        self.op = Signal(max=max(2, len(self.ops)))
        self.a = Signal(256)
        self.b = Signal(256)
        self.q = Signal(256)

        s = Signal(257)
        d = Signal(257)
        s_p = Signal(258)
        d_p = Signal(257)
        ge = Signal()
        self.comb += [
            s.eq(self.a + self.b),
            d.eq(self.a - self.b),
            s_p.eq(s - p),                 # bit 257 set: s < p
            d_p.eq(d[:256] + p),
            ge.eq(self.a >= p),
        ]
        f = {
            "psa": self.a,
            "psb": self.b,
            "msk": Replicate(self.a[0], 256) & self.b,
            "xor": self.a ^ self.b,
            "not": ~self.a,
            "add": s[:256],
            "sub": d[:256],
            "trd": Mux(ge, p, 0),
            "shl": Cat(0, self.a[:255]),
            "xbt": self.a[n - 1],
            "fadd": Mux(s_p[257], s[:256], s_p[:256]),
            "fsub": Mux(d[256], d_p[:256], d[:256]),
        }
        self.comb += Case(self.op, {i: self.q.eq(f[m]) for i, m in enumerate(self.ops)})
