"""trng.synth --check: the block's acceptance rules (the LUT budget of conditioner + health tests,
a polling reader's longest wait) pass a report within them and name each rule a report breaks."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "gateware"))

from trng.synth import LUT_BUDGET, XC7S50_LUTS, check  # noqa: E402


def report(luts, run, block=64):
    return {"synth_trng_luts": luts, "rtl_trng_max_invalid_run_no_selfmix": run, "rtl_trng_cycles_per_block": block}


def test_the_budget_is_five_percent_of_an_xc7s50():
    assert LUT_BUDGET == 1630 == XC7S50_LUTS * 5 // 100


def test_within_the_rules_passes():
    assert check(report(LUT_BUDGET, 64)) == []


def test_each_broken_rule_is_named():
    over = check(report(LUT_BUDGET + 1, 64))
    assert len(over) == 1 and f"{LUT_BUDGET + 1} LUTs, over the budget of {LUT_BUDGET}" in over[0]
    slow = check(report(100, 65))
    assert len(slow) == 1 and "waited 65 cycles" in slow[0] and "one block (64)" in slow[0]
    assert len(check(report(LUT_BUDGET + 1, 65))) == 2
