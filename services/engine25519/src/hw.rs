//! `hw` backend (Xous target only): drives the engine25519 block through its CSR page and its
//! 128 KiB memory window (microcode RAM + register file) with the register-level driver
//! `engine25519_driver` (the same code the bare-metal SoC benchmark firmware runs). Every
//! address, offset and bit field comes from `engine25519_core::isa` (generated from
//! spec/engine25519.toml).
//!
//! The map has no cycle counter: cycles reported by this backend are wall time x eng_clk.
//! Completion is polled (`Driver::poll`) with `yield_slice` between polls.
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

pub struct HwEngine {
    drv: Driver<MmioBus>,
    /// a copy of the same mapping for the read-only presence probe (`available` takes &self)
    probe: MmioBus,
    eng_clk_hz: u64,
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
        Ok(HwEngine { drv: Driver::new(bus), probe: bus, eng_clk_hz: isa.info().eng_clk_hz })
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

    fn cycles_since(&self, t0: std::time::Instant) -> u64 {
        (t0.elapsed().as_nanos() as u64).saturating_mul(self.eng_clk_hz) / 1_000_000_000
    }

    fn end(&self, stop: Stop, t0: std::time::Instant) -> RunEnd {
        match stop {
            Stop::Finished => RunEnd::Finished { cycles: self.cycles_since(t0) },
            Stop::Illegal { mpc } => RunEnd::Illegal { cycles: self.cycles_since(t0), mpc },
        }
    }
}

impl EngineBackend for HwEngine {
    fn id(&self) -> BackendId {
        BackendId::Hw
    }
    fn available(&self) -> Result<(), String> {
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
        // the executor enforces max_cycles from the returned (wall-clock derived) cycles
        let t0 = std::time::Instant::now();
        let launch = engine25519_driver::Launch { window: l.window, mpstart: l.mpstart, mplen: l.mplen };
        let started = match resume_at {
            None => self.drv.start(launch),
            Some(mpc) => self.drv.resume(launch, mpc),
        };
        if let Err(e) = started {
            return RunEnd::Fault { cycles: 0, reason: format!("hw backend: {e}") };
        }
        loop {
            if let Some(stop) = self.drv.poll() {
                return self.end(stop, t0);
            }
            if self.cycles_since(t0) >= budget {
                return match self.drv.pause(PAUSE_POLLS) {
                    Ok(Paused::At { mpc }) => RunEnd::Paused { cycles: self.cycles_since(t0), mpc },
                    Ok(Paused::Ended(stop)) => self.end(stop, t0),
                    Err(e) => RunEnd::Fault { cycles: self.cycles_since(t0), reason: format!("hw backend: pause: {e}") },
                };
            }
            xous::yield_slice();
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
