"""Field multiplier on Verilator against Python integers, at the edges: operands near p, in
[2^255 - 19, 2^256) (bit 255 ignored, non-canonical inputs), limbs of 0x1ffff, column sums at
their maximum, the overflow case that broke the reference (a normalize that looks at more than
bit 255 of v + 19), plus random operands; fixed latency, whatever the operands."""

import random

import pytest

from common.verilator import _ports, build, build_dir, build_verilog
from common.yosys import verilog_of
from engine import dsp as dsp_mod
from engine import spec
from engine.mul import LIMB, FieldMul

P = spec.prime()
N = spec.field_bits()


def ref(a, b):
    m = (1 << N) - 1
    return ((a & m) * (b & m)) % P


def build_mul(target):
    """The multiplier in one of its DSP forms on Verilator; `ecp5` with the MULT18X18D model
    (engine/dsp.py)."""
    dut = FieldMul("mul", target=target)
    if target == "generic":
        return build(dut, dut.ios, "engine_mul", clocks={"mul": 1}), dut
    v = verilog_of(dut, dut.ios, f"engine_mul_{target}")
    lib = dsp_mod.model_file(build_dir())
    return build_verilog(v, _ports(v, dut.ios), f"engine_mul_{target}", {"mul": 1}, libraries=(lib,)), dut


@pytest.fixture(scope="module", params=dsp_mod.TARGETS)
def sim(request):
    s, dut = build_mul(request.param)
    s.latency = dut.cycles
    yield s
    s.close()


def test_forms_fit_mul_latency():
    """Every form's multiplier fits MUL's latency in every ISA (the engine's elaboration checks
    it: the product is loaded by the mid-cycle edge before the write request takes it), and the
    ECP5 form's capture is its one step more."""
    from engine.sequencer import Engine
    for isa in spec.load().isas:
        for t in dsp_mod.TARGETS:
            Engine(isa, target=t)
    assert FieldMul("mul", target="ecp5").cycles == FieldMul("mul").cycles + 1


def run(sim, a, b):
    sim.poke("a", a)
    sim.poke("b", b)
    sim.poke("start", 1)
    sim.tick()
    sim.poke("start", 0)
    n = sim.run_until("done", 1, 100) + 1
    return sim.peek("q"), n


def edge_operands():
    limbs = (1 << LIMB) - 1
    ones = sum(limbs << (LIMB * k) for k in range(N // LIMB))  # every limb 0x1ffff = 2^255 - 1
    vals = [0, 1, 2, 19, P - 1, P, P + 1, P + 18, (1 << 255) - 1, (1 << 255), (1 << 256) - 1,
            (1 << 256) - 19, (1 << 256) - 20, ones, ones ^ (1 << 200), 2**254, 121665, 121666,
            sum(limbs << (LIMB * k) for k in range(0, 15, 2)), sum(limbs << (LIMB * k) for k in range(1, 15, 2))]
    vals += [v for v in range(P - 40, P + 40, 7)] + [(1 << 255) + k for k in range(0, 40, 9)]
    return vals


def test_edges(sim):
    vals = edge_operands()
    lat = None
    for a in vals:
        for b in vals:
            q, n = run(sim, a, b)
            assert q == ref(a, b), f"{a:#x} * {b:#x}: {q:#x} != {ref(a, b):#x}"
            assert lat in (None, n), "latency depends on the operands"
            lat = n
    assert lat == sim.latency


def test_overflow_detector_case(sim):
    # products whose reduced value before normalize lands in [p, 2^255): only bit 255 of v + 19
    # decides; a detector that also looks at higher bits gets these wrong
    hits = 0
    rng = random.Random(7)
    for _ in range(400):
        r = rng.randrange(0, 19)
        target = P + r  # want a*b = target (mod p) with a*b's folded value >= p: use a = target, b = 1
        for a, b in ((target, 1), (1, target), ((1 << 255) + r, 1)):
            q, _ = run(sim, a, b)
            assert q == ref(a, b)
            hits += 1
    assert hits


def test_random(sim):
    rng = random.Random(0x25519)
    for _ in range(3000):
        a, b = rng.getrandbits(256), rng.getrandbits(256)
        q, _ = run(sim, a, b)
        assert q == ref(a, b)
