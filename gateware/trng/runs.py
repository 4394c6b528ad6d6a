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
        inc = Signal(runs)             # ... and counts for k (a run of at least k + 1 bits)
        self.comb += ends.eq(started & (self.bit != value))
        for k in range(runs):
            self.comb += inc[k].eq(ends & (length >= k + 1))
        # the counts a sample leaves behind (a run ending now counts for k <= its length)
        nxt = [Signal(count_bits, name=f"nxt{k + 1}") for k in range(runs)]
        for k in range(runs):
            self.comb += nxt[k].eq(acc[k] + inc[k])

        # Timing (the whole TRNG at 100 MHz on the ECP5): the window-end decision does not wait
        # for the sample's add and the limit compares. Registered flags hold, for the counts and
        # the window position the registers have now,
        #   last_q  = n + 1 >= window                         (this sample ends the window)
        #   out0[k] = acc[k] < min[k] | acc[k] > max[k]       (outside if the sample adds 0)
        #   out1[k] = acc[k] + 1 < min[k] | acc[k] + 1 > max[k]   (... if it adds 1)
        # so a sample's decision is `inc[k] ? out1[k] : out0[k]`, the same as comparing
        # acc[k] + inc[k] as before, sample for sample. The flags are computed one cycle ahead
        # from the registers' next values (a count stays, steps by one or restarts at 0, the
        # window position likewise), against the limits and window of that cycle: a write to
        # RO_RUNSLIMITk or RO_RUNn_CTRL.window applies from the cycle after the register takes it.
        # The flags are right from the first cycle `enable` is high after a cycle with it low
        # (the block's CONTROL.enable resets low).
        last = Signal()
        last_q = Signal()
        out0 = Signal(runs)
        out1 = Signal(runs)
        self.comb += last.eq(last_q)
        # f(v) for v = acc + j, j = 0, 1, 2: v < min <=> min - acc > j; v > max <=> max - acc < j
        fj = [[Signal(name=f"f{k + 1}_{j}") for j in range(3)] for k in range(runs)]
        for k in range(runs):
            d = Signal(count_bits + 1, name=f"dmin{k + 1}")   # min - acc, two's complement
            e = Signal(count_bits + 1, name=f"dmax{k + 1}")   # max - acc
            dn, en = d[-1], e[-1]
            self.comb += [d.eq(self.min[k] - acc[k]), e.eq(self.max[k] - acc[k])]
            gt = [~dn & (d != 0), ~dn & (d[1:] != 0), ~dn & ((d[2:] != 0) | (d[:2] == 3))]   # d > j
            lt = [en, en | (e == 0), en | (e[1:] == 0)]                                   # e < j
            for j in range(3):
                self.comb += fj[k][j].eq(gt[j] | lt[j])
        # the flags of a count restarting at 0 (0 < min; 1 < min or 1 > max)
        z0 = [Signal(name=f"z0_{k + 1}") for k in range(runs)]
        z1 = [Signal(name=f"z1_{k + 1}") for k in range(runs)]
        for k in range(runs):
            self.comb += [z0[k].eq(self.min[k] != 0), z1[k].eq((self.min[k] > 1) | (self.max[k] == 0))]
        restart = Signal()
        self.comb += restart.eq(~self.enable | (self.valid & last))
        self.sync += [
            If(restart,
                last_q.eq(1 >= self.window),
                *[out0[k].eq(z0[k]) for k in range(runs)],
                *[out1[k].eq(z1[k]) for k in range(runs)],
            ).Elif(self.valid,
                last_q.eq(n + 2 >= self.window),
                *[If(inc[k], out0[k].eq(fj[k][1]), out1[k].eq(fj[k][2])).Else(out0[k].eq(fj[k][0]), out1[k].eq(fj[k][1]))
                  for k in range(runs)],
            ).Else(
                last_q.eq(n + 1 >= self.window),
                *[out0[k].eq(fj[k][0]) for k in range(runs)],
                *[out1[k].eq(fj[k][1]) for k in range(runs)],
            ),
        ]
        outside = Signal()
        self.comb += [
            outside.eq(((inc & out1) | (~inc & out0)) != 0),
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
