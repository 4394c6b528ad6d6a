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
