"""trng_test.py --transport sim: the tester mailbox over LiteX's UART Wishbone bridge (uartbone)
on a TCP port, against a fake bridge that speaks uartbone's wire format in front of the same
simulated device (conftest.FakeDevice) the USB transport's tests use."""

import json
import socket
import struct
import threading

import pytest
from conftest import BUF, MB, SPEC, FakeDevice, LoopbackServer, payload_for, run_tool

import trng_test

RD, WR = SPEC.usb["read_request_type"], SPEC.usb["write_request_type"]


class FakeUartbone(LoopbackServer):
    """TCP server: uartbone commands (cmd, length in words, big-endian word address, big-endian
    data words) turned into bus accesses of `dev` (FakeDevice.ctrl_transfer, so its fault
    injection and protocol checks apply). `silent`: accept, read, never answer."""

    def __init__(self, dev, silent=False):
        self.dev, self.silent = dev, silent
        self.commands = []
        super().__init__(backlog=4)

    def accepted(self, conn, _i):
        self._handle(conn)

    @staticmethod
    def _exact(conn, n):
        b = b""
        while len(b) < n:
            c = conn.recv(n - len(b))
            if not c:
                raise EOFError
            b += c
        return b

    def _handle(self, conn):
        with conn:
            conn.settimeout(5)
            try:
                while not self.stop.is_set():
                    cmd, n, waddr = struct.unpack(">BBI", self._exact(conn, 6))
                    self.commands.append((cmd, n, waddr))
                    if self.silent:
                        continue
                    addr = waddr * 4
                    if cmd == 0x02:
                        data = bytes(self.dev.ctrl_transfer(RD, 0, addr & 0xFFFF, addr >> 16, 4 * n))
                        words = struct.unpack(f"<{n}I", data)
                        conn.sendall(struct.pack(f">{n}I", *words))
                    elif cmd == 0x01:
                        words = struct.unpack(f">{n}I", self._exact(conn, 4 * n))
                        self.dev.ctrl_transfer(WR, 0, addr & 0xFFFF, addr >> 16, struct.pack(f"<{n}I", *words))
                    else:
                        raise AssertionError(f"unknown uartbone command {cmd:#x}")
            except (EOFError, OSError, socket.timeout):
                return



@pytest.fixture
def bridge():
    made = []

    def make(dev, **kw):
        b = FakeUartbone(dev, **kw)
        made.append(b)
        return b

    yield make
    for b in made:
        b.close()


def run_sim(port, tmp_path, nbytes, *extra):
    out = tmp_path / "out.bin"
    argv = ["--transport", "sim", "--bridge", str(port), "--bytes", str(nbytes), "--out", str(out),
            "--stats-json", str(tmp_path / "s.json"), *extra]
    code = run_tool(argv)
    stats = json.loads((tmp_path / "s.json").read_text())
    return code, out.read_bytes(), stats


def test_sim_streams_in_order_at_the_spec_base(bridge, tmp_path):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False)
    b = bridge(dev)
    code, data, stats = run_sim(b.port, tmp_path, 3 * BUF)
    assert code == 0, stats
    assert dev.violations == []
    first = stats["first_seq"]
    assert data == b"".join(payload_for(s) for s in range(first, first + 3))
    assert dev.regs["control"] == MB["run_bit"] | SPEC.modes["cprng"]
    assert dev.regs["ack"] == stats["last_seq"]
    # reads are bursts of at most 255 words; word addresses; the mailbox MAGIC was read
    assert all(0 < n <= 255 for _, n, _ in b.commands)
    assert (0x02, 1, (MB["base"] + MB["magic"]) >> 2) in b.commands
    assert (0x01, 1, (MB["base"] + MB["control"]) >> 2) in b.commands


def test_sim_raw_mode_and_csr_csv(bridge, tmp_path):
    base = 0xF002_6000
    csv = tmp_path / "csr.csv"
    csv.write_text(f"csr_base,trng_server,0xf001d000,,\ncsr_base,trng_tester,{base:#x},,\n")
    dev = FakeDevice(csr_base=base, csr_in_flash=False)
    b = bridge(dev)
    code, data, stats = run_sim(b.port, tmp_path, BUF + 100, "--source", "av", "--csr-csv", str(csv))
    assert code == 0 and dev.violations == []
    first = stats["first_seq"]
    assert data == payload_for(first, SPEC.modes["av"]) + payload_for(first + 1, SPEC.modes["av"])[:100]


def test_sim_word_order_on_the_wire(bridge):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False)
    b = bridge(dev)
    br = trng_test.UartboneBridge(SPEC, "127.0.0.1", b.port, 3.0)
    try:
        assert br.read32(MB["base"] + MB["magic"]) == MB["magic_value"]
        br.write32(MB["base"] + MB["ack"], 0x01020304)  # uartbone writes have no answer
        assert br.read32(MB["base"] + MB["ack"]) == 0x01020304  # commands run in order
        assert dev.regs["ack"] == 0x01020304
        with pytest.raises(ValueError):
            br.read(MB["base"] + 2, 4)
    finally:
        br.close()


def test_sim_crc_mismatch_recovered_then_fatal(bridge, tmp_path, capsys):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False, corrupt_crc_seqs={3})
    code, data, stats = run_sim(bridge(dev).port, tmp_path, 3 * BUF)
    assert code == 0 and dev.violations == []
    assert "CRC mismatch in seq 3" in stats["errors"][0]
    assert payload_for(3)[:4096] not in data
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False, corrupt_crc_seqs=set(range(1, 50)))
    code, data, stats = run_sim(bridge(dev).port, tmp_path, BUF, "--retries", "1")
    assert code == 1 and data == b""
    assert "giving up after 2 consecutive failures; last: CRC mismatch" in capsys.readouterr().err


def test_sim_seq_gap_is_refused(bridge, tmp_path, capsys):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False)
    orig = dev._fill

    def gappy(mode):  # the device skips a seq number in the slot header but publishes PHASE
        orig(mode)
        slot = dev.seq % 2
        struct.pack_into("<Q", dev.slots[slot], 8, dev.seq + 7)

    dev._fill = gappy
    code, data, stats = run_sim(bridge(dev).port, tmp_path, BUF, "--retries", "2")
    assert code == 1 and data == b""
    assert "holds seq" in capsys.readouterr().err


def test_sim_bad_mailbox_magic(bridge, tmp_path, capsys):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False, tester=False)
    code, data, _ = run_sim(bridge(dev).port, tmp_path, BUF)
    assert code == 3 and data == b""
    assert "no TRNG tester on the device (mailbox magic 0x00000000" in capsys.readouterr().err


def test_sim_nothing_listening(tmp_path, capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    code, data, _ = run_sim(port, tmp_path, BUF)
    assert code == 3 and data == b""
    assert f"no bridge on 127.0.0.1:{port} (connection refused" in capsys.readouterr().err


def test_sim_bridge_that_does_not_answer(bridge, tmp_path, capsys):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False)
    b = bridge(dev, silent=True)
    out = tmp_path / "o"
    code = trng_test.main(["--quiet", "--transport", "sim", "--bridge", str(b.port), "--timeout", "0.5",
                           "--out", str(out)])
    assert code == 3
    assert "did not answer" in capsys.readouterr().err


def test_sim_bridge_drop_midstream_reopens(bridge, tmp_path):
    dev = FakeDevice(csr_base=MB["base"], csr_in_flash=False, fail_transfers_at={200})
    code, data, stats = run_sim(bridge(dev).port, tmp_path, 2 * BUF)
    assert code == 0 and dev.violations == []
    assert stats["reconnects"] == 1 and len(data) == 2 * BUF


@pytest.mark.parametrize("argv,msg", [
    (["--transport", "sim"], "--transport sim needs --bridge"),
    (["--transport", "sim", "--bridge", "host:"], "not a port number"),
    (["--transport", "sim", "--bridge", "70000"], "port out of range"),
    (["--transport", "sim", "--bridge", ":80"], "empty host"),
    (["--transport", "hosted", "--port", "1", "--bridge", "80"], "--bridge applies to --transport sim only"),
    (["--transport", "sim", "--bridge", "80", "--port", "81"], "--port/--port-file apply to --transport hosted only"),
])
def test_sim_bad_command_line(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        trng_test.main(argv)
    assert e.value.code == 2
    assert msg in capsys.readouterr().err
