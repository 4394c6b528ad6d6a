"""Microcode RAM: ucode_words x 32 (from the spec), one synchronous read/write port (a block RAM
port: address in cycle t, word in cycle t + 1; a write returns the old word; with the read
enable low the port keeps its word). The sequencer
presents the next mpc one cycle early, so the word at mpc is there in the cycle it issues; the
bus reads and writes through the same port while the sequencer is idle or paused. One port, not
a read port and a write port: the sequencer never fetches while the bus writes, and with two
ports on one clock yosys emulates the read port's read-before-write with registers and an
address compare after the block RAM (on the ECP5, the end of the prefetch loop)."""

from __future__ import annotations

from migen import READ_FIRST, Memory, Module

from . import spec


class MicrocodeRam(Module):
    def __init__(self):
        g = spec.load().geometry
        self.words = g["ucode_words"]
        self.mem = Memory(g["ucode_word_bits"], self.words, name="ucode")
        self.specials += self.mem
        self.port = self.mem.get_port(write_capable=True, has_re=True, mode=READ_FIRST)
        self.specials += self.port
