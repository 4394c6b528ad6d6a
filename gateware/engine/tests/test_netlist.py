"""Post-synthesis simulation of the whole engine: yosys's synth_xilinx netlist of `Engine(isa)`
(the module the RTL steps simulate, same ports) with the xc7 primitives' simulation models
(common/netlist.py), on Verilator, against the same references as the RTL. Outputs, events,
cycle counts (and, for the short programs, instruction counts and every register of the window)
must equal the model's, as on the RTL.

Two sets (ENGINE_NETLIST):

* `ci` (`engine:rtl-netlist` in `cargo xtask test`): v2 only; short programs from the model-run
  cases (ENGINE_CASES, xtask's `cases`): the directed ones (illegal opcodes, with a multiply in
  flight, branches to the last word, past it, before the start, wrapping, FIN draining a
  multiply, the end of the RAM) and the fewest random ones that use every opcode of the ISA in
  a finished job at least twice; then RFC 7748's first X25519 vector (the model's export),
  paused and resumed at random cycles on the way.
* `1` (`cargo xtask gateware netlist-sim`, bench provider `engine-netlist`): v2 and v1
  (ENGINE_NETLIST_ISAS), every X25519 vector of the model's export (RFC 7748's two and the
  random ones), a Wycheproof sample (ENGINE_NETLIST_WYCHEPROOF cases) and pause / resume.

The register file's netlist alone, where the block RAM's held output matters, runs in every
`engine:rtl-units` (test_regfile.py).
"""

import json
import os
import random
from pathlib import Path

import pytest

from engine import spec
from engine.sim import EngineSim

from test_engine_x25519 import le, program, run_paused, wycheproof, x25519

MODE = os.environ.get("ENGINE_NETLIST")
pytestmark = [
    pytest.mark.skipif(not os.environ.get("ENGINE_VECTORS"), reason="ENGINE_VECTORS not set"),
    pytest.mark.skipif(MODE not in ("1", "ci"), reason="ENGINE_NETLIST=1|ci not set (long build)"),
]

ISAS = ["v2"] if MODE == "ci" else [i for i in os.environ.get("ENGINE_NETLIST_ISAS", "v2,v1").split(",") if i]
SAMPLE = int(os.environ.get("ENGINE_NETLIST_WYCHEPROOF", "12"))
ci_only = pytest.mark.skipif(MODE != "ci", reason="the short set (ENGINE_NETLIST=ci)")
full_only = pytest.mark.skipif(MODE != "1", reason="the long set (ENGINE_NETLIST=1)")
DIRECTED = 9          # xtask's cases: the directed programs come first


def short_programs(isa: str, cases: list, uses: int = 2) -> list:
    """The directed cases, then random ones, each adding an opcode used fewer than `uses` times by
    the finished jobs picked so far, until every opcode of the ISA is used `uses` times; fails
    when the cases cannot cover an opcode."""
    ops = {o.code: o.mnemonic for o in spec.load().isas[isa].opcodes}
    count = dict.fromkeys(ops, 0)
    picked = list(cases[:DIRECTED])
    for c in cases[DIRECTED:]:
        if c["event"] != "finished":
            continue
        codes = {w & 0x3F for w in c["words"]} & set(ops)
        if any(count[k] < uses for k in codes):
            picked.append(c)
            for k in codes:
                count[k] += 1
        if min(count.values()) >= uses:
            break
    short = [ops[k] for k, n in count.items() if n < uses]
    assert not short, f"{isa}: the cases use {short} fewer than {uses} times"
    return picked


@pytest.fixture(scope="module", params=ISAS)
def engine(request):
    e = EngineSim(request.param, netlist=True)
    p, words = program(request.param)
    e.load_program(words, p["mpstart"])
    yield e, p
    e.close()


@full_only
def test_model_vectors(engine):
    """Every X25519 vector of the model's export (RFC 7748's two and the random ones)."""
    e, p = engine
    assert len(p["vectors"]) >= 2
    for v in p["vectors"]:
        out, cyc = x25519(e, p, le(v["inputs"][0]), le(v["inputs"][1]))
        assert out == le(v["expected"]), v.get("name", v["inputs"])
        assert cyc == v["cycles"], f"{cyc} cycles, model {v['cycles']}"


@full_only
def test_wycheproof_sample(engine):
    e, p = engine
    cases = wycheproof()
    rng = random.Random(0x6E7)
    for t in rng.sample(cases, SAMPLE):
        out, cyc = x25519(e, p, le(t["private"]), le(t["public"]))
        assert out == le(t["shared"]), f"tcId {t['tcId']} ({t['comment']})"
        assert cyc == p["vectors"][0]["cycles"], f"tcId {t['tcId']}: {cyc} cycles"


@full_only
def test_pause_resume(engine):
    """Paused at random cycles (the RTL test's protocol, `run_paused`): same result, same cycle
    count, at least three pauses."""
    e, p = engine
    assert run_paused(e, p, p["vectors"][-1], random.Random(0x9A05E)) >= 3


@ci_only
def test_short_programs(engine):
    """Every opcode (and the directed halts) on the netlist: event, cycles, instructions and all
    32 registers equal the model's (test_engine_cases.py's checks)."""
    e, p = engine
    isa = e.isa
    cases_dir = os.environ.get("ENGINE_CASES")
    assert cases_dir, "ENGINE_CASES not set (cargo xtask test sets it)"
    data = json.loads((Path(cases_dir) / f"cases_{isa}.json").read_text())
    assert data["isa"] == isa
    for n, c in enumerate(short_programs(isa, data["cases"])):
        e.load_program(c["words"], c["mpstart"])
        for r, v in enumerate(c["regs"]):
            e.set_reg(c["window"], r, le(v))
        ev, cyc, ins, ticks = e.run(c["window"], c["mpstart"], c["mplen"], max_cycles=1_000_000)
        ctx = f"{isa} case {n}: mpstart {c['mpstart']} words {[hex(w) for w in c['words']]}"
        assert (ev, cyc, ticks) == (c["event"], c["cycles"], c["cycles"]), ctx
        if c["instructions"] is not None:
            assert ins == c["instructions"], ctx
        for r, v in enumerate(c["after"]):
            assert e.reg(c["window"], r) == le(v), f"{ctx}: register {r}"
    # the short programs overwrote the X25519 program's words: load it again
    _, words = program(isa)
    e.load_program(words, p["mpstart"])


@ci_only
def test_rfc7748_paused(engine):
    """RFC 7748's first vector, paused at random cycles (at least three pauses): the RFC's
    output and the model's cycle count."""
    e, p = engine
    _, words = program(e.isa)
    e.load_program(words, p["mpstart"])
    v = next(v for v in p["vectors"] if v.get("kind") == "rfc7748")
    assert run_paused(e, p, v, random.Random(0x7748)) >= 3
