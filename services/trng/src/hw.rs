//! `hw` source (target_os = "xous"): drives the TRNG register map of spec/trng.toml
//! (server page) through the register-level driver libs/trng-driver (the code the SoC firmware
//! runs too). The hardware runs the raw sources, its own SP 800-90B tests and the ChaCha20
//! conditioner; this backend programs the cutoffs (computed from alpha and the claimed
//! min-entropy, exactly as the software tests) and the conditioner intervals, gates output on the
//! hardware error registers, and layers the software conditioner (fast key erasure) on top of the
//! hardware `urandom` words, whose bytes also pass through the software health tests.

use std::sync::OnceLock;

use trng::api::{ErrorStats, HealthStats, TrngError};
use trng_core::conditioner::ConditionerConfig;
use trng_core::health::HealthParams;
use trng_core::pipeline::{Feed, Pipeline, RawMode, WordSource};
use trng_driver::{Config, Mmio, ServerPage, Sources};

use trng_core::spec::regs::server::registers as r;

use crate::backend::Backend;

/// Polls of a port or FIFO before giving up (the FIFOs refill in microseconds).
const SPIN_LIMIT: u32 = 1_000_000;
/// Raw words read per burst at most (`ServerPage::raw_burst`; the FIFO refills from half full).
const RAW_BURST: usize = 64;

/// The server page's base address, mapped once per process (the model seed and the backend
/// share it).
static PAGE: OnceLock<usize> = OnceLock::new();

/// The TRNG server page through the register-level driver (libs/trng-driver), the same code the
/// SoC firmware runs.
#[derive(Clone, Copy)]
pub struct HwRegs {
    base: usize,
}

impl HwRegs {
    /// Map the page (once) and program it: the software's cutoffs (trng_core::health, the same
    /// functions as the software tests) and the conditioner intervals, then enable both sources.
    pub fn new() -> Result<Self, xous::Error> {
        if let Some(base) = PAGE.get() {
            return Ok(HwRegs { base: *base });
        }
        let range = xous::map_memory(
            xous::MemoryAddress::new(trng_driver::SERVER_BASE),
            None,
            4096,
            xous::MemoryFlags::R | xous::MemoryFlags::W,
        )?;
        let regs = HwRegs { base: *PAGE.get_or_init(|| range.as_mut_ptr() as usize) };
        let (av, ro, cc) = (HealthParams::av(), HealthParams::ro(), ConditionerConfig::default());
        regs.driver().init(
            &Config {
                av_rct_cutoff: av.rct_cutoff(),
                av_apt_cutoff: av.apt_cutoff(),
                ro_rct_cutoff: ro.rct_cutoff(),
                ro_apt_cutoff: ro.apt_cutoff(),
                reseed_interval: cc.reseed_interval,
                selfmix_interval: cc.selfmix_interval,
                selfmix_enable: cc.selfmix_enable,
            },
            Sources::Both,
        );
        Ok(regs)
    }
    pub fn driver(&self) -> ServerPage<Mmio> {
        // SAFETY: `base` is the process's mapping of the server page, never unmapped.
        ServerPage::new(unsafe { Mmio::new(self.base as *mut u32) })
    }
    /// A hardware health failure is latched (RCT/APT or excursion).
    pub fn hw_error(&self) -> bool {
        self.driver().failing()
    }
    /// One conditioned word from the server port: only a word the port vouched for
    /// (URANDOM_VALID.last after the read); an empty port's poison word is never used.
    pub fn urandom(&self) -> Option<u32> {
        self.driver().urandom_poll(SPIN_LIMIT)
    }
    pub fn urandom_blocking(&mut self) -> u32 {
        loop {
            if let Some(w) = self.urandom() {
                return w;
            }
        }
    }
}

struct HwUrandom(HwRegs);

impl WordSource for HwUrandom {
    fn next_word(&mut self) -> Option<u32> {
        if self.0.hw_error() {
            return None;
        }
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
        let pipeline = Pipeline::new(Feed::External, Some(Box::new(HwUrandom(regs))), model_seed, ConditionerConfig::default());
        Ok(HwBackend { regs, pipeline, raw_mode: None })
    }

    /// Select the sources of a raw mode (trng_driver::ServerPage::select_sources: the
    /// conditioner is never held, so the kernel's port keeps serving during a raw RO read).
    /// Before the AV channels are switched off, one valid conditioned word proves the
    /// conditioner was seeded with the AV channels running: it then never holds output
    /// seeded from the ring oscillator alone.
    fn select_raw(&mut self, mode: RawMode) -> Result<(), TrngError> {
        if self.raw_mode == Some(mode) {
            return Ok(());
        }
        let d = self.regs.driver();
        if mode == RawMode::Ro && self.regs.urandom().is_none() {
            return Err(TrngError::HealthFailure);
        }
        d.select_sources(match mode {
            RawMode::Av => Sources::AvOnly,
            RawMode::Ro => Sources::RoOnly,
            RawMode::Both => Sources::Both,
        });
        // discard the words assembled under the previous selection (bounded: the simulated
        // noise source refills the FIFO faster than the CPU reads it, so "until empty" never
        // ended; trng_driver::ServerPage::discard_raw)
        d.discard_raw();
        self.raw_mode = Some(mode);
        Ok(())
    }

    /// Back to both source families (conditioned output, clearing errors).
    fn select_both(&mut self) {
        if self.raw_mode.is_some_and(|m| m != RawMode::Both) {
            self.regs.driver().select_sources(Sources::Both);
        }
        self.raw_mode = None;
    }
}

impl Backend for HwBackend {
    fn name(&self) -> &'static str {
        "hw"
    }
    fn fill_conditioned(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        // a raw-mode request may have disabled a source family: conditioned words come from
        // both families again
        self.select_both();
        if self.regs.hw_error() {
            out.fill(0);
            return Err(TrngError::HealthFailure);
        }
        self.pipeline.fill_conditioned(out).map_err(|_| TrngError::HealthFailure)
    }
    fn fill_raw(&mut self, mode: RawMode, out: &mut [u8]) -> Result<(), TrngError> {
        if let Err(e) = self.select_raw(mode) {
            out.fill(0);
            return Err(e);
        }
        // words in bursts (`raw_burst`: a burst is kept only if the FIFO did not underrun
        // across it and no failure is latched after its last read); an empty FIFO is polled
        // up to SPIN_LIMIT times, a latched failure ends the fill at once
        let d = self.regs.driver();
        let mut words = [0u32; RAW_BURST];
        for block in out.chunks_mut(RAW_BURST * 4) {
            let need = block.len().div_ceil(4);
            let (mut got, mut idle) = (0, 0);
            while got < need {
                let n = d.raw_burst(&mut words[got..need]);
                got += n;
                if n == 0 {
                    idle += 1;
                    if idle >= SPIN_LIMIT || d.failing() {
                        words.fill(0);
                        out.fill(0);
                        return Err(TrngError::HealthFailure);
                    }
                }
            }
            for (c, w) in block.chunks_mut(4).zip(&words) {
                match <&mut [u8; 4]>::try_from(&mut *c) {
                    Ok(c4) => *c4 = w.to_le_bytes(),
                    Err(_) => c.copy_from_slice(&w.to_le_bytes()[..c.len()]),
                }
            }
        }
        words.fill(0);
        Ok(())
    }
    fn clear_errors(&mut self) {
        // clearing restarts the start-up tests and the conditioner reseeds from scratch: with
        // both families running, never from the ring oscillator alone
        self.select_both();
        self.regs.driver().clear_errors();
        self.pipeline.clear_errors();
    }
    fn seed_user(&mut self, w: u32) {
        self.regs.driver().seed(w);
        self.pipeline.seed_user(w);
    }
    fn set_faults(&mut self, _spec: &str) -> Result<(), TrngError> {
        Err(TrngError::NotSupported)
    }
    fn health_stats(&self) -> HealthStats {
        let mut hs = HealthStats::default();
        let mut src = crate::backend::source_stats(&self.pipeline, trng_core::pipeline::SLOT_EXT, trng::api::SOURCE_HW);
        // the hardware's own RCT/APT failures (latched in NIST_ERRORS) on top of ours
        // (NIST_ERRORS: one latched bit per source and test)
        let nist = self.regs.driver().health().nist_errors;
        src.rct_failures += r::nist_errors::AV_REPCOUNT.get(nist).count_ones() + r::nist_errors::RO_REPCOUNT.get(nist).count_ones();
        src.apt_failures += r::nist_errors::AV_ADAPTIVE.get(nist).count_ones() + r::nist_errors::RO_ADAPTIVE.get(nist).count_ones();
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
