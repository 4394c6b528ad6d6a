"""The blocks from other parts of the gateware that the simulated Precursor carries, each a
function `fn(soc)` that adds it at the addresses map.py pins (PAGE_LOCS, REGIONS, IRQS), and
the source directories they are built from (part of the build cache key).

"""

from __future__ import annotations

import os
from pathlib import Path

from . import map as pmap

GATEWARE = Path(__file__).resolve().parents[1]



# The engine build on the bus: Precursor's engine is ISA v1 (the `hw` backend drives v1 only).
ENGINE_ISA = os.environ.get("PRECURSOR_ENGINE_ISA", "v1")
# PRECURSOR_ENGINE_STOCK=1: the v1 engine as shipped, bus defects included (MPRESUME read-only
# and undriven, docs/reference-system.md defect 2); default: ours, with the defect fixed.
ENGINE_STOCK = os.environ.get("PRECURSOR_ENGINE_STOCK", "0")


def config() -> dict:
    """Everything besides source files that the blocks are built from (part of the cache key);
    the TRNG's health-test cutoffs are the software's own, from trng-core (trng.cutoffs)."""
    from trng.cutoffs import health_cutoffs

    if ENGINE_STOCK not in ("0", "1") or (ENGINE_STOCK == "1" and ENGINE_ISA != "v1"):
        raise ValueError(f"PRECURSOR_ENGINE_STOCK={ENGINE_STOCK!r} with PRECURSOR_ENGINE_ISA={ENGINE_ISA!r}: "
                         "expected 0, or 1 with the v1 engine (the shipped engine is v1)")
    return {"trng_cutoffs": health_cutoffs(), "engine_isa": ENGINE_ISA, "engine_stock": ENGINE_STOCK == "1"}


def engine_regs() -> list:
    """The engine page's register map for the SVD (spec/engine25519.toml `[csr]`)."""
    import tomllib

    from .svd import Field, Reg

    with open(pmap.SPEC / "engine25519.toml", "rb") as f:
        csr = tomllib.load(f)["csr"]
    return [Reg(r["name"], r["offset"], tuple(Field(f["name"], f["lsb"], f["width"], f.get("description", "")) for f in r["fields"]),
                0, r.get("description", "")) for r in csr["registers"]]


def trng_regs(page, bindings) -> list:
    """A TRNG page's register map for the SVD (spec/trng.toml), each register's reset value from
    the gateware's own storage (the Migen reset of every "rw" / "rwstrobe" field)."""
    from .svd import Field, Reg

    out = []
    for r in page.by_offset():
        reset = 0
        for f in r.fields.values():
            b = bindings[(r.name, f.name)]
            if b[0] in ("rw", "rwstrobe"):
                reset |= (b[1].reset.value & ((1 << f.width) - 1)) << f.lsb
        out.append(Reg(r.name, r.offset, tuple(Field(f.name, f.lsb, f.width) for f in r.fields.values()), reset))
    return out


def add_engine(soc, cfg):
    """The engine (gateware/engine, one ISA build) behind its Wishbone adapter
    (soc.engine.EnginePeripheral, gateware/soc): the CSR page at spec/engine25519.toml's
    `csr.base`, the memory window at `memory.base`, its interrupt line. Precursor's clocking:
    the sequencer, CSR block and window run at half the CPU clock (`eng`, a second simulation
    clock with edges aligned to `sys`), the multiplier at the CPU clock (`mul` = `sys`)."""
    from migen import ClockDomain, ClockSignal, ResetSignal
    from soc.engine import EnginePeripheral

    e = EnginePeripheral((cfg["engine_isa"],), stock=cfg.get("engine_stock", False))
    assert e.clock_hz["sys"] == soc.clk_freq, f"engine clocks {e.clock_hz} need a {e.clock_hz['sys']} Hz CPU"
    assert e.regions["engine_csr"][0] == pmap.CSR_BASE + pmap.PAGE_LOCS["engine"] * pmap.CSR_PAGING
    assert e.regions["engine_mem"] == pmap.REGIONS["engine_mem"]
    soc.submodules.engine = e
    soc.clock_domains.cd_eng = ClockDomain()
    soc.clock_domains.cd_mul = ClockDomain()
    soc.comb += [
        soc.cd_eng.clk.eq(soc.platform.request("eng_clk")),
        soc.cd_eng.rst.eq(ResetSignal("sys")),
        soc.cd_mul.clk.eq(ClockSignal("sys")),
        soc.cd_mul.rst.eq(ResetSignal("sys")),
    ]
    soc.add_csr_page("engine", e.csr_bus, engine_regs())
    soc.add_bus_region("engine_mem", e.mem_bus)
    # through the simulation's fault injector (simfault ENGINE_IRQ_DROP: interrupts that never
    # arrive, docs/sim.md); untouched, the line passes as is
    from types import SimpleNamespace
    from .peripherals import IrqDropper
    f = soc.simfault
    drop = IrqDropper(e.ev.irq, f.engine_irq_drop.storage, f.engine_irq_drop.re)
    soc.submodules.engine_irq_drop = drop
    soc.comb += f.engine_irq_left.status.eq(drop.left)
    # LiteX wires each pinned IRQ from its module's `ev.irq` by itself: that must be the
    # injector's output too, or the engine's own line would drive the CPU beside it
    e.ev = SimpleNamespace(irq=drop.out)
    soc.add_irq("engine", drop.out)
    soc.extra_clocks["eng_clk"] = e.clock_hz["eng"]



def add_trng(soc, cfg):
    """The TRNG (gateware/trng: both register pages, health tests, conditioner) fed by the
    simulation noise source (trng.simsource.SimTrng), its pages and interrupts at
    spec/trng.toml's addresses. Power-on: Precursor's hardware turns the TRNG on by itself,
    with working health-test cutoffs (the kernel's driver relies on it: it only polls the
    kernel port), while this block resets disabled with zero cutoffs; so the adapter writes,
    right after reset, the software's cutoffs (AV_NIST, RO_NIST) and CONTROL.enable = 1 on the
    server page. The TRNG server reprograms them when it starts."""
    from trng.simsource import SimTrng
    from trng import spec as trng_spec

    from .pagebus import PageBusWishbone

    s = trng_spec.load()
    regs = s.server.registers
    cut = cfg["trng_cutoffs"]
    init = [("trng_server", regs[r].offset, regs[r].pack(repcount_cutoff=cut[fam][0], adaptive_cutoff=cut[fam][1]))
            for r, fam in (("AV_NIST", "av"), ("RO_NIST", "ro"))]
    init.append(("trng_server", regs["CONTROL"].offset, regs["CONTROL"].pack(enable=1)))
    t = SimTrng(s)
    soc.submodules.trng = t
    pb = PageBusWishbone(t.trng, {"trng_server": t.trng.server_sel, "trng_kernel": t.trng.kernel_sel}, init=init)
    soc.submodules.trng_pagebus = pb
    for name, page, bindings in (("trng_server", s.server, t.trng.server_bindings), ("trng_kernel", s.kernel, t.trng.kernel_bindings)):
        soc.add_csr_page(name, pb.buses[name], trng_regs(page, bindings))
    soc.add_irq("trng_server", t.trng.irq_server)
    soc.add_irq("trng_kernel", t.trng.irq_kernel)


def add_tester(soc, cfg):
    """The TRNG tester's mailbox and host bridge (tester.py, in this package)."""
    from .tester import add_tester as add
    add(soc, cfg)


# fn(soc, config()) for each block, in order
ALL: list = [add_trng, add_engine, add_tester]
# gateware/ subdirectories whose Python sources define those blocks
SOURCE_DIRS: list = ["trng", "common", "engine", "soc"]


# spec files those blocks are generated from
SPEC_FILES: list = ["trng.toml", "engine25519.toml"]


def sources() -> list:
    out = [GATEWARE.parent / "spec" / f for f in SPEC_FILES]
    for d in SOURCE_DIRS:
        out += sorted(p for p in (GATEWARE / d).glob("*.py"))
    return out
