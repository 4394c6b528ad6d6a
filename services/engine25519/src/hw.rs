//! `hw` backend (Xous target only): drives the engine25519 block through its CSR page and its
//! 128 KiB memory window (microcode RAM + register file). Every address, offset and bit field
//! comes from `engine25519_core::isa` (generated from spec/engine25519.toml).
//!
//! The v1 map has no cycle counter: cycles reported by this backend are wall time x eng_clk.
//! Completion is polled (STATUS.running / EV_PENDING) with `yield_slice` between polls.

use engine25519_core::isa::{self, csr, mem};

use crate::api::BackendId;
use crate::backend::{EngineBackend, Launch, Reg, RunEnd};

pub struct HwEngine {
    csr: *mut u32,
    mem: *mut u32,
    eng_clk_hz: u64,
}

// The mappings belong to this process. Several threads may drive the engine (the server's
// receive threads in `Driver::Callers` mode), but only the one holding the executor's engine
// token, under the `Executor::engine` mutex: never two at a time.
unsafe impl Send for HwEngine {}

impl HwEngine {
    pub fn new() -> Result<Self, String> {
        let flags = xous::MemoryFlags::R | xous::MemoryFlags::W;
        let csr_range = xous::map_memory(xous::MemoryAddress::new(csr::BASE as usize), None, 4096, flags)
            .map_err(|e| format!("hw backend: cannot map engine CSR page at {:#x}: {:?}", csr::BASE, e))?;
        let mem_range =
            xous::map_memory(xous::MemoryAddress::new(mem::BASE as usize), None, mem::SIZE as usize, flags)
                .map_err(|e| format!("hw backend: cannot map engine memory window at {:#x}: {:?}", mem::BASE, e))?;
        let e = HwEngine {
            csr: csr_range.as_mut_ptr() as *mut u32,
            mem: mem_range.as_mut_ptr() as *mut u32,
            eng_clk_hz: isa::Isa::V1.info().eng_clk_hz,
        };
        Ok(e)
    }

    fn csr_r(&self, offset: u32) -> u32 {
        unsafe { self.csr.add(offset as usize / 4).read_volatile() }
    }
    fn csr_w(&mut self, offset: u32, v: u32) {
        unsafe { self.csr.add(offset as usize / 4).write_volatile(v) }
    }
    fn mem_r(&self, byte_offset: u32) -> u32 {
        unsafe { self.mem.add(byte_offset as usize / 4).read_volatile() }
    }
    fn mem_w(&mut self, byte_offset: u32, v: u32) {
        unsafe { self.mem.add(byte_offset as usize / 4).write_volatile(v) }
    }

    fn power(&mut self, pause: bool) {
        let v = csr::power::PAUSE_REQ.put(csr::power::ON.put(0, 1), pause as u32);
        self.csr_w(csr::power::OFFSET, v);
    }

    fn cycles_since(&self, t0: std::time::Instant) -> u64 {
        (t0.elapsed().as_nanos() as u64).saturating_mul(self.eng_clk_hz) / 1_000_000_000
    }
}

impl EngineBackend for HwEngine {
    fn id(&self) -> BackendId {
        BackendId::Hw
    }
    fn available(&self) -> Result<(), String> {
        // an absent block reads as the undecoded pattern
        if self.csr_r(csr::window::OFFSET) == mem::UNDECODED_READ {
            return Err("hw backend: engine25519 CSR block does not answer".into());
        }
        Ok(())
    }
    fn write_ucode(&mut self, start: usize, words: &[u32]) {
        for (i, &w) in words.iter().enumerate() {
            self.mem_w(mem::UCODE_OFFSET + 4 * (start + i) as u32, w);
        }
    }
    fn read_ucode(&mut self, start: usize, out: &mut [u32]) {
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.mem_r(mem::UCODE_OFFSET + 4 * (start + i) as u32);
        }
    }
    fn write_reg(&mut self, window: usize, reg: usize, value: &Reg) {
        let base = isa::rf_offset(window, reg);
        for i in 0..isa::REG_WORDS {
            let w = u32::from_le_bytes(value[4 * i..4 * i + 4].try_into().unwrap());
            self.mem_w(base + 4 * i as u32, w);
        }
    }
    fn read_reg(&mut self, window: usize, reg: usize) -> Reg {
        let base = isa::rf_offset(window, reg);
        let mut out = [0u8; 32];
        for i in 0..isa::REG_WORDS {
            out[4 * i..4 * i + 4].copy_from_slice(&self.mem_r(base + 4 * i as u32).to_le_bytes());
        }
        out
    }
    fn run(&mut self, l: Launch, resume_at: Option<u32>, budget: u64, _max_cycles: u64) -> RunEnd {
        // the executor enforces max_cycles from the returned (wall-clock derived) cycles
        let t0 = std::time::Instant::now();
        self.csr_w(csr::window::OFFSET, csr::window::WINDOW.put(0, l.window as u32));
        self.csr_w(csr::mpstart::OFFSET, csr::mpstart::MPSTART.put(0, l.mpstart as u32));
        self.csr_w(csr::mplen::OFFSET, csr::mplen::MPLEN.put(0, l.mplen as u32));
        // clear stale events
        self.csr_w(csr::ev_pending::OFFSET, 0xFFFF_FFFF);
        let go = csr::control::GO.put(0, 1);
        match resume_at {
            None => {
                self.power(false);
                self.csr_w(csr::control::OFFSET, go);
            }
            Some(mpc) => {
                // resume: GO with pause_req set reloads mpc from MPRESUME, then release the pause
                self.csr_w(csr::mpresume::OFFSET, csr::mpresume::MPRESUME.put(0, mpc));
                self.power(true);
                self.csr_w(csr::control::OFFSET, go);
                self.power(false);
            }
        }
        loop {
            let pending = self.csr_r(csr::ev_pending::OFFSET);
            if csr::ev_pending::ILLEGAL_OPCODE.get(pending) != 0 {
                let mpc = csr::status::MPC.get(self.csr_r(csr::status::OFFSET));
                self.csr_w(csr::ev_pending::OFFSET, pending);
                return RunEnd::Illegal { cycles: self.cycles_since(t0), mpc };
            }
            let status = self.csr_r(csr::status::OFFSET);
            if csr::ev_pending::FINISHED.get(pending) != 0 || csr::status::RUNNING.get(status) == 0 {
                self.csr_w(csr::ev_pending::OFFSET, pending);
                return RunEnd::Finished { cycles: self.cycles_since(t0) };
            }
            if self.cycles_since(t0) >= budget {
                self.power(true);
                loop {
                    let s = self.csr_r(csr::status::OFFSET);
                    if csr::status::PAUSE_GNT.get(s) != 0 {
                        return RunEnd::Paused { cycles: self.cycles_since(t0), mpc: csr::status::MPC.get(s) };
                    }
                    if csr::status::RUNNING.get(s) == 0 {
                        self.power(false);
                        return RunEnd::Finished { cycles: self.cycles_since(t0) };
                    }
                }
            }
            xous::yield_slice();
        }
    }
    fn reset(&mut self) {
        let z = [0u32; 1];
        for i in 0..isa::UCODE_WORDS {
            self.write_ucode(i, &z);
        }
        for w in 0..isa::WINDOWS {
            self.clear_window(w);
        }
        self.csr_w(csr::power::OFFSET, 0);
    }
}
