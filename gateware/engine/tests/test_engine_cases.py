"""Random and directed programs (xtask/src/areas/engine/rtl.rs `cases`, run on the model) on the RTL:
illegal opcodes, branches to the last word / past it / before the start / wrapping, FIN draining
a multiply, every opcode with register and constant operands. The event, the cycle count, the
instruction count and all 32 registers of the window must equal the model's."""

import json
import os
from pathlib import Path

import pytest

from engine.sim import EngineSim

CASES = os.environ.get("ENGINE_CASES")
pytestmark = pytest.mark.skipif(not CASES, reason="ENGINE_CASES not set (cargo xtask gateware test sets it)")


def le(h):
    return int.from_bytes(bytes.fromhex(h), "little")


@pytest.mark.parametrize("isa", ["v2", "v1"])
def test_cases(isa):
    data = json.loads((Path(CASES) / f"cases_{isa}.json").read_text())
    assert data["isa"] == isa and len(data["cases"]) > 100
    e = EngineSim(isa)
    kinds = {"illegal": 0, "finished": 0}
    for n, c in enumerate(data["cases"]):
        e.load_program(c["words"], c["mpstart"])
        for r, v in enumerate(c["regs"]):
            e.set_reg(c["window"], r, le(v))
        ev, cyc, ins, ticks = e.run(c["window"], c["mpstart"], c["mplen"], max_cycles=1_000_000)
        ctx = f"{isa} case {n}: mpstart {c['mpstart']} words {[hex(w) for w in c['words']]}"
        assert ev == c["event"], ctx
        assert cyc == c["cycles"], f"{ctx}: RTL {cyc} cycles, model {c['cycles']}"
        assert ticks == cyc, ctx
        if c["instructions"] is not None:
            assert ins == c["instructions"], ctx
        for r, v in enumerate(c["after"]):
            assert e.reg(c["window"], r) == le(v), f"{ctx}: register {r}"
        kinds[ev] += 1
    assert kinds["illegal"] > 5 and kinds["finished"] > 50, kinds
