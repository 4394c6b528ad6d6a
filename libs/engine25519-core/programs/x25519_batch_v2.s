; Up to three X25519 (RFC 7748) in one engine run, for ISA v2: the ladder and inversion of
; x25519_v2.s (the same fragments) run once per job, and the jobs' operands and results wait in a
; ring of six registers that the ladder and the inversion do not touch.
;
; Register convention (engine25519_core::programs::X25519_BATCH_*):
;   ring  S = [%31, %24, %21, %22, %23, %29], in: [k0, u0, k1, u1, k2, u2] (raw, as for
;         x25519_v2.s; slots of jobs that do not run are not read)
;   %30   N - 1 (jobs in the run minus one: 0, 1 or 2; public)
;   out   job j's result in slot 4 * (N - 1 - j) mod 6 (programs::x25519_batch_result_reg):
;         N = 1: %31;  N = 2: job 0 %23, job 1 %31;  N = 3: job 0 %21, job 1 %23, job 2 %31
;   every other register the ladder and the inversion name is clobbered.
;
; Each job reads its scalar from %31 and u from %24 and leaves its result in %31. After each
; job but the last, the ring turns by two slots (S[i] <- S[i + 2 mod 6], through %0 and %1,
; which the next job overwrites before it reads them): the next job's operands come to %31 and
; %24, the result just computed goes to slot 4 and x1 (its reduced u) to slot 5.
;
; Control flow never depends on secret data: BRZ tests only the ladder's %19 and %20, the job
; counter %30 (public) or #0. A run of N jobs takes the same cycles for any inputs.
.isa v2
job:
    .include "x25519_v2_ladder.s"  ; clamping, ladder, final swap: %25 = x2, %26 = z2
    .include "x25519_invert.s"  ; z2^(p-2) by the pow22501 chain, %31 = x2 / z2
    brz done, %30           ; the last job?
    sub %30, %30, #1
    psa %0, %31             ; [%31, %24, %21, %22, %23, %29] <- [%21, %22, %23, %29, %31, %24]
    psa %1, %24
    psa %31, %21
    psa %24, %22
    psa %21, %23
    psa %22, %29
    psa %23, %0
    psa %29, %1
    brz job, #0
done:
    fin
