"""CSR block + memory window + interrupt (csr.py) on Verilator, addressed with the spec's offsets:
every spec field is bound exactly once; X25519 v2 loaded and run over the bus (microcode and
registers through the memory window, GO, IRQ on finished, EV_PENDING write-1-to-clear);
undecoded reads; memory-window accesses stall while a job runs; pause through POWER, STATUS and
MPRESUME read over the bus."""

import json
import os
from pathlib import Path

import pytest

from common.verilator import build
from engine import spec
from engine.csr import EngineBus
from engine.sequencer import Engine

S = spec.load()
R = S.csr.registers
M = S.memory
VEC = os.environ.get("ENGINE_VECTORS")


def test_every_spec_field_is_bound_once():
    from engine.csr import _bindings
    e = Engine("v1")
    b = _bindings(e, {"on": 0, "en_finished": 0, "en_illegal_opcode": 0}, {"finished": 0, "illegal_opcode": 0}, R["INSTRUCTION"].fields.values())
    fields = {(n, f) for n, r in R.items() for f in r.fields}
    assert set(b) == fields


class Bus:
    def __init__(self, sim):
        self.s = sim

    def _go(self, space, adr, we, dat=0, limit=1000):
        s = self.s
        s.poke("csr_sel", int(space == "csr"))
        s.poke("mem_sel", int(space == "mem"))
        s.poke("adr", adr)
        s.poke("we", int(we))
        s.poke("dat_w", dat)
        s.poke("stb", 1)
        n = s.run_until("ack", 1, limit) if not s.peek("ack") else 0
        v = s.peek("dat_r")
        s.poke("stb", 0)
        s.tick()
        return v, n

    def csr_w(self, name, **fields):
        w = 0
        for k, v in fields.items():
            w = R[name].fields[k].put(w, v)
        self._go("csr", R[name].offset, True, w)

    def csr_r(self, name, field=None):
        v, _ = self._go("csr", R[name].offset, False)
        return R[name].fields[field].get(v) if field else v

    def mem_w(self, off, v):
        self._go("mem", off, True, v)

    def mem_r(self, off, limit=1000):
        return self._go("mem", off, False, 0, limit)

    def set_reg(self, w, r, value):
        for k in range(8):
            self.mem_w(S.rf_offset(w, r) + 4 * k, (value >> (32 * k)) & 0xFFFF_FFFF)

    def reg(self, w, r):
        return sum(self.mem_r(S.rf_offset(w, r) + 4 * k)[0] << (32 * k) for k in range(8))


@pytest.fixture(scope="module")
def bus():
    dut = EngineBus("v2")
    sim = build(dut, dut.ios, "engine_bus_v2", clocks={"sys": spec.mul_clock_ratio("v2"), "mul": 1})
    yield Bus(sim)
    sim.close()


def test_undecoded_and_ucode_roundtrip(bus):
    und = M["undecoded_read"]
    assert bus.mem_r(M["rf_offset"] - 4)[0] == und
    assert bus.mem_r(M["rf_offset"] + M["rf_size"])[0] == und
    assert bus.mem_r(2)[0] == und
    bus.mem_w(4 * 7, 0x1234_5678)
    assert bus.mem_r(4 * 7)[0] == 0x1234_5678
    bus.set_reg(5, 9, (1 << 255) | 0xABCDEF)
    assert bus.reg(5, 9) == (1 << 255) | 0xABCDEF


@pytest.mark.skipif(not VEC, reason="ENGINE_VECTORS not set")
def test_x25519_over_the_bus_with_irq_and_pause(bus):
    m = json.loads((Path(VEC) / "manifest.json").read_text())
    p = next(p for p in m["programs"] if p["isa"] == "v2" and p["name"] == "x25519")
    words = [int(x, 16) for x in (Path(VEC) / p["hex"]).read_text().split()]
    for k, w in enumerate(words):
        bus.mem_w(M["ucode_offset"] + 4 * (p["mpstart"] + k), w)
    v = p["vectors"][0]
    le = lambda h: int.from_bytes(bytes.fromhex(h), "little")  # noqa: E731
    win = 2
    for r, x in zip(p["inputs"], v["inputs"]):
        bus.set_reg(win, r, le(x))
    bus.csr_w("WINDOW", window=win)
    bus.csr_w("MPSTART", mpstart=p["mpstart"])
    bus.csr_w("MPLEN", mplen=p["mplen"])
    bus.csr_w("EV_ENABLE", finished=1, illegal_opcode=1)
    assert bus.csr_r("MPLEN", "mplen") == p["mplen"]
    bus.csr_w("CONTROL", go=1)
    assert bus.csr_r("STATUS", "running") == 1
    # a memory-window read stalls while the job runs
    bus.s.tick(100)
    bus.csr_w("POWER", pause_req=1)
    bus.s.tick(20)
    assert bus.csr_r("STATUS", "pause_gnt") == 1
    mpc = bus.csr_r("STATUS", "mpc")
    assert bus.csr_r("MPRESUME", "mpresume") == mpc
    assert bus.reg(win, 0) is not None          # the bus reads the RF while paused
    bus.csr_w("POWER", pause_req=0)
    _, waited = bus.mem_r(S.rf_offset(win, 0), limit=100_000)
    assert waited > 1000, "memory window did not stall during the job"
    bus.s.run_until("irq", 1, 100_000)
    assert bus.csr_r("EV_PENDING", "finished") == 1 and bus.csr_r("STATUS", "running") == 0
    assert bus.reg(win, p["output"]) == le(v["expected"])
    bus.csr_w("EV_PENDING", finished=1)
    assert bus.s.peek("irq") == 0 and bus.csr_r("EV_PENDING", "finished") == 0
