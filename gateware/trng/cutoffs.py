"""The SP 800-90B health-test cutoffs of each source family, from their one formula.

The formula lives in Rust (libs/trng-core/src/cutoff.rs: RCT 1 + ceil(alpha / H), APT
1 + CRITBINOM(W, 2^-H, 1 - 2^-alpha)); trng-core's build script evaluates it for spec/trng.toml's
parameters and compiles the results in as `RCT_CUTOFF` / `APT_CUTOFF`. The example
`trng_health_replay` prints the parameters the software health tests run with (`params
rct_cutoff=N apt_cutoff=M ...`). The gateware, its tests and the simulated Precursor take the
cutoffs from there and never compute one themselves:

    from trng.cutoffs import health_cutoffs
    rct, apt = health_cutoffs()["av"]

$TRNG_HEALTH_REPLAY names a built `trng_health_replay` (xtask passes it); otherwise it is built
with cargo (release, the example of trng-core) into $CARGO_TARGET_DIR or target/.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ("av", "ro")


@functools.cache
def replay_exe() -> str:
    """The path of trng-core's `trng_health_replay` example (built once when not given)."""
    exe = os.environ.get("TRNG_HEALTH_REPLAY")
    if exe:
        return exe
    subprocess.run(["cargo", "build", "-q", "--release", "-p", "trng-core", "--example", "trng_health_replay"],
                   cwd=ROOT, check=True, timeout=900)
    target = os.environ.get("CARGO_TARGET_DIR") or str(ROOT / "target")
    return str(Path(target) / "release" / "examples" / "trng_health_replay")


def parse_params(text: str) -> dict:
    """The `params k=v ...` line of the replay's output as {k: int}; an error if there is none."""
    for line in text.splitlines():
        p = line.split()
        if p and p[0] == "params":
            return {k: int(v) for k, v in (t.split("=", 1) for t in p[1:])}
    raise ValueError("no 'params' line in the health replay's output")


@functools.cache
def health_cutoffs() -> dict:
    """{"av": (rct_cutoff, apt_cutoff), "ro": (...)}: what trng-core's health tests use."""
    out = {}
    for fam in FAMILIES:
        r = subprocess.run([replay_exe(), fam], input="", capture_output=True, text=True, timeout=120, check=True)
        kv = parse_params(r.stdout)
        out[fam] = (kv["rct_cutoff"], kv["apt_cutoff"])
    return out
