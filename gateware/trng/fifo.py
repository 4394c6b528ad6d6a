"""Raw-word FIFO (one per register page: kernel and server), the `DATA` / `STATUS` registers of
spec/trng.toml.

Block RAM with a registered output (Migen's SyncFIFOBuffered: first word falls through one cycle
after it is written), plus:

- `wrcount` / `rdcount`: words written / read modulo the depth (the STATUS fields of the same
  names: their difference is the fill level, `avail` tells full from empty);
- refill hysteresis: `want` rises when the level drops below `refill_below` and stays up until the
  FIFO is full (spec `[regs.constants]` fifo_depth / fifo_refill_below);
- `flush` empties it at once (a health failure: no raw word survives a failing source);
- `dout` reads the poison word whenever the FIFO is empty, never an earlier word.
"""

from migen import Module, Mux, ResetInserter, Signal, If
from migen.genlib.fifo import SyncFIFOBuffered


class RawFifo(Module):
    def __init__(self, depth, refill_below, poison):
        assert depth & (depth - 1) == 0, "depth must be a power of two (the counts wrap with it)"
        cbits = depth.bit_length() - 1
        self.we = Signal()
        self.din = Signal(32)
        self.re = Signal()
        self.flush = Signal()
        self.readable = Signal()
        self.writable = Signal()
        self.dout = Signal(32)
        self.level = Signal(max=depth + 2)
        self.wrcount = Signal(cbits)
        self.rdcount = Signal(cbits)
        self.want = Signal()

        # # #

        f = ResetInserter()(SyncFIFOBuffered(32, depth - 1))
        self.submodules.f = f
        wr = Signal()
        rd = Signal()
        self.comb += [
            f.reset.eq(self.flush),
            wr.eq(self.we & f.writable & ~self.flush),
            rd.eq(self.re & f.readable & ~self.flush),
            f.we.eq(wr), f.din.eq(self.din), f.re.eq(rd),
            self.readable.eq(f.readable),
            self.writable.eq(f.writable),
            self.level.eq(f.level),
            self.dout.eq(Mux(f.readable, f.dout, poison)),
        ]
        self.sync += [
            If(self.flush,
                self.rdcount.eq(self.wrcount),  # empty: the counts agree
                self.want.eq(0),
            ).Else(
                If(wr, self.wrcount.eq(self.wrcount + 1)),
                If(rd, self.rdcount.eq(self.rdcount + 1)),
                If(f.level < refill_below, self.want.eq(1)).Elif(~f.writable | (wr & (f.level == depth - 1)), self.want.eq(0)),
            )
        ]
