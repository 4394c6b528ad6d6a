"""ALU: every operation of the ISA that is not MUL, BRZ, FIN or CSWAP, selected by mnemonic (the
spec's opcode table says which mnemonics an ISA has and their codes; this file holds only what
each one computes and how many passes it takes).

One 257-bit adder does almost everything: sum = X + Y + cin with
    X = 0 | a | a << 1 | r (optionally inverted),  Y = ((b & yb) | (p & yp)) ^ inv,
so PSA, PSB, MSK, NOT, ADD, SUB, TRD, SHL and XBT are all sums (TRD adds p & (a >= p), XBT is
just the carry-in a[254]); XOR is the only result beside the adder. Per bit that is three
LUT6: X, the adder's propagate term, the result select.

FADD and FSUB take two passes (their issue cost is 2, so the ALU is free in the second cycle):
pass 1 computes a + b or a - b into the register r (257 bits with the carry/borrow), pass 2
(`pass2` high in the next cycle, same `op`) computes r - p (FADD) or r + p (FSUB) on the same
adder and returns r or the corrected value: FADD keeps r when r < p (no carry out of r - p),
FSUB corrects when pass 1 borrowed. Results: q = f(a, b) combinationally for one-pass ops; for
two-pass ops q is valid in the pass-2 cycle."""

from __future__ import annotations

from migen import Array, Case, Cat, Constant, If, Module, Mux, Replicate, Signal

from . import spec

# the ALU's operations, by mnemonic (MUL, BRZ, FIN, CSWAP are handled elsewhere)
OPS = ["psa", "psb", "msk", "xor", "not", "add", "sub", "trd", "shl", "xbt", "fadd", "fsub"]
TWO_PASS = {"fadd", "fsub"}

# X select
X_ZERO, X_A, X_SHL, X_R = range(4)


class Alu(Module):
    def __init__(self, isa: str):
        p = spec.prime()
        n = spec.field_bits()
        w = 257
        mnemonics = set(spec.load().isas[isa].by_mnemonic)
        self.ops = [m for m in OPS if m in mnemonics]
        self.two_pass = [i for i, m in enumerate(self.ops) if m in TWO_PASS]
        self.op = Signal(max=max(2, len(self.ops)))
        self.pass2 = Signal()           # second cycle of a two-pass op (same op as the first)
        self.a = Signal(256)
        self.b = Signal(256)
        self.q = Signal(256)

        r = Signal(w)                   # pass-1 result with its carry / borrow
        xsel = Signal(2)
        xn = Signal()
        yb = Signal()
        yp = Signal()
        inv = Signal()
        cin = Signal()
        xor = Signal()
        keep = Signal()
        x = Signal(w)
        y = Signal(w)
        s = Signal(w + 1)
        s_ext = Signal(w + 2)
        ge = Signal()
        self.comb += ge.eq(self.a >= p)

        # controls per op (one-pass ops and pass 1 of two-pass ops)
        ctl = {
            "psa": dict(xsel=X_A),
            "psb": dict(yb=1),
            "msk": dict(yb=self.a[0]),
            "xor": dict(xor=1),
            "not": dict(xsel=X_A, xn=1),
            "add": dict(xsel=X_A, yb=1),
            "sub": dict(xsel=X_A, yb=1, inv=1),
            "trd": dict(yp=ge),
            "shl": dict(xsel=X_SHL),
            "xbt": dict(cin=self.a[n - 1]),
            "fadd": dict(xsel=X_A, yb=1),
            "fsub": dict(xsel=X_A, yb=1, inv=1),
        }
        # pass 2: r - p (as r + ~p + 1) for FADD, r + p for FSUB
        ctl2 = {
            "fadd": dict(xsel=X_R, yp=1, inv=1, keep=~s[w]),
            "fsub": dict(xsel=X_R, yp=1, keep=~r[256]),
        }
        sig = dict(xsel=xsel, xn=xn, yb=yb, yp=yp, inv=inv, cin=cin, xor=xor, keep=keep)

        def assign(d):
            out = [v.eq(0) for v in sig.values()]
            out += [sig[k].eq(v) for k, v in d.items()]
            if "cin" not in d:
                out.append(cin.eq(d.get("inv", 0)))
            return out

        cases1 = {i: assign(ctl[m]) for i, m in enumerate(self.ops)}
        cases2 = {i: assign(ctl2[m]) for i, m in enumerate(self.ops) if m in ctl2}
        self.comb += If(self.pass2, Case(self.op, cases2)).Else(Case(self.op, cases1))

        a_sh = Cat(0, self.a[:255])
        self.comb += [
            x.eq(Array([Constant(0, w), self.a, a_sh, r])[xsel] ^ Replicate(xn, w)),
            y.eq(((self.b & Replicate(yb, 256)) | (Constant(p, w) & Replicate(yp, w))) ^ Replicate(inv, w)),
            # one adder with its carry-in as an extra low bit: (2x + c) + (2y + c) = 2(x + y + c)
            s_ext.eq(Cat(cin, x) + Cat(cin, y)),
            s.eq(s_ext[1:]),
            self.q.eq(Mux(xor, self.a ^ self.b, Mux(keep, r[:256], s[:256]))),
        ]
        self.sync += If(~self.pass2, r.eq(s[:w]))
