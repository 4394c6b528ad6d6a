"""The conditioned TRNG datapath: health tests on every source's samples, the raw-word stream
into the ChaCha20 conditioner, output gating. The hardware twin of trng_core::pipeline's gating:

- raw words reach the conditioner only while every source's tests pass and their start-up
  tests are done (`ok`);
- any latched failure invalidates the conditioner at once: its key material, FIFO and both
  ports are wiped (an empty port reads the poison word with valid = 0), so no output word is
  ever produced from, or left over from, a failing source;
- `clear` (the CONTROL register's clr_err) clears the latches and restarts the start-up tests;
  the conditioner then reseeds from scratch before the next output word.
- `irq_health[i]` is source i's own failure interrupt (one line per source: the reference
  assigned one excursion interrupt twice, so channel 1 never interrupted).
"""

from functools import reduce
from operator import and_, or_

from migen import *

from .conditioner import Conditioner
from .health import HealthTests


class TrngCore(Module):
    def __init__(self, symbol_bits, poison, count_bits=16):
        n = len(symbol_bits)
        self.submodules.cond = Conditioner(poison=poison)
        self.health = [HealthTests(b, count_bits) for b in symbol_bits]
        for i, h in enumerate(self.health):
            setattr(self.submodules, f"health{i}", h)
        # raw word stream from the sources' FIFO
        self.raw_valid = Signal()
        self.raw_data = Signal(32)
        self.raw_ready = Signal()
        self.clear = Signal()
        self.ok = Signal()
        self.irq_health = Signal(n)
        self.failed = Signal()
        # sources whose start-up test output waits for (a disabled source is not required; its
        # latched failures still gate), and further failure/hold conditions (excursion tests,
        # configuration) from the block around the core
        self.source_en = Signal(n, reset=(1 << n) - 1)
        self.extra_fail = Signal()
        self.hold = Signal()       # holds the conditioner only
        # the sources are healthy and past their start-up tests (raw words may flow)
        self.raw_ok = Signal()

        # # #

        self.comb += [
            self.failed.eq(reduce(or_, [h.rct_latched | h.apt_latched for h in self.health]) | self.extra_fail),
            self.raw_ok.eq(reduce(and_, [h.startup_done | ~self.source_en[i] for i, h in enumerate(self.health)])
                           & (self.source_en != 0) & ~self.failed),
            self.ok.eq(self.raw_ok & ~self.hold),
            self.cond.invalidate.eq(~self.ok),
            self.cond.raw_valid.eq(self.raw_valid & self.ok),
            self.cond.raw_data.eq(self.raw_data),
            self.raw_ready.eq(self.cond.raw_ready & self.ok),
            self.irq_health.eq(Cat(*[h.rct_fail | h.apt_fail for h in self.health])),
        ]
        for h in self.health:
            self.comb += h.clear.eq(self.clear)
