"""Microcode RAM: ucode_words x 32 (from the spec), one bus write port and one synchronous read
port (a block RAM: address in cycle t, word in cycle t + 1). The sequencer presents the next mpc
one cycle early, so the word at mpc is there in the cycle it issues; the bus reads through the
same port while the sequencer is idle or paused."""

from __future__ import annotations

from migen import READ_FIRST, Memory, Module

from . import spec


class MicrocodeRam(Module):
    def __init__(self):
        g = spec.load().geometry
        self.words = g["ucode_words"]
        self.mem = Memory(g["ucode_word_bits"], self.words, name="ucode")
        self.specials += self.mem
        self.rd = self.mem.get_port(mode=READ_FIRST)
        self.wr = self.mem.get_port(write_capable=True)
        self.specials += self.rd, self.wr
