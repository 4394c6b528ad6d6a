"""trng.cutoffs: the gateware's health-test cutoffs come from trng-core's one formula (the
`trng_health_replay` example), and a replay output without its parameters is refused."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "gateware"))

from trng import spec as trng_spec  # noqa: E402
from trng.cutoffs import FAMILIES, health_cutoffs, parse_params  # noqa: E402

S = trng_spec.load()


def test_every_family_has_cutoffs_within_its_window():
    cut = health_cutoffs()
    assert set(cut) == set(FAMILIES)
    for fam, (rct, apt) in cut.items():
        # an RCT cutoff of 1 or less would fail every sample; the APT counts within its window
        assert 2 <= rct and 1 <= apt <= S.health[fam]["apt_window"], (fam, rct, apt)


def test_params_line_is_parsed_and_its_absence_refused():
    assert parse_params("health replay-av\nparams rct_cutoff=21 apt_cutoff=410 apt_window=512\n") == {
        "rct_cutoff": 21, "apt_cutoff": 410, "apt_window": 512}
    with pytest.raises(ValueError, match="no 'params' line"):
        parse_params("fail 3 rct\n")
