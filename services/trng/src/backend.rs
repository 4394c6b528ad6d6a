//! Backends behind the server loop: the software pipeline (`hosted-os`, `model`) and the
//! hardware register driver (`hw`, target_os = "xous"). The loop only decodes and dispatches.

use trng::api::{self, ErrorStats, HealthStats, SourceStats, TrngError};
use trng_core::conditioner::ConditionerConfig;
use trng_core::pipeline::{Feed, Pipeline, PipelineError, RawMode, WordSource, SLOTS, SLOT_EXT};

pub trait Backend: Send {
    fn name(&self) -> &'static str;
    fn fill_conditioned(&mut self, out: &mut [u8]) -> Result<(), TrngError>;
    fn fill_raw(&mut self, mode: RawMode, out: &mut [u8]) -> Result<(), TrngError>;
    fn clear_errors(&mut self);
    fn seed_user(&mut self, w: u32);
    fn set_faults(&mut self, spec: &str) -> Result<(), TrngError>;
    fn health_stats(&self) -> HealthStats;
    fn error_stats(&self) -> ErrorStats;
    /// True once per newly latched error.
    fn take_new_error(&mut self) -> bool;
    /// The system resumed from a suspend (the SoC, and any hardware source with it, was powered
    /// down): bring the source back. Nothing to do for the software sources. (Called only on
    /// the device, by the susres hook.)
    #[cfg_attr(not(target_os = "xous"), allow(dead_code))]
    fn resume(&mut self) {}
}

fn map_err(e: PipelineError) -> TrngError {
    match e {
        PipelineError::Health => TrngError::HealthFailure,
        PipelineError::NotSupported => TrngError::NotSupported,
    }
}

/// OS entropy (getrandom), buffered.
#[cfg(not(target_os = "xous"))]
pub struct OsSource {
    buf: [u8; 4096],
    pos: usize,
}

#[cfg(not(target_os = "xous"))]
impl OsSource {
    pub fn new() -> Self {
        OsSource { buf: [0; 4096], pos: 4096 }
    }
}

#[cfg(not(target_os = "xous"))]
impl WordSource for OsSource {
    fn next_word(&mut self) -> Option<u32> {
        if self.pos + 4 > self.buf.len() {
            getrandom::getrandom(&mut self.buf).ok()?;
            self.pos = 0;
        }
        let w = u32::from_le_bytes(self.buf[self.pos..self.pos + 4].try_into().unwrap());
        // consumed bytes are not kept
        self.buf[self.pos..self.pos + 4].fill(0);
        self.pos += 4;
        Some(w)
    }
}

/// The software pipeline (trng-core Pipeline).
pub struct SoftBackend {
    pipeline: Pipeline,
    name: &'static str,
    ext_kind: u32,
}

impl SoftBackend {
    pub fn new(
        feed: Feed,
        ext: Option<Box<dyn WordSource>>,
        ext_kind: u32,
        model_seed: [u8; 32],
        name: &'static str,
    ) -> Self {
        SoftBackend { pipeline: Pipeline::new(feed, ext, model_seed, ConditionerConfig::default()), name, ext_kind }
    }
}

impl Backend for SoftBackend {
    fn name(&self) -> &'static str {
        self.name
    }
    fn fill_conditioned(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        self.pipeline.fill_conditioned(out).map_err(map_err)
    }
    fn fill_raw(&mut self, mode: RawMode, out: &mut [u8]) -> Result<(), TrngError> {
        self.pipeline.fill_raw(mode, out).map_err(map_err)
    }
    fn clear_errors(&mut self) {
        self.pipeline.clear_errors();
    }
    fn seed_user(&mut self, w: u32) {
        self.pipeline.seed_user(w);
    }
    fn set_faults(&mut self, spec: &str) -> Result<(), TrngError> {
        self.pipeline.set_faults(spec).map_err(|_| TrngError::BadConfig)
    }
    fn health_stats(&self) -> HealthStats {
        let mut hs = HealthStats::default();
        let kinds = [api::SOURCE_AV0, api::SOURCE_AV1, api::SOURCE_RO, self.ext_kind];
        for slot in 0..SLOTS {
            if slot == SLOT_EXT && self.pipeline.feed() != Feed::External {
                continue;
            }
            hs.sources[slot] = source_stats(&self.pipeline, slot, kinds[slot]);
        }
        conditioner_stats(&self.pipeline, &mut hs);
        hs
    }
    fn error_stats(&self) -> ErrorStats {
        pipeline_error_stats(&self.pipeline)
    }
    fn take_new_error(&mut self) -> bool {
        self.pipeline.take_new_error()
    }
}

/// Health statistics of one slot of the pipeline (shared by every source backend).
pub fn source_stats(pipeline: &Pipeline, slot: usize, kind: u32) -> SourceStats {
    let h = pipeline.health(slot);
    let c = h.counters();
    let p = h.params();
    SourceStats {
        kind,
        symbol_bits: p.symbol_bits,
        min_entropy_milli: (p.min_entropy * 1000.0).round() as u32,
        rct_cutoff: h.rct_cutoff(),
        apt_cutoff: h.apt_cutoff(),
        apt_window: p.apt_window,
        samples: c.samples,
        rct_max_run: c.rct_max_run,
        apt_max_count: c.apt_max_count,
        rct_failures: c.rct_failures,
        apt_failures: c.apt_failures,
        startup_passed: h.startup_done() && h.failure().is_none(),
    }
}

/// The conditioner's part of HealthStats.
pub fn conditioner_stats(pipeline: &Pipeline, hs: &mut HealthStats) {
    let cs = pipeline.conditioner_stats();
    hs.conditioner_valid = pipeline.conditioner_valid();
    hs.blocks_out = cs.blocks_out;
    hs.reseeds = cs.reseeds;
    hs.rekeys = cs.rekeys;
    hs.selfmix_blocks = cs.selfmix_blocks;
    hs.full_seeds = cs.full_seeds;
}

/// ErrorStats from the pipeline's latched errors (the server fills in subscriber counts).
pub fn pipeline_error_stats(pipeline: &Pipeline) -> ErrorStats {
    let e = pipeline.errors();
    ErrorStats {
        latched: e.latched,
        error_bits: e.error_bits,
        total_failures: e.total_failures,
        startup_failures: e.startup_failures,
        clears: e.clears,
        refused_requests: e.refused_requests,
        subscribers: 0,
        notifications_sent: 0,
    }
}
