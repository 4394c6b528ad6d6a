//! NIST SP 800-90B section 4.4 continuous health tests.
//!
//! - Repetition Count Test (RCT): fails when one symbol repeats `C` times in a row,
//!   `C = 1 + ceil(-log2(alpha) / H)`.
//! - Adaptive Proportion Test (APT): in each window of `W` samples, the first sample's value must
//!   occur fewer than `C` times, `C = 1 + CRITBINOM(W, 2^-H, 1 - alpha)` (exact binomial).
//! - Start-up test: `startup_samples` samples must pass before the first output.
//! - Failures latch until [`SourceHealth::clear`]; counters survive clears.

use crate::spec;

pub use crate::cutoff::{apt_cutoff, binomial_upper_tail, rct_cutoff};

/// Parameters of one source's tests, with its two cutoffs. The spec's sources ([`Self::av`],
/// [`Self::ro`], [`Self::os`]) take the cutoffs trng-core's build script computed from
/// spec/trng.toml (no floating point at run time: a device has no FPU); [`Self::new`] computes
/// them for any other parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HealthParams {
    pub symbol_bits: u32,
    pub min_entropy: f64,
    pub alpha_log2: u32,
    pub apt_window: u32,
    pub startup_samples: u32,
    rct_c: u32,
    apt_c: u32,
}

impl HealthParams {
    /// Parameters other than the spec's: the cutoffs are computed here, in f64 (on a device
    /// without an FPU this takes seconds for a window of 512 or more).
    pub fn new(symbol_bits: u32, min_entropy: f64, alpha_log2: u32, apt_window: u32, startup_samples: u32) -> Self {
        HealthParams {
            symbol_bits,
            min_entropy,
            alpha_log2,
            apt_window,
            startup_samples,
            rct_c: rct_cutoff(alpha_log2, min_entropy),
            apt_c: apt_cutoff(alpha_log2, min_entropy, apt_window),
        }
    }
    pub fn av() -> Self {
        use spec::health::av as s;
        Self::from_spec(s::SYMBOL_BITS, s::MIN_ENTROPY, s::APT_WINDOW, s::RCT_CUTOFF, s::APT_CUTOFF)
    }
    pub fn ro() -> Self {
        use spec::health::ro as s;
        Self::from_spec(s::SYMBOL_BITS, s::MIN_ENTROPY, s::APT_WINDOW, s::RCT_CUTOFF, s::APT_CUTOFF)
    }
    pub fn os() -> Self {
        use spec::health::os as s;
        Self::from_spec(s::SYMBOL_BITS, s::MIN_ENTROPY, s::APT_WINDOW, s::RCT_CUTOFF, s::APT_CUTOFF)
    }
    fn from_spec(symbol_bits: usize, h: f64, w: usize, rct_c: u32, apt_c: u32) -> Self {
        HealthParams {
            symbol_bits: symbol_bits as u32,
            min_entropy: h,
            alpha_log2: spec::health::ALPHA_LOG2 as u32,
            apt_window: w as u32,
            startup_samples: spec::health::STARTUP_SAMPLES as u32,
            rct_c,
            apt_c,
        }
    }
    pub fn rct_cutoff(&self) -> u32 {
        self.rct_c
    }
    pub fn apt_cutoff(&self) -> u32 {
        self.apt_c
    }
}

/// Which test failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    Rct,
    Apt,
}

/// Counters and observations (not secret).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HealthCounters {
    pub samples: u64,
    pub rct_failures: u32,
    pub apt_failures: u32,
    pub rct_max_run: u32,
    pub apt_max_count: u32,
    pub startup_failures: u32,
}

/// RCT + APT for one noise source, with a latched error and a start-up phase.
#[derive(Clone, Debug)]
pub struct SourceHealth {
    params: HealthParams,
    rct_c: u32,
    apt_c: u32,
    mask: u32,
    // RCT
    rct_a: u32,
    rct_b: u32,
    // APT
    apt_a: u32,
    apt_b: u32,
    apt_i: u32,
    // start-up
    startup_left: u32,
    latched: Option<Failure>,
    counters: HealthCounters,
    fresh: bool,
}

impl SourceHealth {
    pub fn new(params: HealthParams) -> Self {
        let rct_c = params.rct_cutoff();
        let apt_c = params.apt_cutoff();
        SourceHealth {
            params,
            rct_c,
            apt_c,
            mask: if params.symbol_bits >= 32 { u32::MAX } else { (1 << params.symbol_bits) - 1 },
            rct_a: 0,
            rct_b: 0,
            apt_a: 0,
            apt_b: 0,
            apt_i: 0,
            startup_left: params.startup_samples,
            latched: None,
            counters: HealthCounters::default(),
            fresh: true,
        }
    }

    pub fn params(&self) -> HealthParams {
        self.params
    }
    pub fn rct_cutoff(&self) -> u32 {
        self.rct_c
    }
    pub fn apt_cutoff(&self) -> u32 {
        self.apt_c
    }
    pub fn counters(&self) -> HealthCounters {
        self.counters
    }
    /// Latched failure, if any.
    pub fn failure(&self) -> Option<Failure> {
        self.latched
    }
    /// True once the start-up samples have passed and no failure is latched.
    pub fn ok(&self) -> bool {
        self.latched.is_none() && self.startup_left == 0
    }
    pub fn startup_done(&self) -> bool {
        self.startup_left == 0
    }
    /// Samples still needed by the start-up test.
    pub fn startup_left(&self) -> u32 {
        self.startup_left
    }

    /// Feed one sample (only its low `symbol_bits` bits are the symbol). Returns false if a
    /// failure is latched (now or earlier).
    #[inline]
    pub fn feed(&mut self, sample: u32) -> bool {
        let s = sample & self.mask;
        self.counters.samples += 1;
        // RCT
        if !self.fresh && s == self.rct_a {
            self.rct_b += 1;
            if self.rct_b > self.counters.rct_max_run {
                self.counters.rct_max_run = self.rct_b;
            }
            if self.rct_b >= self.rct_c {
                self.fail(Failure::Rct);
                // restart the count so one long run is not counted as many failures
                self.rct_b = 0;
            }
        } else {
            self.rct_a = s;
            self.rct_b = 1;
        }
        // APT
        if self.fresh || self.apt_i >= self.params.apt_window {
            self.apt_a = s;
            self.apt_b = 1;
            self.apt_i = 1;
        } else {
            self.apt_i += 1;
            if s == self.apt_a {
                self.apt_b += 1;
                if self.apt_b > self.counters.apt_max_count {
                    self.counters.apt_max_count = self.apt_b;
                }
                if self.apt_b == self.apt_c {
                    self.fail(Failure::Apt);
                }
            }
        }
        self.fresh = false;
        if self.startup_left > 0 {
            self.startup_left -= 1;
        }
        self.latched.is_none()
    }

    fn fail(&mut self, f: Failure) {
        match f {
            Failure::Rct => self.counters.rct_failures += 1,
            Failure::Apt => self.counters.apt_failures += 1,
        }
        if self.startup_left > 0 {
            self.counters.startup_failures += 1;
        }
        if self.latched.is_none() {
            self.latched = Some(f);
        }
    }

    /// Clear a latched failure and restart the tests, including the start-up test.
    pub fn clear(&mut self) {
        self.latched = None;
        self.fresh = true;
        self.rct_b = 0;
        self.apt_b = 0;
        self.apt_i = 0;
        self.startup_left = self.params.startup_samples;
        self.counters.rct_max_run = 0;
        self.counters.apt_max_count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cutoff table in docs/reference-system.md (SP 800-90B section 4.4, exact binomial),
    /// all entries.
    #[test]
    fn cutoffs_match_reference_table() {
        let hs = [0.5, 1.0, 2.0, 4.0, 8.0];
        let rct20 = [41, 21, 11, 6, 4];
        let apt20_512 = [410, 311, 177, 62, 13];
        let rct40 = [81, 41, 21, 11, 6];
        let apt40_512 = [432, 336, 201, 78, 19];
        for i in 0..hs.len() {
            assert_eq!(rct_cutoff(20, hs[i]), rct20[i], "RCT a=2^-20 H={}", hs[i]);
            assert_eq!(rct_cutoff(40, hs[i]), rct40[i], "RCT a=2^-40 H={}", hs[i]);
            assert_eq!(apt_cutoff(20, hs[i], 512), apt20_512[i], "APT a=2^-20 W=512 H={}", hs[i]);
            assert_eq!(apt_cutoff(40, hs[i], 512), apt40_512[i], "APT a=2^-40 W=512 H={}", hs[i]);
        }
        assert_eq!(apt_cutoff(20, 0.5, 1024), 793);
        assert_eq!(apt_cutoff(20, 1.0, 1024), 589);
    }

    /// The cutoffs the build script generated for the spec's sources (computed on the host, so
    /// the device never runs the f64 code) equal the f64 functions' and the reference table's.
    #[test]
    fn generated_spec_cutoffs_equal_the_functions() {
        let a = spec::health::ALPHA_LOG2 as u32;
        assert_eq!(a, 40, "the reference-table values below are for alpha = 2^-40");
        for (p, rct, apt) in
            [(HealthParams::av(), 21, 201), (HealthParams::ro(), 81, 824), (HealthParams::os(), 11, 78)]
        {
            assert_eq!(p.rct_cutoff(), rct_cutoff(a, p.min_entropy), "{p:?}");
            assert_eq!(p.apt_cutoff(), apt_cutoff(a, p.min_entropy, p.apt_window), "{p:?}");
            assert_eq!(p, HealthParams::new(p.symbol_bits, p.min_entropy, a, p.apt_window, p.startup_samples));
            assert_eq!(p.rct_cutoff(), rct, "{p:?}: RCT against the reference table (alpha 2^-40)");
            assert_eq!(p.apt_cutoff(), apt, "{p:?}: APT against the reference table (alpha 2^-40)");
        }
    }

    #[test]
    fn spec_sources_have_sane_cutoffs() {
        use crate::spec::regs::server::registers::{av_nist, ro_nist};
        for p in [HealthParams::av(), HealthParams::ro(), HealthParams::os()] {
            assert!(p.rct_cutoff() >= 2);
            assert!(p.apt_cutoff() > 1 && p.apt_cutoff() <= p.apt_window);
        }
        // the hardware AV_NIST / RO_NIST fields (Precursor's widths) must hold each family's cutoffs
        for (p, rct, apt) in [
            (HealthParams::av(), av_nist::REPCOUNT_CUTOFF, av_nist::ADAPTIVE_CUTOFF),
            (HealthParams::ro(), ro_nist::REPCOUNT_CUTOFF, ro_nist::ADAPTIVE_CUTOFF),
        ] {
            assert!(p.rct_cutoff() <= rct.max(), "{p:?}");
            assert!(p.apt_cutoff() <= apt.max(), "{p:?}");
        }
    }

    fn params(h: f64, w: u32) -> HealthParams {
        HealthParams::new(8, h, 20, w, 16)
    }

    #[test]
    fn rct_fails_exactly_at_cutoff() {
        let mut t = SourceHealth::new(params(4.0, 512));
        let c = t.rct_cutoff();
        assert_eq!(c, 6);
        for i in 0..100u32 {
            assert!(t.feed(i)); // distinct symbols
        }
        for i in 1..=c {
            let ok = t.feed(7);
            assert_eq!(ok, i < c, "run length {i}");
        }
        assert_eq!(t.failure(), Some(Failure::Rct));
        assert_eq!(t.counters().rct_failures, 1);
        // latched: good samples do not clear it
        for i in 0..100u32 {
            assert!(!t.feed(i));
        }
        t.clear();
        assert!(!t.ok()); // start-up test runs again
        for i in 0..16u32 {
            assert!(t.feed(i));
        }
        assert!(t.ok());
    }

    #[test]
    fn apt_fails_when_one_value_dominates_a_window() {
        let mut t = SourceHealth::new(params(4.0, 512));
        let c = t.apt_cutoff();
        assert_eq!(c, 62);
        // pattern: A, x, A, y, ... A appears every other sample: no RCT run, APT count grows
        let mut fed = 0;
        let mut n = 0u32;
        while t.failure().is_none() {
            let s = if fed % 2 == 0 { 0xAA } else { n % 200 };
            n += 1;
            t.feed(s);
            fed += 1;
            assert!(fed < 512);
        }
        assert_eq!(t.failure(), Some(Failure::Apt));
        assert_eq!(t.counters().apt_max_count, c);
        assert_eq!(fed, 2 * (c as usize) - 1);
    }

    #[test]
    fn uniform_data_passes() {
        // xorshift data, H = 8 bits per byte: no failures over a million samples at alpha 2^-40
        let mut t = SourceHealth::new(HealthParams::os());
        let mut r = det_rng::XorShift64(0x1234_5678_9abc_def1);
        for _ in 0..1_000_000 {
            assert!(t.feed((r.next() >> 24) as u32));
        }
        assert!(t.ok());
    }
}
