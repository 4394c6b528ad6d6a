//! SP 800-90B section 4.4 health-test cutoffs, computed in f64.
//!
//! This file is compiled twice: into the crate (`trng_core::health::{rct_cutoff, apt_cutoff}`,
//! for parameters other than the spec's, and for the tests) and into `build.rs`, which computes
//! the spec sources' cutoffs on the host and writes them into the generated `spec` module
//! (`spec::health::av::RCT_CUTOFF`, ...). A device has no FPU: in soft-float, `apt_cutoff` for
//! the spec's sources takes about 387 M cycles (3.9 s at 100 MHz), so nothing on a device may
//! call it at start-up (docs/sim.md).

/// RCT cutoff for false-positive probability 2^-alpha_log2 and min-entropy `h` bits/symbol:
/// `C = 1 + ceil(alpha_log2 / h)`.
pub fn rct_cutoff(alpha_log2: u32, h: f64) -> u32 {
    assert!(h > 0.0 && alpha_log2 > 0);
    // 1 + ceil(alpha_log2 / h), computed with a small tolerance against binary rounding
    let q = alpha_log2 as f64 / h;
    let c = (q - 1e-9).ceil();
    1 + c as u32
}

/// Upper tail P(X > k) for X ~ Binomial(n, p), computed exactly in log space (no cancellation).
pub fn binomial_upper_tail(n: u32, p: f64, k: u32) -> f64 {
    if k >= n {
        return 0.0;
    }
    let ln_p = p.ln();
    let ln_q = (1.0 - p).ln();
    // ln C(n, j) accumulated incrementally
    let mut ln_fact = vec![0.0f64; n as usize + 1];
    for i in 1..=n as usize {
        ln_fact[i] = ln_fact[i - 1] + (i as f64).ln();
    }
    let mut sum = 0.0;
    for j in (k + 1)..=n {
        let ln_c = ln_fact[n as usize] - ln_fact[j as usize] - ln_fact[(n - j) as usize];
        sum += (ln_c + j as f64 * ln_p + (n - j) as f64 * ln_q).exp();
    }
    sum
}

/// APT cutoff: 1 + CRITBINOM(W, 2^-h, 1 - 2^-alpha_log2), i.e. 1 + the smallest k with
/// P(Binomial(W, 2^-h) > k) <= alpha.
pub fn apt_cutoff(alpha_log2: u32, h: f64, window: u32) -> u32 {
    assert!(h > 0.0 && window > 1);
    let p = (-h).exp2();
    let alpha = (-(alpha_log2 as f64)).exp2();
    // binary search on the monotone tail
    let (mut lo, mut hi) = (0u32, window);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if binomial_upper_tail(window, p, mid) <= alpha {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    1 + lo
}
