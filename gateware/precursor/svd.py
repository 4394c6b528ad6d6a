"""The simulated Precursor's register map as an SVD, and the field-by-field comparison with
Precursor's own SVD (utralib 0.1.15 `precursor/soc-pvt.svd`, which LiteX wrote for Precursor's
build).

* `soc_svd(soc)`: LiteX's SVD of the SoC (export.get_csr_svd: every block made of LiteX CSRs),
  plus one peripheral, in the same format, for every page that is not made of LiteX CSRs
  (`PrecursorSim.csr_pages`: the TRNG's two pages and the engine's), described by the register
  table its block registered with the page (`Reg` below: from the block's spec file, reset
  values from the gateware's own storage). The SoC build writes it next to csr.csv (`soc.svd`);
  `python -m precursor.svd write OUT` writes it without a Verilator build.
* `load(text)` / `compare(ours, theirs, blocks)`: for each block, every register of Precursor's
  must be in ours with the same name and offset, and every one of its fields with the same
  name, lsb and width; a register of ours that Precursor lacks is an addition, allowed only at an
  offset Precursor's block leaves free; a field of ours that Precursor's register lacks likewise
  only on bits none of its fields use. Reset values are reported, not compared (the simulated
  blocks start some features disabled that Precursor's hardware starts enabled: the SoC's start-up
  writes, blocks.add_trng).

    python -m precursor.svd write OUT.svd
    python -m precursor.svd compare OURS.svd PRECURSOR.svd [BLOCK ...]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

# the blocks whose registers the step compares field by field
COMPARED = ("trng_kernel", "trng_server", "engine")


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    description: str = ""


@dataclass(frozen=True)
class Reg:
    name: str
    offset: int
    fields: tuple
    reset: int = 0
    description: str = ""


# ---------------------------------------------------------------------------------------------
# writing


def _cdata(s: str) -> str:
    return "<![CDATA[{}]]>".format(s.replace("]]>", "]] >"))


def page_peripheral(name: str, base: int, regs: list, irq: int | None) -> str:
    """One <peripheral> in the layout LiteX's get_csr_svd writes."""
    out = [
        "        <peripheral>",
        f"            <name>{name.upper()}</name>",
        f"            <baseAddress>0x{base:08X}</baseAddress>",
        f"            <groupName>{name.upper()}</groupName>",
        "            <registers>",
    ]
    for r in sorted(regs, key=lambda r: r.offset):
        out += ["                <register>", f"                    <name>{r.name.upper()}</name>"]
        if r.description:
            out.append(f"                    <description>{_cdata(r.description)}</description>")
        out += [
            f"                    <addressOffset>0x{r.offset:04x}</addressOffset>",
            f"                    <resetValue>0x{r.reset:02x}</resetValue>",
            "                    <size>32</size>",
            "                    <fields>",
        ]
        for f in sorted(r.fields, key=lambda f: f.lsb):
            out += [
                "                        <field>",
                f"                            <name>{f.name}</name>",
                f"                            <msb>{f.lsb + f.width - 1}</msb>",
                f"                            <bitRange>[{f.lsb + f.width - 1}:{f.lsb}]</bitRange>",
                f"                            <lsb>{f.lsb}</lsb>",
            ]
            if f.description:
                out.append(f"                            <description>{_cdata(f.description)}</description>")
            out.append("                        </field>")
        out += ["                    </fields>", "                </register>"]
    size = max((r.offset for r in regs), default=-4) + 4
    out += [
        "            </registers>",
        "            <addressBlock>",
        "                <offset>0</offset>",
        f"                <size>0x{size:x}</size>",
        "                <usage>registers</usage>",
        "            </addressBlock>",
    ]
    if irq is not None:
        out += ["            <interrupt>", f"                <name>{name}</name>", f"                <value>{irq}</value>", "            </interrupt>"]
    out.append("        </peripheral>")
    return "\n".join(out)


def soc_svd(soc) -> str:
    """The SVD of a finalized PrecursorSim: LiteX's for its CSR blocks, plus its pages."""
    from litex.soc.integration import export

    from . import map as pmap

    text = export.get_csr_svd(soc, vendor="litex", name="soc", description="Simulated Precursor (gateware/precursor)")
    pages = [
        page_peripheral(n, pmap.CSR_BASE + loc * pmap.CSR_PAGING, soc.csr_page_regs[n], pmap.IRQS.get(n))
        for n, (loc, _) in sorted(soc.csr_pages.items())
    ]
    at = text.index("    </peripherals>")
    text = text[:at] + "\n".join(pages) + "\n" + text[at:]
    ET.fromstring(text.encode())   # well-formed
    return text


# ---------------------------------------------------------------------------------------------
# reading and comparing


def load(text: str) -> dict:
    """name (lower case) -> {"base": int, "regs": {NAME: {"offset", "reset", "fields": {name: (lsb, width)}}}}"""
    root = ET.fromstring(text.encode() if isinstance(text, str) else text)
    blocks = {}
    for p in root.iter("peripheral"):
        regs = {}
        for r in p.iter("register"):
            fields = {}
            for f in r.iter("field"):
                lsb, msb = int(f.findtext("lsb")), int(f.findtext("msb"))
                fields[f.findtext("name")] = (lsb, msb - lsb + 1)
            regs[r.findtext("name").upper()] = {
                "offset": int(r.findtext("addressOffset"), 0),
                "reset": int(r.findtext("resetValue") or "0", 0),
                "fields": fields,
            }
        blocks[p.findtext("name").lower()] = {"base": int(p.findtext("baseAddress"), 0), "regs": regs}
    return blocks


@dataclass
class Report:
    problems: list = field(default_factory=list)    # differences that fail the comparison
    additions: list = field(default_factory=list)   # registers / fields at free offsets / bits
    resets: list = field(default_factory=list)      # reset values that differ (reported only)
    compared: int = 0                               # fields compared

    @property
    def ok(self) -> bool:
        return not self.problems


def _bits(lsb: int, width: int) -> int:
    return ((1 << width) - 1) << lsb


def compare(ours: dict, theirs: dict, blocks=COMPARED) -> Report:
    rep = Report()
    for b in blocks:
        if b not in theirs:
            rep.problems.append(f"{b}: not a block of the reference SVD")
            continue
        if b not in ours:
            rep.problems.append(f"{b}: missing from our SVD")
            continue
        o, t = ours[b], theirs[b]
        if o["base"] != t["base"]:
            rep.problems.append(f"{b}: base {o['base']:#x}, reference {t['base']:#x}")
        used = {r["offset"]: n for n, r in t["regs"].items()}
        for name, tr in t["regs"].items():
            orr = o["regs"].get(name)
            if orr is None:
                rep.problems.append(f"{b}.{name}: missing (reference offset {tr['offset']:#x})")
                continue
            if orr["offset"] != tr["offset"]:
                rep.problems.append(f"{b}.{name}: offset {orr['offset']:#x}, reference {tr['offset']:#x}")
            taken = 0
            for fname, (lsb, width) in tr["fields"].items():
                taken |= _bits(lsb, width)
                got = orr["fields"].get(fname)
                rep.compared += 1
                if got is None:
                    rep.problems.append(f"{b}.{name}.{fname}: missing (reference bits [{lsb + width - 1}:{lsb}])")
                elif got != (lsb, width):
                    rep.problems.append(
                        f"{b}.{name}.{fname}: bits [{got[0] + got[1] - 1}:{got[0]}], reference [{lsb + width - 1}:{lsb}]")
            for fname, (lsb, width) in orr["fields"].items():
                if fname in tr["fields"]:
                    continue
                if _bits(lsb, width) & taken:
                    rep.problems.append(f"{b}.{name}.{fname}: added on bits [{lsb + width - 1}:{lsb}] the reference uses")
                else:
                    rep.additions.append(f"{b}.{name}.{fname} [{lsb + width - 1}:{lsb}]")
            if orr["reset"] != tr["reset"]:
                rep.resets.append(f"{b}.{name}: reset {orr['reset']:#x}, reference {tr['reset']:#x}")
        for name, orr in o["regs"].items():
            if name in t["regs"]:
                continue
            if orr["offset"] in used:
                rep.problems.append(f"{b}.{name}: added at {orr['offset']:#x}, the reference's {used[orr['offset']]}")
            else:
                rep.additions.append(f"{b}.{name} at {orr['offset']:#x}")
    return rep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="the simulated Precursor's SVD (no Verilator build)")
    w.add_argument("out", type=Path)
    c = sub.add_parser("compare", help="compare two SVDs block by block")
    c.add_argument("ours", type=Path)
    c.add_argument("theirs", type=Path)
    c.add_argument("blocks", nargs="*", default=list(COMPARED))
    a = ap.parse_args(argv)
    if a.cmd == "write":
        from . import soc as psoc
        a.out.write_text(psoc.svd_without_build())
        print(a.out)
        return 0
    rep = compare(load(a.ours.read_text()), load(a.theirs.read_text()), a.blocks)
    for line in rep.additions:
        print(f"addition: {line}")
    for line in rep.resets:
        print(f"reset value: {line}")
    for line in rep.problems:
        print(f"DIFFERENT: {line}")
    print(f"{rep.compared} fields compared, {len(rep.problems)} differences, {len(rep.additions)} additions")
    return 0 if rep.ok else 1


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        __package__ = "precursor"
    sys.exit(main())
