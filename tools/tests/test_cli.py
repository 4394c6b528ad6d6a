"""Command line: malformed flags, spec errors, stdout streaming and a closed pipe (subprocess)."""

import subprocess
import sys
import threading

import pytest
from conftest import BUF, TOOLS, frame, payload_for, run_tool

import trng_test

TOOL = [sys.executable, str(TOOLS / "trng_test.py")]


@pytest.mark.parametrize("argv, needle", [
    (["--port", "1", "--bytes", "abc"], "invalid size"),
    (["--port", "1", "--bytes", "-5"], "invalid size"),
    (["--port", "1", "--bytes", "12Q"], "invalid size"),
    (["--port", "1", "--source", "xyz"], "invalid choice"),
    (["--port", "0"], "port out of range"),
    (["--port", "70000"], "port out of range"),
    (["--port", "http"], "not a port number"),
    (["--port", "1", "--timeout", "0"], "positive number"),
    (["--port", "1", "--timeout", "nan"], "positive number"),
    (["--port", "1", "--timeout", "-1"], "positive number"),
    (["--port", "1", "--retries", "-1"], "must be >= 0"),
    (["--port", "1", "--transport", "serial"], "invalid choice"),
    (["--port", "1", "--port-file", "x"], "not allowed with"),
    ([], "needs --port or --port-file"),
    (["--transport", "device", "--port", "5"], "hosted only"),
    (["--port", "1", "--frobnicate"], "unrecognized arguments"),
])
def test_malformed_flags_exit_2(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        trng_test.main(argv)
    assert e.value.code == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize("text, value", [
    ("0", 0), ("4096", 4096), ("64K", 65536), ("64k", 65536), ("256M", 256 << 20),
    ("1G", 1 << 30), ("1GiB", 1 << 30), ("2T", 2 << 40), ("10B", 10),
])
def test_parse_size(text, value):
    assert trng_test.parse_size(text) == value


def test_missing_and_malformed_spec(tmp_path, capsys):
    assert run_tool(["--port", "1", "--spec", str(tmp_path / "none.toml")]) == 1
    assert "spec file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[tester\n")
    assert run_tool(["--port", "1", "--spec", str(bad)]) == 1
    assert "not valid TOML" in capsys.readouterr().err
    partial = tmp_path / "partial.toml"
    partial.write_text("[tester]\nframe_magic = 'TRNGBUF1'\n")
    assert run_tool(["--port", "1", "--spec", str(partial)]) == 1
    assert "incomplete or malformed" in capsys.readouterr().err


def test_unwritable_out(fake_tester, tmp_path, capsys):
    srv = fake_tester([[frame(1)]])
    assert run_tool(["--port", str(srv.port), "--out", str(tmp_path / "no" / "such" / "dir")]) == 1
    assert "cannot open --out" in capsys.readouterr().err


def endless(conn, req):
    seq = 1
    while True:
        conn.sendall(frame(seq, payload=payload_for(seq % 4 + 1)))  # few distinct payloads, cheap
        seq += 1


def test_stdout_stream_subprocess(fake_tester):
    srv = fake_tester([endless])
    p = subprocess.run(TOOL + ["--port", str(srv.port), "--bytes", "1M"], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == payload_for(2) + payload_for(3)
    assert b"1048576 bytes" in p.stderr


def test_reader_closing_pipe_is_clean(fake_tester):
    """dieharder closes stdin when it has enough: exit 0, no traceback."""
    srv = fake_tester([endless])
    tool = subprocess.Popen(TOOL + ["--quiet", "--port", str(srv.port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    head = tool.stdout.read(3 * BUF + 17)
    tool.stdout.close()
    err = tool.stderr.read()
    assert tool.wait(timeout=30) == 0, err
    assert len(head) == 3 * BUF + 17
    assert b"Traceback" not in err and b"reader closed the pipe" in err


def test_nothing_listening_subprocess():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.run(TOOL + ["--port", str(port)], capture_output=True, timeout=30)
    assert p.returncode == 3
    assert b"nothing listening" in p.stderr and p.stdout == b""


def test_concurrent_server_threads_do_not_leak(fake_tester):
    # sanity of the fake itself: the endless handler ends when the client goes away
    before = threading.active_count()
    srv = fake_tester([[frame(1)]])
    assert run_tool(["--port", str(srv.port), "--bytes", "512K", "--out", "/dev/null"]) == 0
    srv.close()
    assert threading.active_count() <= before + 1


def test_real_pyusb_lookup_without_device(monkeypatch, tmp_path, capsys):
    usb_core = pytest.importorskip("usb.core")
    monkeypatch.setattr(usb_core, "find", lambda **kw: None)
    assert run_tool(["--transport", "device", "--out", str(tmp_path / "o")]) == 3
    assert "no USB device 1209:5bf0" in capsys.readouterr().err


def test_progress_bar_goes_to_stderr(fake_tester, tmp_path):
    srv = fake_tester([[frame(1), frame(2)]])
    p = subprocess.run(TOOL + ["--port", str(srv.port), "--bytes", "1M"], capture_output=True, timeout=60)
    assert p.returncode == 0
    assert p.stdout == payload_for(1) + payload_for(2)
    assert b"trng" in p.stderr and b"MB/s" in p.stderr
