; X25519 scalar multiplication (RFC 7748) for ISA v2.
;
; Register convention: identical to x25519_v1.s
;   in:  %31 = scalar k (raw), %24 = u (raw)      out: %31 = X25519(k, u)
;   %24 x1   %25 x2   %26 z2   %27 x3   %28 z3
;   %16 previous bit   %17 swap flag   %18 current bit   %19 loop counter   %20 phase flag
;
; Same algorithm and clamping as v1; v2 adds FADD/FSUB (fused field add/sub), CSWAP (one
; instruction per register pair) and two asynchronous multipliers. The ladder's instruction order
; (x25519_v2_ladder.s) is scheduled for the v2 interlock: independent work is placed between a MUL and the first
; use of its result, and the two multipliers are kept busy. Control flow never depends on
; secret data (BRZ only tests the loop counter %19 and the phase flag %20).
.isa v2
start:
    .include "x25519_v2_ladder.s"  ; clamping, ladder, final swap: %25 = x2, %26 = z2
    .include "x25519_invert.s"  ; z2^(p-2) by the pow22501 chain, %31 = x2 / z2
    fin
