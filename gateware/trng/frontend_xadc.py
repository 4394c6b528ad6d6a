"""XADC avalanche front end (FPGA only: synthesised with yosys; the simulation noise source
stands in for it in Verilator).

The 7-series XADC runs its channel sequencer continuously over the two auxiliary inputs the
avalanche generator drives (`aux`: board-specific VAUX channel numbers). At each end of conversion
the front end reads the converted channel's result over the DRP (12-bit code in DO[15:4]);
once both channels have a new code the pair is presented (`s0`, `s1`, one-cycle `valid`), the
sample pair the health tests, the excursion tests and the word folding take.
"""

from migen import ClockSignal, If, Instance, Module, Signal
from migen.genlib.fsm import FSM, NextState, NextValue


class XadcAvalanche(Module):
    def __init__(self, aux=(0, 8), sample_bits=12, adcclk_div=4):
        self.vauxp = Signal(16)
        self.vauxn = Signal(16)
        self.enable = Signal()
        self.s0 = Signal(sample_bits)
        self.s1 = Signal(sample_bits)
        self.valid = Signal()

        # # #

        do = Signal(16)
        drdy = Signal()
        eoc = Signal()
        channel = Signal(5)
        den = Signal()
        daddr = Signal(7)
        seq = 0
        for a in aux:
            seq |= 1 << a
        self.specials += Instance(
            "XADC",
            p_INIT_40=0x0000,                  # no averaging, sequencer picks the channels
            p_INIT_41=0x2000 | 0x0F0F,         # SEQ = continuous sequence; alarms and calibration off
            p_INIT_42=adcclk_div << 8,         # ADCCLK = DCLK / adcclk_div
            p_INIT_48=0x0000,                  # no on-chip sensor in the sequence
            p_INIT_49=seq,                     # the avalanche generator's VAUX channels
            i_DCLK=ClockSignal("sys"),
            i_RESET=~self.enable,
            i_CONVST=0, i_CONVSTCLK=0,
            i_VP=0, i_VN=0,
            i_VAUXP=self.vauxp, i_VAUXN=self.vauxn,
            i_DADDR=daddr, i_DEN=den, i_DWE=0, i_DI=0,
            o_DO=do, o_DRDY=drdy, o_EOC=eoc, o_CHANNEL=channel,
        )
        have = Signal(2)
        ch = Signal(5)
        self.submodules.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(eoc & self.enable,
                NextValue(ch, channel),
                NextState("READ"),
            ),
        )
        fsm.act("READ",
            den.eq(1), daddr.eq(0x10 + ch),   # VAUXn results live at DRP address 0x10 + n
            NextState("WAIT"),
        )
        got = Signal(2)
        fsm.act("WAIT",
            daddr.eq(0x10 + ch),
            If(drdy,
                If(ch == aux[0], got.eq(1)),
                If(ch == aux[1], got.eq(2)),
                NextState("IDLE"),
            ),
        )
        self.sync += [
            If(got[0], self.s0.eq(do[16 - sample_bits:])),
            If(got[1], self.s1.eq(do[16 - sample_bits:])),
            self.valid.eq(0),
            If((have | got) == 3,
                self.valid.eq(1), have.eq(0),
            ).Else(have.eq(have | got)),
        ]
