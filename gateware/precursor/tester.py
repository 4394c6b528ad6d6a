"""The TRNG tester's device transport on the simulated Precursor (docs/trng-tester-protocol.md
section 3, 3.4): the mailbox block `trng_tester` and the host bridge.

* `TesterMailbox`: the CSR block `trng_tester` of spec/trng.toml `[tester.mailbox]`: six plain
  32-bit read/write registers (MAGIC, PHASE, ACK, CONTROL, BUF0, BUF1 at the spec's offsets),
  written and read by the CPU (the TRNG server's tester) and by the host (through the bridge).
  It sits at the spec's `base`, CSR page 0x11, a page Precursor's map leaves empty (map.py pins
  it; the step sim:soc checks that Precursor has nothing there). Not on Precursor's own
  bitstream: it exists for the tester, in the simulation.
* The bridge: LiteX's UART Wishbone bridge (`UARTBone`, a second bus master) behind a
  simulation UART (`RS232PHYModel`, a byte stream on the `serial` pads), which litex_sim's
  `serial2tcp` module serves on a TCP port. The port is chosen per run (run.py
  `--bridge-port`): `sim_config()` writes the run's sim_config.js with it, or without the
  module when the run has no bridge (then nothing listens and the bridge idles).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage

SPEC = Path(__file__).resolve().parents[2] / "spec" / "trng.toml"
MODULE = "serial2tcp"          # litex_sim's module serving the bridge's byte stream on TCP
PAD = "serial"                 # the pads serial2tcp connects to (it only knows this name)

# the registers in address order, as spec/trng.toml names their offsets
REGISTERS = ("magic", "phase", "ack", "control", "buf0", "buf1")


def mailbox_spec() -> dict:
    with open(SPEC, "rb") as f:
        mb = tomllib.load(f)["tester"]["mailbox"]
    offsets = [mb[r] for r in REGISTERS]
    assert offsets == [4 * i for i in range(len(REGISTERS))], f"spec/trng.toml [tester.mailbox] offsets {offsets}"
    return mb


class TesterMailbox(LiteXModule):
    def __init__(self):
        mailbox_spec()
        # LiteX numbers a block's CSRs in creation order: create them in the spec's order
        for r in REGISTERS:
            setattr(self, r, CSRStorage(32, name=r, description=f"tester mailbox {r.upper()}"))


def pads():
    """The simulation UART's pads (the platform resource serial2tcp attaches to)."""
    from litex.build.generic_platform import Pins, Subsignal
    return (PAD, 0,
            Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)), Subsignal("source_data", Pins(8)),
            Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)), Subsignal("sink_data", Pins(8)))


def add_tester(soc, cfg):
    """The mailbox at its pinned CSR page and the uartbone bridge as a bus master."""
    from litex.soc.cores.uart import RS232PHYModel, UARTBone

    soc.submodules.trng_tester = TesterMailbox()
    phy = RS232PHYModel(soc.platform.request(PAD))
    bone = UARTBone(phy=phy, clk_freq=soc.clk_freq, address_width=soc.bus.address_width)
    soc.submodules.uartbone_phy = phy
    soc.submodules.uartbone = bone
    soc.bus.add_master(name="uartbone", master=bone.wishbone)
    soc.sim_modules.append((MODULE, PAD, {"port": 1}))   # placeholder port: set per run


def sim_config(built: Path, port: int | None) -> str:
    """The run's sim_config.js from the build's: the bridge module on `port`, or no bridge
    module at all when `port` is None (serial2tcp binds its port when the simulator starts)."""
    mods = json.loads(Path(built).read_text())
    out = []
    for m in mods:
        if m.get("module") == MODULE:
            if port is None:
                continue
            m = dict(m, args={"port": port})
        out.append(m)
    return json.dumps(out, indent=1) + "\n"
