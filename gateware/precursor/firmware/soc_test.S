/*
 * Bare-metal self-test of the simulated Precursor SoC (step sim:soc). Runs from ROM (0x0) in
 * machine mode, then in supervisor and user mode, and judges itself: one verdict line per
 * check on the kernel UART, then `VERDICT sim-soc PASS|FAIL` and a write to simctl FINISH.
 *
 *   uart       bytes written to UART (0xF000_5000) and console (0xF000_7000) arrive
 *   trng       the TRNG's kernel port (0xF001_C000, spec/trng.toml), enabled by the SoC at
 *              power-on, delivers conditioned words (URANDOM_VALID, then URANDOM), two differ
 *   engine     the engine (CSR page 0xF002_0000, memory window 0xE002_0000, spec/engine25519.toml)
 *              answers: MPSTART and a microcode word read back what was written
 *   memlcd     the memory LCD (registers 0xF000_C000, frame buffer 0xB000_0000): PRESCALER resets
 *              to 99; sixteen lines drawn (one dark pixel each, x = 20k + 3 on line 200 + k)
 *              and marked dirty, one line drawn but not marked; COMMAND.UpdateDirty: BUSY
 *              until the transfer ends, then EV_PENDING.done; DEVBOOT latches DEVSTATUS. The
 *              host (tests/test_soc.py) decodes the panel log: exactly the dirty lines, those
 *              pixels, and BUSY's length
 *   ticktimer  TIME advances by one every CLK_FREQ/1000 cycles (checked against simctl CYCLES)
 *   timer0     the preemption timer (0xF000_1000) counts 12 MHz: with RELOAD = 1199 its zero
 *              event comes every 10,000 cycles (+/- 50)
 *   susres     the susres block (0xF001_3000): TIME mirrors the ticktimer's count; CONTROL.pause
 *              stops it (STATUS.paused) for 3 ms of cycles; CONTROL.load sets it to RESUME_TIME,
 *              and it counts on from there when resumed; INTERRUPT raises EV_PENDING.soft_int
 *   irq        the ticktimer alarm (IRQ 8) reaches supervisor mode through the external
 *              interrupt array: scause = 0x8000_0009, the custom sip CSR (0xDC0) has bit 8
 *   sv32       with paging on, 0xFFD0_0000 (4 KiB page through a second-level table) reads and
 *              writes the RAM page it maps
 *   ecall      user-mode code (a U-mapped alias of ROM) makes an ecall that arrives in
 *              supervisor mode (scause = 8), and supervisor mode resumes
 *
 * Assembled for rv32ima (no compressed instructions, as the SoC's CPU).
 * Addresses: map.py (CSR pages), peripherals.py (register offsets).
 */
    .option norvc
    .equ UART,       0xF0005000
    .equ CONSOLE,    0xF0007000
    .equ TICKTIMER,  0xF0012000
    .equ SIMCTL,     0xF003F000
    .equ TIMER0,     0xF0001000
    .equ T0_LOAD,    0x00
    .equ T0_RELOAD,  0x04
    .equ T0_EN,      0x08
    .equ T0_PENDING, 0x10
    .equ T0_PERIOD,  10000            /* (RELOAD + 1) ticks of 12 MHz at 100 MHz */
    .equ SUSRES,     0xF0013000
    .equ SR_CONTROL, 0x00
    .equ SR_RESUME1, 0x04
    .equ SR_RESUME0, 0x08
    .equ SR_TIME1,   0x0C
    .equ SR_TIME0,   0x10
    .equ SR_STATUS,  0x14
    .equ SR_INTERRUPT, 0x24
    .equ SR_PENDING, 0x2C
    .equ SR_LOADED,  0x12345
    .equ TRNG_KERNEL, 0xF001C000
    .equ TK_URANDOM, 0x08
    .equ TK_VALID,   0x0C
    .equ URANDOM_INVALID, 0xDEADBEEF
    .equ TRNG_POLLS, 4000000
    .equ ENGINE_CSR, 0xF0020000
    .equ ENGINE_MEM, 0xE0020000
    .equ EN_MPSTART, 0x04
    .equ MEMLCD,     0xF000C000
    .equ MEMLCD_FB,  0xB0000000
    .equ ML_COMMAND, 0x00
    .equ ML_BUSY,    0x04
    .equ ML_PRESCALER, 0x08
    .equ ML_PENDING, 0x10
    .equ ML_DEVBOOT, 0x18
    .equ ML_DEVSTATUS, 0x1C
    .equ ML_LINE_BYTES, 44            /* 11 words per line */
    .equ RXTX,       0x00
    .equ TXFULL,     0x04
    .equ TT_CONTROL, 0x00
    .equ TT_TIME1,   0x04
    .equ TT_TIME0,   0x08
    .equ TT_TARGET1, 0x0C
    .equ TT_TARGET0, 0x10
    .equ TT_PENDING, 0x18
    .equ TT_ENABLE,  0x1C
    .equ SC_CYCLES1, 0x00
    .equ SC_CYCLES0, 0x04
    .equ SC_FINISH,  0x08
    .equ ROOT_PT,    0x40100000
    .equ L2_PT,      0x40101000
    .equ DATA_PAGE,  0x40102000
    .equ KERNEL_VA,  0xFFD00000
    .equ USER_ALIAS, 0x80000000
    .equ CYCLES_PER_TICK, 100000   /* CLK_FREQ / 1000 */
    .equ CSR_SIM,    0x9C0
    .equ CSR_SIP,    0xDC0

    .section .text
    .globl _start
_start:
    li   sp, 0x40200000
    li   s0, UART
    li   s1, TICKTIMER
    li   s2, SIMCTL
    la   t0, m_trap
    csrw mtvec, t0

/* ---- uart ---------------------------------------------------------------------------- */
    la   a0, msg_hello
    call puts
    la   a0, msg_console
    li   a1, CONSOLE
    call puts_to
    la   a0, v_uart
    call puts

/* ---- trng kernel port ---------------------------------------------------------------- */
    li   s6, TRNG_KERNEL
    call trng_word
    mv   s7, a0
    lw   s3, SC_CYCLES0(s2)           /* cycle of the first valid word */
    call trng_word
    beq  a0, s7, trng_same
    la   a0, v_trng
    call puts
    mv   a0, s3
    call put_dec
    call newline
    j    engine
trng_same:
    la   a0, f_trng_same
    call puts
    j    fail
trng_word:                            /* a0 = next valid URANDOM word, or fail */
    li   t2, TRNG_POLLS
1:  lw   t0, TK_VALID(s6)
    andi t0, t0, 1
    bnez t0, 2f
    addi t2, t2, -1
    bnez t2, 1b
    la   a0, f_trng
    call puts
    j    fail
2:  lw   a0, TK_URANDOM(s6)
    li   t0, URANDOM_INVALID
    beq  a0, t0, 1b                   /* lost a race with nobody: not possible, poll again */
    ret

/* ---- engine ---------------------------------------------------------------------------- */
engine:
    li   t0, ENGINE_CSR
    li   t1, 0x2A5
    sw   t1, EN_MPSTART(t0)
    lw   t2, EN_MPSTART(t0)
    bne  t1, t2, engine_fail
    li   t0, ENGINE_MEM
    li   t1, 0x13579BDF
    sw   t1, 8(t0)                    /* microcode word 2 */
    lw   t2, 8(t0)
    bne  t1, t2, engine_fail
    la   a0, v_engine
    call puts
    j    memlcd
engine_fail:
    la   a0, f_engine
    call puts
    mv   a0, t2
    call put_hex
    call newline
    j    fail

/* ---- memlcd ------------------------------------------------------------------------------ */
memlcd:
    li   s3, MEMLCD
    li   s4, MEMLCD_FB
    li   s8, 1
    lw   t1, ML_PRESCALER(s3)
    li   t0, 99
    bne  t1, t0, ml_fail              /* step 1: PRESCALER's reset value */
    sw   zero, ML_PRESCALER(s3)       /* one system cycle per serial clock: a short test */
    li   s5, 0                        /* k */
1:  li   t0, 20
    mul  t0, t0, s5
    addi t0, t0, 3                    /* x = 20k + 3 */
    srli t1, t0, 5                    /* word x / 32 */
    andi t2, t0, 31
    li   t3, 1
    sll  t3, t3, t2
    not  t3, t3                       /* light everywhere but bit x % 32 */
    addi t4, s5, 200                  /* line 200 + k */
    li   t5, ML_LINE_BYTES
    mul  t4, t4, t5
    add  t4, t4, s4                   /* the line's first word */
    slli t1, t1, 2
    add  t1, t1, t4
    sw   t3, 0(t1)
    li   t3, 0x0001FFFF               /* word 10: light pixels 320..335, dirty bit 16 */
    sw   t3, 40(t4)
    addi s5, s5, 1
    li   t0, 16
    blt  s5, t0, 1b
    li   t4, 300 * ML_LINE_BYTES      /* line 300: drawn dark, not marked dirty */
    add  t4, t4, s4
    sw   zero, 0(t4)
    lw   s5, SC_CYCLES0(s2)
    li   t0, 1
    sw   t0, ML_COMMAND(s3)           /* UpdateDirty */
    li   s8, 2
    li   t2, 1000000
2:  lw   t0, ML_BUSY(s3)
    andi t0, t0, 1
    beqz t0, 3f
    addi t2, t2, -1
    bnez t2, 2b
    j    ml_fail                      /* step 2: BUSY never fell */
3:  lw   s6, SC_CYCLES0(s2)
    sub  s6, s6, s5                   /* cycles from the command until BUSY read 0 */
    li   s8, 3
    lw   t1, ML_PENDING(s3)
    li   t0, 1
    bne  t1, t0, ml_fail              /* step 3: the done event */
    sw   t0, ML_PENDING(s3)
    li   s8, 4
    lw   t1, ML_PENDING(s3)
    bnez t1, ml_fail                  /* step 4: cleared */
    li   s8, 5
    lw   t1, ML_DEVSTATUS(s3)
    bnez t1, ml_fail                  /* step 5: DEVSTATUS 0 after reset */
    li   t0, 1
    sw   t0, ML_DEVBOOT(s3)
    sw   zero, ML_DEVBOOT(s3)
    li   s8, 6
    lw   t1, ML_DEVSTATUS(s3)
    li   t0, 1
    bne  t1, t0, ml_fail              /* step 6: latched */
    la   a0, v_memlcd
    call puts
    mv   a0, s6
    call put_dec
    call newline
    j    ticktimer
ml_fail:
    la   a0, f_memlcd
    call puts
    mv   a0, s8
    call put_dec
    la   a0, s_read
    call puts
    mv   a0, t1
    call put_hex
    call newline
    j    fail

/* ---- ticktimer ----------------------------------------------------------------------- */
ticktimer:
    li   t0, 1
    sw   t0, TT_CONTROL(s1)          /* reset the count */
    call wait_tick                    /* align to a tick edge */
    lw   s3, SC_CYCLES0(s2)
    call wait_tick
    lw   s4, SC_CYCLES0(s2)
    sub  s5, s4, s3                   /* cycles per tick */
    li   t0, CYCLES_PER_TICK - 200
    blt  s5, t0, tick_fail
    li   t0, CYCLES_PER_TICK + 200
    bgt  s5, t0, tick_fail
    la   a0, v_tick
    call puts
    mv   a0, s5
    call put_dec
    call newline
    j    timer0
tick_fail:
    la   a0, f_tick
    call puts
    mv   a0, s5
    call put_dec
    call newline
    j    fail

/* ---- timer0 (preemption timer) ------------------------------------------------------- */
timer0:
    li   s6, TIMER0
    sw   zero, T0_EN(s6)
    sw   zero, T0_LOAD(s6)
    li   t0, 1199
    sw   t0, T0_RELOAD(s6)
    li   t0, 1
    sw   t0, T0_PENDING(s6)           /* clear */
    sw   t0, T0_EN(s6)
    call t0_zero
    lw   s3, SC_CYCLES0(s2)
    call t0_zero
    lw   s4, SC_CYCLES0(s2)
    sw   zero, T0_EN(s6)
    sub  s5, s4, s3
    li   t0, T0_PERIOD - 50
    blt  s5, t0, t0_fail
    li   t0, T0_PERIOD + 50
    bgt  s5, t0, t0_fail
    la   a0, v_timer0
    call puts
    mv   a0, s5
    call put_dec
    call newline
    j    susres
t0_zero:                              /* wait for EV_PENDING.zero (at most 1,000,000 polls), clear it */
    li   t2, 1000000
1:  lw   t1, T0_PENDING(s6)
    andi t1, t1, 1
    bnez t1, 2f
    addi t2, t2, -1
    bnez t2, 1b
    li   s5, 0
    j    t0_fail
2:  li   t1, 1
    sw   t1, T0_PENDING(s6)
    ret
t0_fail:
    la   a0, f_timer0
    call puts
    mv   a0, s5
    call put_dec
    call newline
    j    fail

/* ---- susres -------------------------------------------------------------------------- */
susres:
    li   s6, SUSRES
    li   s8, 1                        /* failing step */
    call wait_tick
    lw   t0, TT_TIME0(s1)
    lw   t1, SR_TIME0(s6)
    bne  t0, t1, sr_fail              /* TIME mirrors the ticktimer */
    li   s8, 2
    li   t0, 1
    sw   t0, SR_CONTROL(s6)           /* pause */
    li   t2, 1000000
1:  lw   t1, SR_STATUS(s6)
    andi t1, t1, 1
    bnez t1, 2f
    addi t2, t2, -1
    bnez t2, 1b
    j    sr_fail
2:  li   s8, 3
    lw   s3, SR_TIME0(s6)
    lw   t3, SC_CYCLES0(s2)
    li   t0, 3 * CYCLES_PER_TICK
3:  lw   t1, SC_CYCLES0(s2)
    sub  t1, t1, t3
    bltu t1, t0, 3b
    lw   t1, SR_TIME0(s6)
    bne  t1, s3, sr_fail              /* paused: no tick in 3 ms of cycles */
    lw   t1, TT_TIME0(s1)
    bne  t1, s3, sr_fail
    li   s8, 4
    sw   zero, SR_RESUME1(s6)
    li   t0, SR_LOADED
    sw   t0, SR_RESUME0(s6)
    li   t0, 3
    sw   t0, SR_CONTROL(s6)           /* pause + load */
    lw   t1, TT_TIME0(s1)
    li   t0, SR_LOADED
    bne  t1, t0, sr_fail
    li   s8, 5
    sw   zero, SR_CONTROL(s6)         /* run */
    call wait_tick
    lw   t1, SR_TIME0(s6)
    li   t0, SR_LOADED + 1
    bne  t1, t0, sr_fail
    li   s8, 6
    li   t0, 1
    sw   t0, SR_PENDING(s6)           /* clear soft_int */
    lw   t1, SR_PENDING(s6)
    bnez t1, sr_fail
    sw   t0, SR_INTERRUPT(s6)
    li   t2, 100                      /* the event is registered: a few cycles after the write */
1:  lw   t1, SR_PENDING(s6)
    andi t1, t1, 1
    bnez t1, 2f
    addi t2, t2, -1
    bnez t2, 1b
    j    sr_fail
2:
    sw   t0, SR_PENDING(s6)
    sw   t0, TT_CONTROL(s1)           /* the ticktimer's count back to 0 */
    la   a0, v_susres
    call puts
    j    to_supervisor
sr_fail:                              /* s8 = step, t1 = the value read */
    mv   s3, t1
    la   a0, f_susres
    call puts
    mv   a0, s8
    call put_dec
    la   a0, s_read
    call puts
    mv   a0, s3
    call put_hex
    call newline
    j    fail

/* ---- into supervisor mode ------------------------------------------------------------ */
to_supervisor:
    li   t0, (1 << 8) | (1 << 12) | (1 << 13) | (1 << 15)   /* ecall from U, page faults */
    csrw medeleg, t0
    li   t0, (1 << 9) | (1 << 5) | (1 << 1)                  /* S external, timer, software */
    csrw mideleg, t0
    la   t0, s_trap
    csrw stvec, t0
    li   t0, 0x1800                   /* mstatus.MPP = S (01) */
    csrc mstatus, t0
    li   t0, 0x0800
    csrs mstatus, t0
    la   t0, s_main
    csrw mepc, t0
    mret

/* ---- supervisor: irq ----------------------------------------------------------------- */
s_main:
    li   s9, 0                        /* set by the irq handler */
    li   t0, 1 << 8                   /* ticktimer IRQ 8 */
    csrw CSR_SIM, t0
    li   t0, 1 << 9                   /* sie.SEIE */
    csrs sie, t0
    lw   t1, TT_TIME0(s1)
    addi t1, t1, 2
    sw   zero, TT_TARGET1(s1)
    sw   t1, TT_TARGET0(s1)
    li   t0, 1
    sw   t0, TT_PENDING(s1)
    sw   t0, TT_ENABLE(s1)
    csrsi sstatus, 2                  /* sstatus.SIE */
    li   t2, 2000000                  /* ~3 ticks of polling at most */
1:  bnez s9, irq_ok
    addi t2, t2, -1
    bnez t2, 1b
    csrci sstatus, 2
    la   a0, f_irq
    call puts
    j    fail
irq_ok:
    csrci sstatus, 2
    li   t0, 1 << 8
    bne  s10, t0, irq_bad_sip
    la   a0, v_irq
    call puts
    mv   a0, s10
    call put_hex
    call newline
    j    paging
irq_bad_sip:
    la   a0, f_irq_sip
    call puts
    mv   a0, s10
    call put_hex
    call newline
    j    fail

/* ---- supervisor: sv32 ---------------------------------------------------------------- */
paging:
    /* clear both tables */
    li   t0, ROOT_PT
    li   t1, ROOT_PT + 0x2000
1:  sw   zero, 0(t0)
    addi t0, t0, 4
    bltu t0, t1, 1b
    li   t0, ROOT_PT
    li   t1, 0xCF                     /* VA 0 -> ROM: V R W X A D */
    sw   t1, 0(t0)
    li   t1, 0x100000CF               /* VA 0x4000_0000 -> RAM (4 MiB megapage) */
    sw   t1, (0x100 * 4)(t0)
    li   t1, 0x3C0000C7               /* VA 0xF000_0000 -> CSRs: V R W A D */
    li   t2, ROOT_PT + 0x3C0 * 4
    sw   t1, 0(t2)
    li   t1, 0x0000005B               /* VA 0x8000_0000 -> ROM for user mode: V R X U A */
    li   t2, ROOT_PT + 0x200 * 4
    sw   t1, 0(t2)
    li   t1, ((L2_PT >> 12) << 10) | 1  /* VA 0xFFC0_0000.. -> second-level table */
    li   t2, ROOT_PT + 0x3FF * 4
    sw   t1, 0(t2)
    li   t0, L2_PT
    li   t1, ((DATA_PAGE >> 12) << 10) | 0xC7
    sw   t1, (0x100 * 4)(t0)          /* 0xFFD0_0000 -> DATA_PAGE */
    li   t0, DATA_PAGE
    li   t1, 0x600DF00D
    sw   t1, 0(t0)
    li   t0, 0x80000000 | (ROOT_PT >> 12)
    csrw satp, t0
    sfence.vma
    li   t0, KERNEL_VA
    lw   t1, 0(t0)
    li   t2, 0x600DF00D
    bne  t1, t2, sv32_fail
    li   t2, 0x12345678
    sw   t2, 4(t0)
    csrw satp, zero
    sfence.vma
    li   t0, DATA_PAGE
    lw   t1, 4(t0)
    bne  t1, t2, sv32_fail
    la   a0, v_sv32
    call puts
    j    user_ecall
sv32_fail:
    csrw satp, zero
    la   a0, f_sv32
    call puts
    mv   a0, t1
    call put_hex
    call newline
    j    fail

/* ---- user mode and back -------------------------------------------------------------- */
user_ecall:
    li   t0, 0x80000000 | (ROOT_PT >> 12)
    csrw satp, t0
    sfence.vma
    li   s8, 0
    la   t0, user_code
    li   t1, USER_ALIAS
    add  t0, t0, t1                   /* the user alias of user_code */
    csrw sepc, t0
    li   t0, 1 << 8                   /* sstatus.SPP = U */
    csrc sstatus, t0
    sret
after_user:
    csrw satp, zero
    sfence.vma
    li   t0, 1
    bne  s8, t0, ecall_fail
    la   a0, v_ecall
    call puts
    la   a0, v_all
    call puts
    sw   zero, SC_FINISH(s2)
1:  j    1b
ecall_fail:
    la   a0, f_ecall
    call puts
    j    fail

user_code:
    li   a0, 0x5A5A
    ecall
2:  j    2b

/* ---- supervisor trap handler --------------------------------------------------------- */
    .balign 4
s_trap:
    csrr t3, scause
    li   t4, 0x80000009
    beq  t3, t4, s_trap_irq
    li   t4, 8
    beq  t3, t4, s_trap_ecall
    la   a0, f_trap
    call puts
    mv   a0, t3
    call put_hex
    la   a0, s_sepc
    call puts
    csrr a0, sepc
    call put_hex
    call newline
    j    fail
s_trap_irq:
    csrr s10, CSR_SIP
    sw   zero, TT_ENABLE(s1)          /* the alarm is a level: mask it */
    li   s9, 1
    sret
s_trap_ecall:
    li   t4, 0x5A5A
    bne  a0, t4, 1f
    li   s8, 1
1:  li   t4, 1 << 8                   /* return to supervisor */
    csrs sstatus, t4
    la   t4, after_user
    csrw sepc, t4
    sret

/* ---- machine trap: anything reaching M mode is a failure ------------------------------ */
    .balign 4
m_trap:
    la   a0, f_mtrap
    call puts
    csrr a0, mcause
    call put_hex
    la   a0, s_sepc
    call puts
    csrr a0, mepc
    call put_hex
    call newline
    j    fail

fail:
    la   a0, f_all
    call puts
    li   t0, 1
    sw   t0, SC_FINISH(s2)
1:  j    1b

/* ---- output helpers (clobber t5, t6, a0-a3; putc keeps t5) ------------------------------ */
puts:                                 /* a0 = string, to the kernel UART */
    li   a1, UART
puts_to:                              /* a0 = string, a1 = UART base */
1:  lbu  t5, 0(a0)
    beqz t5, 3f
2:  lw   t6, TXFULL(a1)
    bnez t6, 2b
    sw   t5, RXTX(a1)
    addi a0, a0, 1
    j    1b
3:  ret
putc:                                 /* a0 = byte */
    li   a1, UART
1:  lw   t6, TXFULL(a1)
    bnez t6, 1b
    sw   a0, RXTX(a1)
    ret
newline:
    li   a0, 10
    j    putc
put_hex:                              /* a0 = value: 0x%08x */
    mv   a2, a0
    mv   a3, ra
    li   a0, '0'
    call putc
    li   a0, 'x'
    call putc
    li   t5, 28
1:  srl  a0, a2, t5
    andi a0, a0, 15
    li   t6, 10
    blt  a0, t6, 2f
    addi a0, a0, 'a' - 10
    j    3f
2:  addi a0, a0, '0'
3:  call putc
    addi t5, t5, -4
    bgez t5, 1b
    mv   ra, a3
    ret
put_dec:                              /* a0 = unsigned value, decimal */
    mv   a3, ra
    addi sp, sp, -16
    mv   a2, sp                       /* digits pushed right to left */
    addi a2, a2, 15
    sb   zero, 0(a2)
    li   t6, 10
1:  remu t5, a0, t6
    divu a0, a0, t6
    addi t5, t5, '0'
    addi a2, a2, -1
    sb   t5, 0(a2)
    bnez a0, 1b
    mv   a0, a2
    call puts
    addi sp, sp, 16
    mv   ra, a3
    ret
wait_tick:                            /* return right after TIME0 changes */
    lw   t0, TT_TIME0(s1)
1:  lw   t1, TT_TIME0(s1)
    beq  t0, t1, 1b
    ret

    .section .rodata
msg_hello:   .asciz "soc-test: hello from the simulated Precursor\n"
msg_console: .asciz "soc-test: console UART\n"
v_uart:      .asciz "VERDICT sim-soc/uart PASS\n"
v_trng:      .asciz "VERDICT sim-soc/trng PASS first_valid_cycle="
f_trng:      .asciz "VERDICT sim-soc/trng FAIL -- no valid word on the kernel port within 4,000,000 polls\n"
f_trng_same: .asciz "VERDICT sim-soc/trng FAIL -- two consecutive kernel-port words are equal\n"
v_engine:    .asciz "VERDICT sim-soc/engine PASS\n"
f_engine:    .asciz "VERDICT sim-soc/engine FAIL -- read back "
v_memlcd:    .asciz "VERDICT sim-soc/memlcd PASS busy_cycles="
f_memlcd:    .asciz "VERDICT sim-soc/memlcd FAIL step="
v_tick:      .asciz "VERDICT sim-soc/ticktimer PASS cycles_per_tick="
f_tick:      .asciz "VERDICT sim-soc/ticktimer FAIL cycles_per_tick="
v_timer0:    .asciz "VERDICT sim-soc/timer0 PASS cycles_per_period="
f_timer0:    .asciz "VERDICT sim-soc/timer0 FAIL cycles_per_period="
v_susres:    .asciz "VERDICT sim-soc/susres PASS\n"
f_susres:    .asciz "VERDICT sim-soc/susres FAIL step="
v_irq:       .asciz "VERDICT sim-soc/irq PASS scause=0x80000009 sip="
f_irq:       .asciz "VERDICT sim-soc/irq FAIL -- no interrupt within 2,000,000 polls\n"
f_irq_sip:   .asciz "VERDICT sim-soc/irq FAIL -- sip="
v_sv32:      .asciz "VERDICT sim-soc/sv32 PASS\n"
f_sv32:      .asciz "VERDICT sim-soc/sv32 FAIL -- read "
v_ecall:     .asciz "VERDICT sim-soc/ecall PASS\n"
f_ecall:     .asciz "VERDICT sim-soc/ecall FAIL -- the user-mode ecall did not arrive with a0=0x5a5a\n"
f_trap:      .asciz "VERDICT sim-soc/trap FAIL -- unexpected supervisor trap scause="
f_mtrap:     .asciz "VERDICT sim-soc/trap FAIL -- unexpected machine trap mcause="
s_sepc:      .asciz " epc="
s_read:      .asciz " read="
v_all:       .asciz "VERDICT sim-soc PASS\n"
f_all:       .asciz "VERDICT sim-soc FAIL\n"
