"""Verilator runs of the TRNG blocks: Migen -> Verilog -> a C++ test bench (gateware/trng/sim/)
that runs a whole case natively (hundreds of thousands of cycles per case, too many for a
per-cycle Python driver), compiled once per design and cached by content hash in the shared
gateware build directory (gateware/common/verilator.py: `build_dir()`, warning flags). The
benches follow the same protocol as the Migen benches in harness.py, so one test runs a case on
both simulators and compares each with the software's vectors.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from migen import Module, Signal
from migen.fhdl.verilog import convert

from common.verilator import WARN, build_dir

from .conditioner import Conditioner
from .health import HealthTests

SIM_DIR = Path(__file__).resolve().parent / "sim"


class CondTop(Module):
    """The conditioner with flat, named ports (k_* kernel port, s_* server port)."""

    def __init__(self, poison):
        self.submodules.c = c = Conditioner(poison=poison)
        self.raw_valid = Signal(name="raw_valid")
        self.raw_data = Signal(32, name="raw_data")
        self.raw_ready = Signal(name="raw_ready")
        self.reseed_interval = Signal(12, name="reseed_interval")
        self.selfmix_interval = Signal(16, name="selfmix_interval")
        self.selfmix_ena = Signal(name="selfmix_ena")
        self.seed_we = Signal(name="seed_we")
        self.seed_data = Signal(32, name="seed_data")
        self.comb += [
            c.raw_valid.eq(self.raw_valid), c.raw_data.eq(self.raw_data), self.raw_ready.eq(c.raw_ready),
            c.reseed_interval.eq(self.reseed_interval), c.selfmix_interval.eq(self.selfmix_interval),
            c.selfmix_ena.eq(self.selfmix_ena), c.seed_we.eq(self.seed_we), c.seed_data.eq(self.seed_data),
        ]
        self.ios = {self.raw_valid, self.raw_data, self.raw_ready, self.reseed_interval, self.selfmix_interval,
                    self.selfmix_ena, self.seed_we, self.seed_data}
        for tag, p in (("k", c.kport), ("s", c.sport)):
            rd, valid = Signal(name=f"{tag}_rd"), Signal(name=f"{tag}_valid")
            dout, word = Signal(32, name=f"{tag}_dout"), Signal(32, name=f"{tag}_word")
            self.comb += [p.rd.eq(rd), valid.eq(p.valid), dout.eq(p.dout), word.eq(p.word)]
            self.ios |= {rd, valid, dout, word}


class HealthTop(Module):
    def __init__(self, symbol_bits):
        self.submodules.h = h = HealthTests(symbol_bits)
        names = ["sample", "valid", "rct_cutoff", "apt_cutoff", "apt_window", "startup", "rct_fail", "apt_fail", "startup_done"]
        self.ios = set()
        for n in names:
            inner = getattr(h, n)
            outer = Signal(len(inner), name=n)
            self.comb += (outer.eq(inner) if n in ("rct_fail", "apt_fail", "startup_done") else inner.eq(outer))
            self.ios.add(outer)


def build(top: Module, name: str, tb: str) -> Path:
    """Verilog for `top` (module `name`) + sim/`tb`, compiled with Verilator; returns the binary."""
    verilog = str(convert(top, ios=top.ios, name=name))
    tb_src = (SIM_DIR / tb).read_text()
    key = hashlib.sha256((verilog + tb_src).encode()).hexdigest()[:16]
    out = build_dir() / "trng" / f"{name}-{key}"
    exe = out / "obj_dir" / f"V{name}"
    if exe.is_file():
        return exe
    if shutil.which("verilator") is None:
        raise RuntimeError("verilator not found (xtask installs it: apt-get install verilator)")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.v").write_text(verilog)
    shutil.copy(SIM_DIR / tb, out / tb)
    cmd = ["verilator", "--cc", "--exe", "--build", "-O2", *WARN, "--top-module", name,
           "-CFLAGS", "-O2", f"{name}.v", tb, "-o", f"V{name}"]
    r = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not exe.is_file():
        raise RuntimeError(f"verilator build of {name} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return exe


def run_conditioner(exe: Path, raw, seeds, cfg, pattern: int, want: int, poison: int, max_cycles=2_000_000) -> dict:
    ri, si, se = cfg
    seed_list = [(j, w) for j, ws in sorted(seeds.items()) for w in ws]
    text = f"{ri} {si} {int(se)} {want} {pattern} {max_cycles} {poison}\n{len(raw)} {' '.join(map(str, raw))}\n"
    text += f"{len(seed_list)} " + " ".join(f"{j} {w}" for j, w in seed_list) + "\n"
    r = subprocess.run([str(exe)], input=text, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{exe.name} exited {r.returncode}: {r.stderr[-2000:]}")
    res = {"K": [], "S": [], "held": [None, None]}
    for line in r.stdout.splitlines():
        tag, *vals = line.split()
        if tag in ("K", "S"):
            res[tag].append(int(vals[0]))
        elif tag in ("HELDK", "HELDS"):
            res["held"][tag == "HELDS"] = int(vals[0])
        elif tag == "MAXINV":
            res["maxinv"] = [int(v) for v in vals]
        else:
            res[tag.lower()] = int(vals[0])
    return res


def run_health(exe: Path, case) -> tuple[list, bool]:
    mask = (1 << case.symbol_bits) - 1
    text = f"{case.rct_cutoff} {case.apt_cutoff} {case.apt_window} {case.startup} {len(case.samples)} "
    text += " ".join(str(s & mask) for s in case.samples) + "\n"
    r = subprocess.run([str(exe)], input=text, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{exe.name} exited {r.returncode}: {r.stderr[-2000:]}")
    events, done = [], False
    for line in r.stdout.splitlines():
        p = line.split()
        if p[0] == "F":
            events.append((int(p[1]), p[2]))
        elif p[0] == "STARTUP":
            done = p[1] == "1"
    return events, done
