"""The benchmark SoC (gateware/soc): the addresses, interrupt and clocks LiteX ends up with equal
the spec's, and the Wishbone adapter crosses into the engine's half-rate clock exactly (Migen
simulation against a fake target that speaks csr.py's bus protocol)."""

import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from migen import If, Module, Signal, run_simulation  # noqa: E402

from engine import spec  # noqa: E402
from soc import csrmap  # noqa: E402
from soc import soc as soc_mod  # noqa: E402
from soc.engine import CPU_CLK_HZ  # noqa: E402
from soc.engine_wishbone import EngineWishbone  # noqa: E402

S = spec.load()


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return csrmap.build_dir(tmp_path_factory)


def test_engine_regions_are_the_spec_addresses(build_dir):
    regions = csrmap.regions(build_dir)
    m = S.memory
    assert regions["engine_csr"] == (S.csr.base, m["page_size"], "io")
    assert regions["engine_mem"] == (m["base"], m["size"], "io")
    assert regions["engine_csr"][0] == 0xF002_0000 and regions["engine_mem"][0] == 0xE002_0000
    # nothing else overlaps them
    assert csrmap.overlaps(regions, ("engine_csr", "engine_mem")) == []


def test_engine_interrupt_and_clocks(build_dir):
    consts = csrmap.constants(build_dir)
    assert int(consts["engine_interrupt"]) == S.csr.irq
    meta = json.loads((build_dir / "soc.json").read_text())
    for isa in meta["isas"]:
        i = S.isas[isa]
        assert meta["clock_hz"] == {"sys": CPU_CLK_HZ, "eng": i.eng_clk_hz, "mul": i.mul_clk_hz}
    assert meta["clock_hz"]["eng"] * 2 == meta["clock_hz"]["sys"] == meta["clock_hz"]["mul"]
    assert meta["cpu"] == "vexriscv imac"


def test_cpu_has_compressed_instructions(build_dir):
    v = (build_dir / "gateware" / "build_sim.sh").read_text()
    assert "VexRiscv_IMAC.v" in v


class FakeTarget(Module):
    """csr.py's bus: `stb` level until a registered one-cycle `ack`; CSR accesses answer in one
    cycle, memory accesses after `mem_wait` more (the engine's RF read-modify-write). Counts
    the accesses it serves."""

    def __init__(self, mem_wait=2):
        for n, w in (("csr_sel", 1), ("mem_sel", 1), ("adr", 32), ("we", 1), ("dat_w", 32), ("stb", 1), ("ack", 1), ("dat_r", 32)):
            setattr(self, n, Signal(w, name=n))
        self.served = Signal(16)
        self.regs = regs = [Signal(32, name=f"r{i}") for i in range(8)]
        wait = Signal(4)
        idx = Signal(3)
        self.comb += idx.eq(self.adr[2:5] ^ (self.mem_sel << 2))
        rd = Signal(32)
        self.comb += [If(idx == k, rd.eq(regs[k])) for k in range(8)]
        self.sync += [
            self.ack.eq(0),
            If(self.stb & ~self.ack,
                If(self.mem_sel & (wait != mem_wait), wait.eq(wait + 1)).Else(
                    wait.eq(0), self.ack.eq(1), self.dat_r.eq(rd), self.served.eq(self.served + 1),
                    *[If(self.we & (idx == k), regs[k].eq(self.dat_w)) for k in range(8)],
                ),
            ),
        ]


def _dut(domain):
    class Dut(Module):
        def __init__(self):
            self.t = t = FakeTarget()
            if domain != "sys":
                from migen import ClockDomainsRenamer
                t = ClockDomainsRenamer({"sys": domain})(t)
            self.submodules.t = t
            self.submodules.bridge = EngineWishbone(self.t, csr_size=0x1000, mem_size=0x2_0000, target_domain=domain)
    return Dut()


@pytest.mark.parametrize("domain,clocks", [
    ("eng", {"sys": 10, "eng": (20, 5)}),   # half rate, rising edges aligned (Precursor)
    ("sys", {"sys": 10}),                   # same clock
])
def test_adapter_round_trips_every_access_once(domain, clocks):
    dut = _dut(domain)
    rng = random.Random(7)
    log = []

    def gen():
        want = {}
        n = 0
        for _ in range(60):
            space = rng.choice(["csr", "mem"])
            bus = dut.bridge.csr_bus if space == "csr" else dut.bridge.mem_bus
            k = rng.randrange(4)
            # word address somewhere in the region's alias; the adapter passes the byte offset
            base = 0xF002_0000 if space == "csr" else 0xE002_0000
            adr = (base >> 2) + k
            key = k ^ (4 if space == "mem" else 0)
            if rng.random() < 0.5:
                v = rng.getrandbits(32)
                yield from bus.write(adr, v)
                want[key] = v
            else:
                got = yield from bus.read(adr)
                log.append((key, got, want.get(key, 0)))
            n += 1
            for _ in range(rng.randrange(3)):
                yield
        for _ in range(10):
            yield
        served = yield dut.t.served
        assert served == n, f"target served {served} accesses for {n} bus cycles"

    run_simulation(dut, {"sys": gen()}, clocks=clocks)
    assert log and all(got == want for _, got, want in log), [x for x in log if x[1] != x[2]]


def test_one_isa_and_an_extra_peripheral(tmp_path):
    """A SoC with one engine build has no select CSR; a peripheral passed to the builder hook
    lands in the map beside the engine, which stays at the spec's addresses."""
    from litex.soc.interconnect.csr import AutoCSR, CSRStorage

    class Extra(Module, AutoCSR):
        def __init__(self):
            self.probe = CSRStorage(8)

    def add_extra(soc):
        soc.extra = Extra()

    meta = soc_mod.build(tmp_path, ["v2"], compile_sim=False, peripherals=[add_extra])
    assert meta["isas"] == ["v2"]
    rows = csrmap.rows(tmp_path)
    regs = {r[1] for r in rows if r[0] == "csr_register"}
    assert "extra_probe" in regs
    assert not any(r.startswith("engine_select") for r in regs)
    regions = {r[1]: int(r[2], 0) for r in rows if r[0] == "memory_region"}
    assert regions["engine_csr"] == S.csr.base and regions["engine_mem"] == S.memory["base"]


def test_overlap_rule_catches_overlaps():
    got = {"a": (0x1000, 0x1000, "io"), "b": (0x1800, 0x1000, "io"), "c": (0x2800, 0x100, "io")}
    assert csrmap.overlaps(got, ("a",)) == ["b overlaps a"]
    assert csrmap.overlaps(got, ("c",)) == []
