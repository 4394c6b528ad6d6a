//! Register-level driver of the TRNG block, `no_std`: the same code runs in the TRNG service's
//! `hw` backend (services/trng/src/hw.rs, Xous) and in bare-metal SoC firmware (firmware/).
//! Offsets and fields come from `spec/trng.toml` through `trng_core::spec` (generated); nothing
//! here repeats a number of the map.
//!
//! Both pages have Precursor's layout, so the driver runs on two gateware builds
//! (docs/trng-gateware.md "Register map"):
//! - [`Gateware::Ext`], this project's gateware (gateware/trng): the stock map plus additions at
//!   offsets the stock map leaves free (EXT_ID, EXT_STATUS, EXT_CONTROL, URANDOM_LAST);
//! - [`Gateware::Stock`], the TRNG a Precursor ships with (betrusted-io/gateware
//!   trng_managed.py), detected by EXT_ID not reading the spec's `ext_id` (on a stock page
//!   0x100 aliases CONTROL / STATUS, which cannot hold that value). No other addition is ever
//!   read or written on a stock page: there they alias stock registers, DATA and URANDOM among
//!   them, whose reads have side effects.
//!
//! Rules the driver keeps:
//! - a conditioned word: on `Ext`, only from a URANDOM read whose `URANDOM_LAST.last` says the
//!   word just returned was valid (the port is read-invalidate and wiped on a health failure);
//!   on `Stock`, a URANDOM read after `URANDOM_VALID` says the port holds a word (the stock
//!   port is never wiped, so the valid-then-read order is safe there; the caller gates on
//!   `failing`);
//! - a raw word (server page DATA, the raw FIFO) is taken only when the server underrun counter
//!   did not move across the read (or across the whole burst it was read in) and no health
//!   failure is latched after it (after the burst's last read); the words read are bounded by
//!   the FIFO level, so no read of an empty FIFO is provoked (the stock counter never moves:
//!   docs/reference-system.md);
//! - SP 800-90B cutoffs are written in each gateware's convention: this gateware fails a run or
//!   a window count of `C` (SP 800-90B 4.4), the stock tests count repeats after the first
//!   sample and fail at `cutoff + 1`, so they are programmed with `C - 1`.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

pub use trng_core::spec;
pub use trng_core::Field;

use spec::regs::kernel::registers as kr;
use spec::regs::server::registers as sr;

/// Word-wide register access at byte offsets from a page base.
pub trait Bus {
    fn read(&self, offset: usize) -> u32;
    fn write(&self, offset: usize, value: u32);
}

/// Memory-mapped registers at a base address (a Xous mapping or a bare-metal physical address).
#[derive(Clone, Copy, Debug)]
pub struct Mmio {
    base: *mut u32,
}

// The registers are device memory; the owner of the mapping serialises access.
unsafe impl Send for Mmio {}

impl Mmio {
    /// # Safety
    /// `base` must point to a mapped TRNG register page (4 KiB), valid for volatile 32-bit
    /// reads and writes for as long as the `Mmio` is used.
    pub const unsafe fn new(base: *mut u32) -> Self {
        Mmio { base }
    }
}

impl Bus for Mmio {
    #[inline]
    fn read(&self, offset: usize) -> u32 {
        // SAFETY: `new`'s contract: the page is mapped; offsets come from the spec (< 4 KiB).
        unsafe { self.base.add(offset / 4).read_volatile() }
    }
    #[inline]
    fn write(&self, offset: usize, value: u32) {
        // SAFETY: as in `read`.
        unsafe { self.base.add(offset / 4).write_volatile(value) }
    }
}

/// Physical base addresses and interrupt numbers of the two pages (spec `[regs.*]`).
pub const SERVER_BASE: usize = spec::regs::server::BASE;
pub const KERNEL_BASE: usize = spec::regs::kernel::BASE;
/// What an empty port or FIFO reads (never used as a random word).
pub const POISON: u32 = spec::regs::constants::URANDOM_INVALID as u32;
/// EXT_ID of this project's gateware.
pub const EXT_ID: u32 = spec::regs::constants::EXT_ID as u32;

/// Which gateware serves a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gateware {
    /// Precursor's shipped TRNG: the stock registers only.
    Stock,
    /// This project's gateware: the stock registers and the additions.
    Ext,
}

/// Which gateware serves the page behind `bus`: one read of EXT_ID (0x100 on both pages; on a
/// stock page it aliases the side-effect-free CONTROL / kernel STATUS).
pub fn detect<B: Bus>(bus: &B) -> Gateware {
    // both pages put EXT_ID at the same offset (a spec test checks it)
    if bus.read(sr::EXT_ID) == EXT_ID {
        Gateware::Ext
    } else {
        Gateware::Stock
    }
}

/// What `ServerPage::init` programs: health-test cutoffs (the software's, from
/// `trng_core::health`, SP 800-90B convention) and the conditioner's intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub av_rct_cutoff: u32,
    pub av_apt_cutoff: u32,
    pub ro_rct_cutoff: u32,
    pub ro_apt_cutoff: u32,
    pub reseed_interval: u32,
    pub selfmix_interval: u32,
    pub selfmix_enable: bool,
}

/// Sources to run (CONTROL.av_dis / ro_dis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sources {
    Both,
    AvOnly,
    RoOnly,
}

/// A latched health condition, as the hardware reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// NIST_ERRORS (RCT/APT latches, one bit per source; ro_miniruns: the runs test, a
    /// supplemental statistic that gates nothing).
    pub nist_errors: u32,
    /// EXT_STATUS.av_excursion (one latched bit per AV channel); `Ext` only, 0 on `Stock`,
    /// whose excursion failures are not latched in any register (`excursion_latched`).
    pub excursion: u32,
    /// Whether `excursion` is a latched reading (false on a stock page).
    pub excursion_latched: bool,
    /// READY (per test and source: passed at least one window since enabled or cleared).
    pub ready: u32,
}

/// NIST_ERRORS bits of the SP 800-90B tests (RCT and APT of every source); `ro_miniruns` is not
/// among them.
pub const SP800_90B_ERRORS: u32 = sr::nist_errors::AV_REPCOUNT.mask()
    | sr::nist_errors::AV_ADAPTIVE.mask()
    | sr::nist_errors::RO_REPCOUNT.mask()
    | sr::nist_errors::RO_ADAPTIVE.mask();

impl Health {
    pub fn failing(&self) -> bool {
        self.nist_errors & SP800_90B_ERRORS != 0 || self.excursion != 0
    }
}

/// One source's statistics (NIST_*_STATn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceStat {
    pub adap_b: u32,
    pub fresh: bool,
    /// Longest run of equal samples seen since the last clear (saturating at the field).
    pub rep_b: u32,
}

/// Which source a statistic is read for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Av(usize),
    Ro(usize),
}

/// Why a page did not come up (`ServerPage::bring_up`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BringUpError {
    /// The enabled sources' READY bits or STATUS.chacha_ready never rose before `wait` gave up.
    NeverReady { ready: u32, status: u32, nist_errors: u32 },
    /// A failure was latched again after every clear the caller allowed.
    Failing { nist_errors: u32, excursion: u32, clears: u32 },
}

/// A cutoff in a gateware's convention (see the crate docs), clamped into its field.
pub fn cutoff(gw: Gateware, c: u32, f: Field) -> u32 {
    let c = match gw {
        Gateware::Ext => c,
        Gateware::Stock => c.saturating_sub(1),
    };
    c.min(f.max())
}

/// The server page (the TRNG service's): configuration, health, statistics, both data paths.
pub struct ServerPage<B: Bus> {
    bus: B,
    gw: Gateware,
}

impl<B: Bus> ServerPage<B> {
    /// The page behind `bus`, its gateware detected (`detect`).
    pub fn new(bus: B) -> Self {
        let gw = detect(&bus);
        ServerPage { bus, gw }
    }
    /// The page behind `bus` on a known gateware (no bus access).
    pub const fn with_gateware(bus: B, gw: Gateware) -> Self {
        ServerPage { bus, gw }
    }
    pub fn bus(&self) -> &B {
        &self.bus
    }
    pub fn gateware(&self) -> Gateware {
        self.gw
    }

    /// Program cutoffs (and, on `Ext`, the conditioner's intervals: the stock CHACHA fields mean
    /// other units, so a stock page keeps its own), then enable the block with `sources` (the
    /// start-up tests begin; no output until they pass).
    pub fn init(&self, cfg: &Config, sources: Sources) {
        let b = &self.bus;
        let gw = self.gw;
        use sr::{av_nist as a, ro_nist as r};
        b.write(
            sr::AV_NIST,
            a::REPCOUNT_CUTOFF.val(cutoff(gw, cfg.av_rct_cutoff, a::REPCOUNT_CUTOFF))
                | a::ADAPTIVE_CUTOFF.val(cutoff(gw, cfg.av_apt_cutoff, a::ADAPTIVE_CUTOFF)),
        );
        b.write(
            sr::RO_NIST,
            r::REPCOUNT_CUTOFF.val(cutoff(gw, cfg.ro_rct_cutoff, r::REPCOUNT_CUTOFF))
                | r::ADAPTIVE_CUTOFF.val(cutoff(gw, cfg.ro_apt_cutoff, r::ADAPTIVE_CUTOFF)),
        );
        if gw == Gateware::Ext {
            b.write(
                sr::CHACHA,
                sr::chacha::RESEED_INTERVAL.val(cfg.reseed_interval)
                    | sr::chacha::SELFMIX_INTERVAL.val(cfg.selfmix_interval)
                    | sr::chacha::SELFMIX_ENA.val(cfg.selfmix_enable as u32),
            );
        }
        self.set_sources(sources);
    }

    /// CONTROL with `enable` and the source selection (a change restarts nothing by itself;
    /// words assembled from the previous selection are still in the raw FIFOs).
    pub fn set_sources(&self, sources: Sources) {
        let (av_dis, ro_dis) = match sources {
            Sources::Both => (0, 0),
            Sources::AvOnly => (0, 1),
            Sources::RoOnly => (1, 0),
        };
        let ctl = self.bus.read(sr::CONTROL);
        let ctl = sr::control::ENABLE.set(ctl, 1);
        let ctl = sr::control::AV_DIS.set(ctl, av_dis);
        let ctl = sr::control::RO_DIS.set(ctl, ro_dis);
        self.bus.write(sr::CONTROL, sr::control::CLR_ERR.set(ctl, 0));
    }

    /// Select the sources for raw-source testing without ever holding the conditioner.
    ///
    /// The gateware holds (and wipes) the conditioner while CONTROL.av_dis and
    /// AV_CONFIG.required are both set: no conditioned word from the ring oscillator alone.
    /// With `set_sources(RoOnly)` alone the kernel's `urandom` port therefore runs dry, and the
    /// device kernel, which polls that port for every random number it hands out (server IDs),
    /// spins with every process stopped and panics after its poll limit (seen on the simulated
    /// Precursor: a raw RO tester frame ended in that panic at 120.8 M cycles). Here, for
    /// `RoOnly`, AV_CONFIG.required is cleared *before* the AV channels are disabled, and for
    /// `Both` / `AvOnly` it is set again *after* they are enabled, so `hold` never rises: the
    /// conditioner keeps the state it was seeded with (from both families) and folds in RO
    /// words only while RO-only. The caller makes sure the conditioner was seeded before it
    /// selects `RoOnly` (a valid conditioned word), and selects `Both` again before it clears
    /// errors (a cleared conditioner reseeds from scratch: never from RO words alone).
    pub fn select_sources(&self, sources: Sources) {
        let b = &self.bus;
        let required = |on: bool| {
            let v = b.read(sr::AV_CONFIG);
            b.write(sr::AV_CONFIG, sr::av_config::REQUIRED.set(v, on as u32));
        };
        if sources == Sources::RoOnly {
            required(false);
            self.set_sources(sources);
        } else {
            self.set_sources(sources);
            required(true);
        }
    }

    /// One conditioned word from the server port, or None if no valid word was read.
    pub fn urandom(&self) -> Option<u32> {
        match self.gw {
            Gateware::Ext => urandom_ext(&self.bus, sr::URANDOM, sr::URANDOM_LAST, sr::urandom_last::LAST),
            Gateware::Stock => {
                urandom_stock(&self.bus, sr::URANDOM, sr::URANDOM_VALID, sr::urandom_valid::URANDOM_VALID)
            }
        }
    }

    /// Poll the server port up to `polls` times.
    pub fn urandom_poll(&self, polls: u32) -> Option<u32> {
        (0..polls).find_map(|_| self.urandom())
    }

    /// Does the server port hold a word now (a hint; `urandom` decides)?
    pub fn urandom_ready(&self) -> bool {
        sr::urandom_valid::URANDOM_VALID.get(self.bus.read(sr::URANDOM_VALID)) != 0
    }

    /// Words in the server raw FIFO (STATUS counts: written - read, modulo the depth; `avail`
    /// tells a full FIFO from an empty one).
    pub fn raw_level(&self) -> u32 {
        let st = self.bus.read(sr::STATUS);
        if sr::status::AVAIL.get(st) == 0 {
            return 0;
        }
        let n = sr::status::WRCOUNT.get(st).wrapping_sub(sr::status::RDCOUNT.get(st)) & sr::status::WRCOUNT.max();
        if n == 0 {
            spec::regs::constants::FIFO_DEPTH as u32
        } else {
            n
        }
    }

    /// The server underrun count before a read, or None when it is saturated (it could not show
    /// the read's underrun): on `Ext` it is restarted (EXT_CONTROL.clr_underruns) and the read is
    /// skipped; a stock counter never counts (docs/reference-system.md), so it never saturates.
    fn underruns_before(&self) -> Option<u32> {
        let u0 = sr::underruns::SERVER_UNDERRUN.get(self.bus.read(sr::UNDERRUNS));
        if u0 == sr::underruns::SERVER_UNDERRUN.max() && self.gw == Gateware::Ext {
            self.bus.write(sr::EXT_CONTROL, sr::ext_control::CLR_UNDERRUNS.val(1));
            return None;
        }
        Some(u0)
    }

    /// One raw (health-tested, unconditioned) word from the server raw FIFO, or None when the
    /// FIFO was empty or a failure flushed it around the read.
    pub fn raw(&self) -> Option<u32> {
        let b = &self.bus;
        if sr::status::AVAIL.get(b.read(sr::STATUS)) == 0 {
            return None;
        }
        let u0 = self.underruns_before()?;
        let w = b.read(sr::DATA);
        let u1 = sr::underruns::SERVER_UNDERRUN.get(b.read(sr::UNDERRUNS));
        if u1 != u0 || self.failing() {
            return None;
        }
        Some(w)
    }

    pub fn raw_poll(&self, polls: u32) -> Option<u32> {
        (0..polls).find_map(|_| self.raw())
    }

    /// Up to `out.len()` raw words in one burst: at most the FIFO's level (read once), kept only
    /// if the server underrun counter did not move across the whole burst and no failure is
    /// latched after its last read. That is `raw`'s rule applied to the burst (a failure or a
    /// flush anywhere in it refuses all of it), with about one register read per word instead
    /// of six. Returns how many words of `out` are valid: 0 when the FIFO was empty, the
    /// saturated counter was restarted, or the burst was refused (then `out` is zeroed;
    /// `failing` tells a failure from an empty FIFO).
    pub fn raw_burst(&self, out: &mut [u32]) -> usize {
        let b = &self.bus;
        let n = (self.raw_level() as usize).min(out.len());
        if n == 0 {
            return 0;
        }
        let Some(u0) = self.underruns_before() else { return 0 };
        for w in out[..n].iter_mut() {
            *w = b.read(sr::DATA);
        }
        let u1 = sr::underruns::SERVER_UNDERRUN.get(b.read(sr::UNDERRUNS));
        if u1 != u0 || self.failing() {
            out.fill(0);
            return 0;
        }
        n
    }

    /// Discard the words the server raw FIFO holds now (after a source change: words assembled
    /// under the previous selection) and return how many were popped. Bounded: the level is read
    /// once and at most that many words are popped, each only while STATUS.avail says the FIFO
    /// is not empty (no underrun is provoked). Words written after the level was read stay: the
    /// FIFO is in order, so once the level is read after the CONTROL write, every older word is
    /// among those popped. Draining "until empty" instead never ends when the sources refill the
    /// FIFO faster than the CPU reads it (the simulated noise source, one sample per cycle,
    /// assembles an AV word every 32 cycles), and a reader then never gets its first word.
    pub fn discard_raw(&self) -> u32 {
        let n = self.raw_level();
        let mut popped = 0;
        while popped < n && sr::status::AVAIL.get(self.bus.read(sr::STATUS)) != 0 {
            let _ = self.bus.read(sr::DATA);
            popped += 1;
        }
        popped
    }

    /// A latched health failure now: `Health::failing` from its registers only (NIST_ERRORS's
    /// SP 800-90B bits, then, on `Ext`, EXT_STATUS.av_excursion unless NIST_ERRORS already
    /// fails), without READY: the check `raw` makes after every DATA read and the `hw` backend
    /// before every word.
    pub fn failing(&self) -> bool {
        self.bus.read(sr::NIST_ERRORS) & SP800_90B_ERRORS != 0
            || (self.gw == Gateware::Ext && sr::ext_status::AV_EXCURSION.get(self.bus.read(sr::EXT_STATUS)) != 0)
    }

    pub fn health(&self) -> Health {
        let b = &self.bus;
        let ext = self.gw == Gateware::Ext;
        Health {
            nist_errors: b.read(sr::NIST_ERRORS),
            excursion: if ext { sr::ext_status::AV_EXCURSION.get(b.read(sr::EXT_STATUS)) } else { 0 },
            excursion_latched: ext,
            ready: b.read(sr::READY),
        }
    }

    /// The enabled sources have passed their tests at least once (READY: both AV channels'
    /// excursion and APT bits when the AV channels run, every RO core's APT bit when the ring
    /// oscillator runs) and the conditioner is seeded (STATUS.chacha_ready).
    pub fn ready(&self) -> bool {
        let b = &self.bus;
        let ctl = b.read(sr::CONTROL);
        let r = b.read(sr::READY);
        let full = |f: Field| f.get(r) == f.max();
        let av_ok = sr::control::AV_DIS.get(ctl) != 0 || (full(sr::ready::AV_EXCURSION) && full(sr::ready::AV_ADAPROP));
        let ro_ok = sr::control::RO_DIS.get(ctl) != 0 || full(sr::ready::RO_ADAPROP);
        sr::control::ENABLE.get(ctl) != 0 && av_ok && ro_ok && sr::status::CHACHA_READY.get(b.read(sr::STATUS)) != 0
    }

    /// Wait, boundedly, until the page is `ready` with no failure latched. `wait` is called
    /// between checks (the caller sleeps or yields there, and counts) and returns false when
    /// the caller's budget is spent: then the page never came up. A latched failure is cleared
    /// (CONTROL.clr_err) at most `clears` times; latched again after that, the page is failing.
    /// Nothing here loops without calling `wait`.
    pub fn bring_up(&self, clears: u32, mut wait: impl FnMut() -> bool) -> Result<(), BringUpError> {
        let mut cleared = 0;
        loop {
            let h = self.health();
            if h.failing() {
                if cleared >= clears {
                    return Err(BringUpError::Failing {
                        nist_errors: h.nist_errors,
                        excursion: h.excursion,
                        clears: cleared,
                    });
                }
                self.clear_errors();
                cleared += 1;
            } else if self.ready() {
                return Ok(());
            }
            if !wait() {
                let b = &self.bus;
                let (ready, status, nist_errors) = (b.read(sr::READY), b.read(sr::STATUS), b.read(sr::NIST_ERRORS));
                if h.failing() || nist_errors & SP800_90B_ERRORS != 0 {
                    return Err(BringUpError::Failing { nist_errors, excursion: h.excursion, clears: cleared });
                }
                return Err(BringUpError::NeverReady { ready, status, nist_errors });
            }
        }
    }

    /// Clear every latched failure (CONTROL.clr_err pulse); the start-up tests run again.
    pub fn clear_errors(&self) {
        let ctl = self.bus.read(sr::CONTROL);
        self.bus.write(sr::CONTROL, sr::control::CLR_ERR.set(ctl, 1));
    }

    /// Fold a user seed word into the conditioner (SEED).
    pub fn seed(&self, w: u32) {
        self.bus.write(sr::SEED, w);
    }

    /// Source `s`'s statistics, from that source's own register (reading clears `fresh`).
    pub fn stat(&self, s: Source) -> Option<SourceStat> {
        let off = match s {
            Source::Av(0) => sr::NIST_AV_STAT0,
            Source::Av(1) => sr::NIST_AV_STAT1,
            Source::Ro(0) => sr::NIST_RO_STAT0,
            Source::Ro(1) => sr::NIST_RO_STAT1,
            Source::Ro(2) => sr::NIST_RO_STAT2,
            Source::Ro(3) => sr::NIST_RO_STAT3,
            _ => return None,
        };
        // every NIST_*_STATn register has the same layout
        use sr::nist_ro_stat0 as f;
        let v = self.bus.read(off);
        Some(SourceStat { adap_b: f::ADAP_B.get(v), fresh: f::FRESH.get(v) != 0, rep_b: f::REP_B.get(v) })
    }

    /// Server and kernel underrun counts (reads of an empty raw FIFO).
    pub fn underruns(&self) -> (u32, u32) {
        let u = self.bus.read(sr::UNDERRUNS);
        (sr::underruns::SERVER_UNDERRUN.get(u), sr::underruns::KERNEL_UNDERRUN.get(u))
    }
}

/// `Ext`: read the word, then URANDOM_LAST vouches for it (read-invalidate port).
fn urandom_ext<B: Bus>(bus: &B, urandom: usize, last_reg: usize, last: Field) -> Option<u32> {
    let w = bus.read(urandom);
    if last.get(bus.read(last_reg)) != 0 {
        Some(w)
    } else {
        None
    }
}

/// `Stock`: URANDOM_VALID first, then the word (the read advances the port).
fn urandom_stock<B: Bus>(bus: &B, urandom: usize, valid_reg: usize, valid: Field) -> Option<u32> {
    if valid.get(bus.read(valid_reg)) != 0 {
        Some(bus.read(urandom))
    } else {
        None
    }
}

/// The kernel page: the kernel's conditioned port (it never reads the raw FIFO).
pub struct KernelPage<B: Bus> {
    bus: B,
    gw: Gateware,
}

impl<B: Bus> KernelPage<B> {
    /// The page behind `bus`, its gateware detected (`detect`).
    pub fn new(bus: B) -> Self {
        let gw = detect(&bus);
        KernelPage { bus, gw }
    }
    pub const fn with_gateware(bus: B, gw: Gateware) -> Self {
        KernelPage { bus, gw }
    }
    pub fn bus(&self) -> &B {
        &self.bus
    }
    pub fn gateware(&self) -> Gateware {
        self.gw
    }
    /// One conditioned word from the kernel port, or None if no valid word was read.
    pub fn urandom(&self) -> Option<u32> {
        match self.gw {
            Gateware::Ext => urandom_ext(&self.bus, kr::URANDOM, kr::URANDOM_LAST, kr::urandom_last::LAST),
            Gateware::Stock => {
                urandom_stock(&self.bus, kr::URANDOM, kr::URANDOM_VALID, kr::urandom_valid::URANDOM_VALID)
            }
        }
    }
    pub fn urandom_poll(&self, polls: u32) -> Option<u32> {
        (0..polls).find_map(|_| self.urandom())
    }
    pub fn urandom_ready(&self) -> bool {
        kr::urandom_valid::URANDOM_VALID.get(self.bus.read(kr::URANDOM_VALID)) != 0
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use core::cell::RefCell;
    use std::vec::Vec;

    /// A scripted page: URANDOM is read-invalidate with `last`, DATA pops a FIFO and counts
    /// underruns, every access is logged. `stock`: Precursor's shipped block instead (EXT_ID
    /// aliases CONTROL, no URANDOM_LAST: the valid bit is read before the word; an empty-FIFO
    /// DATA read never counts an underrun).
    #[derive(Default)]
    struct Fake {
        stock: bool,
        /// READY and STATUS.chacha_ready as the page reports them
        ready: RefCell<u32>,
        chacha_ready: RefCell<bool>,
        /// a latched failure that CONTROL.clr_err clears (`sticky`: that comes back at once)
        sticky: RefCell<bool>,
        port: RefCell<Option<u32>>,
        last: RefCell<bool>,
        fifo: RefCell<Vec<u32>>,
        /// words popped from `fifo` (STATUS.rdcount, modulo the depth)
        popped: RefCell<u32>,
        /// a source faster than the reader: every STATUS read first appends this many words
        /// (numbered from `next_new`)
        refill: RefCell<u32>,
        next_new: RefCell<u32>,
        under: RefCell<u32>,
        nist: RefCell<u32>,
        /// EXT_STATUS.av_excursion
        exc: RefCell<u32>,
        /// every other register: what was last written (0 before)
        mem: RefCell<std::collections::BTreeMap<usize, u32>>,
        flush_on_data: RefCell<bool>,
        log: RefCell<Vec<(char, usize, u32)>>,
    }

    impl Bus for &Fake {
        fn read(&self, off: usize) -> u32 {
            let v = match off {
                o if o == sr::EXT_ID => {
                    if self.stock {
                        // aliases CONTROL on a stock page
                        self.mem.borrow().get(&sr::CONTROL).copied().unwrap_or(0)
                    } else {
                        EXT_ID
                    }
                }
                o if o == sr::URANDOM => {
                    let w = self.port.borrow_mut().take();
                    *self.last.borrow_mut() = w.is_some();
                    w.unwrap_or(POISON)
                }
                o if o == sr::URANDOM_VALID => {
                    sr::urandom_valid::URANDOM_VALID.val(self.port.borrow().is_some() as u32)
                }
                o if o == sr::URANDOM_LAST => {
                    assert!(!self.stock, "URANDOM_LAST read on a stock page (it aliases another register there)");
                    sr::urandom_last::LAST.val(*self.last.borrow() as u32)
                }
                o if o == sr::EXT_STATUS => {
                    assert!(!self.stock, "EXT_STATUS read on a stock page");
                    sr::ext_status::AV_EXCURSION.val(*self.exc.borrow())
                }
                o if o == sr::READY => *self.ready.borrow(),
                o if o == sr::STATUS => {
                    for _ in 0..*self.refill.borrow() {
                        let w = *self.next_new.borrow();
                        *self.next_new.borrow_mut() += 1;
                        self.fifo.borrow_mut().push(w);
                    }
                    let (n, rd) = (self.fifo.borrow().len() as u32, *self.popped.borrow());
                    let m = sr::status::WRCOUNT.max();
                    sr::status::AVAIL.val((n != 0) as u32)
                        | sr::status::RDCOUNT.val(rd & m)
                        | sr::status::WRCOUNT.val((rd + n) & m)
                        | sr::status::CHACHA_READY.val(*self.chacha_ready.borrow() as u32)
                }
                o if o == sr::DATA => {
                    if *self.flush_on_data.borrow() {
                        self.fifo.borrow_mut().clear();
                        *self.nist.borrow_mut() = 1;
                    }
                    if self.fifo.borrow().is_empty() {
                        if !self.stock {
                            *self.under.borrow_mut() += 1;
                        }
                        POISON
                    } else {
                        *self.popped.borrow_mut() += 1;
                        self.fifo.borrow_mut().remove(0)
                    }
                }
                o if o == sr::UNDERRUNS => sr::underruns::SERVER_UNDERRUN.val(*self.under.borrow()),
                o if o == sr::NIST_ERRORS => *self.nist.borrow(),
                o => self.mem.borrow().get(&o).copied().unwrap_or(0),
            };
            self.log.borrow_mut().push(('r', off, v));
            v
        }
        fn write(&self, off: usize, v: u32) {
            if self.stock {
                assert!(off < sr::EXT_ID, "a write to {off:#x}, an addition, on a stock page");
            }
            if off == sr::CONTROL && sr::control::CLR_ERR.get(v) != 0 {
                *self.nist.borrow_mut() = if *self.sticky.borrow() { 1 } else { 0 };
                *self.exc.borrow_mut() = 0;
            }
            if off == sr::EXT_CONTROL && sr::ext_control::CLR_UNDERRUNS.get(v) != 0 {
                *self.under.borrow_mut() = 0;
            }
            self.mem.borrow_mut().insert(off, v);
            self.log.borrow_mut().push(('w', off, v));
        }
    }

    #[test]
    fn urandom_takes_only_a_word_read_valid() {
        let f = Fake::default();
        let p = ServerPage::new(&f);
        assert_eq!(p.urandom(), None, "an empty port's poison word is not a random word");
        *f.port.borrow_mut() = Some(0x1234_5678);
        assert_eq!(p.urandom(), Some(0x1234_5678));
        assert_eq!(p.urandom(), None, "the same word is never taken twice");
        // the word is read before the valid bit that vouches for it
        let log = f.log.borrow();
        let i = log.iter().rposition(|e| e.1 == sr::URANDOM).unwrap();
        assert!(log[i + 1..].iter().any(|e| e.1 == sr::URANDOM_LAST), "URANDOM_LAST after the word");
    }

    #[test]
    fn poison_word_slipping_through_a_failure_is_refused() {
        // valid was 1 when polled, then the port was flushed before the read
        let f = Fake::default();
        *f.port.borrow_mut() = Some(7);
        let p = ServerPage::new(&f);
        assert!(p.urandom_ready());
        *f.port.borrow_mut() = None; // flushed by a health failure
        assert_eq!(p.urandom(), None);
    }

    #[test]
    fn raw_words_only_from_a_non_empty_fifo_without_failure() {
        let f = Fake::default();
        let p = ServerPage::new(&f);
        assert_eq!(p.raw(), None);
        f.fifo.borrow_mut().extend([1, 2]);
        assert_eq!(p.raw(), Some(1));
        *f.flush_on_data.borrow_mut() = true;
        assert_eq!(p.raw(), None, "a word read while a failure flushed the FIFO is refused");
    }

    #[test]
    fn discard_raw_pops_the_words_present_and_ends_under_a_fast_source() {
        // 700 words from the previous source selection; then the source refills faster than
        // the reader (3 words per STATUS read, as the simulated noise source outpaces the CPU):
        // "read until empty" would never end, discard_raw pops exactly the 700
        let f = Fake::default();
        f.fifo.borrow_mut().extend(0..700);
        *f.next_new.borrow_mut() = 10_000;
        let p = ServerPage::new(&f);
        assert_eq!(p.raw_level(), 700);
        *f.refill.borrow_mut() = 3;
        let n = p.discard_raw();
        // the level read itself saw the first 3 new words: those are discarded too, never older ones kept
        assert_eq!(n, 703);
        assert_eq!(*f.under.borrow(), 0, "no DATA read of an empty FIFO");
        let w = p.raw().unwrap();
        assert!(w >= 10_000, "the first word after the discard is a new one, got {w}");
        assert!(f.fifo.borrow().iter().all(|&w| w >= 10_000), "no word of the previous selection is left");

        // an empty FIFO: nothing read from DATA
        let f = Fake::default();
        let p = ServerPage::new(&f);
        assert_eq!(p.discard_raw(), 0);
        assert!(f.log.borrow().iter().all(|e| e.1 != sr::DATA));

        // a failure flushes the FIFO while it is being discarded: the loop stops at avail = 0
        let f = Fake::default();
        f.fifo.borrow_mut().extend(0..10);
        *f.flush_on_data.borrow_mut() = true;
        let p = ServerPage::new(&f);
        assert_eq!(p.discard_raw(), 1);
        assert!(f.fifo.borrow().is_empty());
    }

    #[test]
    fn raw_burst_reads_the_level_and_refuses_a_burst_with_a_failure_or_underrun() {
        let f = Fake::default();
        let p = ServerPage::new(&f);
        let mut out = [0u32; 8];
        assert_eq!(p.raw_burst(&mut out), 0, "empty FIFO");
        assert!(f.log.borrow().iter().all(|e| e.1 != sr::DATA), "no DATA read of an empty FIFO");
        f.fifo.borrow_mut().extend(1..=5);
        assert_eq!(p.raw_burst(&mut out), 5, "at most the level");
        assert_eq!(out[..5], [1, 2, 3, 4, 5]);
        f.fifo.borrow_mut().extend(10..=30);
        assert_eq!(p.raw_burst(&mut out), 8, "at most out.len()");
        assert_eq!(out, [10, 11, 12, 13, 14, 15, 16, 17]);
        assert_eq!(*f.under.borrow(), 0);
        // a failure latched during the burst (the FIFO flushed): every word of it is refused
        *f.flush_on_data.borrow_mut() = true;
        assert_eq!(p.raw_burst(&mut out), 0);
        assert_eq!(out, [0; 8], "a refused burst leaves nothing behind");
        assert!(p.failing());
        // a latched excursion after the reads refuses the burst too
        let f = Fake::default();
        let p = ServerPage::new(&f);
        f.fifo.borrow_mut().extend(1..=3);
        *f.exc.borrow_mut() = 1;
        assert_eq!(p.raw_burst(&mut out), 0);
        // a saturated underrun counter is restarted, nothing is read this time
        let f = Fake::default();
        let p = ServerPage::new(&f);
        f.fifo.borrow_mut().extend(1..=3);
        *f.under.borrow_mut() = sr::underruns::SERVER_UNDERRUN.max();
        assert_eq!(p.raw_burst(&mut out), 0);
        assert!(
            f.log.borrow().iter().any(|e| e.0 == 'w' && e.1 == sr::EXT_CONTROL),
            "restarted through EXT_CONTROL.clr_underruns"
        );
        assert_eq!(*f.under.borrow(), 0);
        assert_eq!(p.raw_burst(&mut out), 3, "read after the restart");
    }

    #[test]
    fn failing_agrees_with_health_and_gates_raw_words() {
        let f = Fake::default();
        let p = ServerPage::new(&f);
        f.fifo.borrow_mut().extend([1, 2, 3]);
        assert!(!p.failing() && !p.health().failing());
        assert_eq!(p.raw(), Some(1));
        for (nist, exc) in [(1u32 << 4, 0u32), (0, 2), (1, 1)] {
            *f.nist.borrow_mut() = nist;
            *f.exc.borrow_mut() = exc;
            assert!(p.failing() && p.health().failing(), "nist {nist:#x} excursion {exc:#x}");
            assert_eq!(p.raw(), None, "no raw word while a failure is latched (nist {nist:#x} excursion {exc:#x})");
        }
        *f.nist.borrow_mut() = 0;
        *f.exc.borrow_mut() = 0;
        assert!(!p.failing());
    }

    #[test]
    fn select_sources_never_holds_the_conditioner() {
        // the gateware's hold = av_dis & required: it must never be 1 between two writes
        let f = Fake::default();
        let p = ServerPage::new(&f);
        // the reset state: sources off, AV_CONFIG.required set, 32 pairs per word
        let mut regs = (0u32, sr::av_config::REQUIRED.val(1) | sr::av_config::SAMPLES.val(32)); // CONTROL, AV_CONFIG
        f.mem.borrow_mut().insert(sr::AV_CONFIG, regs.1);
        for sel in [Sources::Both, Sources::RoOnly, Sources::AvOnly, Sources::RoOnly, Sources::RoOnly, Sources::Both] {
            f.log.borrow_mut().clear();
            p.select_sources(sel);
            for &(op, off, v) in f.log.borrow().iter().filter(|e| e.0 == 'w') {
                assert_eq!(op, 'w');
                if off == sr::CONTROL {
                    regs.0 = v;
                } else if off == sr::AV_CONFIG {
                    regs.1 = v;
                }
                let held = sr::control::AV_DIS.get(regs.0) == 1 && sr::av_config::REQUIRED.get(regs.1) == 1;
                assert!(!held, "{sel:?}: the conditioner would be held after writing {off:#x} = {v:#x}");
            }
            let (av_dis, ro_dis) = (sr::control::AV_DIS.get(regs.0), sr::control::RO_DIS.get(regs.0));
            let want = match sel {
                Sources::Both => (0, 0),
                Sources::AvOnly => (0, 1),
                Sources::RoOnly => (1, 0),
            };
            assert_eq!((av_dis, ro_dis), want, "{sel:?}");
            assert_eq!(sr::control::ENABLE.get(regs.0), 1);
            // the default (required) is back whenever the AV channels run
            assert_eq!(sr::av_config::REQUIRED.get(regs.1), (sel != Sources::RoOnly) as u32, "{sel:?}");
            assert_eq!(sr::av_config::SAMPLES.get(regs.1), 32, "the other AV_CONFIG fields are kept");
        }
    }

    #[test]
    fn init_writes_the_spec_fields() {
        let f = Fake::default();
        let p = ServerPage::new(&f);
        let cfg = Config {
            av_rct_cutoff: 21,
            av_apt_cutoff: 410,
            ro_rct_cutoff: 81,
            ro_apt_cutoff: 840,
            reseed_interval: 2,
            selfmix_interval: 64,
            selfmix_enable: true,
        };
        p.init(&cfg, Sources::Both);
        assert_eq!(p.gateware(), Gateware::Ext);
        let log = f.log.borrow();
        let w = |off| log.iter().rev().find(|e| e.0 == 'w' && e.1 == off).map(|e| e.2).unwrap();
        assert_eq!(sr::av_nist::REPCOUNT_CUTOFF.get(w(sr::AV_NIST)), 21);
        assert_eq!(sr::av_nist::ADAPTIVE_CUTOFF.get(w(sr::AV_NIST)), 410);
        assert_eq!(sr::ro_nist::ADAPTIVE_CUTOFF.get(w(sr::RO_NIST)), 840);
        assert_eq!(sr::chacha::SELFMIX_INTERVAL.get(w(sr::CHACHA)), 64);
        assert_eq!(sr::control::ENABLE.get(w(sr::CONTROL)), 1);
    }

    fn stock() -> Fake {
        Fake { stock: true, ..Fake::default() }
    }

    #[test]
    fn init_on_a_stock_page_uses_its_cutoff_convention_and_keeps_its_chacha() {
        // the stock tests fail at cutoff + 1 (they count repeats after the first sample): the
        // SP 800-90B cutoff C is written as C - 1; CHACHA's stock fields mean other units
        let f = stock();
        let p = ServerPage::new(&f);
        assert_eq!(p.gateware(), Gateware::Stock);
        let cfg = Config {
            av_rct_cutoff: 21,
            av_apt_cutoff: 410,
            ro_rct_cutoff: 81,
            ro_apt_cutoff: 840,
            reseed_interval: 2,
            selfmix_interval: 64,
            selfmix_enable: true,
        };
        p.init(&cfg, Sources::Both);
        let log = f.log.borrow();
        let w = |off| log.iter().rev().find(|e| e.0 == 'w' && e.1 == off).map(|e| e.2);
        assert_eq!(sr::av_nist::REPCOUNT_CUTOFF.get(w(sr::AV_NIST).unwrap()), 20);
        assert_eq!(sr::av_nist::ADAPTIVE_CUTOFF.get(w(sr::AV_NIST).unwrap()), 409);
        assert_eq!(sr::ro_nist::REPCOUNT_CUTOFF.get(w(sr::RO_NIST).unwrap()), 80);
        assert_eq!(sr::ro_nist::ADAPTIVE_CUTOFF.get(w(sr::RO_NIST).unwrap()), 839);
        assert_eq!(w(sr::CHACHA), None, "a stock page keeps its own CHACHA");
        // only EXT_ID was read among the additions (the Fake panics on any other)
        assert_eq!(log.iter().filter(|e| e.1 >= sr::EXT_ID).count(), 1);
    }

    #[test]
    fn detect_tells_the_two_gatewares_apart_by_one_read() {
        let f = Fake::default();
        assert_eq!(detect(&&f), Gateware::Ext);
        let f = stock();
        // whatever CONTROL holds (5 bits), the alias never reads the magic
        for ctl in [0u32, 0x09, 0x1F] {
            f.mem.borrow_mut().insert(sr::CONTROL, ctl);
            assert_eq!(detect(&&f), Gateware::Stock);
        }
        assert_eq!(f.log.borrow().len(), 3);
        // the spec puts EXT_ID at the same offset on both pages, past both stock maps
        assert_eq!(sr::EXT_ID, kr::EXT_ID);
        assert!(sr::EXT_ID > sr::TEST && kr::EXT_ID > kr::EV_ENABLE);
        assert_eq!(EXT_ID >> 30 & 1, 1, "bit 30: no aliased stock register can read the magic");
    }

    #[test]
    fn stock_urandom_reads_the_valid_bit_first_and_never_an_empty_port() {
        let f = stock();
        let p = ServerPage::new(&f);
        assert_eq!(p.urandom(), None, "no word while URANDOM_VALID is 0");
        assert!(
            f.log.borrow().iter().all(|e| e.1 != sr::URANDOM),
            "an empty stock port is not read (a read advances it)"
        );
        *f.port.borrow_mut() = Some(0x0BAD_F00D);
        assert_eq!(p.urandom(), Some(0x0BAD_F00D));
        let log = f.log.borrow();
        let i = log.iter().rposition(|e| e.1 == sr::URANDOM).unwrap();
        assert_eq!(log[i - 1].1, sr::URANDOM_VALID, "valid before the word");
        drop(log);
        // the kernel page likewise
        let k = KernelPage::with_gateware(&f, Gateware::Stock);
        assert_eq!(k.gateware(), Gateware::Stock);
    }

    #[test]
    fn stock_raw_words_are_bounded_by_the_level_and_gated_on_90b_errors_only() {
        let f = stock();
        let p = ServerPage::new(&f);
        let mut out = [0u32; 8];
        f.fifo.borrow_mut().extend(1..=5);
        assert_eq!(p.raw_burst(&mut out), 5);
        assert_eq!(out[..5], [1, 2, 3, 4, 5]);
        assert_eq!(p.raw_burst(&mut out), 0, "empty: nothing read");
        assert_eq!(
            f.log.borrow().iter().filter(|e| e.1 == sr::DATA).count(),
            5,
            "no read of an empty stock FIFO (its underrun counter never moves)"
        );
        // a runs-test failure (ro_miniruns) is reported, not a failure; an RCT bit is
        f.fifo.borrow_mut().extend(1..=3);
        *f.nist.borrow_mut() = sr::nist_errors::RO_MINIRUNS.val(1);
        assert!(!p.failing());
        assert_eq!(p.raw_burst(&mut out), 3);
        f.fifo.borrow_mut().extend(1..=3);
        *f.nist.borrow_mut() = sr::nist_errors::RO_REPCOUNT.val(2);
        assert!(p.failing());
        assert_eq!(p.raw_burst(&mut out), 0);
        let h = p.health();
        assert!(h.failing() && !h.excursion_latched && h.excursion == 0);
    }

    /// A `wait` that allows `n` calls, counting them.
    fn budget(n: u32, used: &RefCell<u32>) -> impl FnMut() -> bool + '_ {
        move || {
            *used.borrow_mut() += 1;
            *used.borrow() <= n
        }
    }

    fn all_ready(f: &Fake) {
        use sr::ready as r;
        *f.ready.borrow_mut() = r::AV_EXCURSION.val(r::AV_EXCURSION.max())
            | r::AV_ADAPROP.val(r::AV_ADAPROP.max())
            | r::RO_ADAPROP.val(r::RO_ADAPROP.max());
        *f.chacha_ready.borrow_mut() = true;
    }

    #[test]
    fn bring_up_waits_for_ready_on_both_gatewares() {
        for f in [Fake::default(), stock()] {
            let p = ServerPage::new(&f);
            p.set_sources(Sources::Both);
            all_ready(&f);
            let used = RefCell::new(0);
            assert_eq!(p.bring_up(2, budget(10, &used)), Ok(()));
            assert_eq!(*used.borrow(), 0, "{:?}: ready at once, no wait", p.gateware());
            // RO only: the AV bits are not needed
            p.set_sources(Sources::RoOnly);
            *f.ready.borrow_mut() = sr::ready::RO_ADAPROP.val(0xF);
            assert_eq!(p.bring_up(2, budget(10, &used)), Ok(()));
        }
    }

    #[test]
    fn bring_up_of_a_page_whose_ready_never_rises_gives_up_within_the_budget() {
        for f in [Fake::default(), stock()] {
            let p = ServerPage::new(&f);
            p.set_sources(Sources::Both);
            // every source but RO core 3 passes; the conditioner is seeded
            all_ready(&f);
            *f.ready.borrow_mut() &= !sr::ready::RO_ADAPROP.val(0x8);
            let used = RefCell::new(0);
            f.log.borrow_mut().clear();
            let e = p.bring_up(2, budget(50, &used)).unwrap_err();
            assert!(
                matches!(e, BringUpError::NeverReady { ready, .. } if sr::ready::RO_ADAPROP.get(ready) == 0x7),
                "{e:?}"
            );
            assert_eq!(*used.borrow(), 51, "waited exactly the budget");
            // bounded work per wait: a handful of register reads, no inner spin
            let reads = f.log.borrow().len();
            assert!(reads <= 51 * 8 + 8, "{reads} accesses for 51 waits");
            // STATUS.chacha_ready low is not ready either
            all_ready(&f);
            *f.chacha_ready.borrow_mut() = false;
            assert!(matches!(p.bring_up(0, budget(3, &used)), Err(BringUpError::NeverReady { .. })));
        }
    }

    #[test]
    fn bring_up_of_a_page_failing_forever_clears_a_bounded_number_of_times() {
        for f in [Fake::default(), stock()] {
            let p = ServerPage::new(&f);
            p.set_sources(Sources::Both);
            all_ready(&f);
            // a transient failure: one clear and it is gone
            *f.nist.borrow_mut() = sr::nist_errors::AV_ADAPTIVE.val(1);
            let used = RefCell::new(0);
            assert_eq!(p.bring_up(2, budget(10, &used)), Ok(()));
            // failing forever: latched again after every clear
            *f.sticky.borrow_mut() = true;
            *f.nist.borrow_mut() = 1;
            f.log.borrow_mut().clear();
            let used = RefCell::new(0);
            let e = p.bring_up(3, budget(1000, &used)).unwrap_err();
            assert!(matches!(e, BringUpError::Failing { nist_errors: 1, clears: 3, .. }), "{e:?}");
            let clears = f
                .log
                .borrow()
                .iter()
                .filter(|e| e.0 == 'w' && e.1 == sr::CONTROL && sr::control::CLR_ERR.get(e.2) != 0)
                .count();
            assert_eq!(clears, 3);
            assert_eq!(*used.borrow(), 3, "one wait after each clear, then it gives up");
        }
    }
}
