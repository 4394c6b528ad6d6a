; Shared tail of the X25519 programs (x25519_v1.s, x25519_v2.s): the inversion z2^(p-2) and the
; affine result. Included with `.include "x25519_invert.s"` right after the ladder's final swap;
; not a program on its own. Uses only instructions common to ISA v1 and v2 (mul, psa, sub, brz),
; so it assembles for either ISA. It ends without `fin`: the including program ends with one.
; (x25519_batch_v2.s runs the same chain, interleaved over its jobs, in its own code.)
;
;   in:  %25 = x2, %26 = z2 (projective result of the ladder)
;   out: %31 = x2 / z2 = x2 * z2^(p-2)
;   clobbers %0..%15 and %19 (loop counter of the squaring runs).
;   defines the labels sq5, sq10a, sq10b, sq20, sq50a, sq50b, sq100, sq5b (and *_done): the
;   including program must not use these names.
;
; Control flow never depends on secret data: BRZ only tests the loop counter %19 (public
; constants) or #0.

; z2^(p-2) by the pow22501 chain (p - 2 = 2^255 - 21)
    mul %0, %26, %26        ; z^2
    mul %1, %0, %0
    mul %1, %1, %1          ; z^8
    mul %2, %26, %1         ; z^9
    mul %3, %0, %2          ; z^11
    mul %4, %3, %3          ; z^22
    mul %5, %2, %4          ; z^(2^5-1)
    psa %19, #5
    mul %6, %5, %5
sq5:
    sub %19, %19, #1
    brz sq5_done, %19
    mul %6, %6, %6
    brz sq5, #0
sq5_done:
    mul %7, %6, %5          ; z^(2^10-1)
    psa %19, #6
    mul %8, %7, %7
sq10a:
    sub %19, %19, #1
    brz sq10a_done, %19
    mul %8, %8, %8
    brz sq10a, #0
sq10a_done:
    mul %9, %8, %7          ; z^(2^20-1)
    psa %19, #7
    mul %10, %9, %9
sq20:
    sub %19, %19, #1
    brz sq20_done, %19
    mul %10, %10, %10
    brz sq20, #0
sq20_done:
    mul %11, %10, %9        ; z^(2^40-1)
    psa %19, #6
    mul %12, %11, %11
sq10b:
    sub %19, %19, #1
    brz sq10b_done, %19
    mul %12, %12, %12
    brz sq10b, #0
sq10b_done:
    mul %13, %12, %7        ; z^(2^50-1)
    psa %19, #8
    mul %14, %13, %13
sq50a:
    sub %19, %19, #1
    brz sq50a_done, %19
    mul %14, %14, %14
    brz sq50a, #0
sq50a_done:
    mul %15, %14, %13       ; z^(2^100-1)
    psa %19, #9
    mul %0, %15, %15
sq100:
    sub %19, %19, #1
    brz sq100_done, %19
    mul %0, %0, %0
    brz sq100, #0
sq100_done:
    mul %1, %0, %15         ; z^(2^200-1)
    psa %19, #8
    mul %2, %1, %1
sq50b:
    sub %19, %19, #1
    brz sq50b_done, %19
    mul %2, %2, %2
    brz sq50b, #0
sq50b_done:
    mul %4, %2, %13         ; z^(2^250-1)
    psa %19, #5
    mul %5, %4, %4
sq5b:
    sub %19, %19, #1
    brz sq5b_done, %19
    mul %5, %5, %5
    brz sq5b, #0
sq5b_done:
    mul %6, %5, %3          ; z^(2^255-21) = 1/z
    mul %31, %25, %6        ; u = x2 / z2
