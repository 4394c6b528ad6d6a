; Up to three X25519 (RFC 7748) in one engine run, for ISA v2: first a ladder once per job
; (x25519_v2_ladder_sched.s: x25519_v2.s's ladder rescheduled, 69 instead of 73 eng_clk per
; step), then the jobs' inversions z2^(p-2) interleaved, instruction by instruction, in one block.
;
; Register convention (engine25519_core::programs::X25519_BATCH_*):
;   ring  S = [%31, %24, %21, %22, %23, %29], in: [k0, u0, k1, u1, k2, u2] (raw, as for
;         x25519_v2.s; slots of jobs that do not run are not read)
;   %30   N - 1 (jobs in the run minus one: 0, 1 or 2; public)
;   out   job j's result in slot 4 * (N - 1 - j) mod 6 (programs::x25519_batch_result_reg):
;         N = 1: %31;  N = 2: job 0 %23, job 1 %31;  N = 3: job 0 %21, job 1 %23, job 2 %31
;   every other register the program names is clobbered.
;
; Ladders: each job's ladder reads its scalar from %31 and u from %24 and leaves x2, z2 in %25,
; %26. After each job but the last the ring turns by two slots (S[i] <- S[i + 2] for i < 4) and
; x2, z2 go to slots 4 and 5: the next job's operands come to %31 and %24. After the last
; ladder job j's x2 and z2 wait in slots 4 (N - 1 - j) and 4 (N - 1 - j) + 1 mod 6 (the last
; job's in %25, %26), and the ladder's other registers are free.
;
; Inversions: one chain (z^(p-2) by the pow22501 chain of x25519_invert.s, then x2 * z^(p-2))
; is some 265 dependent MULs, so it waits for each product and leaves one multiplier idle. The
; block for N jobs issues their chains' MULs in turn (job 0's, job 1's, ...): two chains keep
; both multipliers busy in the time of one, three in one and a half. Each job's inversion is its
; own (no shared inversion across jobs), so a job with z2 = 0 (a low-order u) gets 0 as
; x25519_v2.s gives and the other jobs are untouched. Each result is written over its job's x2
; (the last job's, in %25, goes to %31).
;
; Control flow never depends on secret data: BRZ tests only the ladder's %19 and %20, the job
; counter %30 and %15 (a count from %30), the squaring runs' %19 (counts from constants) or #0.
; A run of N jobs takes the same cycles for any inputs.
.isa v2
    psa %15, %30                  ; ladders to run after this one: N - 1 (public)
job:
    .include "x25519_v2_ladder_sched.s" ; clamping, ladder, final swap: %25 = x2, %26 = z2
    brz ladders_done, %15         ; the last job's ladder?
    sub %15, %15, #1
    psa %31, %21                  ; [%31, %24, %21, %22, %23, %29] <- [%21, %22, %23, %29, x2, z2]
    psa %24, %22
    psa %21, %23
    psa %22, %29
    psa %23, %25
    psa %29, %26
    brz job, #0
ladders_done:
    brz one, %30                  ; N = 1
    sub %15, %30, #1
    brz two, %15                  ; N = 2

; N = 3: three chains side by side (job 0 in %21/%22 with %0..%3, job 1 in %23/%29 with
; %4..%7, job 2 in %25/%26 with %8..%11). The squaring runs are unrolled by two, which keeps
; both multipliers busy across a pass: a run of 2 m (or 2 m + 1) squarings squares each chain
; once (twice) before the loop, then m passes, each: the first two chains, the counter test,
; the third chain, all three again. The test ends the m-th pass after its first two squares;
; the third chain's square after the loop completes it.
    mul %0, %22, %22              ; z^2
    mul %4, %29, %29
    mul %8, %26, %26
    mul %1, %0, %0                ; z^4
    mul %5, %4, %4
    mul %9, %8, %8
    mul %1, %1, %1                ; z^8
    mul %5, %5, %5
    mul %9, %9, %9
    mul %1, %22, %1               ; z^9
    mul %5, %29, %5
    mul %9, %26, %9
    mul %2, %0, %1                ; z^11 (kept to the end)
    mul %6, %4, %5
    mul %10, %8, %9
    mul %0, %2, %2                ; z^22
    mul %4, %6, %6
    mul %8, %10, %10
    mul %0, %1, %0                ; z^(2^5 - 1)
    mul %4, %5, %4
    mul %8, %9, %8
c3_z31:
    add %19, #1, #1               ; 5 squarings: 2 before the loop, 2 passes
    mul %1, %0, %0
    mul %5, %4, %4
    mul %9, %8, %8
    mul %1, %1, %1
    mul %5, %5, %5
    mul %9, %9, %9
c3_sq5:
    mul %1, %1, %1
    mul %5, %5, %5
    sub %19, %19, #1
    brz c3_sq5_done, %19
    mul %9, %9, %9
    mul %1, %1, %1
    mul %5, %5, %5
    mul %9, %9, %9
    brz c3_sq5, #0
c3_sq5_done:
    mul %9, %9, %9                ; the last pass's third square
    mul %0, %1, %0                ; z^(2^10 - 1) (kept to 2^50 - 1)
    mul %4, %5, %4
    mul %8, %9, %8
    psa %19, #5                   ; 10 squarings: 1 before the loop, 5 passes
    mul %1, %0, %0
    mul %5, %4, %4
    mul %9, %8, %8
c3_sq10a:
    mul %1, %1, %1
    mul %5, %5, %5
    sub %19, %19, #1
    brz c3_sq10a_done, %19
    mul %9, %9, %9
    mul %1, %1, %1
    mul %5, %5, %5
    mul %9, %9, %9
    brz c3_sq10a, #0
c3_sq10a_done:
    mul %9, %9, %9                ; the last pass's third square
    mul %1, %1, %0                ; z^(2^20 - 1)
    mul %5, %5, %4
    mul %9, %9, %8
    psa %19, #6                   ; 20 squarings: 1 before the loop, 10 passes
    mul %3, %1, %1
    mul %7, %5, %5
    mul %11, %9, %9
c3_sq20:
    mul %3, %3, %3
    mul %7, %7, %7
    sub %19, %19, #1
    brz c3_sq20_done, %19
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    brz c3_sq20, #0
c3_sq20_done:
    mul %11, %11, %11             ; the last pass's third square
    mul %3, %3, %1                ; z^(2^40 - 1)
    mul %7, %7, %5
    mul %11, %11, %9
    psa %19, #5                   ; 10 squarings: 1 before the loop, 5 passes
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
c3_sq10b:
    mul %3, %3, %3
    mul %7, %7, %7
    sub %19, %19, #1
    brz c3_sq10b_done, %19
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    brz c3_sq10b, #0
c3_sq10b_done:
    mul %11, %11, %11             ; the last pass's third square
    mul %1, %3, %0                ; z^(2^50 - 1) (kept to 2^250 - 1)
    mul %5, %7, %4
    mul %9, %11, %8
    add %19, #7, #5               ; 50 squarings: 1 before the loop, 25 passes
    mul %3, %1, %1
    mul %7, %5, %5
    mul %11, %9, %9
c3_sq50a:
    mul %3, %3, %3
    mul %7, %7, %7
    sub %19, %19, #1
    brz c3_sq50a_done, %19
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    brz c3_sq50a, #0
c3_sq50a_done:
    mul %11, %11, %11             ; the last pass's third square
    mul %0, %3, %1                ; z^(2^100 - 1)
    mul %4, %7, %5
    mul %8, %11, %9
    psa %19, #8                   ; 100 squarings: 1 before the loop, 50 passes
    mul %3, %0, %0
    mul %7, %4, %4
    mul %11, %8, %8
c3_sq100:
    mul %3, %3, %3
    mul %7, %7, %7
    sub %19, %19, #1
    brz c3_sq100_done, %19
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    brz c3_sq100, #0
c3_sq100_done:
    mul %11, %11, %11             ; the last pass's third square
    mul %3, %3, %0                ; z^(2^200 - 1)
    mul %7, %7, %4
    mul %11, %11, %8
    add %19, #7, #5               ; 50 squarings: 1 before the loop, 25 passes
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
c3_sq50b:
    mul %3, %3, %3
    mul %7, %7, %7
    sub %19, %19, #1
    brz c3_sq50b_done, %19
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    brz c3_sq50b, #0
c3_sq50b_done:
    mul %11, %11, %11             ; the last pass's third square
    mul %3, %3, %1                ; z^(2^250 - 1)
    mul %7, %7, %5
    mul %11, %11, %9
    add %19, #1, #1               ; 5 squarings: 2 before the loop, 2 passes
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
c3_sq5b:
    mul %3, %3, %3
    mul %7, %7, %7
    sub %19, %19, #1
    brz c3_sq5b_done, %19
    mul %11, %11, %11
    mul %3, %3, %3
    mul %7, %7, %7
    mul %11, %11, %11
    brz c3_sq5b, #0
c3_sq5b_done:
    mul %11, %11, %11             ; the last pass's third square
    mul %3, %3, %2                ; z^(2^255 - 21) = 1 / z
    mul %7, %7, %6
    mul %11, %11, %10
    mul %21, %21, %3              ; x2 / z2: the result
    mul %23, %23, %7
    mul %31, %25, %11
    fin

; N = 1: the job (%25/%26) starts its chain with both multipliers: z^(2^5 - 1) after five MUL
; latencies instead of seven (nine MULs instead of seven, the other multiplier being idle);
; then it joins block two at c2_z31 as its second chain (%4 = z^(2^5 - 1), %6 = z^11), whose
; first chain runs on constants (%0 = %2 = 1 and x2 = %23 = 0: its result is 0, nothing is read).
one:
    mul %4, %26, %26              ; z^2
    psa %0, #1                    ; the first chain: 1^(2^5 - 1)
    psa %2, #1                    ; 1^11
    psa %23, #0                   ; its x2: its result is 0
    mul %5, %26, %4               ; z^3
    mul %8, %4, %4                ; z^4
    mul %9, %5, %8                ; z^7
    mul %10, %8, %8               ; z^8
    mul %11, %9, %10              ; z^15
    mul %8, %10, %10              ; z^16
    mul %4, %11, %8               ; z^(2^5 - 1)
    mul %6, %10, %5               ; z^11
    brz c2_z31, #0

; N = 2: two chains side by side (job 0 in %23/%29 with %0..%3, job 1 in %25/%26 with %4..%7).
two:
    mul %0, %29, %29              ; z^2
    mul %4, %26, %26
    mul %1, %0, %0                ; z^4
    mul %5, %4, %4
    mul %1, %1, %1                ; z^8
    mul %5, %5, %5
    mul %1, %29, %1               ; z^9
    mul %5, %26, %5
    mul %2, %0, %1                ; z^11 (kept to the end)
    mul %6, %4, %5
    mul %0, %2, %2                ; z^22
    mul %4, %6, %6
    mul %0, %1, %0                ; z^(2^5 - 1)
    mul %4, %5, %4
c2_z31:
    psa %19, #5                   ; 5 squarings
    mul %1, %0, %0
    mul %5, %4, %4
c2_sq5:
    sub %19, %19, #1
    brz c2_sq5_done, %19
    mul %1, %1, %1
    mul %5, %5, %5
    brz c2_sq5, #0
c2_sq5_done:
    mul %0, %1, %0                ; z^(2^10 - 1) (kept to 2^50 - 1)
    mul %4, %5, %4
    psa %19, #6                   ; 10 squarings
    mul %1, %0, %0
    mul %5, %4, %4
c2_sq10a:
    sub %19, %19, #1
    brz c2_sq10a_done, %19
    mul %1, %1, %1
    mul %5, %5, %5
    brz c2_sq10a, #0
c2_sq10a_done:
    mul %1, %1, %0                ; z^(2^20 - 1)
    mul %5, %5, %4
    psa %19, #7                   ; 20 squarings
    mul %3, %1, %1
    mul %7, %5, %5
c2_sq20:
    sub %19, %19, #1
    brz c2_sq20_done, %19
    mul %3, %3, %3
    mul %7, %7, %7
    brz c2_sq20, #0
c2_sq20_done:
    mul %3, %3, %1                ; z^(2^40 - 1)
    mul %7, %7, %5
    psa %19, #6                   ; 10 squarings
    mul %3, %3, %3
    mul %7, %7, %7
c2_sq10b:
    sub %19, %19, #1
    brz c2_sq10b_done, %19
    mul %3, %3, %3
    mul %7, %7, %7
    brz c2_sq10b, #0
c2_sq10b_done:
    mul %1, %3, %0                ; z^(2^50 - 1) (kept to 2^250 - 1)
    mul %5, %7, %4
    psa %19, #8                   ; 50 squarings
    mul %3, %1, %1
    mul %7, %5, %5
c2_sq50a:
    sub %19, %19, #1
    brz c2_sq50a_done, %19
    mul %3, %3, %3
    mul %7, %7, %7
    brz c2_sq50a, #0
c2_sq50a_done:
    mul %0, %3, %1                ; z^(2^100 - 1)
    mul %4, %7, %5
    psa %19, #9                   ; 100 squarings
    mul %3, %0, %0
    mul %7, %4, %4
c2_sq100:
    sub %19, %19, #1
    brz c2_sq100_done, %19
    mul %3, %3, %3
    mul %7, %7, %7
    brz c2_sq100, #0
c2_sq100_done:
    mul %3, %3, %0                ; z^(2^200 - 1)
    mul %7, %7, %4
    psa %19, #8                   ; 50 squarings
    mul %3, %3, %3
    mul %7, %7, %7
c2_sq50b:
    sub %19, %19, #1
    brz c2_sq50b_done, %19
    mul %3, %3, %3
    mul %7, %7, %7
    brz c2_sq50b, #0
c2_sq50b_done:
    mul %3, %3, %1                ; z^(2^250 - 1)
    mul %7, %7, %5
    psa %19, #5                   ; 5 squarings
    mul %3, %3, %3
    mul %7, %7, %7
c2_sq5b:
    sub %19, %19, #1
    brz c2_sq5b_done, %19
    mul %3, %3, %3
    mul %7, %7, %7
    brz c2_sq5b, #0
c2_sq5b_done:
    mul %3, %3, %2                ; z^(2^255 - 21) = 1 / z
    mul %7, %7, %6
    mul %23, %23, %3              ; x2 / z2: the result
    mul %31, %25, %7
    fin
