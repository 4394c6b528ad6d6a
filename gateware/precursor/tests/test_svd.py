"""The simulated Precursor's SVD against Precursor's, field by field (step sim:soc).

* test_svd_pages_equal_precursor: trng_kernel, trng_server and engine of the SoC's SVD
  (precursor.svd.soc_svd, from the elaborated SoC: no Verilator build) have every register and
  field of Precursor's SVD (PRECURSOR_SVD, utralib 0.1.15's precursor/soc-pvt.svd) at the same
  offset and bits; what they add sits at offsets Precursor leaves free, and is exactly the
  registers spec/trng.toml marks `ext`.
* test_compare_*: the comparator fails a moved field, a moved register, a missing field, an
  addition on used bits or offsets, and passes additions at free offsets.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import pytest

from precursor import soc as psoc
from precursor import svd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from trng import spec as trng_spec  # noqa: E402


def _precursor() -> dict:
    p = os.environ.get("PRECURSOR_SVD")
    if not p:
        pytest.fail("PRECURSOR_SVD is not set (xtask sets it to utralib's precursor/soc-pvt.svd)")
    return svd.load(Path(p).read_text())


@pytest.fixture(scope="module")
def ours() -> dict:
    return svd.load(psoc.svd_without_build())


def test_svd_pages_equal_precursor(ours):
    theirs = _precursor()
    rep = svd.compare(ours, theirs)
    for line in rep.additions + rep.resets:
        print(line)
    assert rep.ok, "the simulated Precursor's map differs from Precursor's:\n  " + "\n  ".join(rep.problems)
    n_theirs = sum(len(r["fields"]) for b in svd.COMPARED for r in theirs[b]["regs"].values())
    assert rep.compared == n_theirs and n_theirs > 100, (rep.compared, n_theirs)
    s = trng_spec.load()
    ext = {f"trng_{p.name}.{n} at {r.offset:#x}" for p in (s.server, s.kernel) for n, r in p.registers.items()
           if s.raw["regs"][p.name]["registers"][n].get("ext")}
    assert set(rep.additions) == ext, f"additions {sorted(rep.additions)}, spec's ext registers {sorted(ext)}"


def _moved(blocks, block, reg, fname, lsb):
    b = copy.deepcopy(blocks)
    _, width = b[block]["regs"][reg]["fields"][fname]
    b[block]["regs"][reg]["fields"][fname] = (lsb, width)
    return b


def test_compare_fails_a_moved_field():
    theirs = _precursor()
    assert svd.compare(theirs, theirs).ok
    # one field offset changed by one bit: STATUS.chacha_ready 22 -> 23
    rep = svd.compare(_moved(theirs, "trng_server", "STATUS", "chacha_ready", 23), theirs)
    assert not rep.ok and rep.problems == ["trng_server.STATUS.chacha_ready: bits [23:23], reference [22:22]"], rep.problems
    # the kernel page's STATUS as it was before the maps were aligned (avail at bit 0)
    rep = svd.compare(_moved(theirs, "trng_kernel", "STATUS", "avail", 0), theirs)
    assert rep.problems == ["trng_kernel.STATUS.avail: bits [0:0], reference [1:1]"], rep.problems
    # a width change
    b = copy.deepcopy(theirs)
    b["trng_server"]["regs"]["AV_NIST"]["fields"]["adaptive_cutoff"] = (7, 10)
    assert svd.compare(b, theirs).problems == ["trng_server.AV_NIST.adaptive_cutoff: bits [16:7], reference [15:7]"]


def test_compare_fails_a_moved_or_missing_register_and_additions_on_used_space():
    theirs = _precursor()
    b = copy.deepcopy(theirs)
    b["trng_server"]["regs"]["URANDOM"]["offset"] = 0x5C
    assert svd.compare(b, theirs).problems == ["trng_server.URANDOM: offset 0x5c, reference 0xdc"]
    b = copy.deepcopy(theirs)
    del b["engine"]["regs"]["MPRESUME"]
    assert svd.compare(b, theirs).problems == ["engine.MPRESUME: missing (reference offset 0x10)"]
    b = copy.deepcopy(theirs)
    del b["trng_kernel"]["regs"]["EV_PENDING"]["fields"]["error"]
    assert svd.compare(b, theirs).problems == ["trng_kernel.EV_PENDING.error: missing (reference bits [1:1])"]
    # an addition at a used offset, on used bits: refused; at a free offset or on free bits: allowed
    b = copy.deepcopy(theirs)
    b["trng_server"]["regs"]["MINE"] = {"offset": 0x5C, "reset": 0, "fields": {"x": (0, 1)}}
    b["trng_server"]["regs"]["STATUS"]["fields"]["mine"] = (21, 2)
    rep = svd.compare(b, theirs)
    assert rep.problems == ["trng_server.STATUS.mine: added on bits [22:21] the reference uses",
                            "trng_server.MINE: added at 0x5c, the reference's RO_RUN0_COUNT3"], rep.problems
    b = copy.deepcopy(theirs)
    b["trng_server"]["regs"]["MINE"] = {"offset": 0x100, "reset": 0, "fields": {"x": (0, 1)}}
    b["trng_kernel"]["regs"]["URANDOM_VALID"]["fields"]["last"] = (1, 1)
    rep = svd.compare(b, theirs)
    assert rep.ok and sorted(rep.additions) == ["trng_kernel.URANDOM_VALID.last [1:1]", "trng_server.MINE at 0x100"]
    # a base address
    b = copy.deepcopy(theirs)
    b["engine"]["base"] += 0x1000
    assert svd.compare(b, theirs).problems == ["engine: base 0xf0021000, reference 0xf0020000"]


def test_written_svd_round_trips():
    """The writer's XML reads back as the register tables it was given."""
    regs = [svd.Reg("B", 0x8, (svd.Field("y", 3, 5),), 0x18), svd.Reg("A", 0x0, (svd.Field("x", 0, 1), svd.Field("z", 4, 28)))]
    text = ('<?xml version="1.0" encoding="utf-8"?>\n<device><peripherals>\n'
            + svd.page_peripheral("blk", 0xF000_1000, regs, 7) + "\n</peripherals></device>")
    got = svd.load(text)
    assert got == {"blk": {"base": 0xF000_1000, "regs": {
        "A": {"offset": 0, "reset": 0, "fields": {"x": (0, 1), "z": (4, 28)}},
        "B": {"offset": 8, "reset": 0x18, "fields": {"y": (3, 5)}}}}}
