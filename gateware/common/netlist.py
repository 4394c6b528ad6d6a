"""Post-synthesis simulation: a Migen module synthesized by yosys (`synth_xilinx -family xc7
-flatten`, the same flow as the area figures), its gate-level netlist of xc7 primitives (LUTs,
CARRY4, FDRE, RAMB18E1/RAMB36E1, DSP48E1, ...) simulated on Verilator with yosys's own
simulation models of those primitives (`share/xilinx/cells_sim.v`), behind the same C harness
and Python API as the RTL (common/verilator.py):

    sim = netlist.build(module, ios, "engine_v2", clocks={"sys": 2, "mul": 1})

The netlist is cached next to the Verilator builds, keyed by a hash of the RTL and the yosys
version (an unchanged design is never resynthesized).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from . import verilator, xc7_bram, yosys


def cells_sim() -> Path:
    """yosys's simulation models of the xc7 primitives (from the installed yosys)."""
    yosys_bin = shutil.which("yosys")
    if not yosys_bin:
        raise FileNotFoundError("yosys not found (apt package yosys)")
    # <prefix>/bin/yosys -> <prefix>/share/yosys (Debian: /usr/share/yosys)
    p = Path(yosys_bin).resolve().parent.parent / "share" / "yosys" / "xilinx" / "cells_sim.v"
    if not p.is_file():
        raise FileNotFoundError(f"yosys's xc7 simulation models not found at {p}")
    return p


def synthesize(module, ios, name: str) -> tuple[str, list, dict]:
    """(netlist Verilog, ports, resource counts) of the module, cached."""
    v = yosys.verilog_of(module, ios, name)
    ports = verilator._ports(v, ios)
    ver = subprocess.run(["yosys", "-V"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256((v + ver + Path(yosys.__file__).read_text()).encode()).hexdigest()[:16]
    d = verilator.build_dir() / f"netlist-{name}-{key}"
    net = d / f"{name}.netlist.v"
    if not net.is_file():
        tmp = d.with_name(d.name + ".tmp")
        res = yosys.synth(v, name, tmp, netlist=tmp / net.name)
        (tmp / "counts.txt").write_text(repr(res))
        try:
            tmp.rename(d)
        except OSError:
            pass
    import ast
    return net.read_text(), ports, ast.literal_eval((d / "counts.txt").read_text())


def library() -> Path:
    """yosys's xc7 models with the block RAMs' behavioural models (common/xc7_bram.py) in place of
    yosys's behaviour-less RAMB18E1 / RAMB36E1; written once per content."""
    text = xc7_bram.strip(cells_sim().read_text()) + xc7_bram.models()
    return verilator.write_once(verilator.build_dir(), "xc7_cells_sim", text)


def build(module, ios, name: str, clocks: dict | None = None, jobs: int = 2) -> verilator.VSim:
    net, ports, _ = synthesize(module, ios, name)
    xc7_bram.check(net)
    # the primitives' models use timing checks and initial blocks Verilator accepts with these
    flags = ("-Wno-STMTDLY", "-Wno-IMPLICIT", "-Wno-PINCONNECTEMPTY", "-Wno-DECLFILENAME",
             "-Wno-CASEX", "-Wno-REALCVT", "-Wno-MULTITOP", "--converge-limit", "2000")
    return verilator.build_verilog(net, ports, name, clocks, jobs, libraries=(library(),), flags=flags)
