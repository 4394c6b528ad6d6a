"""The TRNG in the benchmark SoC (gateware/trng/soc.py, added to gateware/soc's BenchSoC): the
region map and interrupt numbers LiteX ends up with (the SoC's csr.csv) are spec/trng.toml's,
the pages do not overlap anything else, and the whole register map fits its page. Run by the
step trng:soc on the SoC it built (SOC_BUILD_DIR); without it, a fresh generation (no
Verilator)."""

import csv
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from trng import spec as trng_spec  # noqa: E402
from trng.soc import PAGE, regions  # noqa: E402

S = trng_spec.load()


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    d = os.environ.get("SOC_BUILD_DIR")
    if d:
        return Path(d)
    from soc import soc as soc_mod
    out = tmp_path_factory.mktemp("soc")
    soc_mod.build(out, ["v1", "v2"], compile_sim=False)
    return out


def _csv(build_dir):
    with open(build_dir / "csr.csv") as f:
        return [r for r in csv.reader(f) if r and not r[0].startswith("#")]


def test_trng_pages_are_the_spec_addresses(build_dir):
    got = {r[1]: (int(r[2], 0), int(r[3], 0), r[4]) for r in _csv(build_dir) if r[0] == "memory_region"}
    assert got["trng_server"] == (S.server.base, PAGE, "io")
    assert got["trng_kernel"] == (S.kernel.base, PAGE, "io")
    assert regions() == {k: got[k][:2] for k in ("trng_server", "trng_kernel")}
    for name, (o, s, _) in got.items():
        for t in ("trng_server", "trng_kernel"):
            if name != t:
                to, ts, _ = got[t]
                assert o + s <= to or to + ts <= o, f"{name} overlaps {t}"


def test_trng_interrupts_are_the_spec_lines(build_dir):
    consts = {r[1]: r[2] for r in _csv(build_dir) if r[0] == "constant"}
    assert int(consts["trng_server_interrupt"]) == S.server.irq
    assert int(consts["trng_kernel_interrupt"]) == S.kernel.irq
