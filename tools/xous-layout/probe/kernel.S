/*
 * Boot probe, supervisor side: a stand-in for the Xous kernel, linked at 0xffd0_0000 and laid
 * out by xous-layout exactly like the kernel (docs/sim-boot.md). Entered by the start stub, it
 * checks the entry contract on the simulated SoC's CPU and MMU, then enters PID 2 in user mode:
 *   - a7 = 0; a0 points at the XArg tag (version 1) through 0xffc0_0000;
 *   - a1's first entry is the running satp and sp; the page tracker (a2) marks the root table's
 *     page as PID 1's;
 *   - the kernel's leaf table of megapage 1023 is reachable at 0xff7f_f000 (the recursive
 *     window the kernel edits its tables through): the probe maps the UART and simctl with it;
 *   - the root table reads at 0xff80_0000, the context page at 0xff80_1000 and the stack are
 *     writable;
 *   - PID 2's space (satp from a1) shares megapage 1023; `sret` runs PID 2's entry in user mode,
 *     whose `ecall` arrives here (scause 8) with a0 = 0x600d.
 * One verdict line: VERDICT sim-layout/boot PASS, or FAIL with the check; then simctl FINISH.
 */
    .option norvc
    .equ UART_PA,   0xF0005000
    .equ SIMC_PA,   0xF003F000
    .equ UART_VA,   0xffcf0000
    .equ SIMC_VA,   0xffcc0000
    .equ L0_1023,   0xff7ff000
    .equ PTE_RW,    0xC7            /* V R W A D */
    .equ TXFULL,    0x04
    .equ FINISH,    0x08

    .section .text
    .globl _start
_start:
    la      t0, trap
    csrw    stvec, t0
    mv      s0, a0
    mv      s1, a1
    mv      s2, a2
    mv      s3, a7
    mv      s4, sp
    li      t0, L0_1023 + ((UART_VA >> 12) & 0x3ff) * 4
    li      t1, ((UART_PA >> 12) << 10) | PTE_RW
    sw      t1, 0(t0)
    li      t0, L0_1023 + ((SIMC_VA >> 12) & 0x3ff) * 4
    li      t1, ((SIMC_PA >> 12) << 10) | PTE_RW
    sw      t1, 0(t0)
    sfence.vma
    la      a0, m_start
    call    puts

    la      a0, f_a7
    bnez    s3, fail
    la      a0, f_xarg
    lw      t0, 0(s0)
    li      t1, 0x67724158          /* "XArg" */
    bne     t0, t1, fail
    lw      t0, 12(s0)
    li      t1, 1
    bne     t0, t1, fail
    la      a0, f_ptab
    csrr    t0, satp
    lw      t1, 0(s1)
    bne     t0, t1, fail
    lw      t1, 8(s1)
    bne     t1, s4, fail
    la      a0, f_rpt
    slli    t0, t0, 10              /* root table: (satp & 0x3f_ffff) << 12 */
    srli    t0, t0, 10
    slli    t0, t0, 12
    lw      t1, 16(s0)              /* XArg RAM base */
    sub     t0, t0, t1
    srli    t0, t0, 12
    add     t0, t0, s2
    lbu     t0, 0(t0)
    li      t1, 1
    bne     t0, t1, fail
    la      a0, f_root
    li      t0, 0xff800ffc          /* root[1023] through the root's self-map */
    lw      s5, 0(t0)
    beqz    s5, fail
    la      a0, f_ctx
    li      t0, 0xff801000
    li      t1, 0x5a5a1234
    sw      t1, 0(t0)
    lw      t2, 0(t0)
    bne     t1, t2, fail
    sw      zero, 0(t0)
    la      a0, f_stack
    addi    sp, sp, -16
    sw      t1, 0(sp)
    lw      t2, 0(sp)
    addi    sp, sp, 16
    bne     t1, t2, fail
    la      a0, m_kernel
    call    puts

    /* PID 2: its space, then user mode at its entry with its stack */
    lw      t0, 12(s1)
    csrw    satp, t0
    sfence.vma
    la      a0, f_share
    li      t0, 0xff800ffc
    lw      t1, 0(t0)
    bne     t1, s5, fail
    lw      t0, 16(s1)
    csrw    sepc, t0
    lw      sp, 20(s1)
    li      t0, 0x100               /* sstatus.SPP = user */
    csrc    sstatus, t0
    li      a0, 0
    sret

    .balign 4
trap:
    csrr    s6, scause
    csrr    s7, sepc
    csrr    s8, stval
    li      t0, 8                   /* environment call from user mode */
    bne     s6, t0, 1f
    li      t0, 0x600d
    mv      s9, a0
    la      a0, f_user
    bne     s9, t0, fail
    la      a0, m_pass
    call    puts
    li      t0, SIMC_VA
    sw      zero, FINISH(t0)
2:  j       2b
1:  la      a0, f_trap
    call    puts
    mv      a0, s6
    call    puthex
    la      a0, m_sepc
    call    puts
    mv      a0, s7
    call    puthex
    la      a0, m_stval
    call    puts
    mv      a0, s8
    call    puthex
    la      a0, m_nl
    call    puts
    j       3f

fail:                               /* a0 = the message */
    call    puts
3:  li      t0, SIMC_VA
    li      t1, 1
    sw      t1, FINISH(t0)
4:  j       4b

puts:                               /* a0 = NUL-terminated string; uses t0-t2 */
    li      t0, UART_VA
1:  lbu     t1, 0(a0)
    beqz    t1, 3f
2:  lw      t2, TXFULL(t0)
    bnez    t2, 2b
    sw      t1, 0(t0)
    addi    a0, a0, 1
    j       1b
3:  ret

puthex:                             /* a0 = value, 8 hex digits; uses t0-t4 */
    li      t0, UART_VA
    li      t3, 28
1:  srl     t1, a0, t3
    andi    t1, t1, 15
    li      t4, 10
    blt     t1, t4, 2f
    addi    t1, t1, 'a' - '0' - 10
2:  addi    t1, t1, '0'
3:  lw      t2, TXFULL(t0)
    bnez    t2, 3b
    sw      t1, 0(t0)
    addi    t3, t3, -4
    bgez    t3, 1b
    ret

m_start:  .asciz "sim-layout probe: supervisor mode entered\n"
m_kernel: .asciz "sim-layout probe: entry contract OK, entering PID 2\n"
m_pass:   .asciz "VERDICT sim-layout/boot PASS\n"
f_a7:     .asciz "VERDICT sim-layout/boot FAIL -- a7 (resume flag) is not 0\n"
f_xarg:   .asciz "VERDICT sim-layout/boot FAIL -- a0 does not point at an XArg tag of version 1\n"
f_ptab:   .asciz "VERDICT sim-layout/boot FAIL -- process table entry 0 is not the running satp/sp\n"
f_rpt:    .asciz "VERDICT sim-layout/boot FAIL -- the page tracker does not give the root table to PID 1\n"
f_root:   .asciz "VERDICT sim-layout/boot FAIL -- no root table at 0xff800000\n"
f_ctx:    .asciz "VERDICT sim-layout/boot FAIL -- the context page 0xff801000 is not writable\n"
f_stack:  .asciz "VERDICT sim-layout/boot FAIL -- the kernel stack is not writable\n"
f_share:  .asciz "VERDICT sim-layout/boot FAIL -- PID 2 does not share megapage 1023\n"
f_user:   .asciz "VERDICT sim-layout/boot FAIL -- PID 2 reported a failed check\n"
f_trap:   .asciz "VERDICT sim-layout/boot FAIL -- unexpected trap scause="
m_sepc:   .asciz " sepc="
m_stval:  .asciz " stval="
m_nl:     .asciz "\n"
