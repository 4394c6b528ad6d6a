"""The TRNG block with its two register pages (server and kernel), laid out from spec/trng.toml's
`[regs.server]` and `[regs.kernel]` tables by gateware/common/csr.py: offsets, field positions,
widths and access come from the spec (Precursor's map, plus additions at offsets it leaves free);
this file binds each spec field to the signal it means (`server_bindings` / `kernel_bindings`),
and a test checks that every spec field is bound and nothing else is.

Datapath (docs/trng-gateware.md has the diagram):

    av_s0/av_s1 (12-bit, av_valid) --> HealthTests av_0, av_1 (low symbol bits) + Excursion av_0, av_1
                                   --> AvFold (AV_CONFIG.samples pairs per word; AV_CONFIG.test:
                                       each sample pair as one word)
    ro_bits[0..3] (ro_valid)       --> HealthTests ro_0..ro_3 + RunsTest ro_0..ro_3
                                   --> XOR --> RoPack (32 bits per word)
    av word ^ ro word (each if enabled) --> conditioner (when it needs a word), else the raw FIFOs
    (kernel and server, each refilled from below fifo_refill_below until full; alternating when
    both refill)

Gating: the sources run while CONTROL.enable is set; AV samples are ignored for
AV_CONFIG.powerdelay microseconds (powerdelay_unit_cycles each) after the AV channels are enabled
(EXT_STATUS.av_hold). While any SP 800-90B or excursion condition fails (TrngCore.ok = 0), the
conditioner is wiped, both raw FIFOs are flushed and the word being assembled is dropped: no raw
or conditioned word leaves a failing block. The runs tests (NIST_ERRORS.ro_miniruns) are
reported only, as on Precursor. CONTROL.clr_err clears the latches, the underrun counters and
restarts the start-up tests.

Interrupts: each page's `irq` is the OR of its pending & enabled events. Server events: avail
(the server raw FIFO became non-empty), error (a DATA read of an empty server FIFO), health (any
source's RCT/APT or runs failure), excursion0 and excursion1 (each AV channel's own excursion
failure; the reference assigned channel 0's trigger twice so channel 1 never interrupted).
Kernel events: avail (the kernel raw FIFO became non-empty), error (a kernel DATA read of an
empty FIFO). Per-source lines `irq_source` (one per health-tested source) are exported too.

Read side effects (once per bus access): URANDOM reads empty the port (read-invalidate), DATA
reads pop the raw FIFO, NIST_*_STATn reads clear that source's `fresh` bit, RO_RUNn_COUNTk reads
clear bit k-1 of RO_RUNn_FRESH. TEST.simultaneous empties both URANDOM ports in one cycle.

The front-end configuration fields (RO_CONFIG, CONTROL.powersave) drive the `fe_*` outputs that
the ring-oscillator front end and the simulation noise source consume.
"""

from __future__ import annotations

from functools import reduce
from operator import or_

from migen import C, Cat, If, Module, Mux, Signal

from common.csr import CsrPage

from . import spec as trng_spec
from .core import TrngCore
from .excursion import Excursion
from .fifo import RawFifo
from .runs import RunsTest
from .words import AvFold, RoPack


def count_bits(s) -> int:
    """Width of the health-test counters: enough for the longest window and the start-up test."""
    m = max(s.health["av"]["apt_window"], s.health["ro"]["apt_window"], s.health["startup_samples"])
    return m.bit_length()


class TrngBus(Module):
    def __init__(self, s=None):
        s = s or trng_spec.load()
        self.spec = s
        av, ro = s.health["av"], s.health["ro"]
        n_av, n_ro = av["channels"], ro["cores"]
        poison = s.constants["urandom_invalid"]
        sbits = av["sample_bits"]

        # ---- source inputs (front ends or the simulation noise source)
        self.av_s = [Signal(sbits, name=f"av_s{i}") for i in range(n_av)]
        self.av_valid = Signal()
        self.ro_bits = Signal(n_ro)
        self.ro_valid = Signal()
        # ---- front-end controls
        self.fe_av_en = Signal()
        self.fe_ro_en = Signal()
        self.fe_powersave = Signal()
        self.fe_need = Signal()      # something wants raw words (conditioner or a refilling FIFO)
        self.fe_ro = {}              # RO_CONFIG fields by name
        # ---- bus: one access at a time to either page
        self.server_sel = Signal()
        self.kernel_sel = Signal()
        self.adr = Signal(16)
        self.we = Signal()
        self.dat_w = Signal(32)
        self.stb = Signal()
        self.ack = Signal()
        self.dat_r = Signal(32)
        self.irq_server = Signal()
        self.irq_kernel = Signal()
        self.irq_source = Signal(n_av + n_ro)

        # # #

        cb = count_bits(s)
        self.submodules.core = core = TrngCore([av["symbol_bits"]] * n_av + [ro["symbol_bits"]] * n_ro, poison, cb)
        h_av, h_ro = core.health[:n_av], core.health[n_av:]
        sr = s.server.registers
        self.exc = [Excursion(sbits, sr["AV_EXCURSION0_CTRL"].fields["window"].width) for _ in range(n_av)]
        for i, e in enumerate(self.exc):
            setattr(self.submodules, f"exc{i}", e)
        rr = s.health["ro_runs"]
        n_runs = rr["runs"]
        self.runs = [RunsTest(n_runs, rr["count_bits"]) for _ in range(n_ro)]
        for i, r in enumerate(self.runs):
            setattr(self.submodules, f"runs{i}", r)
        self.submodules.avfold = avfold = AvFold(sbits, av["fold_rotate"])
        self.submodules.ropack = ropack = RoPack()
        c = s.constants
        self.submodules.kfifo = kfifo = RawFifo(c["fifo_depth"], c["fifo_refill_below"], poison)
        self.submodules.sfifo = sfifo = RawFifo(c["fifo_depth"], c["fifo_refill_below"], poison)
        cond = core.cond

        # storage (reset values: the spec's defaults where it has them)
        st = {
            "enable": Signal(), "ro_dis": Signal(), "av_dis": Signal(), "powersave": Signal(),
            "powerdelay": Signal(sr["AV_CONFIG"].fields["powerdelay"].width),
            "samples": Signal(sr["AV_CONFIG"].fields["samples"].width, reset=av["pairs_per_word"]),
            "av_test": Signal(), "av_required": Signal(reset=1),
            "seed": Signal(32),
            "reseed_interval": Signal(12, reset=s.conditioner["reseed_interval"]),
            "selfmix_interval": Signal(16, reset=s.conditioner["selfmix_interval"]),
            "selfmix_ena": Signal(reset=int(s.conditioner["selfmix_enable"])),
        }
        for name, f in sr["RO_CONFIG"].fields.items():
            self.fe_ro[name] = Signal(f.width, name=f"ro_{name}")
        cut = {k: (Signal(sr[f"{k.upper()}_NIST"].fields["repcount_cutoff"].width, name=f"{k}_rct"),
                   Signal(sr[f"{k.upper()}_NIST"].fields["adaptive_cutoff"].width, name=f"{k}_apt")) for k in ("av", "ro")}
        und = {"server": Signal(sr["UNDERRUNS"].fields["server_underrun"].width),
               "kernel": Signal(sr["UNDERRUNS"].fields["kernel_underrun"].width)}
        clr = Signal()
        clr_und = Signal()
        simultaneous = Signal()
        seed_we = Signal()
        # excursion tests (AV_EXCURSIONn_CTRL) and runs tests (RO_RUNn_CTRL, RO_RUNSLIMITk)
        exc_cut = [Signal(sbits, name=f"exc{i}_cutoff", reset=av["excursion_min_range"]) for i in range(n_av)]
        exc_win = [Signal(len(e.window), name=f"exc{i}_window", reset=av["excursion_window"]) for i, e in enumerate(self.exc)]
        exc_rst = [Signal(name=f"exc{i}_reset") for i in range(n_av)]
        run_win = [Signal(rr["count_bits"], name=f"run{j}_window", reset=rr["window"]) for j in range(n_ro)]
        run_min = [Signal(rr["count_bits"], name=f"runs_min{k + 1}", reset=rr[f"min{k + 1}"]) for k in range(n_runs)]
        run_max = [Signal(rr["count_bits"], name=f"runs_max{k + 1}", reset=rr[f"max{k + 1}"]) for k in range(n_runs)]
        run_re = [[Signal(name=f"run{j}_re{k + 1}") for k in range(n_runs)] for j in range(n_ro)]
        # read strobes
        rs_data, rs_urnd = Signal(), Signal()
        rk_data, rk_urnd = Signal(), Signal()
        last_s, last_k = Signal(), Signal()
        stat_re = [Signal(name=f"stat_re{i}") for i in range(n_av + n_ro)]
        fresh = [Signal(name=f"fresh{i}") for i in range(n_av + n_ro)]
        ev_s = {k: Signal(name=f"pend_{k}") for k in sr["EV_PENDING"].fields}
        en_s = {k: Signal(name=f"en_{k}") for k in sr["EV_ENABLE"].fields}
        ev_k = {k: Signal(name=f"kpend_{k}") for k in s.kernel.registers["EV_PENDING"].fields}
        en_k = {k: Signal(name=f"ken_{k}") for k in s.kernel.registers["EV_ENABLE"].fields}

        av_hold = Signal()
        health_any = Signal()
        self.comb += health_any.eq(reduce(or_, [h.rct_latched | h.apt_latched for h in core.health]))
        runs_any = Signal()
        self.comb += runs_any.eq(reduce(or_, [r.failure for r in self.runs]))
        status_ev = {
            "avail": sfifo.readable,
            "error": (und["server"] != 0) | (und["kernel"] != 0),
            "health": health_any | runs_any,
        } | {f"excursion{i}": e.latched for i, e in enumerate(self.exc)}
        self.status_ev = status_ev

        def lat(hs, attr):
            return Cat(*[getattr(h, attr) for h in hs])

        sb = {
            ("CONTROL", "enable"): ("rw", st["enable"]),
            ("CONTROL", "ro_dis"): ("rw", st["ro_dis"]),
            ("CONTROL", "av_dis"): ("rw", st["av_dis"]),
            ("CONTROL", "powersave"): ("rw", st["powersave"]),
            ("CONTROL", "clr_err"): ("pulse", clr),
            ("DATA", "data"): ("rstrobe", sfifo.dout, rs_data),
            ("STATUS", "avail"): ("ro", sfifo.readable),
            ("STATUS", "rdcount"): ("ro", sfifo.rdcount),
            ("STATUS", "wrcount"): ("ro", sfifo.wrcount),
            ("STATUS", "full"): ("ro", ~kfifo.writable & ~sfifo.writable),
            ("STATUS", "chacha_ready"): ("ro", cond.seeded),
            ("EXT_ID", "id"): ("ro", C(s.constants["ext_id"], 32)),
            ("EXT_STATUS", "av_excursion"): ("ro", Cat(*[e.latched for e in self.exc])),
            ("EXT_STATUS", "av_hold"): ("ro", av_hold),
            ("EXT_STATUS", "ro_health"): ("ro", reduce(or_, [h.rct_latched | h.apt_latched for h in h_ro])),
            ("EXT_STATUS", "av_health"): ("ro", Cat(*[h.rct_latched | h.apt_latched for h in h_av])),
            ("EXT_CONTROL", "clr_underruns"): ("pulse", clr_und),
            ("AV_CONFIG", "powerdelay"): ("rw", st["powerdelay"]),
            ("AV_CONFIG", "samples"): ("rw", st["samples"]),
            ("AV_CONFIG", "test"): ("rw", st["av_test"]),
            ("AV_CONFIG", "required"): ("rw", st["av_required"]),
            ("AV_NIST", "repcount_cutoff"): ("rw", cut["av"][0]),
            ("AV_NIST", "adaptive_cutoff"): ("rw", cut["av"][1]),
            ("RO_NIST", "repcount_cutoff"): ("rw", cut["ro"][0]),
            ("RO_NIST", "adaptive_cutoff"): ("rw", cut["ro"][1]),
            ("UNDERRUNS", "server_underrun"): ("ro", und["server"]),
            ("UNDERRUNS", "kernel_underrun"): ("ro", und["kernel"]),
            ("NIST_ERRORS", "av_repcount"): ("ro", lat(h_av, "rct_latched")),
            ("NIST_ERRORS", "av_adaptive"): ("ro", lat(h_av, "apt_latched")),
            ("NIST_ERRORS", "ro_repcount"): ("ro", lat(h_ro, "rct_latched")),
            ("NIST_ERRORS", "ro_adaptive"): ("ro", lat(h_ro, "apt_latched")),
            ("NIST_ERRORS", "ro_miniruns"): ("ro", Cat(*[r.failure for r in self.runs])),
            ("CHACHA", "reseed_interval"): ("rw", st["reseed_interval"]),
            ("CHACHA", "selfmix_interval"): ("rw", st["selfmix_interval"]),
            ("CHACHA", "selfmix_ena"): ("rw", st["selfmix_ena"]),
            ("SEED", "seed"): ("rwstrobe", st["seed"], seed_we),
            ("URANDOM", "urandom"): ("rstrobe", cond.sport.dout, rs_urnd),
            ("URANDOM_VALID", "urandom_valid"): ("ro", cond.sport.valid),
            ("URANDOM_LAST", "last"): ("ro", last_s),
            ("TEST", "simultaneous"): ("pulse", simultaneous),
        }
        for name in self.fe_ro:
            sb[("RO_CONFIG", name)] = ("rw", self.fe_ro[name])
        # per-source statistics: register k of each kind reads source k's own test (the
        # reference read RO cores 2 and 3 from core 1's register)
        for kind, hs, base in (("RO", h_ro, n_av), ("AV", h_av, 0)):
            for k, h in enumerate(hs):
                reg = f"NIST_{kind}_STAT{k}"
                sb[(reg, "adap_b")] = ("rstrobe", h.apt_last_b, stat_re[base + k])
                sb[(reg, "fresh")] = ("ro", fresh[base + k])
                rep_w = sr[reg].fields["rep_b"].width
                sb[(reg, "rep_b")] = ("ro", Mux(h.rct_max_run >> rep_w != 0, (1 << rep_w) - 1, h.rct_max_run[:rep_w]))
        for i, e in enumerate(self.exc):
            sb[(f"AV_EXCURSION{i}_CTRL", "cutoff")] = ("rw", exc_cut[i])
            sb[(f"AV_EXCURSION{i}_CTRL", "reset")] = ("pulse", exc_rst[i])
            sb[(f"AV_EXCURSION{i}_CTRL", "window")] = ("rw", exc_win[i])
            sb[(f"AV_EXCURSION{i}_STAT", "min")] = ("ro", e.min)
            sb[(f"AV_EXCURSION{i}_STAT", "max")] = ("ro", e.max)
            sb[(f"AV_EXCURSION{i}_LAST_ERR", "min")] = ("ro", e.err_min)
            sb[(f"AV_EXCURSION{i}_LAST_ERR", "max")] = ("ro", e.err_max)
        for k in range(n_runs):
            sb[(f"RO_RUNSLIMIT{k + 1}", "min")] = ("rw", run_min[k])
            sb[(f"RO_RUNSLIMIT{k + 1}", "max")] = ("rw", run_max[k])
        for j, r in enumerate(self.runs):
            sb[(f"RO_RUN{j}_CTRL", "window")] = ("rw", run_win[j])
            sb[(f"RO_RUN{j}_FRESH", f"ro_run{j}_fresh")] = ("ro", r.fresh)
            for k in range(n_runs):
                sb[(f"RO_RUN{j}_COUNT{k + 1}", f"ro_run{j}_count{k + 1}")] = ("rstrobe", r.count[k], run_re[j][k])
        sb[("READY", "av_excursion")] = ("ro", Cat(*[e.ready for e in self.exc]))
        sb[("READY", "av_adaprop")] = ("ro", Cat(*[h.ok for h in h_av]))
        sb[("READY", "ro_adaprop")] = ("ro", Cat(*[h.ok for h in h_ro]))
        for k in sr["EV_STATUS"].fields:
            sb[("EV_STATUS", k)] = ("ro", status_ev[k])
            sb[("EV_PENDING", k)] = ("pending", ev_s[k])
            sb[("EV_ENABLE", k)] = ("rw", en_s[k])

        kr = s.kernel.registers
        kb = {
            ("STATUS", "ready"): ("ro", core.ok & cond.seeded),
            ("STATUS", "avail"): ("ro", kfifo.readable),
            ("STATUS", "rdcount"): ("ro", kfifo.rdcount),
            ("STATUS", "wrcount"): ("ro", kfifo.wrcount),
            ("DATA", "data"): ("rstrobe", kfifo.dout, rk_data),
            ("URANDOM", "urandom"): ("rstrobe", cond.kport.dout, rk_urnd),
            ("URANDOM_VALID", "urandom_valid"): ("ro", cond.kport.valid),
            ("URANDOM_LAST", "last"): ("ro", last_k),
            ("EXT_ID", "id"): ("ro", C(s.constants["ext_id"], 32)),
            ("EV_STATUS", "avail"): ("ro", kfifo.readable),
            ("EV_STATUS", "error"): ("ro", und["kernel"] != 0),
        }
        for k in ev_k:
            kb[("EV_PENDING", k)] = ("pending", ev_k[k])
            kb[("EV_ENABLE", k)] = ("rw", en_k[k])
        self.server_bindings, self.kernel_bindings = sb, kb
        # DATA reads the raw FIFO's block RAM (its output 5.8 ns after the clock on an ECP5):
        # muxed after the offset case (common/csr.py `late`)
        self.submodules.spage = sp = CsrPage(sr, sb, undecoded=poison, late=("DATA",))
        self.submodules.kpage = kp = CsrPage(kr, kb, undecoded=poison, late=("DATA",))
        for p, sel in ((sp, self.server_sel), (kp, self.kernel_sel)):
            self.comb += [p.sel.eq(sel), p.adr.eq(self.adr), p.we.eq(self.we), p.dat_w.eq(self.dat_w), p.stb.eq(self.stb)]
        self.comb += [
            self.ack.eq(sp.ack | kp.ack),
            self.dat_r.eq(Mux(kp.ack, kp.dat_r, sp.dat_r)),
            self.irq_server.eq(reduce(or_, [ev_s[k] & en_s[k] for k in ev_s])),
            self.irq_kernel.eq(reduce(or_, [ev_k[k] & en_k[k] for k in ev_k])),
        ]

        # ---- sources, health tests, excursion tests
        av_on = Signal()
        ro_on = Signal()
        hold_left = Signal(len(st["powerdelay"]))
        unit = s.constants["powerdelay_unit_cycles"]
        unit_left = Signal(max=unit)
        av_was_on = Signal()
        self.comb += [
            av_on.eq(st["enable"] & ~st["av_dis"]),
            ro_on.eq(st["enable"] & ~st["ro_dis"]),
            av_hold.eq(av_on & (hold_left != 0)),
            self.fe_av_en.eq(av_on), self.fe_ro_en.eq(ro_on), self.fe_powersave.eq(st["powersave"]),
        ]
        self.sync += [
            av_was_on.eq(av_on),
            If(av_on & ~av_was_on,
                hold_left.eq(st["powerdelay"]), unit_left.eq(unit - 1),
            ).Elif(hold_left != 0,
                If(unit_left == 0, unit_left.eq(unit - 1), hold_left.eq(hold_left - 1)).Else(unit_left.eq(unit_left - 1)),
            ),
        ]
        self.av_take = av_take = Signal()   # the health tests take a sample this cycle
        self.ro_take = ro_take = Signal()
        self.comb += [av_take.eq(self.av_valid & av_on & ~av_hold), ro_take.eq(self.ro_valid & ro_on)]
        mask = (1 << av["symbol_bits"]) - 1
        for i, h in enumerate(h_av):
            self.comb += [h.sample.eq(self.av_s[i] & mask), h.valid.eq(av_take),
                          h.rct_cutoff.eq(cut["av"][0]), h.apt_cutoff.eq(cut["av"][1]),
                          h.apt_window.eq(av["apt_window"]), h.startup.eq(s.health["startup_samples"])]
        for i, h in enumerate(h_ro):
            self.comb += [h.sample.eq(self.ro_bits[i]), h.valid.eq(ro_take),
                          h.rct_cutoff.eq(cut["ro"][0]), h.apt_cutoff.eq(cut["ro"][1]),
                          h.apt_window.eq(ro["apt_window"]), h.startup.eq(s.health["startup_samples"])]
        for i, e in enumerate(self.exc):
            self.comb += [e.sample.eq(self.av_s[i]), e.valid.eq(av_take), e.enable.eq(av_on), e.clear.eq(core.clear),
                          e.reset.eq(exc_rst[i]), e.window.eq(exc_win[i]), e.cutoff.eq(exc_cut[i])]
        for j, r in enumerate(self.runs):
            self.comb += [r.bit.eq(self.ro_bits[j]), r.valid.eq(ro_take), r.enable.eq(ro_on), r.clear.eq(core.clear),
                          r.window.eq(run_win[j]), r.count_read.eq(Cat(*run_re[j])),
                          *[r.min[k].eq(run_min[k]) for k in range(n_runs)], *[r.max[k].eq(run_max[k]) for k in range(n_runs)]]
        self.comb += [
            core.clear.eq(clr | ~st["enable"]),
            core.source_en.eq(Cat(*([~st["av_dis"]] * n_av + [~st["ro_dis"]] * n_ro))),
            core.extra_fail.eq(reduce(or_, [e.latched for e in self.exc])),
            core.hold.eq(~st["enable"] | (st["av_dis"] & st["av_required"])),   # conditioner only
            self.irq_source.eq(core.irq_health),
        ]

        # ---- raw words: they flow while the enabled sources are healthy (AV_CONFIG.required
        # holds only the conditioner: the raw FIFOs fill from the ring oscillator alone when the
        # AV channels are disabled, for raw-source testing)
        ok = Signal()
        self.comb += ok.eq(core.raw_ok & st["enable"])
        restart = Signal()
        self.comb += restart.eq(~ok)
        self.comb += [
            avfold.s0.eq(self.av_s[0]), avfold.s1.eq(self.av_s[1]), avfold.valid.eq(av_take),
            avfold.pairs.eq(st["samples"]), avfold.restart.eq(restart | st["av_test"]),
            ropack.bit.eq(reduce(lambda a, b: a ^ b, [self.ro_bits[i] for i in range(n_ro)])),
            ropack.valid.eq(ro_take), ropack.restart.eq(restart),
        ]
        av_word, ro_word = Signal(32), Signal(32)
        av_have, ro_have = Signal(), Signal()
        word_valid = Signal()
        word = Signal(32)
        taken = Signal()
        k_ok, s_ok, prefer_s = Signal(), Signal(), Signal()  # both FIFOs refilling: alternate
        self.sync += If(kfifo.we, prefer_s.eq(1)).Elif(sfifo.we, prefer_s.eq(0))
        self.comb += [
            word_valid.eq(ok & (av_have | st["av_dis"]) & (ro_have | st["ro_dis"])),
            word.eq(Mux(st["av_dis"], 0, av_word) ^ Mux(st["ro_dis"], 0, ro_word)),
            core.raw_valid.eq(word_valid), core.raw_data.eq(word),
            kfifo.din.eq(word), sfifo.din.eq(word),
            k_ok.eq(kfifo.want & kfifo.writable), s_ok.eq(sfifo.want & sfifo.writable),
            kfifo.we.eq(word_valid & ~core.raw_ready & k_ok & (~s_ok | ~prefer_s)),
            sfifo.we.eq(word_valid & ~core.raw_ready & s_ok & ~kfifo.we),
            taken.eq(core.raw_ready | kfifo.we | sfifo.we),
            kfifo.flush.eq(~ok), sfifo.flush.eq(~ok),
            kfifo.re.eq(rk_data), sfifo.re.eq(rs_data),
            self.fe_need.eq(kfifo.want | sfifo.want | ~cond.seeded | cond.busy),
        ]
        self.sync += [
            If(restart,
                av_have.eq(0), ro_have.eq(0),
            ).Else(
                If(taken, av_have.eq(0), ro_have.eq(0)),
                If(avfold.done, av_word.eq(avfold.word), av_have.eq(1)),
                # AV_CONFIG.test: each sample pair as it is (the reference's "virtual oscilloscope")
                If(st["av_test"] & av_take,
                    av_word.eq(Cat(self.av_s[0], C(0, 16 - sbits), self.av_s[1], C(0, 16 - sbits))), av_have.eq(1)),
                If(ropack.done, ro_word.eq(ropack.word), ro_have.eq(1)),
            )
        ]

        # ---- conditioner configuration, user seed, ports
        self.comb += [
            cond.reseed_interval.eq(st["reseed_interval"]), cond.selfmix_interval.eq(st["selfmix_interval"]),
            cond.selfmix_ena.eq(st["selfmix_ena"]),
            cond.seed_we.eq(seed_we), cond.seed_data.eq(self.dat_w),
            # TEST.simultaneous advances both ports in one cycle (the reference's corner-case test)
            cond.kport.rd.eq(rk_urnd | simultaneous), cond.sport.rd.eq(rs_urnd | simultaneous),
        ]
        self.sync += [
            If(rk_urnd, last_k.eq(cond.kport.valid)),
            If(rs_urnd, last_s.eq(cond.sport.valid)),
        ]

        # ---- statistics `fresh` bits: a read clears, a completed window sets (set wins)
        for i, h in enumerate(core.health):
            self.sync += [If(stat_re[i] | core.clear, fresh[i].eq(0)), If(h.apt_window_done, fresh[i].eq(1))]

        # ---- counters and events (on the pages' own sync, after their writes: these win)
        sat = lambda v: v + (v != (1 << len(v)) - 1)  # noqa: E731
        self.sync += [
            If(clr | clr_und,
                und["server"].eq(0), und["kernel"].eq(0),
            ).Else(
                If(rs_data & ~sfifo.readable, und["server"].eq(sat(und["server"]))),
                If(rk_data & ~kfifo.readable, und["kernel"].eq(sat(und["kernel"]))),
            )
        ]
        s_was, k_was = Signal(), Signal()
        self.sync += [s_was.eq(sfifo.readable), k_was.eq(kfifo.readable)]
        sp.pending_set(ev_s["avail"], sfifo.readable & ~s_was)
        sp.pending_set(ev_s["error"], rs_data & ~sfifo.readable)
        sp.pending_set(ev_s["health"], reduce(or_, [h.rct_fail | h.apt_fail for h in core.health] + [r.fail for r in self.runs]))
        for i, e in enumerate(self.exc):
            sp.pending_set(ev_s[f"excursion{i}"], e.fail)
        kp.pending_set(ev_k["avail"], kfifo.readable & ~k_was)
        kp.pending_set(ev_k["error"], rk_data & ~kfifo.readable)

        self.ios = {*self.av_s, self.av_valid, self.ro_bits, self.ro_valid, self.fe_av_en, self.fe_ro_en,
                    self.fe_powersave, self.fe_need, *self.fe_ro.values(), self.server_sel, self.kernel_sel, self.adr,
                    self.we, self.dat_w, self.stb, self.ack, self.dat_r, self.irq_server, self.irq_kernel, self.irq_source}
