"""Line server over stdin/stdout for the engine server's `rtl` backend
(services/engine25519/src/rtl_backend.rs): one Verilated engine of one ISA.

    python -m engine.serve --isa v1|v2

Requests, one per line (numbers decimal, words and registers hex; registers are 64 hex digits
of the 32 little-endian bytes); each answered with one line, `err <message>` on bad input:
    wu START W...        write microcode words          -> ok
    ru START N           read N microcode words         -> W...
    wr WINDOW REG HEX    write a register               -> ok
    rr WINDOW REG        read a register                -> HEX
    run WINDOW MPSTART MPLEN MAX_CYCLES                 -> finished CYCLES | illegal CYCLES MPC | runaway CYCLES
    reset                a fresh engine                 -> ok
"""

from __future__ import annotations

import argparse
import sys

from . import spec
from .sim import EngineSim


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--isa", required=True, choices=sorted(spec.load().isas))
    a = ap.parse_args(argv)
    g = spec.load().geometry
    e = EngineSim(a.isa)
    out = sys.stdout
    print("ready", file=out, flush=True)
    for line in sys.stdin:
        t = line.split()
        if not t:
            continue
        try:
            op = t[0]
            if op == "wu":
                start, words = int(t[1]), [int(w, 16) for w in t[2:]]
                if start < 0 or start + len(words) > g["ucode_words"] or any(w >> 32 for w in words):
                    raise ValueError("microcode range")
                e.load_program(words, start)
                r = "ok"
            elif op == "ru":
                start, n = int(t[1]), int(t[2])
                if start < 0 or n < 0 or start + n > g["ucode_words"]:
                    raise ValueError("microcode range")
                words = e.read_program(start, n)
                r = " ".join(f"{w:08x}" for w in words)
            elif op in ("wr", "rr"):
                w, reg = int(t[1]), int(t[2])
                if not (0 <= w < g["windows"] and 0 <= reg < g["regs_per_window"]):
                    raise ValueError("window/register range")
                if op == "wr":
                    b = bytes.fromhex(t[3])
                    if len(b) != 32:
                        raise ValueError("register needs 64 hex digits")
                    e.set_reg(w, reg, int.from_bytes(b, "little"))
                    r = "ok"
                else:
                    r = e.reg(w, reg).to_bytes(32, "little").hex()
            elif op == "run":
                w, mpstart, mplen, mx = (int(x) for x in t[1:5])
                if not (0 <= w < g["windows"] and mplen > 0 and 0 <= mpstart and mpstart + mplen <= g["ucode_words"]):
                    raise ValueError("job range")
                try:
                    ev, cyc, _, _ = e.run(w, mpstart, mplen, mx)
                    r = f"finished {cyc}" if ev == "finished" else f"illegal {cyc} {e.sim.peek('mpc')}"
                except TimeoutError:
                    r = f"runaway {e.sim.peek('cycles')}"
                    e.close()
                    e = EngineSim(a.isa)  # the only way to stop a runaway job
            elif op == "reset":
                e.close()
                e = EngineSim(a.isa)
                r = "ok"
            else:
                raise ValueError(f"unknown request {op!r}")
        except (ValueError, IndexError) as ex:
            r = f"err {ex}"
        print(r, file=out, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
