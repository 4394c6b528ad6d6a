"""Logic depth per clock domain of a yosys `synth_xilinx` netlist (JSON): the xc7 estimate used
where no Vivado is available (docs/gateware.md, "Timing").

For every register-to-register path (start: an FF output, a block RAM or DSP output, or a top
input; end: an FF, block RAM or DSP input), the number of LUT levels (LUT1-6, MUXF7/F8 counted
with their LUT) and of CARRY4 cells it crosses, grouped by the clock of the end point (the top
port that clock net comes from, through its BUFG). The estimate of a path is

    t = t_clk_to_q + levels * t_lut_net + carry4s * t_carry4 + t_setup

with round 7-series -1 figures (UG475/DS181 orders of magnitude: clock-to-out 0.5 ns, one LUT and
its net 0.6 ns, 0.1 ns per CARRY4 along a chain, setup 0.1 ns; block RAM and DSP ends add their
own clock-to-out, 2.5 ns and 3.0 ns). This is a depth estimate, not static timing: routing is
not known before placement, and the worst path by this estimate need not be the worst placed.
"""

from __future__ import annotations

import json
from collections import defaultdict

T_CQ, T_LUT, T_CARRY, T_SU = 0.5, 0.6, 0.1, 0.1
T_OUT = {"RAMB": 2.5, "DSP48": 3.0}

COMB_LUT = ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "MUXF7", "MUXF8", "INV")
SEQ = ("FD", "RAMB", "DSP48")
CLOCK_PINS = {"C", "CLK", "CLKARDCLK", "CLKBWRCLK"}


def _kind(t: str) -> str:
    if t.startswith(SEQ):
        return "seq"
    if t == "CARRY4":
        return "carry"
    if t in COMB_LUT:
        return "lut"
    if t.startswith(("BUFG", "IBUF", "OBUF")):
        return "buf"
    return "other"


def analyse(netlist_json: str, top: str, tags: dict | None = None) -> dict:
    """{"<start clock> -> <end clock>": {"levels": L, "carry4": C, "ns": t, "mhz": f, "to": end}} of
    the worst path by estimate per pair of clocks (start "in" for top inputs). `tags` maps a regular
    expression to a label: sequential cells whose name matches are reported as `<clock>:<label>`
    (a block whose paths have their own budget, e.g. a multicycle one)."""
    import re
    tagged = [(re.compile(r), t) for r, t in (tags or {}).items()]

    def label(cell_name, clk):
        for r, t in tagged:
            if r.search(cell_name):
                return f"{clk}:{t}"
        return clk
    mod = json.loads(netlist_json)["modules"][top]
    cells = mod["cells"]
    drivers = {}                      # bit -> (cell, port)
    sinks = defaultdict(list)         # bit -> [(cell, port)]
    for name, c in cells.items():
        for port, bits in c["connections"].items():
            d = c["port_directions"].get(port, "input")
            for b in bits:
                if isinstance(b, str):
                    continue
                (drivers.__setitem__(b, (name, port)) if d == "output" else sinks[b].append((name, port)))
    # clock bit of each sequential cell -> the top port it comes from (through BUFGs)
    port_of_bit = {}
    for pname, p in mod["ports"].items():
        for b in p["bits"]:
            if not isinstance(b, str):
                port_of_bit[b] = pname

    def clock_name(bit):
        seen = 0
        while bit not in port_of_bit and bit in drivers and seen < 4:
            c = cells[drivers[bit][0]]
            if _kind(c["type"]) != "buf":
                break
            ins = [x for p, bs in c["connections"].items() if c["port_directions"].get(p) == "input" for x in bs]
            bit, seen = ins[0], seen + 1
        return port_of_bit.get(bit, f"net{bit}")

    # arrival (ns, levels, carry4s) at each comb cell output bit, memoized DFS over drivers
    memo = {}

    def arrival(bit):
        if bit in memo:
            return memo[bit]
        memo[bit] = (0.0, 0, 0, "in")  # cycle guard (combinational loops, e.g. ring oscillators)
        if bit not in drivers:
            r = (0.0, 0, 0, "in")     # top input or constant
        else:
            name, _ = drivers[bit]
            c = cells[name]
            k = _kind(c["type"])
            if k == "seq":
                cb = [b for p, bs in c["connections"].items() if p in CLOCK_PINS for b in bs if not isinstance(b, str)]
                r = (next((v for p, v in T_OUT.items() if c["type"].startswith(p)), T_CQ), 0, 0,
                     label(name, clock_name(cb[0])) if cb else "in")
            else:
                ins = [x for p, bs in c["connections"].items() if c["port_directions"].get(p) == "input"
                       for x in bs if not isinstance(x, str)]
                best = max((arrival(x) for x in ins), default=(0.0, 0, 0, "in"), key=lambda a: a[0])
                if k == "lut":
                    lut = 0 if c["type"].startswith("MUXF") else 1    # a MUXF rides with its LUTs
                    r = (best[0] + lut * T_LUT + (0.2 if not lut else 0), best[1] + lut, best[2], best[3])
                elif k == "carry":
                    r = (best[0] + T_CARRY, best[1], best[2] + 1, best[3])
                else:
                    r = best
        memo[bit] = r
        return r

    import sys
    sys.setrecursionlimit(1_000_000)
    worst = {}
    for name, c in cells.items():
        if _kind(c["type"]) != "seq":
            continue
        clk_bits = [b for p, bs in c["connections"].items() if p in CLOCK_PINS for b in bs if not isinstance(b, str)]
        if not clk_bits:
            continue
        clk = label(name, clock_name(clk_bits[0]))
        for p, bs in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p in CLOCK_PINS:
                continue
            for b in bs:
                if isinstance(b, str):
                    continue
                t, lv, cy, src = arrival(b)
                t += T_SU
                key = f"{src} -> {clk}"
                if key not in worst or t > worst[key]["ns"]:
                    worst[key] = {"ns": round(t, 2), "levels": lv, "carry4": cy, "to": f"{name}.{p}"}
    for w in worst.values():
        w["mhz"] = round(1000 / w["ns"], 1) if w["ns"] else 0.0
    return worst
