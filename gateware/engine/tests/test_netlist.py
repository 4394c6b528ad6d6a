"""Post-synthesis simulation of the whole engine: yosys's synth_xilinx netlist of `Engine(isa)`
(the module the RTL steps simulate, same ports) with the xc7 primitives' simulation models
(common/netlist.py), on Verilator, against the same vectors as the RTL: RFC 7748 (the model's
export, which carries both RFC 7748 vectors), a sample of the Wycheproof X25519 cases, and pause /
resume at random cycles. Outputs and cycle counts must equal the model's, as on the RTL.

The netlist build is long (synthesis ~2 min, Verilator compiling ~15k primitive instances several
minutes), so these run only with ENGINE_NETLIST=1 (`cargo xtask gateware netlist-sim`, bench
provider `engine-netlist`); the register file's netlist, where the block RAM's held output
matters, runs in every `engine:rtl-units` (test_regfile.py).
"""

import os
import random

import pytest

from engine.sim import EngineSim

from test_engine_x25519 import le, program, run_paused, wycheproof, x25519

pytestmark = [
    pytest.mark.skipif(not os.environ.get("ENGINE_VECTORS"), reason="ENGINE_VECTORS not set"),
    pytest.mark.skipif(os.environ.get("ENGINE_NETLIST") != "1", reason="ENGINE_NETLIST=1 not set (long build)"),
]

ISAS = [i for i in os.environ.get("ENGINE_NETLIST_ISAS", "v2,v1").split(",") if i]
SAMPLE = int(os.environ.get("ENGINE_NETLIST_WYCHEPROOF", "12"))


@pytest.fixture(scope="module", params=ISAS)
def engine(request):
    e = EngineSim(request.param, netlist=True)
    p, words = program(request.param)
    e.load_program(words, p["mpstart"])
    yield e, p
    e.close()


def test_model_vectors(engine):
    """Every X25519 vector of the model's export (RFC 7748's two and the random ones)."""
    e, p = engine
    assert len(p["vectors"]) >= 2
    for v in p["vectors"]:
        out, cyc = x25519(e, p, le(v["inputs"][0]), le(v["inputs"][1]))
        assert out == le(v["expected"]), v.get("name", v["inputs"])
        assert cyc == v["cycles"], f"{cyc} cycles, model {v['cycles']}"


def test_wycheproof_sample(engine):
    e, p = engine
    cases = wycheproof()
    rng = random.Random(0x6E7)
    for t in rng.sample(cases, SAMPLE):
        out, cyc = x25519(e, p, le(t["private"]), le(t["public"]))
        assert out == le(t["shared"]), f"tcId {t['tcId']} ({t['comment']})"
        assert cyc == p["vectors"][0]["cycles"], f"tcId {t['tcId']}: {cyc} cycles"


def test_pause_resume(engine):
    """Paused at random cycles (the RTL test's protocol, `run_paused`): same result, same cycle
    count, at least three pauses."""
    e, p = engine
    assert run_paused(e, p, p["vectors"][-1], random.Random(0x9A05E)) >= 3
