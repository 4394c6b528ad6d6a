"""The Python reader agrees with the spec's hand-computed golden words (which the Rust assembler is
tested against too) and with the anchor facts."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import engine_isa  # noqa: E402


@pytest.fixture(scope="module")
def spec():
    return engine_isa.load()


def test_golden_examples(spec):
    assert len(spec.examples) >= 8
    for ex in spec.examples:
        assert spec.assemble_line(ex["isa"], ex["asm"]) == ex["word"], ex["asm"]


def test_decode_roundtrip(spec):
    for ex in spec.examples:
        assert spec.encode(**spec.decode(ex["word"])) == ex["word"]


def test_v1_tables(spec):
    v1 = spec.isas["v1"]
    assert [v1.by_code[c].mnemonic for c in range(13)] == [
        "psa", "psb", "msk", "xor", "not", "add", "sub", "mul", "trd", "brz", "fin", "shl", "xbt"]
    # the shipped engine (betrusted-io/gateware engine.py): MUL 28, FIN 2, illegal 3, GO 1
    assert v1.by_mnemonic["mul"].cycles == 28
    assert v1.by_mnemonic["fin"].cycles == 2
    assert (v1.illegal_cycles, v1.go_cycles) == (3, 1)
    assert v1.const_rom[3] == 2**255 - 19
    assert v1.const_rom[2] == 121665 and v1.const_rom[9] == 100 and v1.const_rom[10] == 0
    opcode = spec.fields["opcode"]
    for isa in spec.isas.values():
        assert opcode.get(spec.udf_word) not in isa.by_code  # udf is illegal everywhere
        assert isa.cycles_of(spec.udf_word, opcode) == isa.illegal_cycles


def test_maps(spec):
    assert spec.csr.base == 0xF002_0000 and spec.csr.irq == 18
    mpc = spec.csr.registers["STATUS"].fields["mpc"]
    assert (spec.csr.registers["STATUS"].offset, mpc.lsb, mpc.width) == (0x18, 1, 10)
    assert spec.memory["base"] + spec.rf_offset(2, 5) == 0xE002_0000 + 0x1_0000 + 2 * 0x400 + 5 * 0x20


def test_bad_input(spec):
    with pytest.raises(engine_isa.SpecError):
        spec.assemble_line("v1", "frob %1")
    with pytest.raises(engine_isa.SpecError):
        spec.assemble_line("v1", "psa %1, %32")
    with pytest.raises(engine_isa.SpecError):
        spec.assemble_line("v1", "mul %1, %2")
    with pytest.raises(engine_isa.SpecError):
        spec.encode(opcode=64)


def test_inheritance_resolution(tmp_path):
    text = engine_isa.SPEC_PATH.read_text()
    text += """
[isa.v9]
title = "t"
description = "d"
inherits = "v1"
eng_clk_hz = 1
mul_clk_hz = 1
rf_clk_hz = 1
go_cycles = 1
illegal_cycles = 1
cycle_derivation = "x"
[isa.v9.units]
mul = 3
[[isa.v9.opcodes]]
code = 7
mnemonic = "mul"
operands = ["wd", "ra", "rb"]
cycles = 9
unit = "mul"
semantics = "x"
[[isa.v9.opcodes]]
code = 20
mnemonic = "new"
operands = ["wd", "ra"]
cycles = 4
semantics = "x"
"""
    p = tmp_path / "s.toml"
    p.write_text(text)
    s = engine_isa.load(p)
    v9, v1 = s.isas["v9"], s.isas["v1"]
    assert v9.by_mnemonic["mul"].cycles == 9 and v1.by_mnemonic["mul"].cycles == 28
    assert v9.by_mnemonic["add"] == v1.by_mnemonic["add"]  # inherited unchanged
    assert v9.by_code[20].mnemonic == "new" and 20 not in v1.by_code
    assert v9.const_rom == v1.const_rom
    assert v9.units == {"mul": 3} and v1.units == {}
