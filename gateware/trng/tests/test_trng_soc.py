"""The TRNG in the benchmark SoC (gateware/trng/soc.py, added to gateware/soc's BenchSoC): the
region map and interrupt numbers LiteX ends up with (the SoC's csr.csv) are spec/trng.toml's,
the pages do not overlap anything else, and the whole register map fits its page. Run by the
step trng:soc on the SoC it built (SOC_BUILD_DIR); without it, a fresh generation (no
Verilator)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from trng import spec as trng_spec  # noqa: E402
from soc import csrmap  # noqa: E402
from trng.soc import PAGE, regions  # noqa: E402

S = trng_spec.load()


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return csrmap.build_dir(tmp_path_factory)


def test_trng_pages_are_the_spec_addresses(build_dir):
    got = csrmap.regions(build_dir)
    assert got["trng_server"] == (S.server.base, PAGE, "io")
    assert got["trng_kernel"] == (S.kernel.base, PAGE, "io")
    assert regions() == {k: got[k][:2] for k in ("trng_server", "trng_kernel")}
    assert csrmap.overlaps(got, ("trng_server", "trng_kernel")) == []


def test_trng_interrupts_are_the_spec_lines(build_dir):
    consts = csrmap.constants(build_dir)
    assert int(consts["trng_server_interrupt"]) == S.server.irq
    assert int(consts["trng_kernel_interrupt"]) == S.kernel.irq
