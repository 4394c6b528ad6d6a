"""The TRNG block's register pages (gateware/trng/csr.py) on Verilator, addressed with
spec/trng.toml's offsets and fields: every spec field is bound exactly once; reset values; the
reference's two wiring defects are absent (every health source and both excursion channels raise
their own interrupt, channel 1 included; per-source statistics read back from their own source's
register); conditioned words through both URANDOM ports with their valid bits, back-to-back reads
never returning a stale word; nothing (conditioned or raw) while a source is failing."""

import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "gateware"))

from common.csr import check_bindings  # noqa: E402
from common.verilator import build  # noqa: E402
from trng import spec as trng_spec  # noqa: E402
from trng.cutoffs import health_cutoffs  # noqa: E402
from trng.csr import TrngBus  # noqa: E402
from trng.harness import PageBus  # noqa: E402

S = trng_spec.load()
SR, KR = S.server.registers, S.kernel.registers
POISON = S.constants["urandom_invalid"]
AV, RO = S.health["av"], S.health["ro"]
N_AV, N_RO = AV["channels"], RO["cores"]
SRC = [f"av_{i}" for i in range(N_AV)] + [f"ro_{i}" for i in range(N_RO)]
RCT = {k: health_cutoffs()[k][0] for k in ("av", "ro")}
# the widest APT cutoffs the registers hold (the tests' "wide open")
APT_MAX = {k: (1 << SR[f"{k.upper()}_NIST"].fields["adaptive_cutoff"].width) - 1 for k in ("av", "ro")}


def src_ready(t):
    """READY's adaptive-proportion bits as one vector, sources in SRC order (av_0, av_1, ro_0..)."""
    r = t.r("READY")
    return t.f("READY", r, "av_adaprop") | t.f("READY", r, "ro_adaprop") << N_AV


def test_every_spec_field_is_bound_once():
    d = TrngBus()
    check_bindings(SR, d.server_bindings)
    check_bindings(KR, d.kernel_bindings)
    assert set(d.server_bindings) == {(n, f) for n, r in SR.items() for f in r.fields}
    assert set(d.kernel_bindings) == {(n, f) for n, r in KR.items() for f in r.fields}


def test_an_unbound_or_extra_field_is_refused():
    d = TrngBus()
    b = dict(d.server_bindings)
    b.pop(("CHACHA", "selfmix_ena"))
    with pytest.raises(ValueError, match="selfmix_ena"):
        check_bindings(SR, b)
    b = dict(d.server_bindings)
    b[("CHACHA", "bogus")] = b[("CHACHA", "reseed_interval")]
    with pytest.raises(ValueError, match="bogus"):
        check_bindings(SR, b)
    b = dict(d.server_bindings)
    b[("URANDOM", "urandom")] = ("rw", d.server_bindings[("CHACHA", "reseed_interval")][1])
    with pytest.raises(ValueError, match="'rw' binding in a 'ro' register"):
        check_bindings(SR, b)


class Trng(PageBus):
    """Bus accesses by spec name (harness.PageBus), and sample feeding. Samples: per cycle,
    `av` -> (s0, s1) and `ro` -> 4-bit vector, from generator functions of the sample index."""

    def __init__(self, sim):
        super().__init__(sim, S, before=self._idle)
        self.av_n = 0
        self.ro_n = 0
        self.irq_source_seen = 0

    def _idle(self):
        self.s.poke("av_valid", 0)
        self.s.poke("ro_valid", 0)

    def feed(self, cycles, av=None, ro=None):
        """`cycles` cycles with one AV pair and one RO sample each (None: that source idle)."""
        s = self.s
        for _ in range(cycles):
            if av is not None:
                a, b = av(self.av_n)
                s.poke("av_s0", a)
                s.poke("av_s1", b)
                s.poke("av_valid", 1)
                self.av_n += 1
            else:
                s.poke("av_valid", 0)
            if ro is not None:
                s.poke("ro_bits", ro(self.ro_n))
                s.poke("ro_valid", 1)
                self.ro_n += 1
            else:
                s.poke("ro_valid", 0)
            s.tick()
            self.irq_source_seen |= s.peek("irq_source")
        s.poke("av_valid", 0)
        s.poke("ro_valid", 0)


def rng_av(seed):
    r = random.Random(seed)
    return lambda i: (r.randrange(1 << AV["sample_bits"]), r.randrange(1 << AV["sample_bits"]))


def rng_ro(seed):
    r = random.Random(seed)
    return lambda i: r.randrange(1 << N_RO)


@pytest.fixture(scope="module")
def lib():
    return None


def fresh_trng(_lib=None):
    """A new model instance (the compiled library is cached by content)."""
    d = TrngBus()
    return Trng(build(d, d.ios, "trng_bus"))


def start(t, cutoffs=None):
    """Program the cutoffs (the software's: RCT from the spec formula, APT wide open unless
    given), enable every event and the block."""
    cut = cutoffs or {"av": (RCT["av"], APT_MAX["av"]), "ro": (RCT["ro"], APT_MAX["ro"])}
    t.w("AV_NIST", repcount_cutoff=cut["av"][0], adaptive_cutoff=cut["av"][1])
    t.w("RO_NIST", repcount_cutoff=cut["ro"][0], adaptive_cutoff=cut["ro"][1])
    t.w("EV_ENABLE", **{k: 1 for k in SR["EV_ENABLE"].fields})
    t.w("EV_ENABLE", page="kernel", avail=1)
    t.w("CONTROL", enable=1)


def test_reset_values_and_undecoded(lib):
    t = fresh_trng(lib)
    c = t.r("CHACHA")
    assert t.f("CHACHA", c, "reseed_interval") == S.conditioner["reseed_interval"]
    assert t.f("CHACHA", c, "selfmix_interval") == S.conditioner["selfmix_interval"]
    assert t.f("CHACHA", c, "selfmix_ena") == int(S.conditioner["selfmix_enable"])
    assert t.r("AV_CONFIG", "samples") == AV["pairs_per_word"]
    for page in ("server", "kernel"):
        assert t.r("URANDOM", page=page) == POISON
        assert t.r("URANDOM_VALID", page=page) == 0
        assert t.r("DATA", page=page) == POISON
    assert t.r("UNDERRUNS", "server_underrun") == 1 and t.r("UNDERRUNS", "kernel_underrun") == 1
    # each page's error event is its own FIFO's underrun
    assert t.r("EV_PENDING", "error") == 1 and t.r("EV_PENDING", "error", page="kernel") == 1
    t.w("UNDERRUNS", server_underrun=0, kernel_underrun=0)   # read-only: ignored
    assert t.r("UNDERRUNS", "server_underrun") == 1
    t.w("EXT_CONTROL", clr_underruns=1)
    assert t.r("UNDERRUNS") == 0
    t.w("EV_PENDING", error=1)
    t.w("EV_PENDING", page="kernel", error=1)
    assert t.r("EV_PENDING") == 0 and t.r("EV_PENDING", page="kernel") == 0
    used = {r.offset for r in SR.values()}
    free = next(o for o in range(0, 0x100, 4) if o not in used)
    assert t.access("server", free, False) == POISON
    for page in ("server", "kernel"):
        assert t.r("EXT_ID", page=page) == S.constants["ext_id"]
    # SEED is storage (reads back, as Precursor's CSRStorage); a pulse field reads 0
    t.w("SEED", seed=0x1234_5678)
    assert t.r("SEED") == 0x1234_5678
    t.w("TEST", simultaneous=1)
    assert t.r("TEST") == 0
    t.w("CONTROL", enable=1, clr_err=1)
    assert t.r("CONTROL", "clr_err") == 0 and t.r("CONTROL", "enable") == 1
    # the runs-test and excursion-test controls reset to the spec's (Precursor's) values
    rr = S.health["ro_runs"]
    for k in range(rr["runs"]):
        assert (t.r(f"RO_RUNSLIMIT{k + 1}", "min"), t.r(f"RO_RUNSLIMIT{k + 1}", "max")) == (rr[f"min{k + 1}"], rr[f"max{k + 1}"])
    assert t.r("RO_RUN3_CTRL", "window") == rr["window"]
    assert t.r("AV_EXCURSION1_CTRL", "cutoff") == AV["excursion_min_range"]
    assert t.r("AV_EXCURSION1_CTRL", "window") == AV["excursion_window"]
    t.s.close()


def test_each_health_source_raises_its_own_interrupt(lib):
    """Source k stuck after the start-up test: only its own NIST_ERRORS bit, its own READY bit
    and its own interrupt line; the health event interrupts the server page."""
    av_stuck_at = 1100
    for k, name in enumerate(SRC):
        t = fresh_trng(lib)
        start(t)
        av_good, ro_good = rng_av(k), rng_ro(k)

        def av(i):
            a, b = av_good(i)
            if name.startswith("av") and i >= av_stuck_at:
                return (0x800, b) if name == "av_0" else (a, 0x800)
            return a, b

        def ro(i):
            v = ro_good(i)
            if name.startswith("ro") and i >= av_stuck_at:
                bit = 1 << int(name[3:])
                v &= ~bit
            return v

        t.feed(av_stuck_at, av, ro)
        assert src_ready(t) == (1 << len(SRC)) - 1, f"{name}: not every source passed its start-up test"
        assert t.irq_source_seen == 0 and t.s.peek("irq_server") in (0, 1)
        t.w("EV_PENDING", **{k: 1 for k in SR["EV_PENDING"].fields})
        cut = RCT["av"] if name.startswith("av") else RCT["ro"]
        t.feed(cut + 5, av, ro)
        assert t.irq_source_seen == 1 << k, f"{name}: interrupt lines {t.irq_source_seen:#x}"
        assert t.r("EV_PENDING", "health") == 1 and t.s.peek("irq_server") == 1
        errs = t.r("NIST_ERRORS")
        if name.startswith("av"):
            assert errs == (1 << k) << SR["NIST_ERRORS"].fields["av_repcount"].lsb, f"{name}: NIST_ERRORS {errs:#x}"
        else:
            j = k - N_AV
            assert t.f("NIST_ERRORS", errs, "ro_repcount") == 1 << j
            assert errs == (1 << j) << SR["NIST_ERRORS"].fields["ro_repcount"].lsb, f"{name}: NIST_ERRORS {errs:#x}"
        assert src_ready(t) == ((1 << len(SRC)) - 1) & ~(1 << k), name
        st = t.r("EXT_STATUS")
        assert t.f("EXT_STATUS", st, "av_health") == (1 << k if k < N_AV else 0)
        assert t.f("EXT_STATUS", st, "ro_health") == int(k >= N_AV)
        # the longest run (NIST_*_STATn.rep_b) reached the cutoff on the stuck source only
        reg = f"NIST_AV_STAT{k}" if k < N_AV else f"NIST_RO_STAT{k - N_AV}"
        assert t.r(reg, "rep_b") >= min(cut, (1 << SR[reg].fields["rep_b"].width) - 1), name
        # nothing comes out while the source fails
        for page in ("server", "kernel"):
            for _ in range(3):
                assert t.r("URANDOM", page=page) == POISON and t.r("URANDOM_VALID", page=page) == 0
                assert t.r("DATA", page=page) == POISON
        t.s.close()


def test_each_excursion_channel_raises_its_own_interrupt(lib):
    """An AV channel whose codes span less than excursion_min_range fails its excursion test:
    only its own excursion event, EXT_STATUS.av_excursion bit, READY.av_excursion bit and
    interrupt (channel 1 included), and AV_EXCURSIONn_LAST_ERR holds the failing window. An
    interrupt enabled only for the other channel stays quiet. A cutoff of 0 disables the test."""
    narrow = lambda i: 0x800 + (i % 16)  # noqa: E731  (16 symbols: RCT and APT pass)
    for ch in range(N_AV):
        for enabled in (ch, 1 - ch):
            t = fresh_trng(lib)
            start(t)
            t.w("EV_ENABLE", **{f"excursion{enabled}": 1})
            wide = rng_av(10 + ch)

            def av(i):
                a, b = wide(i)
                return (narrow(i), b) if ch == 0 else (a, narrow(i))

            t.feed(AV["excursion_window"] + 2, av, rng_ro(3))
            pend = t.r("EV_PENDING")
            assert t.f("EV_PENDING", pend, f"excursion{ch}") == 1
            assert t.f("EV_PENDING", pend, f"excursion{1 - ch}") == 0
            assert t.r("EXT_STATUS", "av_excursion") == 1 << ch
            assert t.r("READY", "av_excursion") == 1 << (1 - ch)
            assert t.s.peek("irq_server") == int(enabled == ch), f"channel {ch}, enabled {enabled}"
            for reg in (f"AV_EXCURSION{ch}_STAT", f"AV_EXCURSION{ch}_LAST_ERR"):
                mn, mx = t.r(reg, "min"), t.r(reg, "max")
                assert (mn, mx) == (0x800, 0x80F), (reg, mn, mx)
            other = f"AV_EXCURSION{1 - ch}_STAT"
            assert t.r(other, "max") - t.r(other, "min") >= AV["excursion_min_range"]
            t.w("EV_PENDING", **{f"excursion{ch}": 1})
            assert t.r("EV_PENDING", f"excursion{ch}") == 0 and t.s.peek("irq_server") == 0
            # CTRL.reset forgets the latch; with cutoff 0 the narrow channel passes
            t.w(f"AV_EXCURSION{ch}_CTRL", cutoff=0, window=AV["excursion_window"], reset=1)
            assert t.r("EXT_STATUS", "av_excursion") == 0
            t.feed(AV["excursion_window"] + 2, av, rng_ro(4))
            assert t.r("EXT_STATUS", "av_excursion") == 0 and t.r("READY", "av_excursion") == 3
            t.s.close()


def test_per_source_stats_read_their_own_register(lib):
    """Each source gets a stream whose APT window has a different first-symbol count; every
    NIST_RO_STATn / NIST_AV_STATn reads its own source's count (the reference read RO cores 2
    and 3 from core 1's register). `fresh` is set by a completed window and cleared by a read."""
    t = fresh_trng(lib)
    # cutoffs wide open: these streams are deliberately unbalanced
    start(t, {"av": ((1 << 7) - 1, APT_MAX["av"]), "ro": ((1 << 7) - 1, APT_MAX["ro"])})
    wro, wav = RO["apt_window"], AV["apt_window"]
    ro_counts = [300, 400, 500, 600]
    av_counts = [60, 150]

    def bres(c, w, i):
        i %= w
        return ((i + 1) * c) // w - (i * c) // w

    def ro(i):
        return sum(bres(c, wro, i) << j for j, c in enumerate(ro_counts))

    hi = random.Random(5)
    av_hi = [hi.randrange(1 << 7) for _ in range(4096)]

    def av_sym(ch, i):
        return 0 if bres(av_counts[ch], wav, i) else 1 + (i % 31)

    def av(i):
        return tuple((av_hi[(i + 7 * ch) % 4096] << 5) | av_sym(ch, i) for ch in range(N_AV))

    t.feed(wro + 10, av, ro)
    exp_ro = []
    for j in range(N_RO):
        win = [(ro(i) >> j) & 1 for i in range(wro)]
        exp_ro.append(win.count(win[0]))
    exp_av = []
    for ch in range(N_AV):
        win = [av_sym(ch, i) for i in range(wav, 2 * wav)]  # the second (last completed) window
        exp_av.append(win.count(win[0]))
    assert len(set(exp_ro)) == N_RO and len(set(exp_av)) == N_AV, "the streams must differ per source"
    got_ro = [t.r(f"NIST_RO_STAT{j}") for j in range(N_RO)]
    got_av = [t.r(f"NIST_AV_STAT{ch}") for ch in range(N_AV)]
    assert [t.f(f"NIST_RO_STAT{j}", v, "adap_b") for j, v in enumerate(got_ro)] == exp_ro
    assert [t.f(f"NIST_AV_STAT{j}", v, "adap_b") for j, v in enumerate(got_av)] == exp_av
    assert all(t.f("NIST_RO_STAT0", v, "fresh") for v in got_ro + got_av)
    assert all(t.r(f"NIST_RO_STAT{j}", "fresh") == 0 for j in range(N_RO))
    assert all(t.r(f"NIST_AV_STAT{j}", "fresh") == 0 for j in range(N_AV))
    t.s.close()


def test_urandom_ports_back_to_back_and_gating(lib):
    """Healthy sources: both URANDOM ports deliver words; each read returns the word and the
    URANDOM_LAST bit says it was valid; back-to-back reads never return a word twice; an empty port
    reads the poison word with last = 0. The raw FIFOs fill and DATA pops distinct words with
    the STATUS counts moving. Then a source fails: from then on nothing valid comes out of any
    port or FIFO, until clr_err and a new start-up test."""
    t = fresh_trng(lib)
    start(t)
    av, ro = rng_av(99), rng_ro(98)
    got = {"server": [], "kernel": []}
    for _ in range(40):
        t.feed(200, av, ro)
        for page in ("kernel", "server", "kernel", "kernel", "server"):
            w = t.r("URANDOM", page=page)
            last = t.r("URANDOM_LAST", "last", page=page)
            if last:
                got[page].append(w)
            else:
                assert w == POISON
    words = got["server"] + got["kernel"]
    assert len(got["server"]) > 10 and len(got["kernel"]) > 10, {k: len(v) for k, v in got.items()}
    assert len(set(words)) == len(words), "a conditioned word was delivered twice"
    # back-to-back: one port drained as fast as the bus allows
    burst = []
    for _ in range(40):
        w = t.r("URANDOM", page="kernel")
        if t.r("URANDOM_LAST", "last", page="kernel"):
            burst.append(w)
    assert len(set(burst + words)) == len(burst) + len(words)
    # raw FIFOs
    for page in ("kernel", "server"):
        st = t.r("STATUS", page=page)
        n = (t.f("STATUS", st, "wrcount", page) - t.f("STATUS", st, "rdcount", page)) % S.constants["fifo_depth"]
        assert t.f("STATUS", st, "avail", page) == 1 and n > 0, page
        raw = [t.r("DATA", page=page) for _ in range(min(n, 8))]
        st2 = t.r("STATUS", page=page)
        assert t.f("STATUS", st2, "rdcount", page) == (t.f("STATUS", st, "rdcount", page) + len(raw)) % S.constants["fifo_depth"]
        assert len(set(raw)) == len(raw) and POISON not in raw
    # failure: RO core 2 stuck
    t.feed(RCT["ro"] + 40, av, lambda i: ro(i) & ~4)
    assert t.r("NIST_ERRORS", "ro_repcount") == 4
    t.feed(2000, av, lambda i: ro(i) & ~4)
    for page in ("server", "kernel"):
        for _ in range(4):
            assert t.r("URANDOM", page=page) == POISON and t.r("URANDOM_VALID", page=page) == 0
            assert t.r("DATA", page=page) == POISON and t.r("STATUS", "avail", page=page) == 0
    # clear: a new start-up test, then output again
    t.w("CONTROL", enable=1, clr_err=1)
    assert t.r("NIST_ERRORS") == 0
    t.feed(S.health["startup_samples"] + 1200, av, ro)
    ok = 0
    for _ in range(20):
        w = t.r("URANDOM", page="kernel")
        if t.r("URANDOM_LAST", "last", page="kernel"):
            ok += 1
            assert w not in words
        t.feed(100, av, ro)
    assert ok > 0, "no output after clr_err"
    t.s.close()


def test_ro_only_fills_the_raw_fifos_and_required_holds_the_conditioner(lib):
    """AV channels disabled (CONTROL.av_dis): the ring-oscillator cores alone pass their
    start-up tests and fill the raw FIFOs (raw-source testing), while AV_CONFIG.required (reset 1)
    keeps both URANDOM ports empty; with required cleared the conditioner runs from them."""
    t = fresh_trng(lib)
    start(t)
    t.w("CONTROL", enable=1, av_dis=1)
    ro = rng_ro(21)
    t.feed(S.health["startup_samples"] + 40 * 32, None, ro)
    assert src_ready(t) >> N_AV == (1 << N_RO) - 1
    for page in ("kernel", "server"):
        assert t.r("STATUS", "avail", page=page) == 1, page
        assert t.r("DATA", page=page) != POISON
        assert t.r("URANDOM", page=page) == POISON and t.r("URANDOM_LAST", "last", page=page) == 0
    t.w("AV_CONFIG", samples=AV["pairs_per_word"], test=0, required=0)
    t.feed(3000, None, ro)  # 28 seeding words of 32 RO bits, then one block
    w = t.r("URANDOM", page="kernel")
    assert t.r("URANDOM_LAST", "last", page="kernel") == 1 and w != POISON
    t.s.close()


def test_ro_only_selected_without_holding_the_conditioner(lib):
    """The order of trng_driver::ServerPage::select_sources: with both families running and the
    conditioner seeded, AV_CONFIG.required cleared *before* CONTROL.av_dis is set never holds the
    conditioner: the kernel port keeps its word and keeps producing words from the seeded state
    while only the ring oscillator runs (the device kernel polls that port for every random
    number); back to both families, then required set again, likewise. The opposite order (the
    AV channels disabled while required is set) wipes the port at once."""
    keep = {"samples": AV["pairs_per_word"], "test": 0}

    def seeded():
        t = fresh_trng(lib)
        start(t)
        av, ro = rng_av(7), rng_ro(8)
        t.feed(S.health["startup_samples"] + 3000, av, ro)
        assert t.r("URANDOM_VALID", "urandom_valid", page="kernel") == 1, "the conditioner never produced a word"
        return t, av, ro

    t, av, ro = seeded()
    t.w("AV_CONFIG", required=0, **keep)
    t.w("CONTROL", enable=1, av_dis=1)
    assert t.r("URANDOM_VALID", "urandom_valid", page="kernel") == 1, "the port lost its word: the conditioner was held"
    words = []
    for _ in range(20):
        w = t.r("URANDOM", page="kernel")
        assert t.r("URANDOM_LAST", "last", page="kernel") == 1, "no conditioned word while RO-only"
        words.append(w)
        t.feed(800, None, ro)
    assert len(set(words)) == len(words) and POISON not in words
    # the server raw FIFO holds RO words meanwhile
    assert t.r("STATUS", "avail", page="server") == 1 and t.r("DATA", page="server") != POISON
    # back: both families first, then required
    t.w("CONTROL", enable=1)
    t.w("AV_CONFIG", required=1, **keep)
    assert t.r("URANDOM_VALID", "urandom_valid", page="kernel") == 1
    t.feed(800, av, ro)
    assert t.r("URANDOM", page="kernel") != POISON and t.r("URANDOM_LAST", "last", page="kernel") == 1
    t.s.close()

    # the opposite order: the hold rises with the CONTROL write and wipes the ports
    t, av, ro = seeded()
    t.w("CONTROL", enable=1, av_dis=1)
    assert t.r("URANDOM_VALID", "urandom_valid", page="kernel") == 0
    assert t.r("URANDOM", page="kernel") == POISON and t.r("URANDOM_LAST", "last", page="kernel") == 0
    t.s.close()


def runs_model(bits, window, runs):
    """What RO_RUNn_COUNTk hold after `bits`: per window of `window` samples, the runs of at
    least k equal bits that ended in it (gateware/trng/runs.py), for the last completed window;
    and how many windows completed."""
    started, value, length, acc, last, done = False, 0, 0, [0] * runs, None, 0
    for i, b in enumerate(bits):
        ends = started and b != value
        nxt = [acc[k] + int(ends and length >= k + 1) for k in range(runs)]
        length = 1 if (not started or ends) else min(length + 1, runs)
        started, value = True, b
        if (i % window) + 1 >= window:
            last, acc, done = nxt, [0] * runs, done + 1
        else:
            acc = nxt
    return last, done


def test_runs_tests_count_publish_and_report_without_gating(lib):
    """RO_RUNn_*: every core's runs of at least k equal bits per window, published with its
    `fresh` bits (a COUNTk read clears bit k-1); a count outside RO_RUNSLIMITk latches
    NIST_ERRORS.ro_miniruns and the health event, gates no output (the SP 800-90B tests still
    pass, words still come out), and clr_err clears it."""
    rr = S.health["ro_runs"]
    t = fresh_trng(lib)
    start(t)
    window = 100
    for j in range(N_RO):
        t.w(f"RO_RUN{j}_CTRL", window=window)
    av = rng_av(31)
    r = random.Random(32)
    ro_bits = [r.randrange(1 << N_RO) for _ in range(10_000)]
    ro = ro_bits.__getitem__   # a function of the sample index (the model replays it)
    n = S.health["startup_samples"] + 1200
    t.feed(n, av, ro)
    # the default limits are for 1023-bit windows: 100-bit windows fall below every minimum
    assert t.r("NIST_ERRORS", "ro_miniruns") == (1 << N_RO) - 1
    assert t.r("NIST_ERRORS") & ~SR["NIST_ERRORS"].fields["ro_miniruns"].mask == 0, "an SP 800-90B test failed"
    assert t.r("EV_PENDING", "health") == 1
    assert src_ready(t) == (1 << len(SRC)) - 1
    got = 0
    for _ in range(10):
        t.r("URANDOM", page="kernel")
        got += t.r("URANDOM_LAST", "last", page="kernel")
        t.feed(200, av, ro)
    assert got > 0, "the runs tests gated the conditioned output"
    assert t.r("STATUS", "avail") == 1 and t.r("DATA") != POISON, "the runs tests gated the raw FIFO"
    # counts: compare with the model of every core's bit stream
    fed = t.ro_n
    for j in range(N_RO):
        bits = [(ro(i) >> j) & 1 for i in range(fed)]
        want, windows = runs_model(bits, window, rr["runs"])
        assert windows > 10
        assert t.r(f"RO_RUN{j}_FRESH") == (1 << rr["runs"]) - 1
        counts = [t.r(f"RO_RUN{j}_COUNT{k + 1}") for k in range(rr["runs"])]
        assert counts == want, f"core {j}: counts {counts}, model {want}"
        assert counts[0] > counts[1] > counts[2] > counts[3] > 0
        assert t.r(f"RO_RUN{j}_FRESH") == 0, "reading COUNTk clears fresh bit k-1"
    # limits that pass: clr_err clears the latch, and it stays clear
    for k in range(rr["runs"]):
        t.w(f"RO_RUNSLIMIT{k + 1}", min=0, max=(1 << rr["count_bits"]) - 1)
    t.w("CONTROL", enable=1, clr_err=1)
    assert t.r("NIST_ERRORS", "ro_miniruns") == 0
    t.feed(3 * window, av, ro)
    assert t.r("NIST_ERRORS", "ro_miniruns") == 0 and t.r("RO_RUN0_FRESH") == (1 << rr["runs"]) - 1
    t.s.close()


def test_av_test_mode_powerdelay_and_simultaneous(lib):
    """AV_CONFIG.test: each sample pair becomes one raw word (channel 0 in bits 11:0, channel 1
    in 27:16). AV_CONFIG.powerdelay: AV samples are ignored for that many microseconds
    (powerdelay_unit_cycles each) after the channels are enabled (EXT_STATUS.av_hold).
    TEST.simultaneous: both URANDOM ports advance in the same cycle."""
    unit = S.constants["powerdelay_unit_cycles"]
    t = fresh_trng(lib)
    start(t)
    t.w("CONTROL", enable=0)
    t.w("AV_CONFIG", powerdelay=2, samples=AV["pairs_per_word"], required=1)
    t.w("CONTROL", enable=1, ro_dis=1)
    assert t.r("EXT_STATUS", "av_hold") == 1
    t.feed(2 * unit - 40, None, None)
    assert t.r("EXT_STATUS", "av_hold") == 1
    t.feed(40, None, None)
    assert t.r("EXT_STATUS", "av_hold") == 0
    # raw-sample mode: the FIFOs fill with the pairs as they are
    pairs = {}

    def av(i):
        p = ((i * 37) % 4096, (i * 91 + 5) % 4096)
        pairs[p[0] | p[1] << 16] = i
        return p
    t.w("AV_CONFIG", samples=AV["pairs_per_word"], test=1, required=0)
    t.feed(S.health["startup_samples"] + 300, av, None)
    words = [t.r("DATA") for _ in range(20)]
    assert POISON not in words
    assert all(w & 0xF000_F000 == 0 and w in pairs for w in words), [hex(w) for w in words if w not in pairs]
    t.s.close()
    # simultaneous: two identical blocks; one reads the kernel port twice, the other pulses
    # TEST.simultaneous first: its one read returns the first one's second word
    outs = []
    for pulse in (False, True):
        t = fresh_trng(lib)
        start(t)
        t.feed(S.health["startup_samples"] + 3000, rng_av(41), rng_ro(42))
        assert t.r("URANDOM_VALID", page="kernel") == 1 and t.r("URANDOM_VALID") == 1
        if pulse:
            t.w("TEST", simultaneous=1)
            outs.append([t.r("URANDOM", page="kernel")])
        else:
            outs.append([t.r("URANDOM", page="kernel"), t.r("URANDOM", page="kernel")])
        t.s.close()
    assert outs[1][0] == outs[0][1] != POISON, outs
