"""Ring-oscillator front end (FPGA only: synthesised with yosys, never simulated; the simulation
noise source, simsource.py, stands in for it in Verilator).

`cores` cores of `rings_per_core` free-running rings of `ring_stages` inverting stages each
(spec/trng.toml `[health.ro]`). A ring is a NAND (the enable) followed by inverters, closed on
itself; every stage is an explicit LUT primitive (and its wire carries `keep`) so synthesis
keeps each stage as its own LUT: `family="xc7"` (Precursor's Spartan-7) uses LUT2 / LUT1,
`family="ecp5"` (the ECP5 board build, gateware/soc/board.py) LUT4 with the unused inputs tied
low (INIT bit i is the output for D C B A = i: NAND of A and B = 0x7777, NOT A = 0x5555), the
instances marked `keep` too. The rings are combinational loops: nextpnr-ecp5 places them with
`--ignore-loops` (its timing analysis leaves the loops out). On the ECP5 each ring clocks a
toggle flop of its own and the flop's output is the ring's tap (the parity of the ring's edges,
sampled like the ring itself but at half its frequency): with the ring output on a data path,
nextpnr 0.11's timing analysis walked into the loop from the synchroniser and stopped with an
uncaught exception after placement on some placements (three of four runs of the whole TRNG);
a ring that only drives a clock pin leaves no timed path starting inside a loop. A core's bit is
the XOR of its rings' taps, brought into the clock domain by a two-flop synchroniser.

Sampling (RO_CONFIG): after the rings are enabled, `delay` cycles pass before the first sample;
then one sample every `dwell + 1` cycles, plus 0..3 cycles from an LFSR when `fuzz` is set
(sampling jitter against lock-in); `oversampling + 1` consecutive samples of a core are XORed into
one output bit; with `gang` set, every core's output is XORed with its neighbour's (the rings'
jitter accumulates across cores). The rings stop when `powersave` is set and nothing needs raw
words (`need` low), and whenever `enable` is low.
"""

from functools import reduce

from migen import C, Cat, ClockDomain, If, Instance, Module, Signal


FAMILIES = ("xc7", "ecp5")


def _stage(family: str, nand: bool, a, run, out):
    """One ring stage as the family's LUT primitive: NAND(a, run) or NOT a."""
    if family == "xc7":
        if nand:
            return Instance("LUT2", p_INIT=C(0b0111, 4), i_I0=a, i_I1=run, o_O=out)
        return Instance("LUT1", p_INIT=C(0b01, 2), i_I0=a, o_O=out)
    if family == "ecp5":
        return Instance("LUT4", p_INIT=C(0x7777 if nand else 0x5555, 16), i_A=a, i_B=run if nand else 0,
                        i_C=0, i_D=0, o_Z=out, attr={"keep"})
    raise ValueError(f"unknown FPGA family {family!r} (one of {', '.join(FAMILIES)})")


class RingOscillators(Module):
    def __init__(self, cores, rings_per_core, stages, family: str = "xc7"):
        self.enable = Signal()
        self.powersave = Signal()
        self.need = Signal()
        self.dwell = Signal(12)
        self.delay = Signal(10)
        self.fuzz = Signal()
        self.oversampling = Signal(8)
        self.gang = Signal()
        self.bits = Signal(cores)
        self.valid = Signal()

        # # #

        run = Signal()
        self.comb += run.eq(self.enable & ~(self.powersave & ~self.need))
        raw = []
        for c in range(cores):
            taps = []
            for r in range(rings_per_core):
                st = [Signal(name=f"ring{c}_{r}_{k}", attr={"keep"}) for k in range(stages)]
                # explicit LUT primitives: synthesis may not merge the stages into fewer LUTs
                self.specials += _stage(family, True, st[-1], run, st[0])  # NAND (the enable)
                for k in range(1, stages):
                    self.specials += _stage(family, False, st[k - 1], run, st[k])  # inverter
                if family == "ecp5":
                    # the ring clocks a toggle flop, whose output is the tap: no timed data
                    # path starts inside the loop (see the module's docstring)
                    cd = ClockDomain(f"ring{c}_{r}", reset_less=True)
                    self.clock_domains += cd
                    tog = Signal(name=f"ring{c}_{r}_tog")
                    self.comb += cd.clk.eq(st[0])
                    getattr(self.sync, cd.name).__iadd__(tog.eq(~tog))
                    taps.append(tog)
                else:
                    taps.append(st[0])
            x = Signal(name=f"core{c}_xor")
            self.comb += x.eq(reduce(lambda a, b: a ^ b, taps))
            meta = Signal(name=f"core{c}_meta", attr={"keep"})
            sync = Signal(name=f"core{c}_sync")
            self.sync += [meta.eq(x), sync.eq(meta)]
            raw.append(sync)

        # sampling schedule
        wait = Signal(10)
        cnt = Signal(14)
        lfsr = Signal(16, reset=0xACE1)
        was_run = Signal()
        sample = Signal()
        # period = dwell + (lfsr[0:2] if fuzz), a register: computed a cycle ahead from the
        # LFSR's next low bits (lfsr[1:3]), so the compare below starts at a register (the whole
        # TRNG's ECP5 timing); a write to RO_CONFIG.dwell / fuzz applies from the cycle after the
        # register takes it (and nothing samples before `run` rises: CONTROL.enable resets low)
        period = Signal(14)
        self.sync += [
            period.eq(self.dwell + Cat(lfsr[1] & self.fuzz, lfsr[2] & self.fuzz)),
            was_run.eq(run),
            lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5])),
            If(run & ~was_run, wait.eq(self.delay), cnt.eq(0)).Elif(wait != 0, wait.eq(wait - 1)).Elif(run,
                If(cnt >= period, cnt.eq(0)).Else(cnt.eq(cnt + 1))),
        ]
        self.comb += sample.eq(run & (wait == 0) & (cnt >= period))

        # oversampling: XOR oversampling + 1 samples per output bit
        acc = Signal(cores)
        n = Signal(8)
        folded = Signal(cores)
        self.comb += folded.eq(acc ^ Cat(*raw))
        ganged = Cat(*[folded[c] ^ (folded[(c + 1) % cores] & self.gang) for c in range(cores)])
        self.sync += [
            self.valid.eq(0),
            If(~run, acc.eq(0), n.eq(0)).Elif(sample,
                If(n >= self.oversampling,
                    acc.eq(0), n.eq(0), self.bits.eq(ganged), self.valid.eq(1),
                ).Else(acc.eq(folded), n.eq(n + 1)),
            ),
        ]
