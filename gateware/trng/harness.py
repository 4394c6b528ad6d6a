"""Test-bench processes for the TRNG gateware, written as Migen simulation generators
(`yield sig.eq(v)` drives, `v = yield sig` samples, bare `yield` advances one clock), so the same
process runs under Migen's simulator or under a Verilator model (see gateware/trng/sim.py).

ConditionerBench drives a Conditioner the way the vector files describe (libs/trng-core
`trng-vectors` exporter): raw words are offered one at a time, a user seed tagged with raw index j
is written after raw word j-1 was absorbed and before word j is offered, and both urandom ports are
read following a read pattern. It records every word each port returned, with its valid bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PortLog:
    words: list = field(default_factory=list)    # words read while valid = 1
    held: int | None = None                       # the word left in the port at the end (not read)
    invalid_reads: int = 0                        # reads of an empty port
    poison_ok: bool = True                        # every empty read returned the poison word
    max_invalid_run: int = 0                      # longest run of cycles a polled port stayed empty
    _run: int = 0


class ConditionerBench:
    """dut: a Conditioner. raw: list of raw words. seeds: {raw index j: [user seed words]}.
    pattern(cycle) -> (read_kernel, read_server). Stops after `want` valid words in total or
    after `max_cycles`."""

    def __init__(self, dut, raw, seeds=None, cfg=(2, 64, True), pattern=None, want=64,
                 max_cycles=200_000, poison=0xDEAD_BEEF):
        self.dut = dut
        self.raw = list(raw)
        self.seeds = dict(seeds or {})
        self.cfg = cfg
        self.pattern = pattern or (lambda c: (True, False))
        self.want = want
        self.max_cycles = max_cycles
        self.poison = poison
        self.logs = [PortLog(), PortLog()]
        self.raw_used = 0
        self.cycles = 0
        self.first_word_cycle = None
        self.last_word_cycle = None

    def process(self):
        d = self.dut
        ri, si, se = self.cfg
        yield d.reseed_interval.eq(ri)
        yield d.selfmix_interval.eq(si)
        yield d.selfmix_ena.eq(int(se))
        total = 0
        held = 0  # words sitting in ports nobody reads (a port keeps its word until it is read)
        seeded_j = set()
        while total + held < self.want and self.cycles < self.max_cycles:
            j = self.raw_used
            # user seeds tagged j go in before raw word j is offered (one SEED write per cycle)
            pending = self.seeds.get(j, [])
            if j not in seeded_j and pending:
                yield d.raw_valid.eq(0)
                for p in d.ports:
                    yield p.rd.eq(0)
                for w in pending:
                    yield d.seed_data.eq(w)
                    yield d.seed_we.eq(1)
                    yield
                    self.cycles += 1
                yield d.seed_we.eq(0)
                seeded_j.add(j)
            if j < len(self.raw):
                yield d.raw_valid.eq(1)
                yield d.raw_data.eq(self.raw[j])
            else:
                yield d.raw_valid.eq(0)
            reads = self.pattern(self.cycles)
            for p, want_read in zip(d.ports, reads):
                yield p.rd.eq(int(want_read))
            yield  # one clock; the reads below see this cycle's values (before the edge)
            self.cycles += 1
            if (yield d.raw_ready):
                self.raw_used += 1
            held = 0
            for p, log, want_read in zip(d.ports, self.logs, reads):
                if not want_read:
                    log.held = (yield p.word) if (yield p.valid) else None
                    held += log.held is not None
                    continue
                v = yield p.valid
                w = yield p.dout
                if v:
                    log.words.append(w)
                    log._run = 0
                    total += 1
                    if self.first_word_cycle is None:
                        self.first_word_cycle = self.cycles
                    self.last_word_cycle = self.cycles
                else:
                    log.invalid_reads += 1
                    log.poison_ok &= (w == self.poison)
                    if self.first_word_cycle is not None:
                        log._run += 1
                        log.max_invalid_run = max(log.max_invalid_run, log._run)
        for p in d.ports:
            yield p.rd.eq(0)
        yield d.raw_valid.eq(0)


def merge_matches(expected, kernel, server):
    """True if `kernel` and `server`, interleaved, deliver all of `expected` in stream order, each
    word to exactly one port (words after the last expected one, from blocks the case does not
    cover, are ignored). Returns (ok, index of the first mismatch or of the first missing word)."""
    i = a = b = 0
    while a < len(kernel) or b < len(server):
        if i >= len(expected):
            return True, i
        if a < len(kernel) and kernel[a] == expected[i]:
            a += 1
        elif b < len(server) and server[b] == expected[i]:
            b += 1
        else:
            return False, i
        i += 1
    return i == len(expected), i


class PageBus:
    """Register accesses by spec name to a Verilated TRNG block (csr.TrngBus's bus: one access
    at a time, `stb` held until the registered `ack`). `after_tick` runs after every clock (a
    bench records what the block did in that cycle); `before` runs before every access."""

    def __init__(self, sim, spec, after_tick=None, before=None):
        self.s = sim
        self.pages = {"server": spec.server.registers, "kernel": spec.kernel.registers}
        self.after_tick = after_tick or (lambda: None)
        self.before = before or (lambda: None)

    def tick(self):
        self.s.tick()
        self.after_tick()

    def access(self, page, off, we, dat=0, limit=10):
        s = self.s
        self.before()
        s.poke("server_sel", int(page == "server"))
        s.poke("kernel_sel", int(page == "kernel"))
        s.poke("adr", off)
        s.poke("we", int(we))
        s.poke("dat_w", dat)
        s.poke("stb", 1)
        for _ in range(limit):
            self.tick()
            if s.peek("ack"):
                break
        else:
            raise TimeoutError(f"no ack from the {page} page at {off:#x} within {limit} cycles")
        v = s.peek("dat_r")
        s.poke("stb", 0)
        s.poke("server_sel", 0)
        s.poke("kernel_sel", 0)
        self.tick()
        return v

    def w(self, reg, page="server", **fields):
        r = self.pages[page][reg]
        self.access(page, r.offset, True, r.pack(**fields))

    def r(self, reg, field=None, page="server"):
        r = self.pages[page][reg]
        v = self.access(page, r.offset, False)
        return r.fields[field].get(v) if field else v

    def f(self, reg, v, field, page="server"):
        return self.pages[page][reg].fields[field].get(v)
