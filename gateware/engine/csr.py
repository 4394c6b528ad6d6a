"""CSR block, memory window and interrupt of the engine, laid out from the spec's `[csr]` and
`[memory]` tables (offsets, field positions and widths, the undecoded-read word are read from
spec/engine25519.toml; this file only binds each spec field to the engine signal it means, and a
test checks that every spec field is bound and nothing else is).

Bus (one access at a time): `csr_sel` or `mem_sel` with `adr` (byte offset in that space),
`we`, `dat_w`; `stb` starts the access, `ack` ends it (`dat_r` valid with `ack`). Memory-window
accesses wait while a job runs and the engine is not paused (the spec's stall). A 32-bit write
into a register takes two cycles (a read, then the write of that one word: the register file's
array has per-word write enables). `irq` is the OR of
pending & enabled events.
"""

from __future__ import annotations

from migen import Cat, If, Module, Mux, Signal

from . import spec
from .sequencer import Engine

# spec (register, field) -> how it is bound: ("rw", signal) storage driving the engine,
# ("ro", expr) status, ("go",) the GO pulse, ("resume",) MPRESUME, ("ev",) event registers
def _bindings(e: Engine, st: dict, events: dict, instruction_fields):
    return {
        ("WINDOW", "window"): ("rw", e.window),
        ("MPSTART", "mpstart"): ("rw", e.mpstart),
        ("MPLEN", "mplen"): ("rw", e.mplen),
        ("CONTROL", "go"): ("go",),
        ("MPRESUME", "mpresume"): ("resume",),
        ("POWER", "on"): ("rw", st["on"]),
        ("POWER", "pause_req"): ("rw", e.pause_req),
        ("STATUS", "running"): ("ro", e.running),
        ("STATUS", "mpc"): ("ro", e.mpc),
        ("STATUS", "pause_gnt"): ("ro", e.pause_gnt),
        ("EV_STATUS", "finished"): ("ro", e.finished),
        ("EV_STATUS", "illegal_opcode"): ("ro", e.illegal),
        ("EV_PENDING", "finished"): ("pending", events["finished"]),
        ("EV_PENDING", "illegal_opcode"): ("pending", events["illegal_opcode"]),
        ("EV_ENABLE", "finished"): ("rw", st["en_finished"]),
        ("EV_ENABLE", "illegal_opcode"): ("rw", st["en_illegal_opcode"]),
    } | {
        # the instruction word in Precursor's field layout (the spec's [encoding] fields)
        ("INSTRUCTION", f.name): ("ro", e.instruction[f.lsb:f.lsb + f.width]) for f in instruction_fields
    }


class EngineBus(Module):
    """`stock`: build the CSR block as the shipped engine has it, bus defects included
    (docs/reference-system.md): MPRESUME is read-only and undriven (reads 0, writes ignored),
    so a paused job cannot be resumed at a chosen point. Only for the v1 ISA. `target`: the
    FPGA the datapath's forms are for (engine/dsp.py)."""

    def __init__(self, isa: str, stock: bool = False, target: str = "generic"):
        assert not stock or isa == "v1", "the shipped engine is v1"
        s = spec.load()
        m = s.memory
        g = s.geometry
        self.submodules.engine = e = Engine(isa, target=target)
        self.csr_sel = Signal()
        self.mem_sel = Signal()
        self.adr = Signal(32)
        self.we = Signal()
        self.dat_w = Signal(32)
        self.stb = Signal()
        self.ack = Signal()
        self.dat_r = Signal(32)
        self.irq = Signal()

        st = {"on": Signal(reset=0), "en_finished": Signal(), "en_illegal_opcode": Signal()}
        pend = {"finished": Signal(), "illegal_opcode": Signal()}
        self.binding = b = _bindings(e, st, pend, s.csr.registers["INSTRUCTION"].fields.values())
        self.comb += self.irq.eq((pend["finished"] & st["en_finished"]) | (pend["illegal_opcode"] & st["en_illegal_opcode"]))
        # events latch into pending on the engine's one-cycle pulses
        self.sync += [If(e.ev_pulse[0], pend["finished"].eq(1)), If(e.ev_pulse[1], pend["illegal_opcode"].eq(1))]

        # ---- CSR reads and writes (one cycle)
        csr_rd = Signal(32)
        cases_r, writes = [], []
        for name, reg in s.csr.registers.items():
            hit = Signal(name=f"hit_{name.lower()}")
            self.comb += hit.eq(self.adr == reg.offset)
            val = Signal(32, name=f"val_{name.lower()}")
            for fname, f in reg.fields.items():
                kind = b[(name, fname)]
                src = {"rw": lambda: kind[1], "ro": lambda: kind[1], "pending": lambda: kind[1],
                       "resume": lambda: 0 if stock else e.mpc, "go": lambda: 0}[kind[0]]()
                self.comb += val[f.lsb:f.lsb + f.width].eq(src)
                wv = self.dat_w[f.lsb:f.lsb + f.width]
                wr = self.stb & self.csr_sel & self.we & hit
                if kind[0] == "rw" and "w" in reg.access:
                    writes.append(If(wr, kind[1].eq(wv)))
                elif kind[0] == "pending":
                    writes.append(If(wr & wv[0], kind[1].eq(0)))
                elif kind[0] == "go":
                    # GO reaches the sequencer one eng_clk after its write, from a register:
                    # the bus adapter's request and the CSR decode are not in front of the
                    # enables of the sequencer's state (a sys_clk -> eng_clk path of 10.13 ns
                    # against 10 placed on an ECP5-6, v1). The job's own cycle count is
                    # unchanged (it counts from the GO the sequencer sees); the write's
                    # acknowledge is where it was, and the next bus access starts after it,
                    # when the job already runs (STATUS, the window's stall)
                    go_q = Signal(name="go_q")
                    self.sync += go_q.eq(wr & wv[0])
                    self.comb += e.go.eq(go_q)
                elif kind[0] == "resume" and not stock:
                    self.comb += [e.mpresume_we.eq(wr), e.mpresume_dat.eq(wv)]
            cases_r.append(If(hit, csr_rd.eq(val)))
        self.comb += cases_r
        self.sync += writes

        # ---- memory window
        uc0, ucn = m["ucode_offset"], m["ucode_offset"] + m["ucode_size"]
        rf0, rfn = m["rf_offset"], m["rf_offset"] + m["rf_size"]
        ws, rs = m["window_stride"], m["reg_stride"]
        regs = g["regs_per_window"]
        lws, lrs = ws.bit_length() - 1, rs.bit_length() - 1
        assert ws == 1 << lws and rs == 1 << lrs and rs == 4 * g["reg_bits"] // 32, "strides must be powers of two"
        in_uc = Signal()
        in_rf = Signal()
        rel = Signal(32)
        win = Signal(8)
        reg = Signal(8)
        word = Signal(3)
        # both regions are aligned powers of two: membership is an equality of the high address
        # bits and the offset is the low bits (no subtraction or comparison: each is a carry
        # chain after the bus adapter's registers, on the way into the microcode RAM's port)
        luc, lrf = m["ucode_size"].bit_length() - 1, m["rf_size"].bit_length() - 1
        assert m["ucode_size"] == 1 << luc and uc0 % (1 << luc) == 0, "the microcode window is an aligned power of two"
        assert m["rf_size"] == 1 << lrf and rf0 % (1 << lrf) == 0, "the register window is an aligned power of two"
        self.comb += [
            in_uc.eq((self.adr[luc:] == uc0 >> luc) & (self.adr[:2] == 0)),
            rel.eq(self.adr[:lrf]),
            win.eq(rel[lws:]), reg.eq(rel[lrs:lws]), word.eq(rel[2:lrs]),
            in_rf.eq((self.adr[lrf:] == rf0 >> lrf) & (self.adr[:2] == 0) & (reg < regs) & (win < g["windows"])),
            e.bus_uc_sel.eq(self.mem_sel),
            e.bus_rf_adr.eq(win * regs + reg),
        ]
        # access FSM: 0 idle, 1 wait for the RF / microcode read (data next cycle), 2 RF write
        phase = Signal(2)
        # a 32-bit write into a register: the bus's word on every word of the row, the array's
        # per-word enables keeping all but word `word` (regfile.py, `keep`): no read-modify-write
        # merge. The access keeps its phases (a read in phase 1, the write in phase 2), so bus
        # timing is what it was with the merge.
        self.comb += [
            e.bus_rf_dat_w.eq(Cat(*[self.dat_w] * 8)),
            e.bus_rf_keep.eq(Cat(*[word != j for j in range(8)])),
        ]
        rf_word = Signal(32)
        self.comb += [If(word == k, rf_word.eq(e.bus_rf_dat_r[32 * k:32 * k + 32])) for k in range(8)]
        # a microcode word is written in the cycle its access is acknowledged, from registers
        # (address, word, enable) taken when the access is decoded: the bus's request and the
        # window's decode are not in front of the RAM's enable (a sys_clk -> eng_clk path into
        # the RAM's port, 11.2 ns of a 10 ns budget placed on the ECP5). The acknowledge is in
        # that cycle as before, so bus timing is unchanged; the next access (a GO among them)
        # starts after it.
        uc_we_q = Signal()
        uc_adr_q = Signal(len(e.bus_uc_adr))
        uc_dat_q = Signal(32)
        self.sync += [
            uc_we_q.eq(self.stb & self.mem_sel & ~self.ack & self.we & in_uc & e.bus_ok & (phase == 0)),
            uc_adr_q.eq(self.adr[2:luc]), uc_dat_q.eq(self.dat_w),
        ]
        self.comb += [
            e.bus_uc_adr.eq(Mux(uc_we_q, uc_adr_q, self.adr[2:luc])),
            e.bus_uc_dat_w.eq(uc_dat_q),
            e.bus_uc_we.eq(uc_we_q),
            e.bus_rf_we.eq((phase == 2)),
        ]
        self.sync += [
            self.ack.eq(0),
            If(self.stb & self.csr_sel & ~self.ack,
                self.ack.eq(1), self.dat_r.eq(csr_rd),
            ).Elif(self.stb & self.mem_sel & ~self.ack,
                If(phase == 0,
                    If(~in_uc & ~in_rf,
                        self.ack.eq(1), self.dat_r.eq(m["undecoded_read"]),
                    ).Elif(e.bus_ok,
                        If(in_uc & self.we, self.ack.eq(1)).Else(phase.eq(1)),
                    ),
                ).Elif(phase == 1,
                    If(in_uc, self.ack.eq(1), self.dat_r.eq(e.bus_uc_dat_r), phase.eq(0),
                    ).Elif(self.we, phase.eq(2)).Else(self.ack.eq(1), self.dat_r.eq(rf_word), phase.eq(0)),
                ).Elif(phase == 2,
                    self.ack.eq(1), phase.eq(0),
                ),
            ),
        ]
        self.ios = {self.csr_sel, self.mem_sel, self.adr, self.we, self.dat_w, self.stb, self.ack, self.dat_r, self.irq}
