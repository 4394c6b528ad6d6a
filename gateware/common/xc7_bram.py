"""Behavioural simulation models of the xc7 block RAMs (RAMB18E1, RAMB36E1) for post-synthesis
simulation (common/netlist.py).

yosys's `xilinx/cells_sim.v` declares RAMB18E1 and RAMB36E1 with their ports and timing only
(no behaviour: a netlist using them reads zeros), so these models replace those two modules.
They follow the primitives' documented behaviour (Xilinx UG473, "7 Series FPGAs Memory
Resources": true-dual-port mode, read and write widths, byte-wide write enables, WRITE_MODE
WRITE_FIRST / READ_FIRST / NO_CHANGE, the enable gating both read and write so a disabled port
holds its output latch, INIT_xx / INITP_xx contents, INIT_A / INIT_B output latches) for the
configurations yosys's xc7 mapping produces here. `check(netlist)` refuses any instance outside
that subset (cascades, output registers DO*_REG = 1, inverted clocks, SDP mode, a port whose read
and write widths differ), so a netlist is never simulated with a model that does not cover it.

Both ports write the array with non-blocking assignments and read it in the same edge's
evaluation: a read and a write of the same address on the two ports in one edge return the old
word (the primitive leaves that collision undefined; the engine's register file never does it:
its reads and writes are on different edges, docs/gateware.md "Register file and clocks").
"""

from __future__ import annotations

import re

# (primitive, address bits, data bits per port, parity bits per port, INIT_xx count, INITP_xx count)
PRIMS = {"RAMB18E1": (14, 16, 2, 0x40, 0x08), "RAMB36E1": (16, 32, 4, 0x80, 0x10)}


def _model(prim: str) -> str:
    abits, dbits, pbits, ninit, ninitp = PRIMS[prim]
    total_d = 256 * ninit
    total_p = 256 * ninitp
    wbits_b = 8 if prim == "RAMB36E1" else 4
    wbits_a = 4 if prim == "RAMB36E1" else 2
    params = "\n".join(f"    parameter [255:0] INIT_{i:02X} = 256'h0," for i in range(ninit))
    params += "\n" + "\n".join(f"    parameter [255:0] INITP_{i:02X} = 256'h0," for i in range(ninitp))
    initd = "{" + ", ".join(f"INIT_{i:02X}" for i in reversed(range(ninit))) + "}"
    initp = "{" + ", ".join(f"INITP_{i:02X}" for i in reversed(range(ninitp))) + "}"
    extra_ports = ""
    if prim == "RAMB36E1":
        extra_ports = """
    input CASCADEINA, CASCADEINB, INJECTDBITERR, INJECTSBITERR,
    output CASCADEOUTA, CASCADEOUTB, DBITERR, SBITERR,
    output [7:0] ECCPARITY, output [8:0] RDADDRECC,"""
    # port: (name, clk, en, addr, di, dip, we, do, dop, rw param, ww param, mode, init)
    ports = [("a", "CLKARDCLK", "ENARDEN", "ADDRARDADDR", "DIADI", "DIPADIP", "WEA", "DOADO", "DOPADOP",
              "READ_WIDTH_A", "WRITE_WIDTH_A", "WRITE_MODE_A", "INIT_A", wbits_a),
             ("b", "CLKBWRCLK", "ENBWREN", "ADDRBWRADDR", "DIBDI", "DIPBDIP", "WEBWE", "DOBDO", "DOPBDOP",
              "READ_WIDTH_B", "WRITE_WIDTH_B", "WRITE_MODE_B", "INIT_B", wbits_b)]
    body = []
    for (p, clk, en, adr, di, dip, we, do, dop, rw, ww, mode, init, wb) in ports:
        body.append(f"""
    // port {p.upper()}
    localparam integer W_{p} = ({rw} > {ww}) ? {rw} : {ww};           // one width per port (checked)
    localparam integer D_{p} = (W_{p} >= 9) ? (W_{p} / 9) * 8 : W_{p};  // data bits of a word
    localparam integer P_{p} = (W_{p} >= 9) ? W_{p} / 9 : 0;            // parity bits of a word
    localparam integer L_{p} = (D_{p} >= 32) ? 5 : (D_{p} >= 16) ? 4 : (D_{p} >= 8) ? 3 : (D_{p} >= 4) ? 2 : (D_{p} >= 2) ? 1 : 0;
    wire [{abits - 1}:0] idx_{p} = {adr}[{abits - 1}:0] >> L_{p};
    reg [{dbits - 1}:0] q_{p} = {init}[{dbits - 1}:0];
    reg [{pbits - 1}:0] qp_{p} = {init}[{dbits + pbits - 1}:{dbits}];
    assign {do} = q_{p};
    assign {dop} = qp_{p};
    integer k_{p}, j_{p};
    reg [{dbits - 1}:0] old_{p}, new_{p};
    reg [{pbits - 1}:0] oldp_{p}, newp_{p};
    always @(*) begin
        old_{p} = 0; oldp_{p} = 0;
        for (k_{p} = 0; k_{p} < D_{p}; k_{p} = k_{p} + 1) old_{p}[k_{p}] = mem[idx_{p} * D_{p} + k_{p}];
        for (k_{p} = 0; k_{p} < P_{p}; k_{p} = k_{p} + 1) oldp_{p}[k_{p}] = memp[idx_{p} * P_{p} + k_{p}];
        new_{p} = old_{p}; newp_{p} = oldp_{p};
        for (k_{p} = 0; k_{p} < D_{p}; k_{p} = k_{p} + 1)
            if ({we}[(D_{p} >= 8) ? k_{p} / 8 : 0]) new_{p}[k_{p}] = {di}[k_{p}];
        for (k_{p} = 0; k_{p} < P_{p}; k_{p} = k_{p} + 1)
            if ({we}[k_{p}]) newp_{p}[k_{p}] = {dip}[k_{p}];
    end
    wire wr_{p} = {en} && ({ww} != 0) && (|{we}[{wb - 1}:0]);
    wire rd_{p} = {en} && ({rw} != 0);
    always @(posedge {clk}) begin
        if (wr_{p}) begin
            for (j_{p} = 0; j_{p} < D_{p}; j_{p} = j_{p} + 1) mem[idx_{p} * D_{p} + j_{p}] <= new_{p}[j_{p}];
            for (j_{p} = 0; j_{p} < P_{p}; j_{p} = j_{p} + 1) memp[idx_{p} * P_{p} + j_{p}] <= newp_{p}[j_{p}];
        end
        if (rd_{p} && !(wr_{p} && {mode} == "NO_CHANGE")) begin
            q_{p} <= (wr_{p} && {mode} == "WRITE_FIRST") ? new_{p} : old_{p};
            qp_{p} <= (wr_{p} && {mode} == "WRITE_FIRST") ? newp_{p} : oldp_{p};
        end
    end""")
    return f"""
// {prim}: behavioural model for post-synthesis simulation (gateware/common/xc7_bram.py)
module {prim} #(
{params}
    parameter [71:0] INIT_A = 0,
    parameter [71:0] INIT_B = 0,
    parameter [71:0] SRVAL_A = 0,
    parameter [71:0] SRVAL_B = 0,
    parameter integer READ_WIDTH_A = 0,
    parameter integer READ_WIDTH_B = 0,
    parameter integer WRITE_WIDTH_A = 0,
    parameter integer WRITE_WIDTH_B = 0,
    parameter WRITE_MODE_A = "WRITE_FIRST",
    parameter WRITE_MODE_B = "WRITE_FIRST",
    parameter RAM_MODE = "TDP",
    parameter integer DOA_REG = 0,
    parameter integer DOB_REG = 0,
    parameter RAM_EXTENSION_A = "NONE",
    parameter RAM_EXTENSION_B = "NONE",
    parameter RDADDR_COLLISION_HWCONFIG = "DELAYED_WRITE",
    parameter SIM_COLLISION_CHECK = "ALL",
    parameter SIM_DEVICE = "7SERIES",
    parameter RSTREG_PRIORITY_A = "RSTREG",
    parameter RSTREG_PRIORITY_B = "RSTREG",
    parameter EN_ECC_READ = "FALSE",
    parameter EN_ECC_WRITE = "FALSE",
    parameter INIT_FILE = "NONE",
    parameter [0:0] IS_CLKARDCLK_INVERTED = 1'b0,
    parameter [0:0] IS_CLKBWRCLK_INVERTED = 1'b0,
    parameter [0:0] IS_ENARDEN_INVERTED = 1'b0,
    parameter [0:0] IS_ENBWREN_INVERTED = 1'b0,
    parameter [0:0] IS_RSTRAMARSTRAM_INVERTED = 1'b0,
    parameter [0:0] IS_RSTRAMB_INVERTED = 1'b0,
    parameter [0:0] IS_RSTREGARSTREG_INVERTED = 1'b0,
    parameter [0:0] IS_RSTREGB_INVERTED = 1'b0
) (
    input CLKARDCLK, CLKBWRCLK, ENARDEN, ENBWREN, REGCEAREGCE, REGCEB,
    input RSTRAMARSTRAM, RSTRAMB, RSTREGARSTREG, RSTREGB,{extra_ports}
    input [{abits - 1}:0] ADDRARDADDR, ADDRBWRADDR,
    input [{dbits - 1}:0] DIADI, DIBDI,
    input [{pbits - 1}:0] DIPADIP, DIPBDIP,
    input [{wbits_a - 1}:0] WEA,
    input [{wbits_b - 1}:0] WEBWE,
    output [{dbits - 1}:0] DOADO, DOBDO,
    output [{pbits - 1}:0] DOPADOP, DOPBDOP
);
    localparam [{total_d - 1}:0] INITD = {initd};
    localparam [{total_p - 1}:0] INITPD = {initp};
    reg mem [0:{total_d - 1}];
    reg memp [0:{total_p - 1}];
    integer i;
    initial begin
        for (i = 0; i < {total_d}; i = i + 1) mem[i] = INITD[i];
        for (i = 0; i < {total_p}; i = i + 1) memp[i] = INITPD[i];
    end
{''.join(body)}
endmodule
"""


# yosys's CARRY4 computes CO[k] from CO[k - 1] inside one vector, which Verilator can only
# settle by iterating (long carry chains then exceed its convergence limit); the same equations
# on separate wires
CARRY4 = """
// CARRY4: yosys's equations (O = S ^ {CO[2:0], CI | CYINIT}, CO[k] = S[k] ? CO[k-1] : DI[k]), bit by bit
module CARRY4(output [3:0] CO, output [3:0] O, input CI, input CYINIT, input [3:0] DI, input [3:0] S);
  wire c_in = CI | CYINIT;
  wire c0 = S[0] ? c_in : DI[0];
  wire c1 = S[1] ? c0 : DI[1];
  wire c2 = S[2] ? c1 : DI[2];
  wire c3 = S[3] ? c2 : DI[3];
  assign CO = {c3, c2, c1, c0};
  assign O = S ^ {c2, c1, c0, c_in};
endmodule
"""


def models() -> str:
    return "// generated by gateware/common/xc7_bram.py\n" + "".join(_model(p) for p in PRIMS) + CARRY4


def strip(cells_sim: str) -> str:
    """yosys's cells_sim.v without its (behaviour-less) RAMB18E1 / RAMB36E1 modules and its CARRY4."""
    for prim in list(PRIMS) + ["CARRY4"]:
        cells_sim, n = re.subn(rf"\nmodule {prim}\s*\(.*?\nendmodule\n", "\n", cells_sim, flags=re.S)
        if n != 1:
            raise ValueError(f"{prim} not found once in cells_sim.v")
    return cells_sim


def check(netlist: str) -> int:
    """Every block RAM instance of the netlist is in the subset the models cover; returns how many."""
    n = 0
    for m in re.finditer(r"\b(RAMB18E1|RAMB36E1)\s+#\((.*?)\)\s*(\\?\S+)\s*\(", netlist, re.S):
        n += 1
        prim, params, inst = m.groups()
        p = dict(re.findall(r"\.(\w+)\(([^()]*)\)", params))

        def val(k, default="0"):
            v = p.get(k, default).strip()
            mm = re.fullmatch(r"(?:\d+)?'s?d?(\d+)|(\d+)", v)
            return int(mm.group(1) or mm.group(2)) if mm else v.strip('"')

        bad = []
        if val("RAM_MODE", '"TDP"') != "TDP":
            bad.append(f"RAM_MODE {p.get('RAM_MODE')}")
        for k in ("DOA_REG", "DOB_REG"):
            if val(k) != 0:
                bad.append(f"{k} {p[k]}")
        for k in p:
            if k.startswith("IS_") and k.endswith("_INVERTED") and not re.fullmatch(r"1'(b|h)0", p[k].strip()):
                bad.append(f"{k} {p[k]}")
        for k in ("RAM_EXTENSION_A", "RAM_EXTENSION_B"):
            if val(k, '"NONE"') != "NONE":
                bad.append(f"{k} {p[k]}")
        for s in ("A", "B"):
            r, w = val(f"READ_WIDTH_{s}"), val(f"WRITE_WIDTH_{s}")
            if r and w and r != w:
                bad.append(f"port {s} read width {r} != write width {w}")
            if (r or w) not in (0, 1, 2, 4, 9, 18) + ((36,) if prim == "RAMB36E1" else ()):
                bad.append(f"port {s} width {r or w}")
        if bad:
            raise ValueError(f"{prim} {inst}: outside what the simulation model covers: {', '.join(bad)}")
    return n
