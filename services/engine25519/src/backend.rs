//! Engine backends behind one trait. The trait mirrors the v1 hardware interface: microcode RAM,
//! a windowed register file, and a sequencer that starts (MPSTART/MPLEN/WINDOW + GO), pauses at
//! an instruction boundary (pause_req/pause_gnt) and resumes at a saved mpc (MPRESUME).
//!
//! * `model`: engine25519_core's cycle-exact model executing the real microcode (hosted default)
//! * `hw`: the engine25519 block through its CSR page and memory window (Xous target only)
//! * `rtl`: the Verilated engine gateware in a child process (rtl_backend.rs); when it cannot
//!   start, the backend is unavailable and says so (never fakes results)
//!
//! The `software` fallback (x25519-dalek) is not an engine: it only computes X25519 when no
//! engine backend is available, and the server counts and labels it.
//!
//! The factory that picks a backend by name is in `factory.rs`.

use crate::api::{BackendId, NUM_REGS, NUM_WINDOWS, UCODE_WORDS};

pub type Reg = [u8; 32];

/// Where a job runs: the sequencer registers of the v1 map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub window: usize,
    pub mpstart: usize,
    pub mplen: usize,
}

/// How a `run` call ended. `cycles` are eng_clk cycles spent in this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// FIN, or mpc reached mpstart + mplen - 1
    Finished { cycles: u64 },
    /// illegal opcode or out-of-program branch: the engine halted
    Illegal { cycles: u64, mpc: u32 },
    /// the slice budget ran out: paused at the next instruction boundary; resume at `mpc`
    Paused { cycles: u64, mpc: u32 },
    /// the job's total cycle budget was exceeded (runaway program): the engine halted
    Runaway { cycles: u64 },
    /// the backend refused the job (bad launch parameters or inconsistent paused state)
    Fault { cycles: u64, reason: String },
    /// the engine stopped but did not say so (its completion interrupt never came): the job
    /// failed, the engine is idle and may take the next job
    Lost { cycles: u64, reason: String },
}

impl RunEnd {
    pub fn cycles(&self) -> u64 {
        match self {
            RunEnd::Finished { cycles }
            | RunEnd::Illegal { cycles, .. }
            | RunEnd::Paused { cycles, .. }
            | RunEnd::Runaway { cycles }
            | RunEnd::Fault { cycles, .. }
            | RunEnd::Lost { cycles, .. } => *cycles,
        }
    }
}

/// Where a backend answers a detached X25519 itself ([`EngineBackend::start_detached`]): the
/// client's lent page as this process maps it, with the reply archive already written (result
/// zero), and where in it the result goes. The hw backend answers from its interrupt handler,
/// so the server thread is not woken for the job's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetachedReply {
    /// the request's sender (`xous::MessageSender::to_usize`)
    pub sender: usize,
    /// the lent page in this process and its length
    pub page: usize,
    pub page_len: usize,
    /// the reply's `offset` and `valid` (0: none), as the envelope would return them
    pub offset: usize,
    pub valid: usize,
    /// byte offset in the page of the 32 result bytes
    pub result_at: usize,
    /// the program's output register (the executor fills it in)
    pub out_reg: usize,
    /// the pinned wipe program, started on the job's window right after the result is read
    /// (the executor fills it in)
    pub wipe: Option<Launch>,
    /// the job's cycle budget (the executor fills it in)
    pub max_cycles: u64,
    /// connection on which the backend wakes a server thread (its own public server), with a
    /// scalar message of id [`WAKE_ID`]
    pub wake_cid: u32,
    /// a batch of X25519s (`Opcode::X25519Batch`) run back to back in the job's window: None
    /// for a single X25519
    pub batch: Option<DetachedBatch>,
}

impl DetachedReply {
    /// A reply written over the request in the lent page `page` (`page_len` bytes, the archive
    /// at `offset`): the whole page is valid, its 32 result bytes at `result_at`; the fields the
    /// executor fills in (`out_reg`, `wipe`, `max_cycles`) start empty.
    pub fn over_page(
        sender: usize,
        page: usize,
        page_len: usize,
        offset: usize,
        result_at: usize,
        wake_cid: u32,
        batch: Option<DetachedBatch>,
    ) -> Self {
        DetachedReply {
            sender,
            page,
            page_len,
            offset,
            valid: page_len,
            result_at,
            out_reg: 0,
            wipe: None,
            max_cycles: 0,
            wake_cid,
            batch,
        }
    }
}

/// The jobs of a detached batch after the first (whose operands the executor loaded): the
/// backend takes the later jobs' scalar and u from the lent page (and wipes them there) as it
/// starts them, and puts job i's result at `result_at + 32 * i`; the page is returned after the
/// last. The jobs go to the engine in runs ([`Self::run_len`]): with the batch program pinned
/// (ISA v2; the backend was handed it once, [`EngineBackend::batch_program`]) up to three jobs
/// in one run of it, otherwise one X25519 per run. The plan's methods take that program (None:
/// one job per run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetachedBatch {
    /// jobs in the batch (2..=`api::MAX_BATCH`)
    pub count: usize,
    /// byte offsets in the page of scalar 0 and u 0 (32 bytes apart per job)
    pub scalars_at: usize,
    pub us_at: usize,
    /// the program's input registers (the executor fills them in)
    pub scalar_reg: usize,
    pub u_reg: usize,
}

/// The pinned X25519 batch program as a detached batch runs it (`programs::X25519BatchProgram`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchRun {
    /// where it sits in microcode RAM
    pub mpstart: usize,
    pub mplen: usize,
    /// its ring: job j's scalar in `slots[2 j]`, u in `slots[2 j + 1]`
    pub slots: [usize; 6],
    /// register receiving N - 1
    pub count_reg: usize,
    /// jobs one run takes
    pub max_jobs: usize,
    /// `result_regs[n - 1][j]`: job j's result after a run of n jobs
    pub result_regs: [[usize; 3]; 3],
}

impl DetachedBatch {
    /// Jobs in the run that starts at job `first`: as many as the batch program takes (a batch
    /// of 4 runs as 3 + 1) while two or more are left; otherwise 1 (an X25519 program run).
    pub fn run_len(&self, program: Option<&BatchRun>, first: usize) -> usize {
        let left = self.count.saturating_sub(first);
        match program {
            // (never more than the ring's three, whatever max_jobs says: the registers below
            // are indexed by it)
            Some(p) if left >= 2 && p.max_jobs >= 2 => left.min(p.max_jobs).min(3),
            _ => 1,
        }
    }
    /// (scalar register, u register) of job `j` of a run of `n` jobs.
    pub fn operand_regs(&self, program: Option<&BatchRun>, n: usize, j: usize) -> (usize, usize) {
        match program {
            Some(p) if n > 1 => (p.slots[2 * j], p.slots[2 * j + 1]),
            _ => (self.scalar_reg, self.u_reg),
        }
    }
    /// Where job `j` of a run of `n` jobs leaves its result (`out_reg`: the X25519 program's).
    pub fn result_reg(&self, program: Option<&BatchRun>, n: usize, j: usize, out_reg: usize) -> usize {
        match program {
            Some(p) if n > 1 => p.result_regs[n - 1][j],
            _ => out_reg,
        }
    }
    /// The launch of a run of `n` jobs: the batch program's in the window of `x25519` (the
    /// X25519 program's launch), or `x25519` itself for one job.
    pub fn launch(&self, program: Option<&BatchRun>, n: usize, x25519: Launch) -> Launch {
        match program {
            Some(p) if n > 1 => Launch { window: x25519.window, mpstart: p.mpstart, mplen: p.mplen },
            _ => x25519,
        }
    }
    /// The job counter of a run of `n` jobs: its register and value (N - 1); None for one job.
    pub fn counter(&self, program: Option<&BatchRun>, n: usize) -> Option<(usize, Reg)> {
        let p = program.filter(|_| n > 1)?;
        let mut v = [0u8; 32];
        v[0] = (n - 1) as u8;
        Some((p.count_reg, v))
    }
}

/// Id of the scalar message with which a backend wakes a server thread about a detached job
/// (arg1: [`WAKE_END`] or [`WAKE_TICK`]); not an opcode, and honoured only from the server's
/// own process.
pub const WAKE_ID: usize = 0x7761_6B65;
pub const WAKE_END: usize = 0;
pub const WAKE_TICK: usize = 1;

/// A detached job as [`EngineBackend::poll_detached`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detached {
    /// still running (the backend wakes a server thread at its end if the executor's wake flag
    /// is set then)
    Running,
    /// finished and answered by the backend; `wiped`: the wipe program finished too
    Answered { wiped: bool },
    /// ended without an answer (the client still waits): the executor answers with this end
    Unanswered(RunEnd),
}

/// Saved engine state (what a system suspend keeps in RAM): microcode RAM and register file.
pub struct Snapshot {
    pub ucode: Vec<u32>,
    pub rf: Vec<[Reg; NUM_REGS]>,
    /// model only: sequencer state of paused jobs per window (scoreboard; the hardware keeps
    /// the equivalent in its CSRs)
    pub model_paused: Vec<Option<engine25519_core::model::PausedJob>>,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        for w in self.rf.iter_mut() {
            for r in w.iter_mut() {
                r.zeroize();
            }
        }
    }
}

pub trait EngineBackend: Send {
    fn id(&self) -> BackendId;
    /// Ok if jobs can run; Err(reason) otherwise (the server then refuses jobs with
    /// EngineUnavailable and serves X25519 from the labelled software fallback).
    fn available(&self) -> Result<(), String>;
    fn write_ucode(&mut self, start: usize, words: &[u32]);
    fn read_ucode(&mut self, start: usize, out: &mut [u32]);
    fn write_reg(&mut self, window: usize, reg: usize, value: &Reg);
    fn read_reg(&mut self, window: usize, reg: usize) -> Reg;
    /// Start the job (`resume_at` None) or resume it at `resume_at` (MPRESUME) and run until it
    /// ends or about `slice` cycles have passed (then the engine pauses at the next instruction
    /// boundary and returns `Paused`). `cycles_so_far + cycles` may not exceed `max_cycles`
    /// (total for the job) or the job ends as `Runaway`. Returned cycles are those of this call.
    fn run(&mut self, launch: Launch, resume_at: Option<u32>, slice: u64, max_cycles: u64) -> RunEnd;
    /// Power-cycle: forget all state (microcode RAM and register file read as zero afterwards).
    fn reset(&mut self);
    /// Whether a paused job can be resumed where it stopped (MPRESUME driven). An engine that
    /// cannot (Precursor's shipped engine) is given each job whole, and pauses one only when a
    /// suspend is pending (`suspend_flag`); the executor then restarts that job from its saved
    /// inputs after the resume.
    fn can_resume(&self) -> bool {
        true
    }
    /// The executor's "a suspend is pending" flag, handed over once at start: a backend that
    /// runs a job in one long call may look at it to pause for a suspend.
    fn suspend_flag(&mut self, _flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {}

    /// Whether [`Self::start_detached`] can be used (hw: the interrupt is claimed).
    fn can_detach(&self) -> bool {
        false
    }
    /// Start an X25519 (operands loaded) that the backend answers itself at its end (`reply`),
    /// without a server thread waiting for it. False: not started (run it the usual way).
    fn start_detached(&mut self, _launch: Launch, _reply: DetachedReply) -> bool {
        false
    }
    /// The pinned X25519 batch program, handed over once at start by the executor (ISA v2): a
    /// detached batch then runs up to `max_jobs` jobs per run of it (`DetachedBatch::run_len`).
    /// A backend that ignores it runs one job per run.
    fn batch_program(&mut self, _program: BatchRun) {}
    /// The executor's "work waits for the engine" flag, handed over once at start: set while a
    /// detached job runs, the backend wakes a server thread at that job's end.
    fn wake_flag(&mut self, _flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {}
    /// The detached job's state, asked by a server thread that wants the engine or that was
    /// woken (`tick`: by the backend's ticker, which bounds a job whose interrupt never comes).
    fn poll_detached(&mut self, _tick: bool) -> Detached {
        Detached::Unanswered(RunEnd::Fault { cycles: 0, reason: "no detached job on this backend".into() })
    }

    fn write_window(&mut self, window: usize, regs: &[Reg; NUM_REGS]) {
        for (r, v) in regs.iter().enumerate() {
            self.write_reg(window, r, v);
        }
    }
    fn read_window(&mut self, window: usize) -> [Reg; NUM_REGS] {
        let mut out = [[0u8; 32]; NUM_REGS];
        for (r, v) in out.iter_mut().enumerate() {
            *v = self.read_reg(window, r);
        }
        out
    }
    fn clear_window(&mut self, window: usize) {
        self.write_window(window, &[[0u8; 32]; NUM_REGS]);
    }
    /// Zero the registers of `window` whose bit is set in `mask`.
    fn clear_regs(&mut self, window: usize, mask: u64) {
        for r in (0..NUM_REGS).filter(|r| mask >> r & 1 != 0) {
            self.write_reg(window, r, &[0u8; 32]);
        }
    }
    fn snapshot(&mut self) -> Snapshot {
        let mut ucode = vec![0u32; UCODE_WORDS];
        self.read_ucode(0, &mut ucode);
        let rf = (0..NUM_WINDOWS).map(|w| self.read_window(w)).collect();
        Snapshot { ucode, rf, model_paused: Vec::new() }
    }
    fn restore(&mut self, s: &Snapshot) {
        self.write_ucode(0, &s.ucode);
        for (w, regs) in s.rf.iter().enumerate() {
            self.write_window(w, regs);
        }
    }
}

/// A backend with no engine behind it: `rtl` until the Verilated gateware exists, and
/// `software` (no engine at all; X25519 requests go to the labelled x25519-dalek fallback,
/// microcode jobs are refused with EngineUnavailable). It never produces results: the executor
/// checks `available()` and never runs jobs on it.
pub struct Unavailable {
    pub id: BackendId,
    pub reason: &'static str,
}

impl Unavailable {
    /// `rtl`: runs jobs on the Verilated engine gateware once that exists.
    pub fn rtl() -> Self {
        Unavailable { id: BackendId::Rtl, reason: "rtl backend: the Verilated engine is not available (ENGINE25519_RTL_PYTHON / ENGINE25519_RTL_DIR unset, or it failed to start: see the log)" }
    }
    /// `software`: no engine (selected explicitly).
    pub fn software() -> Self {
        Unavailable {
            id: BackendId::Software,
            reason: "software backend selected: no engine; X25519 via x25519-dalek (counted as fallbacks)",
        }
    }
}

impl EngineBackend for Unavailable {
    fn id(&self) -> BackendId {
        self.id
    }
    fn available(&self) -> Result<(), String> {
        Err(self.reason.into())
    }
    fn write_ucode(&mut self, _: usize, _: &[u32]) {}
    fn read_ucode(&mut self, _: usize, out: &mut [u32]) {
        out.fill(0)
    }
    fn write_reg(&mut self, _: usize, _: usize, _: &Reg) {}
    fn read_reg(&mut self, _: usize, _: usize) -> Reg {
        [0; 32]
    }
    fn run(&mut self, _: Launch, _: Option<u32>, _: u64, _: u64) -> RunEnd {
        unreachable!("{}: the executor never runs jobs on an unavailable backend", self.reason)
    }
    fn reset(&mut self) {}
}

/// Software X25519 (x25519-dalek), the labelled fallback.
pub fn software_x25519(scalar: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
    x25519_dalek::x25519(*scalar, *u)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(count: usize) -> DetachedBatch {
        DetachedBatch { count, scalars_at: 0, us_at: 128, scalar_reg: 31, u_reg: 24 }
    }

    /// The run plan of a detached batch: with the batch program 2 -> [2], 3 -> [3], 4 -> [3, 1];
    /// without it one job per run; the registers, launch and counter of each run are the
    /// program's (engine25519_core's convention, as the server's program table carries it).
    #[test]
    fn detached_batch_run_plan() {
        let prog = crate::programs::x25519_program(engine25519_core::isa::Isa::V2);
        let b = prog.batch.as_ref().unwrap();
        let run = BatchRun {
            mpstart: 500,
            mplen: b.words.len(),
            slots: b.slots,
            count_reg: b.count_reg,
            max_jobs: b.max_jobs,
            result_regs: b.result_regs,
        };
        let plan = |d: &DetachedBatch, p: Option<&BatchRun>| {
            let mut v = Vec::new();
            let mut first = 0;
            while first < d.count {
                let n = d.run_len(p, first);
                v.push(n);
                first += n;
            }
            v
        };
        for (count, want) in [(2, vec![2]), (3, vec![3]), (4, vec![3, 1])] {
            assert_eq!(plan(&batch(count), Some(&run)), want, "{count} jobs");
            assert_eq!(plan(&batch(count), None), vec![1; count], "{count} jobs without the program");
        }
        // a program that took fewer jobs per run (never more than three)
        assert_eq!(plan(&batch(4), Some(&BatchRun { max_jobs: 2, ..run })), vec![2, 2]);
        assert_eq!(plan(&batch(4), Some(&BatchRun { max_jobs: 9, ..run })), vec![3, 1]);
        let d = batch(3);
        let p = Some(&run);
        let x = Launch { window: 5, mpstart: 0, mplen: 111 };
        assert_eq!(d.launch(p, 1, x), x);
        assert_eq!(d.launch(p, 3, x), Launch { window: 5, mpstart: 500, mplen: b.words.len() });
        assert_eq!(d.operand_regs(p, 1, 0), (31, 24));
        let s = engine25519_core::programs::X25519_BATCH_SLOTS;
        assert_eq!((d.operand_regs(p, 3, 1), d.operand_regs(p, 3, 2)), ((s[2], s[3]), (s[4], s[5])));
        assert_eq!(d.counter(p, 1), None);
        let (reg, v) = d.counter(p, 3).unwrap();
        assert_eq!(
            (reg, v),
            (
                engine25519_core::programs::X25519_BATCH_COUNT_REG,
                engine25519_core::programs::x25519_batch_count_value(3).unwrap()
            )
        );
        for n in 1..=3 {
            for j in 0..n {
                let want = engine25519_core::programs::x25519_batch_result_reg(n, j).unwrap();
                assert_eq!(d.result_reg(p, n, j, 31), want, "job {j} of {n}");
            }
        }
        assert_eq!(batch(2).result_reg(None, 1, 0, 31), 31);
    }
}
