"""Placed-and-routed timing of the whole TRNG on an ECP5 LFE5U-85F (speed 6, CABGA381) with the
open toolchain (common/ecp5.py): the block (csr.TrngBus: conditioner, health tests, excursion
and runs tests, FIFOs, both register pages) fed by its ring oscillators in the ECP5's LUT4s
(soc.RingOscillatorTrng, as the board build carries it: no XADC on an ECP5, the avalanche inputs
idle) behind the SoC's Wishbone adapter, its two slaves on one set of pins (engine/place.py's
PinTop). One clock, `sys_clk` (the CPU clock the block runs on in the SoC), constrained at
100 MHz; the rings are combinational loops, placed with soc.board.RING_FLAGS.

    python -m trng.place --json OUT.json [--workdir DIR] [--check]

Keys: ecp5_trng_fmax_mhz_sys, ecp5_trng_{luts,ffs,brams,dsps} (yosys synth_ecp5 cells, counted
as engine/place.py counts them), ecp5_trng_timing_met.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from migen import Module

from common import ecp5
from common.yosys import verilog_of
from engine.place import PinTop

from . import spec as trng_spec
from .soc import PAGE, RingOscillatorTrng, _EngineBusView

GOAL_MHZ = 100.0


class _Whole(Module):
    def __init__(self):
        from soc.engine_wishbone import EngineWishbone
        self.submodules.src = src = RingOscillatorTrng(trng_spec.load(), "ecp5")
        t = src.trng
        self.submodules.bridge = b = EngineWishbone(_EngineBusView(t), PAGE, PAGE)
        self.csr_bus, self.mem_bus, self.irq = b.csr_bus, b.mem_bus, t.irq_server | t.irq_kernel


def place(workdir: Path, seed: int = 1) -> tuple[dict, dict]:
    w = _Whole()
    top = PinTop(periph=w, irq=w.irq)
    name = "trng_ecp5"
    v = verilog_of(top, top.ios, name)
    net, counts = ecp5.synth(v, name, workdir)
    from soc.board import RING_FLAGS
    r = ecp5.pnr(net, name, workdir, {"sys_clk": GOAL_MHZ}, seed=seed, extra=RING_FLAGS)
    out = {f"ecp5_trng_{k}": v for k, v in counts.items()}
    k = ecp5.clock_key(r["fmax"], "sys_clk")
    out["ecp5_trng_fmax_mhz_sys"] = r["fmax"][k] if k else 0.0
    return out, r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--check", action="store_true", help="fail when sys_clk misses 100 MHz")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="trng-ecp5-"))
    try:
        out, r = place(work, a.seed)
    except ecp5.ToolError as e:
        print(f"trng: {e}", file=sys.stderr)
        return 2
    bad = ecp5.check_timing(r, {"sys_clk": GOAL_MHZ})
    out["ecp5_trng_timing_met"] = 0 if bad else 1
    print("trng: " + ", ".join(f"{k} {v}" for k, v in out.items()), flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1, sort_keys=True))
    for m in bad:
        print("TIMING: trng: " + m)
    return 1 if a.check and bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
