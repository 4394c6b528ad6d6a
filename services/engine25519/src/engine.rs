//! The executor: the shared job state (fair queue, windows, microcode cache, counters) and the
//! single engine worker that runs jobs on the backend. No Xous dependency: replies are closures,
//! so unit tests drive it directly and the server wraps Xous envelopes in them.
//!
//! Threads: the server's receive loop calls `submit_*`/`load_program`/`suspend`/`resume`/`stats`
//! (short critical sections, never waits for the engine); one worker thread owns the backend.
//! Long jobs run in slices (`slice` cycles); after `quantum` cycles a job is preempted at an
//! instruction boundary if other clients are waiting and resumes later in its own window.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use zeroize::{Zeroize, Zeroizing};

use crate::api::{BackendId, StatsMsg, Status, API_VERSION, MAGIC, NUM_REGS};
use crate::backend::{software_x25519, Engine, Launch, Reg, RunEnd, Snapshot};
use crate::scheduler::{Refused, Scheduler, WindowReq};
use crate::ucode::{LoadError, Ucode};

/// The built-in X25519 microcode and its register convention.
#[derive(Clone, Debug)]
pub struct X25519Program {
    pub words: Vec<u32>,
    /// register receiving the (clamped) scalar
    pub scalar_reg: usize,
    /// register receiving u
    pub u_reg: usize,
    /// register holding the result
    pub out_reg: usize,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// engine cycles a job may run before it is preempted (if others wait)
    pub quantum: u64,
    /// cycles per backend `run` call (granularity of suspend / preemption checks)
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
}

impl Outcome {
    pub fn error(status: Status, backend: BackendId) -> Self {
        Outcome { status, backend, window: 0, cycles: 0, result: [0; 32], regs: None }
    }
}

pub type ReplyFn = Box<dyn FnOnce(Outcome) + Send>;
pub type ScalarReplyFn = Box<dyn FnOnce(Status, usize) + Send>;

enum Work {
    X25519 { scalar: Zeroizing<[u8; 32]>, u: [u8; 32] },
    Custom { regs: Box<Zeroizing<[Reg; NUM_REGS]>> },
}

pub struct Job {
    work: Work,
    handle: u32,
    launch: Launch,
    max_cycles: u64,
    cycles: u64,
    resume_at: Option<u32>,
    reply: Option<ReplyFn>,
}

#[derive(Default)]
struct Counters {
    jobs: u64,
    cycles: u64,
    fallbacks: u64,
    errors: u64,
    busy: u64,
    resumes: u64,
    clients: HashSet<u32>,
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
    /// a job is out on the engine
    running: bool,
    x25519_handle: u32,
}

pub struct Executor {
    st: Mutex<State>,
    cv: Condvar,
    cfg: Config,
    backend: BackendId,
    unavailable: Option<String>,
    x25519: X25519Program,
}

impl Executor {
    /// Create the executor for `engine` (whose availability is probed once) and start its worker.
    pub fn start(engine: Box<dyn Engine>, x25519: X25519Program, cfg: Config) -> Arc<Executor> {
        let unavailable = engine.available().err();
        let backend = engine.id();
        let mut ucode = Ucode::new();
        let mut pending = Vec::new();
        let mut x25519_handle = 0;
        if unavailable.is_none() {
            let l = ucode.load(&x25519.words, true).expect("X25519 program fits the microcode RAM");
            x25519_handle = l.handle;
            pending.push((l.start, x25519.words.clone()));
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
                running: false,
                x25519_handle,
            }),
            cv: Condvar::new(),
            cfg,
            backend,
            unavailable,
            x25519,
        });
        if ex.unavailable.is_none() {
            let w = ex.clone();
            std::thread::Builder::new()
                .name("engine-worker".into())
                .spawn(move || w.worker(engine))
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
        // clamping and the reduction of u are done by the microcode (RFC 7748 semantics in
        // one place); the software fallback does the same inside x25519-dalek
        let k = Zeroizing::new(*scalar);
        let u = *u;
        if self.unavailable.is_some() {
            let mut st = self.st.lock().unwrap();
            st.c.clients.insert(client);
            if !self.cfg.software_fallback {
                st.c.errors += 1;
                return Err(Status::EngineUnavailable);
            }
            st.c.fallbacks += 1;
            drop(st);
            let result = software_x25519(&k, &u);
            reply(Outcome { status: Status::Ok, backend: BackendId::Software, window: 0, cycles: 0, result, regs: None });
            return Ok(());
        }
        let mut st = self.st.lock().unwrap();
        st.c.clients.insert(client);
        let handle = st.x25519_handle;
        let (start, len) = st.ucode.acquire(handle).ok_or(Status::Internal)?;
        let job = Job {
            work: Work::X25519 { scalar: k, u },
            handle,
            launch: Launch { window: 0, mpstart: start, mplen: len },
            max_cycles: self.cfg.x25519_max_cycles,
            cycles: 0,
            resume_at: None,
            reply: Some(reply),
        };
        match st.sched.submit(client, WindowReq::Any, job) {
            Ok(()) => {
                drop(st);
                self.cv.notify_all();
                Ok(())
            }
            Err((r, _job)) => {
                st.ucode.release(handle);
                Err(self.refuse(&mut st, r))
            }
        }
    }

    /// Load (or find) a program; returns (handle, mpstart).
    pub fn load_program(&self, words: &[u32]) -> Result<(u32, usize), Status> {
        if let Some(_) = self.unavailable {
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
        let mut st = self.st.lock().unwrap();
        st.c.clients.insert(client);
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
        };
        match st.sched.submit(client, window, job) {
            Ok(()) => {
                drop(st);
                self.cv.notify_all();
                Ok(())
            }
            Err((r, _)) => {
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
        drop(st);
        self.cv.notify_all();
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
        drop(st);
        self.cv.notify_all();
    }

    pub fn stats(&self) -> StatsMsg {
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

    fn worker(self: Arc<Self>, mut engine: Box<dyn Engine>) {
        let mut saved: Option<Snapshot> = None;
        let mut busy_until = Instant::now();
        loop {
            // ---- pick work under the lock (engine idle: no job out) ----
            let mut st = self.st.lock().unwrap();
            let mut e = loop {
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
                    saved = Some(engine.snapshot());
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
                st = self.cv.wait(st).unwrap();
            };
            st.running = true;
            drop(st);

            // ---- run one turn of this job ----
            let window = e.window.expect("dispatched job holds a window");
            let job = &mut e.job;
            job.launch.window = window;
            if job.resume_at.is_none() {
                self.load_operands(&mut *engine, window, &job.work);
            }
            let mut turn = 0u64;
            let end = loop {
                let left = job.max_cycles.saturating_sub(job.cycles);
                let budget = self.cfg.slice.min(self.cfg.quantum.saturating_sub(turn)).min(left).max(1);
                let r = engine.run(job.launch, job.resume_at, budget, job.max_cycles - job.cycles);
                let c = r.cycles();
                job.cycles += c;
                turn += c;
                if self.cfg.pace_hz > 0 {
                    let now = Instant::now();
                    busy_until = busy_until.max(now) + Duration::from_nanos(c.saturating_mul(1_000_000_000) / self.cfg.pace_hz);
                }
                match r {
                    RunEnd::Paused { mpc, .. } => {
                        job.resume_at = Some(mpc);
                        if job.cycles >= job.max_cycles {
                            break Some(Status::Runaway);
                        }
                        let st = self.st.lock().unwrap();
                        let others = st.sched.depth() > 1;
                        if st.suspend_req.is_some() || (turn >= self.cfg.quantum && others) {
                            break None; // park: requeue with its window
                        }
                        if turn >= self.cfg.quantum {
                            turn = 0;
                        }
                    }
                    RunEnd::Finished { .. } => break Some(Status::Ok),
                    RunEnd::Illegal { .. } => break Some(Status::IllegalInstruction),
                    RunEnd::Runaway { .. } => break Some(Status::Runaway),
                    RunEnd::Fault { reason, .. } => {
                        log::error!("engine backend fault: {}", reason);
                        break Some(Status::Internal);
                    }
                }
            };

            let Some(status) = end else {
                let mut st = self.st.lock().unwrap();
                st.c.resumes += 1;
                st.running = false;
                st.sched.requeue(e);
                continue;
            };
            // ---- finished (ok or error): collect, wipe the window, reply ----
            let mut out = Outcome::error(status, self.backend);
            out.window = window as u32;
            out.cycles = job.cycles;
            if status == Status::Ok {
                match &job.work {
                    Work::X25519 { .. } => out.result = engine.read_reg(window, self.x25519.out_reg),
                    Work::Custom { .. } => out.regs = Some(Box::new(engine.read_window(window))),
                }
            }
            engine.clear_window(window);
            let reply = job.reply.take().expect("reply once");
            let (handle, cycles) = (job.handle, job.cycles);
            {
                let mut st = self.st.lock().unwrap();
                st.ucode.release(handle);
                st.sched.complete(&e);
                st.running = false;
                if status == Status::Ok {
                    st.c.jobs += 1;
                    st.c.cycles += cycles;
                } else {
                    st.c.errors += 1;
                }
            }
            if self.cfg.pace_hz > 0 {
                let now = Instant::now();
                if busy_until > now {
                    std::thread::sleep(busy_until - now);
                }
            }
            reply(out);
        }
    }

    fn load_operands(&self, engine: &mut dyn Engine, window: usize, work: &Work) {
        match work {
            Work::X25519 { scalar, u } => {
                engine.clear_window(window);
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
