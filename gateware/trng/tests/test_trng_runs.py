"""The ring-oscillator runs test (gateware/trng/runs.py) cycle for cycle against a model of its
definition: per sample, the counts of runs of at least k equal bits it leaves behind
(`acc + inc`) compared with the limits, the `fail` pulse on the window's last sample, the
`failure` latch, the published counts and `fresh` bits, under random bits, `valid` gaps,
`enable` drops, `clear`, count reads and limit / window writes.

The RTL decides a window's end from registered flags computed one cycle ahead (the timing of
the whole TRNG on the ECP5, docs/trng-gateware.md): a limit or window write applies from the
cycle after the register takes it. The model says so (it compares with the previous cycle's
limits and window); everything else is the plain definition, in the same cycle."""

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "gateware"))

from migen import run_simulation  # noqa: E402

from trng import spec as trng_spec  # noqa: E402
from trng.runs import RunsTest  # noqa: E402

RR = trng_spec.load().health["ro_runs"]
RUNS, BITS = RR["runs"], RR["count_bits"]
TOP = (1 << BITS) - 1


class Model:
    def __init__(self):
        self.started, self.value, self.length, self.n = False, 0, 0, 0
        self.acc = [0] * RUNS
        self.count = [0] * RUNS
        self.fresh, self.failure = 0, 0

    def step(self, i, lim):
        """One cycle: inputs `i`, limits and window in force `lim` (min, max, window). Returns
        the cycle's `fail` pulse and updates the state at the clock edge."""
        mins, maxs, window = lim
        ends = self.started and i["bit"] != self.value
        inc = [int(ends and self.length >= k + 1) for k in range(RUNS)]
        nxt = [self.acc[k] + inc[k] for k in range(RUNS)]
        last = self.n + 1 >= window
        outside = any(nxt[k] < mins[k] or nxt[k] > maxs[k] for k in range(RUNS))
        fail = int(i["enable"] and i["valid"] and last and outside)
        fresh = self.fresh & ~i["count_read"] if i["count_read"] else self.fresh
        failure = 0 if i["clear"] else self.failure
        if not i["enable"]:
            self.started, self.length, self.n, self.acc = False, 0, 0, [0] * RUNS
        elif i["valid"]:
            self.length = 1 if (not self.started or ends) else min(self.length + 1, RUNS)
            self.started, self.value = True, i["bit"]
            if last:
                self.n, self.acc, self.count = 0, [0] * RUNS, nxt
                fresh = (1 << RUNS) - 1
                if outside and not i["clear"]:
                    failure = 1
            else:
                self.n, self.acc = self.n + 1, nxt
        self.fresh, self.failure = fresh, failure
        return fail


def limits_for(rng, window):
    """Limits near the counts a window of random bits gives (both outcomes occur), with the
    edges (0, the top) now and then."""
    mins, maxs = [], []
    for k in range(RUNS):
        mean = max(1, window >> (k + 1))
        lo = rng.choice([0, max(0, mean - rng.randint(0, 3)), rng.randint(0, mean + 2)])
        hi = rng.choice([TOP, mean + rng.randint(-2, 3), lo + rng.randint(0, 2)])
        mins.append(lo)
        maxs.append(max(0, min(TOP, hi)))
    return mins, maxs


def run_case(seed, cycles, windows):
    """`cycles` cycles of random stimulus; returns the count of `fail` pulses and raises on the
    first cycle where the RTL and the model differ."""
    rng = random.Random(seed)
    dut = RunsTest(RUNS, BITS)
    model = Model()
    out = {"fails": 0}

    def bench():
        window = rng.choice(windows)
        mins, maxs = limits_for(rng, window)
        prev = None
        for c in range(cycles):
            if rng.random() < 0.01:
                window = rng.choice(windows)
            if rng.random() < 0.02:
                mins, maxs = limits_for(rng, window)
            i = {
                "bit": rng.getrandbits(1) if rng.random() < 0.7 else model.value,   # some long runs
                "valid": int(rng.random() < 0.75),
                "enable": int(c >= 2 and rng.random() > 0.003),
                "clear": int(rng.random() < 0.01),
                "count_read": rng.getrandbits(RUNS) if rng.random() < 0.05 else 0,
            }
            for k, v in i.items():
                yield getattr(dut, k).eq(v)
            yield dut.window.eq(window)
            for k in range(RUNS):
                yield dut.min[k].eq(mins[k])
                yield dut.max[k].eq(maxs[k])
            yield
            # cycle c: its inputs are visible, the registers hold the state before its edge
            counts = []
            for x in dut.count:
                counts.append((yield x))
            state = ((yield dut.failure), (yield dut.fresh), counts)
            assert state == (model.failure, model.fresh, model.count), \
                f"seed {seed} cycle {c}: RTL (failure, fresh, counts) {state}, model {(model.failure, model.fresh, model.count)}"
            got = yield dut.fail
            # the limits and window in force: the previous cycle's (c < 2: `enable` is low)
            want = model.step(i, prev or (mins, maxs, window))
            assert got == want, f"seed {seed} cycle {c}: fail {got}, model {want}"
            out["fails"] += want
            prev = (list(mins), list(maxs), window)

    run_simulation(dut, bench())
    return out


def test_runs_test_matches_its_definition_cycle_for_cycle():
    fails = 0
    for seed, windows in ((1, [3, 5, 8]), (2, [0, 1, 2, 4, 16]), (3, [20, 31, 64]), (4, [6, 7, 12])):
        out = run_case(seed, 4000, windows)
        fails += out["fails"]
    # both outcomes occur often (a wrong flag would show)
    assert fails > 100, f"only {fails} failing windows"
