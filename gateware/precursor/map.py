"""Precursor's memory map and CSR/IRQ assignment for the blocks the simulated SoC provides, pinned
here once (soc.py builds from it; tests/test_map.py checks the built csr.csv and this table
against Precursor's SVD, `precursor/soc-pvt.svd` of utralib 0.1.15, the crate the device kernel
is built with).

Precursor's CSR space: 0xF000_0000, one 4 KiB page per block (LiteX csr_paging 0x1000,
64 pages, 32-bit CSR words): a block at location n has its base at 0xF000_0000 + n * 0x1000.
"""

import tomllib
from pathlib import Path

CSR_BASE = 0xF000_0000
CSR_PAGING = 0x1000
CSR_ADDRESS_WIDTH = 16            # 2**16 words of 4 bytes = 0x4_0000 bytes = 64 pages
CSR_SIZE = 0x4_0000

ROM_BASE = 0x0000_0000            # reset vector: the machine-mode start stub (not on Precursor)
ROM_SIZE = 0x1_0000
SRAM_EXT_BASE = 0x4000_0000       # Precursor's main RAM (external SRAM)
SRAM_EXT_SIZE = 0x100_0000        # 16 MiB
# The memory LCD's frame buffer (Precursor's `memlcd` memory region): 536 lines of 11 words
MEMLCD_FB_BASE = 0xB000_0000
MEMLCD_FB_SIZE = 0x5C20

# Declared clock: Precursor's CPU clock (LITEX_CONFIG_CLOCK_FREQUENCY = 100 MHz). The ticktimer
# counts milliseconds of this clock (CLK_FREQ / 1000 cycles per tick), so every time the
# software sees is device time at 100 MHz.
CLK_FREQ = 100_000_000

# block -> CSR location (base = CSR_BASE + loc * CSR_PAGING), as on Precursor
CSR_LOCS = {
    "timer0": 0x01,      # 0xF000_1000 OS preemption timer (xous-susres)
    "uart": 0x05,        # 0xF000_5000 kernel UART
    "console": 0x07,     # 0xF000_7000 console UART (xous-log)
    "ticktimer": 0x12,   # 0xF001_2000
    "susres": 0x13,      # 0xF001_3000 suspend/resume (xous-susres)
    "wdt": 0x22,         # 0xF002_2000
    "wfi": 0x25,         # 0xF002_5000
    "keyboard": 0x17,    # 0xF001_7000 the keyboard (here: characters typed on the debug UART)
    "memlcd": 0x0C,      # 0xF000_C000 the memory LCD's registers (its frame buffer: MEMLCD_FB)
    "simctl": 0x3F,      # 0xF003_F000 simulation control: not on Precursor (its last page is empty)
    "simfault": 0x10,    # 0xF001_0000 fault injection: not on Precursor (an empty page inside the CSR
                         # region a Precursor image's MREx tag gives the kernel, so a process may map it)
}

# Blocks from other parts of the gateware, as whole 4 KiB pages (soc.add_csr_page): page
# location; their regions outside the CSR space (soc.add_bus_region): (origin, size); their
# interrupt lines. Read from their spec files (the one source of truth for those blocks);
# tests/test_soc.py checks them against Precursor's SVD too.
SPEC = Path(__file__).resolve().parents[2] / "spec"


def _spec_blocks():
    with open(SPEC / "trng.toml", "rb") as f:
        trng = tomllib.load(f)["regs"]
    pages, irqs = {}, {}
    for page, name in (("server", "trng_server"), ("kernel", "trng_kernel")):
        base = trng[page]["base"]
        assert base % CSR_PAGING == 0 and CSR_BASE <= base < CSR_BASE + CSR_SIZE, f"spec/trng.toml {page}: base {base:#x}"
        pages[name] = (base - CSR_BASE) // CSR_PAGING
        irqs[name] = trng[page]["irq"]
    with open(SPEC / "engine25519.toml", "rb") as f:
        eng = tomllib.load(f)
    base = eng["csr"]["base"]
    assert base % CSR_PAGING == 0 and CSR_BASE <= base < CSR_BASE + CSR_SIZE, f"spec/engine25519.toml csr.base {base:#x}"
    pages["engine"] = (base - CSR_BASE) // CSR_PAGING
    irqs["engine"] = eng["csr"]["irq"]
    regions = {"engine_mem": (eng["memory"]["base"], eng["memory"]["size"])}
    return pages, irqs, regions


PAGE_LOCS, _SPEC_IRQS, REGIONS = _spec_blocks()

# block -> interrupt line (bit in VexRiscv's external interrupt array, the sim/sip CSRs)
IRQS = {
    "timer0": 0,
    "uart": 2,
    "console": 3,
    "ticktimer": 8,
    "susres": 9,
    "keyboard": 13,
    **_SPEC_IRQS,
}

assert len(set(IRQS.values())) == len(IRQS), f"two blocks share an interrupt line: {IRQS}"

# The TRNG tester's mailbox (tester.py; spec/trng.toml [tester.mailbox] base): simulation only.
with open(SPEC / "trng.toml", "rb") as _f:
    _tester_base = tomllib.load(_f)["tester"]["mailbox"]["base"]
assert _tester_base % CSR_PAGING == 0 and CSR_BASE <= _tester_base < CSR_BASE + CSR_SIZE, f"mailbox base {_tester_base:#x}"
CSR_LOCS["trng_tester"] = (_tester_base - CSR_BASE) // CSR_PAGING

# Blocks that exist only in the simulation (not compared with the SVD; the test checks that
# Precursor has nothing at their pages).
SIM_ONLY = {"simctl", "simfault", "trng_tester"}


def csr_base(name: str) -> int:
    return CSR_BASE + CSR_LOCS[name] * CSR_PAGING
