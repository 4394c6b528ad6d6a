"""Ring-oscillator runs test for one core (the RO_RUNn_* / RO_RUNSLIMITk registers; Precursor's
`MiniRuns`, betrusted-io/gateware gateware/trng/trng_managed.py): a supplemental statistic, not
an SP 800-90B test.

In each window of `window` samples of the core's bit, count for k = 1..runs the runs of *at least*
k equal bits that ended in the window (a run of 3 counts for k = 1, 2 and 3; that is what the
reference's sliding pattern counts, and its default limits -- about 512, 256, 128, 64 runs in
1023 bits -- are those of an unbiased source). At the end of a window the counts are published
(`count[k-1]`), every `fresh` bit is set, and a count outside [min_k, max_k] latches `failure`
until `clear`. Reading count k clears fresh bit k-1 (`count_read[k-1]`). While `enable` is low
(the RO source is off) the window and the running counts restart.

Inputs are the RO_RUNn_CTRL window and the RO_RUNSLIMITk limits (shared by the four cores);
their reset values are spec/trng.toml `[health.ro_runs]`.
"""

from migen import Cat, If, Module, Signal


class RunsTest(Module):
    def __init__(self, runs: int, count_bits: int):
        self.bit = Signal()
        self.valid = Signal()
        self.enable = Signal()
        self.clear = Signal()
        self.window = Signal(count_bits)
        self.min = [Signal(count_bits, name=f"min{k + 1}") for k in range(runs)]
        self.max = [Signal(count_bits, name=f"max{k + 1}") for k in range(runs)]
        self.count_read = Signal(runs)
        self.count = [Signal(count_bits, name=f"count{k + 1}") for k in range(runs)]
        self.fresh = Signal(runs)
        self.failure = Signal()
        self.fail = Signal()          # pulse: a window ended outside the limits

        # # #

        started = Signal()            # a first bit was seen (the run below has a value)
        value = Signal()
        length = Signal(max=runs + 1)  # current run's length, saturating at `runs`
        n = Signal(count_bits)         # samples in the current window
        acc = [Signal(count_bits, name=f"acc{k + 1}") for k in range(runs)]
        ends = Signal()                # the current sample ends a run
        last = Signal()                # the current sample is the window's last
        self.comb += [
            ends.eq(started & (self.bit != value)),
            last.eq(n + 1 >= self.window),
        ]
        # the counts a sample leaves behind (a run ending now counts for k <= its length)
        nxt = [Signal(count_bits, name=f"nxt{k + 1}") for k in range(runs)]
        for k in range(runs):
            self.comb += nxt[k].eq(acc[k] + (ends & (length >= k + 1)))
        outside = Signal()
        bad = [Signal(name=f"bad{k + 1}") for k in range(runs)]
        for k in range(runs):
            self.comb += bad[k].eq((nxt[k] < self.min[k]) | (nxt[k] > self.max[k]))
        self.comb += [
            outside.eq(Cat(*bad) != 0),
            self.fail.eq(self.enable & self.valid & last & outside),
        ]
        self.sync += [
            If(self.count_read != 0, self.fresh.eq(self.fresh & ~self.count_read)),
            If(self.clear, self.failure.eq(0)),
            If(~self.enable,
                started.eq(0), length.eq(0), n.eq(0),
                *[a.eq(0) for a in acc],
            ).Elif(self.valid,
                started.eq(1),
                value.eq(self.bit),
                If(~started | ends, length.eq(1)).Elif(length < runs, length.eq(length + 1)),
                If(last,
                    n.eq(0),
                    *[a.eq(0) for a in acc],
                    *[c.eq(v) for c, v in zip(self.count, nxt)],
                    self.fresh.eq((1 << runs) - 1),
                    If(outside & ~self.clear, self.failure.eq(1)),
                ).Else(
                    n.eq(n + 1),
                    *[a.eq(v) for a, v in zip(acc, nxt)],
                ),
            ),
        ]
