"""ALU: every operation of the ISA that is not MUL, BRZ, FIN or CSWAP, selected by mnemonic (the
spec's opcode table says which mnemonics an ISA has and their codes; this file holds only what
each one computes and how many passes it takes).

One 257-bit adder does almost everything: sum = X + Y + cin with
    X = (a & xa) | (a << 1 & xs) | (r & xr),  Y = ((b & yb) | (p & yp)) ^ inv,
so PSA, PSB, MSK, ADD, SUB, TRD, SHL and XBT are all sums (MSK gates b with a[0], TRD adds
p & (a >= p), XBT is just the carry-in a[254]); the result select adds XOR and NOT. Per bit that
is three LUTs: X, the adder's propagate term, the result select.

FADD and FSUB take two passes (their issue cost is 2, so the ALU is free in the second cycle):
pass 1 computes a + b or a - b into the register r (257 bits with the carry/borrow), pass 2
computes r - p (FADD, as r + ~p + 1) or r + p (FSUB) on the same adder and returns r or the
corrected value: FADD corrects when r - p carries out (r >= p), FSUB when pass 1 borrowed.

The ALU is driven by a control word (`ctl`), not by an opcode: `control(mnemonic, pass2)`
gives the word of one pass, and the sequencer loads it into a register when it issues the op
(and again for pass 2), so the decode is done once per instruction instead of being folded into
every bit's logic. q is combinational in the cycle the control word is current."""

from __future__ import annotations

from migen import Cat, Constant, If, Module, Mux, Replicate, Signal

from . import spec

# the ALU's operations, by mnemonic (MUL, BRZ, FIN, CSWAP are handled elsewhere)
OPS = ["psa", "psb", "msk", "xor", "not", "add", "sub", "trd", "shl", "xbt", "fadd", "fsub"]
TWO_PASS = {"fadd", "fsub"}

# result select
O_SUM, O_R, O_XOR, O_NOT = range(4)
# control word fields: name -> width
CTL = {"xa": 1, "xs": 1, "xr": 1, "yb": 1, "msk": 1, "yp": 1, "trd": 1, "inv": 1, "xbt": 1, "osel": 2,
       "fadd2": 1, "fsub2": 1}
_PASS1 = {
    "psa": dict(xa=1),
    "psb": dict(yb=1),
    "msk": dict(msk=1),
    "xor": dict(osel=O_XOR),
    "not": dict(osel=O_NOT),
    "add": dict(xa=1, yb=1),
    "sub": dict(xa=1, yb=1, inv=1),
    "trd": dict(trd=1),
    "shl": dict(xs=1),
    "xbt": dict(xbt=1),
    "fadd": dict(xa=1, yb=1),
    "fsub": dict(xa=1, yb=1, inv=1),
}
_PASS2 = {
    "fadd": dict(xr=1, yp=1, inv=1, fadd2=1),   # r + ~p + 1
    "fsub": dict(xr=1, yp=1, fsub2=1),          # r + p
}


def control(mnemonic: str, pass2: bool = False) -> int:
    """The control word of one pass of an ALU op."""
    fields = (_PASS2 if pass2 else _PASS1)[mnemonic]
    word, lsb = 0, 0
    for name, width in CTL.items():
        v = fields.get(name, 0)
        assert 0 <= v < 1 << width
        word |= v << lsb
        lsb += width
    return word


CTL_BITS = sum(CTL.values())


class Alu(Module):
    def __init__(self, isa: str):
        p = spec.prime()
        n = spec.field_bits()
        w = 257
        mnemonics = set(spec.load().isas[isa].by_mnemonic)
        self.ops = [m for m in OPS if m in mnemonics]
        self.ctl = Signal(CTL_BITS)
        self.a = Signal(256)
        self.b = Signal(256)
        self.q = Signal(256)

        c, lsb = {}, 0
        for name, width in CTL.items():
            c[name] = self.ctl[lsb:lsb + width]
            lsb += width

        r = Signal(w)                   # pass-1 result with its carry / borrow
        yb, yp, cin = Signal(), Signal(), Signal()
        osel = Signal(2)
        x = Signal(w)
        y = Signal(w)
        s = Signal(w + 1)
        s_ext = Signal(w + 2)
        ge = Signal()
        a_sh = Cat(0, self.a[:255])
        self.comb += [
            ge.eq(self.a >= p),
            yb.eq(c["yb"] | (c["msk"] & self.a[0])),
            yp.eq(c["yp"] | (c["trd"] & ge)),
            cin.eq(c["inv"] | (c["xbt"] & self.a[n - 1])),
            osel.eq(Mux(c["fadd2"], Mux(s[w], O_SUM, O_R), Mux(c["fsub2"], Mux(r[256], O_SUM, O_R), c["osel"]))),
            x.eq((self.a & Replicate(c["xa"], 256)) | (a_sh & Replicate(c["xs"], 256)) | (r & Replicate(c["xr"], w))),
            y.eq(((self.b & Replicate(yb, 256)) | (Constant(p, w) & Replicate(yp, w))) ^ Replicate(c["inv"], w)),
            # one adder with its carry-in as an extra low bit: (2x + c) + (2y + c) = 2(x + y + c)
            s_ext.eq(Cat(cin, y) + Cat(cin, x)),   # (x as the second operand: the carry chain's DI, so y folds into the propagate LUT)
            s.eq(s_ext[1:]),
            self.q.eq(Mux(osel[1], Mux(osel[0], ~self.a, self.a ^ self.b), Mux(osel[0], r[:256], s[:256]))),
        ]
        self.sync += If(~c["xr"], r.eq(s[:w]))       # pass 1 (and one-pass ops) load r
