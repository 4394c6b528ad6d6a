//! `hw` backend (Xous target only): drives the engine25519 block through its CSR page and its
//! 128 KiB memory window (microcode RAM + register file) with the register-level driver
//! `engine25519_driver` (the same code the bare-metal SoC benchmark firmware runs). Every
//! address, offset and bit field comes from `engine25519_core::isa` (generated from
//! spec/engine25519.toml).
//!
//! Completion by interrupt: after its start-up jobs the backend claims the engine's interrupt
//! (IRQ 18, `claim_interrupt`). A job is started with EV_ENABLE set and the thread blocks in the
//! kernel on a private "doorbell" server; the interrupt handler (a kernel callback in this
//! process) acknowledges EV_PENDING and sends the doorbell a scalar with the events it saw, so
//! the CPU runs other processes while the engine works. There is no clock on this path: every
//! clock read on Xous is an IPC to xous-ticktimer (about 170 us of device time on the simulated
//! Precursor, docs/selftest.md). Time is kept by a ticker thread that, while jobs run, sleeps
//! `HW_TICK_MS` at a time and sends the waiting job a tick; it blocks (no timer traffic) once a
//! tick finds no job since the previous one. Ticks bound a job: its slice (then the engine is
//! paused), its cycle budget in wall time (Runaway), and a lost interrupt (the engine stopped
//! but no interrupt came for a full tick: the job fails with `RunEnd::Lost`, the next is tried
//! normally). The cycles this backend reports are the full ticks a job waited (0 for a job
//! shorter than a tick): the CSR map has no cycle counter. Jobs whose whole budget is shorter
//! than an interrupt's round trip (the executor's window wipe) are polled.
//!
//! Polling is kept for the start-up jobs and as the fallback when the interrupt cannot be
//! claimed (or the server was built with `ENGINE25519_HW_WAIT=poll`, the A/B figure of
//! docs/selftest.md): STATUS polls back to back, counted; at start-up [`HwEngine::self_test`]
//! runs one X25519 of RFC 7748 5.2 on the engine (a known-answer test: a wrong result makes
//! the backend unavailable) and, since the model gives that job's exact cycle count (build
//! time), learns the engine cycles per poll, which converts polls into the cycles, slices and
//! runaway limit of polled jobs.
//!
//! Precursor's engine implements ISA v1; a SoC may carry the v2 engine instead (the simulated
//! Precursor built with `PRECURSOR_ENGINE_ISA=v2`). The CSR map and the memory window are the
//! same, so [`HwEngine::probe_isa`] tells them apart by running one job.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use engine25519_core::isa::{self, csr, mem, Isa};
use engine25519_driver::{Bus, Driver, MmioBus, Paused, Stop};

use crate::api::BackendId;
use crate::backend::{Detached, DetachedReply, EngineBackend, Launch, Reg, RunEnd, WAKE_END, WAKE_ID, WAKE_TICK};

/// Bytes mapped for the CSR block: one page of the spec's page size (the SoC gives the block
/// exactly that region, gateware/soc/engine.py).
const CSR_PAGE: usize = mem::PAGE_SIZE as usize;
/// STATUS reads while waiting for a pause grant (a grant takes at most one instruction).
const PAUSE_POLLS: u32 = 1_000_000;
/// Polls the start-up X25519 may take before the engine counts as hung (a poll is at least a
/// few CPU cycles; v1's 114,072 engine cycles take a few thousand).
const KAT_MAX_POLLS: u64 = 50_000_000;
/// Jobs whose cycle budget is at most this are polled even when the interrupt is claimed: the
/// kernel's way from the interrupt to the waiting thread (handler callback, message, switch)
/// costs more CPU than such a job takes on the engine (200 us at 50 MHz; the executor's window
/// wipe, WIPE_BUDGET, is one).
const POLL_UP_TO_CYCLES: u64 = 10_000;
/// Polls into the start-up X25519 before it is paused once to see whether MPRESUME is driven
/// (far inside the ladder: the v2 job takes a few thousand polls).
const RESUME_PROBE_POLLS: u64 = 200;
/// Engine milliseconds (estimated) between two offers of the CPU while a job runs.
const YIELD_MS: u64 = 5;
/// Fixed-point fraction bits of the cycles-per-poll figure.
const CPP_FRAC: u32 = 16;
/// Period of the ticker thread while jobs wait for their interrupt (ms): the resolution of
/// slices, of the runaway limit, of lost-interrupt detection and of the cycles reported.
use crate::api::HW_TICK_MS as TICK_MS;
/// Scalar message ids on the doorbell server: the handler's (arg1 = EV_PENDING bits it
/// acknowledged, arg2 = the job's generation) and the ticker's (arg1 = generation).
const BELL_DONE: usize = 1;
const BELL_TICK: usize = 2;
/// Ticker states: blocked until the next job / no job since the last tick / a job since.
const TICKER_IDLE: u8 = 0;
const TICKER_QUIET: u8 = 1;
const TICKER_ACTIVE: u8 = 2;
/// States of a detached job (`HwEngine::start_detached`): none / running, the handler answers
/// it / answered by the handler / ended with an event the handler does not answer (the server
/// thread does).
const D_IDLE: u8 = 0;
const D_ARMED: u8 = 1;
const D_ANSWERED: u8 = 2;
const D_FAILED: u8 = 3;
/// Every event bit of EV_PENDING / EV_ENABLE.
const EVENTS: usize = (csr::ev_pending::FINISHED.mask() | csr::ev_pending::ILLEGAL_OPCODE.mask()) as usize;

/// What the interrupt handler, the ticker thread and the thread waiting for a job share (leaked
/// once: the kernel keeps the handler's argument pointer for good).
struct Bell {
    /// the engine's CSR page in this process
    csr: *mut u32,
    /// connection to the doorbell server (the waiting thread receives there)
    cid: xous::CID,
    /// the job now waiting: messages about earlier jobs are stale
    gen: AtomicUsize,
    /// a job is waiting: the ticker sends it ticks
    waiting: AtomicBool,
    /// TICKER_*
    ticker: AtomicU8,
    /// wakes the ticker from TICKER_IDLE
    ticker_cid: xous::CID,
    /// the engine's memory window in this process (the handler reads a detached job's result)
    mem: *mut u32,
    /// D_*: the detached job, if any
    dstate: AtomicU8,
    /// the executor's "work waits for the engine" (`EngineBackend::wake_flag`): the handler
    /// wakes a server thread at the detached job's end if it is set
    want_wake: std::sync::OnceLock<std::sync::Arc<AtomicBool>>,
    /// the events of a detached job the handler did not answer (D_FAILED)
    dev: AtomicUsize,
    /// the handler's reply to a detached job was refused by the kernel (never expected; the
    /// thread that settles the job logs it)
    reply_failed: AtomicBool,
    /// the detached job and where to answer it: written by the starting thread while dstate is
    /// D_IDLE, read by the handler while it is D_ARMED and by the settling thread after (one
    /// CPU; the state orders them)
    detached: UnsafeCell<Option<(engine25519_driver::Launch, DetachedReply)>>,
    /// the connection on which a detached job wakes a server thread (its `wake_cid`; 0: none
    /// yet), an atomic because the ticker reads it too
    wake: AtomicUsize,
    /// the first job of a detached batch's run now on the engine (0 for a single X25519)
    dnext: AtomicUsize,
    /// the jobs in that run (1, or 2..=3 in one run of the batch program)
    drun: AtomicUsize,
    /// the pinned batch program (`EngineBackend::batch_program`), if any
    batch: std::sync::OnceLock<crate::backend::BatchRun>,
}

// The CSR pointer is used only by the interrupt handler (interrupts off, nothing else runs) to
// acknowledge events; the other fields are atomics or connection ids.
unsafe impl Sync for Bell {}
unsafe impl Send for Bell {}

struct IrqWait {
    bell: &'static Bell,
    /// the doorbell server
    sid: xous::SID,
    /// interrupts that never came (jobs failed for it)
    lost: u64,
    /// engine cycles per tick (no 64-bit division per job: on RV32 that is a library call)
    tick_cycles: u64,
}

/// The interrupt handler (a kernel callback in this process, interrupts off): acknowledge the
/// events (the line drops), mask the line again (one interrupt per job: the polled jobs that
/// follow, the window wipe, must not raise one; `run_irq` unmasks it for the next job) and tell
/// the waiting thread which events it saw. A detached job that finished is answered here
/// instead (`answer_detached`), and no thread is woken unless one asked (`want_wake`) or the job
/// ended with an error. Nothing here blocks.
fn engine_irq(_irq: usize, arg: *mut usize) {
    // Safety: `arg` is the leaked Bell (enable_interrupt); its CSR page stays mapped.
    let bell = unsafe { &*(arg as *const Bell) };
    let pending_reg = unsafe { bell.csr.add(csr::ev_pending::OFFSET as usize / 4) };
    let pending = unsafe { pending_reg.read_volatile() } as usize & EVENTS;
    if pending != 0 {
        let enable_reg = unsafe { bell.csr.add(csr::ev_enable::OFFSET as usize / 4) };
        unsafe { enable_reg.write_volatile(0) };
    }
    unsafe { pending_reg.write_volatile(pending as u32) };
    if bell.dstate.load(Ordering::SeqCst) == D_ARMED {
        if pending == 0 {
            return; // spurious: the job still runs
        }
        let mut answered = csr::ev_pending::ILLEGAL_OPCODE.get(pending as u32) == 0;
        if answered {
            // Safety: written before the job started, not touched while it is armed
            // (by reference: the handler copies nothing it does not need)
            if let Some((launch, reply)) = unsafe { (*bell.detached.get()).as_ref() } {
                match answer_detached(bell, launch, reply) {
                    Answer::Returned => {}
                    Answer::Next => return, // the batch's next job runs: its end comes the same way
                    Answer::Failed => answered = false,
                }
            }
        }
        if answered {
            bell.dstate.store(D_ANSWERED, Ordering::SeqCst);
        } else {
            bell.dev.store(pending, Ordering::SeqCst);
            bell.dstate.store(D_FAILED, Ordering::SeqCst);
        }
        bell.waiting.store(false, Ordering::SeqCst);
        if !answered || bell.want_wake.get().is_some_and(|f| f.load(Ordering::SeqCst)) {
            let _ = xous::try_send_message(bell.wake_cid(), xous::Message::new_scalar(WAKE_ID, WAKE_END, 0, 0, 0));
        }
        return;
    }
    let _ = xous::try_send_message(
        bell.cid,
        xous::Message::new_scalar(BELL_DONE, pending, bell.gen.load(Ordering::SeqCst), 0, 0),
    );
}

/// In the handler: answer a finished detached X25519 (or run of a batch's X25519s). Read its
/// results from the window, start the pinned wipe program on that window (the engine clears the
/// registers on its own; the line is masked, so it raises no interrupt), put the results into the
/// reply archive the server wrote in the client's page, and return the page to the client
/// (ReturnMemory may be called from an interrupt handler: the client becomes ready, nothing
/// switches here), or start the batch's next run.
fn answer_detached(bell: &Bell, launch: &engine25519_driver::Launch, reply: &DetachedReply) -> Answer {
    use zeroize::Zeroize;
    // Safety: both pointers are this process's mappings of the engine (they stay mapped)
    let mut drv = Driver::new(unsafe { MmioBus::new(bell.csr, bell.mem) });
    let first = bell.dnext.load(Ordering::SeqCst);
    let n = bell.drun.load(Ordering::SeqCst);
    let prog = bell.batch.get();
    for j in 0..n {
        let reg = reply.batch.as_ref().map_or(reply.out_reg, |b| b.result_reg(prog, n, j, reply.out_reg));
        let mut words = drv.read_reg_words(launch.window, reg).unwrap_or([0; isa::REG_WORDS]);
        let dst = (reply.page + reply.result_at + 32 * (first + j)) as *mut u32;
        for (i, w) in words.iter().enumerate() {
            // Safety: result_at + 32 * count <= page_len and word-aligned (start_detached); the
            // page is lent to us. The result's bytes are little-endian words.
            unsafe { dst.add(i).write_volatile(w.to_le()) };
        }
        words.zeroize();
    }
    if let Some(w) = reply.wipe {
        let _ = drv.start(engine25519_driver::Launch { window: w.window, mpstart: w.mpstart, mplen: w.mplen });
    }
    if let Some(b) = &reply.batch {
        if first + n < b.count {
            return start_next(bell, &mut drv, launch, reply, b, first + n);
        }
    }
    let sender = xous::MessageSender::from_usize(reply.sender);
    let r = match unsafe { xous::MemoryRange::new(reply.page, reply.page_len) } {
        Ok(range) => xous::return_memory_offset_valid(
            sender,
            range,
            xous::MemorySize::new(reply.offset),
            xous::MemorySize::new(reply.valid),
        ),
        Err(e) => Err(e),
    };
    if r.is_err() {
        bell.reply_failed.store(true, Ordering::SeqCst);
    }
    Answer::Returned
}

/// What the handler did with a detached job that finished.
enum Answer {
    /// the client's page went back (the last or only job)
    Returned,
    /// the batch's next run was started
    Next,
    /// the batch's next run could not be started (the window's wipe did not end): the job is
    /// left to the server's thread, which fails it
    Failed,
}

/// Jobs `first + from .. first + n` of a detached batch's run of `n` jobs from `first` into the
/// window: each scalar and u goes from the lent page into its register (`DetachedBatch::
/// operand_regs`) and is wiped in the page; then the run's job counter, if it has one. False: a
/// register write failed.
#[allow(clippy::too_many_arguments)]
fn load_run<B: engine25519_driver::Bus>(
    drv: &mut Driver<B>,
    prog: Option<&crate::backend::BatchRun>,
    window: usize,
    reply: &DetachedReply,
    b: &crate::backend::DetachedBatch,
    first: usize,
    from: usize,
    n: usize,
) -> bool {
    use zeroize::Zeroize;
    for j in from..n {
        let (kr, ur) = b.operand_regs(prog, n, j);
        for (at, reg) in [(b.scalars_at, kr), (b.us_at, ur)] {
            let src = (reply.page + at + 32 * (first + j)) as *mut u32;
            let mut v = [0u32; isa::REG_WORDS];
            for (k, w) in v.iter_mut().enumerate() {
                // Safety: the batch's slots lie inside the lent page and are word-aligned
                // (checked by start_detached); the operand's bytes are little-endian words
                *w = u32::from_le(unsafe { src.add(k).read_volatile() });
            }
            let ok = drv.write_reg_words(window, reg, &v).is_ok();
            v.zeroize();
            // Safety: as above
            unsafe { service_ipc::wipe_raw(src as *mut u8, 32) };
            if !ok {
                return false;
            }
        }
    }
    match b.counter(prog, n) {
        // the whole register: the run does not rely on what the window held before
        Some((reg, v)) => drv.write_reg(window, reg, &v).is_ok(),
        None => true,
    }
}

/// In the handler: start the run of a detached batch from job `i` in the same window. The wipe
/// program started after the previous run must end first (a few dozen engine cycles: polled;
/// the window's registers are zero again before new operands go in); then the run's scalars
/// and u go from the lent page into the window (wiped in the page), and its program starts
/// with the line unmasked again: the batch program for two or more jobs, else the X25519
/// program.
fn start_next(
    bell: &Bell,
    drv: &mut Driver<MmioBus>,
    launch: &engine25519_driver::Launch,
    reply: &DetachedReply,
    b: &crate::backend::DetachedBatch,
    i: usize,
) -> Answer {
    if reply.wipe.is_none() || !(0..WIPE_POLLS).any(|_| !drv.status().running) {
        return Answer::Failed;
    }
    let prog = bell.batch.get();
    let n = b.run_len(prog, i);
    if !load_run(drv, prog, launch.window, reply, b, i, 0, n) {
        return Answer::Failed;
    }
    bell.dnext.store(i, Ordering::SeqCst);
    bell.drun.store(n, Ordering::SeqCst);
    drv.bus().csr_write(csr::ev_enable::OFFSET, EVENTS as u32);
    let run = run_launch(b, prog, n, launch);
    if drv.start(run).is_err() {
        return Answer::Failed;
    }
    Answer::Next
}

/// The driver's launch of a run of `n` jobs (`DetachedBatch::launch`) in `launch`'s window.
fn run_launch(
    b: &crate::backend::DetachedBatch,
    prog: Option<&crate::backend::BatchRun>,
    n: usize,
    launch: &engine25519_driver::Launch,
) -> engine25519_driver::Launch {
    let x = Launch { window: launch.window, mpstart: launch.mpstart, mplen: launch.mplen };
    let l = b.launch(prog, n, x);
    engine25519_driver::Launch { window: l.window, mpstart: l.mpstart, mplen: l.mplen }
}

/// STATUS polls the handler waits for the window wipe between two jobs of a batch (it takes a
/// few dozen engine cycles: a few polls).
const WIPE_POLLS: u32 = 100_000;

impl Bell {
    /// The connection on which a detached job wakes a server thread.
    fn wake_cid(&self) -> xous::CID {
        match self.wake.load(Ordering::SeqCst) {
            0 => self.cid,
            c => c as xous::CID,
        }
    }
}

/// The ticker thread: while jobs run, a tick every TICK_MS to the waiting job (if any); after a
/// tick with no job since the previous one it blocks until the next job wakes it, so an idle
/// engine costs no timer traffic and back-to-back jobs pay no wake-up each.
fn ticker(bell: &'static Bell, wake: xous::SID) {
    loop {
        let _ = xous::receive_message(wake);
        loop {
            std::thread::sleep(std::time::Duration::from_millis(TICK_MS));
            if bell.waiting.load(Ordering::SeqCst) {
                let _ = if bell.dstate.load(Ordering::SeqCst) == D_ARMED {
                    // a detached job: no thread waits on the doorbell; a receive thread settles it
                    xous::try_send_message(bell.wake_cid(), xous::Message::new_scalar(WAKE_ID, WAKE_TICK, 0, 0, 0))
                } else {
                    xous::try_send_message(
                        bell.cid,
                        xous::Message::new_scalar(BELL_TICK, bell.gen.load(Ordering::SeqCst), 0, 0, 0),
                    )
                };
                continue;
            }
            if bell.ticker.compare_exchange(TICKER_ACTIVE, TICKER_QUIET, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                continue;
            }
            if bell.ticker.compare_exchange(TICKER_QUIET, TICKER_IDLE, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                break;
            }
        }
    }
}

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
    /// the CSR page and the memory window as mapped (the interrupt handler's view of them)
    csr_ptr: *mut u32,
    mem_ptr: *mut u32,
    /// ticks seen by the detached job
    dticks: u64,
    /// the detached job's cycle budget, in ticks, and the budget in cycles it was computed for
    dlimit_ticks: u64,
    dlimit_for: u64,
    /// completion by interrupt (`enable_interrupt`); None: STATUS is polled
    irq: Option<IrqWait>,
    /// MPRESUME reads the paused mpc (`self_test` pauses its first job to see): a paused job
    /// can be resumed after others ran. False on the shipped engine (MPRESUME undriven,
    /// docs/reference-system.md defect 2): then a job is paused only for a suspend (and
    /// restarted from its inputs afterwards by the executor); otherwise each runs to its end
    resumable: bool,
    /// the executor's "a suspend is pending" (`EngineBackend::suspend_flag`)
    suspend_pending: Option<std::sync::Arc<AtomicBool>>,
    /// the executor's wake flag (`EngineBackend::wake_flag`), handed to the interrupt handler
    wake_flag: Option<std::sync::Arc<AtomicBool>>,
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
        let mem_range = xous::map_memory(xous::MemoryAddress::new(mem::BASE as usize), None, mem::SIZE as usize, flags)
            .map_err(|e| format!("hw backend: cannot map engine memory window at {:#x}: {:?}", mem::BASE, e))?;
        // Safety: both ranges were just mapped for this process (sizes as above) and stay mapped.
        let bus = unsafe { MmioBus::new(csr_range.as_mut_ptr() as *mut u32, mem_range.as_mut_ptr() as *mut u32) };
        Ok(HwEngine {
            drv: Driver::new(bus),
            probe: bus,
            eng_clk_hz: isa.info().eng_clk_hz,
            cycles_per_poll: 1 << CPP_FRAC,
            polls_per_cycle: 1 << CPP_FRAC,
            yield_every: u64::MAX,
            failed: None,
            csr_ptr: csr_range.as_mut_ptr() as *mut u32,
            mem_ptr: mem_range.as_mut_ptr() as *mut u32,
            dticks: 0,
            dlimit_ticks: 0,
            dlimit_for: u64::MAX,
            irq: None,
            resumable: true,
            suspend_pending: None,
            wake_flag: None,
        })
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
            for round in 0..2 {
                self.drv.write_reg(0, p.scalar_reg, &k).map_err(|e| format!("write_reg: {e}"))?;
                self.drv.write_reg(0, p.u_reg, &u).map_err(|e| format!("write_reg: {e}"))?;
                self.drv
                    .start(engine25519_driver::Launch { window: 0, mpstart: 0, mplen: p.words.len() })
                    .map_err(|e| format!("start: {e}"))?;
                if round == 0 {
                    // pause the first run mid-ladder: does MPRESUME read the paused mpc?
                    // (released at once: the job continues where it stopped on either engine)
                    let _ = self.spin(RESUME_PROBE_POLLS, u64::MAX);
                    if let Ok(Paused::At { mpc }) = self.drv.pause(PAUSE_POLLS) {
                        self.resumable = self.drv.mpresume() == mpc;
                        self.drv.unpause();
                    }
                }
                let (stop, n) = self.spin(KAT_MAX_POLLS, u64::MAX);
                match stop {
                    Some(Stop::Finished) => {}
                    Some(Stop::Illegal { mpc }) => {
                        return Err(format!("the engine halted at mpc {mpc} (illegal instruction)"))
                    }
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
        let p =
            engine25519_core::programs::get("field_add", Isa::V2).ok_or("hw backend: no field_add program for v2")?;
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

    /// Claim the engine's interrupt (IRQ 18, spec `csr.irq`) and start the ticker thread: from
    /// now on a job's completion is awaited in the kernel (the thread blocks on a private
    /// server that the interrupt handler notifies), not polled. On failure the backend keeps
    /// polling and the error says why.
    pub fn enable_interrupt(&mut self) -> Result<(), String> {
        let sid = xous::create_server().map_err(|e| format!("hw backend: doorbell server: {e:?}"))?;
        let cid = xous::connect(sid).map_err(|e| format!("hw backend: doorbell connection: {e:?}"))?;
        let wake = xous::create_server().map_err(|e| format!("hw backend: ticker server: {e:?}"))?;
        let ticker_cid = xous::connect(wake).map_err(|e| format!("hw backend: ticker connection: {e:?}"))?;
        let bell: &'static Bell = Box::leak(Box::new(Bell {
            csr: self.csr_ptr,
            cid,
            gen: AtomicUsize::new(0),
            waiting: AtomicBool::new(false),
            ticker: AtomicU8::new(TICKER_IDLE),
            ticker_cid,
            mem: self.mem_ptr,
            dstate: AtomicU8::new(D_IDLE),
            want_wake: std::sync::OnceLock::new(),
            dev: AtomicUsize::new(0),
            reply_failed: AtomicBool::new(false),
            detached: UnsafeCell::new(None),
            wake: AtomicUsize::new(0),
            dnext: AtomicUsize::new(0),
            drun: AtomicUsize::new(1),
            batch: std::sync::OnceLock::new(),
        }));
        // events latched before (the start-up jobs ran with the interrupt masked)
        self.drv.bus().csr_write(csr::ev_pending::OFFSET, EVENTS as u32);
        xous::claim_interrupt(isa::csr::IRQ as usize, engine_irq, bell as *const Bell as *mut usize)
            .map_err(|e| format!("hw backend: cannot claim the engine's interrupt {}: {e:?}", isa::csr::IRQ))?;
        std::thread::Builder::new()
            .name("engine25519-ticker".into())
            .spawn(move || ticker(bell, wake))
            .map_err(|e| format!("hw backend: ticker thread: {e}"))?;
        self.irq = Some(IrqWait { bell, sid, lost: 0, tick_cycles: self.tick_cycles().max(1) });
        Ok(())
    }

    /// Whether a paused job can be resumed after other jobs ran (MPRESUME driven).
    pub fn resumable(&self) -> bool {
        self.resumable
    }

    fn suspend_pending(&self) -> bool {
        self.suspend_pending.as_ref().is_some_and(|f| f.load(Ordering::SeqCst))
    }

    /// Engine cycles in one tick of the ticker.
    fn tick_cycles(&self) -> u64 {
        self.eng_clk_hz / 1000 * TICK_MS
    }

    /// One job (or slice) with completion by interrupt. The thread blocks in the kernel until
    /// the handler reports the job's end, or a tick of the ticker finds that the slice
    /// (`budget`) or the job's cycle budget (`max_cycles`) has run out in wall time (then the
    /// engine is paused), or that the engine has stopped although no interrupt came (a lost
    /// interrupt: the job fails, `RunEnd::Lost`, which says so; the next job is tried normally).
    /// Cycles reported: full ticks that passed while waiting (a lower bound of the engine's
    /// time at the tick's resolution; 0 for a job shorter than a tick).
    fn run_irq(
        &mut self,
        launch: engine25519_driver::Launch,
        resume_at: Option<u32>,
        budget: u64,
        max_cycles: u64,
    ) -> RunEnd {
        let (bell, sid, tick) = {
            let w = self.irq.as_ref().expect("interrupt claimed");
            (w.bell, w.sid, w.tick_cycles)
        };
        let gen = bell.gen.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
        self.drv.bus().csr_write(csr::ev_enable::OFFSET, EVENTS as u32);
        bell.waiting.store(true, Ordering::SeqCst);
        if bell.ticker.swap(TICKER_ACTIVE, Ordering::SeqCst) == TICKER_IDLE {
            let _ = xous::try_send_message(bell.ticker_cid, xous::Message::new_scalar(0, 0, 0, 0, 0));
        }
        let started = match resume_at {
            None => self.drv.start(launch),
            Some(mpc) => self.drv.resume(launch, mpc),
        };
        if let Err(e) = started {
            bell.waiting.store(false, Ordering::SeqCst);
            return RunEnd::Fault { cycles: 0, reason: format!("hw backend: {e}") };
        }
        let mut ticks = 0u64;
        enum Wake {
            Done(usize),
            Slice,
            Overdue,
            Lost,
            Failed(String),
        }
        let wake = loop {
            let env = match xous::receive_message(sid) {
                Ok(env) => env,
                Err(e) => break Wake::Failed(format!("hw backend: receive on the doorbell: {e:?}")),
            };
            let Some(m) = env.body.scalar_message() else { continue };
            match m.id {
                BELL_DONE if m.arg2 == gen => {
                    if m.arg1 & EVENTS != 0 || !self.drv.status().running {
                        break Wake::Done(m.arg1);
                    }
                    // a spurious call (no event, still running): keep waiting
                }
                BELL_TICK if m.arg1 == gen => {
                    // the first tick may come at once (its phase is the ticker's): after n
                    // ticks, n - 1 full ticks have surely passed
                    ticks += 1;
                    let passed = ticks - 1;
                    let slice_ticks = budget.div_ceil(tick);
                    let limit_ticks = max_cycles.div_ceil(tick) + 1;
                    if passed >= 1 && !self.drv.status().running {
                        // stopped, yet no interrupt for at least one full tick, unless its
                        // message is queued behind this tick (the thread ran late)
                        break match Self::take_done(sid, gen) {
                            Some(ev) => Wake::Done(ev),
                            None => Wake::Lost,
                        };
                    }
                    if passed >= limit_ticks {
                        break Wake::Overdue;
                    }
                    // an engine that cannot resume is paused only for a suspend (the executor
                    // restarts the job from its inputs after the resume)
                    if passed >= slice_ticks && (self.resumable || self.suspend_pending()) {
                        break Wake::Slice;
                    }
                }
                _ => {} // a message about an earlier job
            }
        };
        bell.waiting.store(false, Ordering::SeqCst);
        let cycles = ticks.saturating_sub(1).saturating_mul(tick);
        match wake {
            Wake::Done(ev) => {
                if ev & EVENTS == 0 {
                    // the handler saw no event (it masks the line only when it acknowledges one)
                    self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
                }
                let stop = self.stop_from(ev);
                self.end(stop, cycles)
            }
            Wake::Failed(reason) => {
                self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
                let _ = self.drv.pause(PAUSE_POLLS);
                RunEnd::Fault { cycles, reason }
            }
            Wake::Lost => {
                self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
                let pending = self.drv.bus().csr_read(csr::ev_pending::OFFSET);
                self.drv.bus().csr_write(csr::ev_pending::OFFSET, pending & EVENTS as u32);
                let w = self.irq.as_mut().expect("interrupt claimed");
                w.lost += 1;
                RunEnd::Lost {
                    cycles,
                    reason: format!(
                        "hw backend: the engine stopped (EV_PENDING {:#x}) but its interrupt {} did not arrive within {} ms; job failed ({} lost so far)",
                        pending,
                        isa::csr::IRQ,
                        ticks.saturating_sub(1) * TICK_MS,
                        w.lost
                    ),
                }
            }
            Wake::Slice | Wake::Overdue => {
                // mask the line while pausing: an end seen here is read from EV_PENDING, or
                // from the handler's message if it ran first
                self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
                let paused = self.drv.pause(PAUSE_POLLS);
                let handled = Self::take_done(sid, gen);
                match (paused, handled) {
                    (_, Some(ev)) if ev & EVENTS != 0 => {
                        let stop = self.stop_from(ev);
                        self.end(stop, cycles)
                    }
                    (Ok(Paused::At { mpc }), _) => match wake {
                        Wake::Slice => RunEnd::Paused { cycles, mpc },
                        _ => RunEnd::Runaway { cycles },
                    },
                    (Ok(Paused::Ended(stop)), _) => self.end(stop, cycles),
                    (Err(e), _) => RunEnd::Fault {
                        cycles,
                        reason: format!("hw backend: pause after {} ms: {e}", ticks.saturating_sub(1) * TICK_MS),
                    },
                }
            }
        }
    }

    /// The handler's message for job `gen` if one is queued (others are dropped).
    fn take_done(sid: xous::SID, gen: usize) -> Option<usize> {
        let mut found = None;
        while let Ok(Some(env)) = xous::try_receive_message(sid) {
            if let Some(m) = env.body.scalar_message() {
                if m.id == BELL_DONE && m.arg2 == gen {
                    found = Some(m.arg1);
                }
            }
        }
        found
    }

    /// How a job ended, from the EV_PENDING bits the handler saw.
    fn stop_from(&mut self, ev: usize) -> Stop {
        if csr::ev_pending::ILLEGAL_OPCODE.get(ev as u32) != 0 {
            Stop::Illegal { mpc: self.drv.status().mpc }
        } else {
            Stop::Finished
        }
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
    fn run(&mut self, l: Launch, resume_at: Option<u32>, budget: u64, max_cycles: u64) -> RunEnd {
        let launch = engine25519_driver::Launch { window: l.window, mpstart: l.mpstart, mplen: l.mplen };
        if self.irq.is_some() && max_cycles > POLL_UP_TO_CYCLES {
            return self.run_irq(launch, resume_at, budget, max_cycles);
        }
        // polling: jobs whose whole budget is shorter than an interrupt's round trip (the
        // executor's window wipe), or every job when the interrupt could not be claimed; the
        // executor enforces max_cycles from the returned (poll-estimated) cycles
        let started = match resume_at {
            None => self.drv.start(launch),
            Some(mpc) => self.drv.resume(launch, mpc),
        };
        if let Err(e) = started {
            return RunEnd::Fault { cycles: 0, reason: format!("hw backend: {e}") };
        }
        // polled, an engine that cannot resume is not paused: the job runs to its end (or budget)
        let budget = if self.resumable { budget } else { max_cycles };
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
    fn can_resume(&self) -> bool {
        self.resumable
    }
    fn can_detach(&self) -> bool {
        self.irq.is_some()
    }
    fn start_detached(&mut self, l: Launch, reply: DetachedReply) -> bool {
        let Some(w) = self.irq.as_ref() else { return false };
        let (bell, tick) = (w.bell, w.tick_cycles);
        let jobs = reply.batch.as_ref().map_or(1, |b| b.count);
        // inside the page, and word-aligned (the handler and `load_run` move words)
        let fits = |at: usize| {
            at.checked_add(32 * jobs).is_some_and(|end| end <= reply.page_len) && (reply.page + at).is_multiple_of(4)
        };
        if reply.page == 0
            || !fits(reply.result_at)
            || reply.batch.as_ref().is_some_and(|b| b.count < 2 || !fits(b.scalars_at) || !fits(b.us_at))
            || bell.dstate.load(Ordering::SeqCst) != D_IDLE
        {
            return false;
        }
        bell.dnext.store(0, Ordering::SeqCst);
        // a batch's first run: one job (the executor loaded it), or up to three in one run of
        // the batch program (the others' operands and the counter go in here)
        let prog = bell.batch.get();
        let n = reply.batch.as_ref().map_or(1, |b| b.run_len(prog, 0));
        if let Some(b) = reply.batch.as_ref().filter(|_| n > 1) {
            if !load_run(&mut self.drv, prog, l.window, &reply, b, 0, 1, n) {
                return false;
            }
        }
        bell.drun.store(n, Ordering::SeqCst);
        if let Some(f) = self.wake_flag.as_ref().filter(|_| bell.want_wake.get().is_none()) {
            let _ = bell.want_wake.set(f.clone());
        }
        let launch = engine25519_driver::Launch { window: l.window, mpstart: l.mpstart, mplen: l.mplen };
        // Safety: the handler reads it only while the state is D_ARMED (set below)
        unsafe { *bell.detached.get() = Some((launch, reply)) };
        bell.wake.store(reply.wake_cid as usize, Ordering::SeqCst);
        bell.dev.store(0, Ordering::SeqCst);
        self.dticks = 0;
        if self.dlimit_for != reply.max_cycles {
            // (a 64-bit division is a library call on RV32: once per budget, not per job)
            self.dlimit_for = reply.max_cycles;
            self.dlimit_ticks = reply.max_cycles.div_ceil(tick) + 1;
        }
        bell.gen.fetch_add(1, Ordering::SeqCst); // doorbell messages of earlier jobs are stale
        bell.dstate.store(D_ARMED, Ordering::SeqCst);
        self.drv.bus().csr_write(csr::ev_enable::OFFSET, EVENTS as u32);
        bell.waiting.store(true, Ordering::SeqCst);
        let run = reply.batch.as_ref().map_or(launch, |b| run_launch(b, prog, n, &launch));
        if self.drv.start(run).is_err() {
            self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
            bell.waiting.store(false, Ordering::SeqCst);
            bell.dstate.store(D_IDLE, Ordering::SeqCst);
            return false;
        }
        // the ticker is woken after the start (a message to it may switch threads: the
        // engine runs meanwhile); its first tick is a full tick away either way
        if bell.ticker.swap(TICKER_ACTIVE, Ordering::SeqCst) == TICKER_IDLE {
            let _ = xous::try_send_message(bell.ticker_cid, xous::Message::new_scalar(0, 0, 0, 0, 0));
        }
        true
    }
    fn poll_detached(&mut self, tick: bool) -> Detached {
        let Some(w) = self.irq.as_ref() else {
            return Detached::Unanswered(RunEnd::Fault {
                cycles: 0,
                reason: "hw backend: no detached job (no interrupt)".into(),
            });
        };
        let (bell, tick_cycles) = (w.bell, w.tick_cycles);
        match bell.dstate.load(Ordering::SeqCst) {
            D_ANSWERED => {
                bell.dstate.store(D_IDLE, Ordering::SeqCst);
                if bell.reply_failed.swap(false, Ordering::SeqCst) {
                    log::error!("hw backend: the kernel refused the interrupt handler's reply to a detached X25519");
                }
                // the handler started the wipe program; it takes a few dozen engine cycles
                // Safety: the handler is done with it (D_ANSWERED); by reference, no copy
                let wipe = unsafe { (*bell.detached.get()).as_ref() }.and_then(|(_, r)| r.wipe);
                let wiped = wipe.is_some() && (0..PAUSE_POLLS).any(|_| !self.drv.status().running);
                let pending = self.drv.bus().csr_read(csr::ev_pending::OFFSET);
                self.drv.bus().csr_write(csr::ev_pending::OFFSET, pending & EVENTS as u32);
                Detached::Answered { wiped }
            }
            D_FAILED => {
                bell.dstate.store(D_IDLE, Ordering::SeqCst);
                self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
                let stop = self.stop_from(bell.dev.load(Ordering::SeqCst));
                Detached::Unanswered(self.end(stop, self.dticks.saturating_sub(1) * tick_cycles))
            }
            D_ARMED => {
                if !tick {
                    return Detached::Running;
                }
                // as in run_irq: after n ticks, n - 1 full ticks have surely passed
                self.dticks += 1;
                let passed = self.dticks - 1;
                let cycles = passed * tick_cycles;
                let lost = passed >= 1 && !self.drv.status().running;
                if !lost && passed < self.dlimit_ticks {
                    return Detached::Running;
                }
                // take the job back from the handler (it answers only while the job is armed)
                if bell.dstate.compare_exchange(D_ARMED, D_IDLE, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                    return self.poll_detached(false);
                }
                bell.waiting.store(false, Ordering::SeqCst);
                self.drv.bus().csr_write(csr::ev_enable::OFFSET, 0);
                if lost {
                    let pending = self.drv.bus().csr_read(csr::ev_pending::OFFSET);
                    self.drv.bus().csr_write(csr::ev_pending::OFFSET, pending & EVENTS as u32);
                    let w = self.irq.as_mut().expect("interrupt claimed");
                    w.lost += 1;
                    Detached::Unanswered(RunEnd::Lost {
                        cycles,
                        reason: format!(
                            "hw backend: the engine stopped (EV_PENDING {:#x}) but its interrupt {} did not arrive within {} ms; job failed ({} lost so far)",
                            pending,
                            isa::csr::IRQ,
                            passed * TICK_MS,
                            w.lost
                        ),
                    })
                } else {
                    match self.drv.pause(PAUSE_POLLS) {
                        Ok(Paused::Ended(stop)) => Detached::Unanswered(self.end(stop, cycles)),
                        Ok(Paused::At { .. }) => Detached::Unanswered(RunEnd::Runaway { cycles }),
                        Err(e) => Detached::Unanswered(RunEnd::Fault {
                            cycles,
                            reason: format!("hw backend: pause after {} ms: {e}", passed * TICK_MS),
                        }),
                    }
                }
            }
            _ => Detached::Unanswered(RunEnd::Fault { cycles: 0, reason: "hw backend: no detached job".into() }),
        }
    }
    fn wake_flag(&mut self, flag: std::sync::Arc<AtomicBool>) {
        self.wake_flag = Some(flag);
    }
    fn batch_program(&mut self, program: crate::backend::BatchRun) {
        match self.irq.as_ref() {
            // the interrupt handler's copy (set once: the program stays pinned)
            Some(w) => {
                let _ = w.bell.batch.set(program);
            }
            None => log::info!("hw backend: no interrupt, so no detached batch: the batch program is not used"),
        }
    }
    fn suspend_flag(&mut self, flag: std::sync::Arc<AtomicBool>) {
        self.suspend_pending = Some(flag);
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
