"""Placed-and-routed timing of the engine on an ECP5 LFE5U-85F (speed 6, CABGA381) with the open
toolchain (common/ecp5.py): yosys synth_ecp5, nextpnr-ecp5. Fmax per clock domain and the worst
path between domains.

    python -m engine.place --json OUT.json [--workdir DIR] [--isa v2] [--check]

Design: the engine as the SoC carries it (`soc.engine.EnginePeripheral((isa,), target="ecp5")`:
Wishbone adapter, CSR block and memory window, full engine in its ECP5 form, engine/dsp.py) in a pin wrapper that puts its two Wishbone
slaves on one set of pins (a region select pin; the 85F in CABGA381 has ~200 user I/Os, two
slaves' 214 would not fit). Clocks, as ports of their own: `sys_clk` (the bus side of the
adapter, the CPU clock, 100 MHz), `eng_clk` (sequencer, ALU, CSR block: the spec's eng_clk_hz),
`mul_clk` (multipliers and the register-file array: the spec's mul_clk_hz). In the SoC mul_clk
is the CPU clock; separate ports keep nextpnr's figures per domain.

Cross-domain paths (nextpnr reports the worst one per pair of clocks, it does not check them):
every domain's edges are aligned (one PLL), so a path from a 100 MHz edge to the next edge of
the other domain has 10 ns, except the two multicycle paths of the register file (eng_clk ->
array address and array output -> eng_clk: 20 ns, docs/gateware.md "Register file and
clocks"). `--check` fails when a domain misses its spec clock or a cross-domain path exceeds
10 ns and does not start or end in the register-file array.

Keys: ecp5_engine_<isa>_fmax_mhz_{eng,mul,sys}, ecp5_engine_<isa>_{luts,ffs,brams,dsps}
(yosys synth_ecp5 cells: LUT4 + 2 per CCU2C carry cell + distributed RAM; TRELLIS_FF; DP16KD;
MULT18X18D), ecp5_engine_<isa>_dsps_registered (MULT18X18Ds with their own output register:
all of them, the engine's `ecp5` form, engine/dsp.py; `--check` fails otherwise),
ecp5_engine_<isa>_dsps_inputs_registered (with both input registers too: all of them, likewise),
ecp5_engine_<isa>_cross_ns_<a>_<b>, ecp5_engine_luts = v2's.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from migen import Module, Mux, Signal

from common import ecp5
from common.yosys import verilog_of

from . import spec


class PinTop(Module):
    """EnginePeripheral((isa,)) with both Wishbone slaves on one set of pins (`sel_csr` picks).
    `periph`: another peripheral with two slaves (`csr_bus`, `mem_bus`) and `irq`, pinned the
    same way (the TRNG: trng/place.py)."""

    def __init__(self, isa: str | None = None, periph=None, irq=None):
        if periph is None:
            from soc.engine import EnginePeripheral
            periph = EnginePeripheral((isa,), target="ecp5")
            irq = periph.ev.irq
        self.submodules.p = p = periph
        self.adr = Signal(30)
        self.dat_w = Signal(32)
        self.dat_r = Signal(32)
        self.we = Signal()
        self.sel_csr = Signal()
        self.cyc = Signal()
        self.stb = Signal()
        self.ack = Signal()
        self.irq = Signal()
        c, m = p.csr_bus, p.mem_bus
        self.comb += [
            c.adr.eq(self.adr), m.adr.eq(self.adr), c.dat_w.eq(self.dat_w), m.dat_w.eq(self.dat_w),
            c.we.eq(self.we), m.we.eq(self.we), c.sel.eq(0xF), m.sel.eq(0xF),
            c.cyc.eq(self.cyc & self.sel_csr), m.cyc.eq(self.cyc & ~self.sel_csr),
            c.stb.eq(self.stb & self.sel_csr), m.stb.eq(self.stb & ~self.sel_csr),
            self.ack.eq(c.ack | m.ack), self.dat_r.eq(Mux(self.sel_csr, c.dat_r, m.dat_r)),
            self.irq.eq(irq),
        ]
        self.ios = {self.adr, self.dat_w, self.dat_r, self.we, self.sel_csr, self.cyc, self.stb, self.ack, self.irq}


def goals(isa: str) -> dict:
    """Clock port -> MHz the spec asks for (sys: the CPU clock, which the SoC checks against mul)."""
    from soc.engine import CPU_CLK_HZ
    i = spec.load().isas[isa]
    return {"eng_clk": i.eng_clk_hz / 1e6, "mul_clk": i.mul_clk_hz / 1e6, "sys_clk": CPU_CLK_HZ / 1e6}


def cross_budget_ok(name: str, c: dict) -> bool:
    """A cross-domain path fits: 10 ns (aligned edges, the faster clock's period), or 20 ns when it
    starts or ends in the register-file array (the multicycle paths the design declares)."""
    # the array's block RAMs: memory `rf` (yosys names its cells rf.<row>.<column>)
    rf = any(re.match(r"^\\?rf\.\d+\.\d+", c[k]) for k in ("from_cell", "to_cell"))
    return c["ns"] <= (20.0 if rf else 10.0)


def place(isa: str, workdir: Path, seed: int = 1) -> tuple[dict, dict]:
    top = PinTop(isa)
    name = f"engine_ecp5_{isa}"
    v = verilog_of(top, top.ios, name)
    net, counts = ecp5.synth(v, name, workdir)
    g = goals(isa)
    r = ecp5.pnr(net, name, workdir, {ecp5_net: mhz for ecp5_net, mhz in g.items()}, seed=seed)
    out = {f"ecp5_engine_{isa}_{k}": v for k, v in counts.items()}
    # the multipliers' MULT18X18Ds with their own output register (engine/dsp.py)
    regs = ecp5.dsp_registers(net, name)
    out[f"ecp5_engine_{isa}_dsps_registered"] = regs["output"]
    # and with both input registers (nextpnr's REGS_ALL timing: the routing into the block has
    # the whole mul_clk; engine/dsp.py)
    out[f"ecp5_engine_{isa}_dsps_inputs_registered"] = regs["inputs"]
    for port in g:
        k = ecp5.clock_key(r["fmax"], port)
        out[f"ecp5_engine_{isa}_fmax_mhz_{port[:-4]}"] = r["fmax"][k] if k else 0.0
    for pair, c in r["cross"].items():
        ends = [ecp5.clock_port(x) for x in pair.split(" -> ")]
        if "<async>" in ends:
            continue                      # the pin wrapper's unregistered I/O: not the design's paths
        tag = "_".join(e.replace("_clk", "") for e in ends)
        out[f"ecp5_engine_{isa}_cross_ns_{tag}"] = c["ns"]
    return out, r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--isa", action="append", choices=sorted(spec.load().isas))
    ap.add_argument("--check", action="store_true", help="fail when a domain misses its spec clock")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    work = a.workdir or Path(tempfile.mkdtemp(prefix="engine-ecp5-"))
    out, bad = {}, []
    for isa in a.isa or ["v1", "v2"]:
        try:
            o, r = place(isa, work / isa, a.seed)
        except ecp5.ToolError as e:
            print(f"{isa}: {e}", file=sys.stderr)
            return 2
        out.update(o)
        print(f"{isa}: " + ", ".join(f"{k} {v}" for k, v in o.items()), flush=True)
        mine = []
        for pair, c in r["cross"].items():
            print(f"{isa}: cross-domain {pair}: {c['ns']} ns ({c['from_cell']} -> {c['to_cell']})")
            if "<async>" in pair:
                continue                  # I/O of the pin wrapper, unconstrained
            if not cross_budget_ok(pair, c):
                mine.append(f"{isa}: cross-domain path {pair} {c['ns']} ns over its budget ({c['from_cell']} -> {c['to_cell']}; {r['log']})")
        mine += [f"{isa}: {m}" for m in ecp5.check_timing(r, goals(isa))]
        for k, what in (("dsps_registered", "their output register"), ("dsps_inputs_registered", "their input registers")):
            if o[f"ecp5_engine_{isa}_{k}"] != o[f"ecp5_engine_{isa}_dsps"]:
                mine.append(f"{isa}: {o[f'ecp5_engine_{isa}_dsps']} MULT18X18D, {o[f'ecp5_engine_{isa}_{k}']} "
                            f"with {what} (synth_ecp5 changed the instances?)")
        out[f"ecp5_engine_{isa}_timing_met"] = 0 if mine else 1
        bad += mine
    if "ecp5_engine_v2_luts" in out:
        out["ecp5_engine_luts"] = out["ecp5_engine_v2_luts"]
    if a.json:
        a.json.write_text(json.dumps(out, indent=1, sort_keys=True))
    for m in bad:
        print("TIMING: " + m)
    if a.check and bad:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
