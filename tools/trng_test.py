#!/usr/bin/env python3
"""Stream TRNG tester buffers to stdout as raw bytes (for `dieharder -g 200`, rngtest, ent).

Transports (docs/trng-tester-protocol.md):
  hosted  the TRNG server's tester on 127.0.0.1:PORT (hosted Xous), frames over TCP
  device  a Precursor over the USB debug bridge (pyusb), frames read out of device RAM
  sim     the simulated Precursor (gateware/precursor) over its UART Wishbone bridge
          (LiteX uartbone, exposed on a TCP port by the simulator): the same mailbox protocol
          and frame checks as `device`; only the bus access differs

Progress and rate go to stderr; only verified whole buffers reach the output: each frame's
seq must increase, its mode must match and its CRC-32 must check before a byte is written.
Constants come from spec/trng.toml, table [tester] (one source of truth with the server).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import socket
import struct
import sys
import time
import tomllib
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

# Exit statuses (docs/trng-tester-protocol.md section 4).
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_NOTHING_LISTENING = 3
EXIT_REJECTED = 4

__test__ = False  # the file name matches pytest's *_test.py pattern; it is not a test module

HEADER = struct.Struct("<8sQIIII")  # magic, seq, mode, len, crc, status
REQUEST = struct.Struct("<8sII")  # magic, mode, reserved
DEFAULT_SPEC = Path(__file__).resolve().parent.parent / "spec" / "trng.toml"


class TesterError(Exception):
    """A recoverable failure: discard the frame in flight, reconnect after a backoff."""


class NothingListening(Exception):
    """No server / device to talk to."""


class Rejected(Exception):
    """The server rejected the request (status bad_request): retrying cannot help."""


class Fatal(Exception):
    def __init__(self, msg: str, code: int = EXIT_RUNTIME):
        super().__init__(msg)
        self.code = code


# --------------------------------------------------------------------------------------------
# spec


@dataclass(frozen=True)
class Spec:
    request_magic: bytes
    frame_magic: bytes
    header_bytes: int
    buffer_bytes: int
    modes: dict
    status: dict
    mailbox: dict
    usb: dict

    @classmethod
    def load(cls, path: Path) -> "Spec":
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except FileNotFoundError:
            raise Fatal(f"spec file not found: {path} (use --spec or $TRNG_SPEC)")
        except tomllib.TOMLDecodeError as e:
            raise Fatal(f"spec file {path} is not valid TOML: {e}")
        try:
            t = doc["tester"]
            spec = cls(
                request_magic=t["request_magic"].encode("ascii"),
                frame_magic=t["frame_magic"].encode("ascii"),
                header_bytes=int(t["frame_header_bytes"]),
                buffer_bytes=int(t["buffer_bytes"]),
                modes={k: int(v) for k, v in t["modes"].items()},
                status={k: int(v) for k, v in t["status"].items()},
                mailbox=dict(t["mailbox"]),
                usb=dict(t["usb"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise Fatal(f"spec file {path}: [tester] table incomplete or malformed ({e!r})")
        if spec.header_bytes != HEADER.size or len(spec.frame_magic) != 8 or len(spec.request_magic) != 8:
            raise Fatal(f"spec file {path}: frame/request layout does not match this tool")
        return spec


# --------------------------------------------------------------------------------------------
# helpers

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(I?B?)\s*$", re.IGNORECASE)
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """'4096', '64K', '256M', '1G', '1GiB' -> bytes (powers of 1024). 0 = unlimited."""
    m = _SIZE_RE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"invalid size {text!r} (examples: 4096, 64K, 256M, 1G)")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not (v > 0) or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return v


def port_number(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range 1..65535: {v}")
    return v


def bridge_address(text: str) -> tuple[str, int]:
    """'PORT' or 'HOST:PORT' -> (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    if sep and not host:
        raise argparse.ArgumentTypeError(f"empty host in bridge address {text!r}")
    return host, port_number(port)


def non_negative_int(text: str) -> int:
    try:
        v = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {v}")
    return v


def log(msg: str) -> None:
    try:
        sys.stderr.write(f"trng_test: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


@dataclass
class Header:
    seq: int
    mode: int
    length: int
    crc: int
    status: int


def check_header(spec: Spec, raw, want_mode: int, last_seq: int, strict_mode: bool = True) -> Header:
    """Validate a frame header. Raises TesterError / Rejected; returns the header otherwise.

    With strict_mode False a mode mismatch is returned to the caller (device: skip the frame).
    """
    magic, seq, mode, length, crc, status = HEADER.unpack(raw)
    if magic != spec.frame_magic:
        raise TesterError(f"bad frame magic {bytes(magic)!r}")
    if status == spec.status["bad_request"]:
        raise Rejected(f"server rejected the request for mode {want_mode} (status bad_request)")
    if status != spec.status["data"]:
        names = {v: k for k, v in spec.status.items()}
        if length != 0:
            raise TesterError(f"error frame (status {status}) with nonzero len {length}")
        raise TesterError(f"server error frame: status {status} ({names.get(status, 'unknown')}), seq {seq}")
    if seq <= last_seq:
        raise TesterError(f"seq {seq} not above last emitted seq {last_seq} (duplicate/replayed buffer)")
    if length != spec.buffer_bytes:
        raise TesterError(f"data frame len {length}, expected {spec.buffer_bytes}")
    if mode != want_mode and strict_mode:
        raise TesterError(f"frame mode {mode}, requested {want_mode}")
    return Header(seq, mode, length, crc, status)


# --------------------------------------------------------------------------------------------
# hosted transport


def read_port_file(path: Path, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            text = path.read_text()
        except FileNotFoundError:
            text = None
        if text is not None:
            if text.endswith("\n"):
                try:
                    return port_number(text.strip())
                except argparse.ArgumentTypeError as e:
                    raise Fatal(f"port file {path}: {e}")
            # an unterminated file is still being written (writers should rename atomically)
        if time.monotonic() >= deadline:
            raise NothingListening(f"port file {path} did not appear within {timeout:g} s "
                                   "(is the hosted TRNG tester running?)")
        time.sleep(0.05)


class HostedSource:
    """Client of the tester's TCP server (docs/trng-tester-protocol.md section 2)."""

    def __init__(self, spec: Spec, mode: int, timeout: float, port: Optional[int] = None,
                 port_file: Optional[Path] = None, host: str = "127.0.0.1"):
        self.spec = spec
        self.mode = mode
        self.timeout = timeout
        self.port = port
        self.port_file = port_file
        self.host = host
        self.sock: Optional[socket.socket] = None
        self.frame = bytearray(spec.header_bytes + spec.buffer_bytes)
        self.view = memoryview(self.frame)
        self.description = "hosted"

    def open(self) -> None:
        port = self.port
        if port is None:
            port = read_port_file(self.port_file, self.timeout)
        self.description = f"{self.host}:{port}"
        try:
            s = socket.create_connection((self.host, port), timeout=self.timeout)
        except ConnectionRefusedError:
            raise NothingListening(f"nothing listening on {self.host}:{port} (connection refused)")
        except socket.timeout:
            raise NothingListening(f"connecting to {self.host}:{port} timed out after {self.timeout:g} s")
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.settimeout(self.timeout)
            s.sendall(REQUEST.pack(self.spec.request_magic, self.mode, 0))
        except OSError as e:
            s.close()
            raise TesterError(f"sending the request to {self.host}:{port}: {e}")
        self.sock = s

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None

    @property
    def is_open(self) -> bool:
        return self.sock is not None

    def _fill(self, view: memoryview, what: str) -> None:
        got, n = 0, len(view)
        recv_into = self.sock.recv_into
        try:
            while got < n:
                k = recv_into(view[got:], n - got)
                if k == 0:
                    raise TesterError(f"connection closed after {got} of {n} bytes of {what} (truncated frame)")
                got += k
        except socket.timeout:
            raise TesterError(f"no data for {self.timeout:g} s while reading {what}")
        except (ConnectionError, OSError) as e:
            if isinstance(e, TesterError):
                raise
            raise TesterError(f"socket error while reading {what}: {e}")

    def next_frame(self, last_seq: int) -> tuple[int, memoryview]:
        hb = self.spec.header_bytes
        self._fill(self.view[:hb], "frame header")
        hdr = check_header(self.spec, self.view[:hb], self.mode, last_seq)
        payload = self.view[hb:hb + hdr.length]
        self._fill(payload, f"payload of seq {hdr.seq}")
        crc = zlib.crc32(payload)
        if crc != hdr.crc:
            raise TesterError(f"CRC mismatch in seq {hdr.seq}: header {hdr.crc:#010x}, payload {crc:#010x}")
        return hdr.seq, payload


# --------------------------------------------------------------------------------------------
# device transport (USB debug bridge)


class Bridge:
    """Bus access to the device: what the device transport needs from a bridge. Subclasses
    provide `burst` (bytes per read request the tool plans with), `read_into(addr, view)`,
    `write32(addr, value)` and `close()`; everything else (mailbox, frames, checks) is shared."""

    burst: int

    def read_into(self, addr: int, view: memoryview) -> None:
        raise NotImplementedError

    def write32(self, addr: int, value: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def read(self, addr: int, n: int) -> bytes:
        buf = bytearray(n)
        self.read_into(addr, memoryview(buf))
        return bytes(buf)

    def read32(self, addr: int) -> int:
        return struct.unpack("<I", self.read(addr, 4))[0]


class UsbBridge(Bridge):
    """Word-addressed SoC bus access through vendor control transfers."""

    def __init__(self, dev, spec: Spec, timeout_ms: int):
        self.dev = dev
        self.burst = int(spec.usb["burst"])
        self.rd = int(spec.usb["read_request_type"])
        self.wr = int(spec.usb["write_request_type"])
        self.timeout_ms = timeout_ms

    def read_into(self, addr: int, view: memoryview) -> None:
        off, n = 0, len(view)
        while off < n:
            k = min(self.burst, n - off)
            a = addr + off
            data = self.dev.ctrl_transfer(self.rd, 0, a & 0xFFFF, (a >> 16) & 0xFFFF, k, self.timeout_ms)
            if len(data) != k:
                raise TesterError(f"short USB read at {a:#010x}: {len(data)} of {k} bytes")
            view[off:off + k] = bytes(data) if not isinstance(data, (bytes, bytearray)) else data
            off += k

    def write32(self, addr: int, value: int) -> None:
        data = struct.pack("<I", value & 0xFFFFFFFF)
        k = self.dev.ctrl_transfer(self.wr, 0, addr & 0xFFFF, (addr >> 16) & 0xFFFF, data, self.timeout_ms)
        if k != 4:
            raise TesterError(f"short USB write at {addr:#010x}: {k} of 4 bytes")


class BridgeTimeout(TesterError):
    """The bus bridge did not answer within the timeout."""


class UartboneBridge(Bridge):
    """The simulated Precursor's bus through LiteX's UART Wishbone bridge (uartbone) on a TCP
    port (litex_sim's serial2tcp module): word-addressed reads and writes of the SoC bus, the
    stand-in for the USB debug bridge's physical reads of device RAM.

    Wire format (LiteX `Stream2Wishbone`): command byte (0x01 write burst, 0x02 read burst,
    address incrementing), length in 32-bit words (1..255), the word address (byte address / 4)
    as 4 bytes big-endian, then for a write the data words, each big-endian; a read answers
    with the words, each big-endian. Commands are pipelined (up to `window` in flight)."""

    CMD_WRITE = 0x01
    CMD_READ = 0x02
    MAX_WORDS = 255

    def __init__(self, spec: Spec, host: str, port: int, timeout: float, window: int = 16):
        self.burst = int(spec.usb["burst"])
        self.host, self.port, self.timeout, self.window = host, port, timeout, window
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except ConnectionRefusedError:
            raise NothingListening(f"no bridge on {host}:{port} (connection refused; is the simulation "
                                   "running with its bridge port?)")
        except socket.timeout:
            raise NothingListening(f"connecting to the bridge on {host}:{port} timed out after {timeout:g} s")
        except OSError as e:
            raise NothingListening(f"cannot connect to the bridge on {host}:{port}: {e}")
        self.sock.settimeout(timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # litex_sim's serial2tcp serves one client and mishandles a close that it sees after the
    # next client's connect (it frees the new client's event, then crashes on the old one's):
    # after closing, give the simulator time to see the close before anyone connects again.
    CLOSE_SETTLE_S = 0.3

    def close(self) -> None:
        if self.sock is None:
            return
        try:
            self.sock.close()
        except OSError:
            pass
        self.sock = None
        time.sleep(self.CLOSE_SETTLE_S)

    def _send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise TesterError(f"bridge {self.host}:{self.port}: send failed: {e}")

    def _recv_into(self, view: memoryview, what: str) -> None:
        got, n = 0, len(view)
        try:
            while got < n:
                k = self.sock.recv_into(view[got:], n - got)
                if k == 0:
                    raise TesterError(f"bridge {self.host}:{self.port} closed the connection after {got} of {n} "
                                      f"bytes of {what}")
                got += k
        except socket.timeout:
            raise BridgeTimeout(f"bridge {self.host}:{self.port} did not answer {what} within {self.timeout:g} s "
                                f"({got} of {n} bytes)")
        except OSError as e:
            raise TesterError(f"bridge {self.host}:{self.port}: {e}")

    @staticmethod
    def _check(addr: int, n: int) -> None:
        if addr % 4 or n % 4:
            raise ValueError(f"bridge access at {addr:#x} of {n} bytes is not word aligned")

    def read_into(self, addr: int, view: memoryview) -> None:
        n = len(view)
        self._check(addr, n)
        cmds = []
        off = 0
        while off < n:
            words = min(self.MAX_WORDS, (n - off) // 4)
            cmds.append((off, words))
            off += 4 * words
        raw = bytearray(4 * self.MAX_WORDS)
        rv = memoryview(raw)
        sent = 0
        for i, (off, words) in enumerate(cmds):
            while sent < len(cmds) and sent < i + self.window:
                o, w = cmds[sent]
                self._send(struct.pack(">BBI", self.CMD_READ, w, (addr + o) >> 2))
                sent += 1
            self._recv_into(rv[:4 * words], f"a read of {4 * words} bytes at {addr + off:#010x}")
            # big-endian words on the wire -> the little-endian bytes of memory
            vals = struct.unpack(f">{words}I", rv[:4 * words])
            view[off:off + 4 * words] = struct.pack(f"<{words}I", *vals)

    def write32(self, addr: int, value: int) -> None:
        self._check(addr, 4)
        self._send(struct.pack(">BBII", self.CMD_WRITE, 1, addr >> 2, value & 0xFFFFFFFF))


def parse_csr_csv(text: str, block: str) -> Optional[int]:
    """Base address of CSR block `block` in a LiteX csr.csv, or None."""
    for line in text.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) >= 3 and cols[0] == "csr_base" and cols[1] == block:
            try:
                return int(cols[2], 0)
            except ValueError:
                raise Fatal(f"csr.csv: bad address {cols[2]!r} for block {block}")
    return None


def find_usb_device(spec: Spec):
    try:
        import usb.core  # noqa: PLC0415 (pyusb is only needed for the device transport)
    except ImportError:
        raise Fatal("the device transport needs pyusb: pip install -r tools/requirements.txt")
    try:
        dev = usb.core.find(idVendor=int(spec.usb["vid"]), idProduct=int(spec.usb["pid"]))
    except usb.core.NoBackendError:
        raise Fatal("pyusb found no USB backend (install libusb-1.0-0)")
    if dev is None:
        raise NothingListening(f"no USB device {int(spec.usb['vid']):04x}:{int(spec.usb['pid']):04x} "
                               "(Precursor debug bridge) found")
    return dev


class DeviceSource:
    """Reads tester frames out of device RAM, synchronised by the trng_tester mailbox.

    `bridge_factory()` opens the bus access (a UsbBridge on a Precursor, a UartboneBridge on
    the simulated one): the mailbox protocol, the frame parsing and every check are the same
    for both. `csr_in_memory`: read csr.csv from device memory when no --csr-csv is given (a
    Precursor keeps a copy in flash; the simulated SoC has no flash, so the spec's base is
    used there)."""

    def __init__(self, spec: Spec, mode: int, timeout: float, bridge_factory: Callable,
                 csr_csv: Optional[Path] = None, csr_in_memory: bool = True, name: str = "usb"):
        self.spec = spec
        self.mode = mode
        self.timeout = timeout
        self.bridge_factory = bridge_factory
        self.csr_csv = csr_csv
        self.csr_in_memory = csr_in_memory
        self.name = name
        self.bridge = None
        self.mb = spec.mailbox
        self.base = 0
        self.slots = (0, 0)
        self.frame = bytearray(spec.header_bytes + spec.buffer_bytes)
        self.view = memoryview(self.frame)
        self.description = name
        self.opened_once = False
        self.skipped = 0
        self.handled = 0  # highest phase acknowledged (including skipped frames)

    def _csr_text(self) -> Optional[str]:
        if self.csr_csv is not None:
            try:
                return self.csr_csv.read_text()
            except OSError as e:
                raise Fatal(f"cannot read --csr-csv {self.csr_csv}: {e}")
        if not self.csr_in_memory:
            return None
        addr, limit, burst = int(self.mb["csr_csv_addr"]), int(self.mb["csr_csv_max"]), self.bridge.burst
        out = bytearray()
        while len(out) < limit:
            chunk = self.bridge.read(addr + len(out), min(burst, limit - len(out)))
            end = min((i for i in (chunk.find(b"\x00"), chunk.find(b"\xff")) if i >= 0), default=-1)
            if end >= 0:
                out += chunk[:end]
                break
            out += chunk
        return out.decode("ascii", errors="replace")

    def open(self) -> None:
        try:
            self.bridge = self.bridge_factory()
        except (NothingListening, Fatal, TesterError):
            raise
        except Exception as e:  # backend-specific errors (permissions, ...)
            raise TesterError(f"opening the {self.name} bridge: {e}")
        try:
            if not self.opened_once:
                text = self._csr_text()
                base = parse_csr_csv(text, self.mb["csr_block"]) if text is not None else None
                if base is None:
                    base = int(self.mb["base"])
                    if text is not None:
                        log(f"csr.csv has no {self.mb['csr_block']} block; using spec base {base:#010x}")
                self.base = base
            magic = self.bridge.read32(self.base + self.mb["magic"])
            if magic != int(self.mb["magic_value"]):
                raise NothingListening(f"no TRNG tester on the device (mailbox magic {magic:#010x} at "
                                       f"{self.base + self.mb['magic']:#010x}, expected "
                                       f"{int(self.mb['magic_value']):#010x}; is the trng server built with the tester?)")
            self.slots = (self.bridge.read32(self.base + self.mb["buf0"]),
                          self.bridge.read32(self.base + self.mb["buf1"]))
            self.bridge.write32(self.base + self.mb["control"], self.mode | int(self.mb["run_bit"]))
        except BridgeTimeout as e:
            self.close()
            if not self.opened_once:  # a bridge that never answered: nothing to talk to
                raise NothingListening(str(e))
            raise
        except (NothingListening, Fatal, TesterError):
            self.close()
            raise
        except Exception as e:
            self.close()
            raise TesterError(f"{self.name} bridge error while opening the tester mailbox: {e}")
        self.opened_once = True
        self.description = f"{self.name} mailbox {self.base:#010x}"

    def close(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
        self.bridge = None

    @property
    def is_open(self) -> bool:
        return self.bridge is not None

    def _wait_phase(self, last_seq: int) -> int:
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while True:
            phase = self.bridge.read32(self.base + self.mb["phase"])
            if phase > last_seq:
                return phase
            if time.monotonic() >= deadline:
                raise TesterError(f"no new buffer from the device for {self.timeout:g} s (phase {phase})")
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def next_frame(self, last_seq: int) -> tuple[int, memoryview]:
        try:
            return self._next_frame(last_seq)
        except (TesterError, Rejected, Fatal):
            raise
        except Exception as e:  # usb.core.USBError and friends
            raise TesterError(f"{self.name} bridge error: {e}")

    def _next_frame(self, last_seq: int) -> tuple[int, memoryview]:
        hb, bb = self.spec.header_bytes, self.spec.buffer_bytes
        ack = self.base + self.mb["ack"]
        while True:
            done = max(last_seq, self.handled)
            phase = self._wait_phase(done)
            # In order: with ACK = done the device can have published up to done + 2, and the slot
            # of done + 1 stays intact until we acknowledge it. A fresh start takes the newest.
            if done and done < phase <= done + 2:
                phase = done + 1
            slot = self.slots[phase % 2]
            first = min(self.bridge.burst, hb + bb)
            self.bridge.read_into(slot, self.view[:first])
            magic, seq, mode, length, _, status = HEADER.unpack(self.view[:hb])
            if magic == self.spec.frame_magic and seq != phase:
                raise TesterError(f"slot {phase % 2} holds seq {seq}, mailbox phase is {phase}")
            try:
                hdr = check_header(self.spec, self.view[:hb], self.mode, last_seq, strict_mode=False)
            except TesterError:
                self.bridge.write32(ack, phase)  # hand the slot back even when we reject it
                self.handled = max(self.handled, phase)
                raise
            if hdr.mode != self.mode:
                # left over from before our CONTROL write: acknowledge, skip, no output
                self.bridge.write32(ack, phase)
                self.skipped += 1
                self.handled = phase
                continue
            if hb + bb > first:
                self.bridge.read_into(slot + first, self.view[first:hb + bb])
            payload = self.view[hb:hb + bb]
            crc = zlib.crc32(payload)
            self.bridge.write32(ack, phase)
            self.handled = phase
            if crc != hdr.crc:
                raise TesterError(f"CRC mismatch in seq {hdr.seq}: header {hdr.crc:#010x}, payload {crc:#010x}")
            return hdr.seq, payload


# --------------------------------------------------------------------------------------------
# output


class Sink:
    def __init__(self, fd: int, limit: int):
        self.fd = fd
        self.limit = limit  # 0 = unlimited
        self.written = 0

    @property
    def done(self) -> bool:
        return self.limit and self.written >= self.limit

    def write(self, payload: memoryview) -> int:
        if self.limit:
            payload = payload[:self.limit - self.written]
        view, write, fd = payload, os.write, self.fd
        while view:
            k = write(fd, view)
            view = view[k:]
        self.written += len(payload)
        return len(payload)


@dataclass
class Stats:
    transport: str = ""
    source: str = ""
    bytes: int = 0
    seconds: float = 0.0
    mb_s: float = 0.0
    frames: int = 0
    first_seq: int = 0
    last_seq: int = 0
    reconnects: int = 0
    failures: int = 0
    errors: list = field(default_factory=list)
    pipe_closed: bool = False


class Progress:
    def __init__(self, total: int, quiet: bool):
        self.bar = None
        self.quiet = quiet
        self.last = 0.0
        self.start = time.monotonic()
        if quiet:
            return
        try:
            from tqdm import tqdm  # noqa: PLC0415
            self.bar = tqdm(total=total or None, unit="B", unit_scale=True, unit_divisor=1024,
                            file=sys.stderr, dynamic_ncols=True, mininterval=0.5, desc="trng")
        except ImportError:
            self.bar = None

    def update(self, n: int, total_written: int) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            rate = total_written / max(now - self.start, 1e-9) / 1e6
            log(f"{total_written / 1048576:.1f} MiB, {rate:.1f} MB/s")

    def close(self) -> None:
        if self.bar is not None:
            try:
                self.bar.close()
            except (OSError, ValueError):
                pass


def stream(source, sink: Sink, stats: Stats, retries: int, quiet: bool,
           sleep: Callable[[float], None] = time.sleep) -> None:
    """Move verified frames from source to sink until the byte limit or a fatal condition."""
    failures = 0
    connected_once = False
    last_seq = 0
    backoff = 0.1
    progress = Progress(sink.limit, quiet)
    start = time.monotonic()
    try:
        while not sink.done:
            try:
                if not source.is_open:
                    if connected_once:
                        stats.reconnects += 1
                    source.open()
                    connected_once = True
                seq, payload = source.next_frame(last_seq)
            except NothingListening as e:
                if not connected_once:
                    raise Fatal(str(e), EXIT_NOTHING_LISTENING)
                err = str(e)
            except Rejected as e:
                raise Fatal(str(e), EXIT_REJECTED)
            except TesterError as e:
                err = str(e)
            else:
                n = sink.write(payload)  # BrokenPipeError propagates to the caller
                if stats.frames == 0:
                    stats.first_seq = seq
                stats.frames += 1
                stats.last_seq = last_seq = seq
                failures, backoff = 0, 0.1
                progress.update(n, sink.written)
                continue
            # failure path: drop the connection, back off, retry (bounded)
            source.close()
            failures += 1
            stats.failures += 1
            if len(stats.errors) < 20:
                stats.errors.append(err)
            if failures > retries:
                raise Fatal(f"giving up after {failures} consecutive failures; last: {err}")
            log(f"{err}; reconnecting in {backoff:.1f} s ({failures}/{retries})")
            sleep(backoff)
            backoff = min(backoff * 2, 2.0)
    finally:
        progress.close()
        source.close()
        stats.bytes = sink.written
        stats.seconds = time.monotonic() - start
        stats.mb_s = stats.bytes / stats.seconds / 1e6 if stats.seconds > 0 else 0.0


# --------------------------------------------------------------------------------------------
# CLI


def build_parser(modes=("cprng", "av", "ro", "both")) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trng_test.py",
        description="Stream TRNG tester buffers as raw bytes (stdout by default), e.g. "
                    "`trng_test.py --port-file P | dieharder -g 200 -a`. See docs/trng-tester-protocol.md.")
    p.add_argument("--source", choices=modes, default="cprng",
                   help="cprng = conditioned output, av / ro = raw sources, both = av XOR ro (default cprng)")
    p.add_argument("--bytes", type=parse_size, default=0, metavar="N",
                   help="stop after exactly N bytes (suffix K/M/G = 1024-based); 0 = until the reader closes")
    p.add_argument("--out", default="-", metavar="PATH", help="output file (default - = stdout)")
    p.add_argument("--transport", choices=("hosted", "device", "sim"), default="hosted",
                   help="hosted = TCP tester of hosted Xous, device = Precursor over USB, "
                        "sim = the simulated Precursor over its uartbone bridge (default hosted)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--port", type=port_number, help="hosted: tester TCP port on 127.0.0.1")
    where.add_argument("--port-file", type=Path, metavar="PATH",
                       help="hosted: file holding the port (written by the tester, $TRNG_TESTER_PORTFILE)")
    p.add_argument("--bridge", type=bridge_address, metavar="[HOST:]PORT",
                   help="sim: TCP address of the simulated Precursor's uartbone bridge (host default 127.0.0.1)")
    p.add_argument("--timeout", type=positive_float, default=10.0, metavar="SECONDS",
                   help="connect / inactivity / port-file timeout (default 10)")
    p.add_argument("--retries", type=non_negative_int, default=5,
                   help="consecutive failures tolerated before giving up (default 5)")
    p.add_argument("--csr-csv", type=Path, metavar="PATH",
                   help="device/sim: local csr.csv (device: instead of the copy read from the device; "
                        "sim: the simulated SoC's build; without it the spec's mailbox base is used)")
    p.add_argument("--spec", type=Path, default=None, metavar="PATH",
                   help="spec/trng.toml (default: $TRNG_SPEC or ../spec/trng.toml next to this tool)")
    p.add_argument("--stats-json", type=Path, metavar="PATH", help="write the run summary as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar (the one-line summary is still printed)")
    return p


def main(argv=None, device_factory: Optional[Callable] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.transport == "hosted" and args.port is None and args.port_file is None:
        parser.error("--transport hosted needs --port or --port-file")
    if args.transport != "hosted" and (args.port is not None or args.port_file is not None):
        parser.error("--port/--port-file apply to --transport hosted only")
    if args.transport == "sim" and args.bridge is None:
        parser.error("--transport sim needs --bridge [HOST:]PORT")
    if args.transport != "sim" and args.bridge is not None:
        parser.error("--bridge applies to --transport sim only")

    stats = Stats(transport=args.transport, source=args.source)
    out_fd = None
    try:
        spec = Spec.load(args.spec or Path(os.environ.get("TRNG_SPEC", DEFAULT_SPEC)))
        mode = spec.modes[args.source]
        if args.transport == "hosted":
            source = HostedSource(spec, mode, args.timeout, port=args.port, port_file=args.port_file)
        elif args.transport == "device":
            find = device_factory or (lambda: find_usb_device(spec))
            source = DeviceSource(spec, mode, args.timeout, lambda: UsbBridge(find(), spec, int(args.timeout * 1000)),
                                  csr_csv=args.csr_csv, name="usb")
        else:
            host, bport = args.bridge
            source = DeviceSource(spec, mode, args.timeout, lambda: UartboneBridge(spec, host, bport, args.timeout),
                                  csr_csv=args.csr_csv, csr_in_memory=False, name="sim")
        if args.out == "-":
            out_fd = sys.stdout.fileno()
        else:
            try:
                out_fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            except OSError as e:
                raise Fatal(f"cannot open --out {args.out}: {e.strerror}")
        sink = Sink(out_fd, args.bytes)
        code = EXIT_OK
        try:
            stream(source, sink, stats, args.retries, args.quiet)
        except BrokenPipeError:
            stats.pipe_closed = True
            # The consumer (dieharder) has read enough; keep Python's exit-time flush quiet.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, out_fd)
            except OSError:
                pass
        except OSError as e:
            if e.errno == errno.EPIPE:
                stats.pipe_closed = True
            else:
                raise Fatal(f"writing output: {e}")
    except Fatal as e:
        log(f"error: {e}")
        code = e.code
    except KeyboardInterrupt:
        log("interrupted")
        code = 130
    summary = (f"{stats.bytes} bytes in {stats.seconds:.2f} s ({stats.mb_s:.1f} MB/s), "
               f"{stats.frames} buffers, seq {stats.first_seq}..{stats.last_seq}, "
               f"{stats.reconnects} reconnects, {stats.failures} failures"
               + (", reader closed the pipe" if stats.pipe_closed else ""))
    log(summary)
    if args.stats_json:
        try:
            args.stats_json.write_text(json.dumps(asdict(stats) | {"exit": code}) + "\n")
        except OSError as e:
            log(f"cannot write --stats-json: {e}")
    if out_fd is not None and args.out != "-":
        os.close(out_fd)
    return code


if __name__ == "__main__":
    sys.exit(main())
