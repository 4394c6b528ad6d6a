"""The blocks from other parts of the gateware that the simulated Precursor carries, each a
function `fn(soc)` that adds it at the addresses map.py pins (PAGE_LOCS, REGIONS, IRQS), and
the source directories they are built from (part of the build cache key).

The engine goes here once its Wishbone adapter is on main."""

from __future__ import annotations

from pathlib import Path

GATEWARE = Path(__file__).resolve().parents[1]



def add_trng(soc):
    """The TRNG (gateware/trng: both register pages, health tests, conditioner) fed by the
    simulation noise source (trng.simsource.SimTrng), its pages and interrupts at
    spec/trng.toml's addresses. Power-on: Precursor's hardware turns the TRNG on by itself
    (the kernel's driver relies on it: it only polls the kernel port), so the adapter writes
    CONTROL.enable = 1 on the server page right after reset."""
    from trng.simsource import SimTrng
    from trng import spec as trng_spec

    from .pagebus import PageBusWishbone

    s = trng_spec.load()
    control = s.server.registers["CONTROL"]
    t = SimTrng(s)
    soc.submodules.trng = t
    pb = PageBusWishbone(t.trng, {"trng_server": t.trng.server_sel, "trng_kernel": t.trng.kernel_sel},
                         init=[("trng_server", control.offset, control.pack(enable=1))])
    soc.submodules.trng_pagebus = pb
    for name in ("trng_server", "trng_kernel"):
        soc.add_csr_page(name, pb.buses[name])
    soc.add_irq("trng_server", t.trng.irq_server)
    soc.add_irq("trng_kernel", t.trng.irq_kernel)


# fn(soc) for each block, in order
ALL: list = [add_trng]
# gateware/ subdirectories whose Python sources define those blocks
SOURCE_DIRS: list = ["trng", "common"]


# spec files those blocks are generated from
SPEC_FILES: list = ["trng.toml"]


def sources() -> list:
    out = [GATEWARE.parent / "spec" / f for f in SPEC_FILES]
    for d in SOURCE_DIRS:
        out += sorted(p for p in (GATEWARE / d).glob("*.py"))
    return out
