"""Every vector file the model exports (`cargo xtask engine-vectors`, directory in
$ENGINE_VECTORS) runs on the RTL: bit-exact output (a batch program's vectors: every job's
result, `outputs`) and exactly the model's cycle count, v1 and v2. The cycle count is the
engine's own counter and, independently, the clock ticks from GO to the end of `running`."""

import json
import os
from pathlib import Path

import pytest

from engine.sim import EngineSim

VEC = os.environ.get("ENGINE_VECTORS")
pytestmark = pytest.mark.skipif(not VEC, reason="ENGINE_VECTORS not set (cargo xtask gateware test sets it)")


def le_int(h: str) -> int:
    return int.from_bytes(bytes.fromhex(h), "little")


def programs(isa):
    m = json.loads((Path(VEC) / "manifest.json").read_text())
    return [p for p in m["programs"] if p["isa"] == isa]


def hex_words(path):
    return [int(l.split("//")[0], 16) for l in Path(path).read_text().split() if l.strip()]


@pytest.mark.parametrize("isa", ["v2", "v1"])
def test_vectors(isa):
    e = EngineSim(isa)
    progs = programs(isa)
    assert progs, f"no {isa} programs in the manifest"
    n = 0
    for p in progs:
        words = hex_words(Path(VEC) / p["hex"])
        assert len(words) == p["words"]
        e.load_program(words, p["mpstart"])
        for v in p["vectors"]:
            e.clear_window(p["window"])
            for r, x in zip(p["inputs"], v["inputs"]):
                e.set_reg(p["window"], r, le_int(x))
            ev, cyc, ins, ticks = e.run(p["window"], p["mpstart"], p["mplen"])
            ctx = f"{p['name']} {isa} {v['kind']}"
            assert ev == "finished", ctx
            assert e.reg(p["window"], p["output"]) == le_int(v["expected"]), ctx
            # a batch program's vector: every job's result in its register
            for r, x in v.get("outputs", []):
                assert e.reg(p["window"], r) == le_int(x), f"{ctx}: %{r}"
            assert cyc == v["cycles"], f"{ctx}: RTL {cyc} cycles, model {v['cycles']}"
            assert ticks == cyc, f"{ctx}: {ticks} clock ticks to the end, counter says {cyc}"
            assert ins == v["instructions"], ctx
            n += 1
    print(f"{isa}: {n} vectors bit- and cycle-exact")
