"""Wishbone adapter for the engine's simple bus (gateware/engine/csr.py: `csr_sel`/`mem_sel`,
byte `adr`, `we`, `dat_w`, level `stb` until a one-cycle `ack` with `dat_r`).

Two LiteX Wishbone slaves (32-bit, word addressed, classic cycles), one per address region: the
CSR block and the memory window. Each slave passes the byte offset inside its region
(`adr` modulo the region size, regions aligned to their size). One access at a time; when both
slaves are addressed in the same cycle the CSR block goes first.

The target may run in another clock domain (`target_domain`) whose clock is *related* to the
bus clock: rising edges aligned, as clocks from one PLL are (on Precursor the engine's eng_clk
is half the CPU clock). The crossing is a four-phase handshake on registered signals:

    bus domain:     latch the access, raise `req`  ... wait `done` ... ack the master, drop `req`
                    ... wait until `done` falls
    target domain:  `stb` = req & ~done; on the target's `ack` latch `dat_r`, raise `done`;
                    when `req` has fallen, drop `done`

Both sides only sample registers of the other side on their own edges, and those registers
change on aligned edges, so the crossing is exact with no synchronizer. With
`target_domain == "sys"` (the same clock) the same logic works and costs the same handshake.
"""

from __future__ import annotations

from migen import If, Module, Mux, Signal

from litex.soc.interconnect import wishbone

ENGINE_BUS_SIGNALS = ("csr_sel", "mem_sel", "adr", "we", "dat_w", "stb", "ack", "dat_r")


class EngineWishbone(Module):
    def __init__(self, target, csr_size: int, mem_size: int, target_domain: str = "sys"):
        for name in ENGINE_BUS_SIGNALS:
            assert hasattr(target, name), f"target lacks the engine bus signal {name}"
        for size in (csr_size, mem_size):
            assert size >= 4 and size & (size - 1) == 0, "region sizes must be powers of two"
        self.csr_bus = wishbone.Interface(data_width=32)
        self.mem_bus = wishbone.Interface(data_width=32)

        # ---- bus domain (sys): pick an access, latch it, hold `req` until the target is done
        req = Signal()
        sel_csr = Signal()
        adr = Signal(32)
        we = Signal()
        dat_w = Signal(32)
        done = Signal()          # target domain register
        dat_r = Signal(32)       # target domain register
        self.busy = Signal()     # an access is in flight (for tests)

        c, m = self.csr_bus, self.mem_bus
        c_req = c.cyc & c.stb
        m_req = m.cyc & m.stb
        c_off = Signal(32)
        m_off = Signal(32)
        self.comb += [
            c_off.eq((c.adr << 2) & (csr_size - 1)),
            m_off.eq((m.adr << 2) & (mem_size - 1)),
        ]
        # 0 idle, 1 wait for done, 2 wait for done to fall
        phase = Signal(2)
        ack_now = Signal()
        self.comb += [
            ack_now.eq((phase == 1) & done),
            c.ack.eq(ack_now & sel_csr),
            m.ack.eq(ack_now & ~sel_csr),
            c.dat_r.eq(dat_r),
            m.dat_r.eq(dat_r),
            self.busy.eq(phase != 0),
        ]
        self.sync += [
            If(phase == 0,
                If((c_req | m_req) & ~done,
                    sel_csr.eq(c_req),
                    adr.eq(Mux(c_req, c_off, m_off)),
                    we.eq(Mux(c_req, c.we, m.we)),
                    dat_w.eq(Mux(c_req, c.dat_w, m.dat_w)),
                    req.eq(1), phase.eq(1),
                ),
            ).Elif(phase == 1,
                If(done, req.eq(0), phase.eq(2)),
            ).Elif(phase == 2,
                If(~done, phase.eq(0)),
            ),
        ]

        # ---- target domain
        t = target
        tsync = getattr(self.sync, target_domain)
        self.comb += [
            t.csr_sel.eq(sel_csr),
            t.mem_sel.eq(~sel_csr),
            t.adr.eq(adr),
            t.we.eq(we),
            t.dat_w.eq(dat_w),
            t.stb.eq(req & ~done),
        ]
        tsync += [
            If(t.ack & req & ~done,
                done.eq(1), dat_r.eq(t.dat_r),
            ).Elif(~req,
                done.eq(0),
            ),
        ]
