"""Fakes for tools/trng_test.py: a scripted hosted tester (TCP) and a simulated USB debug bridge."""

from __future__ import annotations

import hashlib
import socket
import struct
import sys
import threading
import zlib
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

import trng_test  # noqa: E402

SPEC = trng_test.Spec.load(trng_test.DEFAULT_SPEC)
BUF = SPEC.buffer_bytes
HDR = trng_test.HEADER


def payload_for(seq: int, mode: int = 0) -> bytes:
    """Deterministic, distinct 512 KiB payload per (seq, mode): SHAKE-256 of the pair."""
    return hashlib.shake_256(struct.pack("<QI", seq, mode)).digest(BUF)


def frame(seq: int, mode: int = 0, payload: bytes | None = None, status: int = 0,
          crc: int | None = None, magic: bytes | None = None, length: int | None = None) -> bytes:
    if payload is None:
        payload = payload_for(seq, mode) if status == 0 else b""
    return HDR.pack(magic or SPEC.frame_magic, seq, mode,
                    len(payload) if length is None else length,
                    zlib.crc32(payload) if crc is None else crc, status) + payload


class LoopbackServer:
    """A TCP server on 127.0.0.1 (ephemeral port) that hands each accepted connection to
    `self.accepted(conn, i)` (i = 0, 1, ...) on its own daemon thread; `close()` stops it."""

    def __init__(self, backlog: int = 8):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.handlers: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.1)
        i = 0
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            t = threading.Thread(target=self.accepted, args=(conn, i), daemon=True)
            i += 1
            t.start()
            self.handlers.append(t)

    def accepted(self, conn, i: int):
        raise NotImplementedError

    def close(self):
        self.stop.set()
        self.sock.close()
        self.thread.join(5)


class FakeTester(LoopbackServer):
    """TCP server; connection i runs script[i] (a list of byte strings to send, or a callable).

    Each script entry is either bytes (sent), or the string "close" (close now). After the
    script ends the connection is closed. Connections beyond the scripts are closed at once.
    Received requests are recorded.
    """

    def __init__(self, scripts):
        self.scripts = list(scripts)
        self.requests: list[bytes] = []
        super().__init__(backlog=8)

    def accepted(self, conn, i):
        self._handle(conn, self.scripts[i] if i < len(self.scripts) else [])

    def _handle(self, conn, script):
        with conn:
            conn.settimeout(5)
            req = b""
            try:
                while len(req) < 16:
                    chunk = conn.recv(16 - len(req))
                    if not chunk:
                        break
                    req += chunk
            except OSError:
                return
            self.requests.append(req)
            try:
                if callable(script):
                    script(conn, req)
                else:
                    for item in script:
                        if item == "close":
                            break
                        conn.sendall(item)
            except OSError:
                pass


@pytest.fixture
def fake_tester():
    servers = []

    def make(scripts):
        s = FakeTester(scripts)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def run_tool(argv, **kw):
    """Run trng_test.main in-process; returns the exit code."""
    return trng_test.main(["--quiet", "--retries", "3", "--timeout", "3"] + list(argv), **kw)


# ------------------------------------------------------------------------------------------
# simulated device behind the USB debug bridge

MB = SPEC.mailbox
CSR_BASE = 0xF002_3000  # deliberately not the spec fallback: proves csr.csv is used
SLOT_BYTES = SPEC.header_bytes + BUF


class FakeDevice:
    """pyusb-like device: ctrl_transfer over a simulated SoC memory map with the tester mailbox.

    The device side follows docs/trng-tester-protocol.md 3.2: frame P goes into slot P % 2, PHASE
    is published after the frame is written, and frame P+1 is filled only once ACK >= P-1. It
    records protocol violations (reading a slot that is not published, oversize bursts).
    """

    def __init__(self, csr_text: str | None = None, csr_base: int = CSR_BASE, tester: bool = True,
                 initial_mode: int | None = None, corrupt_crc_seqs=(), error_seqs=(),
                 fail_transfers_at=(), csr_in_flash: bool = True):
        self.base = csr_base
        self.slot_addr = (0x4080_0000, 0x4090_0000)
        self.slots = [bytearray(SLOT_BYTES), bytearray(SLOT_BYTES)]
        self.regs = {k: 0 for k in ("magic", "phase", "ack", "control", "buf0", "buf1")}
        if tester:
            self.regs["magic"] = MB["magic_value"]
            self.regs["buf0"], self.regs["buf1"] = self.slot_addr
        self.flash = {}
        if csr_in_flash:
            text = csr_text if csr_text is not None else (
                "csr_base,trng_server,0xf001d000,,\n"
                f"csr_base,trng_tester,{csr_base:#x},,\n"
                f"csr_register,trng_tester_magic,{csr_base:#x},1,ro\n")
            blob = text.encode() + b"\x00"
            self.flash_addr = MB["csr_csv_addr"]
            self.flash_bytes = blob + b"\xff" * (-len(blob) % 4096)
        else:
            self.flash_addr = MB["csr_csv_addr"]
            self.flash_bytes = b"\xff" * 4096
        self.corrupt_crc_seqs = set(corrupt_crc_seqs)
        self.error_seqs = set(error_seqs)
        self.fail_transfers_at = set(fail_transfers_at)
        self.transfers = 0
        self.violations: list[str] = []
        self.published: dict[int, int] = {}  # slot -> seq published there
        self.payloads: dict[int, bytes] = {}
        self.seq = 0
        if initial_mode is not None:  # a frame left over from an earlier run in another mode
            self._fill(initial_mode)

    # -- device behaviour
    def _fill(self, mode):
        seq = self.seq + 1
        slot = seq % 2
        if seq in self.error_seqs:
            fr = frame(seq, mode, status=1)
        else:
            data = payload_for(seq, mode)
            crc = zlib.crc32(data) ^ (1 if seq in self.corrupt_crc_seqs else 0)
            fr = frame(seq, mode, payload=data, crc=crc)
            self.payloads[seq] = data
        self.slots[slot][:len(fr)] = fr
        self.published[slot] = seq
        self.seq = seq
        self.regs["phase"] = seq

    def _step(self):
        ctl = self.regs["control"]
        if not ctl & MB["run_bit"]:
            return
        if self.regs["ack"] >= self.seq - 1:
            self._fill(ctl & 3)

    # -- memory map
    def _reg_at(self, addr):
        for k in self.regs:
            if addr == self.base + MB[k]:
                return k
        return None

    def _read(self, addr, n):
        if n > SPEC.usb["burst"] or n % 4:
            self.violations.append(f"bad read length {n}")
        reg = self._reg_at(addr)
        if reg is not None:
            assert n == 4
            return struct.pack("<I", self.regs[reg])
        for i, a in enumerate(self.slot_addr):
            if a <= addr < a + SLOT_BYTES:
                if self.published.get(i, 0) != self.regs["phase"] and self.published.get(i, 0) <= self.regs["ack"]:
                    self.violations.append(f"read of slot {i} holding acked seq {self.published.get(i)}")
                off = addr - a
                return bytes(self.slots[i][off:off + n])
        if self.flash_addr <= addr < self.flash_addr + len(self.flash_bytes):
            off = addr - self.flash_addr
            return self.flash_bytes[off:off + n].ljust(n, b"\xff")
        return b"\x00" * n  # unmapped reads as zeros

    def ctrl_transfer(self, bmRequestType, bRequest, wValue=0, wIndex=0, data_or_wLength=None, timeout=None):
        self.transfers += 1
        if self.transfers in self.fail_transfers_at:
            raise OSError("simulated USB pipe error")
        assert bRequest == 0
        addr = (wIndex << 16) | wValue
        if bmRequestType == SPEC.usb["read_request_type"]:
            out = self._read(addr, int(data_or_wLength))
            self._step()
            return bytearray(out)  # pyusb returns array('B'); bytearray behaves the same here
        if bmRequestType == SPEC.usb["write_request_type"]:
            data = bytes(data_or_wLength)
            reg = self._reg_at(addr)
            if reg in ("ack", "control") and len(data) == 4:
                self.regs[reg] = struct.unpack("<I", data)[0]
            else:
                self.violations.append(f"write to {addr:#x} ({len(data)} bytes)")
            self._step()
            return len(data)
        raise AssertionError(f"unexpected bmRequestType {bmRequestType:#x}")
