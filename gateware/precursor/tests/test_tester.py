"""The TRNG tester's device transport on the simulated Precursor (tester.py; step sim:soc):
the mailbox block `trng_tester` and the UART Wishbone bridge served on a TCP port, driven by
tools/trng_test.py's own bridge client and its `sim` transport.

The CPU runs a one-instruction loop here; the device side of the mailbox protocol is staged
by the test through the bridge (two frames preloaded into RAM, the mailbox registers written
as the device tester writes them). The TRNG server's real device tester runs on the booted
Xous image in `cargo xtask trng-sim-tester`.
"""

from __future__ import annotations

import csv
import hashlib
import socket
import struct
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from precursor import map as pmap
from precursor import run as prun
from precursor import soc as psoc
from precursor import tester as ptester

TOOLS = Path(__file__).resolve().parents[3] / "tools"
sys.path.insert(0, str(TOOLS))
import trng_test  # noqa: E402

SPEC = trng_test.Spec.load(trng_test.DEFAULT_SPEC)
MB = SPEC.mailbox
BUF = SPEC.buffer_bytes
SLOT0, SLOT1 = 0x4010_0000, 0x4020_0000       # frame slots of this test (even / odd seqs)
LOOP = struct.pack("<I", 0x0000006F)           # jal x0, 0: the CPU spins in ROM


def _frame(seq: int, mode: int, crc_xor: int = 0) -> tuple[bytes, bytes]:
    payload = hashlib.shake_256(struct.pack("<QI", seq, mode)).digest(BUF)
    head = trng_test.HEADER.pack(SPEC.frame_magic, seq, mode, BUF, zlib.crc32(payload) ^ crc_xor, 0)
    return head + payload, payload


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _regs(gw: Path) -> dict:
    with open(gw / "csr.csv") as f:
        return {r[1]: int(r[2], 0) for r in csv.reader(l for l in f if not l.startswith("#")) if r and r[0] == "csr_register"}


def _connect(port: int, deadline: float) -> trng_test.UartboneBridge:
    while True:
        try:
            return trng_test.UartboneBridge(SPEC, "127.0.0.1", port, 30.0)
        except trng_test.NothingListening:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_mailbox_registers_in_csr_csv_at_spec_offsets():
    gw = psoc.build()
    regs = _regs(gw)
    base = MB["base"]
    assert pmap.csr_base("trng_tester") == base
    for r in ptester.REGISTERS:
        assert regs[f"trng_tester_{r}"] == base + MB[r], r


def test_sim_config_per_run(tmp_path):
    gw = psoc.build()
    with_bridge = ptester.sim_config(gw / "sim_config.js", 4321)
    assert '"port": 4321' in with_bridge and ptester.MODULE in with_bridge
    assert ptester.MODULE not in ptester.sim_config(gw / "sim_config.js", None)


def test_bridge_mailbox_and_the_tool_on_the_simulated_soc(tmp_path, capsys):
    gw = psoc.build()
    regs = _regs(gw)
    port = _free_port()
    f2, p2 = _frame(2, SPEC.modes["cprng"])                 # seq 2 in slot 0
    f3, _ = _frame(3, SPEC.modes["cprng"], crc_xor=1)       # seq 3 in slot 1, its CRC broken
    ram = bytearray(SLOT1 + len(f3) - pmap.SRAM_EXT_BASE)
    o0, o1 = SLOT0 - pmap.SRAM_EXT_BASE, SLOT1 - pmap.SRAM_EXT_BASE
    ram[o0:o0 + len(f2)] = f2
    ram[o1:o1 + len(f3)] = f3
    box = {}
    sim = threading.Thread(target=lambda: box.update(r=prun.run(LOOP, bytes(ram), timeout=600, echo=False, gw=gw,
                                                                 bridge_port=port)))
    sim.start()
    br = None
    try:
        br = _connect(port, time.monotonic() + 120)
        # the bus through the bridge: ROM, RAM, a register that reads back
        assert br.read32(0) == 0x6F
        assert br.read(SLOT0, 8) == SPEC.frame_magic
        base = MB["base"]
        assert br.read32(base + MB["magic"]) == 0, "nothing has set the mailbox up yet"
        br.write32(base + MB["ack"], 0xA5A5_0001)
        assert br.read32(base + MB["ack"]) == 0xA5A5_0001
        br.write32(base + MB["ack"], 0)

        def tool(*extra):
            # serial2tcp serves one client at a time: the test's own connection goes first
            nonlocal br
            br.close()
            br = None
            out = tmp_path / "out.bin"
            code = trng_test.main(["--quiet", "--transport", "sim", "--bridge", str(port), "--timeout", "60",
                                   "--out", str(out), *extra])
            br = _connect(port, time.monotonic() + 10)
            return code, out.read_bytes()

        # no tester on the device: MAGIC is 0
        code, data = tool("--bytes", str(BUF))
        assert code == 3 and data == b""
        assert "no TRNG tester on the device" in capsys.readouterr().err

        # the device side, as tester_device.rs writes it: slots, PHASE, then MAGIC
        br.write32(base + MB["buf0"], SLOT0)
        br.write32(base + MB["buf1"], SLOT1)
        br.write32(base + MB["phase"], 2)
        br.write32(base + MB["magic"], MB["magic_value"])
        cyc = regs["simctl_cycles"]

        def cycles():
            return (br.read32(cyc) << 32) | br.read32(cyc + 4)

        c0, t0 = cycles(), time.monotonic()
        code, data = tool("--bytes", str(BUF), "--csr-csv", str(gw / "csr.csv"))
        c1, t1 = cycles(), time.monotonic()   # (includes the tool's start-up and connects)
        assert code == 0, capsys.readouterr().err
        assert data == p2
        assert br.read32(base + MB["ack"]) == 2
        assert br.read32(base + MB["control"]) == MB["run_bit"] | SPEC.modes["cprng"]
        print(f"\nsim bridge: one {BUF}-byte frame in {c1 - c0:,} cycles, {t1 - t0:.1f} s wall", file=sys.__stderr__)

        # a frame whose CRC does not match: refused, nothing written, exit 1 after the retries
        br.write32(base + MB["phase"], 3)
        code, data = tool("--bytes", str(BUF), "--retries", "0")
        assert code == 1 and data == b""
        assert "CRC mismatch in seq 3" in capsys.readouterr().err

    finally:
        # stop the simulation through the bridge (simctl FINISH = 0), also when a check failed
        if br is not None:
            try:
                br.write32(regs["simctl_finish"], 0)
            finally:
                br.close()
        sim.join(700)
    r = box["r"]
    assert r.reason == "finish" and r.code == 0, (r.reason, r.code, r.progress)

