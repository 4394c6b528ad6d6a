"""ALU on Verilator against Python integers, driven as the sequencer drives it: the op's control
word, the B operand its `b_source` names (Rb, Ra again, or a hardware row: zero, one, p), and
for FADD / FSUB pass 1's word, then a second pass with p on the B port whose word replaces it
when the ALU's `fix` says so (the sequencer's second write). Edge
operands (0, 1, p - 1, p, p + 1, 2^255 +- 1, 2^256 - 19, 2^256 - 1, ...) in every pair, plus
random ones; every op of v2 (a superset of v1's)."""

import random

import pytest

from common.verilator import build
from engine import alu as alu_mod
from engine import spec
from engine.alu import Alu
from engine.dsp import TARGETS

P = spec.prime()
N = spec.field_bits()
M = (1 << 256) - 1


def ref(m, a, b):
    if m == "psa":
        return a
    if m == "psb":
        return b
    if m == "msk":
        return b if a & 1 else 0
    if m == "xor":
        return a ^ b
    if m == "not":
        return ~a & M
    if m == "add":
        return (a + b) & M
    if m == "sub":
        return (a - b) & M
    if m == "trd":
        return P if a >= P else 0
    if m == "shl":
        return (a << 1) & M
    if m == "xbt":
        return (a >> (N - 1)) & 1
    if m == "fadd":
        s = a + b
        return (s - P) & M if s >= P else s & M
    if m == "fsub":
        d = a - b
        return (d + P) & M if d < 0 else d & M
    raise KeyError(m)


@pytest.fixture(scope="module", params=TARGETS)
def sim(request):
    """The ALU in each target's form (engine/dsp.py; `ecp5`: the carry-select adder)."""
    dut = Alu("v2", target=request.param)
    name = "engine_alu" if request.param == "generic" else f"engine_alu_{request.param}"
    s = build(dut, {dut.ctl, dut.a, dut.b, dut.q, dut.fix}, name)
    s.ops = dut.ops
    yield s
    s.close()


def run(sim, m, a, b):
    rows = alu_mod.hardware_rows()
    src = alu_mod.b_source(m)
    bv = {alu_mod.B_REG: b, alu_mod.B_RA: a}.get(src, rows.get(src))
    sim.poke("ctl", alu_mod.control(m))
    sim.poke("a", a)
    sim.poke("b", bv)
    if m not in alu_mod.TWO_PASS:
        return sim.peek("q")
    q1 = sim.peek("q")                           # pass 1's word, written
    sim.tick()                                   # pass 1 into r
    sim.poke("ctl", alu_mod.control(m, True))
    sim.poke("a", random.getrandbits(256))       # the A port carries nothing for pass 2
    sim.poke("b", rows[alu_mod.B_P])             # and the B port always p
    q2, fix = sim.peek("q"), sim.peek("fix")
    sim.tick()
    return q2 if fix else q1


def edges():
    return [0, 1, 2, 19, P - 2, P - 1, P, P + 1, P + 18, P + 19, (1 << 255) - 1, 1 << 255, (1 << 255) + 1,
            (1 << 256) - 38, (1 << 256) - 19, (1 << 256) - 1, 1 << 254, (1 << 254) - 1, 2 * P - 1 - (1 << 255),
            0x5555 << 240, (1 << 128) - 1, 1 << 128, (1 << 256) - (1 << 128)]


def test_every_op_on_edge_pairs(sim):
    vals = edges()
    for m in sim.ops:
        for a in vals:
            for b in vals:
                q = run(sim, m, a, b)
                assert q == ref(m, a, b), f"{m} {a:#x} {b:#x}: {q:#x} != {ref(m, a, b):#x}"


def test_fadd_fsub_around_p(sim):
    # sums and differences landing on p - 1, p, p + 1 and on 2^256 +- small
    for k in range(-3, 4):
        for a in (P // 2, P - 5, 1 << 255, (1 << 256) - 7):
            for m, b in (("fadd", (P + k - a) % (1 << 256)), ("fsub", (a - P - k) % (1 << 256)),
                         ("fsub", (a + k) % (1 << 256)), ("fadd", ((1 << 256) + k - a) % (1 << 256))):
                assert run(sim, m, a, b) == ref(m, a, b), (m, hex(a), hex(b))


def test_random(sim):
    rng = random.Random(0xA1)
    for _ in range(3000):
        m = rng.choice(sim.ops)
        a, b = rng.getrandbits(256), rng.getrandbits(256)
        assert run(sim, m, a, b) == ref(m, a, b), (m, hex(a), hex(b))
