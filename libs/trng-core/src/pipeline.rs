//! The software TRNG pipeline: raw sources -> health tests -> ChaCha20 conditioner.
//!
//! Output gating: any health-test failure latches a global error; while it is latched every
//! request (conditioned or raw) fails with [`PipelineError::Health`] and writes zeros only. A
//! failure invalidates (zeroizes) the conditioner, so after [`Pipeline::clear_errors`] the sources
//! run their start-up tests again and the conditioner is fully reseeded before the next output.

use zeroize::Zeroize;

use crate::conditioner::{CondError, CondStats, Conditioner, ConditionerConfig};
use crate::health::{Failure, HealthCounters, HealthParams, SourceHealth};
use crate::sources::{AvModel, FaultParseError, FaultSpec, RoModel};

/// An external raw word source (hosted: OS entropy). `None` = the source failed.
pub trait WordSource: Send {
    fn next_word(&mut self) -> Option<u32>;
}

/// What seeds/reseeds the conditioner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// The external word source (OS entropy in hosted mode), tested as bytes.
    External,
    /// The models: avalanche word XOR ring-oscillator word (like the hardware's raw FIFO).
    Models,
}

/// Raw output modes (test modes / tester).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawMode {
    Av,
    Ro,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineError {
    /// A health test failed (latched until cleared): no output.
    Health,
    /// The request is not possible with this configuration.
    NotSupported,
}

/// Health slots (index into [`Pipeline::health`]).
pub const SLOT_AV0: usize = 0;
pub const SLOT_AV1: usize = 1;
pub const SLOT_RO: usize = 2;
pub const SLOT_EXT: usize = 3;
pub const SLOTS: usize = 4;
/// Error bit for a start-up test failure / an external source failure.
pub const ERR_STARTUP: u32 = 1 << 30;
pub const ERR_SOURCE: u32 = 1 << 31;

/// Error statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineErrors {
    pub latched: bool,
    pub error_bits: u32,
    pub total_failures: u32,
    pub startup_failures: u32,
    pub clears: u32,
    pub refused_requests: u64,
}

struct Raw {
    av: AvModel,
    ro: RoModel,
    ext: Option<Box<dyn WordSource>>,
    health: [SourceHealth; SLOTS],
    errors: PipelineErrors,
    /// Set when an error latches; taken by the server to notify subscribers.
    new_error: bool,
}

impl Raw {
    fn latch(&mut self, slot: Option<usize>) {
        if let Some(s) = slot {
            match self.health[s].failure() {
                Some(Failure::Rct) => self.errors.error_bits |= 1 << (2 * s),
                Some(Failure::Apt) => self.errors.error_bits |= 1 << (2 * s + 1),
                None => {}
            }
            if !self.health[s].startup_done() {
                self.errors.error_bits |= ERR_STARTUP;
                self.errors.startup_failures += 1;
            }
        } else {
            self.errors.error_bits |= ERR_SOURCE;
        }
        if !self.errors.latched {
            self.errors.latched = true;
            self.errors.total_failures += 1;
            self.new_error = true;
        }
    }

    fn av_word(&mut self) -> Option<u32> {
        if self.errors.latched {
            return None;
        }
        let [h0, h1, _, _] = &mut self.health;
        match self.av.next_word(h0, h1) {
            Some(w) => Some(w),
            None => {
                let slot = if self.health[SLOT_AV0].failure().is_some() { SLOT_AV0 } else { SLOT_AV1 };
                self.latch(Some(slot));
                if self.health[SLOT_AV1].failure().is_some() {
                    self.latch(Some(SLOT_AV1));
                }
                None
            }
        }
    }

    fn ro_word(&mut self) -> Option<u32> {
        if self.errors.latched {
            return None;
        }
        match self.ro.next_word(&mut self.health[SLOT_RO]) {
            Some(w) => Some(w),
            None => {
                self.latch(Some(SLOT_RO));
                None
            }
        }
    }

    fn ext_word(&mut self) -> Option<u32> {
        if self.errors.latched {
            return None;
        }
        let w = match self.ext.as_mut().and_then(|e| e.next_word()) {
            Some(w) => w,
            None => {
                self.latch(None);
                return None;
            }
        };
        let h = &mut self.health[SLOT_EXT];
        let mut ok = true;
        for b in w.to_le_bytes() {
            ok &= h.feed(b as u32);
        }
        if ok {
            Some(w)
        } else {
            self.latch(Some(SLOT_EXT));
            None
        }
    }

    fn word(&mut self, mode: RawMode) -> Option<u32> {
        match mode {
            RawMode::Av => self.av_word(),
            RawMode::Ro => self.ro_word(),
            RawMode::Both => {
                let a = self.av_word()?;
                let r = self.ro_word()?;
                Some(a ^ r)
            }
        }
    }

    fn feed_word(&mut self, feed: Feed) -> Option<u32> {
        match feed {
            Feed::External => self.ext_word(),
            Feed::Models => self.word(RawMode::Both),
        }
    }

    fn slots_for(&self, feed: Option<Feed>, mode: Option<RawMode>) -> &'static [usize] {
        match (feed, mode) {
            (Some(Feed::External), _) => &[SLOT_EXT],
            (Some(Feed::Models), _) | (_, Some(RawMode::Both)) => &[SLOT_AV0, SLOT_AV1, SLOT_RO],
            (_, Some(RawMode::Av)) => &[SLOT_AV0, SLOT_AV1],
            (_, Some(RawMode::Ro)) => &[SLOT_RO],
            (None, None) => &[],
        }
    }

    /// Run the start-up test of the given slots (draw and discard samples until each has passed
    /// its start-up samples).
    fn ensure_started(&mut self, slots: &[usize]) -> bool {
        for &s in slots {
            while !self.health[s].startup_done() {
                let w = match s {
                    SLOT_AV0 | SLOT_AV1 => self.av_word(),
                    SLOT_RO => self.ro_word(),
                    _ => self.ext_word(),
                };
                match w {
                    Some(mut w) => w.zeroize(),
                    None => return false,
                }
            }
        }
        !self.errors.latched
    }
}

/// The pipeline.
pub struct Pipeline {
    raw: Raw,
    feed: Feed,
    cond: Conditioner,
}

impl Pipeline {
    /// `model_seed` seeds the models' physics; `ext` is the external source (required for
    /// `Feed::External`).
    pub fn new(feed: Feed, ext: Option<Box<dyn WordSource>>, model_seed: [u8; 32], cfg: ConditionerConfig) -> Self {
        assert!(feed == Feed::Models || ext.is_some(), "Feed::External needs a WordSource");
        let mut s2 = model_seed;
        s2[0] ^= 0x5A; // independent physics for the two models
        Pipeline {
            raw: Raw {
                av: AvModel::new(model_seed),
                ro: RoModel::new(s2),
                ext,
                health: [
                    SourceHealth::new(HealthParams::av()),
                    SourceHealth::new(HealthParams::av()),
                    SourceHealth::new(HealthParams::ro()),
                    SourceHealth::new(HealthParams::os()),
                ],
                errors: PipelineErrors::default(),
                new_error: false,
            },
            feed,
            cond: Conditioner::new(cfg),
        }
    }

    pub fn feed(&self) -> Feed {
        self.feed
    }

    /// Start-up: run the start-up tests of the feeding sources and seed the conditioner.
    pub fn startup(&mut self) -> Result<(), PipelineError> {
        self.prepare_conditioned()
    }

    fn fail_health(&mut self) -> PipelineError {
        self.cond.invalidate();
        PipelineError::Health
    }

    fn prepare_conditioned(&mut self) -> Result<(), PipelineError> {
        if self.raw.errors.latched {
            self.cond.invalidate();
            return Err(PipelineError::Health);
        }
        let slots = self.raw.slots_for(Some(self.feed), None);
        if !self.raw.ensure_started(slots) {
            return Err(self.fail_health());
        }
        while self.cond.words_needed() > 0 {
            match self.raw.feed_word(self.feed) {
                Some(w) => self.cond.absorb(w),
                None => return Err(self.fail_health()),
            }
        }
        Ok(())
    }

    /// Fill `out` with conditioned bytes. On error `out` is all zeros.
    pub fn fill_conditioned(&mut self, out: &mut [u8]) -> Result<(), PipelineError> {
        let r = self.fill_conditioned_inner(out);
        if r.is_err() {
            out.zeroize();
            self.raw.errors.refused_requests += 1;
        }
        r
    }

    fn fill_conditioned_inner(&mut self, out: &mut [u8]) -> Result<(), PipelineError> {
        self.prepare_conditioned()?;
        // every request folds at least one fresh raw word: fresh entropy, and a failing source
        // is noticed by the very next request
        match self.raw.feed_word(self.feed) {
            Some(w) => self.cond.absorb(w),
            None => return Err(self.fail_health()),
        }
        let feed = self.feed;
        let raw = &mut self.raw;
        match self.cond.generate(out, &mut || raw.feed_word(feed)) {
            Ok(()) => Ok(()),
            Err(CondError::Entropy) | Err(CondError::NotSeeded) => Err(self.fail_health()),
        }
    }

    /// Fill `out` with raw source words (little-endian). On error `out` is all zeros.
    pub fn fill_raw(&mut self, mode: RawMode, out: &mut [u8]) -> Result<(), PipelineError> {
        let r = self.fill_raw_inner(mode, out);
        if r.is_err() {
            out.zeroize();
            self.raw.errors.refused_requests += 1;
        }
        r
    }

    fn fill_raw_inner(&mut self, mode: RawMode, out: &mut [u8]) -> Result<(), PipelineError> {
        if self.raw.errors.latched {
            return Err(PipelineError::Health);
        }
        let slots = self.raw.slots_for(None, Some(mode));
        if !self.raw.ensure_started(slots) {
            return Err(self.fail_health());
        }
        for chunk in out.chunks_mut(4) {
            match self.raw.word(mode) {
                Some(w) => chunk.copy_from_slice(&w.to_le_bytes()[..chunk.len()]),
                None => return Err(self.fail_health()),
            }
        }
        Ok(())
    }

    /// Clear latched errors: failed tests restart (with their start-up test); the conditioner
    /// is reseeded before the next output if it was invalidated.
    pub fn clear_errors(&mut self) {
        for h in self.raw.health.iter_mut() {
            if h.failure().is_some() || !h.startup_done() {
                h.clear();
            }
        }
        if self.raw.errors.latched {
            self.raw.errors.clears += 1;
        }
        self.raw.errors.latched = false;
        self.raw.errors.error_bits = 0;
    }

    /// Replace the model faults (samples counted from now).
    pub fn set_faults(&mut self, spec: &str) -> Result<(), FaultParseError> {
        let f = FaultSpec::parse(spec)?;
        self.raw.av.set_faults(&f);
        self.raw.ro.set_faults(&f);
        Ok(())
    }

    /// Fold a user seed word into the conditioner (with the next raw word).
    pub fn seed_user(&mut self, w: u32) {
        self.cond.fold_user_seed(w);
    }

    /// Idle hook: one self-mix block.
    pub fn self_mix(&mut self) {
        self.cond.self_mix();
    }

    pub fn errors(&self) -> PipelineErrors {
        self.raw.errors
    }

    pub fn is_latched(&self) -> bool {
        self.raw.errors.latched
    }

    /// True once per newly latched error (for notifications).
    pub fn take_new_error(&mut self) -> bool {
        core::mem::take(&mut self.raw.new_error)
    }

    pub fn health(&self, slot: usize) -> &SourceHealth {
        &self.raw.health[slot]
    }

    pub fn health_counters(&self, slot: usize) -> HealthCounters {
        self.raw.health[slot].counters()
    }

    pub fn conditioner_valid(&self) -> bool {
        self.cond.is_valid()
    }

    pub fn conditioner_stats(&self) -> CondStats {
        self.cond.stats()
    }

    /// Samples the models produced since faults were last set: (av0, av1, ro).
    pub fn model_samples(&self) -> (u64, u64, u64) {
        (self.raw.av.samples(0), self.raw.av.samples(1), self.raw.ro.samples())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter(det_rng::XorShift32);
    impl WordSource for Counter {
        fn next_word(&mut self) -> Option<u32> {
            // a deterministic but test-passing byte stream
            Some(self.0.next())
        }
    }

    fn model_pipeline() -> Pipeline {
        Pipeline::new(Feed::Models, None, [9; 32], ConditionerConfig::default())
    }

    #[test]
    fn conditioned_output_from_models_and_external() {
        let mut e = model_pipeline();
        let mut a = [0u8; 1000];
        e.fill_conditioned(&mut a).unwrap();
        let mut b = [0u8; 1000];
        e.fill_conditioned(&mut b).unwrap();
        assert_ne!(a, b);
        assert!(e.conditioner_valid());
        let mut e = Pipeline::new(
            Feed::External,
            Some(Box::new(Counter(det_rng::XorShift32(1)))),
            [9; 32],
            ConditionerConfig::default(),
        );
        e.fill_conditioned(&mut a).unwrap();
        assert!(e.health(SLOT_EXT).startup_done());
    }

    /// Raw samples handed out (test modes, the tester) are never fed to the conditioner: every
    /// model sample is drawn once and goes to exactly one consumer. Drawing raw words moves
    /// neither the conditioner's absorbed-word counter nor its output, and the sample counters
    /// advance by exactly what was handed out.
    #[test]
    fn raw_samples_never_reach_the_conditioner() {
        let mut e = model_pipeline();
        e.startup().unwrap();
        for mode in [RawMode::Av, RawMode::Ro, RawMode::Both] {
            let absorbed = e.conditioner_stats().words_absorbed;
            let (a0, a1, r) = e.model_samples();
            let mut raw = [0u8; 4096];
            e.fill_raw(mode, &mut raw).unwrap();
            assert_eq!(e.conditioner_stats().words_absorbed, absorbed, "{mode:?}: raw words reached the conditioner");
            let (b0, b1, br) = e.model_samples();
            let drawn = (b0 - a0) + (b1 - a1) + (br - r);
            assert!(drawn > 0, "{mode:?}: no samples drawn");
        }
        // and the conditioned path does absorb fresh words (the counter is live)
        let absorbed = e.conditioner_stats().words_absorbed;
        let mut out = [0u8; 64];
        e.fill_conditioned(&mut out).unwrap();
        assert!(e.conditioner_stats().words_absorbed > absorbed);
    }

    /// Fault injection end to end: a stuck-at source produces zero output bytes
    /// after at most the RCT cutoff samples, reports the error, and recovers after clear.
    #[test]
    fn stuck_source_stops_output_within_rct_cutoff_and_recovers() {
        for (target, slot) in [("av0", SLOT_AV0), ("av1", SLOT_AV1), ("ro", SLOT_RO)] {
            let mut e = model_pipeline();
            e.startup().unwrap();
            let cutoff = e.health(slot).rct_cutoff() as u64;
            // stuck for a bounded window so the source recovers afterwards
            e.set_faults(&format!("{target}:stuck@0+100000")).unwrap();
            let sample_count = |e: &Pipeline| {
                let (a0, a1, r) = e.model_samples();
                [a0, a1, r][slot.min(2)]
            };
            // small requests until the error latches; count bytes emitted after the fault began
            let mut emitted_after_fault = 0usize;
            let mut requests = 0;
            loop {
                let mut b = [0xA5u8; 16];
                requests += 1;
                match e.fill_conditioned(&mut b) {
                    Ok(()) => {
                        // output is only allowed while the stuck run is still shorter than the cutoff
                        assert!(
                            sample_count(&e) < cutoff + 32 * 2,
                            "{target}: output after {} stuck samples",
                            sample_count(&e)
                        );
                        emitted_after_fault += 16;
                    }
                    Err(PipelineError::Health) => {
                        assert!(b.iter().all(|x| *x == 0), "failed request must write zeros only");
                        break;
                    }
                    Err(e) => panic!("{e:?}"),
                }
                assert!(requests < 100);
            }
            // detection happened within the raw word that contained the cutoff-th stuck sample
            let per_word = 32; // samples per channel in one raw word (av: 32 pairs, ro: 32 bits)
            assert!(sample_count(&e) <= cutoff + per_word, "{target}: detected after {} samples", sample_count(&e));
            assert!(emitted_after_fault <= 16 * 2, "{target}: {emitted_after_fault} bytes after fault");
            let err = e.errors();
            assert!(err.latched);
            assert_ne!(err.error_bits & (1 << (2 * slot)), 0, "{target}: RCT bit");
            assert_eq!(e.health(slot).failure(), Some(Failure::Rct));
            assert!(e.take_new_error());
            assert!(!e.take_new_error());
            // zero output while latched, also raw modes
            for _ in 0..10 {
                let mut b = [0xFFu8; 64];
                assert_eq!(e.fill_conditioned(&mut b), Err(PipelineError::Health));
                assert!(b.iter().all(|x| *x == 0));
                assert_eq!(e.fill_raw(RawMode::Ro, &mut b), Err(PipelineError::Health));
            }
            assert!(!e.conditioner_valid());
            assert!(e.errors().refused_requests >= 20);
            // clear while still stuck: the start-up test fails again, still no output
            e.clear_errors();
            let mut b = [0u8; 64];
            assert_eq!(e.fill_conditioned(&mut b), Err(PipelineError::Health));
            assert_ne!(e.errors().error_bits & ERR_STARTUP, 0);
            // remove the fault, clear: start-up test passes, conditioner reseeded, output flows
            e.set_faults("").unwrap();
            e.clear_errors();
            e.fill_conditioned(&mut b).unwrap();
            assert!(b.iter().any(|x| *x != 0));
            assert!(!e.is_latched());
            assert_eq!(e.errors().clears, 2);
            assert_eq!(e.conditioner_stats().full_seeds, 2);
        }
    }

    #[test]
    fn startup_test_blocks_first_output_with_a_broken_source() {
        let mut e = model_pipeline();
        e.set_faults("ro:stuck=1").unwrap();
        let mut b = [0u8; 32];
        assert_eq!(e.fill_conditioned(&mut b), Err(PipelineError::Health));
        assert!(e.errors().error_bits & ERR_STARTUP != 0);
        assert_eq!(e.conditioner_stats().blocks_out, 0);
        assert_eq!(e.conditioner_stats().full_seeds, 0);
    }

    #[test]
    fn raw_modes() {
        let mut e = model_pipeline();
        let mut av = [0u8; 4096];
        let mut ro = [0u8; 4096];
        e.fill_raw(RawMode::Av, &mut av).unwrap();
        e.fill_raw(RawMode::Ro, &mut ro).unwrap();
        assert_ne!(av, ro);
        let mut odd = [0u8; 7];
        e.fill_raw(RawMode::Both, &mut odd).unwrap();
        // a biased ro source fails the APT in raw mode too
        e.set_faults("ro:bias=0.97").unwrap();
        let mut big = vec![0u8; 65536];
        assert_eq!(e.fill_raw(RawMode::Ro, &mut big), Err(PipelineError::Health));
        assert!(big.iter().all(|x| *x == 0));
        assert!(e.errors().error_bits & (3 << (2 * SLOT_RO)) != 0);
    }
}
