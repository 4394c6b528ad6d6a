"""Avalanche excursion test for one XADC channel (12-bit samples): the AV_EXCURSIONn_* registers,
with the meaning of Precursor's `ExcursionTest` (betrusted-io/gateware trng_managed.py).

A live avalanche source swings over many ADC codes; a dead or saturated one sits on a few.
In each window of `window` samples the channel's minimum and maximum are tracked; a window whose
range `max - min` is below `cutoff` fails (pulse `fail`, latched in `latched` until `clear` or
`reset`; `min`/`max` of the failing window are kept in `err_min`/`err_max`, AV_EXCURSIONn_LAST_ERR).
`min` / `max` of the last completed window are kept for AV_EXCURSIONn_STAT. `ready` is set by a
passing window and cleared by a failing one, by `reset` and while the channel is off (READY's
av_excursion bits). A cutoff of 0 never fails. `window` and `cutoff` are the CTRL register's
fields; their reset values are the spec's `[health.av]` excursion_window / excursion_min_range.
"""

from migen import Module, Signal, If


class Excursion(Module):
    def __init__(self, sample_bits, window_bits):
        self.sample = Signal(sample_bits)
        self.valid = Signal()
        self.enable = Signal()
        self.clear = Signal()
        self.reset = Signal()        # CTRL.reset pulse: restart, forget the latch
        self.window = Signal(window_bits)
        self.cutoff = Signal(sample_bits)
        self.fail = Signal()
        self.latched = Signal()
        self.ready = Signal()
        self.min = Signal(sample_bits)
        self.max = Signal(sample_bits)
        self.err_min = Signal(sample_bits)
        self.err_max = Signal(sample_bits)

        # # #

        lo = Signal(sample_bits)
        hi = Signal(sample_bits)
        n = Signal(window_bits)
        nlo = Signal(sample_bits)
        nhi = Signal(sample_bits)
        last = Signal()
        self.comb += [
            nlo.eq(self.sample), nhi.eq(self.sample),
            If(n != 0,
                If(lo < self.sample, nlo.eq(lo)),
                If(hi > self.sample, nhi.eq(hi)),
            ),
            last.eq(n + 1 >= self.window),
            self.fail.eq(self.valid & self.enable & ~self.reset & last & ((nhi - nlo) < self.cutoff)),
        ]
        self.sync += [
            If(self.clear | self.reset | ~self.enable,
                n.eq(0),
                self.ready.eq(0),
                If(self.clear | self.reset, self.latched.eq(0)),
            ).Elif(self.valid,
                lo.eq(nlo), hi.eq(nhi),
                If(last,
                    n.eq(0),
                    self.min.eq(nlo), self.max.eq(nhi),
                    self.ready.eq(~self.fail),
                    If(self.fail, self.latched.eq(1), self.err_min.eq(nlo), self.err_max.eq(nhi)),
                ).Else(n.eq(n + 1)),
            )
        ]
