//! The executor: the shared job state (fair queue, windows, microcode cache, counters) and the
//! single engine worker that runs jobs on the backend. No Xous dependency: replies are closures,
//! so unit tests drive it directly and the server wraps Xous envelopes in them.
//!
//! Threads: `submit_*`/`load_program`/`suspend`/`resume`/`stats` are short critical sections that
//! never wait for the engine. The backend is driven by whichever thread holds the engine token
//! (`drive`): in `Driver::Thread` mode a dedicated worker thread, in `Driver::Callers` mode the
//! server's receive threads themselves (a thread that queued a job runs it at once if the engine
//! is idle, which saves a thread wake-up per request; while one thread holds the engine the other
//! keeps receiving, so the server never stops answering other clients).
//! A job runs in one backend call when nobody else waits; otherwise in slices (`slice` cycles)
//! so that a Suspend lands quickly. After `quantum` cycles a job is preempted at an instruction
//! boundary if other clients are waiting and resumes later in its own window.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use zeroize::{Zeroize, Zeroizing};

use crate::api::{BackendId, StatsMsg, Status, API_VERSION, MAGIC, NUM_REGS};
use crate::backend::{
    software_x25519, BatchRun, Detached, DetachedReply, EngineBackend, Launch, Reg, RunEnd, Snapshot,
};
use crate::programs::X25519Program;
use crate::scheduler::{Entry, Refused, Scheduler, WindowReq};
use crate::ucode::{LoadError, Ucode};

/// Who runs jobs on the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// a dedicated worker thread started by `Executor::start`
    Thread,
    /// the threads that call `drive()` (after each submission); the server runs two receive
    /// threads in this mode
    Callers,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// who runs jobs (see [`Driver`])
    pub driver: Driver,
    /// engine cycles a job may run before it is preempted (if others wait)
    pub quantum: u64,
    /// cycles per backend `run` call while other jobs wait or a Suspend is pending
    /// (granularity of suspend / preemption checks); alone, a job runs up to `quantum` per call
    pub slice: u64,
    /// cycle budget of a custom job that does not give one
    pub default_max_cycles: u64,
    /// upper bound of any job's cycle budget
    pub max_cycles_limit: u64,
    /// cycle budget of the X25519 program
    pub x25519_max_cycles: u64,
    /// pacing clock in Hz (0 = off): completions are delayed to cycles / pace_hz of engine time
    pub pace_hz: u64,
    pub global_cap: usize,
    pub per_client_cap: usize,
    /// serve X25519 from x25519-dalek when the engine is unavailable
    pub software_fallback: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            driver: Driver::Thread,
            quantum: 500_000,
            slice: 65_536,
            default_max_cycles: 20_000_000,
            max_cycles_limit: 200_000_000,
            x25519_max_cycles: 2_000_000,
            pace_hz: 0,
            global_cap: 64,
            per_client_cap: 8,
            software_fallback: true,
        }
    }
}

/// The result handed to a reply closure.
pub struct Outcome {
    pub status: Status,
    pub backend: BackendId,
    pub window: u32,
    pub cycles: u64,
    /// X25519: result u; custom job: unused
    pub result: [u8; 32],
    /// custom job: registers after the job
    pub regs: Option<Box<[Reg; NUM_REGS]>>,
    /// a detached X25519 that the backend has already answered (`Executor::x25519_now`): the
    /// reply closure must release its request without answering again
    pub answered: bool,
}

impl Outcome {
    pub fn error(status: Status, backend: BackendId) -> Self {
        Outcome { status, backend, window: 0, cycles: 0, result: [0; 32], regs: None, answered: false }
    }
}

pub type ReplyFn = Box<dyn FnOnce(Outcome) + Send>;
/// A finished job: its reply (None for one `x25519_now` answers itself), the outcome and when
/// to deliver it (the pacing deadline).
type Done = (Option<ReplyFn>, Outcome, Option<Instant>);
pub type ScalarReplyFn = Box<dyn FnOnce(Status, usize) + Send>;
/// The reply of a batch (`Executor::submit_x25519_batch`): its status and every job's outcome.
pub type BatchReplyFn = Box<dyn FnOnce(Status, Vec<Outcome>) + Send>;

/// A batch whose jobs are out: the outcomes so far and how many are still to come.
struct Batch {
    outs: Vec<Option<Outcome>>,
    left: usize,
    /// the first job refused at submission (it and the jobs after it never ran)
    refused: Option<Status>,
    reply: Option<BatchReplyFn>,
}

impl Batch {
    /// `k` jobs from `i` on have ended (`o`: the outcome of job `i`) or were refused (`refused`);
    /// the last one answers the batch (outside the lock).
    fn arrived(b: &Mutex<Batch>, i: usize, k: usize, o: Option<Outcome>, refused: Option<Status>) {
        let mut g = b.lock().unwrap();
        if let Some(o) = o {
            g.outs[i] = Some(o);
        }
        if let Some(s) = refused {
            g.refused.get_or_insert(s);
        }
        g.left -= k;
        if g.left > 0 {
            return;
        }
        let reply = g.reply.take();
        let refused = g.refused;
        let mut outs: Vec<Outcome> = std::mem::take(&mut g.outs).into_iter().flatten().collect();
        drop(g);
        let first_err = outs.iter().map(|o| o.status).find(|s| *s != Status::Ok);
        let status = first_err.or(refused).unwrap_or(Status::Ok);
        if status != Status::Ok {
            for o in outs.iter_mut() {
                o.result.zeroize();
            }
        }
        if let Some(reply) = reply {
            reply(status, outs);
        }
    }
}

enum Work {
    X25519 { scalar: Zeroizing<[u8; 32]>, u: [u8; 32] },
    Custom { regs: Box<Zeroizing<[Reg; NUM_REGS]>> },
}

pub struct Job {
    work: Work,
    /// X25519s this job stands for: 1, or the size of a detached batch (`x25519_batch_now`)
    count: u32,
    handle: u32,
    launch: Launch,
    max_cycles: u64,
    cycles: u64,
    resume_at: Option<u32>,
    reply: Option<ReplyFn>,
}

impl Counters {
    fn add_client(&mut self, client: u32) {
        // clients that call in turn (the chat's two parties) hit the small list, not the set
        if self.recent_clients.contains(&Some(client)) {
            return;
        }
        self.clients.insert(client);
        self.recent_clients.rotate_right(1);
        self.recent_clients[0] = Some(client);
    }
}

#[derive(Default)]
struct Counters {
    jobs: u64,
    cycles: u64,
    fallbacks: u64,
    errors: u64,
    busy: u64,
    resumes: u64,
    /// jobs restarted from their saved inputs (paused for a suspend on an engine that cannot
    /// resume)
    restarts: u64,
    /// X25519 windows wiped over the bus because the engine's wipe program did not finish
    /// (never expected: logged, and the tests require 0)
    bus_wipes: u64,
    /// distinct client PIDs (a BTreeSet: no hashing per request on the device)
    clients: std::collections::BTreeSet<u32>,
    /// the clients last added to `clients` (one of them calling again skips the set)
    recent_clients: [Option<u32>; 4],
}

struct State {
    sched: Scheduler<Job>,
    ucode: Ucode,
    /// microcode writes the worker applies before the next dispatch
    pending_ucode: Vec<(usize, Vec<u32>)>,
    c: Counters,
    suspend_req: Option<ScalarReplyFn>,
    resume_req: Option<ScalarReplyFn>,
    suspended: bool,
    /// a thread holds the engine token (it alone touches `Executor::engine`)
    driving: bool,
    /// bumped by every submission / request (wakes the `Driver::Thread` worker)
    kicks: u64,
    x25519_handle: u32,
    /// Quit requested: new work is refused with BadState
    closed: bool,
}

/// What the thread holding the engine token owns.
struct EngineCtx {
    engine: Box<dyn EngineBackend>,
    /// engine state saved by Suspend
    saved: Option<Snapshot>,
    /// pacing: when the modelled engine becomes idle
    busy_until: Instant,
    /// windows that may hold something other than zeros (bit per window): operands were
    /// written and the job's end has not wiped it yet, or nothing is known (start-up, a parked
    /// job that never finished). A job's operands go into a window only after it is wiped.
    dirty: u32,
    /// an X25519 the backend runs and answers on its own (`x25519_now` with `detach`): it holds
    /// the engine token until a thread settles it (`settle`)
    detached: Option<Entry<Job>>,
}

pub struct Executor {
    st: Mutex<State>,
    /// wakes the `Driver::Thread` worker
    cv: Condvar,
    /// locked only by the token holder (lock order: engine, then st)
    engine: Mutex<EngineCtx>,
    cfg: Config,
    backend: BackendId,
    unavailable: Option<String>,
    x25519: X25519Program,
    /// where the pinned wipe program (`X25519Program::wipe`) sits in microcode RAM
    wipe_at: Option<(usize, usize)>,
    /// a suspend is pending (shared with the backend, `EngineBackend::suspend_flag`)
    suspend_pending: Arc<std::sync::atomic::AtomicBool>,
    /// the backend can resume a paused job (`EngineBackend::can_resume`)
    can_resume: bool,
    /// work was submitted or requested since the engine token was last taken (shared with the
    /// backend, `EngineBackend::wake_flag`: a detached job's end then wakes a server thread).
    /// Set by `kick` and cleared by `dispatch_now`, both under the `st` lock
    want_wake: Arc<std::sync::atomic::AtomicBool>,
}

/// How [`Executor::take_over`] left the engine (the engine context still held).
enum TakeOver<'a> {
    /// the new job runs detached (its record in `ctx.detached`, its reply still to attach)
    Started { ctx: std::sync::MutexGuard<'a, EngineCtx>, prev: Done },
    /// taken over, but the backend did not start it: run `e` the usual way
    NotStarted { e: Entry<Job>, ctx: std::sync::MutexGuard<'a, EngineCtx>, prev: Done },
}

/// Engine cycles the wipe program may take (it takes a few dozen).
const WIPE_BUDGET: u64 = 10_000;

impl Executor {
    /// Create the executor for `engine` (whose availability is probed once) and, in
    /// `Driver::Thread` mode, start its worker.
    pub fn start(mut engine: Box<dyn EngineBackend>, x25519: X25519Program, cfg: Config) -> Arc<Executor> {
        let unavailable = engine.available().err();
        let suspend_pending = Arc::new(std::sync::atomic::AtomicBool::new(false));
        engine.suspend_flag(suspend_pending.clone());
        let want_wake = Arc::new(std::sync::atomic::AtomicBool::new(false));
        engine.wake_flag(want_wake.clone());
        let can_resume = engine.can_resume();
        let backend = engine.id();
        let mut ucode = Ucode::new();
        let mut pending = Vec::new();
        let mut x25519_handle = 0;
        let mut wipe_at = None;
        if unavailable.is_none() {
            let l = ucode.load(&x25519.words, true).expect("X25519 program fits the microcode RAM");
            x25519_handle = l.handle;
            pending.push((l.start, x25519.words.clone()));
            if let Ok(w) = ucode.load(&x25519.wipe, true) {
                pending.push((w.start, x25519.wipe.clone()));
                wipe_at = Some((w.start, x25519.wipe.len()));
            }
            // the batch program (v2), pinned too; the backend is told where (a detached batch
            // then runs up to three jobs in one run of it)
            if let Some(b) = &x25519.batch {
                if let Ok(l) = ucode.load(&b.words, true) {
                    pending.push((l.start, b.words.clone()));
                    if let Some(run) = Self::batch_run(&x25519, Some((l.start, b.words.len()))) {
                        engine.batch_program(run);
                    }
                }
            }
        }
        let ex = Arc::new(Executor {
            st: Mutex::new(State {
                sched: Scheduler::new(cfg.global_cap, cfg.per_client_cap),
                ucode,
                pending_ucode: pending,
                c: Counters::default(),
                suspend_req: None,
                resume_req: None,
                suspended: false,
                driving: false,
                kicks: 0,
                x25519_handle,
                closed: false,
            }),
            cv: Condvar::new(),
            engine: Mutex::new(EngineCtx {
                engine,
                saved: None,
                busy_until: Instant::now(),
                dirty: u32::MAX,
                detached: None,
            }),
            cfg,
            backend,
            unavailable,
            x25519,
            wipe_at,
            suspend_pending,
            can_resume,
            want_wake,
        });
        if ex.unavailable.is_none() && ex.cfg.driver == Driver::Thread {
            let w = ex.clone();
            std::thread::Builder::new()
                .name("engine-worker".into())
                .spawn(move || w.worker())
                .expect("spawn engine worker");
        }
        ex
    }

    pub fn backend(&self) -> BackendId {
        self.backend
    }
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Count an error reply produced outside the executor (malformed message etc.).
    pub fn count_error(&self) {
        self.st.lock().unwrap().c.errors += 1;
    }

    fn refuse(&self, st: &mut State, r: Refused) -> Status {
        st.c.errors += 1;
        match r {
            Refused::Busy => {
                st.c.busy += 1;
                Status::Busy
            }
            Refused::BadWindow => Status::BadWindow,
        }
    }

    /// Queue an X25519. `Ok(())`: `reply` will be called (maybe from the worker thread). `Err`:
    /// refused at once, `reply` was not called.
    pub fn submit_x25519(&self, client: u32, scalar: &[u8; 32], u: &[u8; 32], reply: ReplyFn) -> Result<(), Status> {
        self.x25519_or_back(client, scalar, u, reply).map_err(|(s, _)| s)
    }

    /// Queue an X25519 whose every outcome, a refusal included, goes to `reply` (exactly once):
    /// the server's path (no shared slot for the request needed to answer a refusal).
    pub fn submit_x25519_answering(&self, client: u32, scalar: &[u8; 32], u: &[u8; 32], reply: ReplyFn) {
        if let Err((s, reply)) = self.x25519_or_back(client, scalar, u, reply) {
            reply(Outcome::error(s, self.backend));
        }
    }

    /// [`Self::submit_x25519`] that hands `reply` back with a refusal.
    fn x25519_or_back(
        &self,
        client: u32,
        scalar: &[u8; 32],
        u: &[u8; 32],
        reply: ReplyFn,
    ) -> Result<(), (Status, ReplyFn)> {
        // clamping and the reduction of u are done by the microcode (RFC 7748 semantics in
        // one place); the software fallback does the same inside x25519-dalek
        let k = Zeroizing::new(*scalar);
        let u = *u;
        if self.refuse_closed() {
            return Err((Status::BadState, reply));
        }
        if self.unavailable.is_some() {
            let mut st = self.st.lock().unwrap();
            st.c.add_client(client);
            if !self.cfg.software_fallback {
                st.c.errors += 1;
                return Err((Status::EngineUnavailable, reply));
            }
            st.c.fallbacks += 1;
            drop(st);
            let result = software_x25519(&k, &u);
            reply(Outcome {
                status: Status::Ok,
                backend: BackendId::Software,
                window: 0,
                cycles: 0,
                result,
                regs: None,
                answered: false,
            });
            return Ok(());
        }
        let mut st = self.st.lock().unwrap();
        st.c.add_client(client);
        let handle = st.x25519_handle;
        let Some((start, len)) = st.ucode.acquire(handle) else {
            return Err((Status::Internal, reply));
        };
        let job = Job {
            work: Work::X25519 { scalar: k, u },
            handle,
            launch: Launch { window: 0, mpstart: start, mplen: len },
            max_cycles: self.cfg.x25519_max_cycles,
            cycles: 0,
            resume_at: None,
            reply: Some(reply),
            count: 1,
        };
        match st.sched.submit(client, WindowReq::Any, job) {
            Ok(()) => {
                self.kick(st);
                Ok(())
            }
            Err((r, mut job)) => {
                // refused: the caller answers, the queue never saw the closure
                let reply = job.reply.take().expect("the job was built with its reply");
                st.ucode.release(handle);
                Err((self.refuse(&mut st, r), reply))
            }
        }
    }

    /// Queue a batch of X25519s (`Opcode::X25519Batch`): each job is queued as
    /// [`Self::submit_x25519`] queues one (same program, windows, fairness and limits), and
    /// `reply` is called exactly once, when the last of them has ended, with every job's
    /// outcome in job order and the batch's status: `Ok` if each job succeeded, otherwise the
    /// first error in job order (a job refused at submission, e.g. `Busy`, fails the batch
    /// and the jobs after it are not queued; those queued before it still run, and their
    /// results are wiped). On an error every result in the outcomes is zero. An empty batch or
    /// one of more than `api::MAX_BATCH` jobs is refused with `BadArgument` (counted).
    pub fn submit_x25519_batch(&self, client: u32, jobs: &[(Zeroizing<[u8; 32]>, [u8; 32])], reply: BatchReplyFn) {
        let n = jobs.len();
        if n == 0 || n > crate::api::MAX_BATCH {
            self.count_error();
            return reply(Status::BadArgument, Vec::new());
        }
        let batch = Arc::new(Mutex::new(Batch {
            outs: (0..n).map(|_| None).collect(),
            left: n,
            refused: None,
            reply: Some(reply),
        }));
        for (i, (k, u)) in jobs.iter().enumerate() {
            let b = batch.clone();
            let one: ReplyFn = Box::new(move |o: Outcome| Batch::arrived(&b, i, 1, Some(o), None));
            if let Err((s, _)) = self.x25519_or_back(client, k, u, one) {
                // this job and the ones after it never run
                Batch::arrived(&batch, i, n - i, None, Some(s));
                break;
            }
        }
    }

    /// Load (or find) a program; returns (handle, mpstart).
    pub fn load_program(&self, words: &[u32]) -> Result<(u32, usize), Status> {
        if self.refuse_closed() {
            return Err(Status::BadState);
        }
        if self.unavailable.is_some() {
            self.count_error();
            return Err(Status::EngineUnavailable);
        }
        let mut st = self.st.lock().unwrap();
        match st.ucode.load(words, false) {
            Ok(l) => {
                if l.fresh {
                    st.pending_ucode.push((l.start, words.to_vec()));
                }
                Ok((l.handle, l.start))
            }
            Err(e) => {
                st.c.errors += 1;
                Err(match e {
                    LoadError::BadLength | LoadError::NoSpace => Status::BadProgram,
                })
            }
        }
    }

    /// Queue a custom job on program `handle`.
    pub fn submit_job(
        &self,
        client: u32,
        handle: u32,
        window: WindowReq,
        regs: &[Reg; NUM_REGS],
        max_cycles: u64,
        reply: ReplyFn,
    ) -> Result<(), Status> {
        if self.refuse_closed() {
            return Err(Status::BadState);
        }
        let mut st = self.st.lock().unwrap();
        st.c.add_client(client);
        if self.unavailable.is_some() {
            st.c.errors += 1;
            return Err(Status::EngineUnavailable);
        }
        if let WindowReq::Fixed(w) = window {
            if w >= crate::api::NUM_WINDOWS {
                st.c.errors += 1;
                return Err(Status::BadWindow);
            }
        }
        if max_cycles > self.cfg.max_cycles_limit {
            st.c.errors += 1;
            return Err(Status::BadArgument);
        }
        let Some((start, len)) = st.ucode.acquire(handle) else {
            st.c.errors += 1;
            return Err(Status::UnknownProgram);
        };
        let max_cycles = if max_cycles == 0 { self.cfg.default_max_cycles } else { max_cycles };
        let job = Job {
            work: Work::Custom { regs: Box::new(Zeroizing::new(*regs)) },
            handle,
            launch: Launch { window: 0, mpstart: start, mplen: len },
            max_cycles,
            cycles: 0,
            resume_at: None,
            reply: Some(reply),
            count: 1,
        };
        match st.sched.submit(client, window, job) {
            Ok(()) => {
                self.kick(st);
                Ok(())
            }
            Err((r, mut job)) => {
                job.reply = None;
                st.ucode.release(handle);
                Err(self.refuse(&mut st, r))
            }
        }
    }

    /// Request a suspend: the running job is paused at its next instruction boundary, the engine
    /// state saved and the engine reset. `reply(Ok, jobs in flight)` once done.
    pub fn suspend(&self, reply: ScalarReplyFn) {
        let mut st = self.st.lock().unwrap();
        if self.unavailable.is_some() {
            st.c.errors += 1;
            drop(st);
            return reply(Status::EngineUnavailable, 0);
        }
        if st.suspended || st.suspend_req.is_some() {
            st.c.errors += 1;
            drop(st);
            return reply(Status::BadState, 0);
        }
        st.suspend_req = Some(reply);
        self.suspend_pending.store(true, std::sync::atomic::Ordering::SeqCst);
        self.kick(st);
    }

    /// Restore the saved engine state and continue where the engine stopped.
    pub fn resume(&self, reply: ScalarReplyFn) {
        let mut st = self.st.lock().unwrap();
        if self.unavailable.is_some() {
            st.c.errors += 1;
            drop(st);
            return reply(Status::EngineUnavailable, 0);
        }
        if !st.suspended || st.resume_req.is_some() {
            st.c.errors += 1;
            drop(st);
            return reply(Status::BadState, 0);
        }
        st.resume_req = Some(reply);
        self.kick(st);
    }

    /// Quit (control server): refuse all new work from now on (BadState). Returns true once no
    /// job is queued or running any more, i.e. every accepted job has been answered.
    pub fn close(&self) -> bool {
        self.settle(false);
        let mut st = self.st.lock().unwrap();
        st.closed = true;
        st.sched.depth() == 0
    }

    fn refuse_closed(&self) -> bool {
        let mut st = self.st.lock().unwrap();
        if st.closed {
            st.c.errors += 1;
        }
        st.closed
    }

    /// Jobs restarted from their saved inputs so far (an engine that cannot resume paused them
    /// for a suspend).
    pub fn restarts(&self) -> u64 {
        self.st.lock().unwrap().c.restarts
    }

    pub fn stats(&self) -> StatsMsg {
        self.settle(false);
        let st = self.st.lock().unwrap();
        StatsMsg {
            magic: MAGIC,
            status: Status::Ok as u32,
            api_version: API_VERSION,
            backend: if self.unavailable.is_some() && self.cfg.software_fallback {
                BackendId::Software as u32
            } else {
                self.backend as u32
            },
            jobs: st.c.jobs,
            cycles: st.c.cycles,
            fallbacks: st.c.fallbacks,
            errors: st.c.errors,
            busy: st.c.busy,
            queue_depth: st.sched.depth() as u32,
            queue_max: st.sched.depth_max as u32,
            resumes: st.c.resumes,
            programs: st.ucode.count() as u32,
            suspended: st.suspended as u32,
            clients: st.c.clients.len() as u32,
            pacing_hz: self.cfg.pace_hz as u32,
        }
    }

    fn kick(&self, mut st: std::sync::MutexGuard<'_, State>) {
        st.kicks = st.kicks.wrapping_add(1);
        self.want_wake.store(true, std::sync::atomic::Ordering::SeqCst);
        drop(st);
        if self.cfg.driver == Driver::Thread {
            self.cv.notify_all();
        }
    }

    /// `Driver::Thread` worker: drive whenever something was submitted or requested.
    fn worker(self: Arc<Self>) {
        let mut seen = u64::MAX;
        loop {
            let mut st = self.st.lock().unwrap();
            while st.kicks == seen {
                st = self.cv.wait(st).unwrap();
            }
            seen = st.kicks;
            drop(st);
            self.drive();
        }
    }

    /// Run queued work (jobs, suspend/resume requests, microcode writes) on the calling thread
    /// until nothing is runnable, unless another thread holds the engine token (then return at
    /// once: that thread picks the new work up before it lets the token go, since both sides
    /// check under the state lock). In `Driver::Callers` mode every thread that submits work
    /// calls this afterwards.
    pub fn drive(&self) {
        self.drive_with(&|| {})
    }

    /// [`Self::drive`] that calls `before_job` each time it is about to run a job (outside the
    /// state lock): a receive thread that holds back its last reply to send it with its next
    /// receive (one syscall for both) sends it there instead, so no reply waits for a job.
    pub fn drive_with(&self, before_job: &dyn Fn()) {
        // the token is given back before each reply (a reply is an IPC round trip on Xous), so
        // another thread can start the next job meanwhile; then try to take it again
        while let Some(done) = self.drive_once(before_job) {
            Self::deliver(done);
        }
    }

    /// Answer a finished job (at its pacing deadline, if any).
    fn deliver((reply, out, deliver_at): Done) {
        if let Some(t) = deliver_at {
            let now = Instant::now();
            if t > now {
                std::thread::sleep(t - now);
            }
        }
        // None: a job run by `x25519_now`, whose caller answers it itself
        if let Some(reply) = reply {
            reply(out);
        }
    }

    /// Hold the engine token and run work until a job finishes (returns its reply, to be
    /// delivered at the pacing deadline, with the token already given back) or nothing is
    /// runnable (None). Returns None at once if another thread holds the token, or if nothing
    /// is queued or requested (then the token is not taken at all: whoever queues work next
    /// drives it). The phases: [`Self::take_work`] (suspend/resume requests, microcode writes,
    /// the next job), [`Self::run_turn`] (operands, the engine runs the job until it ends or is
    /// parked), [`Self::finish`] (result, window wipe, accounting, the token given back).
    fn drive_once(&self, before_job: &dyn Fn()) -> Option<Done> {
        if self.unavailable.is_some() || self.settle(false) {
            return None;
        }
        {
            let mut st = self.st.lock().unwrap();
            if st.driving || Self::nothing_to_do(&st) {
                return None;
            }
            st.driving = true;
        }
        let mut ctx = self.engine.lock().unwrap();
        self.drive_holding(&mut ctx, None, before_job, &mut || None)
    }

    /// No job queued or running, no request, no microcode write pending.
    fn nothing_to_do(st: &State) -> bool {
        st.sched.depth() == 0 && st.suspend_req.is_none() && st.resume_req.is_none() && st.pending_ucode.is_empty()
    }

    /// [`Self::drive_once`] with the token and the engine held: `first` (a job already
    /// dispatched, with whether others wait) runs first, then whatever `take_work` finds.
    /// `park_reply` gives the reply of a job without one (a direct job) when it is parked.
    fn drive_holding(
        &self,
        ctx: &mut EngineCtx,
        mut first: Option<(Entry<Job>, bool)>,
        before_job: &dyn Fn(),
        park_reply: &mut dyn FnMut() -> Option<ReplyFn>,
    ) -> Option<Done> {
        loop {
            let (mut e, contended) = match first.take() {
                Some(f) => f,
                None => self.take_work(ctx)?,
            };
            before_job();
            let Some(status) = self.run_turn(ctx, &mut e, contended) else {
                // parked: back in the queue with its window (and a reply: any thread may end it)
                if e.job.reply.is_none() {
                    e.job.reply = park_reply();
                }
                let mut st = self.st.lock().unwrap();
                st.c.resumes += 1;
                st.sched.requeue(e);
                continue;
            };
            return Some(self.finish(ctx, e, status));
        }
    }

    /// One X25519 run on the calling thread at once when the engine is idle and nothing else is
    /// queued or requested (`Driver::Callers`, no pacing): the job is dispatched straight to
    /// the engine (no queue round, no boxed reply) and `reply` is called on this thread when it
    /// ends. Otherwise (engine busy, others waiting, suspended, closed, unavailable, ...) the
    /// job goes through [`Self::submit_x25519_answering`] and [`Self::drive_with`]. Either way
    /// `reply` is called exactly once, and work queued meanwhile by other threads is driven
    /// before this returns (unless another thread holds the token). A job parked by a suspend
    /// is queued with its reply and answered once it ends, as any queued job.
    ///
    /// Detached (`detach` given and the backend able to, `EngineBackend::start_detached`; the hw
    /// backend with its interrupt): the job is started and this returns at once (true) with the
    /// engine token held by the job; the backend answers the client at the job's end (the hw
    /// backend from its interrupt handler), and `reply` is called later by whichever thread
    /// settles the job (`settle`: the next request, a wake from the backend, Stats, Quit), with
    /// `Outcome::answered` set (then it only releases the request) or with the error the job
    /// ended in. Nothing waits on a thread for the job, and no thread is woken at its end unless
    /// work was submitted meanwhile (`want_wake`).
    pub fn x25519_now<F, D>(
        &self,
        client: u32,
        scalar: &[u8; 32],
        u: &[u8; 32],
        before_job: &dyn Fn(),
        reply: F,
        detach: Option<D>,
    ) -> bool
    where
        F: FnOnce(Outcome) + Send + 'static,
        D: FnOnce(u32) -> Option<DetachedReply>,
    {
        // a detached job the backend has answered still holds the token: the new job takes it
        // over (`take_over`), or it is released first
        let mut detach = match detach {
            Some(d) => match self.take_over(client, scalar, u, 1, before_job, d) {
                Ok(TakeOver::Started { mut ctx, prev }) => {
                    if let Some(e) = ctx.detached.as_mut() {
                        e.job.reply = Some(Box::new(reply));
                    }
                    drop(ctx);
                    Self::deliver(prev);
                    return true;
                }
                // taken over, not started by the backend: run it here
                Ok(TakeOver::NotStarted { e, ctx, prev }) => {
                    Self::deliver(prev);
                    return self.run_direct(ctx, e, before_job, reply);
                }
                Err(d) => Some(d),
            },
            None => None,
        };
        self.settle(false);
        if let Some((mut e, mut ctx)) = self.dispatch_now(client, scalar, u) {
            if let Some(d) = detach.take() {
                if ctx.engine.can_detach() && self.start_detached(&mut ctx, &mut e, before_job, d) {
                    // the backend answers it: no thread waits for the engine
                    e.job.reply = Some(Box::new(reply));
                    ctx.detached = Some(e);
                    return true;
                }
            }
            return self.run_direct(ctx, e, before_job, reply);
        }
        self.submit_x25519_answering(client, scalar, u, Box::new(reply));
        self.drive_with(before_job);
        false
    }

    /// A direct job (engine token and engine held) run on this thread: `reply` is called when it
    /// ends (or it goes to the queue with it if parked); then whatever waits is driven. False.
    fn run_direct<F>(
        &self,
        mut ctx: std::sync::MutexGuard<'_, EngineCtx>,
        e: Entry<Job>,
        before_job: &dyn Fn(),
        reply: F,
    ) -> bool
    where
        F: FnOnce(Outcome) + Send + 'static,
    {
        let mut slot = Some(reply);
        let done = self
            .drive_holding(&mut ctx, Some((e, false)), before_job, &mut || slot.take().map(|f| Box::new(f) as ReplyFn));
        drop(ctx);
        match done {
            Some((None, out, _)) => match slot.take() {
                Some(f) => f(out),
                None => log::error!("engine25519: a direct job ended after its reply went to the queue"),
            },
            Some(other) => Self::deliver(other),
            None => {}
        }
        self.drive_with(before_job);
        false
    }

    /// A batch of X25519s (`Opcode::X25519Batch`) started at once and detached when the engine
    /// is idle and nothing else waits (as [`Self::x25519_now`]): the first job's operands go
    /// into one window, `detach` writes the reply into the request and says where the others'
    /// operands and the results are, and the backend runs the jobs back to back in that window
    /// (the hw backend from its interrupt handler: the window wiped by the engine between two
    /// jobs, no thread woken in between) and answers the client after the last. The backend's
    /// time limits cover the whole batch (`x25519_max_cycles` per job). `reply` gets `(Ok, [an
    /// answered outcome])` once the backend has answered, or the batch's error with no outcome
    /// (a batch that ended without the backend's answer fails as a whole: `EngineFault` if it
    /// stopped without an error of its own). Otherwise (engine busy, others waiting, no detach,
    /// a backend that cannot) the batch goes through [`Self::submit_x25519_batch`] and
    /// [`Self::drive_with`]. True: started detached.
    pub fn x25519_batch_now<R, D>(
        &self,
        client: u32,
        jobs: &[(Zeroizing<[u8; 32]>, [u8; 32])],
        before_job: &dyn Fn(),
        reply: R,
        detach: Option<D>,
    ) -> bool
    where
        R: FnOnce(Status, Vec<Outcome>) + Send + 'static,
        D: FnOnce(u32) -> Option<DetachedReply>,
    {
        let n = jobs.len();
        if (2..=crate::api::MAX_BATCH).contains(&n) {
            if let Some(d) = detach {
                let (k0, u0) = (&jobs[0].0, &jobs[0].1);
                // one box for the job's reply, made once the job has started (none before)
                let wrap = move |reply: R| -> ReplyFn {
                    Box::new(move |o: Outcome| match (o.answered, o.status) {
                        (true, _) => reply(Status::Ok, vec![o]),
                        (false, Status::Ok) => reply(Status::EngineFault, Vec::new()),
                        (false, s) => reply(s, Vec::new()),
                    })
                };
                let n32 = n as u32;
                let taken = match self.take_over(client, k0, u0, n32, before_job, d) {
                    Ok(TakeOver::Started { mut ctx, prev }) => {
                        if let Some(e) = ctx.detached.as_mut() {
                            e.job.reply = Some(wrap(reply));
                        }
                        drop(ctx);
                        Self::deliver(prev);
                        return true;
                    }
                    Ok(TakeOver::NotStarted { e, ctx, prev }) => {
                        Self::deliver(prev);
                        Some((e, ctx, None))
                    }
                    Err(d) => {
                        self.settle(false);
                        self.dispatch_now(client, k0, u0).map(|(e, ctx)| (e, ctx, Some(d)))
                    }
                };
                if let Some((mut e, mut ctx, d)) = taken {
                    e.job.count = n32;
                    e.job.max_cycles = self.cfg.x25519_max_cycles.saturating_mul(n as u64);
                    let started = match d {
                        Some(d) => ctx.engine.can_detach() && self.start_detached(&mut ctx, &mut e, before_job, d),
                        None => false,
                    };
                    if started {
                        e.job.reply = Some(wrap(reply));
                        ctx.detached = Some(e);
                        return true;
                    }
                    // not started: give the dispatch back (the window is wiped before its next use
                    // if anything went into it) and queue the batch the usual way
                    {
                        let mut st = self.st.lock().unwrap();
                        st.ucode.release(e.job.handle);
                        st.sched.complete(&e);
                        st.driving = false;
                    }
                    drop(ctx);
                    drop(e);
                }
            }
        }
        self.submit_x25519_batch(client, jobs, Box::new(reply));
        self.drive_with(before_job);
        false
    }

    /// Start the direct X25519 `e` detached: its operands go into its window, `detach` writes
    /// the reply (all but the result) into the request and says where, and the backend starts the
    /// job and answers it itself at its end; `before_job` runs once it has started. False: not
    /// started (run it the usual way).
    fn start_detached<D>(&self, ctx: &mut EngineCtx, e: &mut Entry<Job>, before_job: &dyn Fn(), detach: D) -> bool
    where
        D: FnOnce(u32) -> Option<DetachedReply>,
    {
        let EngineCtx { engine, dirty, .. } = ctx;
        self.start_detached_on(&mut **engine, dirty, e, before_job, detach)
    }

    /// The pinned batch program as a detached batch runs it (None: not pinned, or no batch
    /// program for this ISA: one job per run).
    fn batch_run(x25519: &X25519Program, batch_at: Option<(usize, usize)>) -> Option<BatchRun> {
        let (b, (mpstart, mplen)) = (x25519.batch.as_ref()?, batch_at?);
        Some(BatchRun {
            mpstart,
            mplen,
            slots: b.slots,
            count_reg: b.count_reg,
            max_jobs: b.max_jobs,
            result_regs: b.result_regs,
        })
    }

    /// [`Self::start_detached`] on the parts of the engine context.
    fn start_detached_on<D>(
        &self,
        engine: &mut dyn EngineBackend,
        dirty: &mut u32,
        e: &mut Entry<Job>,
        before_job: &dyn Fn(),
        detach: D,
    ) -> bool
    where
        D: FnOnce(u32) -> Option<DetachedReply>,
    {
        let window = e.window.expect("dispatched job holds a window");
        let Some(mut target) = detach(window as u32) else { return false };
        target.out_reg = self.x25519.out_reg;
        target.max_cycles = e.job.max_cycles;
        if let Some(b) = target.batch.as_mut() {
            (b.scalar_reg, b.u_reg) = (self.x25519.scalar_reg, self.x25519.u_reg);
        }
        target.wipe = self.wipe_at.map(|(start, len)| Launch { window, mpstart: start, mplen: len });
        e.job.launch.window = window;
        if *dirty & (1 << window) != 0 {
            engine.clear_window(window);
        }
        *dirty |= 1 << window;
        self.load_operands(engine, window, &e.job.work);
        if !engine.start_detached(e.job.launch, target) {
            return false; // the caller runs it the usual way (`before_job` comes then)
        }
        // a reply this thread holds goes now, with the engine already running (no thread waits
        // for a detached job)
        before_job();
        true
    }

    /// Settle the detached job, if there is one: answered by the backend (release its token,
    /// window and program, count it), ended without an answer (answer it here with how it
    /// ended), or still running (true: the engine is busy; the backend wakes a thread at its
    /// end, `wake`). `tick`: the backend's ticker woke us (it bounds a job whose interrupt never
    /// comes).
    fn settle(&self, tick: bool) -> bool {
        let done = {
            // never waits for the engine: a thread holding it (a driver) means no detached job,
            // and a concurrent settle does the work (a detached job's token blocks every driver)
            let Ok(mut ctx) = self.engine.try_lock() else { return false };
            if ctx.detached.is_none() {
                return false;
            }
            let polled = ctx.engine.poll_detached(tick);
            if polled == Detached::Running {
                return true;
            }
            self.settle_polled(&mut ctx, polled)
        };
        Self::deliver(done);
        false
    }

    /// The detached job ended as `polled` (not `Running`): finish it; returns its reply.
    fn settle_polled(&self, ctx: &mut EngineCtx, polled: Detached) -> Done {
        let e = ctx.detached.take().expect("a detached job");
        {
            match polled {
                Detached::Running => unreachable!(),
                Detached::Answered { wiped } => self.finish_answered(ctx, e, wiped),
                Detached::Unanswered(end) => {
                    let status = match &end {
                        RunEnd::Finished { .. } => Status::Ok,
                        RunEnd::Illegal { .. } => Status::IllegalInstruction,
                        RunEnd::Runaway { .. } | RunEnd::Paused { .. } => Status::Runaway,
                        RunEnd::Fault { reason, .. } => {
                            log::error!("engine backend fault: {}", reason);
                            Status::Internal
                        }
                        RunEnd::Lost { reason, .. } => {
                            log::warn!("engine25519: {}", reason);
                            Status::EngineFault
                        }
                    };
                    self.finish(ctx, e, status)
                }
            }
        }
    }

    /// The fast path of [`Self::x25519_now`] (and of a batch) on a busy device: the previous
    /// detached job has been answered by the backend and its window wiped by the engine, and
    /// nothing else waits (no queued job, request or microcode write; not closed or suspended).
    /// The new job takes over its engine token, window and program as they are (the scheduler's
    /// `handover`), in place: the job record is rewritten with the new operands (which overwrite
    /// the old ones) and started detached before anything else; the previous job is counted
    /// here, and its reply closure runs after the start, in the new job's shadow. `count`: the
    /// X25519s of the new job (a batch's size).
    ///
    /// `Err` gives `detach` back: nothing taken over (no answered detached job, or others wait:
    /// then the answered job has been settled the usual way). Otherwise the caller attaches the
    /// new job's reply (`TakeOver::Started`: the job is in `ctx.detached`; `NotStarted`: the
    /// backend did not start it, the caller runs the entry the usual way, with the engine held),
    /// lets the engine go and delivers `prev`, the previous job's release.
    fn take_over<D>(
        &self,
        client: u32,
        scalar: &[u8; 32],
        u: &[u8; 32],
        count: u32,
        before_job: &dyn Fn(),
        detach: D,
    ) -> Result<TakeOver<'_>, D>
    where
        D: FnOnce(u32) -> Option<DetachedReply>,
    {
        let Ok(mut ctx) = self.engine.try_lock() else { return Err(detach) };
        if ctx.detached.is_none() {
            return Err(detach);
        }
        match ctx.engine.poll_detached(false) {
            Detached::Answered { wiped: true } => {}
            Detached::Running => return Err(detach),
            other => {
                let done = self.settle_polled(&mut ctx, other);
                drop(ctx);
                Self::deliver(done);
                return Err(detach);
            }
        }
        {
            let prev = ctx.detached.as_ref().expect("checked above");
            let mut st = self.st.lock().unwrap();
            let free = !st.closed
                && !st.suspended
                && st.suspend_req.is_none()
                && st.resume_req.is_none()
                && st.pending_ucode.is_empty();
            if !(free && st.sched.handover(prev, client)) {
                drop(st);
                let prev = ctx.detached.take().expect("checked above");
                let done = self.finish_answered(&mut ctx, prev, true);
                drop(ctx);
                Self::deliver(done);
                return Err(detach);
            }
            st.c.jobs += prev.job.count as u64;
            st.c.add_client(client);
            self.want_wake.store(false, std::sync::atomic::Ordering::SeqCst);
        }
        let EngineCtx { engine, dirty, detached, .. } = &mut *ctx;
        let e = detached.as_mut().expect("checked above");
        let window = e.window.expect("dispatched job holds a window");
        // the engine's wipe program zeroed the window (`wiped`)
        *dirty &= !(1 << window);
        let prev_reply = e.job.reply.take();
        match &mut e.job.work {
            Work::X25519 { scalar: k, u: v } => {
                **k = *scalar;
                *v = *u;
            }
            Work::Custom { .. } => unreachable!("only X25519s run detached"),
        }
        e.client = client;
        e.dispatches = 1;
        e.job.count = count;
        e.job.max_cycles = self.cfg.x25519_max_cycles.saturating_mul(count as u64);
        e.job.cycles = 0;
        e.job.resume_at = None;
        let started = engine.can_detach() && self.start_detached_on(&mut **engine, dirty, e, before_job, detach);
        let out = {
            let mut o = Outcome::error(Status::Ok, self.backend);
            o.window = window as u32;
            o.answered = true;
            o
        };
        let prev = (prev_reply, out, None);
        if started {
            return Ok(TakeOver::Started { ctx, prev });
        }
        let e = ctx.detached.take().expect("taken over");
        Ok(TakeOver::NotStarted { e, ctx, prev })
    }

    /// A server thread woken by the backend about the detached job (`backend::WAKE_ID`):
    /// settle it, then run whatever waits for the engine.
    pub fn wake(&self, tick: bool, before_job: &dyn Fn()) {
        self.settle(tick);
        self.drive_with(before_job);
    }

    /// `finish` for a detached X25519 the backend answered: its result is with the client and
    /// the wipe program ran on its window (over the bus if it did not finish).
    fn finish_answered(&self, ctx: &mut EngineCtx, mut e: Entry<Job>, wiped: bool) -> Done {
        let EngineCtx { engine, dirty, .. } = ctx;
        let window = e.window.expect("dispatched job holds a window");
        if !wiped {
            log::error!("engine25519: the window wipe program did not finish on window {window}: wiping over the bus");
            self.st.lock().unwrap().c.bus_wipes += 1;
            engine.clear_regs(window, self.x25519.named);
        }
        *dirty &= !(1 << window);
        let job = &mut e.job;
        let reply = job.reply.take();
        let (handle, count) = (job.handle, job.count);
        {
            let mut st = self.st.lock().unwrap();
            st.ucode.release(handle);
            st.sched.complete(&e);
            st.c.jobs += count as u64;
            st.driving = false;
        }
        let mut out = Outcome::error(Status::Ok, self.backend);
        out.window = window as u32;
        out.answered = true;
        (reply, out, None)
    }

    fn dispatch_now(
        &self,
        client: u32,
        scalar: &[u8; 32],
        u: &[u8; 32],
    ) -> Option<(Entry<Job>, std::sync::MutexGuard<'_, EngineCtx>)> {
        if self.unavailable.is_some() || self.cfg.driver != Driver::Callers || self.cfg.pace_hz > 0 {
            return None;
        }
        let mut st = self.st.lock().unwrap();
        if st.closed || st.driving || st.suspended || !Self::nothing_to_do(&st) {
            return None;
        }
        let handle = st.x25519_handle;
        let (start, len) = st.ucode.acquire(handle)?;
        let Some(window) = st.sched.dispatch_now(client, WindowReq::Any) else {
            st.ucode.release(handle);
            return None;
        };
        st.driving = true;
        self.want_wake.store(false, std::sync::atomic::Ordering::SeqCst);
        st.c.add_client(client);
        drop(st);
        let job = Job {
            work: Work::X25519 { scalar: Zeroizing::new(*scalar), u: *u },
            handle,
            launch: Launch { window, mpstart: start, mplen: len },
            max_cycles: self.cfg.x25519_max_cycles,
            cycles: 0,
            resume_at: None,
            reply: None,
            count: 1,
        };
        let e = Entry { client, want: WindowReq::Any, window: Some(window), dispatches: 1, job };
        Some((e, self.engine.lock().unwrap()))
    }

    /// Under the state lock, with the engine idle (no job out): answer a resume or suspend
    /// request, apply pending microcode writes, and take the next job, with whether others are
    /// waiting for the engine. Nothing runnable: the token is given back and None returned.
    fn take_work(&self, ctx: &mut EngineCtx) -> Option<(Entry<Job>, bool)> {
        let EngineCtx { engine, saved, .. } = ctx;
        let mut st = self.st.lock().unwrap();
        let e = loop {
            if let Some(reply) = st.resume_req.take() {
                engine.reset();
                if let Some(s) = saved.take() {
                    engine.restore(&s);
                }
                st.suspended = false;
                let n = st.sched.depth();
                reply(Status::Ok, n);
                continue;
            }
            if let Some(reply) = st.suspend_req.take() {
                self.suspend_pending.store(false, std::sync::atomic::Ordering::SeqCst);
                *saved = Some(engine.snapshot());
                engine.reset(); // the state now lives only in `saved`
                st.suspended = true;
                let n = st.sched.depth();
                reply(Status::Ok, n);
                continue;
            }
            if !st.suspended {
                for (start, words) in std::mem::take(&mut st.pending_ucode) {
                    engine.write_ucode(start, &words);
                }
                if let Some(e) = st.sched.next() {
                    break e;
                }
            }
            // nothing runnable: give the token back (under the lock, so a submitter that
            // saw `driving` set has already queued what we would have missed)
            st.driving = false;
            return None;
        };
        // alone on the engine: run the job in as few backend calls as possible
        let contended = st.sched.depth() > 1 || st.suspend_req.is_some();
        Some((e, contended))
    }

    /// One turn of a job on the engine: its operands go into its (wiped) window on a fresh
    /// start, then the engine runs it in budgets (a whole quantum when alone, slices when others
    /// wait) until it ends (Some(status)) or is parked for a suspend or another client after
    /// its quantum (None). Pacing moves the engine's busy time on by every cycle run.
    fn run_turn(&self, ctx: &mut EngineCtx, e: &mut Entry<Job>, mut contended: bool) -> Option<Status> {
        let EngineCtx { engine, busy_until, dirty, .. } = ctx;
        let window = e.window.expect("dispatched job holds a window");
        let job = &mut e.job;
        job.launch.window = window;
        if job.resume_at.is_none() {
            if *dirty & (1 << window) != 0 {
                engine.clear_window(window);
            }
            *dirty |= 1 << window;
            self.load_operands(&mut **engine, window, &job.work);
        }
        let mut turn = 0u64;
        loop {
            let left = job.max_cycles.saturating_sub(job.cycles);
            let to_quantum = self.cfg.quantum.saturating_sub(turn);
            let chunk = if contended { self.cfg.slice } else { to_quantum };
            // an engine that cannot resume gets the whole job (it pauses only for a suspend)
            let budget = if self.can_resume { chunk.min(to_quantum).min(left).max(1) } else { left.max(1) };
            let r = engine.run(job.launch, job.resume_at, budget, job.max_cycles - job.cycles);
            let c = r.cycles();
            job.cycles += c;
            turn += c;
            if self.cfg.pace_hz > 0 {
                let now = Instant::now();
                *busy_until =
                    (*busy_until).max(now) + Duration::from_nanos(c.saturating_mul(1_000_000_000) / self.cfg.pace_hz);
            }
            match r {
                RunEnd::Paused { mpc, .. } => {
                    if job.cycles >= job.max_cycles {
                        return Some(Status::Runaway);
                    }
                    if !self.can_resume {
                        // paused for a suspend on an engine that cannot resume: the job starts
                        // again from its saved inputs (its window wiped, its operands written
                        // again) after the resume
                        job.resume_at = None;
                        self.st.lock().unwrap().c.restarts += 1;
                        log::info!("engine25519: a job was paused for a suspend on an engine that cannot resume: it restarts from its inputs");
                        return None;
                    }
                    job.resume_at = Some(mpc);
                    let st = self.st.lock().unwrap();
                    let others = st.sched.depth() > 1;
                    if st.suspend_req.is_some() || (turn >= self.cfg.quantum && others) {
                        return None; // park: requeue with its window
                    }
                    contended = others;
                    if turn >= self.cfg.quantum {
                        turn = 0;
                    }
                }
                RunEnd::Finished { .. } => return Some(Status::Ok),
                RunEnd::Illegal { .. } => return Some(Status::IllegalInstruction),
                RunEnd::Runaway { .. } => return Some(Status::Runaway),
                RunEnd::Fault { reason, .. } => {
                    log::error!("engine backend fault: {}", reason);
                    return Some(Status::Internal);
                }
                RunEnd::Lost { reason, .. } => {
                    // a hardware fault the server survives: warn, fail this job only
                    log::warn!("engine25519: {}", reason);
                    return Some(Status::EngineFault);
                }
            }
        }
    }

    /// A job that ended (ok or error): collect its result, wipe its window, count it, release
    /// its microcode and give the token back; returns its reply, the outcome and when to
    /// deliver it (the pacing deadline).
    fn finish(&self, ctx: &mut EngineCtx, mut e: Entry<Job>, status: Status) -> Done {
        let EngineCtx { engine, busy_until, dirty, .. } = ctx;
        let window = e.window.expect("dispatched job holds a window");
        let job = &mut e.job;
        let mut out = Outcome::error(status, self.backend);
        out.window = window as u32;
        out.cycles = job.cycles;
        if status == Status::Ok {
            match &job.work {
                Work::X25519 { .. } => out.result = engine.read_reg(window, self.x25519.out_reg),
                Work::Custom { .. } => out.regs = Some(Box::new(engine.read_window(window))),
            }
        }
        // wipe the window: after a finished X25519 only the registers its microcode names
        // can be non-zero (the window was all zeros before its operands went in); the
        // engine zeroes them itself (the wipe program), else the bus does
        match (&job.work, status) {
            (Work::X25519 { .. }, Status::Ok) => {
                let wiped = self.wipe_at.is_some_and(|(start, len)| {
                    let l = Launch { window, mpstart: start, mplen: len };
                    matches!(engine.run(l, None, WIPE_BUDGET, WIPE_BUDGET), RunEnd::Finished { .. })
                });
                if !wiped {
                    log::error!(
                        "engine25519: the window wipe program did not finish on window {window}: wiping over the bus"
                    );
                    self.st.lock().unwrap().c.bus_wipes += 1;
                    engine.clear_regs(window, self.x25519.named);
                }
            }
            _ => engine.clear_window(window),
        }
        *dirty &= !(1 << window);
        // None only for a job `x25519_now` runs: its caller answers it
        let reply = job.reply.take();
        let (handle, cycles) = (job.handle, job.cycles);
        {
            let mut st = self.st.lock().unwrap();
            st.ucode.release(handle);
            st.sched.complete(&e);
            if status == Status::Ok {
                st.c.jobs += 1;
                st.c.cycles += cycles;
            } else {
                st.c.errors += 1;
            }
            st.driving = false;
        }
        let deliver_at = (self.cfg.pace_hz > 0).then_some(*busy_until);
        (reply, out, deliver_at)
    }

    fn load_operands(&self, engine: &mut dyn EngineBackend, window: usize, work: &Work) {
        match work {
            Work::X25519 { scalar, u } => {
                engine.write_reg(window, self.x25519.scalar_reg, scalar);
                engine.write_reg(window, self.x25519.u_reg, u);
            }
            Work::Custom { regs } => engine.write_window(window, &**regs),
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Work::X25519 { u, .. } = &mut self.work {
            u.zeroize();
        }
        // a job must never vanish silently: its client would wait forever
        if let Some(reply) = self.reply.take() {
            reply(Outcome::error(Status::Internal, BackendId::Software));
        }
    }
}

#[cfg(test)]
mod tests;
