"""Reader of the TRNG vector files written by libs/trng-core (`trng_core::vectors`, format in
docs/trng-gateware.md). The software is the reference model; these cases are what the RTL must
reproduce. Malformed files raise ValueError naming the line."""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER = "trng-vectors 1"


@dataclass
class CondCase:
    name: str
    reseed_interval: int = 0
    selfmix_interval: int = 0
    selfmix_enable: bool = False
    raw: list = field(default_factory=list)
    seeds: dict = field(default_factory=dict)   # raw index -> [seed words]
    out: list = field(default_factory=list)


@dataclass
class HealthCase:
    name: str
    symbol_bits: int = 0
    rct_cutoff: int = 0
    apt_cutoff: int = 0
    apt_window: int = 0
    startup: int = 0
    samples: list = field(default_factory=list)
    fails: list = field(default_factory=list)   # [(index, "rct"|"apt")]
    startup_done: int | None = None


def _kv(n, items, keys):
    d = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or k not in keys:
            raise ValueError(f"line {n}: unexpected {it!r}")
        d[k] = int(v)
    if set(d) != set(keys):
        raise ValueError(f"line {n}: expected {', '.join(keys)}")
    return d


def parse(text: str) -> list:
    lines = [(i + 1, l.strip()) for i, l in enumerate(text.splitlines())]
    lines = [(n, l) for n, l in lines if l and not l.startswith("#")]
    if not lines or lines[0][1] != HEADER:
        raise ValueError(f"expected header {HEADER!r}")
    cases, cur = [], None
    for n, line in lines[1:]:
        tag, *rest = line.split()
        if tag == "case":
            if cur is not None or len(rest) != 2:
                raise ValueError(f"line {n}: bad case line")
            cur = {"conditioner": CondCase, "health": HealthCase}[rest[0]](rest[1])
        elif cur is None:
            raise ValueError(f"line {n}: {tag!r} outside a case")
        elif tag == "end":
            cases.append(cur)
            cur = None
        elif tag == "config":
            d = _kv(n, rest, ("reseed_interval", "selfmix_interval", "selfmix_enable"))
            cur.reseed_interval, cur.selfmix_interval, cur.selfmix_enable = d["reseed_interval"], d["selfmix_interval"], bool(d["selfmix_enable"])
        elif tag == "raw":
            cur.raw += [int(t, 16) for t in rest]
        elif tag == "seed":
            cur.seeds.setdefault(int(rest[0]), []).extend(int(t, 16) for t in rest[1:])
        elif tag == "out":
            cur.out += [int(t, 16) for t in rest]
        elif tag == "params":
            d = _kv(n, rest, ("symbol_bits", "rct_cutoff", "apt_cutoff", "apt_window", "startup"))
            for k, v in d.items():
                setattr(cur, k, v)
        elif tag == "samples":
            cur.samples += [int(t, 16) for t in rest]
        elif tag == "fail":
            cur.fails.append((int(rest[0]), rest[1]))
        elif tag == "startup_done":
            v = int(rest[0])
            cur.startup_done = None if v < 0 else v
        else:
            raise ValueError(f"line {n}: unknown line {tag!r}")
    if cur is not None:
        raise ValueError("the last case has no `end`")
    return cases
