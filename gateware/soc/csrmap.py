"""The address map LiteX wrote for a built SoC (its csr.csv), read once for every consumer:
memory regions, constants, the build directory tests check, and the no-overlap rule."""

from __future__ import annotations

import csv
import os
from pathlib import Path


def rows(build_dir: Path) -> list[list[str]]:
    """csr.csv rows without comments."""
    with open(Path(build_dir) / "csr.csv") as f:
        return [r for r in csv.reader(f) if r and not r[0].startswith("#")]


def regions(build_dir: Path) -> dict[str, tuple[int, int, str]]:
    """memory_region rows: name -> (origin, length, type)."""
    return {r[1]: (int(r[2], 0), int(r[3], 0), r[4]) for r in rows(build_dir) if r[0] == "memory_region"}


def constants(build_dir: Path) -> dict[str, str]:
    """constant rows: name -> value (as written)."""
    return {r[1]: r[2] for r in rows(build_dir) if r[0] == "constant"}


def overlaps(got: dict[str, tuple[int, int, str]], names) -> list[str]:
    """Every region that overlaps one of `names` (each "a overlaps b")."""
    out = []
    for name, (o, s, _) in got.items():
        for t in names:
            if name != t:
                to, ts, _ = got[t]
                if not (o + s <= to or to + ts <= o):
                    out.append(f"{name} overlaps {t}")
    return out


def build_dir(tmp_path_factory) -> Path:
    """For tests: the SoC build xtask made (SOC_BUILD_DIR), else a fresh generation of the
    benchmark SoC with both ISAs (no Verilator)."""
    d = os.environ.get("SOC_BUILD_DIR")
    if d:
        return Path(d)
    from soc import soc as soc_mod

    out = tmp_path_factory.mktemp("soc")
    soc_mod.build(out, ["v1", "v2"], compile_sim=False)
    return out
