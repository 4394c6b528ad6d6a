"""The engine as a SoC peripheral: one or more engine builds (ISA v1, v2) behind one Wishbone
adapter at the spec's addresses, the spec's interrupt line, and Precursor's clocking.

Addresses (pinned, from spec/engine25519.toml): the CSR block at `csr.base` (one page of
`memory.page_size` bytes) and the memory window at `memory.base` (`memory.size` bytes). The
SoC test checks that the region map LiteX ends up with (csr.csv) equals them.

Clocking (Precursor): the CPU and the bus run at 100 MHz (`sys`), the engine's sequencer, CSR
block and memory window at half that (`eng`, the spec's `eng_clk_hz`), the field multiplier at
the CPU clock (`mul`, the spec's `mul_clk_hz`, the same clock as `sys`). The SoC drives `eng`
from its own clock (in simulation a second clocker, edges aligned with `sys`); the engine's
`sys` domain is renamed `eng`, its `mul` domain is left as is.

Several engines (a benchmark SoC carries v1 and v2): all sit at the same addresses and a LiteX
CSR `select` (index into `isas`) routes the bus and the interrupt to one of them. Change it
only while no access is in flight (firmware does it between jobs).
"""

from __future__ import annotations

from types import SimpleNamespace

from migen import Case, ClockDomainsRenamer, Module, Signal

from litex.soc.interconnect.csr import AutoCSR, CSRStorage

from engine import spec
from engine.csr import EngineBus

from .engine_wishbone import ENGINE_BUS_SIGNALS, EngineWishbone

# The CPU clock of Precursor's SoC (VexRiscv at 100 MHz). The engine's clocks are the spec's.
CPU_CLK_HZ = 100_000_000


def clocks(isas, cpu_hz: int | None = None) -> dict:
    """Clock frequencies of the SoC's domains, checked against the spec: sequencer (eng) at
    half the CPU clock, multiplier (mul) at the CPU clock, the same for every ISA built.

    `cpu_hz`: a board whose CPU (and so the engine) runs slower than Precursor's 100 MHz (an
    FPGA where the engine does not close timing at the spec's clocks, gateware/soc/board.py):
    the spec's ratios are kept (mul = CPU, eng = CPU / 2), the frequencies scale with the CPU."""
    S = spec.load()
    eng = {S.isas[i].eng_clk_hz for i in isas}
    mul = {S.isas[i].mul_clk_hz for i in isas}
    assert len(eng) == 1 and len(mul) == 1, "every engine build must share its clocks"
    eng, mul = eng.pop(), mul.pop()
    assert mul == CPU_CLK_HZ, f"multiplier clock {mul} Hz is not the CPU clock {CPU_CLK_HZ} Hz"
    assert 2 * eng == CPU_CLK_HZ, f"sequencer clock {eng} Hz is not half the CPU clock"
    if cpu_hz is not None and cpu_hz != CPU_CLK_HZ:
        assert cpu_hz % 2 == 0 and 0 < cpu_hz < CPU_CLK_HZ, f"board CPU clock {cpu_hz} Hz"
        return {"sys": cpu_hz, "eng": cpu_hz // 2, "mul": cpu_hz}
    return {"sys": CPU_CLK_HZ, "eng": eng, "mul": mul}


def regions() -> dict:
    """(origin, size) of the engine's two bus regions, from the spec."""
    S = spec.load()
    m = S.memory
    page = m["page_size"]
    assert max(r.offset for r in S.csr.registers.values()) + 4 <= page, "CSR block larger than a page"
    return {"engine_csr": (S.csr.base, page), "engine_mem": (m["base"], m["size"])}


class _Port:
    """The engine bus signals (a virtual target the adapter drives)."""

    def __init__(self):
        for name, width in (("csr_sel", 1), ("mem_sel", 1), ("adr", 32), ("we", 1), ("dat_w", 32),
                            ("stb", 1), ("ack", 1), ("dat_r", 32)):
            setattr(self, name, Signal(width, name=f"engine_port_{name}"))


class EnginePeripheral(Module, AutoCSR):
    def __init__(self, isas=("v1", "v2"), stock: bool = False, cpu_hz: int | None = None, target: str = "generic"):
        """`stock`: the v1 engine as shipped, bus defects included (engine.csr.EngineBus).
        `cpu_hz`: a board's slower CPU clock (see `clocks`). `target`: the FPGA the
        engine's datapath forms are for (engine/dsp.py: `ecp5` on an ECP5 board)."""
        isas = tuple(isas)
        assert isas and len(set(isas)) == len(isas), "one engine per ISA"
        self.isas = isas
        self.clock_hz = clocks(isas, cpu_hz)
        self.regions = regions()
        self.irq_line = spec.load().csr.irq
        self.engines = []
        for isa in isas:
            e = ClockDomainsRenamer({"sys": "eng"})(EngineBus(isa, stock=stock and isa == "v1", target=target))
            setattr(self.submodules, f"engine_{isa}", e)
            self.engines.append(e)

        port = _Port()
        (_, csr_size), (_, mem_size) = self.regions["engine_csr"], self.regions["engine_mem"]
        self.submodules.bridge = EngineWishbone(port, csr_size, mem_size, target_domain="eng")
        self.csr_bus = self.bridge.csr_bus
        self.mem_bus = self.bridge.mem_bus

        # LiteX's IRQ wiring looks for `ev.irq`
        self.ev = SimpleNamespace(irq=Signal())
        if len(isas) == 1:
            e = self.engines[0]
            self.comb += [getattr(e, n).eq(getattr(port, n)) for n in ENGINE_BUS_SIGNALS if n not in ("ack", "dat_r")]
            self.comb += [port.ack.eq(e.ack), port.dat_r.eq(e.dat_r), self.ev.irq.eq(e.irq)]
        else:
            self.select = CSRStorage(max(1, (len(isas) - 1).bit_length()), name="select",
                                     description="engine build on the bus: index into " + ", ".join(isas))
            sel = self.select.storage
            for k, e in enumerate(self.engines):
                on = Signal(name=f"engine_on_{isas[k]}")
                self.comb += on.eq((sel == k) | ((k == 0) & (sel >= len(isas))))
                self.comb += [getattr(e, n).eq(getattr(port, n)) for n in ("csr_sel", "mem_sel", "adr", "we", "dat_w")]
                self.comb += e.stb.eq(port.stb & on)
            route = {k: [port.ack.eq(e.ack), port.dat_r.eq(e.dat_r), self.ev.irq.eq(e.irq)]
                     for k, e in enumerate(self.engines)}
            route["default"] = route[0]  # unused codes read the first build (never a hung bus)
            self.comb += Case(sel, route)
