"""Avalanche excursion test for one XADC channel (12-bit samples).

A live avalanche source swings over many ADC codes; a dead or saturated one sits on a few.
In each window of `window` samples the channel's minimum and maximum are tracked; a window whose
range `max - min` is below `min_range` fails (pulse `fail`, latched in `latched` until `clear`).
`min` / `max` of the last completed window are kept for the AV_EXCURSION registers. Window length
and threshold are the spec's `[health.av]` excursion_window / excursion_min_range.
"""

from migen import Module, Signal, If


class Excursion(Module):
    def __init__(self, sample_bits, window, min_range):
        self.sample = Signal(sample_bits)
        self.valid = Signal()
        self.enable = Signal()
        self.clear = Signal()
        self.fail = Signal()
        self.latched = Signal()
        self.min = Signal(sample_bits)
        self.max = Signal(sample_bits)

        # # #

        lo = Signal(sample_bits)
        hi = Signal(sample_bits)
        n = Signal(max=window + 1)
        nlo = Signal(sample_bits)
        nhi = Signal(sample_bits)
        last = Signal()
        self.comb += [
            nlo.eq(self.sample), nhi.eq(self.sample),
            If(n != 0,
                If(lo < self.sample, nlo.eq(lo)),
                If(hi > self.sample, nhi.eq(hi)),
            ),
            last.eq(n == window - 1),
            self.fail.eq(self.valid & self.enable & last & ((nhi - nlo) < min_range)),
        ]
        self.sync += [
            If(self.clear | ~self.enable,
                n.eq(0),
                If(self.clear, self.latched.eq(0)),
            ).Elif(self.valid,
                lo.eq(nlo), hi.eq(nhi),
                If(last,
                    n.eq(0),
                    self.min.eq(nlo), self.max.eq(nhi),
                    If(self.fail, self.latched.eq(1)),
                ).Else(n.eq(n + 1)),
            )
        ]
