"""Synthesis report of the engine gateware: yosys `synth_xilinx -family xc7` (Precursor's
XC7S50) of the whole engine as the SoC carries it, and per block, for v1 and v2; the budget
check applies to the whole.

    python -m engine.synth --json OUT.json [--workdir DIR] [--isa v1 --isa v2]

Whole: `soc.engine.EnginePeripheral((isa,))`, the top the Verilated SoC runs: the Wishbone
adapter (its clock crossing into eng_clk), the CSR block and memory window (csr.EngineBus) and the full Engine (sequencer, ALU, multipliers, register
file, microcode RAM), synthesized flattened in one run, so optimization across blocks is what
is counted. Its ports are the two Wishbone slaves and the interrupt line.

Blocks (a breakdown beside the whole): the field multiplier (one instance; v1 has one, v2 two: units.mul in the spec), the ALU,
the microcode RAM, the register file, and the sequencer (the Engine with its memories cut
down to two words and without its ALU and multipliers: scoreboard, decode, pipeline, muxes).
The register file is the module the engine simulates (regfile.RegFile): one true-dual-port
array of its rows (512 registers, the constant slots, the ALU's hardware rows) on mul_clk, its
two ports used in two phases per eng_clk (read A and B, then the ALU's and the multipliers'
writes), with its write registers and phase logic (docs/gateware.md).

Keys: synth_engine_{luts,ffs,dsps,brams}_{v1,v2} (the whole), synth_engine_luts and
synth_engine_dsps (v2, the whole), synth_engine_<block>_<res>_<isa> per block and
synth_engine_blocksum_<res>_<isa> (the sum of the blocks, for comparison).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import depth
from common.yosys import stat

from . import regfile, spec
from .alu import Alu
from .mul import FieldMul
from .ucode import MicrocodeRam

# v2 budgets, on the whole engine (docs/gateware.md, "Figures"), both asserted by --check: 30
# DSPs and 4,000 LUTs (3,874 measured since the ECP5 timing work, 3,922 before it; 4,407 before
# the bus wrote one word of a register through the register file's per-word write enables
# instead of a 256-bit read-modify-write merge).
BUDGET_V2 = {"dsps": 30, "luts": 4000}


def blocks(isa: str):
    m = FieldMul("sys")
    yield "mul", m, m.ios, spec.load().isas[isa].units.get("mul", 1)
    a = Alu(isa)
    yield "alu", a, {a.a, a.b, a.q, a.ctl, a.fix}, 1
    u = MicrocodeRam()
    yield "ucode", u, {u.port.adr, u.port.dat_r, u.port.dat_w, u.port.we, u.port.re}, 1
    rf = regfile.RegFile(isa)
    yield "regfile", rf, rf.ios, 1
    from .sequencer import Engine
    e = Engine(isa, synth_core=True)
    ios = {e.go, e.window, e.mpstart, e.mplen, e.pause_req, e.mpresume_we, e.mpresume_dat, e.running, e.pause_gnt,
           e.mpc, e.finished, e.illegal, e.cycles, e.instructions, e.instruction, e.bus_rf_adr, e.bus_rf_we,
           e.bus_rf_dat_w, e.bus_rf_dat_r, e.bus_uc_adr, e.bus_uc_sel, e.bus_uc_we, e.bus_uc_dat_w, e.bus_uc_dat_r}
    ios |= e.cut_ios
    yield "sequencer", e, ios, 1


def whole(isa: str):
    """The engine as the SoC carries it (one ISA): (module, ios)."""
    from soc.engine import EnginePeripheral
    p = EnginePeripheral((isa,))
    ios = set(p.csr_bus.flatten()) | set(p.mem_bus.flatten()) | {p.ev.irq}
    return p, ios


def report(isas, workdir: Path, blocks_too: bool = True) -> dict:
    out = {}
    for isa in isas:
        m, ios = whole(isa)
        jn = workdir / f"engine_whole_{isa}.json"
        w = stat(m, ios, f"engine_whole_{isa}", workdir, json_netlist=jn)
        for k, v in w.items():
            out[f"synth_engine_{k}_{isa}"] = v
        # xc7 estimate without Vivado: logic depth per pair of clock domains (common/depth.py)
        # the register-file array's block RAMs (memory `rf`) apart: their paths are the multicycle ones
        for pair, d in sorted(depth.analyse(jn.read_text(), f"engine_whole_{isa}", {r"^rf\.": "rf"}).items()):
            tag = "_".join(x.strip().replace("_clk", "").replace(":", "_") for x in pair.split("->"))
            out[f"xc7_engine_{isa}_depth_ns_{tag}"] = d["ns"]
            out[f"xc7_engine_{isa}_depth_levels_{tag}"] = d["levels"]
            print(f"{isa} xc7 depth {pair:<20}: {d['levels']:>2} LUT levels, {d['carry4']:>3} CARRY4, "
                  f"~{d['ns']} ns estimated (end {d['to']})", flush=True)
        print(f"{isa} whole        : {w['luts']:>6} LUT {w['ffs']:>6} FF {w['brams']:>4} BRAM {w['dsps']:>3} DSP"
              " (Wishbone adapter + CSR block/memory window + engine, one flattened run)", flush=True)
        if not blocks_too:
            continue
        tot = {"luts": 0, "ffs": 0, "brams": 0, "dsps": 0}
        for name, mod, ios, count in blocks(isa):
            r = stat(mod, ios, f"engine_{name}_{isa}", workdir)
            for k, v in r.items():
                out[f"synth_engine_{name}_{k}_{isa}"] = v * count
                tot[k] += v * count
            print(f"{isa} {name:<10} x{count}: {r['luts']:>6} LUT {r['ffs']:>6} FF {r['brams']:>4} BRAM {r['dsps']:>3} DSP", flush=True)
        for k, v in tot.items():
            out[f"synth_engine_blocksum_{k}_{isa}"] = v
        print(f"{isa} sum of blocks: {tot['luts']:>6} LUT {tot['ffs']:>6} FF {tot['brams']:>4} BRAM {tot['dsps']:>3} DSP", flush=True)
    if "v2" in isas:
        out["synth_engine_luts"] = out["synth_engine_luts_v2"]
        out["synth_engine_dsps"] = out["synth_engine_dsps_v2"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--isa", action="append", choices=sorted(spec.load().isas))
    ap.add_argument("--check", action="store_true", help="fail when v2 (the whole) is over its budget")
    ap.add_argument("--whole-only", action="store_true", help="the whole engine only, no per-block breakdown")
    a = ap.parse_args(argv)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="engine-synth-"))
    out = report(a.isa or ["v1", "v2"], work, blocks_too=not a.whole_only)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1, sort_keys=True))
    if a.check and "synth_engine_luts" in out:
        luts, dsps = out["synth_engine_luts"], out["synth_engine_dsps"]
        fail = False
        if dsps > BUDGET_V2["dsps"]:
            print(f"over budget (v2, whole engine): dsps {dsps} > {BUDGET_V2['dsps']}")
            fail = True
        if luts > BUDGET_V2["luts"]:
            print(f"over budget (v2, whole engine): luts {luts} > {BUDGET_V2['luts']}")
            fail = True
        if fail:
            return 1
        print(f"v2 (whole engine): dsps {dsps} <= {BUDGET_V2['dsps']}, luts {luts} <= {BUDGET_V2['luts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
