//! The TRNG phase of the SoC firmware (feature `trng-only`; test step `trng:soc`, bench key
//! `soc_trng_words_per_kcycle`): the TRNG block (gateware/trng, fed by the simulation noise
//! source) at spec/trng.toml's bases, driven through libs/trng-driver, the same register-level
//! driver as the TRNG service's `hw` backend.
//!
//! 1. Before the block is enabled both URANDOM ports read the poison word and no read is
//!    vouched for (`URANDOM_LAST.last` = 0).
//! 2. `init` programs the software's health cutoffs and the conditioner intervals (computed on
//!    the host by build.rs from trng_core), then the start-up tests run; the first conditioned
//!    word arrives on the kernel port.
//! 3. Throughput: both ports read in turn, continuously; after `WARMUP` words (what was
//!    buffered) the next `WORDS` valid words are timed; every word is taken only with its valid
//!    bit, none twice (all `WARMUP + WORDS + 1` compared), and no health test fails. Words per
//!    1,000 CPU cycles (`mcycle`).

use trng_driver::{Bus, KernelPage, Mmio, ServerPage, Sources, KERNEL_BASE, POISON, SERVER_BASE};

mod cfg {
    include!(concat!(env!("OUT_DIR"), "/trng_cfg.rs"));
}

/// The verdict subject of the TRNG phase.
pub const SUBJECT: &str = "soc-trng";

/// Valid words collected in the throughput phase (half from each port, in turn).
pub const WORDS: usize = 2048;
/// Words read before the timing starts: what the output FIFO and the ports buffered while
/// nobody read (two blocks and two port words), so the figure is the steady-state rate.
const WARMUP: usize = 64;
/// Port reads before the first word counts as missing (start-up test: ~1,024 samples, seeding:
/// 28 raw words of 32 sample pairs, one ChaCha block).
const FIRST_POLLS: u32 = 200_000;
/// Empty reads tolerated during the throughput phase.
const MAX_EMPTY: u32 = 1_000_000;

pub struct Figures {
    pub words: usize,
    pub kernel_words: usize,
    pub server_words: usize,
    pub cycles: u64,
    pub empty_reads: u32,
    pub first_word_cycles: u64,
}

impl Figures {
    /// Words per 1,000 CPU cycles, times 100 (two decimals without floating point formatting).
    pub fn words_per_kcycle_x100(&self) -> u64 {
        (self.words as u64 * 100_000) / self.cycles.max(1)
    }
}

pub fn bench(cycles: fn() -> u64) -> Result<Figures, &'static str> {
    // SAFETY: the SoC maps the TRNG pages at the spec's bases (build.rs checks csr.csv).
    let sp = ServerPage::new(unsafe { Mmio::new(SERVER_BASE as *mut u32) });
    let kp = KernelPage::new(unsafe { Mmio::new(KERNEL_BASE as *mut u32) });
    let urandom_k = trng_driver::spec::regs::kernel::registers::URANDOM;
    let urandom_s = trng_driver::spec::regs::server::registers::URANDOM;
    if kp.bus().read(urandom_k) != POISON || sp.bus().read(urandom_s) != POISON {
        return Err("an idle port did not read the poison word");
    }
    if kp.urandom().is_some() || sp.urandom().is_some() {
        return Err("a port vouched for a word before the TRNG was enabled");
    }

    let t0 = cycles();
    sp.init(&cfg::CONFIG, Sources::Both);
    let first = kp.urandom_poll(FIRST_POLLS).ok_or("no valid word on the kernel port after enabling")?;
    let first_word_cycles = cycles() - t0;

    let mut words = [0u32; WARMUP + WORDS + 1];
    words[WARMUP + WORDS] = first;
    let (mut n, mut kn, mut sn, mut empty) = (0usize, 0usize, 0usize, 0u32);
    let mut t1 = cycles();
    while n < WARMUP + WORDS {
        if n == WARMUP && kn + sn == WARMUP {
            (kn, sn, empty) = (0, 0, 0);
            t1 = cycles();
        }
        let got = if cfg!(feature = "fault-trng-ignore-valid") {
            // bad-input case of the step trng:soc: take whatever the port returns, valid or not
            Some(if n % 2 == 0 { (kp.bus().read(urandom_k), 0) } else { (sp.bus().read(urandom_s), 1) })
        } else if n % 2 == 0 {
            kp.urandom().map(|w| (w, 0))
        } else {
            sp.urandom().map(|w| (w, 1))
        };
        match got {
            Some((w, port)) => {
                words[n] = w;
                n += 1;
                if port == 0 {
                    kn += 1
                } else {
                    sn += 1
                }
            }
            None => {
                empty += 1;
                if empty > MAX_EMPTY {
                    return Err("the ports stopped delivering words");
                }
            }
        }
    }
    let dt = cycles() - t1;
    if sp.health().failing() {
        return Err("a health test failed on the healthy noise source");
    }
    words.sort_unstable();
    if words.windows(2).any(|p| p[0] == p[1]) {
        return Err("a conditioned word was delivered twice");
    }
    Ok(Figures { words: n - WARMUP, kernel_words: kn, server_words: sn, cycles: dt, empty_reads: empty, first_word_cycles })
}
