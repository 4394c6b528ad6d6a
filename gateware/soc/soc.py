"""The benchmark SoC: LiteX on litex_sim's platform (Verilator), a VexRiscv `imac` (RV32IMAC,
compressed instructions, as on Precursor) at 100 MHz, ROM + SRAM, the sim UART, a `sim_finish`
CSR, and the engine peripheral (engine.py) at the spec's addresses with Precursor's clocking
(sequencer at half the CPU clock, multiplier at the CPU clock).

    python -m soc.soc --out DIR [--isa v1 --isa v2] [--no-compile]

generates the Verilog, csr.csv (the region and CSR map: firmware/soc-bench's build reads it)
and soc.json (clocks, ISAs, ROM init file), then builds the Verilated simulator
(DIR/gateware/obj_dir/Vsim). The ROM is built full size with zeros: a firmware is run by
writing its image into DIR/gateware/<rom init> and starting Vsim in that directory (xtask does
it in a private run directory), without rebuilding.

Adding peripherals: `BenchSoC(peripherals=[fn, ...])`, or append to `EXTRA_PERIPHERALS`; each
`fn(soc)` adds its modules, bus regions and interrupts (e.g. the TRNG beside the engine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from migen import ClockDomain, ClockSignal, ResetSignal  # noqa: E402

from litex.build.generic_platform import Pins  # noqa: E402
from litex.build.sim import SimPlatform  # noqa: E402
from litex.build.sim.config import SimConfig  # noqa: E402
from litex.build.io import CRG  # noqa: E402
from litex.soc.integration.builder import Builder  # noqa: E402
from litex.soc.integration.soc import SoCRegion  # noqa: E402
from litex.soc.integration.soc_core import SoCCore  # noqa: E402
from litex.tools import litex_sim  # noqa: E402

from soc.engine import EnginePeripheral  # noqa: E402
from trng.soc import add_trng  # noqa: E402

ROM_SIZE = 0x2_0000     # firmware image (code + initialized data)
SRAM_SIZE = 0x1_0000    # data, bss, stack
CPU_VARIANT = "imac"    # RV32IMAC: compressed instructions, like Precursor's VexRiscv

# Extra peripherals, each `fn(soc)`: called after the engine, in order.
EXTRA_PERIPHERALS: list = [add_trng]  # the TRNG beside the engine (gateware/trng/soc.py)


def _io():
    # litex_sim's pads plus the engine's clock (a second clocker in the simulation)
    return list(litex_sim._io) + [("eng_clk", 0, Pins(1))]


class BenchSoC(SoCCore):
    def __init__(self, isas=("v1", "v2"), peripherals=(), rom_size=ROM_SIZE, sram_size=SRAM_SIZE):
        platform = SimPlatform("SIM", _io())
        self.engine_isas = tuple(isas)
        engine = EnginePeripheral(self.engine_isas)
        self.clock_hz = engine.clock_hz
        self.crg = CRG(platform.request("sys_clk"))
        SoCCore.__init__(
            self, platform, clk_freq=self.clock_hz["sys"],
            cpu_type="vexriscv", cpu_variant=CPU_VARIANT,
            integrated_rom_size=rom_size, integrated_rom_init=[0] * (rom_size // 4),
            integrated_sram_size=sram_size,
            uart_name="sim", with_timer=True, timer_uptime=True,
            ident="engine25519 SoC benchmark", ident_version=False,
        )
        # Clock domains: sys (CPU, bus, multiplier through `mul`) and eng (engine sequencer).
        self.cd_eng = ClockDomain()
        self.cd_mul = ClockDomain()
        self.comb += [
            self.cd_eng.clk.eq(platform.request("eng_clk")),
            self.cd_eng.rst.eq(ResetSignal("sys")),
            self.cd_mul.clk.eq(ClockSignal("sys")),
            self.cd_mul.rst.eq(ResetSignal("sys")),
        ]
        # sim_finish (firmware ends the simulation), sim_marker, sim_trace
        platform.add_debug(self, reset=0)

        self.engine = engine
        for name, (origin, size) in engine.regions.items():
            bus = engine.csr_bus if name == "engine_csr" else engine.mem_bus
            self.bus.add_slave(name, bus, SoCRegion(origin=origin, size=size, cached=False))
        self.irq.add("engine", n=engine.irq_line)

        for fn in list(peripherals) + list(EXTRA_PERIPHERALS):
            fn(self)


class _Builder(Builder):
    """LiteX's builder without the C software side (BIOS, libc headers): the firmware is Rust
    and reads csr.csv."""

    def add_software_package(self, name, src_dir=None):
        pass

    def _generate_includes(self, with_bios=True):
        super()._generate_includes(with_bios=False)

    def _prepare_rom_software(self):
        pass

    def _generate_rom_software(self, compile_bios=True):
        pass


def sim_config(soc: BenchSoC) -> SimConfig:
    c = SimConfig()
    c.add_clocker("sys_clk", freq_hz=soc.clock_hz["sys"])
    c.add_clocker("eng_clk", freq_hz=soc.clock_hz["eng"])
    c.add_module("serial2console", "serial")
    return c


def build(out: Path, isas, compile_sim: bool = True, peripherals=()) -> dict:
    out = out.resolve()
    soc = BenchSoC(isas=isas, peripherals=peripherals)
    builder = _Builder(soc, output_dir=str(out), compile_software=False, compile_gateware=False,
                      csr_csv=str(out / "csr.csv"))
    builder.build(sim_config=sim_config(soc), run=False, interactive=False, opt_level="O3", jobs=2)
    gw = out / "gateware"
    rom_inits = sorted(p.name for p in gw.glob("*rom*.init"))
    assert len(rom_inits) == 1, f"expected one ROM init file in {gw}, found {rom_inits}"
    meta = {
        "isas": list(soc.engine_isas),
        "clock_hz": soc.clock_hz,
        "cpu": f"vexriscv {CPU_VARIANT}",
        "rom_init": rom_inits[0],
        "rom_size": soc.bus.regions["rom"].size,
        "regions": {n: [r.origin, r.size] for n, r in soc.bus.regions.items()},
        "engine_irq": soc.engine.irq_line,
    }
    if compile_sim:
        t0 = time.monotonic()
        script = next(gw.glob("build_*.sh"))
        r = subprocess.run(["bash", script.name], cwd=gw, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not (gw / "obj_dir" / "Vsim").is_file():
            sys.stdout.write(r.stdout[-20000:])
            raise SystemExit(f"Verilator build of the SoC failed (exit {r.returncode})")
        meta["compile_s"] = round(time.monotonic() - t0, 1)
    (out / "soc.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="build directory")
    ap.add_argument("--isa", action="append", choices=["v1", "v2"], help="engine builds on the bus (repeatable; default v1 and v2)")
    ap.add_argument("--no-compile", action="store_true", help="generate Verilog, csr.csv and soc.json only")
    a = ap.parse_args(argv)
    meta = build(a.out, a.isa or ["v1", "v2"], compile_sim=not a.no_compile)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
