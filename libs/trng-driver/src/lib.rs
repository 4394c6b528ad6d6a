//! Register-level driver of the TRNG block (gateware/trng/csr.py, docs/trng-gateware.md), `no_std`:
//! the same code runs in the TRNG service's `hw` backend (services/trng/src/hw.rs, Xous) and in
//! bare-metal SoC firmware (firmware/). Offsets and fields come from `spec/trng.toml` through
//! `trng_core::spec` (generated); nothing here repeats a number of the map.
//!
//! Rules the driver keeps (the gateware's contract):
//! - a conditioned word is taken only from a URANDOM read whose `URANDOM_VALID.last` bit says the
//!   word just returned was valid: the port is read-invalidate, so a word is never taken twice,
//!   never from an empty port (which reads the poison word), and a health failure between a
//!   `valid` poll and the read cannot slip the poison word through;
//! - a raw word (server page DATA, the raw FIFO) is taken only when the server underrun counter
//!   did not move across the read (or across the whole burst it was read in) and no health
//!   failure is latched after it (after the burst's last read).

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

/// What `ServerPage::init` programs: health-test cutoffs (the software's, from
/// `trng_core::health`) and the conditioner's intervals.
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
    /// NIST_ERRORS (RCT/APT latches, one bit per source).
    pub nist_errors: u32,
    /// STATUS.av_excursion (one bit per AV channel).
    pub excursion: u32,
    /// READY (per source: start-up test passed, nothing latched).
    pub ready: u32,
}

impl Health {
    pub fn failing(&self) -> bool {
        self.nist_errors != 0 || self.excursion != 0
    }
}

/// One source's APT statistic (NIST_*_STATn).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceStat {
    pub adap_b: u32,
    pub fresh: bool,
}

/// Which source a statistic is read for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Av(usize),
    Ro(usize),
}

fn urandom_read<B: Bus>(bus: &B, urandom: usize, valid: usize, last: Field) -> Option<u32> {
    let w = bus.read(urandom);
    if last.get(bus.read(valid)) != 0 {
        Some(w)
    } else {
        None
    }
}

/// The server page (the TRNG service's): configuration, health, statistics, both data paths.
pub struct ServerPage<B: Bus> {
    bus: B,
}

impl<B: Bus> ServerPage<B> {
    pub const fn new(bus: B) -> Self {
        ServerPage { bus }
    }
    pub fn bus(&self) -> &B {
        &self.bus
    }

    /// Program cutoffs and intervals, then enable the block with `sources` (the start-up tests
    /// begin; no output until they pass).
    pub fn init(&self, cfg: &Config, sources: Sources) {
        let b = &self.bus;
        b.write(sr::AV_NIST, sr::av_nist::REPCOUNT_CUTOFF.val(cfg.av_rct_cutoff) | sr::av_nist::ADAPTIVE_CUTOFF.val(cfg.av_apt_cutoff));
        b.write(sr::RO_NIST, sr::ro_nist::REPCOUNT_CUTOFF.val(cfg.ro_rct_cutoff) | sr::ro_nist::ADAPTIVE_CUTOFF.val(cfg.ro_apt_cutoff));
        b.write(
            sr::CHACHA,
            sr::chacha::RESEED_INTERVAL.val(cfg.reseed_interval)
                | sr::chacha::SELFMIX_INTERVAL.val(cfg.selfmix_interval)
                | sr::chacha::SELFMIX_ENA.val(cfg.selfmix_enable as u32),
        );
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

    /// One conditioned word from the server port, or None if the word read was not valid.
    pub fn urandom(&self) -> Option<u32> {
        urandom_read(&self.bus, sr::URANDOM, sr::URANDOM_VALID, sr::urandom_valid::LAST)
    }

    /// Poll the server port up to `polls` times.
    pub fn urandom_poll(&self, polls: u32) -> Option<u32> {
        (0..polls).find_map(|_| self.urandom())
    }

    /// Does the server port hold a word now (a hint; `urandom` decides)?
    pub fn urandom_ready(&self) -> bool {
        sr::urandom_valid::VALID.get(self.bus.read(sr::URANDOM_VALID)) != 0
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

    /// One raw (health-tested, unconditioned) word from the server raw FIFO, or None when the
    /// FIFO was empty or a failure flushed it around the read.
    pub fn raw(&self) -> Option<u32> {
        let b = &self.bus;
        if sr::status::AVAIL.get(b.read(sr::STATUS)) == 0 {
            return None;
        }
        let u0 = sr::underruns::SERVER_UNDERRUN.get(b.read(sr::UNDERRUNS));
        if u0 == sr::underruns::SERVER_UNDERRUN.max() {
            // saturated: the counter cannot show this read's underrun; restart it
            let u = b.read(sr::UNDERRUNS);
            b.write(sr::UNDERRUNS, sr::underruns::SERVER_UNDERRUN.set(u, 0));
            return None;
        }
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
        let u0 = sr::underruns::SERVER_UNDERRUN.get(b.read(sr::UNDERRUNS));
        if u0 == sr::underruns::SERVER_UNDERRUN.max() {
            let u = b.read(sr::UNDERRUNS);
            b.write(sr::UNDERRUNS, sr::underruns::SERVER_UNDERRUN.set(u, 0));
            return 0;
        }
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

    /// A latched health failure now: `Health::failing` from its two registers only (NIST_ERRORS,
    /// then STATUS.av_excursion unless NIST_ERRORS already fails), without READY: the check
    /// `raw` makes after every DATA read and the `hw` backend before every word.
    pub fn failing(&self) -> bool {
        self.bus.read(sr::NIST_ERRORS) != 0 || sr::status::AV_EXCURSION.get(self.bus.read(sr::STATUS)) != 0
    }

    pub fn health(&self) -> Health {
        let b = &self.bus;
        Health {
            nist_errors: b.read(sr::NIST_ERRORS),
            excursion: sr::status::AV_EXCURSION.get(b.read(sr::STATUS)),
            ready: b.read(sr::READY),
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

    /// Source `s`'s APT statistic, from that source's own register (reading clears `fresh`).
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
        let v = self.bus.read(off);
        Some(SourceStat { adap_b: sr::nist_ro_stat0::ADAP_B.get(v), fresh: sr::nist_ro_stat0::FRESH.get(v) != 0 })
    }

    /// Server and kernel underrun counts (reads of an empty raw FIFO).
    pub fn underruns(&self) -> (u32, u32) {
        let u = self.bus.read(sr::UNDERRUNS);
        (sr::underruns::SERVER_UNDERRUN.get(u), sr::underruns::KERNEL_UNDERRUN.get(u))
    }
}

/// The kernel page: the kernel's conditioned port (it never reads the raw FIFO).
pub struct KernelPage<B: Bus> {
    bus: B,
}

impl<B: Bus> KernelPage<B> {
    pub const fn new(bus: B) -> Self {
        KernelPage { bus }
    }
    pub fn bus(&self) -> &B {
        &self.bus
    }
    /// One conditioned word from the kernel port, or None if the word read was not valid.
    pub fn urandom(&self) -> Option<u32> {
        urandom_read(&self.bus, kr::URANDOM, kr::URANDOM_VALID, kr::urandom_valid::LAST)
    }
    pub fn urandom_poll(&self, polls: u32) -> Option<u32> {
        (0..polls).find_map(|_| self.urandom())
    }
    pub fn urandom_ready(&self) -> bool {
        kr::urandom_valid::VALID.get(self.bus.read(kr::URANDOM_VALID)) != 0
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use core::cell::RefCell;
    use std::vec::Vec;

    /// A scripted page: URANDOM is read-invalidate with `last`, DATA pops a FIFO and counts
    /// underruns, every access is logged.
    #[derive(Default)]
    struct Fake {
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
        /// STATUS.av_excursion
        exc: RefCell<u32>,
        /// every other register: what was last written (0 before)
        mem: RefCell<std::collections::BTreeMap<usize, u32>>,
        flush_on_data: RefCell<bool>,
        log: RefCell<Vec<(char, usize, u32)>>,
    }

    impl Bus for &Fake {
        fn read(&self, off: usize) -> u32 {
            let v = match off {
                o if o == sr::URANDOM => {
                    let w = self.port.borrow_mut().take();
                    *self.last.borrow_mut() = w.is_some();
                    w.unwrap_or(POISON)
                }
                o if o == sr::URANDOM_VALID => {
                    sr::urandom_valid::VALID.val(self.port.borrow().is_some() as u32)
                        | sr::urandom_valid::LAST.val(*self.last.borrow() as u32)
                }
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
                        | sr::status::AV_EXCURSION.val(*self.exc.borrow())
                }
                o if o == sr::DATA => {
                    if *self.flush_on_data.borrow() {
                        self.fifo.borrow_mut().clear();
                        *self.nist.borrow_mut() = 1;
                    }
                    if self.fifo.borrow().is_empty() {
                        *self.under.borrow_mut() += 1;
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
        assert!(log[i + 1..].iter().any(|e| e.1 == sr::URANDOM_VALID));
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
        assert!(f.log.borrow().iter().any(|e| e.0 == 'w' && e.1 == sr::UNDERRUNS));
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
        let cfg = Config { av_rct_cutoff: 21, av_apt_cutoff: 410, ro_rct_cutoff: 81, ro_apt_cutoff: 840, reseed_interval: 2, selfmix_interval: 64, selfmix_enable: true };
        p.init(&cfg, Sources::Both);
        let log = f.log.borrow();
        let w = |off| log.iter().rev().find(|e| e.0 == 'w' && e.1 == off).map(|e| e.2).unwrap();
        assert_eq!(sr::av_nist::REPCOUNT_CUTOFF.get(w(sr::AV_NIST)), 21);
        assert_eq!(sr::ro_nist::ADAPTIVE_CUTOFF.get(w(sr::RO_NIST)), 840);
        assert_eq!(sr::chacha::SELFMIX_INTERVAL.get(w(sr::CHACHA)), 64);
        assert_eq!(sr::control::ENABLE.get(w(sr::CONTROL)), 1);
    }
}
