"""Run a program on the simulated Precursor (soc.py) and report what its UARTs printed.

    python -m precursor.run --rom rom.bin [--ram ram.bin] [--timeout 60] [--expect REGEX]...
                            [--until REGEX] [--quiet] [--json FILE] [--bridge-port PORT]

* `--rom`: loaded at 0x0 (the reset vector; at most 64 KiB). `--ram`: loaded at 0x4000_0000
  (at most 16 MiB). Both are written into the simulator's memory-initialisation files of a
  fresh run directory, so one cached build runs any program.
* Output: every line of the kernel UART (`uart`, 0xF000_5000) and the console UART (`console`,
  0xF000_7000, xous-log) is printed as `[<cycle> uart] text` / `[<cycle> console] text` while
  the simulation runs (the cycle at which the line's first byte was written).
* End: the program writes simctl FINISH (code), the watchdog bites, the software powers the
  SoC off (susres POWERDOWN: end reason `powerdown`), a line matches `--until`, the kernel
  reports a crash on its UART (a line starting `PROGRAM HALT` or `PANIC in PID`: end reason
  `crash`, CRASH_GRACE_CYCLES simulated cycles later, so that the register dump, memory map
  and whatever follows are in the log; no run passes after one, and a crashed system would
  otherwise spin until `--timeout`), or the wall-clock `--timeout` expires (the simulator is
  killed; its process group only).
* Verdict (exit status): 0 only if the run ended by FINISH with code 0 or by `--until` (with
  `--end powerdown`: only if it ended by a power-down), every
  `--expect` pattern matched some line, and no line matched `--fail` (default: `VERDICT \\S+ FAIL`).
  `--json` writes a summary: end reason, code, cycles, wall seconds, the cycle and wall time
  at which each `--expect` first matched.
* `--profile FILE` (`--profile-period P`, default 256 cycles): sample the CPU every P cycles
  (PC of the instruction in write-back, privilege, satp ASID = Xous PID) and write the samples
  to FILE, one per line: `<cycle> <pc hex> <priv> <asid>` (`cargo xtask sim-profile` reads them).
* `--memlcd FILE`: copy the memory LCD's panel log to FILE after the run: every line the
  memlcd block sent, `<cycle> <line> <88 hex digits>` (`python -m precursor.memlcd` turns it
  into a PNG: the screen).
* `--keys FILE`: characters typed on the debug UART: the simulator reads FILE as it grows (append
  to it while the run goes on) and hands each byte to the keyboard block (one byte per 115200-baud
  character time, held while the block's FIFO is full). `--type-after REGEX TEXT` (repeatable, in
  order): once an output line matches REGEX, TEXT is typed (appended to the keys file; a run
  directory file when `--keys` is not given); the next pair waits for a later line.
  `--keys-log FILE`: copy the keyboard's log (every byte it took, `<cycle> <hex>`) to FILE.
* `--bridge-port PORT`: serve the SoC's UART Wishbone bridge (tester.py: the TRNG tester's host
  bridge, a bus master) on TCP PORT while the simulation runs; without it nothing listens.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = "precursor"

from . import map as pmap
from . import soc
from .peripherals import POWERDOWN_CODE
from . import tester

DEFAULT_FAIL = r"VERDICT \S+ FAIL"
# Kernel UART lines after which nothing can pass (a process halted on a CPU exception, a kernel
# panic): the run ends CRASH_GRACE_CYCLES later. Narrow on purpose: other failure lines (a FAIL
# verdict, an ERROR) do not end a run, whose program may still finish with its own code.
CRASH_STOP = re.compile(r"^(PROGRAM HALT|PANIC in PID)")
CRASH_GRACE_CYCLES = 8_000_000


def words_hex(data: bytes, limit: int, what: str) -> str:
    """Binary -> $readmemh text (one little-endian 32-bit word per line)."""
    if len(data) > limit:
        raise ValueError(f"{what} is {len(data)} bytes, more than the {limit} bytes of its memory")
    data = data + b"\0" * (-len(data) % 4)
    mv = memoryview(data).cast("I")
    return "\n".join(f"{w:08x}" for w in mv) + "\n"


@dataclass
class Line:
    source: str
    cycle: int
    text: str
    wall: float


@dataclass
class Result:
    reason: str = "timeout"          # finish | powerdown | until | crash | timeout | exited
    code: int | None = None
    cycles: int | None = None
    wall_s: float = 0.0
    lines: list = field(default_factory=list)
    matched: dict = field(default_factory=dict)   # pattern -> Line
    failed: list = field(default_factory=list)    # lines matching a fail pattern
    progress: str = ""                            # last progress record (cycles, pc, priv, asid)

    def ok(self, expect, end: str | None = None) -> bool:
        """`end`: the one end reason that passes (e.g. "powerdown"); default: FINISH with code
        0 or `--until`."""
        if end is None:
            ended = (self.reason == "finish" and self.code == 0) or self.reason == "until"
        else:
            ended = self.reason == end
        return ended and not self.failed and all(p in self.matched for p in expect)

    def summary(self, expect, end: str | None = None) -> dict:
        return {
            "ok": self.ok(expect, end),
            "reason": self.reason,
            "code": self.code,
            "cycles": self.cycles,
            "wall_s": round(self.wall_s, 3),
            "expect": {p: ({"cycle": l.cycle, "wall_s": round(l.wall, 3), "line": l.text} if (l := self.matched.get(p)) else None) for p in expect},
            "failed": [f"[{l.cycle} {l.source}] {l.text}" for l in self.failed],
            "progress": self.progress,
        }


class _Tail:
    def __init__(self, path: Path, source: str):
        self.path, self.source, self.pos, self.buf = path, source, 0, b""

    def poll(self) -> list[tuple[str, int, str]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except FileNotFoundError:
            return []
        self.pos += len(chunk)
        self.buf += chunk
        out = []
        while b"\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n", 1)
            out.append(self._parse(raw))
        return out

    def flush(self) -> list:
        rest = self.poll()
        if self.buf:
            rest.append(self._parse(self.buf))
            self.buf = b""
        return rest

    def _parse(self, raw: bytes):
        text = raw.decode("utf-8", "replace").rstrip("\r")
        cyc, _, body = text.partition(" ")
        try:
            # "\n\r" line ends leave the \r at the start of the next line
            return (self.source, int(cyc), body.lstrip("\r"))
        except ValueError:
            return (self.source, -1, text)


def run(rom: bytes, ram: bytes | None = None, timeout: float = 60.0, expect=(), until: str | None = None,
        fail=(DEFAULT_FAIL,), echo: bool = True, gw: Path | None = None, keep: Path | None = None,
        on_line=None, bridge_port: int | None = None, profile: tuple[Path, int] | None = None,
        memlcd: Path | None = None, keys: Path | None = None, type_after=(), keys_log: Path | None = None) -> Result:
    rom_hex = words_hex(rom, pmap.ROM_SIZE, "the ROM image")
    ram_hex = words_hex(ram or b"", pmap.SRAM_EXT_SIZE, "the RAM image")
    gw = gw or soc.build()
    runs = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="precursor-run-"))
    try:
        return _run(runs, gw, rom_hex, ram_hex, timeout, expect, until, fail, echo, on_line, bridge_port, profile, memlcd,
                    keys, list(type_after), keys_log)
    finally:
        if not keep:
            shutil.rmtree(runs, ignore_errors=True)


def memory_init_files(gw: Path) -> list[str]:
    """Every file the simulator's Verilog reads with $readmemh/$readmemb (relative to its cwd)."""
    return sorted(set(re.findall(r'\$readmem[hb]\("([^"]+)"', (gw / "sim.v").read_text())))


def link_build_inits(gw: Path, runs: Path) -> None:
    """Give the run directory every memory-initialisation file of the build that the run does not
    write itself (ROM and RAM are the run's own): e.g. the engine's register file, whose
    read-only rows hold the constant ROM. The simulator runs in `runs` and Verilator's
    $readmemh leaves a memory zero when its file is missing there, so a missing one is an error."""
    own = {soc.ROM_INIT, soc.RAM_INIT}
    for name in memory_init_files(gw):
        if name in own:
            continue
        src = gw / name
        if not src.is_file():
            raise SystemExit(f"the SoC build {gw} reads {name} with $readmemh but has no such file")
        dst = runs / name
        if dst.is_symlink() or dst.exists():
            dst.unlink()
        dst.symlink_to(src)


def _run(runs, gw, rom_hex, ram_hex, timeout, expect, until, fail, echo, on_line, bridge_port=None, profile=None, memlcd=None,
         keys=None, type_after=(), keys_log=None) -> Result:
    runs.mkdir(parents=True, exist_ok=True)
    for name in ("modules", "sim_config.js"):
        link = runs / name
        if link.is_symlink() or link.exists():
            link.unlink()
    (runs / "modules").symlink_to(gw / "modules")
    # the run's simulator modules: the build's, with the bridge on this run's port (or none)
    (runs / "sim_config.js").write_text(tester.sim_config(gw / "sim_config.js", bridge_port))
    (runs / soc.ROM_INIT).write_text(rom_hex)
    (runs / soc.RAM_INIT).write_text(ram_hex)
    link_build_inits(gw, runs)
    for f in (soc.UART_LOG, soc.CONSOLE_LOG, soc.FINISH, soc.PROGRESS, soc.PROFILE, soc.MEMLCD_LOG, soc.KEYS_LOG):
        (runs / f).unlink(missing_ok=True)
    to_type = [(re.compile(rx), text) for rx, text in type_after]
    if keys is None and to_type:
        keys = runs / "keys.in"
        keys.write_bytes(b"")

    expect_re = [(p, re.compile(p)) for p in expect]
    fail_re = [re.compile(p) for p in fail]
    until_re = re.compile(until) if until else None
    tails = [_Tail(runs / soc.UART_LOG, "uart"), _Tail(runs / soc.CONSOLE_LOG, "console")]
    res = Result()
    crash_at = None                  # the cycle of the first crash line
    t0 = time.monotonic()
    with open(runs / "sim.out", "wb") as simout:
        # restore_signals=False: the simulator inherits Python's SIGPIPE = ignore, so the bridge
        # module's write to a client that has gone away fails with EPIPE instead of killing the
        # simulation (litex_sim's serial2tcp writes to its last client's socket unchecked)
        argv = [str(gw / "obj_dir" / "Vsim")]
        if profile:
            argv.append(f"+profile={profile[1]}")
        if keys is not None:
            argv.append(f"+keys={Path(keys).resolve()}")
        proc = subprocess.Popen(argv, cwd=runs, stdout=simout, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent,
                                restore_signals=False)

        def handle(entries) -> bool:
            nonlocal crash_at
            for source, cyc, text in entries:
                line = Line(source, cyc, text, time.monotonic() - t0)
                res.lines.append(line)
                if echo:
                    print(f"[{cyc:>11} {source:>7}] {text}", flush=True)
                if on_line:
                    on_line(line)
                for p, rx in expect_re:
                    if p not in res.matched and rx.search(text):
                        res.matched[p] = line
                if any(rx.search(text) for rx in fail_re):
                    res.failed.append(line)
                if to_type and to_type[0][0].search(text):
                    with open(keys, "ab") as kf:
                        kf.write(to_type.pop(0)[1].encode())
                if until_re and until_re.search(text):
                    res.reason = "until"
                    return True
                if crash_at is None and source == "uart" and CRASH_STOP.search(text):
                    crash_at = max(cyc, 0)
            return False

        def crash_over() -> bool:
            """A crash line was seen and the simulation has run CRASH_GRACE_CYCLES past it
            (the last line's cycle, or the progress record the simulator rewrites)."""
            if crash_at is None:
                return False
            now = max((l.cycle for l in res.lines[-1:]), default=0)
            try:
                now = max(now, int((runs / soc.PROGRESS).read_text().split(" ")[0]))
            except (OSError, ValueError, IndexError):
                pass
            return now >= crash_at + CRASH_GRACE_CYCLES

        try:
            stop = False
            while not stop:
                stop = any(handle(t.poll()) for t in tails)
                if stop:
                    break
                if crash_over():
                    res.reason = "crash"
                    break
                if proc.poll() is not None:
                    res.reason = "exited"
                    break
                if time.monotonic() - t0 > timeout:
                    res.reason = "timeout"
                    break
                time.sleep(0.05)
        finally:
            res.wall_s = time.monotonic() - t0
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if res.reason != "until":
            for t in tails:
                handle(t.flush())
    if keys_log:
        klog = runs / soc.KEYS_LOG
        if klog.is_file():
            shutil.copyfile(klog, keys_log)
    if profile:
        samples = runs / soc.PROFILE
        if not samples.is_file():
            raise RuntimeError(f"the simulator wrote no profile ({samples}): is the SoC build older than the profiler?")
        shutil.copyfile(samples, profile[0])
    if memlcd:
        panel = runs / soc.MEMLCD_LOG
        if panel.is_file():
            shutil.copyfile(panel, memlcd)
        else:
            # a simulator that never started writes none: the run's own verdict says why
            Path(memlcd).unlink(missing_ok=True)
            print(f"precursor.run: the simulator wrote no memory LCD log ({panel})", file=sys.stderr)
    fin = runs / soc.FINISH
    if fin.is_file():
        code, cycles = fin.read_text().split()
        res.code, res.cycles = int(code), int(cycles)
        if res.reason == "exited":
            res.reason = "powerdown" if res.code == POWERDOWN_CODE else "finish"
    else:
        prog = runs / soc.PROGRESS
        seen = [l.cycle for l in res.lines]
        text = prog.read_text().strip() if prog.is_file() else ""
        if text.split(" ")[0].isdigit():
            seen.append(int(text.split(" ")[0]))
            res.progress = text
        res.cycles = max(seen) if seen else None
    return res


def _die_with_parent():
    """In the simulator's process: SIGKILL it when the runner dies, however it dies (Linux
    PR_SET_PDEATHSIG), so no simulator outlives its runner."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _exit_on_signal(signum, _frame):
    # SIGTERM/SIGHUP (e.g. xtask stopping its process groups): leave through the `finally`
    # clauses, which kill the simulator (it runs in its own session)
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rom", type=Path, required=True, help="ROM image (binary, at 0x0)")
    ap.add_argument("--ram", type=Path, help="RAM image (binary, at 0x4000_0000)")
    ap.add_argument("--timeout", type=float, default=60.0, help="wall-clock limit in seconds (default 60)")
    ap.add_argument("--expect", action="append", default=[], help="regex some output line must match (repeatable)")
    ap.add_argument("--fail", action="append", default=None, help=f"regex no line may match (default {DEFAULT_FAIL!r})")
    ap.add_argument("--until", help="stop the simulation when a line matches this regex")
    ap.add_argument("--quiet", action="store_true", help="do not echo the UART lines")
    ap.add_argument("--json", type=Path, help="write the run summary here")
    ap.add_argument("--keep", type=Path, help="run in this directory (kept: logs, sim.out)")
    ap.add_argument("--end", choices=["powerdown"], help="pass only if the run ends this way (powerdown: the software "
                    "powered the SoC off through susres POWERDOWN)")
    ap.add_argument("--bridge-port", type=int, metavar="PORT",
                    help="serve the UART Wishbone bridge (the TRNG tester's host bridge) on this TCP port")
    ap.add_argument("--profile", type=Path, metavar="FILE", help="write PC samples of the whole run to FILE")
    ap.add_argument("--profile-period", type=int, default=256, metavar="CYCLES",
                    help="cycles between two PC samples with --profile (default 256)")
    ap.add_argument("--memlcd", type=Path, metavar="FILE", help="write the memory LCD's panel log (every line sent) to FILE")
    ap.add_argument("--keys", type=Path, metavar="FILE", help="characters typed on the debug UART: read from FILE as it grows")
    ap.add_argument("--type-after", nargs=2, action="append", default=[], metavar=("REGEX", "TEXT"),
                    help="once a line matches REGEX, type TEXT (repeatable, in order)")
    ap.add_argument("--keys-log", type=Path, metavar="FILE", help="write the keyboard's log (every byte it took) to FILE")
    a = ap.parse_args(argv)
    for what, pats in (("--expect", a.expect), ("--fail", a.fail or []), ("--until", [a.until] if a.until else []),
                       ("--type-after", [rx for rx, _ in a.type_after])):
        for pat in pats:
            try:
                re.compile(pat)
            except re.error as e:
                print(f"precursor.run: {what} {pat!r}: not a regular expression ({e})", file=sys.stderr)
                return 2
    for p, what in ((a.rom, "--rom"), (a.ram, "--ram")):
        if p is not None and not p.is_file():
            print(f"precursor.run: {what} {p}: no such file", file=sys.stderr)
            return 2
    if a.bridge_port is not None and not 1 <= a.bridge_port <= 65535:
        print(f"precursor.run: --bridge-port {a.bridge_port}: not a TCP port (1..65535)", file=sys.stderr)
        return 2
    if not 1 <= a.profile_period <= 1 << 31:
        print(f"precursor.run: --profile-period {a.profile_period}: not a period in cycles (1..2^31)", file=sys.stderr)
        return 2
    if a.memlcd is not None and not a.memlcd.resolve().parent.is_dir():
        print(f"precursor.run: --memlcd {a.memlcd}: no such directory {a.memlcd.parent}", file=sys.stderr)
        return 2
    if a.keys is not None and not a.keys.is_file():
        print(f"precursor.run: --keys {a.keys}: no such file", file=sys.stderr)
        return 2
    if a.profile is not None and not a.profile.parent.is_dir():
        print(f"precursor.run: --profile {a.profile}: no such directory {a.profile.parent}", file=sys.stderr)
        return 2
    try:
        rom = a.rom.read_bytes()
        ram = a.ram.read_bytes() if a.ram else None
        res = run(rom, ram, a.timeout, a.expect, a.until, a.fail or [DEFAULT_FAIL], not a.quiet, keep=a.keep,
                  bridge_port=a.bridge_port, profile=(a.profile.resolve(), a.profile_period) if a.profile else None,
                  memlcd=a.memlcd.resolve() if a.memlcd else None, keys=a.keys.resolve() if a.keys else None,
                  type_after=[(rx, t.encode().decode("unicode_escape")) for rx, t in a.type_after],
                  keys_log=a.keys_log.resolve() if a.keys_log else None)
    except ValueError as e:
        print(f"precursor.run: {e}", file=sys.stderr)
        return 2
    summary = res.summary(a.expect, a.end)
    if a.json:
        a.json.write_text(json.dumps(summary, indent=1) + "\n")
    cyc = f"{res.cycles:,}" if res.cycles is not None else "?"
    rate = f", {res.cycles / res.wall_s / 1e6:.2f} M cycles/s" if res.cycles and res.wall_s > 0 else ""
    print(f"precursor.run: {res.reason} code={res.code} cycles={cyc} wall={res.wall_s:.1f}s{rate}", file=sys.stderr)
    if res.reason == "timeout" and res.progress:
        print(f"precursor.run: last progress record: {res.progress}", file=sys.stderr)
    for p in a.expect:
        if p not in res.matched:
            print(f"precursor.run: expected output not seen: {p!r}", file=sys.stderr)
    for l in res.failed:
        print(f"precursor.run: failure line: [{l.cycle} {l.source}] {l.text}", file=sys.stderr)
    if a.end and res.reason != a.end:
        print(f"precursor.run: the run ended by {res.reason}, not by {a.end}", file=sys.stderr)
    return 0 if res.ok(a.expect, a.end) else 1


if __name__ == "__main__":
    sys.exit(main())
