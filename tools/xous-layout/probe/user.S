/*
 * Boot probe, user side (PID 2): runs in user mode from its ELF entry with the stack the layout
 * gave it; reads its initialised data, writes its data page and its stack, then reports to the
 * probe kernel with `ecall` (a0 = 0x600d when every check passed, 0xbad otherwise).
 */
    .option norvc
    .section .text
    .globl _start
_start:
    addi    sp, sp, -16
    li      t0, 0x12345678
    sw      t0, 0(sp)
    lw      t1, 0(sp)
    bne     t0, t1, bad
    la      t2, value
    lw      t3, 0(t2)
    li      t4, 0xc0ffee
    bne     t3, t4, bad
    sw      t0, 4(t2)
    lw      t1, 4(t2)
    bne     t0, t1, bad
    li      a0, 0x600d
    ecall
1:  j       1b
bad:
    li      a0, 0xbad
    ecall
2:  j       2b

    .section .data
value:
    .word   0xc0ffee
    .word   0
