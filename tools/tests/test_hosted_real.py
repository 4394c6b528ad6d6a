"""trng_test.py against the real TRNG server's tester in a hosted Xous system.

Runs when `cargo xtask test` (pytest step) exports XTASK_XOUS_KERNEL, XTASK_XOUS_SERVICES and
XTASK_PROGRAMS_DIR; skipped otherwise.
"""

import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest
from conftest import BUF, SPEC, run_tool

import trng_test

KERNEL = os.environ.get("XTASK_XOUS_KERNEL")
SERVICES = [s for s in os.environ.get("XTASK_XOUS_SERVICES", "").split(":") if s]
PROGRAMS = os.environ.get("XTASK_PROGRAMS_DIR")

pytestmark = pytest.mark.skipif(
    not (KERNEL and SERVICES and PROGRAMS and Path(PROGRAMS, "trng").is_file()),
    reason="needs the hosted system (run through `cargo xtask test`)")


@pytest.fixture(scope="module")
def tester(tmp_path_factory):
    work = tmp_path_factory.mktemp("hosted")
    portfile = work / "tester.port"
    env = dict(os.environ, TRNG_TESTER_PORT="0", TRNG_TESTER_PORTFILE=str(portfile))
    log = open(work / "hosted.log", "wb")
    trng = f"{Path(PROGRAMS, 'trng')} --source model"
    kernel = subprocess.Popen([KERNEL, *SERVICES, trng], stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (portfile.exists() and portfile.read_text().endswith("\n")):
            assert kernel.poll() is None, (work / "hosted.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "tester wrote no port file in 60 s"
            time.sleep(0.05)
        yield int(portfile.read_text()), portfile
    finally:
        os.killpg(kernel.pid, signal.SIGTERM)  # our own session: only the processes we started
        try:
            kernel.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(kernel.pid, signal.SIGKILL)
            kernel.wait(timeout=10)
        log.close()


@pytest.mark.parametrize("source", list(SPEC.modes))
def test_stream_each_source(tester, tmp_path, source):
    port, _ = tester
    out = tmp_path / "o"
    stats = tmp_path / "s.json"
    assert run_tool(["--port", str(port), "--source", source, "--bytes", "2M", "--out", str(out),
                     "--stats-json", str(stats)]) == 0
    data = out.read_bytes()
    assert len(data) == 2 * 1024 * 1024
    assert len(set(data[i:i + 4096] for i in range(0, len(data), 4096))) == len(data) // 4096
    import json
    s = json.loads(stats.read_text())
    assert s["frames"] == 4 and s["failures"] == 0 and s["last_seq"] > s["first_seq"]


def test_port_file_and_fresh_data_per_connection(tester, tmp_path):
    _, portfile = tester
    a, b = tmp_path / "a", tmp_path / "b"
    for p in (a, b):
        assert run_tool(["--port-file", str(portfile), "--bytes", "512K", "--out", str(p)]) == 0
    assert a.read_bytes() != b.read_bytes()


def test_bad_requests_get_error_frame_and_server_keeps_serving(tester, tmp_path):
    port, _ = tester
    bad = [b"NOTAREQ1" + struct.pack("<II", 0, 0),
           SPEC.request_magic + struct.pack("<II", 9, 0),
           SPEC.request_magic + struct.pack("<II", 0, 7)]
    for req in bad:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(req)
            hdr = b""
            while len(hdr) < 32:
                chunk = s.recv(32 - len(hdr))
                assert chunk, "server closed without an error frame"
                hdr += chunk
            magic, seq, mode, length, crc, status = trng_test.HEADER.unpack(hdr)
            assert (magic, length, status) == (SPEC.frame_magic, 0, SPEC.status["bad_request"])
            s.settimeout(10)
            assert s.recv(1) == b""  # then closed
    # early close mid-request, then a normal client
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(SPEC.request_magic[:5])
    out = tmp_path / "o"
    assert run_tool(["--port", str(port), "--bytes", str(BUF), "--out", str(out)]) == 0
    assert len(out.read_bytes()) == BUF
