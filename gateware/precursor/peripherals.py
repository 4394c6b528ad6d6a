"""The CSR blocks of the simulated Precursor, with Precursor's register layout and semantics as far
as the Xous kernel and the base services use them (docs/sim.md lists each register and who reads
it). Written here from the register definitions in Precursor's SVD (utralib) and the behaviour
described in betrusted-io's gateware; no upstream code is used.

Every block is an ordinary LiteX `AutoCSR` module; LiteX lays out the registers in declaration
order, 32-bit words, multi-word registers most significant word first (csr_ordering "big"),
which reproduces Precursor's offsets. tests/test_map.py checks the generated csr.csv against
Precursor's SVD.
"""

from __future__ import annotations

from pathlib import Path

from migen import ClockSignal, FSM, If, Instance, Module, NextState, Signal

from litex.soc.interconnect.csr import AutoCSR, CSR, CSRField, CSRStatus, CSRStorage
from litex.soc.interconnect.csr_eventmanager import EventManager, EventSourceLevel, EventSourceProcess
from litex.soc.cores.uart import _get_uart_fifo

HERE = Path(__file__).resolve().parent
WDT_BITE_CODE = 0xDEAD_0001
POWERDOWN_CODE = 0xDEAD_0002      # the susres block's POWERDOWN: the SoC powered itself off
VERILOG_SOURCES = [HERE / "sim_uart_sink.v", HERE / "sim_finish.v", HERE / "sim_memlcd_sink.v", HERE / "sim_key_source.v"]
# the debug UART's byte time at 115200 baud (10 bits per character) at the declared 100 MHz
KEY_BYTE_CYCLES = 8_680


class CycleCounter(Module):
    """Free-running 64-bit count of sys clock cycles since the simulation started (the simulated
    time base). It runs in the `por` domain: a power cycle (PowerCycle) does not reset it."""

    def __init__(self):
        self.value = Signal(64)
        self.sync.por += self.value.eq(self.value + 1)


class PowerCycle(Module):
    """The SoC's power-down and power-up (`por` domain, never reset). A power-down (`off`: susres
    POWERDOWN.powerdown = 1) while `wake` is armed (simctl WAKE) is followed by a power-up: `rst`
    (the sys domain's reset, hence the CPU's, every peripheral's and the engine's) is held for
    HOLD cycles, then released, and the CPU starts again at its reset vector (the ROM). The RAM
    (sram_ext) keeps its contents, as Precursor's battery-backed SRAM does while the FPGA is
    off. `powerups` counts the power-ups since the simulation started. Not armed, a power-down
    ends the simulation (SimCtl), as before."""

    HOLD = 64

    def __init__(self, off: Signal):
        self.rst = Signal()
        self.wake = Signal()          # armed: a power-down is followed by a power-up
        self.arm_we = Signal()        # from simctl WAKE (sys domain, same clock)
        self.arm_value = Signal()
        self.powerups = Signal(32)
        count = Signal(max=self.HOLD + 1)
        self.sync.por += [
            If(self.arm_we, self.wake.eq(self.arm_value)),
            If(count != 0,
                count.eq(count - 1),
                If(count == 1, self.powerups.eq(self.powerups + 1)),
            ).Elif(off & self.wake,
                count.eq(self.HOLD),
            ),
        ]
        self.comb += self.rst.eq(count != 0)


class PrecursorUART(Module, AutoCSR):
    """Precursor's UART register block (`uart` at 0xF000_5000 for the kernel, `console` at
    0xF000_7000 for xous-log): RXTX, TXFULL, RXEMPTY, EV_STATUS/PENDING/ENABLE with events
    tx (bit 0) and rx (bit 1), as LiteX's UART without its later TXEMPTY/RXFULL registers.

    TX: a byte written to RXTX enters a FIFO that drains one byte per `tx_cycles` cycles into
    a simulation sink (a file, each line stamped with its cycle). RX: bytes pushed on `rx_valid`
    / `rx_data` (from the simulation host) enter the RX FIFO."""

    def __init__(self, cycles: Signal, filename: str, fifo_depth: int = 16, tx_cycles: int = 1):
        self._rxtx = CSR(8)
        self._txfull = CSRStatus(description="TX FIFO Full.")
        self._rxempty = CSRStatus(description="RX FIFO Empty.")

        self.submodules.ev = EventManager()
        self.ev.tx = EventSourceProcess(edge="rising")
        self.ev.rx = EventSourceProcess(edge="rising")
        self.ev.finalize()

        self.rx_valid = Signal()
        self.rx_data = Signal(8)
        self.rx_ready = Signal()

        # TX: CSR -> FIFO -> sink
        self.submodules.tx_fifo = tx_fifo = _get_uart_fifo(fifo_depth)
        drain = Signal()
        if tx_cycles > 1:
            div = Signal(max=tx_cycles)
            self.sync += If(div == 0, div.eq(tx_cycles - 1)).Else(div.eq(div - 1))
            self.comb += drain.eq(div == 0)
        else:
            self.comb += drain.eq(1)
        self.comb += [
            tx_fifo.sink.valid.eq(self._rxtx.re),
            tx_fifo.sink.data.eq(self._rxtx.r),
            tx_fifo.source.ready.eq(drain),
            self._txfull.status.eq(~tx_fifo.sink.ready),
            # level "tx FIFO not full" raises the tx event (as LiteX's UART)
            self.ev.tx.trigger.eq(tx_fifo.sink.ready),
        ]
        self.specials += Instance(
            "sim_uart_sink",
            p_FILENAME=filename,
            i_clk=ClockSignal("sys"),
            i_valid=tx_fifo.source.valid & drain,
            i_data=tx_fifo.source.data,
            i_cycles=cycles,
        )

        # RX: host -> FIFO -> CSR
        self.submodules.rx_fifo = rx_fifo = _get_uart_fifo(fifo_depth)
        self.comb += [
            rx_fifo.sink.valid.eq(self.rx_valid),
            rx_fifo.sink.data.eq(self.rx_data),
            self.rx_ready.eq(rx_fifo.sink.ready),
            self._rxempty.status.eq(~rx_fifo.source.valid),
            self._rxtx.w.eq(rx_fifo.source.data),
            # a byte leaves the FIFO when the rx event is cleared (EV_PENDING.rx = 1)
            rx_fifo.source.ready.eq(self.ev.rx.clear),
            # level "rx FIFO not empty" raises the rx event
            self.ev.rx.trigger.eq(rx_fifo.source.valid),
        ]


class TickTimer(Module, AutoCSR):
    """Precursor's `ticktimer` (0xF001_2000, IRQ 8): a 64-bit count of milliseconds.

    CONTROL.reset (bit 0, pulse) clears the count. TIME (64 bit: TIME1 = high word at +0x04,
    TIME0 = low word at +0x08) is the elapsed time in ticks of `clks_per_tick` sys cycles.
    MSLEEP_TARGET (64 bit, +0x0C/+0x10) is the alarm time; the `alarm` event (level) is
    active while MSLEEP_TARGET <= TIME.

    The susres block (SusRes) controls the count through `pause` (the count stops at the next
    tick boundary; `paused` says it has), `load` / `load_value` (while paused: set the count)
    and reads it as `timer` (its TIME mirror)."""

    def __init__(self, clks_per_tick: int, bits: int = 64):
        assert clks_per_tick >= 1
        self.clks_per_tick = clks_per_tick
        self.control = CSRStorage(fields=[CSRField("reset", description="Write 1 to reset the count to 0.", pulse=True)])
        self.time = CSRStatus(bits, name="time", description="Elapsed time in ticks.")
        self.msleep_target = CSRStorage(size=bits, description="Alarm time in ticks.")
        self.submodules.ev = EventManager()
        self.ev.alarm = EventSourceLevel()
        self.ev.finalize()

        self.pause = Signal()
        self.paused = Signal()
        self.load = Signal()
        self.load_value = Signal(bits)
        self.timer = timer = Signal(bits)
        prescaler = Signal(max=clks_per_tick + 1, reset=clks_per_tick - 1)
        self.sync += [
            If(self.control.fields.reset,
                timer.eq(0),
                prescaler.eq(clks_per_tick - 1),
            ).Elif(self.load & self.paused,
                timer.eq(self.load_value),
            ).Elif(prescaler == 0,
                prescaler.eq(clks_per_tick - 1),
                If(self.pause,
                    self.paused.eq(1),
                ).Else(
                    self.paused.eq(0),
                    timer.eq(timer + 1),
                ),
            ).Else(
                prescaler.eq(prescaler - 1),
            )
        ]
        self.comb += [
            self.time.status.eq(timer),
            self.ev.alarm.trigger.eq(self.msleep_target.storage <= timer),
        ]


class Timer0(Module, AutoCSR):
    """Precursor's `timer0` (0xF000_1000, IRQ 0): the OS preemption timer the susres server
    programs (a LiteX-style down counter). LOAD (+0x00): the value loaded while EN = 0; RELOAD
    (+0x04): the value loaded when the count reaches 0 while EN = 1; EN (+0x08); event `zero`
    (EV_STATUS/PENDING/ENABLE at +0x0C/+0x10/+0x14): raised when the count falls to 0.

    On Precursor it counts a 12 MHz clock in the always-on domain (xous-susres programs it
    with 12,000 ticks per millisecond). Here it counts `tick_hz` on average: a fractional
    divider of the sys clock (12 MHz from 100 MHz: 3 ticks every 25 cycles)."""

    def __init__(self, clk_freq: int, tick_hz: int = 12_000_000):
        from math import gcd
        assert 0 < tick_hz <= clk_freq
        g = gcd(tick_hz, clk_freq)
        num, den = tick_hz // g, clk_freq // g
        self.load = CSRStorage(32, description="Value loaded while the timer is disabled.")
        self.reload = CSRStorage(32, description="Value loaded when the count reaches 0.")
        self.en = CSRStorage(1, description="1: count; 0: hold LOAD.")
        self.submodules.ev = EventManager()
        self.ev.zero = EventSourceProcess(edge="falling")
        self.ev.finalize()

        self.value = value = Signal(32)
        acc = Signal(max=den + num + 1)
        tick = Signal()
        self.comb += tick.eq(acc + num >= den)
        self.sync += If(tick, acc.eq(acc + num - den)).Else(acc.eq(acc + num))
        self.sync += [
            If(self.en.storage,
                If(tick,
                    If(value == 0, value.eq(self.reload.storage)).Else(value.eq(value - 1)),
                ),
            ).Else(
                value.eq(self.load.storage),
            )
        ]
        self.comb += self.ev.zero.trigger.eq(value != 0)


class SusRes(Module, AutoCSR):
    """Precursor's `susres` block (0xF001_3000, IRQ 9), the registers of the susres server
    (xous-susres): suspend/resume control of the ticktimer's count, the loader-to-Xous resume
    state, power-down and a software interrupt.

    CONTROL (+0x00): pause (bit 0: stop the ticktimer's count at its next tick; 0: run), load
    (bit 1, pulse: while paused, set the count to RESUME_TIME). RESUME_TIME (64 bit, +0x04 high
    / +0x08 low). TIME (64 bit, +0x0C / +0x10, read): the ticktimer's count. STATUS.paused
    (+0x14). STATE (+0x18): resume (bit 0), was_forced (bit 1), read/write words the loader
    leaves for Xous (reset 0: a cold boot). POWERDOWN.powerdown (+0x1C): writing 1 powers the
    SoC off; here it ends the simulation with code POWERDOWN_CODE. WFI.override (+0x20): on
    Precursor it keeps WFI from gating the clocks; the simulation never gates them, so it has
    no effect. INTERRUPT.interrupt (+0x24, pulse): raises the `soft_int` event
    (EV_STATUS/PENDING/ENABLE at +0x28/+0x2C/+0x30) on its falling edge."""

    def __init__(self, ticktimer: TickTimer):
        self.control = CSRStorage(fields=[
            CSRField("pause", size=1, description="1: pause the ticktimer's count at its next tick."),
            CSRField("load", size=1, pulse=True, description="While paused: load RESUME_TIME into the count."),
        ])
        self.resume_time = CSRStorage(64, description="The count loaded by CONTROL.load.")
        self.time = CSRStatus(64, description="The ticktimer's count (mirror).")
        self.status = CSRStatus(fields=[CSRField("paused", size=1, description="The count is paused.")])
        self.state = CSRStorage(fields=[
            CSRField("resume", size=1, description="Set by the loader on the resume half of a suspend/resume."),
            CSRField("was_forced", size=1, description="Set by the loader if the suspend was forced."),
        ])
        self.powerdown = CSRStorage(fields=[CSRField("powerdown", size=1, description="Write 1 to power the SoC off.")])
        self.wfi = CSRStorage(fields=[CSRField("override", size=1, description="1: WFI does not gate the clocks.")])
        self.interrupt = CSRStorage(fields=[CSRField("interrupt", size=1, pulse=True, description="Write 1 to raise soft_int.")])
        self.submodules.ev = EventManager()
        self.ev.soft_int = EventSourceProcess(edge="falling")
        self.ev.finalize()

        # the end of the simulation: a write of POWERDOWN.powerdown = 1
        self.off = Signal()
        self.comb += [
            ticktimer.pause.eq(self.control.fields.pause),
            ticktimer.load.eq(self.control.fields.load),
            ticktimer.load_value.eq(self.resume_time.storage),
            self.time.status.eq(ticktimer.timer),
            self.status.fields.paused.eq(ticktimer.paused),
            self.ev.soft_int.trigger.eq(self.interrupt.fields.interrupt),
            self.off.eq(self.powerdown.re & self.powerdown.fields.powerdown),
        ]


class WDT(Module, AutoCSR):
    """Precursor's watchdog (`wdt`, 0xF002_2000, no IRQ).

    WATCHDOG: reset_wdt (bit 0, pulse) and enable (bit 1; once set it stays set). PERIOD: the
    count reloaded every period (default 325,000,000); on Precursor it counts a ~65 MHz ring
    oscillator, here the sys clock. STATE: enabled, armed1, armed2, disarmed. State machine:
    enabled -> DISARMED; each period end moves DISARMED -> ARMED -> ARMED_HOT; reset_wdt
    returns to DISARMED; a period end in ARMED_HOT is a watchdog reset (`bite`, which the
    simulation reports and stops on)."""

    def __init__(self, default_period: int = 325_000_000):
        self.watchdog = CSRStorage(fields=[
            CSRField("reset_wdt", size=1, description="Write 1 to pet the watchdog.", pulse=True),
            CSRField("enable", size=1, description="Enable; cannot be cleared except by reset.", reset=0),
        ])
        self.period = CSRStorage(32, fields=[CSRField("period", size=32, reset=default_period, description="Cycles per watchdog period.")])
        self.state = CSRStatus(4, fields=[
            CSRField("enabled", size=1), CSRField("armed1", size=1), CSRField("armed2", size=1), CSRField("disarmed", size=1),
        ])
        self.bite = Signal()

        enabled = Signal()
        period_lock = Signal(32)
        counter = Signal(32, reset=default_period)
        cycle = Signal()
        self.sync += [
            cycle.eq(0),
            If(self.watchdog.fields.enable & ~enabled,
                enabled.eq(1),
                period_lock.eq(self.period.fields.period),
                counter.eq(self.period.fields.period),
            ).Elif(enabled,
                If(counter == 0,
                    cycle.eq(1),
                    counter.eq(period_lock),
                ).Else(counter.eq(counter - 1)),
            ),
        ]
        fsm = FSM(reset_state="IDLE")
        self.submodules.fsm = fsm
        armed1, armed2, disarmed = Signal(), Signal(), Signal()
        fsm.act("IDLE", If(enabled, NextState("DISARMED")))
        fsm.act("DISARMED", disarmed.eq(1), If(cycle, NextState("ARMED")))
        fsm.act("ARMED", armed1.eq(1),
                If(self.watchdog.fields.reset_wdt, NextState("DISARMED")).Elif(cycle, NextState("ARMED_HOT")))
        fsm.act("ARMED_HOT", armed2.eq(1),
                If(self.watchdog.fields.reset_wdt, NextState("DISARMED")).Elif(cycle, self.bite.eq(1)))
        self.comb += [
            self.state.fields.enabled.eq(enabled),
            self.state.fields.armed1.eq(armed1),
            self.state.fields.armed2.eq(armed2),
            self.state.fields.disarmed.eq(disarmed),
        ]


class WFI(Module, AutoCSR):
    """Precursor's `wfi` block (0xF002_5000): WFI (bit 0, pulse) gates the clocks until an
    interrupt; IGNORE_LOCKED (bit 0). The kernel writes both in its idle loop. The simulation
    does not gate clocks: a WFI write only counts (`wfi_count`), so the kernel's idle loop runs
    on, which differs from the device in power only."""

    def __init__(self):
        self.wfi = CSRStorage(fields=[CSRField("wfi", size=1, pulse=True, description="Gate clocks until an interrupt.")])
        self.ignore_locked = CSRStorage(fields=[CSRField("ignore_locked", size=1, description="Do not reset on PLL unlock.")])
        self.wfi_count = Signal(32)
        self.sync += If(self.wfi.fields.wfi, self.wfi_count.eq(self.wfi_count + 1))


class SimCtl(Module, AutoCSR):
    """Simulation control (not on Precursor; placed in the last CSR page, 0xF003_F000, which
    Precursor leaves empty): CYCLES (64 bit, high word +0x00, low word +0x04, read: sys cycles
    since the simulation started), FINISH (+0x08, write: stop the simulation, the value is the exit code the runner
    reports), WAKE (+0x0C, write 1: every later power-down is followed by a power-up,
    PowerCycle; kept across power cycles), POWERUPS (+0x10, read: power-ups so far). A watchdog
    bite also finishes the run, with code WDT_BITE_CODE (0xDEAD_0001), and a power-down (susres
    POWERDOWN) while WAKE is not armed with code POWERDOWN_CODE (0xDEAD_0002)."""

    def __init__(self, cycles: Signal, bite: Signal | None = None, filename: str = "finish.txt", off: Signal | None = None, power: "PowerCycle | None" = None):
        self.cycles = CSRStatus(64, description="Sys cycles since the simulation started.")
        self.finish = CSRStorage(32, description="Write: stop the simulation with this code.")
        self.wake = CSRStorage(1, description="Write 1: a power-down is followed by a power-up (RAM kept).")
        self.powerups = CSRStatus(32, description="Power-ups after a power-down so far.")
        self.comb += self.cycles.status.eq(cycles)
        valid = Signal()
        code = Signal(32)
        bite = bite if bite is not None else Signal()
        off = off if off is not None else Signal()
        if power is not None:
            self.comb += [
                power.arm_we.eq(self.wake.re),
                power.arm_value.eq(self.wake.storage),
                self.powerups.status.eq(power.powerups),
            ]
            off_end = Signal()
            self.comb += off_end.eq(off & ~power.wake)
            off = off_end
        self.comb += [
            valid.eq(self.finish.re | bite | off),
            If(self.finish.re, code.eq(self.finish.storage)).Elif(bite, code.eq(WDT_BITE_CODE)).Else(code.eq(POWERDOWN_CODE)),
        ]
        self.specials += Instance("sim_finish", p_FILENAME=filename, i_clk=ClockSignal("sys"), i_valid=valid, i_code=code, i_cycles=cycles)


class SimFault(Module, AutoCSR):
    """Fault injection (not on Precursor; an empty page of its CSR region, map.py `simfault`, so
    that a test process may map it): ENGINE_IRQ_DROP (+0x00, write N: the engine's next N
    interrupts never reach the CPU) and ENGINE_IRQ_LEFT (+0x04, read: how many are still to be
    dropped). The engine block routes its line through an `IrqDropper` driven by them."""

    def __init__(self):
        self.engine_irq_drop = CSRStorage(8, description="Write N: the engine's next N interrupts are not delivered.")
        self.engine_irq_left = CSRStatus(8, description="Engine interrupts still to be dropped.")


class IrqDropper(Module):
    """An interrupt line through a fault injector: `out` follows `line`, except that after a
    write of N to `count` (`load` pulses) the next N interrupts (a rising edge each, held until
    the line falls) are swallowed. `left` reads how many are still to be dropped."""

    def __init__(self, line: Signal, count: Signal, load: Signal):
        self.out = Signal()
        self.left = Signal(len(count))
        prev = Signal()
        masking = Signal()
        swallow = Signal()
        self.comb += [
            swallow.eq(line & ~prev & (self.left != 0)),
            self.out.eq(line & ~masking & ~swallow),
        ]
        self.sync += [
            prev.eq(line),
            If(swallow, masking.eq(1)).Elif(~line, masking.eq(0)),
            If(load, self.left.eq(count)).Elif(swallow, self.left.eq(self.left - 1)),
        ]


class Keyboard(Module, AutoCSR):
    """Precursor's `keyboard` block (CSR page 0xF001_7000, IRQ 13) as far as characters typed on
    the debug UART reach the software through it. Registers (the SVD's): UART_CHAR (`char`
    [7:0], `stb` [8]: the injection FIFO has a character; reading UART_CHAR takes it out of the
    16-deep FIFO), ROW0DAT..ROW8DAT (the key matrix's column data: read 0 here, no matrix is
    modelled), EV_STATUS / EV_PENDING / EV_ENABLE with events `keypressed` (bit 0, never raised
    here) and `inject` (bit 1, a character entered the FIFO).

    Precursor routes characters received on its debug serial port into this FIFO (betrusted-io
    gateware `keyboard.py`: `uart_inject` / `inject_strobe`). Here they come from the simulation
    host: `sim_key_source` reads a file (the runner's `--keys`, plusarg `+keys=`) as it grows,
    one byte per `byte_cycles` (the debug UART at 115200 baud), and holds a byte while the FIFO
    is full (flow control: on Precursor a full FIFO loses the character). Every byte that
    enters the FIFO is logged with its cycle (`keys.log`: `<cycle> <hex>`)."""

    ROWS = 9

    def __init__(self, cycles: Signal, filename: str, byte_cycles: int = KEY_BYTE_CYCLES):
        from migen.genlib.fifo import SyncFIFOBuffered
        from litex.soc.interconnect.csr_eventmanager import EventSourcePulse

        self.uart_char = CSRStatus(fields=[
            CSRField("char", size=8, description="character value being injected"),
            CSRField("stb", size=1, offset=8, description="FIFO has readable characters"),
        ])
        for i in range(self.ROWS):
            setattr(self, f"row{i}dat", CSRStatus(fields=[CSRField(f"row{i}dat", size=10, description="Column data for the given row")], name=f"row{i}dat"))
        self.submodules.ev = EventManager()
        self.ev.keypressed = EventSourcePulse(description="Triggered every time there is a difference in the row state")
        self.ev.inject = EventSourcePulse(description="Key injection request received")
        self.ev.finalize()

        self.submodules.fifo = fifo = SyncFIFOBuffered(width=8, depth=16)
        valid = Signal()
        data = Signal(8)
        self.comb += [
            fifo.din.eq(data),
            fifo.we.eq(valid),
            self.uart_char.fields.char.eq(fifo.dout),
            self.uart_char.fields.stb.eq(fifo.readable),
            fifo.re.eq(self.uart_char.we),
            self.ev.inject.trigger.eq(valid),
        ]
        self.specials += Instance(
            "sim_key_source",
            p_LOGNAME=filename,
            p_PERIOD=byte_cycles,
            i_clk=ClockSignal("sys"),
            i_ready=fifo.writable,
            o_valid=valid,
            o_data=data,
            i_cycles=cycles,
        )


class MemLCD(Module, AutoCSR):
    """Precursor's `memlcd` (CSR page 0xF000_C000, no interrupt line) and its frame buffer
    (0xB000_0000, 0x5C20 bytes: 536 lines of 11 words), the display of the Sharp memory LCD.

    Frame buffer: line y at word 11 * y; pixel x of a line is bit x % 32 of its word x // 32
    (336 pixels: words 0..9 and the low half of word 10); a 1 is a light pixel, 0 dark (the
    graphics server clears the screen to all ones). Bit 16 of word 10 is the line's dirty bit.

    Registers (the SVD's): COMMAND (UpdateDirty bit 0, UpdateAll bit 1, pulses) starts a
    transfer of the dirty lines (those whose dirty bit is set) or of every line; BUSY.busy is 1
    while it runs; PRESCALER (reset 99): the LCD's serial clock is the system clock /
    (prescaler + 1); the `done` event on BUSY's falling edge (EV_STATUS / EV_PENDING /
    EV_ENABLE); DEVBOOT.devboot (write 1: latched until reset) and DEVSTATUS.devstatus (reads
    the latch). The strike-through DEVBOOT draws on Precursor's screen is not modelled.

    Timing (this model's serial protocol, the memory LCD's line-addressed write): per transfer
    a mode byte and a trailing dummy byte, per line sent an address byte, its 336 data bits and
    a dummy byte: (16 + 352 x lines) serial clocks of (prescaler + 1) system cycles each. Lines
    not sent cost nothing.

    The panel: every line sent is appended to a simulation file (`filename`) as
    `<cycle> <line> <88 hex digits: words 10..0>`; the host's screenshot (run.py --memlcd)
    rebuilds what the panel shows from it."""

    LINES = 536
    WORDS_PER_LINE = 11
    WIDTH = 336
    DIRTY_BIT = 16
    LINE_BITS = 8 + 336 + 8
    TRANSFER_BITS = 16

    def __init__(self, cycles: Signal, filename: str):
        from migen import Cat, Memory
        from litex.soc.interconnect import wishbone

        self.command = CSRStorage(fields=[
            CSRField("UpdateDirty", size=1, pulse=True, description="Write 1 to send the dirty lines to the LCD."),
            CSRField("UpdateAll", size=1, offset=1, pulse=True, description="Write 1 to send every line."),
        ])
        self.busy = CSRStatus(fields=[CSRField("busy", size=1, description="1 while a transfer runs.")])
        self.prescaler = CSRStorage(fields=[CSRField("prescaler", size=8, reset=99, description="LCD serial clock = sys clock / (prescaler + 1).")])
        self.submodules.ev = EventManager()
        self.ev.done = EventSourceProcess(edge="falling")
        self.ev.finalize()
        self.devboot = CSRStorage(fields=[CSRField("devboot", size=1, description="Write 1: latched until reset.")])
        self.devstatus = CSRStatus(fields=[CSRField("devstatus", size=1, description="The devboot latch.")])

        words = self.LINES * self.WORDS_PER_LINE
        # power-on contents: every line light and clean (Precursor's are whatever the RAM
        # held; the graphics server clears the screen first)
        clean = [0xFFFF_FFFF] * (self.WORDS_PER_LINE - 1) + [(1 << self.DIRTY_BIT) - 1]
        mem = Memory(32, words, init=clean * self.LINES, name="memlcd_fb")
        self.submodules.sram = wishbone.SRAM(mem)
        self.bus = self.sram.bus
        rd = mem.get_port()
        self.specials += rd

        latched = Signal()
        self.sync += If(self.devboot.fields.devboot, latched.eq(1))
        self.comb += self.devstatus.fields.devstatus.eq(latched)

        busy = Signal()
        self.comb += [self.busy.fields.busy.eq(busy), self.ev.done.trigger.eq(busy)]
        update_all = Signal()
        line = Signal(max=self.LINES + 1)
        word = Signal(max=self.WORDS_PER_LINE + 1)
        data = Signal(32 * self.WORDS_PER_LINE)
        wait = Signal(32)
        emit = Signal()
        self.comb += rd.adr.eq(line * self.WORDS_PER_LINE + word)
        per_bit = Signal(9)
        self.comb += per_bit.eq(self.prescaler.fields.prescaler + 1)

        fsm = FSM(reset_state="IDLE")
        self.submodules.fsm = fsm
        fsm.act("IDLE",
            If(self.command.fields.UpdateDirty | self.command.fields.UpdateAll,
                NextState("READ")))
        self.sync += [
            emit.eq(0),
            If(fsm.ongoing("IDLE") & (self.command.fields.UpdateDirty | self.command.fields.UpdateAll),
                busy.eq(1),
                update_all.eq(self.command.fields.UpdateAll),
                line.eq(0), word.eq(0),
                wait.eq(self.TRANSFER_BITS * per_bit),
            ),
        ]
        # READ: one word per cycle (the port's data is the previous cycle's address)
        rdata_valid = Signal()
        self.sync += rdata_valid.eq(fsm.ongoing("READ") & (word < self.WORDS_PER_LINE))
        self.sync += If(rdata_valid, data.eq(Cat(data[32:], rd.dat_r)))
        fsm.act("READ",
            If(word == self.WORDS_PER_LINE, NextState("DECIDE")))
        self.sync += If(fsm.ongoing("READ") & (word < self.WORDS_PER_LINE), word.eq(word + 1))
        send = Signal()
        self.comb += send.eq(update_all | data[32 * (self.WORDS_PER_LINE - 1) + self.DIRTY_BIT])
        fsm.act("DECIDE",
            If(~rdata_valid, NextState("SEND")))
        self.sync += If(fsm.ongoing("DECIDE") & ~rdata_valid,
            If(send, emit.eq(1), wait.eq(wait + self.LINE_BITS * per_bit)))
        fsm.act("SEND",
            If(line == self.LINES - 1, NextState("FINISH")).Else(NextState("READ")))
        self.sync += If(fsm.ongoing("SEND"), line.eq(line + 1), word.eq(0))
        # the serial transfer's time: the accumulated clocks, then BUSY falls
        fsm.act("FINISH",
            If(wait == 0, NextState("IDLE")))
        self.sync += If(fsm.ongoing("FINISH"),
            If(wait == 0, busy.eq(0)).Else(wait.eq(wait - 1)))

        self.specials += Instance(
            "sim_memlcd_sink",
            p_FILENAME=filename,
            i_clk=ClockSignal("sys"),
            i_valid=emit,
            i_line=line,
            i_data=data,
            i_cycles=cycles,
        )
