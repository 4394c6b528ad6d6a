"""Field multiplier: q = (a mod 2^255) * (b mod 2^255) mod p, fully reduced, p = 2^255 - 19
(both read from the spec's constant ROM entry `field`).

Runs in the `mul` clock domain (mul_clk = 2 x eng_clk on Precursor). 15 limbs of 17 bits; one
row of the schoolbook per mul_clk on 15 DSP-sized multiplies (17 x 22 bits: a limb of A, picked
from the held operand by the row counter, times a limb of the rotating B, whose limb wrapping
past 2^255 is pre-multiplied by 19), accumulating into 15 column sums (the multiply-accumulate
sits in each DSP48E1's P register). Then:

* one carry pass, all limbs in parallel: c_k = low17(col_k) + (col_{k-1} >> 17), the top
  column's carry re-entering limb 0 times 19;
* one 256-bit add s = L + H of the fifteen 17-bit parts (L) and the carries shifted one limb up
  (H, at most 14 bits per limb, so most bits of H are constant zero and cost no LUT), over two
  mul_clk: the low 128 bits and their carry, then the high bits;
* the normalize decision: f = s mod 2^255 + 19 * s[255] is >= p exactly when f + 19 carries
  into bit 255, i.e. when bits 8..254 of s are all ones and the low byte plus 19 * (s[255] + 1)
  reaches 256; one flag, c;
* the result q = (s mod 2^255 + 19 * (s[255] + c)) mod 2^255: an add of a constant-sized term
  (f - p when c, else f); no 255-bit mux; again over two mul_clk, low half first.

Schedule after the start edge (mul_clk), the `generic` form (Verilator, xc7): load, 15 rows and
the last row's accumulate (each row's limb select, products and accumulate are three register
stages), carry, add (2; the normalize decision is taken with the high half, from local terms of
its operands, not after it), result (2): `cycles` = 22 mul_clk until `done`, whatever the
operands; q holds until the next start. The `ecp5` form (placed on an ECP5, docs/gateware.md
"Timing") takes 23: first the capture, `a` and `b` (the register file's block-RAM outputs)
taken on the start edge into plain registers (no enable, no reset: nothing between the RAM's
output and them, so they can sit by the RAM), the operand registers (by the DSPs) loaded from
those on the next edge; without it the RAM's clock-to-out, the routing across the die to the
multiplier and the load's mux were one mul_clk path (10.9 ns placed on an ECP5-6). Its step
enables are registers passed along instead of a decoded step counter, the held A operand shifts
instead of a 15-way mux, each row's operands go into the MULT18X18Ds' own input registers (row 0
straight from the capture, the fabric operand registers a row ahead), and the normalize's
low-half parts are taken with the high half's add. Both fit MUL's latency (sequencer.py). No carry
chain in the multiplier is longer than 128 bits within one mul_clk (a 256-bit one, 64 CARRY4 on
xc7, was its longest path; docs/gateware.md, "Timing"). The sequencer takes the product when its
latency countdown says so (sequencer.py checks `cycles` fits the spec's MUL latency).
"""

from __future__ import annotations

from migen import Array, Cat, If, Module, Mux, Signal

from . import spec
from .dsp import TARGETS, Mult18Reg

LIMB = 17


def times(x, c: int):
    """x * c for a small constant c as shifted adds (fabric, keeps the DSPs for the schoolbook)."""
    terms = [x << i for i in range(c.bit_length()) if c >> i & 1]
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def FieldMul(domain: str = "mul", target: str = "generic"):
    """The field multiplier in its form for `target` (engine/dsp.py): `generic` (`*` between
    fabric registers: Verilator, xc7) or `ecp5` (MULT18X18D pairs with their own output
    registers in place of the product registers, the pair's two products added in the
    accumulate, and the placed-timing changes: the operands' capture, the step enables as
    registers, the A operand shifted, the row's operands in the blocks' input registers). Same
    ports and result;
    `cycles` (22 generic, 23 ecp5) fits MUL's latency either way (sequencer.py checks)."""
    assert target in TARGETS, f"unknown target {target!r}: one of {', '.join(TARGETS)}"
    return GenericFieldMul(domain) if target == "generic" else Ecp5FieldMul(domain)


def _geometry():
    """The multiplier's sizes, both forms: (n_bits 255, c19 19, nl 15 limbs, bw 22 the rotating B
    limb's width, lmax a limb's largest value, col_bits a column sum's width, car_max each limb's
    largest value after the carry pass, low 8 the normalize decision's low part), with the bounds
    that make them safe checked."""
    n_bits = spec.field_bits()          # 255
    c19 = spec.wrap_factor()            # 19
    nl = -(-n_bits // LIMB)             # 15 limbs
    assert nl * LIMB == n_bits, "limb size must divide the field size"
    bw = LIMB + c19.bit_length()        # rotating B limb width (17 + 5 = 22)
    # bounds: a column sum is nl products of (2^17 - 1) * c19 * (2^17 - 1) at most; after the
    # carry pass a limb is its low 17 bits plus the carry from below (x19 for limb 0)
    lmax = (1 << LIMB) - 1
    col_max = nl * lmax * c19 * lmax
    col_bits = col_max.bit_length()
    car_max = [lmax + (col_max >> LIMB) * (c19 if k == 0 else 1) for k in range(nl)]
    assert max(car_max) >> LIMB <= lmax and c19 * (car_max[nl - 1] >> LIMB) <= lmax, "a carry must fit a limb"
    low = 8                             # the normalize decision's low part (19 * 2 + 255 < 2^9)
    assert c19 * 2 + (1 << low) - 1 < 1 << (low + 1)
    return n_bits, c19, nl, bw, lmax, col_bits, car_max, low


def _ports(m, domain: str):
    """Both forms' ports on `m` and the start edge's detection: returns (the domain's sync,
    start_d the start level one edge late, go the start edge)."""
    m.a = Signal(256)
    m.b = Signal(256)
    m.start = Signal()   # level from the issuing domain; a rising edge starts a multiply
    m.q = Signal(256)
    m.done = Signal()    # high from the result until the next start
    m.busy = Signal()

    sync = getattr(m.sync, domain)
    start_d = Signal()
    go = Signal()
    sync += start_d.eq(m.start)
    m.comb += go.eq(m.start & ~start_d)
    return sync, start_d, go


def _carry_pass(m, acc, car, nl: int, c19: int, col_bits: int):
    """Both forms' carry pass and L + H operands: returns (carry_pass, the statements that
    register it; lo_cat, L: the 17-bit parts; hi_cat, H: the carries one limb up)."""
    # the carry pass: low 17 bits of each column plus the carry of the column below; the top
    # column's carry wraps into limb 0 times 19
    car_nx = [Signal(len(car[k]), name=f"car_nx{k}") for k in range(nl)]
    m.comb += [car_nx[k].eq(acc[k][:LIMB] + (acc[k - 1][LIMB:col_bits] if k else times(acc[nl - 1][LIMB:col_bits], c19)))
               for k in range(nl)]
    # the top carry times 19 (it re-enters limb 0 of H) is registered with the carry pass,
    # not computed in front of the 128-bit add that takes it
    hi0 = Signal(LIMB)
    carry_pass = [car[k].eq(car_nx[k]) for k in range(nl)] + [hi0.eq(times(car_nx[nl - 1][LIMB:], c19))]
    # L + H: the 17-bit parts, and the carries one limb up (the top one wrapped x19)
    hi = [Signal(LIMB, name=f"hi{k}") for k in range(nl)]
    m.comb += [hi[0].eq(hi0)] + [hi[k + 1].eq(car[k][LIMB:]) for k in range(nl - 1)]
    return carry_pass, Cat(*[car[k][:LIMB] for k in range(nl)]), Cat(*hi)


class GenericFieldMul(Module):
    def __init__(self, domain: str = "mul"):
        """The generic form (Verilator, xc7): 22 mul_clk, the operands loaded from `a` and `b`
        on the start edge, the A limb picked by a 15-way mux on the row counter, the steps
        decoded from a step counter. Its Verilog is what it was before the ECP5 form's timing
        work (the xc7 figures and netlist runs are of it); the ECP5 form adds a capture stage
        and takes 23 (docs/gateware.md, "Timing")."""
        n_bits, c19, nl, bw, lmax, col_bits, car_max, low = _geometry()
        sync, start_d, go = _ports(self, domain)

        step = Signal(5)
        row = Signal(max=nl)
        a_hold = Signal(n_bits)
        a_limb = Signal(LIMB)
        brot = [Signal(bw, name=f"brot{k}") for k in range(nl)]
        acc = [Signal(48, name=f"acc{k}") for k in range(nl)]
        prod = [Signal(LIMB + bw, name=f"prod{k}") for k in range(nl)]
        first = Signal()
        car = [Signal(car_max[k].bit_length(), name=f"car{k}") for k in range(nl)]
        s = Signal(n_bits + 1)
        c = Signal()

        ROWS0, ROWS1 = 1, nl                       # steps 1..15: schoolbook rows (products)
        ACC1 = nl + 1                              # step 16: the last row's accumulate
        # each 256-bit add over two mul_clk, its low half first (the carry between the halves is
        # registered): no carry chain longer than 128 bits in one 10 ns cycle
        CARRY, ADD_LO, ADD_HI, NORM_LO, NORM_HI = (ACC1 + k for k in range(1, 6))
        self.cycles = NORM_HI + 1                  # start edge -> done (mul_clk)

        # three register stages per row (the DSP48E1's A, M and P registers): the limb of A, picked
        # a step ahead (row + 1; limb 0 straight from the operand at the start); its products
        # with the rotating B limbs; the accumulate. Without them a row was one path from the row
        # counter through the limb mux, the multiply and the add (19.3 ns placed on an ECP5)
        a_next = Signal(LIMB)
        prod_first = Signal()                      # prod holds row 0's products: the accumulate starts from zero
        self.comb += a_next.eq(Array([a_hold[k * LIMB:(k + 1) * LIMB] for k in range(1, nl)] + [0])[row])

        carry_pass, lo_cat, hi_cat = _carry_pass(self, acc, car, nl, c19, col_bits)
        # normalize: f = s mod 2^255 + 19 s[255]; f >= p iff f + 19 >= 2^255 (the flag c)
        dec_low = Signal(low + 1)
        half = 128
        s_lo = Signal(half + 1)                    # low half of s = L + H and its carry out
        q_lo = Signal(half + 1)                    # low half of s mod 2^255 + 19 s[255] and its carry
        # the high halves as signals of their own (inside a Verilog concatenation a sum has the
        # width of its widest operand: the carry out would be dropped)
        s_hi = Signal(n_bits + 1 - half)
        q_hi = Signal(n_bits - half)
        self.comb += [
            dec_low.eq(s[:low] + Mux(s[n_bits], 2 * c19, c19)),
            s_hi.eq(lo_cat[half:] + hi_cat[half:] + s_lo[half]),
            q_hi.eq(s[half:n_bits] + q_lo[half]),
        ]

        operands_go = [a_limb.eq(self.a[:LIMB]), *[brot[k].eq(self.b[k * LIMB:(k + 1) * LIMB]) for k in range(nl)]]
        operands_row = [a_limb.eq(a_next), brot[0].eq(times(brot[nl - 1], c19)),
                        *[brot[k].eq(brot[k - 1]) for k in range(1, nl)]]
        products = [prod[k].eq(a_limb * brot[k]) for k in range(nl)]
        accumulate = [acc[k].eq(Mux(prod_first, 0, acc[k]) + prod[k]) for k in range(nl)]

        sync += [
            If(go,
                a_hold.eq(self.a[:n_bits]), operands_go[0], row.eq(0), *operands_go[1:],
                step.eq(ROWS0), first.eq(1), self.done.eq(0), self.busy.eq(1),
            ).Elif((step >= ROWS0) & (step <= ACC1),
                If(step <= ROWS1,
                    *products, operands_row[0], row.eq(row + 1), *operands_row[1:],
                ),
                If(step >= ROWS0 + 1,
                    *accumulate,
                ),
                prod_first.eq(first), first.eq(0), step.eq(step + 1),
            ).Elif(step == CARRY,
                *carry_pass, step.eq(step + 1),
            ).Elif(step == ADD_LO,
                s_lo.eq(lo_cat[:half] + hi_cat[:half]), step.eq(step + 1),
            ).Elif(step == ADD_HI,
                s.eq(Cat(s_lo[:half], s_hi)), step.eq(step + 1),
            ).Elif(step == NORM_LO,
                # f's low half (without c: when c is set the result is known apart, below), and c
                q_lo.eq(s[:half] + times(s[n_bits], c19)),
                c.eq(dec_low[low] & (s[low:n_bits] == (1 << (n_bits - low)) - 1)), step.eq(step + 1),
            ).Elif(step == NORM_HI,
                self.q.eq(Cat(q_lo[:half], q_hi)),
                self.done.eq(1), self.busy.eq(0), step.eq(0),
            )
        ]
        # c set: bits 8..254 of s are ones and the low byte plus 19 (s[255] + 1) carries, so
        # f + 19 = 2^255 + (low byte + 19 (s[255] + 1) - 256): the result is that low byte, every
        # other bit zero. Written after the step chain so it takes priority: the result register's
        # synchronous reset (bits 8..254) and an 8-bit choice, not a 255-bit mux
        sync += If((step == NORM_HI) & c, self.q.eq(Cat(dec_low[:low], 0)))
        self.ios = {self.a, self.b, self.start, self.q, self.done, self.busy}


class Ecp5FieldMul(Module):
    def __init__(self, domain: str = "mul"):
        """The ECP5 form (FieldMul's docstring; the module docstring for the schedule)."""
        n_bits, c19, nl, bw, lmax, col_bits, car_max, low = _geometry()
        sync, start_d, go = _ports(self, domain)
        # the capture (module docstring): every edge, so the start edge's is the operands
        a_cap = Signal(256, reset_less=True)
        b_cap = Signal(256, reset_less=True)
        sync += [a_cap.eq(self.a), b_cap.eq(self.b)]

        row = Signal(max=nl)
        acc = [Signal(48, name=f"acc{k}") for k in range(nl)]
        first = Signal()
        car = [Signal(car_max[k].bit_length(), name=f"car{k}") for k in range(nl)]
        s = Signal(n_bits + 1)
        c = Signal()

        # the schedule's steps (edges after the start edge): the load (1), the schoolbook rows'
        # products (2..16), their accumulates (3..17), the carry pass (18), the add's low and
        # high halves (19, 20; each 256-bit add over two mul_clk, its low half first with the
        # carry between the halves registered: no carry chain longer than 128 bits in one 10 ns
        # cycle), the normalize's two halves (21, 22). Each step's enable is a register of its
        # own, set on the edge before (a one-hot token passed along, the rows counted by `row`):
        # no step counter decoded in front of the enables of hundreds of flops (that decode into
        # the accumulators' clock enables was the worst mul_clk path placed on an ECP5-6 once
        # the capture was in)
        ld, rw, ac, cy, al, ah, nlo, nhi = (Signal(name=n) for n in
                                            ("st_load", "st_rows", "st_acc", "st_carry", "st_add_lo", "st_add_hi",
                                             "st_norm_lo", "st_norm_hi"))
        self.cycles = nl + 8                       # start edge -> done (mul_clk): 23

        # three register stages per row: the row's operands in the MULT18X18Ds' input registers,
        # their products in the blocks' output registers, the accumulate (the DSP48E1's A, M and
        # P registers in the generic form). Row r's operands enter the input registers on edge
        # r + 1: row 0's straight from the capture on the load edge, the later rows' from the
        # fabric operand registers, which the load fills with row 1 and each row step advances
        # (the held A operand shifted down a limb, no 15-way mux on the row counter; the B limbs
        # rotated, the limb wrapping past 2^255 times 19). So in front of each input register
        # is a 2-way mux on the load flag, and the blocks' input registers take the A limb's
        # routing to all 30 blocks of a multiplier (spread over the DSP rows) with nextpnr's
        # 0.08 ns setup instead of 3.49 ns through the multiplier into the output register
        # (dsp.py): that was the worst mul_clk path placed on an ECP5-6, a fabric A-limb
        # register 7.0 ns of routing from its block, 11.0 ns in all
        prod_first = Signal()                      # the products are row 0's: the accumulate starts from zero
        limb = lambda x, k: x[k * LIMB:(k + 1) * LIMB]
        a_hold = Signal(n_bits - LIMB)             # limbs r + 1 .. 14 while row r is in the input registers
        brot = [Signal(bw, name=f"brot{k}") for k in range(nl)]   # row r + 1's B limbs, likewise
        a_in = Signal(LIMB)
        b_in = [Signal(bw, name=f"b_in{k}") for k in range(nl)]
        self.comb += [a_in.eq(Mux(ld, limb(a_cap, 0), a_hold[:LIMB]))]
        self.comb += [b_in[k].eq(Mux(ld, limb(b_cap, k), brot[k])) for k in range(nl)]
        operands_go = [a_hold.eq(a_cap[LIMB:n_bits]), brot[0].eq(times(limb(b_cap, nl - 1), c19)),
                       *[brot[k].eq(limb(b_cap, k - 1)) for k in range(1, nl)]]
        operands_row = [a_hold.eq(a_hold[LIMB:]), brot[0].eq(times(brot[nl - 1], c19)),
                        *[brot[k].eq(brot[k - 1]) for k in range(1, nl)]]

        carry_pass, lo_cat, hi_cat = _carry_pass(self, acc, car, nl, c19, col_bits)
        # normalize: f = s mod 2^255 + 19 s[255]; f >= p iff f + 19 >= 2^255 (the flag c)
        dec_low = Signal(low + 1)
        # its parts known from the low half: the low byte plus 19 and plus 38 (s[255] picks one
        # once the high half is in), and whether bits 8..127 are all ones; taken with the high
        # half, so the decision's step has only the high half's AND and a mux (an add of the low
        # byte after s was its worst path placed on an ECP5-6)
        dl1 = Signal(low + 1)
        dl2 = Signal(low + 1)
        lo_ones = Signal()
        half = 128
        s_lo = Signal(half + 1)                    # low half of s = L + H and its carry out
        q_lo = Signal(half + 1)                    # low half of s mod 2^255 + 19 s[255] and its carry
        # the high halves as signals of their own (inside a Verilog concatenation a sum has the
        # width of its widest operand: the carry out would be dropped)
        s_hi = Signal(n_bits + 1 - half)
        q_hi = Signal(n_bits - half)
        self.comb += [
            dec_low.eq(Mux(s[n_bits], dl2, dl1)),
            s_hi.eq(lo_cat[half:] + hi_cat[half:] + s_lo[half]),
            q_hi.eq(s[half:n_bits] + q_lo[half]),
        ]

        # two MULT18X18D per product (B's low 18 bits, its high 4), input and output registers
        # on: the output registers hold row r's two partial products on edge r + 2, as `prod`
        # does in the generic form (the blocks load on every edge; outside the rows no
        # accumulate takes them). The accumulate adds both parts: a carry-save level (one LUT
        # per bit), one carry chain
        hb = LIMB + 1
        accumulate = []
        for k in range(nl):
            lo = Mult18Reg(a_in, b_in[k][:hb], domain, inputs=True)
            hi = Mult18Reg(a_in, b_in[k][hb:], domain, inputs=True)
            self.submodules += lo, hi
            x, y, z = Mux(prod_first, 0, acc[k]), lo.p, hi.p << hb
            w = len(acc[k])
            s_ = Signal(w, name=f"csa_s{k}")
            c_ = Signal(w, name=f"csa_c{k}")
            self.comb += [s_.eq(x ^ y ^ z), c_.eq(((x & y) | (x & z) | (y & z)) << 1)]
            accumulate.append(acc[k].eq(s_ + c_))

        sync += [
            ld.eq(go), rw.eq(ld | (rw & (row != nl - 1))), ac.eq(rw), cy.eq(ac & ~rw),
            al.eq(cy), ah.eq(al), nlo.eq(ah), nhi.eq(nlo),
            If(go, self.done.eq(0), self.busy.eq(1)),
            If(ld,
                *operands_go, row.eq(0), first.eq(1),
            ),
            If(rw,
                *operands_row, row.eq(row + 1),
            ),
            If(ac,
                *accumulate,
            ),
            If(rw | ac,
                prod_first.eq(first), first.eq(0),
            ),
            If(cy, *carry_pass),
            If(al, s_lo.eq(lo_cat[:half] + hi_cat[:half])),
            If(ah,
                s.eq(Cat(s_lo[:half], s_hi)),
                dl1.eq(s_lo[:low] + c19), dl2.eq(s_lo[:low] + 2 * c19),
                lo_ones.eq(s_lo[low:half] == (1 << (half - low)) - 1),
            ),
            If(nlo,
                # f's low half (without c: when c is set the result is known apart, below), and c
                q_lo.eq(s[:half] + times(s[n_bits], c19)),
                c.eq(dec_low[low] & lo_ones & (s[half:n_bits] == (1 << (n_bits - half)) - 1)),
            ),
            If(nhi,
                self.q.eq(Cat(q_lo[:half], q_hi)),
                self.done.eq(1), self.busy.eq(0),
            ),
        ]
        sync += If(nhi & c, self.q.eq(Cat(dec_low[:low], 0)))
        self.ios = {self.a, self.b, self.start, self.q, self.done, self.busy}
