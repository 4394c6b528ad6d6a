"""Run one program on the Verilated engine (the `rtl` backend of `cargo xtask engine-run`).

    python -m engine.run < job.json > result.json

job: {"isa", "words": [u32...], "window", "mpstart", "regs": {"N": "<64 hex digits, little-endian bytes>"},
"max_cycles"}; result: {"event": "finished"|"illegal"|"timeout", "cycles", "instructions",
"regs": [32 x the same hex]}. Errors go to stderr with exit status 2.
"""

from __future__ import annotations

import json
import sys

from . import spec
from .sim import EngineSim


def hexle(v: int) -> str:
    return v.to_bytes(32, "little").hex()


def main() -> int:
    try:
        job = json.load(sys.stdin)
        isa = job["isa"]
        if isa not in spec.load().isas:
            raise ValueError(f"unknown isa {isa!r}")
        words = [int(w) for w in job["words"]]
        window, mpstart = int(job.get("window", 0)), int(job.get("mpstart", 0))
        g = spec.load().geometry
        if not words or mpstart < 0 or mpstart + len(words) > g["ucode_words"]:
            raise ValueError("program does not fit the microcode RAM")
        if not 0 <= window < g["windows"]:
            raise ValueError(f"window {window} out of range")
        regs = {int(k): int.from_bytes(bytes.fromhex(v), "little") for k, v in job.get("regs", {}).items()}
    except (KeyError, ValueError, TypeError, json.JSONDecodeError) as e:
        print(f"engine.run: bad job: {e}", file=sys.stderr)
        return 2
    e = EngineSim(isa)
    e.load_program(words, mpstart)
    for r, v in regs.items():
        e.set_reg(window, r, v)
    try:
        ev, cyc, ins, _ = e.run(window, mpstart, len(words), int(job.get("max_cycles", 10_000_000)))
    except TimeoutError:
        ev, cyc, ins = "timeout", e.sim.peek("cycles"), e.sim.peek("instructions")
    out = {"event": ev, "cycles": cyc, "instructions": ins,
           "regs": [hexle(e.reg(window, r)) for r in range(g["regs_per_window"])] if ev != "timeout" else []}
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
