"""A CSR page laid out from a spec register table (shared by the gateware blocks).

The register table comes from a spec file (spec/trng.toml `[regs.*]`, spec/engine25519.toml
`[csr]`): every register has `offset`, `access` ("ro", "rw", "wo") and `fields` (name -> object
with `lsb` and `width`). Offsets, positions and widths are never typed in Python: a block only
binds each spec field to the signal it means, and `check_bindings` (called by every block's test)
proves that every spec field is bound and nothing else is.

Binding kinds (tuples, so a block's binding table reads like the register map):
    ("rw", sig)            storage: reads back `sig`, a write loads it (sig is a register; its
                           Migen reset value is the register's reset value)
    ("ro", expr)           status: reads `expr`, writes ignored
    ("pending", sig)       event pending bit: reads `sig`, writing 1 clears it (the block sets
                           it; a set in the same cycle as the clear wins)
    ("pulse", sig)         write-1 pulse: `sig` is 1 for the cycle of a write with the bit set,
                           reads 0
    ("wstrobe", we, dat)   write strobe: `we` is 1 for the cycle of a write, `dat` carries the
                           field's bits (a write-only data register, e.g. a seed)
    ("rstrobe", expr, re)  read with a side effect: reads `expr`; `re` is 1 in the cycle the
                           read is taken (once per bus access), e.g. a read-invalidate port
    ("rwstrobe", sig, we)  storage with a write strobe: as "rw", and `we` is 1 for the cycle of
                           the write (a data register that also acts, e.g. a seed word)

Bus (one access at a time, as gateware/engine/csr.py): `sel`, `adr` (byte offset in the page),
`we`, `dat_w`, `stb`; the access is taken in the cycle `stb & sel & ~ack`, `ack` follows one
cycle later with `dat_r`. Undecoded offsets read `undecoded` and ignore writes.
"""

from __future__ import annotations

from migen import Case, If, Module, Mux, Signal

KINDS = {"rw": 2, "ro": 2, "pending": 2, "pulse": 2, "wstrobe": 3, "rstrobe": 3, "rwstrobe": 3}


def spec_fields(registers: dict) -> set:
    return {(n, f) for n, r in registers.items() for f in r.fields}


def check_bindings(registers: dict, bindings: dict) -> None:
    """Raise ValueError unless `bindings` binds exactly the spec's fields, each once, with a
    kind that fits the register's access."""
    want, have = spec_fields(registers), set(bindings)
    if want != have:
        raise ValueError(f"unbound spec fields: {sorted(want - have)}; bound but not in the spec: {sorted(have - want)}")
    for (reg, field), b in bindings.items():
        kind = b[0]
        if kind not in KINDS or len(b) != KINDS[kind]:
            raise ValueError(f"{reg}.{field}: bad binding {b!r}")
        access = registers[reg].access
        ok = {"ro": ("ro", "rstrobe"), "wo": ("wstrobe", "pulse"), "rw": ("rw", "pending", "pulse", "rstrobe", "rwstrobe")}[access]
        if kind not in ok:
            raise ValueError(f"{reg}.{field}: a {kind!r} binding in a {access!r} register")


class CsrPage(Module):
    def __init__(self, registers: dict, bindings: dict, undecoded: int = 0, late: tuple = ()):
        """`late`: registers whose read value arrives late in the cycle (a block RAM's output,
        5.8 ns after the clock on an ECP5): taken into a register of their own at the access,
        beside the offset case's, and `dat_r` is a 2-way mux of the two registers (the same
        reads in the same cycles, with no mux tree behind the late value)."""
        check_bindings(registers, bindings)
        assert set(late) <= set(registers), f"late registers not in the page: {sorted(set(late) - set(registers))}"
        self.sel = Signal()
        self.adr = Signal(16)
        self.we = Signal()
        self.dat_w = Signal(32)
        self.stb = Signal()
        self.ack = Signal()
        self.dat_r = Signal(32)
        self.ios = {self.sel, self.adr, self.we, self.dat_w, self.stb, self.ack, self.dat_r}

        # # #

        take = Signal()
        self.comb += take.eq(self.stb & self.sel & ~self.ack)
        rd = Signal(32)
        tree = Signal(32)   # the offset case's read value
        reads, lates, sets_first, writes = {}, {}, [], []
        for name, reg in registers.items():
            hit = Signal(name=f"hit_{name.lower()}")
            self.comb += hit.eq(take & (self.adr == reg.offset))
            wr = Signal(name=f"wr_{name.lower()}")
            rde = Signal(name=f"rd_{name.lower()}")
            self.comb += [wr.eq(hit & self.we), rde.eq(hit & ~self.we)]
            val = Signal(32, name=f"val_{name.lower()}")
            for fname, f in reg.fields.items():
                b = bindings[(name, fname)]
                kind = b[0]
                bits = slice(f.lsb, f.lsb + f.width)
                wv = self.dat_w[bits]
                if kind in ("rw", "ro", "pending", "rwstrobe"):
                    self.comb += val[bits].eq(b[1])
                if kind in ("rw", "rwstrobe"):
                    writes.append(If(wr, b[1].eq(wv)))
                if kind == "rwstrobe":
                    self.comb += b[2].eq(wr)
                elif kind == "pending":
                    writes.append(If(wr & wv[0], b[1].eq(0)))
                elif kind == "pulse":
                    self.comb += b[1].eq(wr & wv[0])
                elif kind == "wstrobe":
                    self.comb += [b[1].eq(wr), b[2].eq(wv)]
                elif kind == "rstrobe":
                    self.comb += [val[bits].eq(b[1]), b[2].eq(rde)]
            assert reg.offset not in reads and reg.offset not in lates, f"two registers at offset {reg.offset:#x}"
            if name in late:
                lates[reg.offset] = val
            else:
                reads[reg.offset] = tree.eq(val)
        # one case on the offset (a mux tree; a chain of Ifs was a priority chain of LUTs as
        # long as the page, the worst path of the TRNG on the ECP5), then the late registers
        reads["default"] = tree.eq(undecoded)
        self.comb += Case(self.adr, reads)
        # pending bits: the block's `sync` sets run before these writes in the same cycle, so a
        # clear would win; blocks call `pending_set` instead, which puts the set after the clear
        self.sync += writes
        self.sync += self.ack.eq(take)
        if not lates:
            self.comb += rd.eq(tree)
            self.sync += If(take, self.dat_r.eq(rd))
        else:
            late_hit, late_val = Signal(), Signal(32)
            self.comb += late_val.eq(0)
            for off, val in lates.items():
                self.comb += If(self.adr == off, late_hit.eq(1), late_val.eq(val))
            tree_q, late_q, late_sel = Signal(32), Signal(32), Signal()
            self.sync += If(take, tree_q.eq(tree), late_q.eq(late_val), late_sel.eq(late_hit))
            self.comb += self.dat_r.eq(Mux(late_sel, late_q, tree_q))

    def pending_set(self, sig, cond):
        """Set the pending bit `sig` when `cond` (wins over a write-1-to-clear in the same cycle)."""
        self.sync += If(cond, sig.eq(1))
