; The ISA v2 X25519 ladder (RFC 7748): clamping, u reduced, 255 ladder steps and the final swap.
; The ladder of x25519_v2.s, included with `.include "x25519_v2_ladder.s"`; not a program on its
; own (x25519_v2.s follows it with the inversion, x25519_invert.s). x25519_batch_v2.s runs its
; rescheduled variant, x25519_v2_ladder_sched.s (the swap moved, 69 instead of 73 eng_clk per step).
;
;   in:  %31 = scalar k (raw), %24 = u (raw)
;   out: %25 = x2, %26 = z2 (projective result), %24 = x1 (u reduced), %31 = 0
;   uses %0..%11, %16..%20, %24..%28, %31 and nothing else (%12..%15, %21..%23, %29, %30 keep their values)
;   defines the labels top, entry, ladder_end, ladder_done: the including program must not use
;   these names.
;
; Control flow never depends on secret data (BRZ only tests the loop counter %19 and the phase
; flag %20, or #0). Register roles and scheduling: x25519_v2.s.
.isa v2
    mul %24, %24, #1        ; x1 = (u mod 2^255) mod p
    psa %25, #1             ; x2 = 1
    psa %26, #0             ; z2 = 0
    psa %28, #1             ; z3 = 1
    add %19, #9, #9         ; 200
    add %19, %19, #8        ; 250
    add %19, %19, #1        ; 251 -> 252 iterations for scalar bits 254..3
    psa %20, #1             ; phase 1
    psa %16, #1             ; bit 254 is 1 after clamping
    psa %17, #1             ; swap = 1 ^ 0
    psa %27, %24            ; x3 = x1
    brz entry, #0

top:
    xbt %18, %31            ; current scalar bit
    xor %17, %18, %16       ; swap = bit ^ previous bit
    psa %16, %18
entry:
    cswap %25, %27, %17     ; swap(x2, x3) if swap
    cswap %26, %28, %17     ; swap(z2, z3) if swap
    shl %31, %31
    fadd %0, %25, %26       ; A = x2 + z2
    fsub %2, %25, %26       ; B = x2 - z2
    mul %1, %0, %0          ; AA = A^2
    mul %3, %2, %2          ; BB = B^2
    fadd %5, %27, %28       ; C = x3 + z3
    fsub %6, %27, %28       ; D = x3 - z3
    mul %7, %6, %0          ; DA = D * A
    mul %8, %5, %2          ; CB = C * B
    fsub %4, %1, %3         ; E = AA - BB
    mul %25, %1, %3         ; x2 = AA * BB
    mul %11, %4, #2         ; a24 * E
    fadd %9, %7, %8         ; DA + CB
    fsub %10, %7, %8        ; DA - CB
    mul %27, %9, %9         ; x3 = (DA + CB)^2
    mul %10, %10, %10       ; (DA - CB)^2
    fadd %11, %11, %1       ; AA + a24 * E
    mul %26, %4, %11        ; z2 = E * (AA + a24 * E)
    mul %28, %24, %10       ; z3 = x1 * (DA - CB)^2
    brz ladder_end, %19
    sub %19, %19, #1
    brz top, #0

ladder_end:
    brz ladder_done, %20    ; phase 2 finished?
    psa %20, #0
    psa %31, #0             ; clamping: scalar bits 2..0 read as 0
    add %19, #1, #1         ; 2 -> 3 iterations
    brz top, #0

ladder_done:
    cswap %25, %27, %16     ; final swap by the last bit (only x2, z2 are used)
    cswap %26, %28, %16
