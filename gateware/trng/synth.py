"""Yosys `synth_xilinx -family xc7` resource report of the TRNG gateware blocks (Precursor's
XC7S50): the ChaCha20 conditioner and the SP 800-90B health tests (spec/trng.toml: `channels`
avalanche channels of 5-bit symbols and `cores` ring-oscillator cores of 1-bit symbols), and the
throughput figure `rtl_trng_words_per_kcycle` from a simulation of one port polled every cycle.

    python -m trng.synth --json OUT.json [--workdir DIR] [--check]

prints a table and writes flat JSON: synth_trng_luts, synth_trng_ffs (conditioner + health
tests), per-block counts (synth_trng_<block>_{luts,ffs,brams} for the raw FIFO, the excursion
test, the ring-oscillator and XADC front ends, the block (csr.TrngBus) and the whole: the block
with its front ends and the Wishbone adapter, one flattened run, TrngWhole), rtl_trng_words_per_kcycle, rtl_trng_cycles_per_block,
rtl_trng_max_invalid_run (default configuration) and rtl_trng_max_invalid_run_no_selfmix.

`--check` applies the block's acceptance rules (`check`) and exits 1 naming each one broken:
conditioner + health tests within LUT_BUDGET (5% of an XC7S50's LUTs), and, with self-mix off,
a reader polling one port never waiting longer than one block for a word.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from migen import Module

from common.yosys import stat

from . import spec as trng_spec
from .conditioner import CYCLES_PER_BLOCK, Conditioner
from .csr import TrngBus, count_bits
from .excursion import Excursion
from .fifo import RawFifo
from .runs import RunsTest
from .frontend_ro import RingOscillators
from .frontend_xadc import XadcAvalanche
from .health import HealthTests

XC7S50_LUTS = 32_600
# conditioner + health tests: at most 5% of Precursor's XC7S50
LUT_BUDGET = XC7S50_LUTS * 5 // 100


def check(out: dict) -> list[str]:
    """The acceptance rules broken by a report (`main`'s flat JSON): empty when it passes."""
    broken = []
    luts = out["synth_trng_luts"]
    if luts > LUT_BUDGET:
        broken.append(f"conditioner + health tests take {luts} LUTs, over the budget of {LUT_BUDGET} (5% of an XC7S50)")
    run, block = out["rtl_trng_max_invalid_run_no_selfmix"], out["rtl_trng_cycles_per_block"]
    if run > block:
        broken.append(f"a reader polling one port waited {run} cycles for a word, longer than one block ({block})")
    return broken


class TrngWhole(Module):
    """The whole TRNG as an FPGA carries it: the block (csr.TrngBus: conditioner, health tests,
    excursion tests, raw FIFOs, both register pages) fed by its FPGA front ends (the ring
    oscillators and the XADC avalanche channels, wired as SimTrng wires the simulation source)
    behind the SoC's Wishbone adapter (as soc.TrngPeripheral)."""

    def __init__(self, spec):
        from soc.engine_wishbone import EngineWishbone
        from .soc import PAGE, _EngineBusView
        self.submodules.trng = t = TrngBus(spec)
        av, ro = spec.health["av"], spec.health["ro"]
        self.submodules.ro = r = RingOscillators(ro["cores"], ro["rings_per_core"], ro["ring_stages"])
        assert len(t.av_s) == 2, "the XADC front end has two channels"
        self.submodules.xadc = x = XadcAvalanche(sample_bits=av["sample_bits"])
        self.comb += [
            r.enable.eq(t.fe_ro_en), r.powersave.eq(t.fe_powersave), r.need.eq(t.fe_need),
            *[getattr(r, k).eq(v) for k, v in t.fe_ro.items()],
            t.ro_bits.eq(r.bits), t.ro_valid.eq(r.valid),
            x.enable.eq(t.fe_av_en), t.av_s[0].eq(x.s0), t.av_s[1].eq(x.s1), t.av_valid.eq(x.valid),
        ]
        self.submodules.bridge = b = EngineWishbone(_EngineBusView(t), PAGE, PAGE)
        self.ios = set(b.csr_bus.flatten()) | set(b.mem_bus.flatten()) | {
            t.irq_server, t.irq_kernel, x.vauxp, x.vauxn}


class HealthWrap(Module):
    """One source's health tests with the block's wiring (see TrngBus)."""

    def __init__(self, spec, src):
        h = HealthTests(spec.health[src]["symbol_bits"], count_bits(spec))
        self.submodules.h = h
        self.comb += [h.apt_window.eq(spec.health[src]["apt_window"]), h.startup.eq(spec.health["startup_samples"])]
        self.ios = [h.sample, h.valid, h.clear, h.rct_cutoff, h.apt_cutoff, h.rct_fail, h.apt_fail, h.rct_latched,
                    h.apt_latched, h.ok, h.startup_done, h.apt_last_b, h.apt_window_done]


def throughput(reseed_interval: int, selfmix_interval: int, poison: int, blocks: int = 300) -> dict:
    """One port read every cycle for `blocks` blocks on the Verilated conditioner, steady state
    after seeding: words per 1000 cycles and the longest run of reads with valid = 0, with the
    default configuration (self-mix on) and with self-mix off."""
    from . import verilator as vl
    exe = vl.build(vl.CondTop(poison), "CondTop", "tb_conditioner.cpp")
    raw = [(0x9E37_79B9 * (i + 1)) & 0xFFFF_FFFF for i in range(64 + blocks // max(1, reseed_interval))]
    out = {}
    for tag, se in (("", True), ("_no_selfmix", False)):
        r = vl.run_conditioner(exe, raw, {}, (reseed_interval, selfmix_interval, se), 0, blocks * 16, poison)
        n, span = len(r["K"]), r["last"] - r["first"]
        if n != blocks * 16:
            raise SystemExit(f"throughput run delivered {n} of {blocks * 16} words")
        if tag == "":
            out["rtl_trng_words_per_kcycle"] = round((n - 1) * 1000 / span, 2)
        out[f"rtl_trng_max_invalid_run{tag}"] = r["maxinv"][0]
    out["rtl_trng_cycles_per_block"] = CYCLES_PER_BLOCK
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the flat JSON here")
    ap.add_argument("--workdir", type=Path, help="keep the Verilog and yosys logs here")
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 when conditioner + health tests exceed {LUT_BUDGET} LUTs or a polling reader waits longer than a block")
    args = ap.parse_args(argv)
    spec = trng_spec.load()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="trng-synth-"))
    work.mkdir(parents=True, exist_ok=True)

    c = Conditioner(poison=spec.constants["urandom_invalid"])
    cond_ios = [c.raw_valid, c.raw_data, c.raw_ready, c.reseed_interval, c.selfmix_interval, c.selfmix_ena,
                c.seed_we, c.seed_data, c.invalidate, c.seeded, c.busy]
    for p in c.ports:
        cond_ios += [p.rd, p.dout, p.valid]
    blocks = {"conditioner": stat(c, cond_ios, "trng_conditioner", work)}
    # the health tests as the block (csr.TrngBus) instantiates them: counters of count_bits, the
    # APT window and start-up length tied to the spec's values, cutoffs from the CSRs
    for src in ("av", "ro"):
        w = HealthWrap(spec, src)
        name = f"trng_health_{src}"
        blocks[f"health_{src}"] = stat(w, w.ios, name, work)
    n_av, n_ro = spec.health["av"]["channels"], spec.health["ro"]["cores"]
    health = {k: n_av * blocks["health_av"][k] + n_ro * blocks["health_ro"][k] for k in ("luts", "ffs", "brams", "dsps")}
    out = {
        "synth_trng_luts": blocks["conditioner"]["luts"] + health["luts"],
        "synth_trng_ffs": blocks["conditioner"]["ffs"] + health["ffs"],
        "synth_trng_conditioner_luts": blocks["conditioner"]["luts"],
        "synth_trng_conditioner_ffs": blocks["conditioner"]["ffs"],
        "synth_trng_health_luts": health["luts"],
        "synth_trng_health_ffs": health["ffs"],
    }
    # the rest of the block, reported beside the budget (not part of synth_trng_luts): one raw FIFO
    # (the block has two), one excursion test (one per AV channel), one runs test (one per RO
    # core), the FPGA front ends, and the
    # whole block (csr.TrngBus: everything above plus word assembly and both register pages)
    av, ro = spec.health["av"], spec.health["ro"]
    f = RawFifo(spec.constants["fifo_depth"], spec.constants["fifo_refill_below"], spec.constants["urandom_invalid"])
    extra = {"raw_fifo": (f, [f.we, f.din, f.re, f.flush, f.readable, f.writable, f.dout, f.level, f.wrcount, f.rdcount, f.want])}
    e = Excursion(av["sample_bits"], spec.server.registers["AV_EXCURSION0_CTRL"].fields["window"].width)
    extra["excursion"] = (e, [e.sample, e.valid, e.enable, e.clear, e.reset, e.window, e.cutoff, e.fail, e.latched,
                              e.ready, e.min, e.max, e.err_min, e.err_max])
    rr = spec.health["ro_runs"]
    u = RunsTest(rr["runs"], rr["count_bits"])
    extra["runs"] = (u, [u.bit, u.valid, u.enable, u.clear, u.window, *u.min, *u.max, u.count_read, *u.count, u.fresh,
                         u.failure, u.fail])
    r = RingOscillators(ro["cores"], ro["rings_per_core"], ro["ring_stages"])
    extra["ro_frontend"] = (r, [r.enable, r.powersave, r.need, r.dwell, r.delay, r.fuzz, r.oversampling, r.gang, r.bits, r.valid])
    x = XadcAvalanche(sample_bits=av["sample_bits"])
    extra["xadc_frontend"] = (x, [x.vauxp, x.vauxn, x.enable, x.s0, x.s1, x.valid])
    b = TrngBus(spec)
    extra["block"] = (b, b.ios)
    w = TrngWhole(spec)
    extra["whole"] = (w, w.ios)
    for name, (m, ios) in extra.items():
        blocks[name] = stat(m, ios, f"trng_{name}", work)
        for k in ("luts", "ffs", "brams"):
            out[f"synth_trng_{name}_{k}"] = blocks[name][k]
    out.update(throughput(spec.conditioner["reseed_interval"], spec.conditioner["selfmix_interval"], spec.constants["urandom_invalid"]))
    print(f"{'block':<28}{'LUTs':>8}{'FFs':>8}{'BRAMs':>7}{'DSPs':>6}")
    for k, v in blocks.items():
        print(f"{k:<28}{v['luts']:>8}{v['ffs']:>8}{v['brams']:>7}{v['dsps']:>6}")
    print(f"{'conditioner + health':<28}{out['synth_trng_luts']:>8}{out['synth_trng_ffs']:>8}"
          f"   ({100 * out['synth_trng_luts'] / XC7S50_LUTS:.1f}% of an XC7S50's LUTs)")
    print(f"one port polled every cycle: {out['rtl_trng_words_per_kcycle']} words/kcycle, "
          f"{CYCLES_PER_BLOCK} cycles/block, longest valid=0 run {out['rtl_trng_max_invalid_run']} cycles "
          f"({out['rtl_trng_max_invalid_run_no_selfmix']} with self-mix off)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    if args.check:
        broken = check(out)
        for b in broken:
            print(f"trng.synth --check: {b}", file=sys.stderr)
        if broken:
            return 1
        print(f"trng.synth --check: {out['synth_trng_luts']} LUTs within the budget of {LUT_BUDGET}; longest wait for a word "
              f"{out['rtl_trng_max_invalid_run_no_selfmix']} cycles with self-mix off, within one block ({CYCLES_PER_BLOCK})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
