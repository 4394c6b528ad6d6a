"""Microcode RAM: ucode_words x 32 (from the spec), one bus write port, one asynchronous read
port for the sequencer (the word at mpc is decoded in the cycle it issues)."""

from __future__ import annotations

from migen import Memory, Module

from . import spec


class MicrocodeRam(Module):
    def __init__(self):
        g = spec.load().geometry
        self.words = g["ucode_words"]
        self.mem = Memory(g["ucode_word_bits"], self.words, name="ucode")
        self.specials += self.mem
        self.rd = self.mem.get_port(async_read=True)
        self.wr = self.mem.get_port(write_capable=True)
        self.specials += self.rd, self.wr
