"""The simulated Precursor SoC (step sim:soc).

* test_map_*: the SoC's CSR map (csr.csv of the built SoC, and the field layout of every
  register) equals Precursor's SVD for every block it provides; IRQ lines and the RAM region
  too. The pages not made of LiteX CSRs (TRNG, engine): tests/test_svd.py, field by field;
  test_build_writes_its_svd: the build writes the SoC's SVD (soc.svd). PRECURSOR_SVD names the SVD (xtask passes utralib 0.1.15's precursor/soc-pvt.svd).
* test_soc_selftest: firmware/soc_test.S on the Verilated SoC: UARTs, the TRNG kernel port,
  ticktimer rate,
  a ticktimer interrupt in supervisor mode, sv32 paging, a user-mode ecall.
* test_run_*: the runner fails a program that never finishes, ends a run soon after a kernel
  crash line, and refuses oversized images.
"""

from __future__ import annotations

import csv
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from precursor import blocks
from precursor import map as pmap
from precursor import memlcd
from precursor import run as prun
from precursor import soc as psoc

HERE = Path(__file__).resolve().parent
FIRMWARE = HERE.parent / "firmware"


def _svd_path() -> Path:
    p = os.environ.get("PRECURSOR_SVD")
    if not p:
        pytest.fail("PRECURSOR_SVD is not set (xtask sets it to utralib's precursor/soc-pvt.svd)")
    return Path(p)


def _svd():
    """name -> {base, regs: {NAME: (offset, [(field, lsb, width)])}, irq}; memory regions."""
    root = ET.parse(_svd_path()).getroot()
    blocks = {}
    for p in root.iter("peripheral"):
        name = p.findtext("name").lower()
        regs = {}
        for r in p.iter("register"):
            fields = sorted((f.findtext("name"), int(f.findtext("lsb")), int(f.findtext("msb")) - int(f.findtext("lsb")) + 1) for f in r.iter("field"))
            regs[r.findtext("name").upper()] = (int(r.findtext("addressOffset"), 0), fields)
        irqs = {i.findtext("name").lower(): int(i.findtext("value")) for i in p.iter("interrupt")}
        blocks[name] = {"base": int(p.findtext("baseAddress"), 0), "regs": regs, "irqs": irqs}
    regions = {m.findtext("name").lower(): (int(m.findtext("baseAddress"), 0), int(m.findtext("size"), 0)) for m in root.iter("memoryRegion")}
    return blocks, regions


@pytest.fixture(scope="module")
def built() -> Path:
    return psoc.build()


def _csr_csv(gw: Path):
    bases, regs, consts, regions = {}, {}, {}, {}
    with open(gw / "csr.csv") as f:
        for row in csv.reader(l for l in f if not l.startswith("#")):
            if row[0] == "csr_base":
                bases[row[1]] = int(row[2], 0)
            elif row[0] == "csr_register":
                regs[row[1]] = (int(row[2], 0), int(row[3]), row[4])
            elif row[0] == "constant":
                consts[row[1]] = row[2]
            elif row[0] == "memory_region":
                regions[row[1]] = (int(row[2], 0), int(row[3]))
    return bases, regs, consts, regions


def _expand(block: str, regs: dict) -> dict:
    """csr.csv registers of one block -> {NAME: offset}, multi-word registers split as
    Precursor names them (NAME1 = high word at the lower address, NAME0 = low word)."""
    out = {}
    base = None
    for full, (addr, words, _) in regs.items():
        if not full.startswith(block + "_"):
            continue
        name = full[len(block) + 1:].upper()
        for i in range(words):
            out[name if words == 1 else f"{name}{words - 1 - i}"] = addr + 4 * i
    return out


def test_map_csr_blocks_equal_precursor(built):
    svd, _ = _svd()
    bases, regs, _, _ = _csr_csv(built)
    provided = [b for b in pmap.CSR_LOCS if b not in pmap.SIM_ONLY]
    assert set(bases) == set(pmap.CSR_LOCS) | set(pmap.PAGE_LOCS), "csr.csv blocks differ from map.py"
    for b in provided:
        assert b in svd, f"{b} is not a Precursor block"
        assert bases[b] == svd[b]["base"] == pmap.csr_base(b), f"{b}: base {bases[b]:#x}, Precursor {svd[b]['base']:#x}"
        ours = {n: a - bases[b] for n, a in _expand(b, regs).items()}
        theirs = {n: off for n, (off, _) in svd[b]["regs"].items()}
        assert ours == theirs, f"{b}: registers differ from Precursor's\n ours   {ours}\n theirs {theirs}"


def test_map_pages_of_other_blocks_at_precursor_addresses(built):
    """The TRNG's pages (spec/trng.toml) and the engine's (spec/engine25519.toml) sit where
    Precursor has trng_server / trng_kernel / engine."""
    svd, _ = _svd()
    bases, _, _, _ = _csr_csv(built)
    assert pmap.PAGE_LOCS, "no block pages on the bus"
    for b, loc in pmap.PAGE_LOCS.items():
        assert bases[b] == svd[b]["base"] == pmap.CSR_BASE + loc * pmap.CSR_PAGING, f"{b}: {bases[b]:#x}, Precursor {svd[b]['base']:#x}"
    assert not set(pmap.PAGE_LOCS.values()) & set(pmap.CSR_LOCS.values())


def test_build_writes_its_svd(built):
    """The SoC build writes its register map as an SVD next to csr.csv (tests/test_svd.py
    compares that map with Precursor's, field by field, from the same generator)."""
    text = (built / psoc.SVD).read_text()
    assert text == psoc.svd_without_build()
    assert all(f"<name>{b.upper()}</name>" in text for b in ("trng_kernel", "trng_server", "engine", "ticktimer"))


def test_map_simctl_page_unused_on_precursor():
    svd, _ = _svd()
    used = {v["base"] for v in svd.values()}
    for b in pmap.SIM_ONLY:
        assert pmap.csr_base(b) not in used
        assert pmap.CSR_BASE <= pmap.csr_base(b) < pmap.CSR_BASE + pmap.CSR_SIZE


def test_map_fields_equal_precursor():
    """Every field of every register (from the SoC's own CSR objects) is where the SVD has it."""
    svd, _ = _svd()
    soc = psoc.PrecursorSim(psoc._platform(), pmap.CLK_FREQ, blocks.ALL, blocks.config())
    soc.finalize()
    for block, csrs in ((name, r.obj) for name, r in soc.csr_regions.items()):
        if block in pmap.SIM_ONLY:
            continue
        for c in csrs:
            name = (c.name[len(block) + 1:] if c.name.startswith(block + "_") else c.name).upper()
            words = (c.size + 31) // 32
            if hasattr(c, "fields") and c.fields.fields:
                fields = sorted((f.name, f.offset, f.size) for f in c.fields.fields)
            else:
                fields = [(name.lower(), 0, c.size)]
            if words == 1:
                got = svd[block]["regs"][name][1]
                assert fields == got, f"{block}.{name}: fields {fields}, Precursor {got}"
            else:
                # a wide register: one field over all words, Precursor splits it per word
                assert len(fields) == 1 and fields[0][2] == c.size
                for i in range(words):
                    got = svd[block]["regs"][f"{name}{i}"][1]
                    assert [(f, o, w) for f, o, w in got] == [(fields[0][0], 0, 32)], f"{block}.{name}{i}: {got}"


def test_map_irqs_and_ram_equal_precursor(built):
    svd, regions = _svd()
    _, _, consts, ours = _csr_csv(built)
    for b, irq in pmap.IRQS.items():
        assert svd[b]["irqs"].get(b) == irq, f"{b}: IRQ {irq}, Precursor {svd[b]['irqs']}"
        if b not in pmap.PAGE_LOCS:        # LiteX event managers (the others: soc.add_irq)
            assert consts.get(f"{b}_interrupt") == str(irq)
    assert ours["sram_ext"] == regions["sram_ext"] == (pmap.SRAM_EXT_BASE, pmap.SRAM_EXT_SIZE)
    assert ours["csr"] == (pmap.CSR_BASE, pmap.CSR_SIZE)
    assert ours["memlcd_fb"] == regions["memlcd"] == (pmap.MEMLCD_FB_BASE, pmap.MEMLCD_FB_SIZE)
    assert pmap.MEMLCD_FB_SIZE == memlcd.LINES * memlcd.WORDS_PER_LINE * 4
    # regions of other blocks (spec files) where Precursor has them: engine_mem = ENGINE
    svd_name = {"engine_mem": "engine"}
    for name, region in pmap.REGIONS.items():
        assert ours[name] == regions[svd_name[name]] == region, f"{name}: {ours.get(name)}, Precursor {regions.get(svd_name[name])}"
    assert consts["config_clock_frequency"] == str(pmap.CLK_FREQ)


def assemble(src: Path, out_dir: Path) -> bytes:
    obj, elf, binf = out_dir / "t.o", out_dir / "t.elf", out_dir / "t.bin"
    for cmd in (
        ["riscv64-unknown-elf-as", "-march=rv32ima_zicsr_zifencei", "-mabi=ilp32", "-o", obj, src],
        ["riscv64-unknown-elf-ld", "-m", "elf32lriscv", "-Ttext=0", "-o", elf, obj],
        ["riscv64-unknown-elf-objcopy", "-O", "binary", elf, binf],
    ):
        subprocess.run([str(c) for c in cmd], check=True)
    return binf.read_bytes()


CHECKS = ["uart", "trng", "engine", "memlcd", "ticktimer", "timer0", "susres", "irq", "sv32", "ecall"]


def test_soc_selftest(built, tmp_path):
    rom = assemble(FIRMWARE / "soc_test.S", tmp_path)
    expect = [rf"^VERDICT sim-soc/{c} PASS" for c in CHECKS] + [r"^VERDICT sim-soc PASS$", r"^soc-test: console UART$"]
    panel_log = tmp_path / "memlcd.log"
    res = prun.run(rom, timeout=120, expect=expect, echo=True, gw=built, keep=tmp_path / "run", memlcd=panel_log)
    assert res.reason == "finish" and res.code == 0, f"ended by {res.reason}, code {res.code}"
    assert res.ok(expect), res.summary(expect)
    console = [l.text for l in res.lines if l.source == "console"]
    assert console == ["soc-test: console UART"]
    check_memlcd_drawing(panel_log.read_text(), res)


def check_memlcd_drawing(log: str, res):
    """What soc_test.S drew reached the panel: exactly the sixteen dirty lines (not line 300,
    drawn but clean), each light but for its one dark pixel at x = 20k + 3; and BUSY lasted the
    serial transfer (16 + 352 clocks per line at PRESCALER 0) plus at most the scan of the
    buffer (16 cycles per line)."""
    records = memlcd.parse(log)
    assert [line for _, line, _ in records] == list(range(200, 216)), records
    img = memlcd.panel(records)
    dark = {(x, y) for y in range(memlcd.LINES) for x in range(memlcd.WIDTH) if not img[y][x]}
    assert dark == {(20 * k + 3, 200 + k) for k in range(16)}, sorted(dark)
    # the PNG holds the same pixels
    assert memlcd.read_png(memlcd.png(img)) == img
    line = next(l for l in res.lines if l.text.startswith("VERDICT sim-soc/memlcd PASS"))
    busy = int(line.text.split("busy_cycles=")[1])
    serial = 16 + 352 * 16
    assert serial <= busy <= serial + 16 * memlcd.LINES, f"BUSY for {busy} cycles (serial transfer {serial})"
    print(f"sim:soc: {res.cycles:,} cycles in {res.wall_s:.1f} s")


def test_memlcd_log_parser_refuses_bad_lines():
    good = f"100 5 0000ffff{'f' * 72}fffffffe\n"     # words 10..0: word 0 = 0xFFFF_FFFE
    r = memlcd.parse(good)
    assert r == [(100, 5, [0xFFFF_FFFE] + [0xFFFF_FFFF] * 9 + [0x0000_FFFF])]
    assert memlcd.panel(r)[5][0] == 0 and memlcd.panel(r)[5][1] == 1
    assert memlcd.panel(r, at=99)[5][0] == 1          # before the line was sent
    for bad in (f"100 536 {'f' * 88}\n", f"x 5 {'f' * 88}\n", f"100 5 {'f' * 87}\n"):
        with pytest.raises(memlcd.BadLog):
            memlcd.parse(bad + good)
    assert memlcd.parse(good + "200 6 ffff") == r      # a last line cut short is dropped


def test_run_times_out_on_a_hung_program(built, tmp_path):
    rom = (0x0000006F).to_bytes(4, "little")     # j . (never finishes)
    res = prun.run(rom, timeout=3, echo=False, gw=built, keep=tmp_path / "run")
    assert res.reason == "timeout" and not res.ok([])


def test_run_reports_a_failing_program(built, tmp_path):
    """A program that prints a FAIL verdict and finishes with code 0 is still a failure."""
    src = tmp_path / "f.S"
    src.write_text(
        ".option norvc\n_start:\n la a0, msg\n li a1, 0xF0005000\n1: lbu t0, 0(a0)\n beqz t0, 2f\n sw t0, 0(a1)\n"
        " addi a0, a0, 1\n j 1b\n2: li a1, 0xF003F000\n sw zero, 8(a1)\n3: j 3b\nmsg: .asciz \"VERDICT x FAIL\\n\"\n")
    res = prun.run(assemble(src, tmp_path), timeout=60, echo=False, gw=built, keep=tmp_path / "run")
    assert res.reason == "finish" and res.code == 0
    assert res.failed and not res.ok([])


def _print_then_spin(text: str, tmp_path: Path) -> bytes:
    """A ROM that writes `text` and a newline to the kernel UART, then spins forever."""
    src = tmp_path / "s.S"
    src.write_text(
        ".option norvc\n_start:\n la a0, msg\n li a1, 0xF0005000\n1: lbu t0, 0(a0)\n beqz t0, 2f\n sw t0, 0(a1)\n"
        f" addi a0, a0, 1\n j 1b\n2: j 2b\nmsg: .asciz \"{text}\\n\"\n")
    return assemble(src, tmp_path)


def test_run_ends_soon_after_a_kernel_crash_line(built, tmp_path):
    """A kernel line `PROGRAM HALT...` or `PANIC in PID...` ends the run (reason `crash`) a few
    million cycles later, instead of at the time limit (a crashed Xous spins in its panic
    handler); other failure lines (a FAIL verdict) do not end it."""
    for line in ("PROGRAM HALT: CPU Exception on PID 2: Store page fault", "PANIC in PID 1: panicked at x"):
        res = prun.run(_print_then_spin(line, tmp_path), timeout=240, echo=False, gw=built, keep=tmp_path / "run")
        assert res.reason == "crash" and not res.ok([]), (line, res.reason)
        assert res.wall_s < 200 and res.cycles >= prun.CRASH_GRACE_CYCLES, (res.wall_s, res.cycles)
        assert [l.text for l in res.lines] == [line]
    res = prun.run(_print_then_spin("VERDICT x FAIL", tmp_path), timeout=5, echo=False, gw=built, keep=tmp_path / "run2")
    assert res.reason == "timeout" and res.failed, res.reason


def test_run_profiles_the_cpu(built, tmp_path):
    """--profile: one sample every P cycles, in order, of the program that runs (machine mode,
    PCs inside its ROM code); without it no sample file is written."""
    src = tmp_path / "p.S"
    src.write_text(".option norvc\n_start:\n li t1, 2000\n1: addi t1, t1, -1\n bnez t1, 1b\n"
                   " li a1, 0xF003F000\n sw zero, 8(a1)\n2: j 2b\n")
    rom = assemble(src, tmp_path)
    out = tmp_path / "samples.txt"
    res = prun.run(rom, timeout=60, echo=False, gw=built, keep=tmp_path / "run", profile=(out, 16))
    assert res.reason == "finish" and res.code == 0
    rows = [l.split() for l in out.read_text().splitlines()]
    assert len(rows) > 100, len(rows)
    cycles = [int(r[0]) for r in rows]
    assert all(b - a == 16 for a, b in zip(cycles, cycles[1:])), "one sample every 16 cycles"
    assert all(r[2] == "3" for r in rows), "the ROM runs in machine mode"
    pcs = {int(r[1], 16) for r in rows[10:]}
    assert pcs and max(pcs) < len(rom), f"PCs outside the program: {sorted(pcs)[-3:]}"
    res = prun.run(rom, timeout=60, echo=False, gw=built, keep=tmp_path / "run2")
    assert res.reason == "finish" and not (tmp_path / "run2" / "profile.txt").exists()


def test_run_reports_a_powerdown(built, tmp_path):
    """A write of susres POWERDOWN.powerdown = 1 powers the SoC off: the run ends with reason
    `powerdown` (code POWERDOWN_CODE), which passes only when the run must end that way."""
    src = tmp_path / "p.S"
    src.write_text(
        ".option norvc\n_start:\n li a1, 0xF0013000\n li t0, 1\n sw t0, 0x1C(a1)\n1: j 1b\n")
    res = prun.run(assemble(src, tmp_path), timeout=60, echo=False, gw=built, keep=tmp_path / "run")
    assert res.reason == "powerdown" and res.code == prun.POWERDOWN_CODE, (res.reason, res.code)
    assert res.ok([], end="powerdown") and not res.ok([])
    # writing 0 does not power off
    src.write_text(
        ".option norvc\n_start:\n li a1, 0xF0013000\n sw zero, 0x1C(a1)\n li a1, 0xF003F000\n sw zero, 8(a1)\n1: j 1b\n")
    res = prun.run(assemble(src, tmp_path), timeout=60, echo=False, gw=built, keep=tmp_path / "run2")
    assert res.reason == "finish" and res.code == 0 and not res.ok([], end="powerdown")


def test_power_cycle_keeps_ram_and_resets_the_rest(built, tmp_path):
    """simctl WAKE armed: a power-down is followed by a power-up. The CPU starts again at its
    reset vector, simctl POWERUPS counts it, the RAM kept what was written before, and the
    blocks are back at their reset values (susres STATE, the engine's MPSTART); CYCLES runs on."""
    src = tmp_path / "p.S"
    src.write_text(""".option norvc
_start:
 li s0, 0xF003F000
 lw t0, 0x10(s0)
 bnez t0, after
 li t1, 1
 sw t1, 0x0C(s0)
 lw s1, 4(s0)
 li a0, 0x40000100
 sw s1, 0(a0)
 li a1, 0xF0013000
 li t1, 3
 sw t1, 0x18(a1)
 li a2, 0xF0020000
 li t1, 5
 sw t1, 4(a2)
 li t1, 1
 sw t1, 0x1C(a1)
1: j 1b
after:
 li a3, 2
 li t1, 1
 bne t0, t1, fail
 li a3, 3
 li a0, 0x40000100
 lw t1, 0(a0)
 beqz t1, fail
 li a3, 4
 lw t2, 4(s0)
 bgeu t1, t2, fail
 li a3, 5
 li a1, 0xF0013000
 lw t1, 0x18(a1)
 bnez t1, fail
 li a3, 6
 li a2, 0xF0020000
 lw t1, 4(a2)
 bnez t1, fail
 sw zero, 8(s0)
2: j 2b
fail:
 sw a3, 8(s0)
3: j 3b
""")
    res = prun.run(assemble(src, tmp_path), timeout=60, echo=False, gw=built, keep=tmp_path / "run")
    # code 2..6: the check that failed (POWERUPS, RAM, CYCLES' low word, susres STATE, MPSTART)
    assert res.reason == "finish" and res.code == 0, (res.reason, res.code)


def test_run_refuses_oversized_images(tmp_path):
    with pytest.raises(ValueError, match="ROM image"):
        prun.words_hex(b"\0" * (pmap.ROM_SIZE + 4), pmap.ROM_SIZE, "the ROM image")
    rom = tmp_path / "rom.bin"
    rom.write_bytes(b"\0" * (pmap.ROM_SIZE + 4))
    assert prun.main(["--rom", str(rom), "--quiet"]) == 2
    assert prun.main(["--rom", str(tmp_path / "missing.bin"), "--quiet"]) == 2
    rom.write_bytes(b"\0" * 4)
    for flag in ("--expect", "--fail", "--until"):
        assert prun.main(["--rom", str(rom), "--quiet", flag, "(unclosed"]) == 2
    # the keyboard's input: a bad pattern, a missing file, a pair cut short
    assert prun.main(["--rom", str(rom), "--quiet", "--type-after", "(unclosed", "hello"]) == 2
    assert prun.main(["--rom", str(rom), "--quiet", "--keys", str(tmp_path / "no-keys.txt")]) == 2
    with pytest.raises(SystemExit) as e:
        prun.main(["--rom", str(rom), "--quiet", "--type-after", "ready"])
    assert e.value.code == 2
    for port in ("0", "65536", "-1"):
        assert prun.main(["--rom", str(rom), "--quiet", "--bridge-port", port]) == 2, port
    for period in ("0", "-5", str((1 << 31) + 1)):
        assert prun.main(["--rom", str(rom), "--quiet", "--profile", str(tmp_path / "s.txt"), "--profile-period", period]) == 2, period
    assert prun.main(["--rom", str(rom), "--quiet", "--profile", str(tmp_path / "no" / "such" / "s.txt")]) == 2
    for bad in (["--bridge-port", "http"], ["--end", "finish"], ["--profile-period", "often"]):
        with pytest.raises(SystemExit) as e:
            prun.main(["--rom", str(rom), "--quiet", *bad])
        assert e.value.code == 2, bad


def test_run_parses_cycle_stamped_lines(tmp_path):
    """Lines as the UART sinks write them: "<cycle> text"; a "\\n\\r" line end leaves its \\r at
    the start of the next line, which is not part of the text."""
    f = tmp_path / "console.log"
    f.write_bytes(b"469671 LOG: starting up...\n471293 \rLOG: Server listening\r\n480000 partial")
    t = prun._Tail(f, "console")
    assert t.poll() == [("console", 469671, "LOG: starting up..."), ("console", 471293, "LOG: Server listening")]
    assert t.flush() == [("console", 480000, "partial")]


def test_run_dir_gets_every_memory_init_of_the_build(built, tmp_path):
    """The simulator runs in a fresh directory: besides the run's ROM and RAM images it needs every
    other $readmemh file of the build there, e.g. the engine register file's constant rows (a
    missing file leaves that memory zero: the engine then computes with zero constants)."""
    names = prun.memory_init_files(built)
    assert psoc.ROM_INIT in names and psoc.RAM_INIT in names
    others = [n for n in names if n not in (psoc.ROM_INIT, psoc.RAM_INIT)]
    assert any("rf" in n for n in others), f"no register-file init among {names}"
    runs = tmp_path / "run"
    runs.mkdir()
    prun.link_build_inits(built, runs)
    for n in others:
        assert (runs / n).read_bytes() == (built / n).read_bytes(), n
        assert any(int(w, 16) for w in (runs / n).read_text().split()), f"{n} is all zero"


def test_run_refuses_a_build_missing_a_memory_init(built, tmp_path):
    gw = tmp_path / "gw"
    gw.mkdir()
    (gw / "sim.v").write_text((built / "sim.v").read_text())
    with pytest.raises(SystemExit, match=r"reads \S+\.init with \$readmemh but has no such file"):
        prun.link_build_inits(gw, tmp_path)
