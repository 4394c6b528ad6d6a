"""ALU: every operation of the ISA that is not MUL, BRZ, FIN or CSWAP, selected by mnemonic (the
spec's opcode table says which mnemonics an ISA has and their codes; this file holds only what
each one computes, how many passes it takes and what its B operand is).

One 257-bit adder, s = X + b, with X = a, ~a or ~r (r: the pass-1 result) and b the B read port's
word unchanged, and a result select: s, ~s, b & g (g = 1, a[0], a >= p or a[254]) or a ^ b. The
B operand is chosen by address, not by a mux: the sequencer reads, per op, the instruction's Rb,
its Ra again, or a hardware row of the register file (zero, one, p: `B_*`, regfile.py). So

    PSA = a + 0, NOT = ~a + 0, ADD = a + b, SUB = ~(~a + b), SHL = a + a,
    PSB = b & 1, MSK = b & a[0], TRD = p & (a >= p), XBT = 1 & a[254], XOR = a ^ b,

and per bit there are two LUTs: the adder's propagate term X ^ b (five inputs; b itself is the
carry chain's other input) and the result select (six inputs).

FADD and FSUB take two passes (their issue cost is 2, so the ALU is free in the second cycle):
pass 1 computes s = a + b (FADD) or s = ~a + b (FSUB, so d = a - b = ~s) into the register r
(257 bits, with the carry / borrow), and its q (r, or d) is written as the result. Pass 2 always
has p on port B (a fixed row, nothing read from the array decides an address) and computes the
corrected value on the same adder, r - p = ~(~r + p) for FADD, d + p = ~r + p for FSUB; `fix`
says whether it replaces pass 1's word (a second write): for FADD the adder's carry out of bit
257 is clear (~r + p < 2^257, i.e. r >= p), for FSUB pass 1 borrowed (r[256] clear, a < b). So
`fix` is taken in pass 2 from the r register through one carry chain, never from the block
RAM's output into its own read address.

The ALU is driven by a control word (`ctl`), not by an opcode: `control(mnemonic, pass2)` gives
the word of one pass, and the sequencer loads it into a register when it issues the op (and
again for pass 2), so the decode is done once per instruction instead of being folded into
every bit's logic. q is combinational in the cycle the control word is current.

`target` (engine/dsp.py): `generic` writes the adder as one `+` (one carry chain: 65 CARRY4 on
xc7). `ecp5` splits it at bit 128 into a carry-select adder: the low half, and the high half
twice (carry in 0 and 1) chosen by the low half's carry out. The adder runs from the register
file's block RAM output (5.8 ns clock-to-out on the ECP5-6) into the sequencer's write request in
one eng_clk, and a 257-bit ripple of CCU2C cells was 9 ns of it; the split costs 130 LUT4 and 66
CCU2C more on the ECP5 (yosys, the ALU alone). On xc7 it would cost 129 LUTs, over the whole
engine's 4,000 budget, where the one chain fits its 20 ns by the depth estimate."""

from __future__ import annotations

from migen import Cat, If, Module, Mux, Replicate, Signal

from . import spec

# the ALU's operations, by mnemonic (MUL, BRZ, FIN, CSWAP are handled elsewhere)
OPS = ["psa", "psb", "msk", "xor", "not", "add", "sub", "trd", "shl", "xbt", "fadd", "fsub"]
TWO_PASS = {"fadd", "fsub"}

# what the B read port carries for an op: the instruction's Rb, its Ra, or a hardware row
B_REG, B_RA, B_ZERO, B_ONE, B_P = range(5)
# result select
O_SUM, O_NSUM, O_BG, O_XOR = range(4)
# the gate of O_BG
G_ONE, G_A0, G_GE, G_TOP = range(4)
# control word fields: name -> width
CTL = {"xn": 1, "xr": 1, "osel": 2, "gsel": 2, "bor": 1}
_OPS = {
    # mnemonic: (B operand, pass-1 controls, pass-2 controls or None)
    "psa": (B_ZERO, dict(), None),
    "psb": (B_REG, dict(osel=O_BG, gsel=G_ONE), None),
    "msk": (B_REG, dict(osel=O_BG, gsel=G_A0), None),
    "xor": (B_REG, dict(osel=O_XOR), None),
    "not": (B_ZERO, dict(xn=1), None),
    "add": (B_REG, dict(), None),
    "sub": (B_REG, dict(xn=1, osel=O_NSUM), None),
    "trd": (B_P, dict(osel=O_BG, gsel=G_GE), None),
    "shl": (B_RA, dict(), None),
    "xbt": (B_ONE, dict(osel=O_BG, gsel=G_TOP), None),
    "fadd": (B_REG, dict(), dict(xr=1, osel=O_NSUM)),
    "fsub": (B_REG, dict(xn=1, osel=O_NSUM), dict(xr=1, bor=1)),
}
assert set(_OPS) == set(OPS) and TWO_PASS == {m for m, v in _OPS.items() if v[2] is not None}


def b_source(mnemonic: str) -> int:
    """What the B read port must carry for this op (B_*)."""
    return _OPS[mnemonic][0]


def control(mnemonic: str, pass2: bool = False) -> int:
    """The control word of one pass of an ALU op."""
    fields = _OPS[mnemonic][2 if pass2 else 1]
    word, lsb = 0, 0
    for name, width in CTL.items():
        v = fields.get(name, 0)
        assert 0 <= v < 1 << width
        word |= v << lsb
        lsb += width
    return word


CTL_BITS = sum(CTL.values())


def hardware_rows() -> dict[int, int]:
    """The values of the hardware rows the B port reads (B_ZERO, B_ONE, B_P)."""
    return {B_ZERO: 0, B_ONE: 1, B_P: spec.prime()}


def _ge_p(a, p: int):
    """a >= p for p = 2^(n-1) - c (small c; p < 2^(n-1) < 2^256): a's bits above n - 2 set, or bits
    k..n-2 all ones (as p's) and the low k bits >= p's. An AND / OR tree, no carry chain (a
    compare is a carry chain in synthesis, and this one sits after the register file's output)."""
    n = p.bit_length()
    k = next(k for k in range(n) if (p >> k) == (1 << (n - k)) - 1)
    lo = p & ((1 << k) - 1)
    return (a[n:] != 0) | ((a[k:n] == (1 << (n - k)) - 1) & (a[:k] >= lo))


class Alu(Module):
    def __init__(self, isa: str, target: str = "generic"):
        from .dsp import TARGETS
        assert target in TARGETS, f"unknown target {target!r}: one of {', '.join(TARGETS)}"
        p = spec.prime()
        n = spec.field_bits()
        w = 257
        mnemonics = set(spec.load().isas[isa].by_mnemonic)
        self.ops = [m for m in OPS if m in mnemonics]
        self.ctl = Signal(CTL_BITS)
        self.a = Signal(256)
        self.b = Signal(256)
        self.q = Signal(256)
        self.fix = Signal()             # pass 2 of FADD: r >= p; of FSUB: pass 1 borrowed (a < b)

        c, lsb = {}, 0
        for name, width in CTL.items():
            c[name] = self.ctl[lsb:lsb + width]
            lsb += width

        r = Signal(w)                   # pass-1 result with its carry / borrow
        x = Signal(w)
        s = Signal(w + 1)               # with the carry out of bit 256 (FADD's pass-2 decision)
        ge = Signal()
        g = Signal()
        if target == "generic":
            # b is the adder's first operand: the carry chain's DI, so X ^ b is one LUT per bit
            add = s.eq(self.b + x)
        else:
            h = 128
            lo = Signal(h + 1)
            hi0 = Signal(w + 1 - h)
            hi1 = Signal(w + 2 - h)     # with a low bit 1 + 1 that carries one in: one chain
            self.comb += [
                lo.eq(self.b[:h] + x[:h]),
                hi0.eq(self.b[h:] + x[h:]),
                hi1.eq(Cat(1, self.b[h:]) + Cat(1, x[h:])),
            ]
            add = s.eq(Cat(lo[:h], Mux(lo[h], hi1[1:], hi0)))
        self.comb += [
            ge.eq(_ge_p(self.a, p)),
            g.eq(Mux(c["gsel"][1], Mux(c["gsel"][0], self.a[n - 1], ge), Mux(c["gsel"][0], self.a[0], 1))),
            x.eq(Mux(c["xr"], ~r, Cat(self.a, 0) ^ Replicate(c["xn"], w))),
            add,
            self.fix.eq(Mux(c["bor"], ~r[w - 1], ~s[w])),
            self.q.eq(Mux(c["osel"][1], Mux(c["osel"][0], self.a ^ self.b, self.b & Replicate(g, 256)),
                          Mux(c["osel"][0], ~s[:256], s[:256]))),
        ]
        self.sync += If(~c["xr"], r.eq(s))     # pass 1 (and one-pass ops) load r
