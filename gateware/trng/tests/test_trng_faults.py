"""Fault injection on the whole block (gateware/trng/simsource.py: SimTrng = TrngBus fed by the
simulation noise source) on Verilator: for each fault (stuck, biased, repeating bursts) on an
avalanche channel and on a ring-oscillator core, the hardware health test fires on exactly the
sample where the software's (trng_core::health, replayed over the very samples the RTL tested
by the `trng_health_replay` example) first fires, with the same test; from then on neither
URANDOM port nor either raw FIFO delivers a word; back-to-back CSR reads of a port never return a
word twice."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "gateware"))

from common.verilator import build  # noqa: E402
from trng import spec as trng_spec  # noqa: E402
from trng.cutoffs import health_cutoffs, replay_exe  # noqa: E402
from trng.harness import PageBus  # noqa: E402
from trng.simsource import BIAS, BURST, STUCK, SimTrng  # noqa: E402

S = trng_spec.load()
SR, KR = S.server.registers, S.kernel.registers
POISON = S.constants["urandom_invalid"]
AV, RO = S.health["av"], S.health["ro"]
N_AV, N_RO = AV["channels"], RO["cores"]


@pytest.fixture(scope="module")
def replay():
    exe = replay_exe()

    def run(src, samples):
        r = subprocess.run([exe, src], input=" ".join(f"{s:x}" for s in samples), capture_output=True,
                           text=True, timeout=120, check=True)
        out = {"fails": []}
        for line in r.stdout.splitlines():
            p = line.split()
            if p and p[0] == "fail":
                out["fails"].append((int(p[1]), p[2]))
            elif p and p[0] == "params":
                out.update({k: int(v) for k, v in (t.split("=") for t in p[1:])})
        return out

    return run


class Bench(PageBus):
    def __init__(self):
        d = SimTrng()
        super().__init__(build(d, d.ios, "trng_sim"), S, after_tick=self._observe)
        self.samples = [[] for _ in range(N_AV + N_RO)]
        self.fail_at = {}   # source -> index of the sample on which its interrupt line first rose

    def _observe(self):
        """Record what the health tests took this cycle (the samples and the interrupt lines are
        read in the same cycle: a failure pulse belongs to the sample taken with it)."""
        s = self.s
        irq = s.peek("irq_source")
        if s.peek("t_av_take"):
            for i in range(N_AV):
                self.samples[i].append(s.peek(f"t_av{i}"))
        if s.peek("t_ro_take"):
            ro = s.peek("t_ro")
            for j in range(N_RO):
                self.samples[N_AV + j].append((ro >> j) & 1)
        for k in range(N_AV + N_RO):
            if irq >> k & 1 and k not in self.fail_at:
                self.fail_at[k] = len(self.samples[k]) - 1

    def run(self, cycles):
        for _ in range(cycles):
            self.tick()

    def fault(self, target, kind, value=0, p=0, start=0, length=0, blen=0, period=1):
        s = self.s
        for k, v in (("f_target", target), ("f_kind", kind), ("f_value", value), ("f_p", p), ("f_start", start),
                     ("f_len", length), ("f_blen", blen), ("f_period", period)):
            s.poke(k, v)
        s.poke("f_arm", 1)
        self.tick()
        s.poke("f_arm", 0)


FAULTS = [
    # (name, source index, kind, parameters)
    ("av0-stuck", 0, STUCK, dict(value=0x7C3, start=1500)),
    ("av1-stuck", 1, STUCK, dict(value=0x800, start=1500)),
    ("av1-bias", 1, BIAS, dict(p=230, start=1200)),
    ("av0-burst", 0, BURST, dict(blen=40, period=700, start=1300)),
    ("ro2-stuck", N_AV + 2, STUCK, dict(value=1, start=1500)),
    ("ro1-bias", N_AV + 1, BIAS, dict(p=240, start=1200)),
    ("ro3-burst", N_AV + 3, BURST, dict(blen=120, period=900, start=1300)),
]


@pytest.mark.parametrize("name,src,kind,params", FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_fires_on_the_software_sample_and_stops_output(replay, name, src, kind, params):
    b = Bench()
    fam = "av" if src < N_AV else "ro"
    cut = {k: replay(k, []) for k in ("av", "ro")}
    b.w("AV_NIST", repcount_cutoff=cut["av"]["rct_cutoff"], adaptive_cutoff=cut["av"]["apt_cutoff"])
    b.w("RO_NIST", repcount_cutoff=cut["ro"]["rct_cutoff"], adaptive_cutoff=cut["ro"]["apt_cutoff"])
    b.w("EV_ENABLE", health=1)
    b.fault(src, kind, **params)
    b.w("CONTROL", enable=1)
    # healthy until the fault starts: the start-up test passes and words come out
    b.run(params["start"] - 10)
    r = b.r("READY")
    assert (SR["READY"].fields["av_adaprop"].get(r), SR["READY"].fields["ro_adaprop"].get(r)) == ((1 << N_AV) - 1, (1 << N_RO) - 1), \
        f"{name}: start-up test did not pass (READY {r:#x})"
    words = []
    for page in ("kernel", "server"):
        for _ in range(3):
            w = b.r("URANDOM", page=page)
            if b.r("URANDOM_LAST", "last", page=page):
                words.append(w)
    # run into the fault until the source's interrupt line fires
    for _ in range(200):
        if src in b.fail_at:
            break
        b.run(100)
    assert set(b.fail_at) == {src}, f"{name}: interrupt lines fired for sources {sorted(b.fail_at)}"
    sw = replay(fam, b.samples[src])
    assert sw["fails"], f"{name}: the software tests never fired on the same samples"
    first = sw["fails"][0]
    assert b.fail_at[src] == first[0], f"{name}: RTL fired on sample {b.fail_at[src]}, software on {first[0]} ({first[1]})"
    errs = b.r("NIST_ERRORS")
    f = SR["NIST_ERRORS"].fields
    j = src if fam == "av" else src - N_AV
    kind_field = f"{fam}_{'repcount' if first[1] == 'rct' else 'adaptive'}"
    assert f[kind_field].get(errs) >> j & 1, f"{name}: NIST_ERRORS {errs:#x} does not name {kind_field}[{j}]"
    assert b.s.peek("irq_server") == 1
    # the other sources replayed through the software stay clean
    for k in range(N_AV + N_RO):
        if k != src:
            assert not replay("av" if k < N_AV else "ro", b.samples[k])["fails"], f"{name}: source {k}"
    # nothing comes out while failing, however the ports are read
    for _ in range(5):
        b.run(300)
        for page in ("kernel", "server"):
            assert b.r("URANDOM", page=page) == POISON
            assert b.r("URANDOM_LAST", "last", page=page) == 0 and b.r("URANDOM_VALID", "urandom_valid", page=page) == 0
            assert b.r("DATA", page=page) == POISON and b.r("STATUS", "avail", page=page) == 0
    b.s.close()


def test_back_to_back_reads_through_the_csr_port():
    """Healthy noise: each port drained with back-to-back URANDOM reads (one bus access after
    the other, no idle cycle); every valid word is new, every empty read is the poison word with
    last = 0, and no word appears on both ports."""
    b = Bench()
    b.w("AV_NIST", repcount_cutoff=health_cutoffs()["av"][0], adaptive_cutoff=(1 << SR["AV_NIST"].fields["adaptive_cutoff"].width) - 1)
    b.w("RO_NIST", repcount_cutoff=health_cutoffs()["ro"][0], adaptive_cutoff=(1 << 10) - 1)
    b.w("CONTROL", enable=1)
    b.run(S.health["startup_samples"] + 40 * AV["pairs_per_word"])
    seen = []
    valid = {"kernel": 0, "server": 0}
    for rnd in range(30):
        for page in ("kernel", "server"):
            for _ in range(12):
                w = b.r("URANDOM", page=page)
                if b.r("URANDOM_LAST", "last", page=page):
                    seen.append(w)
                    valid[page] += 1
                else:
                    assert w == POISON
        b.run(200)
    assert valid["kernel"] > 30 and valid["server"] > 30, valid
    assert len(set(seen)) == len(seen), "a conditioned word was read twice"
    b.s.close()
