"""trng_test.py --transport hosted against scripted fake tester servers."""

import json
import socket
import struct

from conftest import BUF, SPEC, frame, payload_for, run_tool

import trng_test


def out_args(tmp_path, port, nbytes, *extra):
    out = tmp_path / "out.bin"
    return out, ["--port", str(port), "--bytes", str(nbytes), "--out", str(out), *extra]


def test_good_stream_exact_bytes_and_request(fake_tester, tmp_path):
    srv = fake_tester([[frame(s) for s in (1, 2, 3, 4)]])
    out, argv = out_args(tmp_path, srv.port, 3 * BUF)
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(1) + payload_for(2) + payload_for(3)
    assert srv.requests == [struct.pack("<8sII", b"TRNGREQ1", 0, 0)]


def test_partial_last_buffer_is_cut_after_verification(fake_tester, tmp_path):
    srv = fake_tester([[frame(1), frame(2)]])
    out, argv = out_args(tmp_path, srv.port, BUF + 1000)
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(1) + payload_for(2)[:1000]


def test_each_source_sends_its_mode(fake_tester, tmp_path):
    for name, mode in SPEC.modes.items():
        srv = fake_tester([[frame(7, mode)]])
        out, argv = out_args(tmp_path, srv.port, "512K", "--source", name)
        assert run_tool(argv) == 0
        assert srv.requests[0] == struct.pack("<8sII", SPEC.request_magic, mode, 0)
        assert out.read_bytes() == payload_for(7, mode)


def test_duplicate_seq_is_never_emitted(fake_tester, tmp_path):
    dup = frame(2, payload=payload_for(99))  # same seq, other data: must not appear
    srv = fake_tester([[frame(1), frame(2), dup, frame(3)], [frame(2), frame(5)], [frame(7), frame(8)]])
    out, argv = out_args(tmp_path, srv.port, 4 * BUF)
    assert run_tool(argv) == 0
    # the replayed seq 2 (either payload) ends each connection; seq 7 and 8 come from the third
    assert out.read_bytes() == b"".join(payload_for(s) for s in (1, 2, 7, 8))


def test_duplicate_then_fresh_connection(fake_tester, tmp_path):
    srv = fake_tester([[frame(1), frame(1)], [frame(4), frame(5)]])
    out, argv = out_args(tmp_path, srv.port, 3 * BUF, "--stats-json", str(tmp_path / "s.json"))
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(1) + payload_for(4) + payload_for(5)
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["reconnects"] == 1 and stats["failures"] == 1
    assert "duplicate" in stats["errors"][0]
    assert (stats["first_seq"], stats["last_seq"], stats["frames"]) == (1, 5, 3)


def test_bad_crc_frame_dropped(fake_tester, tmp_path):
    srv = fake_tester([[frame(1), frame(2, crc=0xDEADBEEF)], [frame(3)]])
    out, argv = out_args(tmp_path, srv.port, 2 * BUF)
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(1) + payload_for(3)


def test_flipped_payload_bit_dropped(fake_tester, tmp_path):
    bad = bytearray(frame(2))
    bad[32 + 12345] ^= 0x10
    srv = fake_tester([[frame(1), bytes(bad)], [frame(3)]])
    out, argv = out_args(tmp_path, srv.port, 2 * BUF)
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(1) + payload_for(3)


def test_truncated_frame_dropped(fake_tester, tmp_path):
    srv = fake_tester([[frame(1), frame(2)[:100_000], "close"], [frame(3)[:20]], [frame(4)]])
    out, argv = out_args(tmp_path, srv.port, 2 * BUF, "--stats-json", str(tmp_path / "s.json"))
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(1) + payload_for(4)
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["failures"] == 2 and all("truncated" in e for e in stats["errors"])


def test_bad_magic_dropped(fake_tester, tmp_path):
    srv = fake_tester([[frame(1, magic=b"TRNGBUF2")], [frame(2)]])
    out, argv = out_args(tmp_path, srv.port, BUF)
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(2)


def test_wrong_mode_and_wrong_len_dropped(fake_tester, tmp_path):
    short = frame(2, payload=payload_for(2)[:4096])
    srv = fake_tester([[frame(1, mode=2)], [short], [frame(3)]])
    out, argv = out_args(tmp_path, srv.port, BUF, "--stats-json", str(tmp_path / "s.json"))
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(3)
    errors = json.loads((tmp_path / "s.json").read_text())["errors"]
    assert "mode 2" in errors[0] and "len 4096" in errors[1]


def test_health_and_internal_error_frames_retry(fake_tester, tmp_path):
    srv = fake_tester([[frame(1, status=1)], [frame(2, status=3)], [frame(3)]])
    out, argv = out_args(tmp_path, srv.port, BUF, "--stats-json", str(tmp_path / "s.json"))
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(3)
    errors = json.loads((tmp_path / "s.json").read_text())["errors"]
    assert "status 1 (health)" in errors[0] and "status 3 (internal)" in errors[1]


def test_persistent_health_failure_gives_up_without_output(fake_tester, tmp_path, capsys):
    srv = fake_tester([[frame(i, status=1)] for i in range(1, 10)])
    out, argv = out_args(tmp_path, srv.port, BUF)
    assert run_tool(argv) == 1
    assert out.read_bytes() == b""
    assert "giving up after 4 consecutive failures" in capsys.readouterr().err


def test_error_frame_with_payload_rejected(fake_tester, tmp_path):
    srv = fake_tester([[frame(1, status=1, payload=b"\x00" * 64)], [frame(2)]])
    out, argv = out_args(tmp_path, srv.port, BUF)
    assert run_tool(argv) == 0
    assert out.read_bytes() == payload_for(2)


def test_bad_request_status_is_fatal(fake_tester, tmp_path, capsys):
    srv = fake_tester([[frame(0, status=2)], [frame(1)]])
    out, argv = out_args(tmp_path, srv.port, BUF)
    assert run_tool(argv) == 4
    assert out.read_bytes() == b""
    assert "rejected" in capsys.readouterr().err
    assert len(srv.requests) == 1  # no retry


def test_reconnect_after_clean_close(fake_tester, tmp_path):
    srv = fake_tester([[frame(1), frame(2)], [frame(3), frame(4)], [frame(7)]])
    out, argv = out_args(tmp_path, srv.port, 5 * BUF, "--stats-json", str(tmp_path / "s.json"))
    assert run_tool(argv) == 0
    assert out.read_bytes() == b"".join(payload_for(s) for s in (1, 2, 3, 4, 7))
    assert json.loads((tmp_path / "s.json").read_text())["reconnects"] == 2


def test_server_gone_after_session_retries_then_fails(fake_tester, tmp_path, capsys):
    holder = {}

    def one_then_vanish(conn, req):
        conn.sendall(frame(1))
        holder["srv"].sock.close()  # nobody listens any more

    srv = fake_tester([one_then_vanish])
    holder["srv"] = srv
    out, argv = out_args(tmp_path, srv.port, 2 * BUF)
    assert run_tool(argv) == 1  # connected once: refusals are retried, then give up
    assert out.read_bytes() == payload_for(1)
    assert "connection refused" in capsys.readouterr().err


def test_silent_server_times_out(fake_tester, tmp_path, capsys):
    import time

    def silent(conn, req):
        time.sleep(2.5)

    srv = fake_tester([silent, [frame(1)]])
    out, argv = out_args(tmp_path, srv.port, BUF)
    argv = ["--quiet", "--retries", "2", "--timeout", "0.5"] + argv
    assert trng_test.main(argv) == 0
    assert out.read_bytes() == payload_for(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_nothing_listening(tmp_path, capsys):
    out, argv = out_args(tmp_path, free_port(), BUF)
    assert run_tool(argv) == 3
    err = capsys.readouterr().err
    assert "nothing listening on 127.0.0.1:" in err
    assert out.read_bytes() == b""


def test_port_file(fake_tester, tmp_path):
    srv = fake_tester([[frame(1)]])
    pf = tmp_path / "port"
    pf.write_text(f"{srv.port}\n")
    out = tmp_path / "o"
    assert run_tool(["--port-file", str(pf), "--bytes", "512K", "--out", str(out)]) == 0
    assert out.read_bytes() == payload_for(1)


def test_port_file_missing_times_out(tmp_path, capsys):
    argv = ["--quiet", "--timeout", "0.3", "--port-file", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]
    assert trng_test.main(argv) == 3
    assert "did not appear" in capsys.readouterr().err


def test_port_file_garbage(tmp_path, capsys):
    pf = tmp_path / "port"
    pf.write_text("banana\n")
    assert run_tool(["--port-file", str(pf), "--out", str(tmp_path / "o")]) == 1
    assert "not a port number" in capsys.readouterr().err
