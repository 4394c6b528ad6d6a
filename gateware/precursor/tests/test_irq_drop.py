"""The simulation's interrupt fault injector (peripherals.IrqDropper, simfault ENGINE_IRQ_DROP):
untouched it passes the line as is; after a load of N it swallows exactly the next N
interrupts, each until its line falls, and passes the one after (step sim:soc)."""

from __future__ import annotations

from migen import Signal, run_simulation

from precursor.peripherals import IrqDropper


def _run(pattern, load_at=None, n=0):
    line, count, load = Signal(), Signal(8), Signal()
    dut = IrqDropper(line, count, load)
    seen = []

    def gen():
        for i, v in enumerate(pattern):
            yield line.eq(v)
            yield count.eq(n)
            yield load.eq(1 if i == load_at else 0)
            yield
            seen.append((yield dut.out))
        seen.append((yield dut.left))

    run_simulation(dut, gen())
    return seen[:-1], seen[-1]


# three interrupts, each held high a few cycles, then acknowledged
PULSES = [0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0]


def test_passes_the_line_untouched():
    out, left = _run(PULSES)
    assert out == PULSES and left == 0


def test_drops_exactly_the_next_n_interrupts():
    out, left = _run(PULSES, load_at=0, n=2)
    assert left == 0
    # the first two interrupts never show, the third does, whole
    assert sum(out[:10]) == 0
    assert sum(out[10:]) == 3


def test_a_load_of_zero_drops_nothing():
    out, left = _run(PULSES, load_at=0, n=0)
    assert out == PULSES and left == 0


def test_the_device_clients_simctl_constants_match_the_built_soc():
    """The self-test client (apps/device-selftest) maps the simfault page and writes
    ENGINE_IRQ_DROP at the addresses its lib.rs states; they must be the built SoC's (csr.csv)."""
    import csv
    import re
    from pathlib import Path

    from precursor import soc as psoc

    lib = (Path(__file__).resolve().parents[3] / "apps" / "device-selftest" / "src" / "lib.rs").read_text()
    const = {m[1]: int(m[2].replace("_", ""), 0) for m in re.finditer(r"pub const (SIMFAULT_\w+): usize = (0x[0-9A-Fa-f_]+);", lib)}
    gw = psoc.build()
    regs, bases = {}, {}
    with open(gw / "csr.csv") as f:
        for row in csv.reader(l for l in f if not l.startswith("#")):
            if row[0] == "csr_register":
                regs[row[1]] = int(row[2], 0)
            elif row[0] == "csr_base":
                bases[row[1]] = int(row[2], 0)
    assert len(const) == 3, const
    assert const["SIMFAULT_BASE"] == bases["simfault"]
    simctl = re.search(r"pub const SIMCTL_BASE: usize = (0x[0-9A-Fa-f_]+);", lib)
    assert simctl and int(simctl[1].replace("_", ""), 0) == bases["simctl"]
    assert const["SIMFAULT_BASE"] + const["SIMFAULT_ENGINE_IRQ_DROP"] == regs["simfault_engine_irq_drop"]
    assert const["SIMFAULT_BASE"] + const["SIMFAULT_ENGINE_IRQ_LEFT"] == regs["simfault_engine_irq_left"]
