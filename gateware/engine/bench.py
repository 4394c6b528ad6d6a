"""RTL benchmark figures: X25519 on the Verilated engine (the model's exported program and
vectors), v1 and v2: rtl_<isa>_x25519_cycles, each checked equal to the model's count and the
output checked against the vector, over every X25519 vector of the export.

    python -m engine.bench VECTOR_DIR --json OUT.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .sim import EngineSim


def le(h):
    return int.from_bytes(bytes.fromhex(h), "little")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vectors", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    m = json.loads((a.vectors / "manifest.json").read_text())
    out = {}
    for p in (p for p in m["programs"] if p["name"] == "x25519"):
        isa = p["isa"]
        e = EngineSim(isa)
        words = [int(x, 16) for x in (a.vectors / p["hex"]).read_text().split()]
        e.load_program(words, p["mpstart"])
        seen = set()
        for v in p["vectors"]:
            for r, x in zip(p["inputs"], v["inputs"]):
                e.set_reg(p["window"], r, le(x))
            ev, cyc, _, ticks = e.run(p["window"], p["mpstart"], p["mplen"])
            if ev != "finished" or e.reg(p["window"], p["output"]) != le(v["expected"]):
                raise SystemExit(f"x25519 {isa}: wrong result on the RTL")
            if cyc != v["cycles"] or ticks != cyc:
                raise SystemExit(f"x25519 {isa}: RTL {cyc} cycles ({ticks} ticks), model {v['cycles']}")
            seen.add(cyc)
        if len(seen) != 1:
            raise SystemExit(f"x25519 {isa}: cycle count depends on the inputs: {sorted(seen)}")
        out[f"rtl_{isa}_x25519_cycles"] = seen.pop()
        out[f"rtl_{isa}_x25519_vectors_checked"] = len(p["vectors"])
        print(f"rtl {isa}: X25519 {out[f'rtl_{isa}_x25519_cycles']} cycles = model, {len(p['vectors'])} vectors")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
