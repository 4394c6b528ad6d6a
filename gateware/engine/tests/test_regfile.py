"""The register file (regfile.RegFile) on Verilator, alone: one true-dual-port array on mul_clk
(= 2 x eng_clk, edges aligned), reads A and B on the edge aligned with eng_clk, the ALU's and the
multipliers' writes mid-cycle. Checked from the engine clock against a Python model of the
contract the sequencer relies on: a read addressed in cycle t returns the word in t + 1; a write
requested in t is seen by reads addressed in t + 1 and later, not by a read addressed in t; two
writes (wa, wm) and two reads (A, B) in every cycle; the read word is held through the mid-cycle
write of the same port; the constant and hardware rows read back their initial words."""

import random

import pytest
from migen import Module, Signal

from common import netlist
from common.verilator import build
from engine import regfile, spec

ISA = "v2"


class Registered(Module):
    """The register file behind eng_clk registers, as the sequencer drives it: its addresses and
    write requests change on eng_clk edges only, so a port that sampled them mid-cycle would see
    the next cycle's."""

    def __init__(self):
        self.submodules.rf = rf = regfile.RegFile(ISA)
        self.ios = set()
        for port, fields in (("ra", ("adr",)), ("rb", ("adr",)), ("wa", ("adr", "dat_w", "we")),
                             ("wm", ("adr", "dat_w", "we", "keep"))):
            for f in fields:
                inner = getattr(getattr(rf, port), f)
                outer = Signal(len(inner), name=f"{port}_{f}")
                self.sync += inner.eq(outer)
                self.ios.add(outer)
        for port in ("ra", "rb"):
            outer = Signal(rf.width, name=f"{port}_dat_r")
            self.comb += outer.eq(getattr(rf, port).dat_r)
            self.ios.add(outer)


@pytest.fixture(scope="module", params=["rtl", "netlist"])
def rf(request):
    """The RTL on Verilator, and yosys's synth_xilinx netlist of it with the xc7 primitives'
    simulation models (common/netlist.py): the same tests must pass on both, in particular the
    block RAM's output held through the mid-cycle write."""
    dut = Registered()
    ratio = spec.mul_clock_ratio(ISA)
    assert ratio == 2, "the register file's two phases need mul_clk = 2 x eng_clk"
    if request.param == "rtl":
        s = build(dut, dut.ios, "engine_regfile", clocks={"sys": ratio, "mul": 1})
    else:
        s = netlist.build(dut, dut.ios, "engine_regfile_gl", clocks={"sys": ratio, "mul": 1})
    s.init = regfile.layout(ISA)[2]
    s.const_base = dut.rf.const_base
    yield s
    s.close()


def run(s, reqs):
    """One engine cycle per request (ra, rb, wa, wm), back to back: addresses and write requests
    (row, word) or None, wm also (row, word, keep) (keep: the 32-bit words left as they are);
    returns the words the reads of each request returned."""
    out = []
    for k in range(len(reqs) + 1):
        ra, rb, wa, wm = reqs[k] if k < len(reqs) else (0, 0, None, None)
        s.poke("ra_adr", ra)
        s.poke("rb_adr", rb)
        for name, w in (("wa", wa), ("wm", wm)):
            s.poke(f"{name}_we", 1 if w else 0)
            s.poke(f"{name}_adr", w[0] if w else 0)
            s.poke(f"{name}_dat_w", w[1] if w else 0)
        s.poke("wm_keep", wm[2] if wm and len(wm) > 2 else 0)
        s.tick()
        if k:
            out.append((s.peek("ra_dat_r"), s.peek("rb_dat_r")))
    return out


def cycle(s, ra=0, rb=0, wa=None, wm=None):
    return run(s, [(ra, rb, wa, wm)])[0]


def test_read_only_rows(rf):
    for row in range(rf.const_base, len(rf.init)):
        assert cycle(rf, ra=row, rb=row) == (rf.init[row], rf.init[row]), f"row {row}"


def test_write_then_read_and_same_cycle_read_is_old(rf):
    got = run(rf, [(0, 0, (5, 0x1111), (6, 0x2222)),
                   (5, 6, None, None),                      # the next cycle reads the new words
                   (5, 6, (5, 0x3333), (6, 0x4444)),        # a read in the cycle of the write: old
                   (6, 5, None, None)])                     # and the next one the new word
    assert got[1:] == [(0x1111, 0x2222), (0x1111, 0x2222), (0x4444, 0x3333)]


def test_read_word_held_through_mid_cycle_write(rf):
    # rows 1 and 2 read on the aligned edge, then rows 11 and 12 written mid-cycle on the same two
    # ports: the outputs (sampled after both edges) still carry rows 1 and 2
    got = run(rf, [(0, 0, (1, 0x1), (2, 0x2)), (0, 0, (11, 0xAAAA), (12, 0xBBBB)),
                   (1, 2, (11, 0xEEEE), (12, 0xFFFF)), (11, 12, None, None)])
    assert got[2:] == [(0x1, 0x2), (0xEEEE, 0xFFFF)]


def test_word_writes_keep_the_other_words(rf):
    # wm's per-word enables (the bus's 32-bit writes): only the words whose keep bit is clear
    full = int.from_bytes(bytes(range(1, 33)), "little")
    ones = (1 << 256) - 1
    got = run(rf, [(0, 0, None, (9, full)), (0, 0, (10, full), (9, ones, 0xFF ^ (1 << 3))),
                   (0, 0, None, (10, ones, 0xFF)), (9, 10, None, None)])
    assert got[3] == (full | (0xFFFF_FFFF << 96), full)   # word 3 of row 9 only; row 10 untouched


def test_random_against_model(rf):
    rnd = random.Random(1)
    rows = len(rf.init)
    writable = rf.const_base
    model = list(rf.init)
    reqs = []
    for r in range(0, writable, 2):         # bring the writable rows to a known state
        reqs.append((0, 0, (r, rnd.getrandbits(256)), (r + 1, rnd.getrandbits(256))))
    for _ in range(4000):
        ra, rb = rnd.randrange(rows), rnd.randrange(rows)
        wa = (rnd.randrange(writable), rnd.getrandbits(256)) if rnd.random() < 0.6 else None
        wm = (rnd.randrange(writable), rnd.getrandbits(256)) if rnd.random() < 0.4 else None
        if wm and rnd.random() < 0.3:           # a bus write: one 32-bit word, or any words
            wm = wm + (0xFF ^ (1 << rnd.randrange(8)) if rnd.random() < 0.7 else rnd.getrandbits(8),)
        if wa and wm and wa[0] == wm[0]:
            wm = None                       # the sequencer never writes one row twice in a cycle
        reqs.append((ra, rb, wa, wm))
    got = run(rf, reqs)
    for k, (ra, rb, wa, wm) in enumerate(reqs):
        # reads see the writes of earlier cycles only; a partial word write (keep) leaves port
        # B's word of its own cycle unspecified (regfile.py: the bus's writes, while no operand
        # is read)
        partial = wm is not None and len(wm) > 2 and wm[2] not in (0, 0xFF)
        assert got[k][0] == model[ra], f"cycle {k}: ra {ra}"
        assert partial or got[k][1] == model[rb], f"cycle {k}: rb {rb}"
        for w in (wa, wm):
            if w:
                keep = w[2] if len(w) > 2 else 0
                mask = sum(0xFFFF_FFFF << (32 * j) for j in range(8) if not keep >> j & 1)
                model[w[0]] = (model[w[0]] & ~mask) | (w[1] & mask)
