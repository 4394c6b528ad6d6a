"""Field multiplier: q = (a mod 2^255) * (b mod 2^255) mod p, fully reduced, p = 2^255 - 19
(both read from the spec's constant ROM entry `field`).

Runs in the `mul` clock domain (mul_clk = 2 x eng_clk on Precursor). 15 limbs of 17 bits; one
row of the schoolbook per mul_clk on 15 DSP-sized multiplies (17 x 22 bits: a limb of A times a
limb of the rotating B, whose limb wrapping past 2^255 is pre-multiplied by 19), accumulating
into 15 column sums. Then two parallel carry passes (the carry out of the top limb re-enters
limb 0 times 19), a 255-bit carry-propagate add of the 17-bit parts and the carries, a fold of
bit 255 (x19), and a constant-time normalize (v + 19 has bit 255 set iff v >= p; a mux picks).

Schedule after the start edge (mul_clk): load, 15 rows, carry, carry, add, fold, normalize:
`MUL_CYCLES` = 21 cycles until `done`; q holds until the next start.
"""

from __future__ import annotations

from migen import Cat, If, Module, Mux, Signal

from . import spec

LIMB = 17


def times(x, c: int):
    """x * c for a small constant c as shifted adds (fabric, keeps the DSPs for the schoolbook)."""
    terms = [x << i for i in range(c.bit_length()) if c >> i & 1]
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


class FieldMul(Module):
    def __init__(self, domain: str = "mul"):
        n_bits = spec.field_bits()          # 255
        c19 = spec.wrap_factor()            # 19
        nl = -(-n_bits // LIMB)             # 15 limbs
        assert nl * LIMB == n_bits, "limb size must divide the field size"
        mask = (1 << LIMB) - 1
        bw = LIMB + c19.bit_length()        # rotating B limb width (17 + 5 = 22)

        self.a = Signal(256)
        self.b = Signal(256)
        self.start = Signal()   # level from the issuing domain; a rising edge starts a multiply
        self.q = Signal(256)
        self.done = Signal()    # high from the result until the next start
        self.busy = Signal()

        sync = getattr(self.sync, domain)
        start_d = Signal()
        go = Signal()
        sync += start_d.eq(self.start)
        self.comb += go.eq(self.start & ~start_d)

        step = Signal(5)
        a_sh = Signal(n_bits)
        brot = [Signal(bw, name=f"brot{k}") for k in range(nl)]
        acc = [Signal(48, name=f"acc{k}") for k in range(nl)]
        prod = [Signal(17 + bw, name=f"prod{k}") for k in range(nl)]
        first = Signal()
        car = [Signal(48, name=f"car{k}") for k in range(nl)]
        wide = Signal(n_bits + 2)
        fold = Signal(n_bits + 1)

        ROWS0, ROWS1 = 1, nl                       # steps 1..15: schoolbook rows
        C1, C2, ADD, FOLD, NORM = nl + 1, nl + 2, nl + 3, nl + 4, nl + 5
        self.cycles = NORM + 1                     # start edge -> done (mul_clk)

        a_limb = a_sh[:LIMB]
        for k in range(nl):
            self.comb += prod[k].eq(a_limb * brot[k])

        def carry_pass(src):
            out = []
            for k in range(nl):
                lo = src[k][:LIMB]
                cin = src[k - 1][LIMB:] if k else times(src[nl - 1][LIMB:], c19)
                out.append(car[k].eq(lo + cin))
            return out

        # the 17-bit parts plus the carries shifted one limb up; the top carry wraps (x19)
        lo_cat = Cat(*[car[k][:LIMB] for k in range(nl)])
        hi_parts = [Signal(LIMB, name=f"hi{k}") for k in range(nl)]
        self.comb += [hi_parts[0].eq(times(car[nl - 1][LIMB:], c19))] + [hi_parts[k + 1].eq(car[k][LIMB:]) for k in range(nl - 1)]
        hi_cat = Cat(*hi_parts)
        plus = Signal(n_bits + 1)
        self.comb += plus.eq(fold + c19)  # a constant: no multiply

        sync += [
            If(go,
                a_sh.eq(self.a[:n_bits]),
                *[brot[k].eq(self.b[k * LIMB:(k + 1) * LIMB]) for k in range(nl)],
                step.eq(ROWS0), first.eq(1), self.done.eq(0), self.busy.eq(1),
            ).Elif((step >= ROWS0) & (step <= ROWS1),
                *[acc[k].eq(Mux(first, 0, acc[k]) + prod[k]) for k in range(nl)],
                a_sh.eq(a_sh[LIMB:]),
                brot[0].eq(times(brot[nl - 1], c19)),
                *[brot[k].eq(brot[k - 1]) for k in range(1, nl)],
                first.eq(0), step.eq(step + 1),
            ).Elif(step == C1,
                *carry_pass(acc), step.eq(step + 1),
            ).Elif(step == C2,
                *carry_pass(car), step.eq(step + 1),
            ).Elif(step == ADD,
                wide.eq(lo_cat + hi_cat), step.eq(step + 1),
            ).Elif(step == FOLD,
                fold.eq(wide[:n_bits] + times(wide[n_bits:], c19)), step.eq(step + 1),
            ).Elif(step == NORM,
                self.q.eq(Mux(plus[n_bits], plus[:n_bits], fold[:n_bits])),
                self.done.eq(1), self.busy.eq(0), step.eq(0),
            )
        ]
        self.ios = {self.a, self.b, self.start, self.q, self.done, self.busy}
