"""ChaCha20 conditioner: the hardware twin of trng_core::conditioner (bit-exact, see
docs/trng-gateware.md).

State (reset and `invalidate` zero all of it):
- seed ring: 12 x 32-bit words, the 384-bit seeded state (key 0..8, counter 8..10 low word first,
  iv 10..12). Word 0 is the head. One `shift` moves every word down by one and writes
  `(head ^ inject) + increment` to word 11, so
    * folding a raw word (XOR-then-rotate, `state[0] ^= w; rotate left`) is one shift with inject = w,
    * reading the ring word by word is 12 shifts with inject = 0 (the ring is back where it was),
    * advancing the 64-bit block counter is the +1 / +carry on words 8 and 9 during such a pass,
    * self-mix (`seed[0..8] ^= block[0..8]`) injects the block's words during the same pass;
- blind ring: 16 x 32-bit words loaded from raw entropy after the seed, XORed onto every output
  word, rotating once per output block;
- work RAM: 16 x 32 LUT RAM holding the ChaCha working state during the rounds (and a copy,
  written with it and so wiped with it, that FINAL reads: its own read port for the timing);
- QR unit: four 32-bit registers and one adder/XOR/rotator. One step is `X += Y; Z = (Z ^ X) <<< r`
  and renames the registers so the next step finds its operands in the same places; four steps
  are a quarter round. Between quarter rounds the registers swap with the work RAM, one word per
  cycle (the outgoing quarter round's words are written while the next one's are read).

Block schedule (what trng_core::conditioner::Conditioner::generate does, block by block):
    before each output block:
        if blocks_since_reseed >= reseed_interval: absorb one raw word (stall until there is one)
        if selfmix_ena and blocks_since_selfmix >= selfmix_interval: one discarded block whose
            words 0..8 are XORed into the key, counter + 1
    output block = ChaCha20(seed) ^ blind; counter + 1
A user seed (`seed_we`) is XORed into the next raw word absorbed (seed, blind or reseed word).

Cycles per block: LOAD 16 + 81 swaps x 4 + 80 quarter rounds x 4 + FINAL 16 + 1 = 677.

Output: a 32-word FIFO (two blocks) feeding two read-invalidate ports. Port 0 (kernel) has priority
when both are empty. Each port holds one word and a valid bit; reading the port (`rd` strobe) returns
the word and empties the port (the word register is zeroed); an empty port reads `poison` with
valid = 0, never an earlier word.
"""

from migen import *
from migen.genlib.fifo import SyncFIFO
from migen.genlib.fsm import FSM, NextState, NextValue

CHACHA_CONSTANTS = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # "expand 32-byte k"
ROTATIONS = (16, 12, 8, 7)
SEED_WORDS = 12
BLIND_WORDS = 16
OUT_FIFO_DEPTH = 32
CYCLES_PER_BLOCK = 16 + 81 * 4 + 80 * 4 + 16 + 1


def qr_word(q: int, j: int) -> int:
    """Work-RAM address of the j-th transferred word (roles in the order a, b, d, c) of quarter
    round q (0..3 columns, 4..7 diagonals)."""
    row = (0, 1, 3, 2)[j]
    col = (q & 3) + (row if q >= 4 else 0)
    return 4 * row + (col & 3)


class URandomPort(Module):
    """One read-invalidate port: a word register and its valid bit."""

    def __init__(self, poison):
        self.word = Signal(32)
        self.valid = Signal()
        self.rd = Signal()        # in: the CPU read the port this cycle
        self.dout = Signal(32)    # out: what a read returns
        self.load = Signal()      # in: take `din` (only when empty or being read)
        self.din = Signal(32)
        self.flush = Signal()     # in: drop the word (health failure / invalidate)
        self.comb += self.dout.eq(Mux(self.valid, self.word, poison))
        # a read empties the port; a load in the same cycle refills it (back-to-back reads get
        # consecutive words, never the word just read)
        self.sync += [
            If(self.flush,
                self.valid.eq(0),
                self.word.eq(0),
            ).Elif(self.load,
                self.valid.eq(1),
                self.word.eq(self.din),
            ).Elif(self.rd,
                self.valid.eq(0),
                self.word.eq(0),
            )
        ]


class Conditioner(Module):
    def __init__(self, poison=0xDEAD_BEEF, fifo_depth=OUT_FIFO_DEPTH):
        # raw entropy in (a stream: the conditioner pulls when it needs a word)
        self.raw_valid = Signal()
        self.raw_data = Signal(32)
        self.raw_ready = Signal()
        # configuration (CHACHA register)
        self.reseed_interval = Signal(12)
        self.selfmix_interval = Signal(16)
        self.selfmix_ena = Signal()
        # user seed (SEED register write)
        self.seed_we = Signal()
        self.seed_data = Signal(32)
        # forget everything (health failure, disable); level-sensitive: held, nothing runs
        self.invalidate = Signal()
        # ports: 0 = kernel (priority), 1 = server
        self.submodules.kport = URandomPort(poison)
        self.submodules.sport = URandomPort(poison)
        self.ports = [self.kport, self.sport]
        # status
        self.seeded = Signal()          # seed + blind loaded
        self.busy = Signal()            # a block is being computed
        self.blocks_out = Signal(32)    # output blocks pushed (statistics)
        self.reseeds = Signal(32)
        self.selfmixes = Signal(32)

        # # #

        seed = [Signal(32, name=f"seed{i}") for i in range(SEED_WORDS)]
        blind = [Signal(32, name=f"blind{i}") for i in range(BLIND_WORDS)]
        t = [Signal(32, name=f"t{i}") for i in range(4)]
        loaded = Signal(max=SEED_WORDS + BLIND_WORDS + 1)
        bsr = Signal(12)   # output blocks since the last reseed
        bsm = Signal(16)   # output blocks since the last self-mix
        user = Signal(32)
        selfmix = Signal()  # the block in flight is a self-mix block
        k = Signal(4)       # word index in LOAD / FINAL / WIPE
        g = Signal(7)       # quarter round 0..80 (80 = final write-back only)
        j = Signal(2)       # word / step within a quarter round
        carry = Signal()    # counter carry from word 8 into word 9

        self.comb += self.seeded.eq(loaded == SEED_WORDS + BLIND_WORDS)

        # --- output FIFO and ports ---------------------------------------------------------
        fifo = ResetInserter()(SyncFIFO(32, fifo_depth))
        self.submodules.fifo = fifo
        kload = Signal()
        sload = Signal()
        self.comb += [
            kload.eq((~self.kport.valid | self.kport.rd) & fifo.readable),
            sload.eq((~self.sport.valid | self.sport.rd) & fifo.readable & ~kload),
            fifo.re.eq(kload | sload),
            self.kport.load.eq(kload), self.kport.din.eq(fifo.dout),
            self.sport.load.eq(sload), self.sport.din.eq(fifo.dout),
            fifo.reset.eq(self.invalidate),
            self.kport.flush.eq(self.invalidate),
            self.sport.flush.eq(self.invalidate),
        ]

        # --- work RAM --------------------------------------------------------------------------
        mem = Memory(32, 16)
        wr = mem.get_port(write_capable=True)
        rd = mem.get_port(async_read=True)    # SWAP's reads
        # FINAL's reads (word k) from a copy of the work RAM written with it (LUT RAM, 16 x 32
        # bits), so FINAL's add does not wait for SWAP's address table and a mux on the state
        # (a second read port of the same memory would be merged with SWAP's by yosys, which
        # sees that the two states never read at once)
        memf = Memory(32, 16)
        wrf = memf.get_port(write_capable=True)
        rdf = memf.get_port(async_read=True)
        self.specials += mem, wr, rd, memf, wrf, rdf
        self.comb += [wrf.adr.eq(wr.adr), wrf.dat_w.eq(wr.dat_w), wrf.we.eq(wr.we)]
        rdata = Signal(32)  # read data with write bypass in SWAP (a word written and read in one cycle)
        bypass = Signal()   # SWAP writes back the word it reads this cycle (set below)
        self.comb += rdata.eq(Mux(bypass, wr.dat_w, rd.dat_r))

        # --- seed ring -------------------------------------------------------------------------
        seed_shift = Signal()
        inject = Signal(32)
        inc = Signal()
        self.sync += If(seed_shift,
            [seed[i].eq(seed[i + 1]) for i in range(SEED_WORDS - 1)],
            seed[SEED_WORDS - 1].eq((seed[0] ^ inject) + inc),
        )
        blind_shift = Signal()
        blind_in = Signal(32)
        self.sync += If(blind_shift,
            [blind[i].eq(blind[i + 1]) for i in range(BLIND_WORDS - 1)],
            blind[BLIND_WORDS - 1].eq(blind_in),
        )

        # --- raw word (user seed folded in) ------------------------------------------------------
        raw_word = Signal(32)
        self.comb += raw_word.eq(self.raw_data ^ user)
        absorb = Signal()
        self.comb += self.raw_ready.eq(absorb)
        self.sync += [
            If(self.invalidate | absorb, user.eq(0)),
            If(self.seed_we & ~self.invalidate, user.eq(Mux(absorb, 0, user) ^ self.seed_data)),
        ]

        def interval_due(count, interval):
            # the software clamps intervals to >= 1
            return (count >= interval) & (count != 0)

        # --- quarter-round step ------------------------------------------------------------------
        ssum = Signal(32)
        zx = Signal(32)
        zrot = Signal(32)
        self.comb += [
            ssum.eq(t[0] + t[1]),
            zx.eq(t[2] ^ ssum),
            Case(j, {i: zrot.eq(Cat(zx[32 - r:], zx[:32 - r])) for i, r in enumerate(ROTATIONS)}),
        ]

        # addresses of the swap phase: read quarter round g, write back quarter round g - 1
        gq = Signal(3)
        gq_prev = Signal(3)
        self.comb += [gq.eq(g[:3]), gq_prev.eq(g[:3] - 1)]
        addr_in = Signal(4)
        addr_out = Signal(4)
        self.comb += [
            Case(Cat(j, gq), {(q << 2) | jj: addr_in.eq(qr_word(q, jj)) for q in range(8) for jj in range(4)}),
            Case(Cat(j, gq_prev), {(q << 2) | jj: addr_out.eq(qr_word(q, jj)) for q in range(8) for jj in range(4)}),
        ]

        # FINAL: o = work[k] + init[k]
        init_word = Signal(32)
        o = Signal(32)
        self.comb += [
            init_word.eq(Mux(k < 4, Array(C(c, 32) for c in CHACHA_CONSTANTS)[k[:2]], seed[0])),
            o.eq(rdf.dat_r + init_word),
        ]

        fsm = ResetInserter()(FSM(reset_state="WIPE"))
        self.submodules.fsm = fsm
        self.comb += fsm.reset.eq(self.invalidate)
        # invalidate: zero the key material; the FSM's reset clears its own registers (t, counters,
        # loaded) and it then wipes the work RAM
        self.sync += If(self.invalidate, [s.eq(0) for s in seed + blind])
        # statistics survive invalidation
        stat_block = Signal()
        stat_reseed = Signal()
        stat_selfmix = Signal()
        self.sync += [
            If(stat_block, self.blocks_out.eq(self.blocks_out + 1)),
            If(stat_reseed, self.reseeds.eq(self.reseeds + 1)),
            If(stat_selfmix, self.selfmixes.eq(self.selfmixes + 1)),
        ]
        self.comb += self.busy.eq(~fsm.ongoing("IDLE") & ~fsm.ongoing("WIPE"))

        # The rings' shifts and the absorb, flat (one gate behind `raw_valid`: it comes from the
        # health tests' gating, and the shifts enable 28 x 32 flops; the whole TRNG's ECP5
        # timing). The same conditions as the states below spell out:
        #   IDLE, not seeded, a raw word: absorb it into the seed ring (12 words), then the blind
        #   IDLE, seeded, a reseed due, a raw word: absorb it into the seed ring
        #   LOAD, k >= 4: the seed ring turns (its words go to the work RAM)
        #   FINAL, going on (self-mix, FIFO room or k != 0): the seed ring turns for k >= 4, the
        #   blind ring for every output word (not for a self-mix block)
        fifo_room = Signal()
        self.comb += fifo_room.eq(fifo.level <= fifo_depth - 16)
        idle, load, final = fsm.ongoing("IDLE"), fsm.ongoing("LOAD"), fsm.ongoing("FINAL")
        due = Signal()
        idle_seed, idle_blind, final_go, turn = Signal(), Signal(), Signal(), Signal()
        self.comb += [
            due.eq(interval_due(bsr, self.reseed_interval)),
            idle_seed.eq(idle & Mux(self.seeded, due, loaded < SEED_WORDS)),
            idle_blind.eq(idle & ~self.seeded & (loaded >= SEED_WORDS)),
            final_go.eq(final & (selfmix | fifo_room | (k != 0))),
            turn.eq((load | final_go) & (k >= 4)),
            absorb.eq((idle_seed | idle_blind) & self.raw_valid),
            seed_shift.eq((idle_seed & self.raw_valid) | turn),
            blind_shift.eq((idle_blind & self.raw_valid) | (final_go & ~selfmix)),
        ]
        fsm.act("WIPE",
            wr.adr.eq(k), wr.dat_w.eq(0), wr.we.eq(1),
            NextValue(k, k + 1),
            If(k == 15, NextState("IDLE")),
        )
        fsm.act("IDLE",
            # the raw word is offered to both rings whether or not it is valid (only a shift
            # takes it), so `raw_valid` decides the shifts and not the words shifted in
            inject.eq(raw_word), blind_in.eq(raw_word),
            If(~self.seeded,
                # seeding: 12 seed words folded, then 16 blind words
                If(self.raw_valid,
                    NextValue(loaded, loaded + 1),
                ),
            ).Elif(interval_due(bsr, self.reseed_interval),
                If(self.raw_valid,
                    NextValue(bsr, 0),
                    stat_reseed.eq(1),
                ),
            ).Else(
                NextValue(selfmix, self.selfmix_ena & interval_due(bsm, self.selfmix_interval)),
                NextValue(k, 0),
                NextState("LOAD"),
            ),
        )
        # LOAD: work[k] = constants, then the 12 seed words (the ring turns once)
        fsm.act("LOAD",
            wr.adr.eq(k), wr.we.eq(1),
            If(k < 4,
                wr.dat_w.eq(Array(C(c, 32) for c in CHACHA_CONSTANTS)[k[:2]]),
            ).Else(
                wr.dat_w.eq(seed[0]),
            ),
            NextValue(k, k + 1),
            If(k == 15, NextValue(g, 0), NextValue(j, 0), NextState("SWAP")),
        )
        # SWAP: write back quarter round g-1 (g > 0), read quarter round g (g < 80)
        # the read addresses: SWAP's from its table, FINAL's word k (no other state reads)
        self.comb += [rd.adr.eq(addr_in), rdf.adr.eq(k)]
        # SWAP writes quarter round g-1's word j where it reads quarter round g's word j: when
        # those are the same word (a function of j and g mod 8 alone, a table, so the bypass
        # does not wait for the address muxes and their compare), the read takes the written word
        same = Signal()
        self.comb += Case(Cat(j, gq), {(q << 2) | jj: same.eq(qr_word(q, jj) == qr_word((q - 1) & 7, jj))
                                       for q in range(8) for jj in range(4)})
        fsm.act("SWAP",
            bypass.eq(same & (g != 0)),
            wr.adr.eq(addr_out), wr.dat_w.eq(t[0]), wr.we.eq(g != 0),
            NextValue(t[0], t[1]), NextValue(t[1], t[2]), NextValue(t[2], t[3]), NextValue(t[3], rdata),
            NextValue(j, j + 1),
            If(j == 3,
                If(g == 80,
                    NextValue(k, 0), NextState("FINAL"),
                ).Else(
                    NextState("COMP"),
                ),
            ),
        )
        # COMP: the four steps of one quarter round
        fsm.act("COMP",
            NextValue(t[0], t[3]), NextValue(t[1], zrot), NextValue(t[2], t[1]), NextValue(t[3], ssum),
            NextValue(j, j + 1),
            If(j == 3, NextValue(g, g + 1), NextState("SWAP")),
        )
        # FINAL: o = work[k] + init[k]; output block -> FIFO (^ blind), self-mix block -> key.
        # The ring turns once (k = 4..15) with counter + 1 on words 8/9 and, for self-mix, the
        # block's word k-4 (delayed four cycles through the QR registers) XORed into key word k-4.
        # The work RAM is zeroed behind the read.
        fsm.act("FINAL",
            If(selfmix | fifo_room | (k != 0),
                wr.adr.eq(k), wr.dat_w.eq(0), wr.we.eq(1),
                NextValue(t[0], t[1]), NextValue(t[1], t[2]), NextValue(t[2], t[3]), NextValue(t[3], o),
                If(k >= 4,
                    If(selfmix & (k < 12), inject.eq(t[0])),
                    inc.eq((k == 12) | ((k == 13) & carry)),
                ),
                If(k == 12, NextValue(carry, seed[0] == 0xFFFF_FFFF)),
                If(~selfmix,
                    fifo.we.eq(1), fifo.din.eq(o ^ blind[0]),
                    blind_in.eq(blind[0]),
                ),
                NextValue(k, k + 1),
                If(k == 15,
                    NextValue(k, 0),
                    If(selfmix,
                        NextValue(selfmix, 0), NextValue(bsm, 0),
                        stat_selfmix.eq(1),
                        NextState("LOAD"),
                    ).Else(
                        # saturating: the software compares counts >= interval, never wraps
                        NextValue(bsr, bsr + (bsr != 0xFFF)), NextValue(bsm, bsm + (bsm != 0xFFFF)),
                        stat_block.eq(1),
                        NextState("IDLE"),
                    ),
                ),
            ),
        )
