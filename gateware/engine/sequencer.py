"""Sequencer: issues one microcode word at a time into the datapath under a scoreboard, with every
cost and latency from the spec's opcode table of the selected ISA (decode.py). This is the issue
model the engine's model implements (libs/engine25519-core/src/model.rs): an instruction issues
in the first cycle in which the previous one's cost has elapsed, every register it reads or
writes has been written (a per-register countdown), a multiplier is free (MUL) and, for FIN,
every outstanding result has landed. In v1 every latency equals its cost, so this reduces to the
shipped engine's sequential FETCH/EXEC/WAIT_DONE timing (3 per ALU op and BRZ, 28 per MUL, 2 per
FIN, 3 per illegal opcode, 1 cycle from GO).

Pipeline (eng_clk): the microcode RAM reads synchronously, so the next mpc (`mpc_next`) is its
address one cycle ahead; issue in cycle t (register file addressed: a register of the window or
a constant ROM row), execute in t + 1 (ALU results written at the end of t + 1; FADD/FSUB write
their first pass's word then and, when it needs the p correction, their second pass's at the end
of t + 2; BRZ decides the next mpc); CSWAP reads its condition Rb
and Ra in t and Wd in t + 1, and writes Ra's old word at the end of t + 1 and Wd's at the end of
t + 2, each to the other register when Rb[0] = 1 or back to its own (one write slot); a multiply
starts in t + 1 on the mul_clk edge mid-cycle and its result is written at the end of cycle
t + latency - 1. Halting (FIN, end of program, a BRZ to the last word or outside the program,
an illegal opcode) waits for the cost and for every outstanding write; `cycles` then holds the
model's cycle count.

Pause: with `pause_req`, the sequencer stops at the next instruction boundary with nothing in
flight in the eng_clk pipeline (`pause_gnt`); everything on eng_clk is frozen (scoreboard, cost,
the cycle counter; multipliers finish on mul_clk and hold their result), so a resumed job ends
with the same registers and the same cycle count. `mpc` is the resume address; writing
`mpresume` while paused moves it. Clearing `pause_req` resumes (a `mpresume` write in the very
cycle the engine resumes is ignored: the resume fetches the word at `mpc`, so the RAM's address
never waits for the CSR decode of the write; the bus cannot make one there, as the POWER write
that clears `pause_req` is still being acknowledged in that cycle).
"""

from __future__ import annotations

from migen import Array, Cat, If, Module, Mux, Replicate, Signal, bits_for, Case

from . import decode as dec
from . import spec
from . import alu as alu_mod
from .alu import Alu
from .mul import FieldMul
from .regfile import RegFile
from .regfile import layout as rf_layout
from .ucode import MicrocodeRam


class _Cut:
    """Stand-in for a memory port or a unit when synthesizing the sequencer alone: every signal
    becomes a port of the top module (`Engine.cut_ios`)."""

    def __init__(self, ios, **widths):
        for k, w in widths.items():
            sig = Signal(w, name=k)
            setattr(self, k, sig)
            ios.add(sig)


class Engine(Module):
    def __init__(self, isa: str, synth_core: bool = False, target: str = "generic"):
        form = target                     # (`target` is reused below for BRZ's target)
        s = spec.load()
        I = s.isas[isa]
        g = s.geometry
        nregs = g["regs_per_window"]
        self.isa = isa
        nmul = I.units.get("mul", 1)
        self.muls = []
        self.cut_ios = set()

        # the constant ROM's rows and the ALU's hardware rows follow the windows (regfile.py)
        const_base, hw_rows, rf_init = rf_layout(isa)
        rf_rows = len(rf_init)
        if synth_core:
            rfa = bits_for(rf_rows - 1)
            uca = bits_for(g["ucode_words"] - 1)
            c = self.cut_ios
            port = lambda: _Cut(c, adr=rfa, dat_r=256, dat_w=256, we=1)  # noqa: E731
            rf = type("RF", (), {"ra": port(), "rb": port(), "wa": port(),
                                 "wm": _Cut(c, adr=rfa, dat_r=256, dat_w=256, we=1, keep=256 // 32)})()
            uc = type("UC", (), {"port": _Cut(c, adr=uca, dat_r=32, dat_w=32, we=1, re=1)})()
            ops = Alu(isa).ops
            alu = _Cut(c, ctl=alu_mod.CTL_BITS, a=256, b=256, q=256, fix=1)
            alu.ops = ops
            self.muls = [_Cut(c, a=256, b=256, start=1, q=256) for _ in range(nmul)]
        else:
            self.submodules.rf = rf = RegFile(isa)
            assert (rf.const_base, rf.depth) == (const_base, rf_rows)
            self.submodules.uc = uc = MicrocodeRam()
            self.submodules.alu = alu = Alu(isa, target=target)
            for u in range(nmul):
                m = FieldMul("mul", target=target)
                setattr(self.submodules, f"mul{u}", m)
                self.muls.append(m)
        table = dec.table(isa, alu)
        if nmul and not synth_core:
            # a MUL issued in t starts the multiplier on the mul_clk edge in the middle of t + 1
            # (edge 0) and its product is taken into the write request at the end of
            # t + latency - 1: edge 2 * latency - 3. `q` is loaded on edge `cycles` - 1 (the
            # multiplier's `done` edge) and must be loaded on an earlier edge than the write
            # request's, at the latest the mid-cycle edge 2 * latency - 4 (one mul_clk before it)
            lat = max(e.latency for e in table.values() if e.kind == dec.K_MUL)
            assert spec.mul_clock_ratio(isa) == 2 and self.muls[0].cycles - 1 <= 2 * lat - 4, \
                f"isa {isa}: the multiplier ({self.muls[0].cycles} mul_clk) is slower than MUL's latency {lat}"

        # ---- control inputs (CSR block / test harness)
        self.go = Signal()
        self.window = Signal(bits_for(g["windows"] - 1))
        self.mpstart = Signal(bits_for(g["ucode_words"] - 1))
        self.mplen = Signal(bits_for(g["ucode_words"] - 1))
        self.pause_req = Signal()
        self.mpresume_we = Signal()
        self.mpresume_dat = Signal(len(self.mpstart))
        # ---- status outputs
        self.running = Signal()
        self.pause_gnt = Signal()
        self.mpc = Signal(len(self.mpstart))
        self.finished = Signal()      # event level: job finished (FIN, end, branch halt)
        self.illegal = Signal()       # event level: illegal opcode
        self.ev_pulse = Signal(2)     # one-cycle pulses (finished, illegal) for the event manager
        self.cycles = Signal(32)
        self.instructions = Signal(32)
        self.instruction = Signal(32)
        # ---- bus side (used while idle or paused)
        self.bus_rf_adr = Signal(bits_for(const_base - 1))
        self.bus_rf_we = Signal()
        self.bus_rf_dat_w = Signal(256)
        self.bus_rf_keep = Signal(256 // 32)  # 32-bit words of the row the bus write leaves as they are
        self.bus_rf_dat_r = Signal(256)   # port A data: address in one cycle, data the next
        self.bus_uc_adr = Signal(len(uc.port.adr))
        self.bus_uc_sel = Signal()        # the bus addresses the microcode RAM (reads or writes) this cycle
        self.bus_uc_we = Signal()
        self.bus_uc_dat_w = Signal(32)
        self.bus_uc_dat_r = Signal(32)
        self.bus_ok = Signal()            # the bus may access RF / microcode now

        f = s.fields
        word = Signal(32)
        mpc_next = Signal(len(self.mpc))  # mpc in the next cycle
        fetch = Signal()                  # the sequencer needs a word in the next cycle
        fetch_adr = Signal(len(self.mpc))  # which word: mpc_next, or mpc + 1 when mpc_next may be mpc
        stay = Signal()                   # running and mpc stays: the port keeps the word at mpc
        # one port: the sequencer's fetch, else the bus (which writes only while idle or paused,
        # never in a cycle the sequencer fetches: the GO cycle and the resume cycle fetch).
        # Prefetch without a decision in the address: while running, the RAM is addressed at
        # mpc + 1 whether or not the word at mpc issues; if it does not, mpc stays and the port's
        # read enable is low, so it keeps the word at mpc. The RAM's address never waits for this
        # cycle's decode and scoreboard (a block RAM's output through them and the address muxes
        # back into its address was the eng_clk loop on the ECP5), and the word in every cycle is
        # the word at mpc, as before: no cycle count changes.
        # Idle, the port is the bus's only while the bus selects it (`bus_uc_sel`: the CSR block
        # drives it from the bus adapter's region register, the memory window); otherwise it is
        # addressed at MPSTART, so a GO's first word is read without GO in the address's select
        # (GO is a CSR write: the adapter's address through the CSR decode, a sys_clk -> eng_clk
        # path into the RAM's address pins that was 10.7 ns of a 10 ns budget on the ECP5)
        port_fetch = Signal()                 # the port is the sequencer's (driven below, with `state`)
        self.comb += [uc.port.adr.eq(Mux(port_fetch, fetch_adr, self.bus_uc_adr)), word.eq(uc.port.dat_r),
                      uc.port.re.eq(~stay),
                      self.bus_uc_dat_r.eq(uc.port.dat_r),
                      uc.port.dat_w.eq(self.bus_uc_dat_w), uc.port.we.eq(self.bus_uc_we & self.bus_ok & ~port_fetch)]
        fld = {k: word[f[k].lsb:f[k].lsb + f[k].width] for k in ("opcode", "ra", "ca", "rb", "cb", "wd", "imm")}

        cw = bits_for(max([e.cycles for e in table.values()] + [e.latency for e in table.values()] + [I.illegal_cycles, I.go_cycles]))
        # decode of the word at mpc
        d_kind = Signal(3)
        d_ctl = Signal(alu_mod.CTL_BITS)
        d_ctl2 = Signal(alu_mod.CTL_BITS)
        d_cycles = Signal(cw)
        d_lat = Signal(cw)
        d_writes = Signal()
        d_ra = Signal()
        d_rb = Signal()
        d_two = Signal()
        d_bsrc = Signal(3)
        cases = {}
        for code, e in table.items():
            cases[code] = [d_kind.eq(e.kind), d_ctl.eq(e.alu_ctl), d_ctl2.eq(e.alu_ctl2), d_cycles.eq(e.cycles), d_lat.eq(e.latency),
                           d_writes.eq(int(e.writes)), d_ra.eq(int(e.reads_a)), d_rb.eq(int(e.reads_b)),
                           d_two.eq(int(e.two_pass)), d_bsrc.eq(e.b_src)]
        cases["default"] = [d_kind.eq(dec.K_ILLEGAL), d_cycles.eq(I.illegal_cycles), d_lat.eq(0)]
        self.comb += Case(fld["opcode"], cases)

        # ---- state
        IDLE, RUN, HALT = 0, 1, 2
        state = Signal(2)
        self.comb += port_fetch.eq(Mux(state == IDLE, ~self.bus_uc_sel, fetch))
        paused = Signal()
        en = Signal()
        self.comb += en.eq(~paused)
        start = Signal(len(self.mpstart))
        stop = Signal(len(self.mpstart))
        win = Signal(len(self.window))
        cost = Signal(cw)
        ready = [Signal(cw, name=f"ready{r}") for r in range(nregs)]
        mcnt = [Signal(cw, name=f"mcnt{u}") for u in range(nmul)]
        mwd = [Signal(5, name=f"mwd{u}") for u in range(nmul)]
        mstart = [Signal(name=f"mstart{u}") for u in range(nmul)]
        halt_ill = Signal()

        # scoreboard checks for the word at mpc
        touch = Signal(nregs)
        self.comb += touch.eq((d_writes << fld["wd"]) | ((d_ra & ~fld["ca"]) << fld["ra"]) | ((d_rb & ~fld["cb"]) << fld["rb"]))
        ready_ok = Signal()
        self.comb += ready_ok.eq((Cat(*[ready[r] != 0 for r in range(nregs)]) & touch) == 0)
        drained = Signal()
        self.comb += drained.eq(Cat(*[ready[r] != 0 for r in range(nregs)]) == 0)
        free = Signal(nmul)
        self.comb += free.eq(Cat(*[mcnt[u] == 0 for u in range(nmul)]))
        unit = Signal(max=max(2, nmul))
        for u in reversed(range(nmul)):
            self.comb += If(free[u], unit.eq(u))
        cost_ok = Signal()
        self.comb += cost_ok.eq(cost == 0)

        # execute stage (cycle t + 1)
        ex_v = Signal()
        ex_kind = Signal(3)
        actl = Signal(alu_mod.CTL_BITS)   # the ALU's control word for this cycle (loaded at issue)
        ex_ctl2 = Signal(alu_mod.CTL_BITS)
        ex_wd = Signal(5)
        ex_ra = Signal(5)
        ex_mpc = Signal(len(self.mpc))
        ex_imm = Signal(f["imm"].width)
        ex_two = Signal()
        p2 = Signal()             # second pass of a two-pass ALU op (FADD/FSUB): written at the end of t + 2
        cs2 = Signal()            # CSWAP third cycle (t + 2): Wd's old word on port B, written by the held condition
        cs_swap = Signal()        # CSWAP's condition Rb[0], held for t + 2
        opa = Signal(256)
        opb = Signal(256)
        self.comb += [opa.eq(rf.ra.dat_r), opb.eq(rf.rb.dat_r),   # registers and constants alike
                      alu.a.eq(opa), alu.b.eq(opb), alu.ctl.eq(actl)]

        is_issue = Signal()
        kind_ok = Signal()
        self.comb += [
            kind_ok.eq(Mux(d_kind == dec.K_ILLEGAL, 1,
                           ready_ok & Mux(d_kind == dec.K_MUL, free != 0, 1) & Mux(d_kind == dec.K_FIN, drained, 1))),
            is_issue.eq((state == RUN) & en & cost_ok & kind_ok),
        ]

        # RF addressing: a register of the window, or (operand flag set) a constant ROM row
        base = Signal(bits_for(const_base - 1))
        self.comb += base.eq(win << 5)

        def row(idx, is_const):
            return Mux(is_const, const_base | idx, base | idx)

        # CSWAP (t issue, t + 1 cs_ex, t + 2 cs2): in t port A reads the condition Rb and port B
        # Ra; in t + 1 port B reads Wd, and Ra's old word (port B) is written to Wd if Rb[0] = 1,
        # else back to Ra; in t + 2 Wd's old word (port B) is written to Ra if Rb[0] = 1, else back
        # to Wd. One write slot per cycle (the ALU's, through PSB), both registers written either
        # way, the secret bit choosing only the write addresses.
        cs_ex = Signal()
        swap = Signal()
        self.comb += [
            cs_ex.eq(ex_v & (ex_kind == dec.K_CSWAP)),
            swap.eq(rf.ra.dat_r[0]),
            # issue (t): operands; a CSWAP reads its condition Rb on port A
            If(self.bus_ok,
                rf.ra.adr.eq(self.bus_rf_adr),
            ).Elif(d_kind == dec.K_CSWAP,
                rf.ra.adr.eq(row(fld["rb"], fld["cb"])),
            ).Else(
                rf.ra.adr.eq(row(fld["ra"], fld["ca"])),
            ),
            # port B: CSWAP's Wd in t + 1 (its Ra at issue); in pass 1 of FADD/FSUB, p for pass 2
            # (always: pass 2's `fix` decides whether its word is written, alu.py); at issue, what
            # the op's B operand is (alu.B_*)
            If(cs_ex,
                rf.rb.adr.eq(base | ex_wd),
            ).Elif(ex_v & (ex_kind == dec.K_ALU) & ex_two,
                rf.rb.adr.eq(hw_rows[alu_mod.B_P]),
            ).Elif(d_kind == dec.K_CSWAP,
                rf.rb.adr.eq(base | fld["ra"]),
            ).Else(
                Case(d_bsrc, {
                    alu_mod.B_REG: rf.rb.adr.eq(row(fld["rb"], fld["cb"])),
                    alu_mod.B_RA: rf.rb.adr.eq(row(fld["ra"], fld["ca"])),
                    **{k: rf.rb.adr.eq(v) for k, v in hw_rows.items()},
                }),
            ),
            self.bus_rf_dat_r.eq(rf.ra.dat_r),
        ]
        # write ports: ALU results and both CSWAP writes (port B's word through the ALU as PSB)
        # on wa; products on wm, or the bus's word while it owns the register file (no product
        # is written then: idle, or paused with every multiplier's countdown frozen), with the
        # array's per-word enables (`keep`), so the bus's 32-bit write needs no merge
        alu_we = Signal()
        self.comb += [
            # FADD / FSUB write pass 1's word (t + 1) and, when the ALU's fix says so, pass 2's
            # corrected word over it (t + 2): readable at t + 3 either way (the scoreboard keeps
            # every reader of Wd off it until then)
            alu_we.eq(((ex_v & (ex_kind == dec.K_ALU)) | (p2 & alu.fix)) & en),
            rf.wa.adr.eq(base | Mux(cs_ex, Mux(swap, ex_wd, ex_ra), Mux(cs2, Mux(cs_swap, ex_ra, ex_wd), ex_wd))),
            rf.wa.dat_w.eq(alu.q), rf.wa.we.eq(~self.bus_ok & (alu_we | ((cs_ex | cs2) & en))),
        ]
        mwe = Signal()
        madr = Signal(5)
        mdat = Signal(256)
        for u in reversed(range(nmul)):
            self.comb += If(mcnt[u] == 1, mwe.eq(en), madr.eq(mwd[u]), mdat.eq(self.muls[u].q))
        self.comb += If(self.bus_ok,
            rf.wm.adr.eq(self.bus_rf_adr), rf.wm.dat_w.eq(self.bus_rf_dat_w), rf.wm.we.eq(self.bus_rf_we),
            rf.wm.keep.eq(self.bus_rf_keep),
        ).Else(
            rf.wm.adr.eq(base | madr), rf.wm.dat_w.eq(mdat), rf.wm.we.eq(mwe),
        )
        for u, m in enumerate(self.muls):
            self.comb += [m.a.eq(opa), m.b.eq(opb), m.start.eq(mstart[u])]

        # BRZ resolution (cycle t + 1)
        imm_ext = Signal(len(self.mpc))
        target = Signal(len(self.mpc))
        zero = Signal()
        self.comb += [
            imm_ext.eq(Cat(ex_imm, Replicate(ex_imm[-1], len(self.mpc) - len(ex_imm)))),
            target.eq(ex_mpc + imm_ext + 1),
            zero.eq(opa == 0),
        ]

        resume = Signal()                 # the last paused cycle (pause_req cleared)
        self.comb += [
            self.running.eq(state != IDLE),
            self.pause_gnt.eq(paused),
            resume.eq(paused & ~self.pause_req),
            fetch.eq(((state == IDLE) & self.go) | ((state != IDLE) & ~paused) | resume),
            self.bus_ok.eq((state == IDLE) | (paused & ~resume)),
        ]
        finish = Signal()
        self.comb += finish.eq((state == HALT) & en & cost_ok & drained)
        can_pause = Signal()
        self.comb += can_pause.eq((state == RUN) & cost_ok & ~ex_v & ~cs2 & ~p2)

        brz_halt = Signal()
        self.comb += brz_halt.eq(Mux(zero, (target == stop) | (target < start) | (target > stop), ex_mpc == stop))
        brz_ex = Signal()
        self.comb += brz_ex.eq(ex_v & (ex_kind == dec.K_BRZ))
        # the word to fetch, from registers (and BRZ's zero test) only: mpc_next exactly where it
        # does not depend on an issue (GO, resume, a BRZ's next word; a BRZ that halts fetches a
        # word nobody uses), else mpc + 1, read only when mpc moves there (`stay` low)
        self.comb += [
            If(state == IDLE,
                fetch_adr.eq(self.mpstart),
            ).Elif(paused,
                fetch_adr.eq(self.mpc),
            ).Elif(brz_ex,
                fetch_adr.eq(Mux(zero, target, ex_mpc + 1)),
            ).Else(
                fetch_adr.eq(self.mpc + 1),
            ),
        ]
        # mpc stays unless it advances past an issued word; running, outside a BRZ's execute
        # cycle, mpc_next is mpc or mpc + 1, so `stay` is whether it advances (no 10-bit equality:
        # a carry chain at the end of the loop)
        advance = Signal()
        self.comb += [
            advance.eq(is_issue & (d_kind != dec.K_ILLEGAL) & (d_kind != dec.K_FIN) & (d_kind != dec.K_BRZ) & (self.mpc != stop)),
            # (mpc_next below, running, outside a pause and a BRZ's execute cycle: mpc + 1 on an
            # advance unless the engine pauses now, else mpc; written out from those terms so that
            # neither GO nor an MPRESUME write, CSR decodes of the bus's address in mpc_next, is
            # in front of the RAM's enable)
            # The ECP5 form has it that way; the generic one (xc7) compares bit 0 of mpc_next and
            # mpc, the same function, which yosys builds about 120 LUTs smaller on xc7)
            stay.eq((state != IDLE) & ~paused & ~brz_ex & (
                ~(advance & ~(can_pause & self.pause_req)) if form == "ecp5" else (mpc_next[0] == self.mpc[0]))),
        ]
        self.comb += [
            mpc_next.eq(self.mpc),
            If(state == IDLE,
                If(self.go, mpc_next.eq(self.mpstart)),
            ).Elif(paused,
                If(self.mpresume_we & ~resume, mpc_next.eq(self.mpresume_dat)),
            ).Elif(~(can_pause & self.pause_req),
                If(ex_v & (ex_kind == dec.K_BRZ) & ~brz_halt,
                    mpc_next.eq(Mux(zero, target, ex_mpc + 1)),
                ),
                If(advance,
                    mpc_next.eq(self.mpc + 1),
                ),
            ),
        ]

        countdown = [If(cost != 0, cost.eq(cost - 1))] + \
            [If(ready[r] != 0, ready[r].eq(ready[r] - 1)) for r in range(nregs)] + \
            [If(mcnt[u] != 0, mcnt[u].eq(mcnt[u] - 1)) for u in range(nmul)]

        self.sync += [
            self.mpc.eq(mpc_next),
            self.ev_pulse.eq(0),
            *[mstart[u].eq(0) for u in range(nmul)],
            If(state == IDLE,
                If(self.go,
                    state.eq(RUN), start.eq(self.mpstart), stop.eq(self.mpstart + self.mplen - 1),
                    win.eq(self.window),
                    cost.eq(I.go_cycles - 1), self.cycles.eq(I.go_cycles), self.instructions.eq(0),
                    *[ready[r].eq(0) for r in range(nregs)], *[mcnt[u].eq(0) for u in range(nmul)],
                    ex_v.eq(0), cs2.eq(0), p2.eq(0), self.finished.eq(0), self.illegal.eq(0), halt_ill.eq(0),
                ),
            ).Elif(paused,
                If(~self.pause_req, paused.eq(0)),
            ).Elif(can_pause & self.pause_req,
                paused.eq(1),
            ).Else(
                self.cycles.eq(self.cycles + 1),
                *countdown,
                ex_v.eq(0),
                cs2.eq(0),
                p2.eq(0),
                # ---- execute stage
                If(ex_v & (ex_kind == dec.K_BRZ) & brz_halt, state.eq(HALT)),
                If(cs_ex, cs2.eq(1), cs_swap.eq(swap)),
                If(ex_v & (ex_kind == dec.K_ALU) & ex_two, p2.eq(1), actl.eq(ex_ctl2)),
                # ---- issue
                If(is_issue,
                    self.instruction.eq(word),
                    If(d_kind == dec.K_ILLEGAL,
                        state.eq(HALT), halt_ill.eq(1), cost.eq(d_cycles - 1),
                    ).Else(
                        self.instructions.eq(self.instructions + 1),
                        cost.eq(d_cycles - 1),
                        ex_v.eq(1), ex_kind.eq(d_kind), actl.eq(d_ctl), ex_ctl2.eq(d_ctl2), ex_two.eq(d_two), ex_wd.eq(fld["wd"]),
                        ex_ra.eq(fld["ra"]),
                        ex_mpc.eq(self.mpc), ex_imm.eq(fld["imm"]),
                        *[If(d_writes & (fld["wd"] == r), ready[r].eq(d_lat - 1)) for r in range(nregs)],
                        *[If((d_kind == dec.K_CSWAP) & (fld["ra"] == r), ready[r].eq(d_lat - 1)) for r in range(nregs)],
                        If(d_kind == dec.K_MUL,
                            *[If(unit == u, mcnt[u].eq(d_lat - 1), mwd[u].eq(fld["wd"]), mstart[u].eq(1)) for u in range(nmul)],
                        ),
                        If(d_kind == dec.K_FIN,
                            state.eq(HALT),
                        ).Elif(d_kind != dec.K_BRZ,
                            If(self.mpc == stop, state.eq(HALT)),
                        ),
                    ),
                ),
                If(finish,
                    state.eq(IDLE),
                    self.cycles.eq(self.cycles),
                    self.finished.eq(~halt_ill), self.illegal.eq(halt_ill),
                    self.ev_pulse.eq(Cat(~halt_ill, halt_ill)),
                ),
            ),
        ]
