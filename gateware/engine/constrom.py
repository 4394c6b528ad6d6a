"""Constant ROM: const_slots x 256 bits, the ISA's constant table from the spec (unlisted slots
read 0). It is not a separate block: the slots are extra rows of the register-file array, after
the windows (`RegFile`), initialised from this table and never written (no writer addresses
them), so a constant operand is read through the same synchronous read ports as a register and
needs no operand mux."""

from __future__ import annotations

from . import spec


def contents(isa: str) -> list[int]:
    """The slots' values, slot 0 first."""
    rom = spec.load().isas[isa].const_rom
    assert len(rom) == spec.load().geometry["const_slots"]
    return list(rom)
