//! `hw` source (target_os = "xous"): drives the TRNG register map of spec/trng.toml
//! (server page, Precursor's layout) through the register-level driver libs/trng-driver (the
//! code the SoC firmware runs too), on this project's gateware or on a stock Precursor's
//! (detected: trng_driver::detect). The hardware runs the raw sources, its own SP 800-90B tests
//! and the ChaCha20 conditioner; this backend programs the cutoffs (computed from alpha and the
//! claimed min-entropy, exactly as the software tests), gates output on the hardware error
//! registers, and layers the software conditioner (fast key erasure) on top of the hardware
//! `urandom` words, whose bytes also pass through the software health tests.
//!
//! Bring-up is bounded (`HwRegs::bring_up`): a page whose READY never rises within
//! BRING_UP_MS, or that reports a failure again after BRING_UP_CLEARS clears, makes the backend
//! unavailable with one log line naming the registers; it then answers every request with
//! `HealthFailure` at once (no register polling) until ClearErrors tries the bring-up again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use trng::api::{ErrorStats, HealthStats, TrngError};
use trng_core::conditioner::ConditionerConfig;
use trng_core::health::HealthParams;
use trng_core::pipeline::{Feed, Pipeline, RawMode, WordSource};
use trng_driver::{BringUpError, Bus, Config, Gateware, Mmio, ServerPage, Sources};

use trng_core::spec::regs::server::registers as r;

use crate::backend::Backend;

/// Polls of a port or FIFO before giving up (the FIFOs refill in microseconds).
const SPIN_LIMIT: u32 = 1_000_000;
/// Raw words read per burst at most (`ServerPage::raw_burst`; the FIFO refills from half full).
const RAW_BURST: usize = 64;

/// How long bring-up waits for READY (Precursor's AV power-on delay is 50 ms by default; the
/// start-up windows take a few more).
const BRING_UP_MS: u64 = 2_000;
/// Clears of a latched failure during bring-up before the page counts as failing.
const BRING_UP_CLEARS: u32 = 3;
/// Bring-up yields between checks and reads the clock every this many checks.
const BRING_UP_CLOCK_EVERY: u32 = 32;

/// The server page's base address and gateware, mapped and detected once per process.
static PAGE: OnceLock<(usize, Gateware)> = OnceLock::new();
/// The page came up (bring-up passed); false: every request fails at once.
static UP: AtomicBool = AtomicBool::new(false);

/// The TRNG server page through the register-level driver (libs/trng-driver), the same code the
/// SoC firmware runs.
#[derive(Clone, Copy)]
pub struct HwRegs {
    base: usize,
    gw: Gateware,
}

impl HwRegs {
    /// Map the page (once), detect its gateware and program it: the software's cutoffs
    /// (trng_core::health, the same functions as the software tests) and, on this project's
    /// gateware, the conditioner intervals; then enable both sources.
    pub fn new() -> Result<Self, xous::Error> {
        if let Some((base, gw)) = PAGE.get() {
            return Ok(HwRegs { base: *base, gw: *gw });
        }
        let range = xous::map_memory(
            xous::MemoryAddress::new(trng_driver::SERVER_BASE),
            None,
            4096,
            xous::MemoryFlags::R | xous::MemoryFlags::W,
        )?;
        let base = range.as_mut_ptr() as usize;
        // SAFETY: the page was just mapped (4 KiB, R|W) and stays mapped for the process.
        let gw = trng_driver::detect(&unsafe { Mmio::new(base as *mut u32) });
        let (base, gw) = *PAGE.get_or_init(|| (base, gw));
        let regs = HwRegs { base, gw };
        if gw == Gateware::Stock {
            // what needs this project's gateware (docs/device.md "Runs on a stock Precursor")
            log::warn!(
                "TRNG hw: stock gateware: excursion failures are not latched (output gated on the SP 800-90B \
                 tests only), ports and FIFOs are not wiped on a failure, CHACHA keeps the stock intervals"
            );
        }
        regs.program();
        Ok(regs)
    }

    /// Program the page: the software's cutoffs (trng_core::health, the same functions as the
    /// software tests) and, on this project's gateware, the conditioner intervals; then enable
    /// both sources. Returns AV_NIST as read back and as written (the block keeps what it is
    /// given, unless it was reset: a power cycle clears it).
    fn program(&self) -> (u32, u32) {
        let (av, ro, cc) = (HealthParams::av(), HealthParams::ro(), ConditionerConfig::default());
        let d = self.driver();
        d.init(
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
        let written =
            r::av_nist::REPCOUNT_CUTOFF.val(trng_driver::cutoff(self.gw, av.rct_cutoff(), r::av_nist::REPCOUNT_CUTOFF))
                | r::av_nist::ADAPTIVE_CUTOFF.val(trng_driver::cutoff(
                    self.gw,
                    av.apt_cutoff(),
                    r::av_nist::ADAPTIVE_CUTOFF,
                ));
        (d.bus().read(r::AV_NIST), written)
    }

    /// After a system resume (the SoC was powered down: the block's registers are at their
    /// reset values, whatever the SoC enables at power-up): program the page again and bring it
    /// up (bounded, as at start-up). The log line names what was read back.
    pub fn resume(&self) -> Result<(), BringUpError> {
        let (back, written) = self.program();
        let r = self.bring_up();
        log::info!(
            "TRNG hw: resumed: registers programmed again (AV_NIST read back {back:#x}, {}), {}",
            if back == written { "as written".to_string() } else { format!("written {written:#x}: DIFFERS") },
            if r.is_ok() { "serving" } else { "not serving (see above)" }
        );
        r
    }
    pub fn driver(&self) -> ServerPage<Mmio> {
        // SAFETY: `base` is the process's mapping of the server page, never unmapped.
        ServerPage::with_gateware(unsafe { Mmio::new(self.base as *mut u32) }, self.gw)
    }

    /// Wait (bounded: BRING_UP_MS, yielding the CPU between checks) until the page is ready
    /// with no failure latched, clearing a latched failure up to BRING_UP_CLEARS times. On
    /// failure one log line names why and the registers; the backend is then unavailable.
    pub fn bring_up(&self) -> Result<(), BringUpError> {
        // the clock (an IPC to the ticktimer) is read only once the page was not ready at once
        let mut t0: Option<Instant> = None;
        let mut n = 0u32;
        let r = self.driver().bring_up(BRING_UP_CLEARS, || {
            let t = *t0.get_or_insert_with(Instant::now);
            xous::yield_slice();
            n += 1;
            n % BRING_UP_CLOCK_EVERY != 0 || t.elapsed() < Duration::from_millis(BRING_UP_MS)
        });
        UP.store(r.is_ok(), Ordering::SeqCst);
        let gw = match self.gw {
            Gateware::Ext => "this project's",
            Gateware::Stock => "stock Precursor",
        };
        match r {
            Ok(()) => log::info!(
                "TRNG hw: {gw} gateware at {:#x}, ready (waited {} ms)",
                trng_driver::SERVER_BASE,
                t0.map_or(0, |t| t.elapsed().as_millis())
            ),
            Err(BringUpError::NeverReady { ready, status, nist_errors }) => log::error!(
                "TRNG hw: {gw} gateware: not serving: READY never rose within {BRING_UP_MS} ms (READY={ready:#x} STATUS={status:#x} \
                 NIST_ERRORS={nist_errors:#x}); every request fails with HealthFailure until ClearErrors"
            ),
            Err(BringUpError::Failing { nist_errors, excursion, clears }) => log::error!(
                "TRNG hw: {gw} gateware: not serving: health tests still failing after {clears} clears (NIST_ERRORS={nist_errors:#x} \
                 excursion={excursion:#x}); every request fails with HealthFailure until ClearErrors"
            ),
        }
        r
    }

    /// The page came up and nothing made it unavailable since.
    pub fn up(&self) -> bool {
        UP.load(Ordering::SeqCst)
    }
    /// A hardware health failure is latched (RCT/APT or excursion), or the page never came up.
    pub fn hw_error(&self) -> bool {
        !self.up() || self.driver().failing()
    }
    /// One conditioned word from the server port: only a word the port vouched for (the
    /// driver's rule for each gateware); an empty port's poison word is never used. None at once
    /// when the page is not up; otherwise polls at most SPIN_LIMIT times.
    pub fn urandom(&self) -> Option<u32> {
        if !self.up() {
            return None;
        }
        self.driver().urandom_poll(SPIN_LIMIT)
    }
}

/// Seed words for the models (source `model` on the device): hardware words once the page is
/// up, or why not.
pub fn model_seed() -> Result<[u8; 32], String> {
    let regs = HwRegs::new().map_err(|e| format!("map TRNG registers: {e:?}"))?;
    if !regs.up() {
        regs.bring_up().map_err(|e| format!("TRNG page not up: {e:?}"))?;
    }
    let mut s = [0u8; 32];
    for c in s.chunks_mut(4) {
        let w = regs.urandom().ok_or("no conditioned word from the TRNG page")?;
        c.copy_from_slice(&w.to_le_bytes());
    }
    Ok(s)
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
    /// The backend on the mapped, programmed page. A page that does not come up (`bring_up`)
    /// still gives a backend: an unavailable one, which answers every request with
    /// `HealthFailure` (the log line says why) so that clients get an answer, never a hang.
    pub fn new(model_seed: [u8; 32]) -> Result<Self, xous::Error> {
        let regs = HwRegs::new()?;
        let _ = regs.bring_up();
        let pipeline =
            Pipeline::new(Feed::External, Some(Box::new(HwUrandom(regs))), model_seed, ConditionerConfig::default());
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
        if !self.regs.up() {
            out.fill(0);
            return Err(TrngError::HealthFailure);
        }
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
        if !self.regs.up() {
            out.fill(0);
            return Err(TrngError::HealthFailure);
        }
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
        if !self.regs.up() {
            // a page that never came up gets one more bounded bring-up
            let _ = self.regs.bring_up();
        }
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
        src.rct_failures +=
            r::nist_errors::AV_REPCOUNT.get(nist).count_ones() + r::nist_errors::RO_REPCOUNT.get(nist).count_ones();
        src.apt_failures +=
            r::nist_errors::AV_ADAPTIVE.get(nist).count_ones() + r::nist_errors::RO_ADAPTIVE.get(nist).count_ones();
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
    fn resume(&mut self) {
        // the block was reset with the SoC: both families run again (no raw mode survives)
        self.raw_mode = None;
        let _ = self.regs.resume();
    }
}
