//! `hw` backend (Xous target only): drives the engine25519 block through its CSR page and its
//! 128 KiB memory window (microcode RAM + register file) with the register-level driver
//! `engine25519_driver` (the same code the bare-metal SoC benchmark firmware runs). Every
//! address, offset and bit field comes from `engine25519_core::isa` (generated from
//! spec/engine25519.toml).
//!
//! The map has no cycle counter, and on Xous every clock read (`std::time::Instant`) is an IPC
//! round trip to xous-ticktimer (about 170 us of device time on the simulated Precursor:
//! docs/selftest.md, "Where the time went"). So the backend never reads a clock while a job
//! runs: it counts STATUS polls. At start-up [`HwEngine::self_test`] runs one X25519 of RFC
//! 7748 5.2 on the engine (a known-answer test: a wrong result makes the backend unavailable)
//! and, since the model gives that job's exact cycle count (build time), learns the engine
//! cycles per poll. Cycles reported by this backend, slices and the runaway limit are
//! counted in polls converted with that figure: an estimate (time other threads take while
//! this one has yielded is not counted). Completion is polled back to back; the CPU is offered
//! to other threads (`yield_slice`) after every `YIELD_MS` milliseconds of estimated engine time
//! (an X25519, 2.3 ms on v1, runs without one: each yield costs ~100 us of device time and its
//! time is not counted; Xous preempts a thread after its 10 ms quantum anyway).
//!
//! Precursor's engine implements ISA v1; a SoC may carry the v2 engine instead (the simulated
//! Precursor built with `PRECURSOR_ENGINE_ISA=v2`). The CSR map and the memory window are the
//! same, so [`HwEngine::probe_isa`] tells them apart by running one job.

use engine25519_core::isa::{self, csr, mem, Isa};
use engine25519_driver::{Driver, MmioBus, Paused, Stop};

use crate::api::BackendId;
use crate::backend::{EngineBackend, Launch, Reg, RunEnd};

/// Bytes mapped for the CSR block: one page of the spec's page size (the SoC gives the block
/// exactly that region, gateware/soc/engine.py).
const CSR_PAGE: usize = mem::PAGE_SIZE as usize;
/// STATUS reads while waiting for a pause grant (a grant takes at most one instruction).
const PAUSE_POLLS: u32 = 1_000_000;
/// Polls the start-up X25519 may take before the engine counts as hung (a poll is at least a
/// few CPU cycles; v1's 114,072 engine cycles take a few thousand).
const KAT_MAX_POLLS: u64 = 50_000_000;
/// Engine milliseconds (estimated) between two offers of the CPU while a job runs.
const YIELD_MS: u64 = 5;
/// Fixed-point fraction bits of the cycles-per-poll figure.
const CPP_FRAC: u32 = 16;

pub struct HwEngine {
    drv: Driver<MmioBus>,
    /// a copy of the same mapping for the read-only presence probe (`available` takes &self)
    probe: MmioBus,
    eng_clk_hz: u64,
    /// engine cycles per STATUS poll, 16.16 fixed point (`self_test`)
    cycles_per_poll: u64,
    /// its inverse, polls per engine cycle, 16.16 fixed point (no 64-bit division per job:
    /// on RV32 that is a slow library call)
    polls_per_cycle: u64,
    /// polls per `YIELD_MS` of engine time: how often a long job offers the CPU to others
    yield_every: u64,
    /// why the engine may not be used (its known-answer test failed), if it may not
    failed: Option<String>,
}

// The mappings belong to this process. Several threads may drive the engine (the server's
// receive threads in `Driver::Callers` mode), but only the one holding the executor's engine
// token, under the `Executor::engine` mutex: never two at a time.
unsafe impl Send for HwEngine {}

impl HwEngine {
    pub fn new(isa: Isa) -> Result<Self, String> {
        let flags = xous::MemoryFlags::R | xous::MemoryFlags::W;
        let csr_range = xous::map_memory(xous::MemoryAddress::new(csr::BASE as usize), None, CSR_PAGE, flags)
            .map_err(|e| format!("hw backend: cannot map engine CSR page at {:#x}: {:?}", csr::BASE, e))?;
        let mem_range =
            xous::map_memory(xous::MemoryAddress::new(mem::BASE as usize), None, mem::SIZE as usize, flags)
                .map_err(|e| format!("hw backend: cannot map engine memory window at {:#x}: {:?}", mem::BASE, e))?;
        // Safety: both ranges were just mapped for this process (sizes as above) and stay mapped.
        let bus = unsafe { MmioBus::new(csr_range.as_mut_ptr() as *mut u32, mem_range.as_mut_ptr() as *mut u32) };
        Ok(HwEngine { drv: Driver::new(bus), probe: bus, eng_clk_hz: isa.info().eng_clk_hz, cycles_per_poll: 1 << CPP_FRAC, polls_per_cycle: 1 << CPP_FRAC, yield_every: u64::MAX, failed: None })
    }

    /// The start-up known-answer test, which also calibrates the poll clock: X25519 of RFC 7748
    /// 5.2's first vector in window 0, polled back to back. A wrong result (or a job that does
    /// not finish) makes the backend unavailable, with the reason (the server then refuses jobs
    /// with EngineUnavailable and labels software-fallback answers). The cycles per poll are the
    /// model's exact count for this job (constant time, build time) over the polls it took.
    /// The microcode word range and window 0 are cleared afterwards.
    pub fn self_test(&mut self, isa: Isa) -> Result<u64, String> {
        let p = crate::programs::x25519_program(isa);
        let (k, u, want) = crate::programs::X25519_KAT;
        let r = (|| -> Result<u64, String> {
            self.drv.write_ucode(0, &p.words).map_err(|e| format!("write_ucode: {e}"))?;
            // twice: the first run is the test proper and warms the caches; the second, also
            // checked, is the one timed (as every later job runs: code and data cached)
            let mut polls = 0;
            for _ in 0..2 {
                self.drv.write_reg(0, p.scalar_reg, &k).map_err(|e| format!("write_reg: {e}"))?;
                self.drv.write_reg(0, p.u_reg, &u).map_err(|e| format!("write_reg: {e}"))?;
                self.drv.start(engine25519_driver::Launch { window: 0, mpstart: 0, mplen: p.words.len() }).map_err(|e| format!("start: {e}"))?;
                let (stop, n) = self.spin(KAT_MAX_POLLS, u64::MAX);
                match stop {
                    Some(Stop::Finished) => {}
                    Some(Stop::Illegal { mpc }) => return Err(format!("the engine halted at mpc {mpc} (illegal instruction)")),
                    None => {
                        let _ = self.drv.pause(PAUSE_POLLS);
                        return Err(format!("the job did not finish in {KAT_MAX_POLLS} polls"));
                    }
                }
                let got = self.drv.read_reg(0, p.out_reg).map_err(|e| format!("read_reg: {e}"))?;
                if got != want {
                    return Err("wrong result for RFC 7748 5.2's first vector".into());
                }
                polls = n.max(1);
            }
            Ok(polls)
        })();
        let _ = self.drv.write_ucode(0, &vec![0u32; p.words.len()]);
        self.clear_window(0);
        self.drv.power_off();
        match r {
            Ok(polls) => {
                self.cycles_per_poll = ((p.cycles << CPP_FRAC) / polls).max(1);
                self.polls_per_cycle = ((polls << CPP_FRAC) / p.cycles.max(1)).max(1);
                self.yield_every = self.polls_for(self.eng_clk_hz / 1000 * YIELD_MS);
                Ok(polls)
            }
            Err(e) => {
                let e = format!("hw backend: the engine failed its start-up known-answer test (X25519 on {isa}): {e}");
                self.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Engine cycles estimated for `polls` polls.
    fn cycles(&self, polls: u64) -> u64 {
        polls.saturating_mul(self.cycles_per_poll) >> CPP_FRAC
    }

    /// Polls that take about `cycles` engine cycles (at least one).
    fn polls_for(&self, cycles: u64) -> u64 {
        (cycles.saturating_mul(self.polls_per_cycle) >> CPP_FRAC).max(1)
    }

    /// Poll STATUS until the engine stops or `max_polls` polls have found it running, offering
    /// the CPU to other threads after every `yield_every` polls. Returns the stop, if one was
    /// seen, and the polls that found the engine running.
    fn spin(&mut self, max_polls: u64, yield_every: u64) -> (Option<Stop>, u64) {
        let mut polls = 0u64;
        let mut until_yield = yield_every;
        while polls < max_polls {
            if let Some(stop) = self.drv.poll() {
                return (Some(stop), polls);
            }
            polls += 1;
            until_yield -= 1;
            if until_yield == 0 {
                xous::yield_slice();
                until_yield = yield_every;
            }
        }
        (None, polls)
    }

    /// Which ISA the engine on the bus implements: one job of `field_add` for v2 (its `fadd` is
    /// an opcode v1 does not define) in window 0: a v1 engine halts on it with an illegal
    /// opcode, a v2 engine finishes. The microcode words and the window are cleared afterwards.
    pub fn probe_isa(&mut self) -> Result<Isa, String> {
        let p = engine25519_core::programs::get("field_add", Isa::V2).ok_or("hw backend: no field_add program for v2")?;
        let words = p.words();
        self.drv.write_ucode(0, words).map_err(|e| format!("hw backend: ISA probe: {e}"))?;
        let r = self.drv.run(engine25519_driver::Launch { window: 0, mpstart: 0, mplen: words.len() }, PAUSE_POLLS);
        let _ = self.drv.write_ucode(0, &vec![0u32; words.len()]);
        self.clear_window(0);
        self.drv.power_off();
        let isa = match r {
            Ok(Stop::Finished) => Isa::V2,
            Ok(Stop::Illegal { .. }) => Isa::V1,
            Err(e) => return Err(format!("hw backend: ISA probe job did not end: {e}")),
        };
        self.eng_clk_hz = isa.info().eng_clk_hz;
        Ok(isa)
    }

    fn end(&self, stop: Stop, cycles: u64) -> RunEnd {
        match stop {
            Stop::Finished => RunEnd::Finished { cycles },
            Stop::Illegal { mpc } => RunEnd::Illegal { cycles, mpc },
        }
    }
}

impl EngineBackend for HwEngine {
    fn id(&self) -> BackendId {
        BackendId::Hw
    }
    fn available(&self) -> Result<(), String> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !Driver::new(self.probe).present() {
            return Err("hw backend: engine25519 CSR block does not answer".into());
        }
        Ok(())
    }
    fn write_ucode(&mut self, start: usize, words: &[u32]) {
        // the executor's microcode manager keeps programs inside the RAM
        if let Err(e) = self.drv.write_ucode(start, words) {
            log::error!("hw backend: write_ucode: {e}");
            return;
        }
        // read the words back: a word the bus lost would make the engine run another program
        let mut back = vec![0u32; words.len()];
        if self.drv.read_ucode(start, &mut back).is_ok() {
            if let Some(i) = (0..words.len()).find(|&i| back[i] != words[i]) {
                let bad = (0..words.len()).filter(|&i| back[i] != words[i]).count();
                log::error!("hw backend: microcode read back differs at word {} (wrote {:#010x}, read {:#010x}; {} of {} words differ)", start + i, words[i], back[i], bad, words.len());
            }
        }
    }
    fn read_ucode(&mut self, start: usize, out: &mut [u32]) {
        if let Err(e) = self.drv.read_ucode(start, out) {
            log::error!("hw backend: read_ucode: {e}");
        }
    }
    fn write_reg(&mut self, window: usize, reg: usize, value: &Reg) {
        if let Err(e) = self.drv.write_reg(window, reg, value) {
            log::error!("hw backend: write_reg: {e}");
        }
    }
    fn read_reg(&mut self, window: usize, reg: usize) -> Reg {
        self.drv.read_reg(window, reg).unwrap_or_else(|e| {
            log::error!("hw backend: read_reg: {e}");
            [0u8; 32]
        })
    }
    fn run(&mut self, l: Launch, resume_at: Option<u32>, budget: u64, _max_cycles: u64) -> RunEnd {
        // the executor enforces max_cycles from the returned (poll-estimated) cycles
        let launch = engine25519_driver::Launch { window: l.window, mpstart: l.mpstart, mplen: l.mplen };
        let started = match resume_at {
            None => self.drv.start(launch),
            Some(mpc) => self.drv.resume(launch, mpc),
        };
        if let Err(e) = started {
            return RunEnd::Fault { cycles: 0, reason: format!("hw backend: {e}") };
        }
        let (stop, polls) = self.spin(self.polls_for(budget), self.yield_every);
        let cycles = self.cycles(polls);
        match stop {
            Some(stop) => self.end(stop, cycles),
            None => match self.drv.pause(PAUSE_POLLS) {
                Ok(Paused::At { mpc }) => RunEnd::Paused { cycles, mpc },
                Ok(Paused::Ended(stop)) => self.end(stop, cycles),
                Err(e) => RunEnd::Fault { cycles, reason: format!("hw backend: pause: {e}") },
            },
        }
    }
    fn reset(&mut self) {
        let z = [0u32; isa::UCODE_WORDS];
        let _ = self.drv.write_ucode(0, &z);
        for w in 0..isa::WINDOWS {
            self.clear_window(w);
        }
        self.drv.power_off();
    }
}
