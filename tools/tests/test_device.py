"""trng_test.py --transport device against a simulated USB debug bridge + tester mailbox."""

import json

from conftest import BUF, CSR_BASE, MB, SPEC, FakeDevice, payload_for, run_tool

import trng_test


def run_dev(dev, tmp_path, nbytes, *extra):
    out = tmp_path / "out.bin"
    argv = ["--transport", "device", "--bytes", str(nbytes), "--out", str(out),
            "--stats-json", str(tmp_path / "s.json"), *extra]
    code = run_tool(argv, device_factory=lambda: dev)
    stats = json.loads((tmp_path / "s.json").read_text())
    return code, out.read_bytes(), stats


def test_device_stream_in_order_via_csr_csv_in_flash(tmp_path):
    dev = FakeDevice()
    code, data, stats = run_dev(dev, tmp_path, 4 * BUF)
    assert code == 0, stats
    assert dev.violations == []
    # first read takes the newest published frame, then strictly in order, nothing skipped
    first = stats["first_seq"]
    assert data == b"".join(payload_for(s) for s in range(first, first + 4))
    assert stats["last_seq"] == first + 3
    assert dev.regs["control"] == MB["run_bit"] | SPEC.modes["cprng"]
    assert dev.regs["ack"] == stats["last_seq"]


def test_device_addressing_and_bursts(tmp_path):
    seen = []
    dev = FakeDevice()
    orig = dev.ctrl_transfer

    def spy(rt, req, wv, wi, d, timeout=None):
        seen.append((rt, wv, wi, d if isinstance(d, int) else len(d)))
        return orig(rt, req, wv, wi, d, timeout)

    dev.ctrl_transfer = spy
    code, data, stats = run_dev(dev, tmp_path, BUF, "--source", "ro")
    assert code == 0 and dev.violations == []
    assert all(n <= 4096 for _, _, _, n in seen)
    # the mailbox MAGIC read is addressed as wValue = addr[15:0], wIndex = addr[31:16]
    magic = CSR_BASE + MB["magic"]
    assert (0xC3, magic & 0xFFFF, magic >> 16, 4) in seen
    ctl = CSR_BASE + MB["control"]
    assert (0x43, ctl & 0xFFFF, ctl >> 16, 4) in seen
    assert data == payload_for(stats["first_seq"], SPEC.modes["ro"])


def test_device_stale_mode_frame_skipped(tmp_path):
    dev = FakeDevice(initial_mode=SPEC.modes["av"])  # seq 1 published in av before we asked for cprng
    code, data, stats = run_dev(dev, tmp_path, 2 * BUF)
    assert code == 0 and dev.violations == []
    assert stats["first_seq"] > 1
    assert data == payload_for(stats["first_seq"]) + payload_for(stats["first_seq"] + 1)
    assert payload_for(1, SPEC.modes["av"])[:4096] not in data


def test_device_bad_crc_dropped_and_recovered(tmp_path):
    dev = FakeDevice(corrupt_crc_seqs={3})
    code, data, stats = run_dev(dev, tmp_path, 3 * BUF)
    assert code == 0 and dev.violations == []
    assert stats["failures"] == 1 and "CRC mismatch in seq 3" in stats["errors"][0]
    assert payload_for(3)[:4096] not in data
    assert len(data) == 3 * BUF


def test_device_health_error_frame(tmp_path):
    dev = FakeDevice(error_seqs={2, 3})
    code, data, stats = run_dev(dev, tmp_path, 2 * BUF)
    assert code == 0 and dev.violations == []
    assert any("status 1 (health)" in e for e in stats["errors"])
    assert len(data) == 2 * BUF


def test_device_usb_error_midstream_reopens(tmp_path):
    dev = FakeDevice(fail_transfers_at={40, 300})
    code, data, stats = run_dev(dev, tmp_path, 3 * BUF)
    assert code == 0 and dev.violations == []
    assert stats["reconnects"] == 2
    first = stats["first_seq"]
    seqs = [s for s in range(first, first + 10) if payload_for(s)[:64] in data]
    assert len(seqs) == 3 and len(set(seqs)) == 3


def test_device_csr_csv_file_and_fallback_base(tmp_path, capsys):
    # csr.csv given as a local file
    csv = tmp_path / "csr.csv"
    csv.write_text(f"csr_base,trng_tester,{CSR_BASE:#x},,\n")
    dev = FakeDevice(csr_in_flash=False)
    code, data, _ = run_dev(dev, tmp_path, BUF, "--csr-csv", str(csv))
    assert code == 0 and len(data) == BUF
    # no trng_tester block anywhere: the spec's base is used, and said so
    dev = FakeDevice(csr_text="csr_base,trng_server,0xf001d000,,\n", csr_base=MB["base"])
    code, data, _ = run_dev(dev, tmp_path, BUF)
    assert code == 0 and len(data) == BUF
    assert "using spec base" in capsys.readouterr().err


def test_device_without_tester(tmp_path, capsys):
    dev = FakeDevice(tester=False)
    code, data, _ = run_dev(dev, tmp_path, BUF)
    assert code == 3 and data == b""
    assert "no TRNG tester on the device" in capsys.readouterr().err


def test_no_device(tmp_path, capsys):
    def nothing():
        raise trng_test.NothingListening("no USB device 1209:5bf0 (Precursor debug bridge) found")

    out = tmp_path / "o"
    assert run_tool(["--transport", "device", "--out", str(out)], device_factory=nothing) == 3
    assert "no USB device 1209:5bf0" in capsys.readouterr().err


def test_device_stalls_times_out(tmp_path, capsys):
    dev = FakeDevice()
    dev._step = lambda: None  # device never publishes anything
    out = tmp_path / "o"
    argv = ["--quiet", "--transport", "device", "--retries", "1", "--timeout", "0.3", "--out", str(out)]
    assert trng_test.main(argv, device_factory=lambda: dev) == 1
    assert "no new buffer from the device" in capsys.readouterr().err


def test_csr_csv_parser():
    text = "# comment\ncsr_base,trng_tester,0xf0020000,,\ncsr_register,trng_tester_phase,0xf0020004,1,ro\n"
    assert trng_test.parse_csr_csv(text, "trng_tester") == 0xF0020000
    assert trng_test.parse_csr_csv(text, "trng_server") is None
