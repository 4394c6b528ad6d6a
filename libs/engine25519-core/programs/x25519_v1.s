; X25519 scalar multiplication (RFC 7748) for ISA v1 -- runs unchanged on Precursor's engine.
;
; Register convention (window-relative):
;   in:  %31 = scalar k (32 bytes little-endian, raw: clamping is done here)
;        %24 = u-coordinate (32 bytes little-endian, raw: bit 255 is ignored, values >= p reduce)
;   out: %31 = X25519(k, u), fully reduced, little-endian
;   clobbers every other register of the window.
;   %24 x1 (reduced u)   %25 x2   %26 z2   %27 x3   %28 z3   %29 temporary
;   %16 previous scalar bit   %17 swap flag   %18 current bit   %19 loop counter   %20 phase flag
;   %0..%15 temporaries
;
; Clamping without AND: bit 255 is never examined (XBT reads bit 254, SHL drops bit 255);
; bit 254 is forced to 1 by entering the first ladder iteration with bit = 1 instead of
; extracting it; bits 2..0 are forced to 0 by clearing the shifted scalar before the last three
; iterations (phase 2). Control flow never depends on secret data: the only BRZ conditions are
; the loop counter %19 and the phase flag %20, and the constant-time swap is XOR/MSK/XOR/XOR.
.isa v1
start:
    mul %24, %24, #1        ; x1 = (u mod 2^255) mod p
    psa %25, #1             ; x2 = 1
    psa %26, #0             ; z2 = 0
    psa %27, %24            ; x3 = x1
    psa %28, #1             ; z3 = 1
    add %19, #9, #9         ; 200
    add %19, %19, #8        ; 250
    add %19, %19, #1        ; 251 -> 252 iterations for scalar bits 254..3
    psa %20, #1             ; phase 1
    psa %16, #1             ; bit 254 is 1 after clamping
    psa %17, #1             ; swap = 1 ^ 0
    brz entry, #0

top:
    xbt %18, %31            ; current scalar bit (bit 254 of the shifted scalar)
    xor %17, %18, %16       ; swap = bit ^ previous bit
    psa %16, %18
entry:
    shl %31, %31
    ; cswap(x2, x3), cswap(z2, z3)
    xor %29, %25, %27
    msk %29, %17, %29
    xor %25, %29, %25
    xor %27, %29, %27
    xor %29, %26, %28
    msk %29, %17, %29
    xor %26, %29, %26
    xor %28, %29, %28
    ; A = x2 + z2
    add %0, %25, %26
    trd %29, %0
    sub %0, %0, %29
    ; AA = A^2
    mul %1, %0, %0
    ; B = x2 - z2
    sub %29, #3, %26
    add %2, %25, %29
    trd %29, %2
    sub %2, %2, %29
    ; BB = B^2
    mul %3, %2, %2
    ; E = AA - BB
    sub %29, #3, %3
    add %4, %1, %29
    trd %29, %4
    sub %4, %4, %29
    ; C = x3 + z3
    add %5, %27, %28
    trd %29, %5
    sub %5, %5, %29
    ; D = x3 - z3
    sub %29, #3, %28
    add %6, %27, %29
    trd %29, %6
    sub %6, %6, %29
    ; DA = D * A, CB = C * B
    mul %7, %6, %0
    mul %8, %5, %2
    ; x3 = (DA + CB)^2
    add %9, %7, %8
    trd %29, %9
    sub %9, %9, %29
    mul %27, %9, %9
    ; z3 = x1 * (DA - CB)^2
    sub %29, #3, %8
    add %10, %7, %29
    trd %29, %10
    sub %10, %10, %29
    mul %10, %10, %10
    mul %28, %24, %10
    ; x2 = AA * BB
    mul %25, %1, %3
    ; z2 = E * (AA + a24 * E)
    mul %11, %4, #2
    add %11, %11, %1
    trd %29, %11
    sub %11, %11, %29
    mul %26, %4, %11
    ; next bit
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
    ; final cswap(x2, x3), cswap(z2, z3) by the last bit (only x2, z2 are used)
    xor %29, %25, %27
    msk %29, %16, %29
    xor %25, %29, %25
    xor %29, %26, %28
    msk %29, %16, %29
    xor %26, %29, %26

    .include "x25519_invert.s"  ; z2^(p-2) by the pow22501 chain, %31 = x2 / z2
    fin
