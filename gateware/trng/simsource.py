"""Simulation noise source with fault injection (Verilator only; never synthesised for the FPGA).

Stands in for the front ends in simulation: two 12-bit avalanche channels and the ring-oscillator
cores' bits, one sample of every channel each `dwell + 1` cycles (RO_CONFIG.dwell, as the ring
oscillator's sampling period). The "physics" is one xorshift32 generator per channel (different
seeds); the sample structure follows trng_core::sources:

- AV: mid-scale plus the sum of the generator's four bytes, minus 512 (roughly Gaussian);
- RO: one bit.

Fault injection, with trng_core::sources::FaultSpec's semantics, on one channel at a time
(`f_target`: 0..channels-1 = av_n, then the RO cores), active for the channel's samples
`f_start <= n < f_start + f_len` (`f_len` = 0: forever), n counted from `f_arm`:

- `stuck` (kind 1): the sample is `f_value`;
- `bias` (kind 2): AV: with probability `f_p`/256 the sample is pinned to mid-scale;
  RO: the bit is 1 with probability `f_p`/256;
- `burst` (kind 3): every `f_period` samples, the first sample is held for `f_blen` samples
  (the sample at k = (n - start) % period == 0 is kept, k < len repeat it).
"""

from migen import Cat, If, Module, Mux, Signal

STUCK, BIAS, BURST = 1, 2, 3


class _Xorshift(Module):
    """xorshift32 (13, 17, 5), stepped by `step`."""

    def __init__(self, seed, step):
        self.x = Signal(32, reset=seed)
        a = Signal(32)
        b = Signal(32)
        c = Signal(32)
        self.comb += [a.eq(self.x ^ (self.x << 13)), b.eq(a ^ (a >> 17)), c.eq(b ^ (b << 5))]
        self.sync += If(step, self.x.eq(c))


class SimNoise(Module):
    def __init__(self, n_av, n_ro, sample_bits):
        mid = 1 << (sample_bits - 1)
        n = n_av + n_ro
        self.dwell = Signal(12)
        self.enable = Signal()
        self.av_s = [Signal(sample_bits, name=f"sim_av{i}") for i in range(n_av)]
        self.ro_bits = Signal(n_ro)
        self.valid = Signal()
        # fault slot
        self.f_arm = Signal()          # pulse: (re)start the channel sample count at 0
        self.f_target = Signal(max=n)
        self.f_kind = Signal(2)
        self.f_value = Signal(sample_bits)
        self.f_p = Signal(8)
        self.f_start = Signal(32)
        self.f_len = Signal(32)
        self.f_blen = Signal(16)
        self.f_period = Signal(16)
        self.ios = {self.f_arm, self.f_target, self.f_kind, self.f_value, self.f_p, self.f_start, self.f_len,
                    self.f_blen, self.f_period}

        # # #

        tick = Signal()
        cnt = Signal(12)
        self.sync += [
            self.valid.eq(0),
            If(~self.enable,
                cnt.eq(0),
            ).Elif(cnt >= self.dwell,
                cnt.eq(0), self.valid.eq(1),
            ).Else(cnt.eq(cnt + 1)),
        ]
        self.comb += tick.eq(self.enable & (cnt >= self.dwell))
        gens = [_Xorshift(0x9E37_79B9 ^ (0x85EB_CA6B * (i + 1) & 0xFFFF_FFFF) | 1, tick) for i in range(n)]
        for i, g in enumerate(gens):
            setattr(self.submodules, f"gen{i}", g)

        # the fault slot's sample counter (samples of the target channel since f_arm)
        fn = Signal(32)
        k = Signal(16)           # (n - start) % period
        held = Signal(sample_bits)
        active = Signal()
        self.comb += active.eq((self.f_kind != 0) & (fn >= self.f_start) & ((self.f_len == 0) | (fn < self.f_start + self.f_len)))
        self.sync += If(self.f_arm,
            fn.eq(0), k.eq(0),
        ).Elif(tick,
            fn.eq(fn + 1),
            If(active, k.eq(Mux(k + 1 >= self.f_period, 0, k + 1))),
        )

        for i, g in enumerate(gens):
            x = g.x
            is_av = i < n_av
            natural = Signal(sample_bits, name=f"nat{i}")
            if is_av:
                self.comb += natural.eq(mid + x[0:8] + x[8:16] + x[16:24] + x[24:32] - 512)
            else:
                self.comb += natural.eq(x[0])
            rnd = Signal(8, name=f"rnd{i}")
            self.comb += rnd.eq(x[3:11] ^ x[19:27])
            faulted = Signal(sample_bits, name=f"fs{i}")
            on = Signal(name=f"fon{i}")
            self.comb += on.eq(active & (self.f_target == i))
            self.comb += [
                faulted.eq(natural),
                If(on,
                    If(self.f_kind == STUCK,
                        faulted.eq(self.f_value),
                    ).Elif(self.f_kind == BIAS,
                        (If(rnd < self.f_p, faulted.eq(mid)) if is_av else faulted.eq(rnd < self.f_p)),
                    ).Elif(self.f_kind == BURST,
                        If((k != 0) & (k < self.f_blen), faulted.eq(held)),
                    ),
                ),
            ]
            self.sync += If(tick & on & (self.f_kind == BURST) & (k == 0), held.eq(natural))
            out = self.av_s[i] if is_av else self.ro_bits[i - n_av]
            self.sync += If(tick, out.eq(faulted))


class SimTrng(Module):
    """The TRNG block fed by the simulation noise source: what the Verilator benches and the
    SoC simulation run. Exports the samples the health tests took (`t_av*`, `t_ro`, `t_av_take`,
    `t_ro_take`) so a bench can replay them through the software health tests."""

    def __init__(self, s=None):
        from .csr import TrngBus
        self.submodules.trng = t = TrngBus(s)
        sp = t.spec
        n_av, n_ro = sp.health["av"]["channels"], sp.health["ro"]["cores"]
        self.submodules.noise = nz = SimNoise(n_av, n_ro, sp.health["av"]["sample_bits"])
        self.comb += [
            nz.enable.eq(t.fe_av_en | t.fe_ro_en), nz.dwell.eq(t.fe_ro["dwell"]),
            t.av_valid.eq(nz.valid), t.ro_valid.eq(nz.valid), t.ro_bits.eq(nz.ro_bits),
        ] + [a.eq(b) for a, b in zip(t.av_s, nz.av_s)]
        self.t_av = [Signal(len(a), name=f"t_av{i}") for i, a in enumerate(t.av_s)]
        self.t_ro = Signal(n_ro, name="t_ro")
        self.t_av_take = Signal(name="t_av_take")
        self.t_ro_take = Signal(name="t_ro_take")
        self.comb += [a.eq(b) for a, b in zip(self.t_av, t.av_s)] + [
            self.t_ro.eq(t.ro_bits), self.t_av_take.eq(t.av_take), self.t_ro_take.eq(t.ro_take)]
        self.ios = {t.server_sel, t.kernel_sel, t.adr, t.we, t.dat_w, t.stb, t.ack, t.dat_r, t.irq_server,
                    t.irq_kernel, t.irq_source, *self.t_av, self.t_ro, self.t_av_take, self.t_ro_take} | nz.ios
