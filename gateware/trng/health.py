"""SP 800-90B continuous health tests for one noise source, the hardware twin of
trng_core::health::SourceHealth (same semantics sample for sample; checked against the shared
vector files, docs/trng-gateware.md).

- Repetition Count Test: a run of `rct_cutoff` equal symbols fails; the run count restarts at 0
  after a failure, so one long run is counted once per `rct_cutoff` samples.
- Adaptive Proportion Test: in each window of `apt_window` samples, the first symbol occurring
  `apt_cutoff` times fails (once per window).
- Start-up: `startup` samples must be tested before `startup_done`.
- A failure latches (`rct_latched` / `apt_latched`) until `clear`; `clear` also restarts the tests
  and the start-up count, like `SourceHealth::clear`. Failure counters survive clears.

Cutoffs, window and start-up length are inputs (CSR-programmable); the reset values come from
spec/trng.toml through trng.spec. The RCT's cutoff compare is a flag computed a cycle ahead, so
an RCT cutoff write applies from the cycle after it (see below). `rct_fail` / `apt_fail` are
combinational pulses in the cycle of the failing sample (`valid` high), so a test bench can name
the exact sample.
"""

from migen import *


class HealthTests(Module):
    def __init__(self, symbol_bits, count_bits=16):
        self.sample = Signal(symbol_bits)
        self.valid = Signal()
        self.clear = Signal()
        self.rct_cutoff = Signal(count_bits)
        self.apt_cutoff = Signal(count_bits)
        self.apt_window = Signal(count_bits)
        self.startup = Signal(count_bits)

        self.rct_fail = Signal()
        self.apt_fail = Signal()
        self.rct_latched = Signal()
        self.apt_latched = Signal()
        self.startup_done = Signal()
        self.ok = Signal()
        self.rct_failures = Signal(count_bits)
        self.apt_failures = Signal(count_bits)
        self.rct_max_run = Signal(count_bits)
        self.apt_max_count = Signal(count_bits)
        # the window's-first-symbol count of the last completed APT window (NIST_*_STAT adap_b)
        self.apt_last_b = Signal(count_bits)
        self.apt_window_done = Signal()   # pulse: a window completed with this sample

        # # #

        fresh = Signal(reset=1)
        rct_a = Signal(symbol_bits)
        rct_b = Signal(count_bits)
        apt_a = Signal(symbol_bits)
        apt_i = Signal(count_bits)
        startup_left = Signal(count_bits)
        started = Signal()  # startup_left was loaded from `startup` (after reset or clear)
        # started & startup_left == 0, kept as a register (set with startup_left's own updates
        # below, so equal to it in every cycle): `startup_done` gates the block's output and
        # reaches the conditioner's absorb decision, the whole TRNG's ECP5 timing
        done_q = Signal()

        rct_next = Signal(count_bits)
        apt_next = Signal(count_bits, reset=1)   # the APT count + 1, as wide as the count (its wrap)
        rct_same = Signal()
        apt_cont = Signal()
        apt_same = Signal()
        # Timing (the whole TRNG at 100 MHz on the ECP5): the RCT's compare of the run count
        # with the cutoff is a registered flag, computed one cycle ahead from the count's next
        # value (it stays, steps by one or restarts at 0 or 1), so a sample's RCT failure is its
        # symbol compare and a few gates, in the same cycle as before:
        #   rct_at = rct_b + 1 >= rct_cutoff   (one more equal symbol fails the RCT)
        # The flag sees the cutoff of the cycle before: a cutoff write applies from the cycle
        # after the register takes it (the driver writes the cutoffs before enabling). The APT
        # counts in `apt_next` = its count + 1 (the count itself, `apt_b` before, is never
        # needed but for the window's statistic, `apt_next - 1`), so its equality compare with
        # the cutoff starts at a register; its window compares are with the window, a constant
        # in the block. (Flags for the APT as for the RCT would take the block over its LUT
        # budget, gateware/trng/synth.py.)
        rct_at = Signal()
        rct_next2 = Signal(count_bits)   # rct_b + 2, as wide as the count (its wrap)
        self.comb += [
            rct_same.eq(~fresh & (self.sample == rct_a)),
            rct_next.eq(rct_b + 1),
            rct_next2.eq(rct_b + 2),
            apt_cont.eq(~fresh & (apt_i < self.apt_window)),
            apt_same.eq(apt_cont & (self.sample == apt_a)),
            self.rct_fail.eq(self.valid & rct_same & rct_at),
            self.apt_fail.eq(self.valid & apt_same & (apt_next == self.apt_cutoff)),
            self.startup_done.eq(done_q),
            self.apt_window_done.eq(self.valid & ~self.clear & started & apt_cont & (apt_i + 1 == self.apt_window)),
            self.ok.eq(self.startup_done & ~self.rct_latched & ~self.apt_latched),
        ]
        self.sync += [
            # rct_b: 0 after a restart or a failure, rct_b + 1 on an equal symbol, 1 on a new one
            If(self.clear | ~started | (self.valid & rct_same & rct_at),
                rct_at.eq(self.rct_cutoff <= 1),
            ).Elif(self.valid & rct_same,
                rct_at.eq(rct_next2 >= self.rct_cutoff),
            ).Elif(self.valid,
                rct_at.eq(self.rct_cutoff <= 2),
            ).Else(
                rct_at.eq(rct_next >= self.rct_cutoff),
            ),
        ]
        self.sync += [
            If(self.clear | ~started,
                fresh.eq(1),
                rct_b.eq(0), apt_next.eq(1), apt_i.eq(0),
                startup_left.eq(self.startup),
                done_q.eq(self.startup == 0),
                started.eq(1),
                If(self.clear,
                    self.rct_latched.eq(0), self.apt_latched.eq(0), self.apt_last_b.eq(0),
                    self.rct_max_run.eq(0), self.apt_max_count.eq(0),
                ),
            ).Elif(self.valid,
                fresh.eq(0),
                # RCT
                If(rct_same,
                    If(rct_next > self.rct_max_run, self.rct_max_run.eq(rct_next)),
                    If(rct_at,
                        rct_b.eq(0),
                        self.rct_latched.eq(1),
                        self.rct_failures.eq(self.rct_failures + 1),
                    ).Else(
                        rct_b.eq(rct_next),
                    ),
                ).Else(
                    rct_a.eq(self.sample), rct_b.eq(1),
                ),
                # APT
                If(~apt_cont,
                    apt_a.eq(self.sample), apt_next.eq(2), apt_i.eq(1),
                ).Else(
                    apt_i.eq(apt_i + 1),
                    If(self.apt_window_done, self.apt_last_b.eq(Mux(apt_same, apt_next, apt_next - 1))),
                    If(apt_same,
                        apt_next.eq(apt_next + 1),
                        If(apt_next > self.apt_max_count, self.apt_max_count.eq(apt_next)),
                        If(apt_next == self.apt_cutoff,
                            self.apt_latched.eq(1),
                            self.apt_failures.eq(self.apt_failures + 1),
                        ),
                    ),
                ),
                If(startup_left != 0, startup_left.eq(startup_left - 1), done_q.eq(startup_left == 1)),
            )
        ]
