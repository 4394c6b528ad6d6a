"""Raw-word assembly, the hardware twin of trng_core::sources' word formats:

- `AvFold`: the avalanche generator's two channels, `pairs` sample pairs folded per 32-bit word:
  `out = n0 ^ n1 ^ rotl(out, fold_rotate)`, starting from 0 (AvModel::next_word);
- `RoPack`: ring-oscillator bits packed LSB first, 32 per word (RoModel::next_word).

`restart` drops the word being assembled (a health failure: a word holding a failing sample is
never delivered). `done` pulses for one cycle with `word` valid.
"""

from migen import Cat, Module, Signal, If


class AvFold(Module):
    def __init__(self, sample_bits, rotate, pairs_bits=8):
        self.s0 = Signal(sample_bits)
        self.s1 = Signal(sample_bits)
        self.valid = Signal()
        self.pairs = Signal(pairs_bits)
        self.restart = Signal()
        self.word = Signal(32)
        self.done = Signal()

        acc = Signal(32)
        n = Signal(pairs_bits)
        nxt = Signal(32)
        self.comb += nxt.eq((Cat(acc[32 - rotate:], acc[:32 - rotate])) ^ self.s0 ^ self.s1)
        self.sync += [
            self.done.eq(0),
            If(self.restart,
                acc.eq(0), n.eq(0),
            ).Elif(self.valid,
                If(n + 1 >= self.pairs,
                    acc.eq(0), n.eq(0), self.word.eq(nxt), self.done.eq(1),
                ).Else(
                    acc.eq(nxt), n.eq(n + 1),
                )
            )
        ]


class RoPack(Module):
    def __init__(self):
        self.bit = Signal()
        self.valid = Signal()
        self.restart = Signal()
        self.word = Signal(32)
        self.done = Signal()

        acc = Signal(32)
        n = Signal(5)
        self.sync += [
            self.done.eq(0),
            If(self.restart,
                acc.eq(0), n.eq(0),
            ).Elif(self.valid,
                acc.eq(Cat(acc[1:], self.bit)),
                n.eq(n + 1),
                If(n == 31, self.word.eq(Cat(acc[1:], self.bit)), self.done.eq(1)),
            )
        ]
