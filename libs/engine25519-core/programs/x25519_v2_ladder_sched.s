; The ISA v2 X25519 ladder (RFC 7748) of x25519_batch_v2.s: clamping, u reduced, 255 ladder
; steps and the final swap, as x25519_v2_ladder.s computes them, but with the conditional swap
; moved so that a step takes 69 eng_clk instead of 73. Included with
; `.include "x25519_v2_ladder_sched.s"`; not a program on its own.
;
;   in:  %31 = scalar k (raw), %24 = u (raw)
;   out: %25 = x2, %26 = z2 (projective result), %24 = x1 (u reduced), %31 = 0
;   uses %0..%12, %16..%20, %24..%28, %31 and nothing else (%13..%15, %21..%23, %29, %30 keep their values)
;   defines the labels top, ladder_end, ladder_done: the including program must not use these
;   names.
;
; Why a second ladder: x25519_v2_ladder.s (shared with x25519_v2.s, whose words are pinned)
; swaps (x2, x3) and (z2, z3) at the top of each step. That swap needs all four of the previous
; step's products, so no MUL of a step can issue until the last MUL of the step before has
; finished: the multipliers idle across each step boundary. Here the (z2, z3) swap is applied
; to the operands of the two MULs that produce them, inside the step before, with the NEXT
; step's swap bit: z2 = E * F and z3 = x1 * T (F = AA + a24 E, T = (DA - CB)^2) become, after
; CSWAP(E, x1') and CSWAP(F, T) by that bit, the already swapped pair. The next step's A and B
; then need only x2 and z2, so the step's last MUL (z3, needed first by C and D) runs while the
; next step's A, B, AA, BB issue. The (x2, x3) swap stays at the top of the step (x2 and x3
; are ready well before z2). The instruction order below was found by a search over the
; orders that keep every dependency, timed under the v2 issue rules; the model and the
; gateware give the same count (the RTL vectors check it).
;
; The swap for the step of bit t is k_t ^ k_(t+1); the step of bit t reads the next bit k_(t-1)
; (%18) and forms the next swap k_(t-1) ^ k_t (%17) for its z operands and the next step's
; (x2, x3) swap. The step of bit 0 reads 0, so its swap is k_0 = the final swap (x2, x3 at
; ladder_done; z2, z3 were swapped by it in that step). Phase 1 runs the steps of bits 254..4
; (they read bits 253..3 from the scalar), phase 2 those of bits 3..0 with the scalar register
; cleared (clamping: bits 2..0 read as 0).
;
; Control flow never depends on secret data (BRZ only tests the loop counter %19 and the phase
; flag %20, or #0); %17, %18, %16 are secret and only select CSWAPs.
;
; Registers: %24 x1, %25 x2, %26 z2, %27 x3, %28 z3 (z pair already swapped for the step),
; %16 current bit, %18 next bit, %17 swap, %19 loop counter, %20 phase flag, %12 copy of x1
; (swapped with E), %0..%11 the step's values as in x25519_v2_ladder.s.
.isa v2
    mul %24, %24, #1        ; x1 = (u mod 2^255) mod p
    psa %25, #1             ; x2 = 1
    psa %26, #1             ; z pair enters swapped (bit 254 is 1): z2 <- z3 = 1
    psa %28, #0             ;                                        z3 <- z2 = 0
    add %19, #9, #9         ; 200
    add %19, %19, #8        ; 250 -> 251 iterations for scalar bits 254..4
    psa %20, #1             ; phase 1
    psa %16, #1             ; bit 254 is 1 after clamping
    psa %17, #1             ; swap = 1 ^ 0
    psa %27, %24            ; x3 = x1

top:
    cswap %25, %27, %17     ; swap(x2, x3) if swap
    fadd %0, %25, %26       ; A = x2 + z2
    fsub %2, %25, %26       ; B = x2 - z2
    mul %1, %0, %0          ; AA = A^2
    mul %3, %2, %2          ; BB = B^2
    fadd %5, %27, %28       ; C = x3 + z3
    fsub %6, %27, %28       ; D = x3 - z3
    shl %31, %31
    mul %7, %6, %0          ; DA = D * A
    mul %8, %5, %2          ; CB = C * B
    xbt %18, %31            ; next scalar bit
    fsub %4, %1, %3         ; E = AA - BB
    mul %11, %4, #2         ; a24 * E
    fsub %10, %7, %8        ; DA - CB
    mul %10, %10, %10       ; T = (DA - CB)^2
    fadd %9, %7, %8         ; DA + CB
    xor %17, %18, %16       ; next swap = next bit ^ bit
    mul %25, %1, %3         ; x2 = AA * BB
    psa %12, %24            ; x1' = x1
    fadd %11, %11, %1       ; F = AA + a24 * E
    mul %27, %9, %9         ; x3 = (DA + CB)^2
    cswap %11, %10, %17     ; swap(F, T) if next swap
    psa %16, %18
    cswap %4, %12, %17      ; swap(E, x1') if next swap
    mul %26, %4, %11        ; z2 = E * F (z3 if swapped)
    mul %28, %12, %10       ; z3 = x1 * T (z2 if swapped)
    brz ladder_end, %19
    sub %19, %19, #1
    brz top, #0

ladder_end:
    brz ladder_done, %20    ; phase 2 finished?
    psa %20, #0
    psa %31, #0             ; clamping: scalar bits 2..0 read as 0
    add %19, #1, #1
    add %19, %19, #1        ; 3 -> 4 iterations
    brz top, #0

ladder_done:
    cswap %25, %27, %17     ; final swap by the last bit (only x2, z2 are used)
