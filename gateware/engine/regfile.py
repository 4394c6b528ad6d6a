"""Windowed register file: 16 windows x 32 registers x 256 bits (geometry from the spec), followed
by read-only rows: the constant ROM's 32 slots (constrom.py; row `const_base` + slot) and the
ALU's hardware rows (zero, one, p: alu.hardware_rows(), what the B port reads for ops whose B
operand is not an instruction field).

The hardware is one block-RAM array with the two ports a Xilinx RAMB36 has (true dual port),
clocked by `rf_domain` (mul_clk = 2 x eng_clk, rising edges aligned with eng_clk) and used in two
phases per eng_clk cycle, so four port slots per engine cycle: the spec's four register-file
phases (rf_clk = 4 x eng_clk on one read and one write port: read A, read B, ALU write,
multiplier write), in the same order, without a third clock:

* on the rf edge aligned with an eng_clk edge (phase "read"): port 1 reads A, port 2 reads B,
  at the addresses the sequencer presents in the engine cycle that edge ends;
* on the rf edge in the middle of an eng_clk cycle (phase "write"): port 1 writes the ALU's (or
  the bus's) word, port 2 the multipliers' product, both requested in the previous engine cycle
  and held in write registers (eng_clk) since its end.

So, seen from the engine clock: a read addressed in cycle t returns its word in t + 1, held for
the whole cycle (the port does not read again before the next eng_clk edge, and a mid-cycle
write leaves its output unchanged: read enable low); a write requested in cycle t lands in the
middle of t + 1, after the reads addressed in t and before the reads addressed in t + 1. A read
addressed in the cycle a write to the same row is requested returns the old word; the
sequencer's scoreboard never lets that happen for an operand (docs/gateware.md).

The phase is recovered in the rf domain from an eng_clk toggle (`etog`) and its copy taken on
every rf edge (`mtog`): they differ in the first half of an engine cycle (the next rf edge is
mid-cycle: write) and agree in the second half (the next rf edge is an eng_clk edge: read). This
re-synchronizes by itself one rf edge after the clocks start.

Ports (`ra`, `rb`: adr -> dat_r; `wa`, `wm`: adr, dat_w, we) are engine-clock signals; writers
address only the windows' rows (their addresses are 9 bits wide). `wm` also has `keep`, one bit
per 32-bit word of the row (the array's write enables are per word): a word whose bit is set is
left as it is. The multipliers write whole rows (`keep` = 0); the bus writes one 32-bit word of
a register this way, without reading and merging the rest of the row. A partial write leaves
port B's output unspecified in the engine cycle it lands in (the word read in the cycle before
is not held): synthesis gives the block RAMs of one port a shared enable, so the RAMs of the kept
words see an enabled port without a write, which is a read (of the written row), mid-cycle (the
netlist test shows it). The bus writes only while the engine is idle or paused, when no operand
read on port B is pending; the RTL holds the word, the netlist does not, and the tests leave that
word unchecked after a partial write."""

from __future__ import annotations

from types import SimpleNamespace

from migen import READ_FIRST, If, Memory, Module, Mux, Replicate, Signal, bits_for

from . import alu, constrom, spec


WORD = 32    # write-enable granularity of the array: the bus's word


def layout(isa: str) -> tuple[int, dict[int, int], list[int]]:
    """(const_base, {B_* kind: row}, initial contents of every row)."""
    g = spec.load().geometry
    base = g["windows"] * g["regs_per_window"]
    assert base & (base - 1) == 0, "the constant rows start at a power of two"
    rom = constrom.contents(isa)
    hw = alu.hardware_rows()
    rows = {kind: base + len(rom) + i for i, kind in enumerate(hw)}
    return base, rows, [0] * base + rom + list(hw.values())


class RegFile(Module):
    def __init__(self, isa: str, rf_domain: str = "mul"):
        g = spec.load().geometry
        # the spec's register file: rf_clk / eng_clk phases (4: read A, read B, ALU write,
        # multiplier write) on one port pair; here the same slots are two ports x two mul_clk phases
        i = spec.load().isas[isa]
        assert i.rf_clk_hz % i.eng_clk_hz == 0 and i.rf_clk_hz // i.eng_clk_hz == 4, "the spec's register file has 4 phases"
        assert spec.mul_clock_ratio(isa) == 2, "two register-file phases per eng_clk need mul_clk = 2 x eng_clk"
        self.const_base, self.hw_rows, init = layout(isa)
        self.depth = len(init)
        self.width = w = g["reg_bits"]
        aw = bits_for(self.depth - 1)
        waw = bits_for(self.const_base - 1)
        self.ra = SimpleNamespace(adr=Signal(aw, name="rf_ra_adr"), dat_r=Signal(w, name="rf_ra_dat"))
        self.rb = SimpleNamespace(adr=Signal(aw, name="rf_rb_adr"), dat_r=Signal(w, name="rf_rb_dat"))
        self.wa = SimpleNamespace(adr=Signal(waw, name="rf_wa_adr"), dat_w=Signal(w, name="rf_wa_dat"), we=Signal(name="rf_wa_we"))
        self.words = words = w // WORD
        assert w % WORD == 0, "rows are whole 32-bit words"
        self.wm = SimpleNamespace(adr=Signal(waw, name="rf_wm_adr"), dat_w=Signal(w, name="rf_wm_dat"), we=Signal(name="rf_wm_we"),
                                  keep=Signal(words, name="rf_wm_keep"))

        self.mem = Memory(w, self.depth, init=init, name="rf")
        self.specials += self.mem
        p1 = self.mem.get_port(write_capable=True, has_re=True, mode=READ_FIRST, clock_domain=rf_domain, we_granularity=WORD)
        p2 = self.mem.get_port(write_capable=True, has_re=True, mode=READ_FIRST, clock_domain=rf_domain, we_granularity=WORD)
        self.specials += p1, p2

        # phase: etog flips on every eng_clk edge, mtog copies it on every rf edge
        etog = Signal()
        mtog = Signal()
        rd = Signal()
        self.sync += etog.eq(~etog)
        rf_sync = getattr(self.sync, rf_domain)
        rf_sync += mtog.eq(etog)
        self.comb += rd.eq(etog == mtog)

        # write requests of engine cycle t, held through t + 1 (written mid-cycle)
        held = {}
        for name, port in (("wa", self.wa), ("wm", self.wm)):
            h = SimpleNamespace(adr=Signal(waw, name=f"{name}_adr_q"), dat_w=Signal(w, name=f"{name}_dat_q"),
                                we=Signal(words, name=f"{name}_we_q"))
            we = Replicate(port.we, words)
            if hasattr(port, "keep"):
                we = we & ~port.keep
            self.sync += [h.adr.eq(port.adr), h.dat_w.eq(port.dat_w), h.we.eq(we)]
            held[name] = h
        for p, r, h in ((p1, self.ra, held["wa"]), (p2, self.rb, held["wm"])):
            self.comb += [
                p.adr.eq(Mux(rd, r.adr, h.adr)),
                p.re.eq(rd),
                p.we.eq(Replicate(~rd, words) & h.we),
                p.dat_w.eq(h.dat_w),
                r.dat_r.eq(p.dat_r),
            ]
        self.ios = {self.ra.adr, self.ra.dat_r, self.rb.adr, self.rb.dat_r,
                    self.wa.adr, self.wa.dat_w, self.wa.we, self.wm.adr, self.wm.dat_w, self.wm.we, self.wm.keep}
