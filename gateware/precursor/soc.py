"""The simulated Precursor SoC: LiteX + VexRiscv (linux variant: MMU, supervisor mode, atomics,
the custom interrupt CSRs) on Verilator, with Precursor's memory map and the CSR blocks the Xous
kernel and the base services use, at Precursor's addresses (map.py pins every one).

    python -m precursor.soc build [--clk-freq HZ]      # build (cached) and print the build dir

The build is cached under $GATEWARE_BUILD_DIR/precursor-<key>/, keyed by the sources of this
package, the LiteX/VexRiscv versions and the parameters; a program runs on it without a
rebuild (run.py writes the ROM and RAM images next to the simulator at run time).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import inspect
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from functools import reduce
from operator import or_

from litex.soc.interconnect import csr_bus, wishbone
from migen import Signal

from litex.build.generic_platform import Pins
from litex.build.io import CRG
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.soc.integration import export
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "precursor"

from . import blocks
from . import map as pmap
from . import svd
from . import tester
from .peripherals import VERILOG_SOURCES, CycleCounter, Keyboard, MemLCD, PowerCycle, PrecursorUART, SimCtl, SimFault, SusRes, TickTimer, Timer0, WDT, WFI

HERE = Path(__file__).resolve().parent
# the files that define the hardware (the build cache key; of this file, the SoC class and
# the platform: the build functions below are not hardware)
HARDWARE_SOURCES = ["peripherals.py", "pagebus.py", "map.py", "blocks.py", "tester.py"]

# The files the Verilated simulator reads and writes at run time, in its working directory.
ROM_INIT = "sim_rom.init"
RAM_INIT = "sim_sram_ext.init"
UART_LOG = "uart.log"
CONSOLE_LOG = "console.log"
MEMLCD_LOG = "memlcd.log"      # every line the memory LCD block sends to its panel
KEYS_LOG = "keys.log"          # every byte the keyboard block took from the debug UART
FINISH = "finish.txt"
PROGRESS = "progress.txt"      # the cycle count, rewritten every 2^22 cycles
PROFILE = "profile.txt"        # PC samples with the plusarg +profile=<period> (sim_finish.v)
SVD = "soc.svd"                # the SoC's register map (svd.soc_svd), next to csr.csv


class PrecursorSim(SoCCore):
    """`blocks`: functions `fn(soc, config)` called after the SoC's own blocks, each adding a block from
    another part of the gateware (the TRNG, the engine) with `add_csr_page` / `add_bus_region`
    / `add_irq` at the addresses map.py pins for it."""

    def __init__(self, platform, clk_freq: int, blocks=(), config=None):
        self.csr_pages = {}      # name -> (location, Wishbone slave): pages not made of LiteX CSRs
        self.csr_page_regs = {}  # name -> [svd.Reg]: their register maps (the SVD's peripherals)
        self.extra_clocks = {}   # pad name -> Hz: further simulation clocks (edges aligned with sys)
        self.sim_modules = []    # (litex_sim module, pad, args): further simulator modules (tester.py)
        SoCCore.__init__(
            self, platform, clk_freq,
            ident="", ident_version=False,
            cpu_type="vexriscv", cpu_variant="linux", cpu_reset_address=pmap.ROM_BASE,
            integrated_rom_size=pmap.ROM_SIZE, integrated_rom_init=[0],
            integrated_sram_size=0,
            csr_data_width=32, csr_address_width=pmap.CSR_ADDRESS_WIDTH, csr_paging=pmap.CSR_PAGING,
            with_uart=False, with_timer=False, with_ctrl=False,
            bus_timeout=1e6,
        )
        # the sys domain's reset is the power cycle's (PowerCycle: a power-down followed by a
        # power-up resets the CPU and every block, the RAM keeps its contents)
        power_rst = Signal()
        self.submodules.crg = CRG(platform.request("sys_clk"), rst=power_rst)

        # main RAM: Precursor's external SRAM (sram_ext, 16 MiB at 0x4000_0000)
        self.add_ram("sram_ext", origin=pmap.SRAM_EXT_BASE, size=pmap.SRAM_EXT_SIZE, contents=[0])

        # pin every CSR location and IRQ before any block is added
        for name, loc in pmap.CSR_LOCS.items():
            self.csr.add(name, n=loc)
        for name, irq in pmap.IRQS.items():
            self.irq.add(name, n=irq)

        self.submodules.cycles = cycles = CycleCounter()
        self.submodules.uart = PrecursorUART(cycles.value, UART_LOG)
        self.submodules.console = PrecursorUART(cycles.value, CONSOLE_LOG)
        self.submodules.ticktimer = TickTimer(clks_per_tick=clk_freq // 1000)
        self.submodules.wdt = WDT()
        self.submodules.wfi = WFI()
        self.submodules.timer0 = Timer0(clk_freq)
        self.submodules.susres = SusRes(self.ticktimer)
        # the memory LCD: registers on its CSR page, the frame buffer at Precursor's region
        self.submodules.memlcd = MemLCD(cycles.value, MEMLCD_LOG)
        self.bus.add_slave("memlcd_fb", self.memlcd.bus, SoCRegion(origin=pmap.MEMLCD_FB_BASE, size=pmap.MEMLCD_FB_SIZE, cached=False))
        # the keyboard: characters typed on the debug UART (run.py --keys)
        self.submodules.keyboard = Keyboard(cycles.value, KEYS_LOG)
        self.submodules.power = PowerCycle(self.susres.off)
        self.comb += power_rst.eq(self.power.rst)
        self.submodules.simctl = SimCtl(cycles.value, bite=self.wdt.bite, filename=FINISH, off=self.susres.off, power=self.power)
        self.submodules.simfault = SimFault()
        for v in VERILOG_SOURCES:
            platform.add_source(str(v))
        for fn in blocks:
            fn(self, config)

    def add_csr_page(self, name: str, bus, regs: list):
        """A block whose registers are not LiteX CSRs, behind a Wishbone slave (word addressed)
        that takes the whole 4 KiB page at its pinned location (map.PAGE_LOCS); `regs`, its
        register map (svd.Reg), goes into the SoC's SVD."""
        loc = pmap.PAGE_LOCS[name]
        assert name not in self.csr_pages and loc not in {l for l, _ in self.csr_pages.values()}
        self.csr.add(name, n=loc)            # reserve the page: LiteX places nothing there
        self.csr_pages[name] = (loc, bus)
        self.csr_page_regs[name] = list(regs)

    def add_bus_region(self, name: str, bus):
        """A Wishbone slave outside the CSR space, at its pinned region (map.REGIONS)."""
        origin, size = pmap.REGIONS[name]
        self.bus.add_slave(name, bus, SoCRegion(origin=origin, size=size, cached=False))

    def add_irq(self, name: str, signal):
        """An interrupt line of a block not built from LiteX event managers (map.IRQS)."""
        self.comb += self.cpu.interrupt[pmap.IRQS[name]].eq(signal)

    def add_csr_bridge(self, name="csr", origin=None, register=False):
        """LiteX's CSR bridge, with a Wishbone decoder in front of it that sends the pages of
        `csr_pages` to their own slaves (the CSR space stays one region at 0xF000_0000)."""
        data_width = self.csr.data_width
        bridge = wishbone.Wishbone2CSR(
            wishbone.Interface(address_width=self.bus.address_width, data_width=data_width),
            bus_csr=csr_bus.Interface(address_width=self.csr.address_width, data_width=data_width),
            register=register)
        self.add_module(name=f"{name}_bridge", module=bridge)
        front = wishbone.Interface(address_width=self.bus.address_width, data_width=data_width)
        words_per_page = pmap.CSR_PAGING // 4
        lo = words_per_page.bit_length() - 1
        hi = self.csr.address_width

        def page(a):
            return a[lo:hi]
        locs = [loc for loc, _ in self.csr_pages.values()]
        slaves = [((lambda a, loc=loc: page(a) == loc), bus) for loc, bus in self.csr_pages.values()]
        if locs:
            slaves.append((lambda a: ~reduce(or_, [page(a) == l for l in locs]), bridge.wishbone))
        else:
            slaves.append((lambda a: 1, bridge.wishbone))
        self.submodules.csr_page_decoder = wishbone.Decoder(front, slaves, register=False)
        size = 2 ** (self.csr.address_width + 2)
        self.bus.add_slave(name=name, slave=front, region=SoCRegion(origin=origin, size=size, cached=False, decode=self.cpu.csr_decode))
        self.csr.add_master(name=name, master=bridge.csr)
        self.add_config("CSR_DATA_WIDTH", self.csr.data_width)
        self.add_config("CSR_ALIGNMENT", self.csr.alignment)

    def csr_csv(self) -> str:
        """LiteX's csr.csv plus a `csr_base` line for every page of `csr_pages`."""
        text = export.get_csr_csv(csr_regions=self.csr_regions, constants=self.constants, mem_regions=self.mem_regions)
        extra = "".join(f"csr_base,{n},{pmap.CSR_BASE + loc * pmap.CSR_PAGING:#010x},,\n" for n, (loc, _) in self.csr_pages.items())
        lines = text.splitlines(keepends=True)
        at = max(i for i, l in enumerate(lines) if l.startswith("csr_base,")) + 1 if any(l.startswith("csr_base,") for l in lines) else 0
        return "".join(lines[:at]) + extra + "".join(lines[at:])


def _platform() -> SimPlatform:
    # eng_clk: the engine's sequencer clock (blocks.add_engine)
    # serial: the TRNG tester's bridge (tester.py)
    return SimPlatform("SIM", [("sys_clk", 0, Pins(1)), ("sys_rst", 0, Pins(1)), ("eng_clk", 0, Pins(1)), tester.pads()])


def build_key(clk_freq: int, config: dict) -> str:
    """Cache key: this package's sources, the LiteX/VexRiscv/Verilator versions, the clock."""
    h = hashlib.sha256()
    for f in [HERE / n for n in HARDWARE_SOURCES] + sorted(HERE.glob("*.v")) + blocks.sources():
        h.update(str(f.relative_to(HERE.parents[1])).encode())
        h.update(f.read_bytes())
    import litex
    import pythondata_cpu_vexriscv
    vex = Path(pythondata_cpu_vexriscv.data_location) / "VexRiscv_Linux.v"
    h.update(vex.read_bytes())
    h.update(str(Path(litex.__file__).resolve().parent).encode())
    try:
        h.update(subprocess.run(["verilator", "--version"], capture_output=True, text=True).stdout.encode())
    except OSError:
        pass
    h.update(inspect.getsource(PrecursorSim).encode())
    h.update(inspect.getsource(_platform).encode())
    h.update(str(clk_freq).encode())
    h.update(json.dumps(config, sort_keys=True).encode())
    return h.hexdigest()[:16]


def svd_without_build(clk_freq: int = pmap.CLK_FREQ) -> str:
    """The SoC's SVD from its elaborated description (no Verilator build: seconds)."""
    logging.disable(logging.INFO)
    soc = PrecursorSim(_platform(), clk_freq, blocks.ALL, blocks.config())
    soc.finalize()
    return svd.soc_svd(soc)


def build_dir_root() -> Path:
    d = os.environ.get("GATEWARE_BUILD_DIR")
    if d:
        return Path(d)
    t = os.environ.get("CARGO_TARGET_DIR")
    return (Path(t) if t else HERE.parents[1] / "target") / "gateware" / "verilator"


def build(clk_freq: int = pmap.CLK_FREQ, verbose: bool = False) -> Path:
    """Build (or reuse) the Verilated SoC; returns its gateware dir (obj_dir/Vsim, csr.csv)."""
    config = blocks.config()
    key = build_key(clk_freq, config)
    out = build_dir_root() / f"precursor-{key}"
    gw = out / "gateware"
    stamp = out / "built.json"
    if stamp.is_file() and (gw / "obj_dir" / "Vsim").is_file():
        return gw
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # one build of a key at a time
        if stamp.is_file() and (gw / "obj_dir" / "Vsim").is_file():
            return gw
        _build(out, gw, stamp, key, clk_freq, config, verbose)
    return gw


def _build(out: Path, gw: Path, stamp: Path, key: str, clk_freq: int, config: dict, verbose: bool) -> None:
    if out.exists():
        shutil.rmtree(out)
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    if not verbose:
        logging.disable(logging.INFO)   # LiteX's per-block INFO lines and hierarchy dump
    platform = _platform()
    soc = PrecursorSim(platform, clk_freq, blocks.ALL, config)
    sim_config = SimConfig()
    sim_config.add_clocker("sys_clk", freq_hz=clk_freq)
    for pad, hz in soc.extra_clocks.items():
        sim_config.add_clocker(pad, freq_hz=hz)
    for module, pad, args in soc.sim_modules:
        sim_config.add_module(module, pad, args=args)
    gtmp = tmp / "gateware"
    gtmp.mkdir(parents=True)
    # no Builder: it would generate the BIOS's software includes, which this SoC does not use
    soc.platform.output_dir = str(tmp)
    soc.finalize()
    # LiteX's sim Makefile runs `make -j$(JOBS)`: without JOBS that is an unbounded -j, about 90
    # compilers at once for this SoC (gigabytes of memory on a 2-core machine)
    soc.build(build_dir=str(gtmp), sim_config=sim_config, run=False, opt_level="O3", interactive=False, verbose=verbose,
              jobs=max(1, len(os.sched_getaffinity(0))))
    (gtmp / "csr.csv").write_text(soc.csr_csv())
    (gtmp / SVD).write_text(svd.soc_svd(soc))
    (gtmp / "csr.json").write_text(export.get_csr_json(csr_regions=soc.csr_regions, constants=soc.constants, mem_regions=soc.mem_regions))
    r = subprocess.run(["bash", "build_sim.sh"], cwd=gtmp, capture_output=True, text=True)
    if r.returncode != 0 or not (gtmp / "obj_dir" / "Vsim").is_file():
        tail = "\n".join((r.stdout + r.stderr).splitlines()[-40:])
        raise RuntimeError(f"Verilator build of the simulated Precursor failed:\n{tail}")
    (tmp / "built.json").write_text(json.dumps({"key": key, "clk_freq": clk_freq}) + "\n")
    tmp.rename(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build (cached) and print the build directory")
    b.add_argument("--clk-freq", type=int, default=pmap.CLK_FREQ)
    b.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.cmd == "build":
        print(build(a.clk_freq, a.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
