"""The TRNG as a SoC peripheral of the benchmark SoC (gateware/soc): the block fed by the
simulation noise source (simsource.SimTrng) behind the SoC's Wishbone adapter for the engine's
simple bus (soc.engine_wishbone.EngineWishbone: its CSR slave carries the server page, its memory
slave the kernel page), at spec/trng.toml's bases with its interrupt lines:

    server page  [regs.server] base (one 4 KiB page), irq [regs.server] irq
    kernel page  [regs.kernel] base (one 4 KiB page), irq [regs.kernel] irq

Added to a BenchSoC with `soc.soc.BenchSoC(peripherals=[add_trng])`; the SoC test checks that
the region map and interrupt numbers LiteX ends up with (csr.csv) are the spec's.
"""

from __future__ import annotations

from types import SimpleNamespace

from migen import Module

from . import spec as trng_spec
from .simsource import SimTrng

PAGE = 0x1000


def regions(s=None) -> dict:
    """(origin, size) of the two register pages, from the spec."""
    s = s or trng_spec.load()
    for p in (s.server, s.kernel):
        assert max(r.offset for r in p.registers.values()) + 4 <= PAGE, f"{p.name} page larger than 4 KiB"
    return {"trng_server": (s.server.base, PAGE), "trng_kernel": (s.kernel.base, PAGE)}


class _EngineBusView:
    """The TRNG bus under the engine bus's signal names (server page = csr, kernel page = mem)."""

    def __init__(self, t):
        self.csr_sel, self.mem_sel = t.server_sel, t.kernel_sel
        self.adr, self.we, self.dat_w, self.stb, self.ack, self.dat_r = t.adr, t.we, t.dat_w, t.stb, t.ack, t.dat_r


class RingOscillatorTrng(Module):
    """The TRNG block fed by its ring-oscillator front end in an FPGA's own primitives
    (frontend_ro.RingOscillators, `family`), wired as TrngWhole (synth.py) wires it. The
    avalanche inputs are idle (no XADC and no avalanche generator on the board): `av_valid`
    never rises, so the avalanche health tests and excursion tests see no samples."""

    def __init__(self, s, family: str):
        from .csr import TrngBus
        from .frontend_ro import RingOscillators
        self.submodules.trng = t = TrngBus(s)
        ro = s.health["ro"]
        self.submodules.ro = r = RingOscillators(ro["cores"], ro["rings_per_core"], ro["ring_stages"], family=family)
        self.comb += [
            r.enable.eq(t.fe_ro_en), r.powersave.eq(t.fe_powersave), r.need.eq(t.fe_need),
            *[getattr(r, k).eq(v) for k, v in t.fe_ro.items()],
            t.ro_bits.eq(r.bits), t.ro_valid.eq(r.valid), t.av_valid.eq(0),
        ] + [a.eq(0) for a in t.av_s]


class TrngPeripheral(Module):
    def __init__(self, source: str = "sim"):
        """`source`: "sim" (the simulation noise source, simsource.SimTrng: Verilator) or an FPGA
        family's ring oscillators ("ecp5", "xc7": RingOscillatorTrng)."""
        from soc.engine_wishbone import EngineWishbone
        s = trng_spec.load()
        self.regions = regions(s)
        self.irqs = {"trng_server": s.server.irq, "trng_kernel": s.kernel.irq}
        if source == "sim":
            self.submodules.sim = src = SimTrng(s)
        else:
            self.submodules.ro_trng = src = RingOscillatorTrng(s, source)
        t = src.trng
        self.submodules.bridge = EngineWishbone(_EngineBusView(t), PAGE, PAGE)
        self.server_bus, self.kernel_bus = self.bridge.csr_bus, self.bridge.mem_bus
        # LiteX's IRQ wiring looks for `<soc attribute named like the interrupt>.ev.irq`
        self.irq_server = SimpleNamespace(ev=SimpleNamespace(irq=t.irq_server))
        self.irq_kernel = SimpleNamespace(ev=SimpleNamespace(irq=t.irq_kernel))


def add_trng(soc, source: str = "sim") -> TrngPeripheral:
    """BenchSoC peripheral hook: the TRNG beside the engine, at the spec's bases and IRQs
    (`source`: see TrngPeripheral)."""
    from litex.soc.integration.soc import SoCRegion
    p = TrngPeripheral(source)
    soc.trng = p
    for name, bus in (("trng_server", p.server_bus), ("trng_kernel", p.kernel_bus)):
        origin, size = p.regions[name]
        soc.bus.add_slave(name, bus, SoCRegion(origin=origin, size=size, cached=False))
    setattr(soc, "trng_server", p.irq_server)
    setattr(soc, "trng_kernel", p.irq_kernel)
    for name, n in p.irqs.items():
        soc.irq.add(name, n=n)
    return p
