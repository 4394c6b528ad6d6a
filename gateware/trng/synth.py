"""Yosys `synth_xilinx -family xc7` resource report of the TRNG gateware blocks (Precursor's
XC7S50): the ChaCha20 conditioner and the SP 800-90B health tests (two avalanche channels of
5-bit symbols and one ring-oscillator channel of 1-bit symbols, as in spec/trng.toml), and the
throughput figure `rtl_trng_words_per_kcycle` from a simulation of one port polled every cycle.

    python -m trng.synth --json OUT.json [--workdir DIR]

prints a table and writes flat JSON: synth_trng_luts, synth_trng_ffs (conditioner + health
tests), per-block counts, rtl_trng_words_per_kcycle, rtl_trng_cycles_per_block,
rtl_trng_max_invalid_run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from migen import run_simulation
from migen.fhdl.verilog import convert

from . import spec as trng_spec
from .conditioner import CYCLES_PER_BLOCK, Conditioner
from .harness import ConditionerBench
from .health import HealthTests

XC7S50_LUTS = 32_600


def verilog(module, ios, name, out: Path) -> Path:
    path = out / f"{name}.v"
    convert(module, ios=set(ios), name=name).write(str(path))
    return path


def yosys_stat(v: Path, top: str, workdir: Path, timeout: int = 900) -> dict:
    log = workdir / f"{top}.yosys.log"
    script = f"read_verilog {v}; synth_xilinx -family xc7 -top {top} -flatten; stat"
    r = subprocess.run(["yosys", "-q", "-l", str(log), "-p", script], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit(f"yosys failed on {top}: {r.stderr[-2000:]}")
    text = log.read_text()
    stat = text[text.rfind("Printing statistics"):]
    cells = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", stat, re.M)}
    luts = sum(n for c, n in cells.items() if re.fullmatch(r"LUT[1-6]", c))
    # distributed RAM counts against the LUT budget (one LUT per 32x1 / 64x1 cell, per the primitive)
    luts += sum(n * (4 if c.startswith("RAM32M") or c.startswith("RAM64M") else 1) for c, n in cells.items() if c.startswith("RAM") and "B" not in c)
    ffs = sum(n for c, n in cells.items() if re.fullmatch(r"FD[RSCP]E(_1)?", c))
    brams = sum(n for c, n in cells.items() if c.startswith("RAMB"))
    dsps = sum(n for c, n in cells.items() if c.startswith("DSP48"))
    return {"luts": luts, "ffs": ffs, "brams": brams, "dsps": dsps}


def throughput(reseed_interval: int) -> dict:
    """Words per 1000 cycles on one port read every cycle, in steady state after seeding."""
    raw = [(0x9E37_79B9 * (i + 1)) & 0xFFFF_FFFF for i in range(400)]
    dut = Conditioner(poison=trng_spec.load().constants["urandom_invalid"])
    want = 16 * 24
    b = ConditionerBench(dut, raw, {}, (reseed_interval, 64, True), pattern=lambda c: (True, False), want=want, max_cycles=200_000)
    run_simulation(dut, b.process())
    log = b.logs[0]
    span = b.last_word_cycle - b.first_word_cycle
    return {
        "rtl_trng_words_per_kcycle": round((len(log.words) - 1) * 1000 / span, 2),
        "rtl_trng_cycles_per_block": CYCLES_PER_BLOCK,
        "rtl_trng_max_invalid_run": log.max_invalid_run,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the flat JSON here")
    ap.add_argument("--workdir", type=Path, help="keep the Verilog and yosys logs here")
    args = ap.parse_args(argv)
    spec = trng_spec.load()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="trng-synth-"))
    work.mkdir(parents=True, exist_ok=True)

    c = Conditioner(poison=spec.constants["urandom_invalid"])
    cond_ios = [c.raw_valid, c.raw_data, c.raw_ready, c.reseed_interval, c.selfmix_interval, c.selfmix_ena,
                c.seed_we, c.seed_data, c.invalidate, c.seeded, c.busy]
    for p in c.ports:
        cond_ios += [p.rd, p.dout, p.valid]
    blocks = {"conditioner": yosys_stat(verilog(c, cond_ios, "trng_conditioner", work), "trng_conditioner", work)}
    for src in ("av", "ro"):
        h = HealthTests(spec.health[src]["symbol_bits"])
        ios = [h.sample, h.valid, h.clear, h.rct_cutoff, h.apt_cutoff, h.apt_window, h.startup, h.rct_fail, h.apt_fail,
               h.rct_latched, h.apt_latched, h.ok, h.rct_failures, h.apt_failures]
        name = f"trng_health_{src}"
        blocks[f"health_{src}"] = yosys_stat(verilog(h, ios, name, work), name, work)
    # two avalanche channels and one ring oscillator
    health = {k: 2 * blocks["health_av"][k] + blocks["health_ro"][k] for k in ("luts", "ffs", "brams", "dsps")}
    out = {
        "synth_trng_luts": blocks["conditioner"]["luts"] + health["luts"],
        "synth_trng_ffs": blocks["conditioner"]["ffs"] + health["ffs"],
        "synth_trng_conditioner_luts": blocks["conditioner"]["luts"],
        "synth_trng_conditioner_ffs": blocks["conditioner"]["ffs"],
        "synth_trng_health_luts": health["luts"],
        "synth_trng_health_ffs": health["ffs"],
    }
    out.update(throughput(spec.conditioner["reseed_interval"]))
    print(f"{'block':<28}{'LUTs':>8}{'FFs':>8}{'BRAMs':>7}{'DSPs':>6}")
    for k, v in blocks.items():
        print(f"{k:<28}{v['luts']:>8}{v['ffs']:>8}{v['brams']:>7}{v['dsps']:>6}")
    print(f"{'conditioner + 3 health':<28}{out['synth_trng_luts']:>8}{out['synth_trng_ffs']:>8}"
          f"   ({100 * out['synth_trng_luts'] / XC7S50_LUTS:.1f}% of an XC7S50's LUTs)")
    print(f"one port polled every cycle: {out['rtl_trng_words_per_kcycle']} words/kcycle, "
          f"{CYCLES_PER_BLOCK} cycles/block, longest valid=0 run {out['rtl_trng_max_invalid_run']} cycles")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
