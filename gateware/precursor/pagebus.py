"""Wishbone slaves for blocks with the project's simple page bus (gateware/engine/csr.py and the
TRNG's register pages): per page a select line, and shared byte `adr` (offset in the page),
`we`, `dat_w`, level `stb` held until a one-cycle `ack` with `dat_r`, one access at a time, in
the bus clock domain.

    pb = PageBusWishbone(target, {"trng_server": target.server_sel, "trng_kernel": target.kernel_sel})
    soc.add_csr_page("trng_server", pb.buses["trng_server"])

Each page gets its own Wishbone slave (32-bit, word addressed); the SoC's decoder grants one at
a time. The access is passed through combinationally: `stb` follows the master's `cyc & stb`,
and the master's `ack` is the target's `ack`.

`init`: register writes `(page, offset, value)` the adapter performs itself right after reset,
before it serves the bus (a block's power-on configuration; the CPU is still in its ROM then:
it cannot reach the page before a handful of cycles have passed, and the adapter holds any
early access until the writes are done).
"""

from __future__ import annotations

from functools import reduce
from operator import or_

from migen import If, Module, Mux, Signal

from litex.soc.interconnect import wishbone


class PageBusWishbone(Module):
    def __init__(self, target, sels: dict, page_size: int = 0x1000, init=()):
        assert page_size & (page_size - 1) == 0
        self.buses = {name: wishbone.Interface(data_width=32) for name in sels}
        self.init_done = Signal(reset=not init)
        step = Signal(max=len(init) + 1)
        init_stb = Signal()
        self.comb += init_stb.eq(~self.init_done)
        self.sync += If(~self.init_done & target.ack,
            If(step == len(init) - 1, self.init_done.eq(1)).Else(step.eq(step + 1)))
        active = {name: Signal(name=f"{name}_active") for name in sels}
        for name, bus in self.buses.items():
            init_here = reduce(or_, [step == i for i, (p, _, _) in enumerate(init) if p == name], 0)
            self.comb += [
                active[name].eq(bus.cyc & bus.stb & self.init_done),
                sels[name].eq(active[name] | (init_stb & init_here)),
                bus.ack.eq(active[name] & target.ack),
                bus.dat_r.eq(target.dat_r),
            ]
        any_active = reduce(or_, active.values())
        adr, we, dat_w = target.adr, target.we, target.dat_w
        # the one active slave's access (the decoder grants one at a time)
        sel_adr = 0
        sel_we = 0
        sel_dat = 0
        for i, (page, offset, value) in enumerate(init):
            assert page in sels and 0 <= offset < page_size and offset % 4 == 0
            here = init_stb & (step == i)
            sel_adr = Mux(here, offset, sel_adr)
            sel_we = Mux(here, 1, sel_we)
            sel_dat = Mux(here, value, sel_dat)
        for name, bus in self.buses.items():
            sel_adr = Mux(active[name], (bus.adr << 2) & (page_size - 1), sel_adr)
            sel_we = Mux(active[name], bus.we, sel_we)
            sel_dat = Mux(active[name], bus.dat_w, sel_dat)
        self.comb += [
            target.stb.eq(any_active | init_stb),
            adr.eq(sel_adr),
            we.eq(sel_we),
            dat_w.eq(sel_dat),
        ]
