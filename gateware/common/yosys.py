"""yosys `synth_xilinx -family xc7` resource counts of a Migen module (shared by the gateware
blocks): LUTs (distributed RAM counted in LUTs), FFs, BRAMs (RAMB18 = 0.5, RAMB36 = 1), DSPs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from migen.fhdl.verilog import convert

from . import meminit


def stat(module, ios, name: str, workdir: Path, timeout: int = 1200) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    v = workdir / f"{name}.v"
    v.write_text(meminit.verilog(convert(module, ios=set(ios), name=name)))
    log = workdir / f"{name}.yosys.log"
    script = f"read_verilog {v}; synth_xilinx -family xc7 -top {name} -flatten; stat"
    r = subprocess.run(["yosys", "-q", "-l", str(log), "-p", script], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"yosys failed on {name}: {r.stderr[-2000:]}")
    text = log.read_text()
    s = text[text.rfind("Printing statistics"):]
    cells = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", s, re.M)}
    luts = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    luts += sum(n * (4 if c.startswith(("RAM32M", "RAM64M")) else 1) for c, n in cells.items()
                if c.startswith("RAM") and not c.startswith("RAMB"))
    ffs = sum(n for c, n in cells.items() if re.fullmatch(r"FD[RSCP]E(_1)?", c))
    brams = sum(n * (0.5 if "18" in c else 1) for c, n in cells.items() if c.startswith("RAMB"))
    dsps = sum(n for c, n in cells.items() if c.startswith("DSP48"))
    return {"luts": luts, "ffs": ffs, "brams": brams, "dsps": dsps}
