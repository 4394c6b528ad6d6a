"""yosys `synth_xilinx -family xc7` of a Migen module or a Verilog text (shared by the gateware
blocks): resource counts (LUTs, distributed RAM counted in LUTs; FFs; BRAMs, RAMB18 = 0.5,
RAMB36 = 1; DSPs), optionally the gate-level netlist (for post-synthesis simulation:
common/netlist.py) and a logic-depth report per clock domain (common/depth.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from migen.fhdl.verilog import convert

from . import meminit


def verilog_of(module, ios, name: str) -> str:
    """The module's Verilog as simulated (memory initialisations inlined)."""
    return meminit.verilog(convert(module, ios=set(ios), name=name))


def counts(log_text: str) -> dict:
    """Resource counts from the last `stat` of a yosys log (the flattened top)."""
    s = log_text[log_text.rfind("Printing statistics"):]
    cells = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", s, re.M)}
    luts = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    luts += sum(n * (4 if c.startswith(("RAM32M", "RAM64M")) else 1) for c, n in cells.items()
                if c.startswith("RAM") and not c.startswith("RAMB"))
    ffs = sum(n for c, n in cells.items() if re.fullmatch(r"FD[RSCP]E(_1)?", c))
    brams = sum(n * (0.5 if "18" in c else 1) for c, n in cells.items() if c.startswith("RAMB"))
    dsps = sum(n for c, n in cells.items() if c.startswith("DSP48"))
    return {"luts": luts, "ffs": ffs, "brams": brams, "dsps": dsps}


def synth(v: str, name: str, workdir: Path, netlist: Path | None = None, timeout: int = 1800,
          json_netlist: Path | None = None) -> dict:
    """Synthesize the Verilog text `v` (top `name`) for xc7, flattened; resource counts. With
    `netlist`, also write the gate-level netlist there (yosys's xc7 primitives, no attributes)."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"{name}.v"
    src.write_text(v)
    log = workdir / f"{name}.yosys.log"
    script = f"read_verilog {src}; synth_xilinx -family xc7 -top {name} -flatten; stat"
    if json_netlist is not None:
        script += f"; write_json {json_netlist}"
    if netlist is not None:
        # single-bit nets: a multi-bit wire whose bits feed each other (carry chains) is a false
        # combinational loop to a simulator that orders whole variables
        script += f"; splitnets; write_verilog -noattr {netlist}"
    r = subprocess.run(["yosys", "-q", "-l", str(log), "-p", script], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        tail = log.read_text()[-2000:] if log.is_file() else ""
        raise RuntimeError(f"yosys failed on {name} (log {log}):\n{r.stderr[-2000:]}\n{tail}")
    return counts(log.read_text())


def stat(module, ios, name: str, workdir: Path, timeout: int = 1800, json_netlist: Path | None = None) -> dict:
    return synth(verilog_of(module, ios, name), name, workdir, timeout=timeout, json_netlist=json_netlist)
