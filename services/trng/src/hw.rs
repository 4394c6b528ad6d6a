//! `hw` source (target_os = "xous"): drives the TRNG register map of spec/trng.toml
//! (server page). The hardware runs the raw sources, its own SP 800-90B tests and the ChaCha20
//! conditioner; this driver programs the cutoffs (computed from alpha and the claimed
//! min-entropy, exactly as the software tests) and the conditioner intervals, gates output on the
//! hardware error registers, and layers the software conditioner (fast key erasure) on top of the
//! hardware `urandom` words, whose bytes also pass through the software health tests.

use trng::api::{ErrorStats, HealthStats, TrngError};
use trng_core::conditioner::ConditionerConfig;
use trng_core::pipeline::{Pipeline, Feed, RawMode, WordSource};
use trng_core::health::HealthParams;
use trng_core::spec::regs::server::{self as regs, registers as r};
use trng_core::spec::regs::constants;

use crate::backend::Backend;

/// Polls of a status bit before giving up (the FIFOs refill in microseconds).
const SPIN_LIMIT: u32 = 1_000_000;

#[derive(Clone, Copy)]
pub struct HwRegs {
    base: *mut u32,
}

// The mapping is process-wide and only used under the backend mutex.
unsafe impl Send for HwRegs {}

impl HwRegs {
    pub fn new() -> Result<Self, xous::Error> {
        let range = xous::map_memory(
            xous::MemoryAddress::new(regs::BASE),
            None,
            4096,
            xous::MemoryFlags::R | xous::MemoryFlags::W,
        )?;
        Ok(HwRegs { base: range.as_mut_ptr() as *mut u32 })
    }
    #[inline]
    pub fn rd(&self, off: usize) -> u32 {
        unsafe { self.base.add(off / 4).read_volatile() }
    }
    #[inline]
    pub fn wr(&self, off: usize, v: u32) {
        unsafe { self.base.add(off / 4).write_volatile(v) }
    }
    /// Hardware health error latched (NIST error counters or status health flags).
    pub fn hw_error(&self) -> bool {
        let st = self.rd(r::STATUS);
        self.rd(r::NIST_ERRORS) != 0 || r::status::AV_HEALTH.get(st) != 0 || r::status::RO_HEALTH.get(st) != 0
    }
    /// One conditioned word from the hardware, honouring the valid bit (an empty port reads
    /// 0xDEADBEEF with valid = 0: that value is never used).
    pub fn urandom(&self) -> Option<u32> {
        for _ in 0..SPIN_LIMIT {
            if r::urandom_valid::VALID.get(self.rd(r::URANDOM_VALID)) != 0 {
                let w = self.rd(r::URANDOM);
                return Some(w);
            }
        }
        None
    }
    pub fn urandom_blocking(&mut self) -> u32 {
        loop {
            if let Some(w) = self.urandom() {
                return w;
            }
        }
    }
    /// One raw word from the raw FIFO.
    pub fn raw(&self) -> Option<u32> {
        for _ in 0..SPIN_LIMIT {
            if r::status::AVAIL.get(self.rd(r::STATUS)) != 0 {
                return Some(self.rd(r::DATA));
            }
        }
        None
    }
}

struct HwUrandom(HwRegs);

impl WordSource for HwUrandom {
    fn next_word(&mut self) -> Option<u32> {
        if self.0.hw_error() {
            return None;
        }
        let _ = constants::URANDOM_INVALID;
        self.0.urandom()
    }
}

pub struct HwBackend {
    regs: HwRegs,
    pipeline: Pipeline,
    raw_mode: Option<RawMode>,
}

impl HwBackend {
    pub fn new(model_seed: [u8; 32]) -> Result<Self, xous::Error> {
        let regs = HwRegs::new()?;
        // cutoffs: the same functions as the software tests
        for (reg, p) in [(r::AV_NIST, HealthParams::av()), (r::RO_NIST, HealthParams::ro())] {
            let v = r::av_nist::REPCOUNT_CUTOFF.val(p.rct_cutoff()) | r::av_nist::ADAPTIVE_CUTOFF.val(p.apt_cutoff());
            regs.wr(reg, v);
        }
        let cc = ConditionerConfig::default();
        regs.wr(
            r::CHACHA,
            r::chacha::RESEED_INTERVAL.val(cc.reseed_interval)
                | r::chacha::SELFMIX_INTERVAL.val(cc.selfmix_interval)
                | r::chacha::SELFMIX_ENA.val(cc.selfmix_enable as u32),
        );
        regs.wr(r::CONTROL, r::control::ENABLE.val(1));
        let pipeline = Pipeline::new(Feed::External, Some(Box::new(HwUrandom(regs))), model_seed, cc);
        Ok(HwBackend { regs, pipeline, raw_mode: None })
    }

    fn select_raw(&mut self, mode: RawMode) {
        if self.raw_mode == Some(mode) {
            return;
        }
        let (av_dis, ro_dis) = match mode {
            RawMode::Av => (0, 1),
            RawMode::Ro => (1, 0),
            RawMode::Both => (0, 0),
        };
        self.regs.wr(r::CONTROL, r::control::ENABLE.val(1) | r::control::AV_DIS.val(av_dis) | r::control::RO_DIS.val(ro_dis));
        // drain words produced under the previous configuration
        while r::status::AVAIL.get(self.regs.rd(r::STATUS)) != 0 {
            let _ = self.regs.rd(r::DATA);
        }
        self.raw_mode = Some(mode);
    }
}

impl Backend for HwBackend {
    fn name(&self) -> &'static str {
        "hw"
    }
    fn fill_conditioned(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        if self.regs.hw_error() {
            out.fill(0);
            return Err(TrngError::HealthFailure);
        }
        self.pipeline.fill_conditioned(out).map_err(|_| TrngError::HealthFailure)
    }
    fn fill_raw(&mut self, mode: RawMode, out: &mut [u8]) -> Result<(), TrngError> {
        self.select_raw(mode);
        for c in out.chunks_mut(4) {
            match self.regs.raw() {
                Some(w) if !self.regs.hw_error() => c.copy_from_slice(&w.to_le_bytes()[..c.len()]),
                _ => {
                    out.fill(0);
                    return Err(TrngError::HealthFailure);
                }
            }
        }
        Ok(())
    }
    fn clear_errors(&mut self) {
        let ctl = self.regs.rd(r::CONTROL);
        self.regs.wr(r::CONTROL, r::control::CLR_ERR.set(ctl, 1));
        self.regs.wr(r::CONTROL, r::control::CLR_ERR.set(ctl, 0));
        self.pipeline.clear_errors();
    }
    fn seed_user(&mut self, w: u32) {
        self.regs.wr(r::SEED, w);
        self.pipeline.seed_user(w);
    }
    fn set_faults(&mut self, _spec: &str) -> Result<(), TrngError> {
        Err(TrngError::NotSupported)
    }
    fn health_stats(&self) -> HealthStats {
        let mut hs = HealthStats::default();
        let mut src = crate::backend::source_stats(&self.pipeline, trng_core::pipeline::SLOT_EXT, trng::api::SOURCE_HW);
        // the hardware's own RCT/APT failures (latched in NIST_ERRORS) on top of ours
        let nist = self.regs.rd(r::NIST_ERRORS);
        src.rct_failures += r::nist_errors::AV_REPCOUNT.get(nist) + r::nist_errors::RO_REPCOUNT.get(nist);
        src.apt_failures += r::nist_errors::AV_ADAPTIVE.get(nist) + r::nist_errors::RO_ADAPTIVE.get(nist);
        hs.sources[0] = src;
        crate::backend::conditioner_stats(&self.pipeline, &mut hs);
        hs
    }
    fn error_stats(&self) -> ErrorStats {
        let mut es = crate::backend::pipeline_error_stats(&self.pipeline);
        if self.regs.hw_error() {
            es.latched = true;
            es.error_bits |= trng_core::pipeline::ERR_SOURCE;
        }
        es
    }
    fn take_new_error(&mut self) -> bool {
        self.pipeline.take_new_error()
    }
}
