"""Migen writes a Memory's initial contents to a side file read by `$readmemh("name", mem)`, a path
relative to wherever the simulator or synthesizer happens to run. Verilator and yosys both
accept the contents inline: replace each `$readmemh` with one assignment per word, so the
generated Verilog is a single self-contained text (and the Verilator cache key covers it)."""

from __future__ import annotations

import re


def verilog(conv) -> str:
    """The main source of a Migen `ConvOutput` with every memory initialisation inlined."""
    src = conv.main_source

    def inline(m: re.Match) -> str:
        name, mem = m.group(1), m.group(2)
        words = conv.data_files[name].split()
        decl = re.search(r"reg\s+(?:\[(\d+):0\]\s+)?" + mem + r"\s*\[", src)
        width = int(decl.group(1)) + 1 if decl.group(1) else 1
        return "\n".join(f"\t{mem}[{i}] = {width}'h{w};" for i, w in enumerate(words))

    out, n = re.subn(r'\$readmemh\("([^"]+)",\s*(\w+)\);', inline, src)
    assert n == len(conv.data_files), "every data file is a memory initialisation"
    return out
