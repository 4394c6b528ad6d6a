"""Instruction decode tables built from the spec's opcode table of one ISA: for each opcode
code, its class (ALU op index, MUL, BRZ, FIN, CSWAP or illegal), cost, latency and which
fields it reads/writes (for the scoreboard). Nothing here restates a code or a cost."""

from __future__ import annotations

from dataclasses import dataclass

from . import spec
from .alu import B_REG, TWO_PASS, Alu, b_source, control

K_ILLEGAL, K_ALU, K_MUL, K_BRZ, K_FIN, K_CSWAP = range(6)


@dataclass
class Entry:
    kind: int
    alu_op: int
    cycles: int
    latency: int
    writes: bool        # writes Wd
    reads_a: bool       # Ra is a register operand (unless ca)
    reads_b: bool       # Rb is a register operand (unless cb)
    two_pass: bool      # an ALU op that takes two passes (result in the cycle after execute)
    alu_ctl: int        # the ALU's control word (pass 1)
    alu_ctl2: int       # and of pass 2
    b_src: int          # what the B read port carries (alu.B_*)


def table(isa: str, alu: Alu) -> dict[int, Entry]:
    s = spec.load()
    out = {}
    for code, op in s.isas[isa].by_code.items():
        m = op.mnemonic
        kind = {"mul": K_MUL, "brz": K_BRZ, "fin": K_FIN, "cswap": K_CSWAP}.get(m, K_ALU)
        if kind == K_ALU and m not in alu.ops:
            raise ValueError(f"isa {isa}: opcode {m} has no hardware")
        two = kind == K_ALU and m in TWO_PASS
        # the ALU writes at the end of the execute cycle (t + 1), a two-pass op one cycle later,
        # and a two-pass op keeps the ALU for its second cycle
        if kind == K_ALU and (op.latency < (3 if two else 2) or op.cycles < (2 if two else 1)):
            raise ValueError(f"isa {isa}: {m} (cost {op.cycles}, latency {op.latency}) is faster than its hardware")
        # CSWAP writes through the ALU's write slot in t + 1 and t + 2: no other op may use it then
        if kind == K_CSWAP and (op.latency < 3 or op.cycles < 2):
            raise ValueError(f"isa {isa}: {m} (cost {op.cycles}, latency {op.latency}) is faster than its hardware")
        out[code] = Entry(
            kind=kind,
            alu_op=alu.ops.index(m) if kind == K_ALU else 0,
            cycles=op.cycles,
            latency=op.latency,
            writes="wd" in op.operands,
            reads_a=any(k in op.operands for k in ("ra", "ra_reg")),
            reads_b=any(k in op.operands for k in ("rb", "rb_reg")),
            two_pass=two,
            # CSWAP writes port B's words through the ALU (PSB) in its second and third cycles
            alu_ctl=control(m) if kind == K_ALU else control("psb") if kind == K_CSWAP else 0,
            alu_ctl2=control(m, True) if two else 0,
            b_src=b_source(m) if kind == K_ALU else B_REG,
        )
    return out
