"""The FPGA flows' bad input (common/ecp5.py, engine/place.py): a missing tool, a failing tool
and a missed clock are errors with the tool's message and the log's path, never a quiet pass.
No tool runs here (fast)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import ecp5  # noqa: E402
from engine.place import cross_budget_ok  # noqa: E402


def test_missing_tool_names_its_package():
    with pytest.raises(ecp5.ToolError, match="not found"):
        ecp5.tool("yowasp-no-such-tool")


def test_failing_tool_reports_its_message_and_log(tmp_path):
    log = tmp_path / "t.log"
    with pytest.raises(ecp5.ToolError) as e:
        ecp5.run(["sh", "-c", "echo 'Info: fine'; echo 'ERROR: placement failed for cell x'; exit 3"], log, "nextpnr-ecp5 t", 60)
    msg = str(e.value)
    assert "ERROR: placement failed for cell x" in msg and str(log) in msg and "exit 3" in msg
    assert "placement failed" in log.read_text()


def test_timed_out_tool_is_an_error(tmp_path):
    with pytest.raises(ecp5.ToolError, match="timed out"):
        ecp5.run(["sleep", "5"], tmp_path / "s.log", "slow tool", 1)


def test_missed_or_absent_clock_is_reported():
    r = {"fmax": {"$glbnet$eng_clk$TRELLIS_IO_IN": 61.2, "mul_clk": 88.0}, "log": "/x/nextpnr.log"}
    bad = ecp5.check_timing(r, {"eng_clk": 50, "mul_clk": 100, "sys_clk": 100})
    assert len(bad) == 2
    assert any("mul_clk: 88.0 MHz < 100 MHz" in b and "/x/nextpnr.log" in b for b in bad)
    assert any("sys_clk: not in nextpnr's report" in b for b in bad)
    assert ecp5.check_timing(r, {"eng_clk": 50}) == []


def test_cross_domain_budgets():
    assert cross_budget_ok("eng -> mul", {"ns": 9.9, "from_cell": "a", "to_cell": "b"})
    assert not cross_budget_ok("eng -> mul", {"ns": 10.1, "from_cell": "a", "to_cell": "b"})
    # the register-file array's paths are the multicycle ones (20 ns), and only those
    assert cross_budget_ok("mul -> eng", {"ns": 15.0, "from_cell": "rf.0.3", "to_cell": "b"})
    assert not cross_budget_ok("mul -> eng", {"ns": 20.5, "from_cell": "rf.0.3", "to_cell": "b"})
    assert not cross_budget_ok("mul -> eng", {"ns": 15.0, "from_cell": "ucode.0.0", "to_cell": "b"})


def test_clock_names_of_nextpnr():
    assert ecp5.clock_port("posedge $glbnet$eng_clk$TRELLIS_IO_IN") == "eng_clk"
    assert ecp5.clock_port("$glbnet$mul_clk$TRELLIS_IO_IN") == "mul_clk"
    assert ecp5.clock_port("sys_clk") == "sys_clk"
    assert ecp5.clock_port("<async>") == "<async>"


def _board_report(sys_mhz=30.1, eng_mhz=60.0, cross=None):
    s, e = "$glbnet$crg_clkout0", "$glbnet$eng_clk"
    return {"fmax": {s: sys_mhz, e: eng_mhz}, "constraint": {s: 25.0, e: 12.5}, "log": "/x/nextpnr.log",
            "cross": cross or {}}


def test_board_timing_check():
    from soc.board import check
    s, e = "posedge $glbnet$crg_clkout0", "posedge $glbnet$eng_clk"
    assert check(_board_report()) == []
    # a PLL clock under its constraint
    bad = check(_board_report(sys_mhz=24.0))
    assert len(bad) == 1 and "24.0 MHz < 25.0 MHz" in bad[0] and "/x/nextpnr.log" in bad[0]
    # between the PLL's clocks: one period of the faster (40 ns), two from or into the array
    ok = {f"{s} -> {e}": {"ns": 39.0, "from_cell": "cpu_x", "to_cell": "seq_y"},
          f"{e} -> {s}": {"ns": 70.0, "from_cell": "rf.0.3", "to_cell": "seq_y"},
          f"<async> -> {s}": {"ns": 500.0, "from_cell": "uart_rx", "to_cell": "x"},
          f"posedge ring0_3_clk -> {s}": {"ns": 90.0, "from_cell": "ring0_3_tog", "to_cell": "core0_meta"},
          f"posedge generate_ring3_32_0 -> {s}": {"ns": 90.0, "from_cell": "t", "to_cell": "core3_meta"}}
    assert check(_board_report(cross=ok)) == []
    over = {f"{s} -> {e}": {"ns": 41.0, "from_cell": "cpu_x", "to_cell": "seq_y"}}
    bad = check(_board_report(cross=over))
    assert len(bad) == 1 and "41.0 ns over its 40.0 ns" in bad[0] and "cpu_x -> seq_y" in bad[0]
    # a clock nextpnr does not constrain, and a report without clocks
    r = _board_report(cross={f"posedge $glbnet$other -> {e}": {"ns": 1.0, "from_cell": "a", "to_cell": "b"}})
    assert any("without a constraint" in b for b in check(r))
    assert check({"fmax": {}, "constraint": {}, "cross": {}, "log": "L"}) == ["nextpnr reported no clock (log L)"]


def test_unknown_board_is_refused():
    from soc.board import board
    with pytest.raises(SystemExit, match="unknown board 'nope'.*ulx3s"):
        board("nope")
    assert board("ulx3s").device.startswith("LFE5U-85F")


def test_ring_oscillator_stage_per_family():
    from trng.frontend_ro import RingOscillators
    from migen.fhdl.verilog import convert
    for family, prim in (("xc7", "LUT2"), ("ecp5", "LUT4")):
        r = RingOscillators(1, 1, 3, family=family)
        v = str(convert(r, {r.enable, r.bits, r.valid}))
        assert v.count(prim) >= 1
        # on the ECP5 each ring only clocks its toggle flop (no timed path starts in a loop)
        assert ("posedge ring0_0_clk" in v) == (family == "ecp5")
    with pytest.raises(ValueError, match="unknown FPGA family"):
        RingOscillators(1, 1, 3, family="ice40")


def test_board_hold_violations_outside_the_rings_fail():
    from soc.board import hold_violations
    ring = ("Warning: Hold/min time violation for clock 'posedge x':\nInfo:       type curr  total name\n"
            "Info:    routing  0.48  0.48 Net w_ring0_3_0 (77,38) -> (77,38)\nInfo:\n")
    other = ("Warning: Hold/min time violation for clock 'posedge x':\nInfo:       type curr  total name\n"
             "Info:    routing  0.10  0.10 Net cpu_pc_q (1,2) -> (1,3)\nInfo:\n")
    assert hold_violations("Info: start\n" + ring) == []
    bad = hold_violations(ring + other)
    assert len(bad) == 1 and "cpu_pc_q" in bad[0]
