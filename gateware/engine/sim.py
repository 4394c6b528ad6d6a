"""The engine on Verilator, driven like the bus does it (microcode and register writes while idle,
GO, wait for the event): `EngineSim(isa)`. Clocks: eng_clk (`sys`) and mul_clk at the spec's
ratio, rising edges aligned."""

from __future__ import annotations

from common.verilator import _ports, build, build_dir, build_verilog
from common.yosys import verilog_of

from . import spec
from .sequencer import Engine

IOS = ["go", "window", "mpstart", "mplen", "pause_req", "mpresume_we", "mpresume_dat", "running", "pause_gnt",
       "mpc", "finished", "illegal", "cycles", "instructions", "instruction", "bus_rf_adr", "bus_rf_we",
       "bus_rf_dat_w", "bus_rf_dat_r", "bus_uc_adr", "bus_uc_sel", "bus_uc_we", "bus_uc_dat_w", "bus_uc_dat_r", "bus_ok"]


class EngineSim:
    def __init__(self, isa: str, netlist: bool = False, target: str = "generic"):
        """`netlist`: simulate yosys's synth_xilinx netlist of the engine (xc7 primitives and their
        simulation models, common/netlist.py) instead of the RTL; same ports, same driver.
        `target`: the datapath's forms for an FPGA (engine/dsp.py); `ecp5` runs its MULT18X18D
        instances on the model in engine/dsp.py."""
        self.isa = isa
        dut = Engine(isa, target=target)
        ratio = spec.mul_clock_ratio(isa)
        ios = [getattr(dut, n) for n in IOS]
        if target != "generic":
            assert not netlist, "the netlist run is of the xc7 synthesis (generic target)"
            from .dsp import model_file
            name = f"engine_{isa}_{target}"
            v = verilog_of(dut, ios, name)
            self.sim = build_verilog(v, _ports(v, ios), name, {"sys": ratio, "mul": 1},
                                     libraries=(model_file(build_dir()),))
        elif netlist:
            from common import netlist as gl
            self.sim = gl.build(dut, ios, f"engine_{isa}_gl", clocks={"sys": ratio, "mul": 1})
        else:
            self.sim = build(dut, ios, f"engine_{isa}", clocks={"sys": ratio, "mul": 1})
        self.regs = spec.load().geometry["regs_per_window"]

    def close(self):
        self.sim.close()

    def load_program(self, words, at=0):
        s = self.sim
        s.poke("bus_uc_sel", 1)
        s.poke("bus_uc_we", 1)
        for k, w in enumerate(words):
            s.poke("bus_uc_adr", at + k)
            s.poke("bus_uc_dat_w", w)
            s.tick()
        s.poke("bus_uc_we", 0)
        s.poke("bus_uc_sel", 0)

    def read_program(self, at, n):
        """n microcode words from `at`, read through the bus's port (idle engine)."""
        s = self.sim
        s.poke("bus_uc_sel", 1)
        words = []
        for k in range(n):
            s.poke("bus_uc_adr", at + k)
            s.tick()  # synchronous read: the word comes one cycle after its address
            words.append(s.peek("bus_uc_dat_r"))
        s.poke("bus_uc_sel", 0)
        return words

    def set_reg(self, window, reg, value):
        s = self.sim
        s.poke("bus_rf_adr", window * self.regs + reg)
        s.poke("bus_rf_dat_w", value)
        s.poke("bus_rf_we", 1)
        s.tick()
        s.poke("bus_rf_we", 0)

    def reg(self, window, reg):
        s = self.sim
        s.poke("bus_rf_adr", window * self.regs + reg)
        s.tick()
        return s.peek("bus_rf_dat_r")

    def clear_window(self, window):
        for r in range(self.regs):
            self.set_reg(window, r, 0)

    def start(self, window, mpstart, mplen):
        s = self.sim
        assert not s.peek("running")
        s.poke("window", window)
        s.poke("mpstart", mpstart)
        s.poke("mplen", mplen)
        s.poke("go", 1)
        s.tick()
        s.poke("go", 0)

    def run(self, window, mpstart, mplen, max_cycles=10_000_000):
        """Run a job to its end: (event, cycles, instructions, ticks). event: finished|illegal."""
        self.start(window, mpstart, mplen)
        n = self.sim.run_until("running", 0, max_cycles)
        cyc = self.sim.peek("cycles")
        ev = "illegal" if self.sim.peek("illegal") else "finished" if self.sim.peek("finished") else "none"
        return ev, cyc, self.sim.peek("instructions"), n
