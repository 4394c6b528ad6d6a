//! `model` backend: engine25519_core's cycle-exact model (`EngineModel`) executing the real
//! microcode, ISA v2 by default when hosted (`--isa v1` selects v1; see main.rs).
//! Pauses happen at instruction boundaries; the model's paused-job state (scoreboard, cycle
//! count) is kept per window, as the hardware keeps mpc and its sequencer state.

use engine25519_core::isa::Isa;
use engine25519_core::model::{self, ModelError, PausedJob, RunStatus};
use zeroize::Zeroize;

use crate::api::{BackendId, NUM_WINDOWS};
use crate::backend::{EngineBackend, Launch, Reg, RunEnd, Snapshot};

/// Cheapest v1 instruction (ALU) in cycles: a slice of `c` cycles runs at most c / this
/// instructions, and at least one.
const SLICE_DIVISOR: u64 = 8;

pub struct ModelEngine {
    isa: Isa,
    m: model::EngineModel,
    paused: Vec<Option<PausedJob>>,
}

impl ModelEngine {
    pub fn new(isa: Isa) -> Self {
        ModelEngine { isa, m: model::EngineModel::new(isa), paused: vec![None; NUM_WINDOWS] }
    }
}

fn wipe(p: &mut PausedJob) {
    for r in p.regs.iter_mut() {
        r.zeroize();
    }
}

impl EngineBackend for ModelEngine {
    fn id(&self) -> BackendId {
        BackendId::Model
    }
    fn available(&self) -> Result<(), String> {
        Ok(())
    }
    fn write_ucode(&mut self, start: usize, words: &[u32]) {
        self.m.load_program(words, start).expect("microcode placement checked by the ucode manager");
    }
    fn read_ucode(&mut self, start: usize, out: &mut [u32]) {
        out.copy_from_slice(&self.m.ucode()[start..start + out.len()]);
    }
    fn write_reg(&mut self, window: usize, reg: usize, value: &Reg) {
        self.m.set_reg(window, reg, value).expect("window/register checked by the scheduler");
    }
    fn read_reg(&mut self, window: usize, reg: usize) -> Reg {
        self.m.reg(window, reg).expect("window/register checked by the scheduler")
    }
    fn clear_window(&mut self, window: usize) {
        self.m.clear_window(window).expect("window checked by the scheduler");
        if let Some(mut p) = self.paused[window].take() {
            wipe(&mut p);
        }
    }
    fn run(&mut self, l: Launch, resume_at: Option<u32>, slice: u64, max_cycles: u64) -> RunEnd {
        let job = model::Job { window: l.window, mpstart: l.mpstart, mplen: l.mplen, cycle_budget: max_cycles };
        let instrs = (slice / SLICE_DIVISOR).max(1);
        let (res, before) = match resume_at {
            None => (self.m.run_limited(&job, instrs), 0),
            Some(mpc) => {
                let Some(mut p) = self.paused.get_mut(l.window).and_then(|p| p.take()) else {
                    return RunEnd::Fault { cycles: 0, reason: "resume without a paused job in this window".into() };
                };
                if p.mpc != mpc as usize
                    || (p.job.window, p.job.mpstart, p.job.mplen) != (job.window, job.mpstart, job.mplen)
                {
                    wipe(&mut p);
                    return RunEnd::Fault { cycles: 0, reason: "resume point does not match the paused job".into() };
                }
                let before = p.cycle;
                let r = self.m.resume(&p, instrs);
                wipe(&mut p);
                (r, before)
            }
        };
        match res {
            Ok(RunStatus::Finished(o)) => RunEnd::Finished { cycles: o.cycles - before },
            Ok(RunStatus::Paused(p)) => {
                let (cycles, mpc) = (p.cycle - before, p.mpc as u32);
                self.paused[l.window] = Some(p);
                RunEnd::Paused { cycles, mpc }
            }
            Err(ModelError::IllegalOpcode { mpc, cycles, .. })
            | Err(ModelError::BranchOutOfProgram { mpc, cycles, .. }) => {
                RunEnd::Illegal { cycles: cycles.saturating_sub(before), mpc: mpc as u32 }
            }
            Err(ModelError::CycleBudgetExceeded { cycles, .. }) => {
                RunEnd::Runaway { cycles: cycles.saturating_sub(before) }
            }
            Err(e) => RunEnd::Fault { cycles: 0, reason: e.to_string() },
        }
    }
    fn reset(&mut self) {
        self.m = model::EngineModel::new(self.isa);
        for p in self.paused.iter_mut() {
            if let Some(mut p) = p.take() {
                wipe(&mut p);
            }
        }
    }
    fn snapshot(&mut self) -> Snapshot {
        let ucode = self.m.ucode().to_vec();
        let rf = (0..NUM_WINDOWS).map(|w| self.read_window(w)).collect();
        let model_paused = self.paused.iter_mut().map(|p| p.take()).collect();
        Snapshot { ucode, rf, model_paused }
    }
    fn restore(&mut self, s: &Snapshot) {
        self.write_ucode(0, &s.ucode);
        for (w, regs) in s.rf.iter().enumerate() {
            self.write_window(w, regs);
        }
        for (w, p) in s.model_paused.iter().enumerate() {
            self.paused[w] = p.clone();
        }
    }
}
