//! engine25519 server. The receive loops decode, dispatch and reply (with the conventions of
//! service-ipc, docs/ipc.md); the work (queue, windows, microcode cache, backends) lives in
//! `engine25519_server::executor` and friends.
//!
//! Two servers (docs/security.md): the public server (`api::SERVER_NAME`: Version, Stats,
//! X25519, LoadProgram, RunJob; privileged opcode numbers are answered `NotPermitted`) and the
//! control server (`api::CONTROL_NAME`, registered first with `api::CONTROL_SLOTS` connections:
//! Suspend, Resume, Quit), served by one thread of its own over the same executor.
//!
//! Two threads run the receive loop (`RECEIVERS`, `--receivers`). After queueing a job a thread drives the
//! engine itself if it is idle (`Executor::drive`, `Driver::Callers`): no hand-off to a worker
//! thread per request. While one thread is busy on the engine the other keeps receiving, so other
//! clients are always answered (queued, or refused with Busy) without waiting for the engine.
//!
//! Options (argument or environment variable; arguments win):
//!   --backend model|hw|rtl|software   ENGINE25519_BACKEND   (default: hw on Xous, model hosted)
//!   --isa v1|v2                       ENGINE25519_ISA       (default v2 hosted; on the device the hw backend
//!                                     runs the ISA the engine implements, found by a probe job)
//!   --pace[=HZ]                       ENGINE25519_PACE_HZ   (off by default; --pace = 50 MHz)
//!   --quantum CYCLES                  ENGINE25519_QUANTUM
//!   --queue N / --per-client N        ENGINE25519_QUEUE / ENGINE25519_PER_CLIENT
//!   --no-fallback                     ENGINE25519_NO_FALLBACK=1
//!   --driver callers|thread           ENGINE25519_DRIVER    (default callers; thread = the
//!                                     receive loop hands every job to a worker thread)
//!   --receivers N                     ENGINE25519_RECEIVERS (callers only; 2..=8, default 2)

use std::sync::{Arc, Mutex};

use service_ipc::options::{Opt, Takes};
use service_ipc::server::{
    decode_request, prepare_archive_in_place, reply_archive, reply_bad_kind, reply_error, reply_ok, reply_scalar2,
    scalar_args, sender_pid, Kind,
};
use xous::MessageEnvelope;

use engine25519_server::api::{
    self, BackendId, JobMsg, Opcode, ProgramMsg, StatsMsg, Status, X25519BatchMsg, X25519Msg, MAGIC, MAX_BATCH,
    NUM_REGS, WINDOW_ANY,
};
use engine25519_server::backend::{DetachedBatch, DetachedReply, WAKE_ID, WAKE_TICK};
use engine25519_server::executor::{Config, Driver, Executor, Outcome};
use engine25519_server::scheduler::WindowReq;

struct Options {
    backend: String,
    isa: engine25519_core::isa::Isa,
    /// `--isa` was given; otherwise the hw backend asks the engine which ISA it implements
    isa_given: bool,
    cfg: Config,
    /// receive threads of the public server (`Driver::Callers` only)
    receivers: usize,
}

const OPTS: &[Opt] = &[
    Opt { flag: "--backend", env: Some("ENGINE25519_BACKEND"), takes: Takes::Value },
    Opt { flag: "--isa", env: Some("ENGINE25519_ISA"), takes: Takes::Value },
    Opt { flag: "--pace", env: Some("ENGINE25519_PACE_HZ"), takes: Takes::OptionalValue },
    Opt { flag: "--quantum", env: Some("ENGINE25519_QUANTUM"), takes: Takes::Value },
    Opt { flag: "--queue", env: Some("ENGINE25519_QUEUE"), takes: Takes::Value },
    Opt { flag: "--per-client", env: Some("ENGINE25519_PER_CLIENT"), takes: Takes::Value },
    Opt { flag: "--no-fallback", env: Some("ENGINE25519_NO_FALLBACK"), takes: Takes::Nothing },
    Opt { flag: "--driver", env: Some("ENGINE25519_DRIVER"), takes: Takes::Value },
    Opt { flag: "--receivers", env: Some("ENGINE25519_RECEIVERS"), takes: Takes::Value },
];

/// Options from `args` (after the program name) and the environment lookup `getenv`.
fn parse_options_from(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Options, String> {
    let p = service_ipc::options::parse(OPTS, args, getenv)?;
    let mut o = Options {
        backend: if cfg!(target_os = "xous") { "hw".into() } else { "model".into() },
        // hosted: our v2 engine (what the gateware implements); device: Precursor's shipping v1
        isa: if cfg!(target_os = "xous") { engine25519_core::isa::Isa::V1 } else { engine25519_core::isa::Isa::V2 },
        isa_given: false,
        cfg: Config { driver: Driver::Callers, ..Config::default() },
        receivers: RECEIVERS,
    };
    if let Some(b) = p.get("--backend") {
        o.backend = b.to_string();
    }
    if let Some(v) = p.get("--isa") {
        o.isa = v.parse().map_err(|_| format!("unknown ISA '{}': expected v1 or v2", v))?;
        o.isa_given = true;
    }
    if p.is_set("--pace") {
        // bare --pace: the device engine clock
        o.cfg.pace_hz = p.u64("--pace")?.unwrap_or(engine25519_core::isa::Isa::V1.info().eng_clk_hz);
    }
    if let Some(v) = p.u64("--quantum")? {
        o.cfg.quantum = v;
    }
    if let Some(v) = p.u64("--queue")? {
        o.cfg.global_cap = v as usize;
    }
    if let Some(v) = p.u64("--per-client")? {
        o.cfg.per_client_cap = v as usize;
    }
    match p.get("--no-fallback") {
        None if p.is_set("--no-fallback") => o.cfg.software_fallback = false, // the flag
        Some("1") => o.cfg.software_fallback = false,
        _ => {}
    }
    match p
        .one_of("--driver", &["callers", "thread"])
        .map_err(|_| format!("unknown driver '{}': expected callers or thread", p.get("--driver").unwrap_or("")))?
    {
        Some("thread") => o.cfg.driver = Driver::Thread,
        Some(_) => o.cfg.driver = Driver::Callers,
        None => {}
    }
    if let Some(v) = p.u64("--receivers")? {
        o.receivers = v as usize;
    }
    if o.cfg.quantum == 0 || o.cfg.global_cap == 0 || o.cfg.per_client_cap == 0 {
        return Err("quantum, queue and per-client must be > 0".into());
    }
    if !(2..=MAX_RECEIVERS).contains(&o.receivers) {
        // one thread would stop receiving while it runs a job: no Busy answers until a long
        // custom job ends
        return Err(format!(
            "receivers must be 2..={} (one thread could not answer while it drives the engine)",
            MAX_RECEIVERS
        ));
    }
    Ok(o)
}

/// Error reply (docs/ipc.md), counted.
fn refuse(ex: &Executor, env: MessageEnvelope, status: Status) {
    ex.count_error();
    reply_error(env, status);
}

fn x25519_reply(o: &Outcome) -> X25519Msg {
    let mut m = X25519Msg::new([0; 32], [0; 32]);
    m.status = Status::Ok as u32;
    m.backend = o.backend as u32;
    m.window = o.window;
    m.cycles = o.cycles;
    m.result = o.result;
    m
}

/// The reply closure of a queued job: the archive on success, the error reply otherwise. The
/// envelope sits in a shared slot so that a submission refused at once can still answer it.
/// Jobs answer in the request's own type (X25519Msg, JobMsg), so the success reply wipes only
/// the request archive's bytes and writes over them (`reply_archive_in_place`).
type Slot = Arc<Mutex<Option<MessageEnvelope>>>;

fn answer<T>(slot: &Slot, status: Status, reply: impl FnOnce() -> T)
where
    T: rkyv::Archive + for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
{
    if let Some(env) = slot.lock().unwrap().take() {
        answer_now(env, status, reply)
    }
}

/// The reply to a request the caller holds (no slot). On a receive thread of the public server
/// a successful reply is held back (`HELD`) and sent by the thread's next receive, one
/// `ReplyAndReceiveNext` syscall for both (on the simulated Precursor this saves a syscall and a
/// context switch per X25519); anywhere else, and if a reply is already held, it goes now.
fn answer_now<T>(env: MessageEnvelope, status: Status, reply: impl FnOnce() -> T)
where
    T: rkyv::Archive + for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
{
    if status == Status::Ok {
        if let Some(env) = prepare_archive_in_place(env, reply(), Status::BadMessage) {
            hold_or_send(env);
        }
    } else {
        reply_error(env, status) // counted by the executor
    }
}

thread_local! {
    /// a receive thread of the public server: replies may be held for its next receive
    static RECEIVER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// the reply held for this thread's next receive
    static HELD: std::cell::Cell<Option<MessageEnvelope>> = const { std::cell::Cell::new(None) };
    /// the request just dispatched went detached to the engine (`Executor::x25519_now`)
    static DETACHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn hold_or_send(env: MessageEnvelope) {
    if RECEIVER.with(|r| r.get()) {
        if let Some(earlier) = HELD.with(|h| h.replace(Some(env))) {
            drop(earlier); // never two held: the earlier one goes now
        }
    } else {
        drop(env); // dropping the envelope sends the reply
    }
}

/// Send the held reply now (before this thread runs a job: no reply waits for one).
fn send_held() {
    drop(HELD.with(|h| h.take()));
}

/// This process's connection to its own public server (the backend wakes a receive thread
/// there about a detached job, `backend::WAKE_ID`) and its PID (only its own wake messages
/// are honoured).
static WAKE_CID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
static OWN_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// How the backend may answer this X25519 itself (`Executor::x25519_now`, detached): once the
/// executor has chosen its window, the success reply (result zero) is written over the request
/// in the lent page, and the backend gets the page, the reply's offset/valid and where the 32
/// result bytes go. `None` for anything but a lend_mut, or without the wake connection.
fn detach_target(env: &MessageEnvelope, backend: BackendId) -> Option<impl FnOnce(u32) -> Option<DetachedReply>> {
    let wake_cid = *WAKE_CID.get()?;
    let xous::Message::MutableBorrow(mem) = &env.body else { return None };
    let (sender, page, len) = (env.sender.to_usize(), mem.buf.as_mut_ptr(), mem.buf.len());
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !service_ipc::archive::archive_fits::<X25519Msg>(len, pos) {
        return None;
    }
    Some(move |window: u32| {
        // the reply goes over the request's own archive (the same type, at the same position):
        // its fields are written in place, the scalar and u wiped
        // Safety: the archive fits the lent page (checked above), which stays mapped writable
        // into this process until its reply; rkyv 0.4 archives these integer and byte-array
        // fields as themselves
        let a = unsafe {
            rkyv::archived_value_mut::<X25519Msg>(core::pin::Pin::new(core::slice::from_raw_parts_mut(page, len)), pos)
        };
        let a = unsafe { a.get_unchecked_mut() };
        unsafe {
            service_ipc::wipe_raw(a.scalar.as_mut_ptr(), 32);
            service_ipc::wipe_raw(a.u.as_mut_ptr(), 32);
            service_ipc::wipe_raw(a.result.as_mut_ptr(), 32);
        }
        a.status = Status::Ok as u32;
        a.backend = backend as u32;
        a.window = window;
        a.cycles = 0;
        let result_at = a.result.as_ptr() as usize - page as usize;
        Some(DetachedReply::over_page(sender, page as usize, len, pos, result_at, wake_cid, None))
    })
}

/// [`detach_target`] for an X25519Batch of `n` jobs (read and checked by `batch_operands`): the
/// reply goes over the request in place (status, backend, every used job's window, zero cycles,
/// results zero; the first job's scalar and u wiped, its operands are with the executor), and
/// the backend takes the other jobs' scalar and u from the page (wiping each as it loads it) and
/// puts each result into its slot.
fn batch_detach_target(
    env: &MessageEnvelope,
    backend: BackendId,
    n: usize,
) -> Option<impl FnOnce(u32) -> Option<DetachedReply>> {
    let wake_cid = *WAKE_CID.get()?;
    let xous::Message::MutableBorrow(mem) = &env.body else { return None };
    let (sender, page, len) = (env.sender.to_usize(), mem.buf.as_mut_ptr(), mem.buf.len());
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !service_ipc::archive::archive_fits::<X25519BatchMsg>(len, pos) || !(2..=MAX_BATCH).contains(&n) {
        return None;
    }
    Some(move |window: u32| {
        // Safety: the archive fits the lent page (checked above), which stays mapped writable
        // into this process until its reply; rkyv 0.4 archives these integer and byte-array
        // fields as themselves
        let a = unsafe {
            rkyv::archived_value_mut::<X25519BatchMsg>(
                core::pin::Pin::new(core::slice::from_raw_parts_mut(page, len)),
                pos,
            )
        };
        let a = unsafe { a.get_unchecked_mut() };
        unsafe {
            service_ipc::wipe_raw(a.scalars[0].as_mut_ptr(), 32);
            service_ipc::wipe_raw(a.us[0].as_mut_ptr(), 32);
            service_ipc::wipe_raw(a.results.as_mut_ptr() as *mut u8, 32 * MAX_BATCH);
        }
        a.status = Status::Ok as u32;
        a.backend = backend as u32;
        for i in 0..MAX_BATCH {
            a.windows[i] = if i < n { window } else { 0 };
            a.cycles[i] = 0;
        }
        let at = |p: *const u8| p as usize - page as usize;
        let batch = DetachedBatch {
            count: n,
            scalars_at: at(a.scalars.as_ptr() as *const u8),
            us_at: at(a.us.as_ptr() as *const u8),
            scalar_reg: 0,
            u_reg: 0,
        };
        let result_at = at(a.results.as_ptr() as *const u8);
        Some(DetachedReply::over_page(sender, page as usize, len, pos, result_at, wake_cid, Some(batch)))
    })
}

/// The scalar and u of an X25519 request, read from its archive in the lent page (bounds and
/// magic checked; no copy of the whole archive). `None`: a bad message.
fn x25519_operands(env: &MessageEnvelope) -> Option<(zeroize::Zeroizing<[u8; 32]>, [u8; 32])> {
    let xous::Message::MutableBorrow(mem) = &env.body else { return None };
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !service_ipc::archive::archive_fits::<X25519Msg>(mem.buf.len(), pos) {
        return None;
    }
    // Safety: in bounds (checked), the page is mapped into this process until the reply
    let a = unsafe { rkyv::archived_value::<X25519Msg>(mem.buf.as_slice(), pos) };
    (a.magic == MAGIC).then(|| (zeroize::Zeroizing::new(a.scalar), a.u))
}

/// The jobs of an X25519Batch request, read from its archive in the lent page into `jobs` (bounds
/// and magic checked; no copy of the whole archive, no allocation, the caller's zeroizing array
/// filled in place): their number `n`, jobs `0..n` of the array. `Err(BadMessage)`: not an
/// archive of the type at its position, or a wrong magic; `Err(BadArgument)`: a count outside
/// 1..=MAX_BATCH, or an unused slot that is not zero (then nothing was written into `jobs`).
fn batch_operands(env: &MessageEnvelope, jobs: &mut BatchJobs) -> Result<usize, Status> {
    let xous::Message::MutableBorrow(mem) = &env.body else { return Err(Status::BadMessage) };
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !service_ipc::archive::archive_fits::<X25519BatchMsg>(mem.buf.len(), pos) {
        return Err(Status::BadMessage);
    }
    // Safety: in bounds (checked), the page is mapped into this process until the reply
    let a = unsafe { rkyv::archived_value::<X25519BatchMsg>(mem.buf.as_slice(), pos) };
    if a.magic != MAGIC {
        return Err(Status::BadMessage);
    }
    let n = a.count as usize;
    if n == 0 || n > MAX_BATCH {
        return Err(Status::BadArgument);
    }
    // unused slots must be zero (the OR of their bytes: no early exit on a secret)
    let mut unused = 0u8;
    for i in n..MAX_BATCH {
        for b in a.scalars[i].iter().chain(a.us[i].iter()) {
            unused |= *b;
        }
    }
    if unused != 0 {
        return Err(Status::BadArgument);
    }
    for (i, (k, u)) in jobs.iter_mut().enumerate().take(n) {
        **k = a.scalars[i];
        *u = a.us[i];
    }
    Ok(n)
}

/// A batch's jobs as the server holds them (scalars wiped when dropped).
type BatchJobs = [(zeroize::Zeroizing<[u8; 32]>, [u8; 32]); MAX_BATCH];

/// The success reply of a batch: every result, window and cycle count (scalars and u zero).
fn batch_reply(outs: &[Outcome], backend: BackendId) -> X25519BatchMsg {
    let mut m = X25519BatchMsg::new(&[]).expect("an empty batch fits");
    m.status = Status::Ok as u32;
    m.count = outs.len() as u32;
    m.backend = outs.first().map(|o| o.backend).unwrap_or(backend) as u32;
    for (i, o) in outs.iter().enumerate().take(MAX_BATCH) {
        m.results[i] = o.result;
        m.windows[i] = o.window;
        m.cycles[i] = o.cycles;
    }
    m
}

/// Public server: Version, Stats, X25519, X25519Batch, LoadProgram, RunJob.
fn dispatch_public(ex: &Arc<Executor>, env: MessageEnvelope) {
    let client = sender_pid(&env);
    let kind = Kind::of(&env.body);
    match (Opcode::from_usize(env.body.id()), kind) {
        (None, _) => refuse(ex, env, Status::UnknownOpcode),
        (Some(op), _) if op.is_control() => {
            // logged (first few only: a client must not be able to flood the log)
            static LOGGED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            if LOGGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 8 {
                log::warn!("engine25519: pid {} sent privileged opcode {:?} to the public server: refused", client, op);
            }
            refuse(ex, env, Status::NotPermitted)
        }
        (Some(Opcode::Version), Kind::BlockingScalar) => {
            reply_scalar2(env, api::API_VERSION as usize, ex.stats().backend as usize)
        }
        (Some(Opcode::Stats), Kind::LendMut) => match decode_request::<StatsMsg>(&env) {
            Some(m) if m.magic == MAGIC => reply_archive(env, ex.stats(), Status::BadMessage),
            _ => refuse(ex, env, Status::BadMessage),
        },
        (Some(Opcode::X25519), Kind::LendMut) => {
            let Some((k, u)) = x25519_operands(&env) else {
                return refuse(ex, env, Status::BadMessage);
            };
            // the closure owns the request: the executor calls it exactly once, a refusal too;
            // with the engine idle and nothing queued it runs the job on this thread at once
            // (no queue round, no boxed reply), or has the backend run and answer it on its own
            // (detached: then the closure only releases the request), otherwise it queues it
            let detach = detach_target(&env, ex.backend());
            let reply = move |o: Outcome| {
                if o.answered {
                    std::mem::forget(env); // answered by the backend: nothing to return
                } else {
                    answer_now(env, o.status, || x25519_reply(&o))
                }
            };
            if ex.config().driver == Driver::Callers {
                // detached: the engine has nothing else to do now (the receive loop skips drive)
                let detached = ex.x25519_now(client, &k, &u, &send_held, reply, detach);
                DETACHED.with(|d| d.set(detached));
            } else {
                ex.submit_x25519_answering(client, &k, &u, Box::new(reply));
            }
        }
        (Some(Opcode::X25519Batch), Kind::LendMut) => {
            let mut jobs = BatchJobs::default();
            let n = match batch_operands(&env, &mut jobs) {
                Ok(n) => n,
                Err(s) => return refuse(ex, env, s),
            };
            let jobs = &jobs[..n];
            let backend = ex.backend();
            let callers = ex.config().driver == Driver::Callers;
            let detach = if callers { batch_detach_target(&env, backend, n) } else { None };
            // the success of a detached batch was answered by the backend: only release it
            let reply = move |s, mut outs: Vec<Outcome>| {
                if s == Status::Ok && outs.first().is_some_and(|o| o.answered) {
                    std::mem::forget(env);
                    return;
                }
                answer_now(env, s, || batch_reply(&outs, backend));
                for o in outs.iter_mut() {
                    zeroize::Zeroize::zeroize(&mut o.result);
                }
            };
            if callers {
                let detached = ex.x25519_batch_now(client, jobs, &send_held, reply, detach);
                DETACHED.with(|d| d.set(detached));
            } else {
                ex.submit_x25519_batch(client, jobs, Box::new(reply));
            }
        }
        (Some(Opcode::LoadProgram), Kind::LendMut) => {
            let Some(m) = decode_request::<ProgramMsg>(&env).filter(|m| m.magic == MAGIC) else {
                return refuse(ex, env, Status::BadMessage);
            };
            if m.len == 0 || m.len as usize > api::UCODE_WORDS {
                return refuse(ex, env, Status::BadProgram);
            }
            match ex.load_program(&m.words[..m.len as usize]) {
                Ok((handle, start)) => {
                    let r = ProgramMsg {
                        magic: MAGIC,
                        status: Status::Ok as u32,
                        len: m.len,
                        handle,
                        mpstart: start as u32,
                        words: [0; api::UCODE_WORDS],
                    };
                    reply_archive(env, r, Status::BadMessage)
                }
                Err(s) => reply_error(env, s), // counted by the executor
            }
        }
        (Some(Opcode::RunJob), Kind::LendMut) => {
            let Some(m) = decode_request::<JobMsg>(&env).filter(|m| m.magic == MAGIC) else {
                return refuse(ex, env, Status::BadMessage);
            };
            if m.reserved != 0 {
                return refuse(ex, env, Status::BadArgument);
            }
            let window = match m.window {
                WINDOW_ANY => WindowReq::Any,
                w if (w as usize) < api::NUM_WINDOWS => WindowReq::Fixed(w as usize),
                _ => return refuse(ex, env, Status::BadWindow),
            };
            let handle = m.handle;
            let job = move |o: &Outcome| JobMsg {
                magic: MAGIC,
                status: Status::Ok as u32,
                handle,
                window: o.window,
                max_cycles: 0,
                cycles: o.cycles,
                backend: o.backend as u32,
                reserved: 0,
                regs: o.regs.as_deref().copied().unwrap_or([[0; 32]; NUM_REGS]),
            };
            let slot: Slot = Arc::new(Mutex::new(Some(env)));
            let s2 = slot.clone();
            let r = ex.submit_job(
                client,
                handle,
                window,
                &m.regs,
                m.max_cycles,
                Box::new(move |o: Outcome| answer(&s2, o.status, || job(&o))),
            );
            if let Err(s) = r {
                answer(&slot, s, || job(&Outcome::error(s, ex.backend())));
            }
        }
        // known opcode, wrong message kind (e.g. X25519 as a scalar, Version as a lend)
        (Some(_), _) => {
            ex.count_error();
            reply_bad_kind(env, Status::BadMessage)
        }
    }
}

/// Control server: Suspend, Resume, Quit. Public opcodes are not served here.
fn dispatch_control(ex: &Arc<Executor>, env: MessageEnvelope) {
    let kind = Kind::of(&env.body);
    match (Opcode::from_usize(env.body.id()), kind) {
        (Some(op @ (Opcode::Suspend | Opcode::Resume)), Kind::BlockingScalar) => {
            let sender = env.sender;
            std::mem::forget(env); // scalar envelope: no memory to return; answered below
            let reply: engine25519_server::executor::ScalarReplyFn = Box::new(move |s, n| {
                if s == Status::Ok {
                    let _ = xous::return_scalar2(sender, n, 0);
                } else {
                    let _ = xous::return_scalar(sender, s as usize);
                }
            });
            if op == Opcode::Suspend {
                ex.suspend(reply)
            } else {
                ex.resume(reply)
            }
        }
        (Some(Opcode::Quit), Kind::BlockingScalar) => {
            // The service stops: every later X25519 / LoadProgram / RunJob is refused BadState.
            // The process stays to answer: a Xous server that exits leaves every client that
            // calls it afterwards blocked forever on the hosted kernel (measured), so "quit"
            // means "refuse everything", not "disappear".
            log::info!("engine25519: Quit from the control server: refusing new work, answering queued jobs");
            let t0 = std::time::Instant::now();
            while !ex.close() {
                if t0.elapsed() > QUIT_DRAIN {
                    log::warn!("engine25519: Quit: jobs still queued after {:?}", QUIT_DRAIN);
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            reply_ok(env);
            log::info!("engine25519: stopped (every request for work is refused from now on)");
        }
        (None, _) => refuse(ex, env, Status::UnknownOpcode),
        // public opcodes are served by the public server only
        (Some(op), _) if !op.is_control() => refuse(ex, env, Status::UnknownOpcode),
        (Some(_), _) => {
            ex.count_error();
            reply_bad_kind(env, Status::BadMessage)
        }
    }
}

/// How long Quit waits for queued jobs to be answered.
const QUIT_DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

fn fail(msg: &str) -> ! {
    log::error!("engine25519: {}", msg);
    println!("ENGINE25519 ERROR {}", msg);
    std::process::exit(2);
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = parse_options_from(&args, &|k: &str| std::env::var(k).ok())
        .unwrap_or_else(|e| fail(&format!("bad options: {}", e)));
    // the hw backend without --isa: the ISA the engine on the bus implements (Precursor: v1)
    let (engine, isa) = if opts.backend == "hw" && !opts.isa_given {
        engine25519_server::factory::create_hw_probed().unwrap_or_else(|e| fail(&e))
    } else {
        (engine25519_server::factory::create(&opts.backend, opts.isa).unwrap_or_else(|e| fail(&e)), opts.isa)
    };
    let x25519 = engine25519_server::programs::x25519_program(isa);
    let ex = Executor::start(engine, x25519, opts.cfg.clone());
    if let Some(why) = ex.unavailable_reason() {
        log::warn!("engine25519: {}", why);
    }
    let xns = xous_api_names::XousNames::new().unwrap();
    // control first: once the public name resolves, the control name exists (docs/security.md)
    let control = service_ipc::control::register_control(&xns, api::CONTROL_NAME, api::CONTROL_SLOTS)
        .unwrap_or_else(|e| fail(&e));
    let public = service_ipc::control::register_public(&xns, api::SERVER_NAME).unwrap_or_else(|e| fail(&e));
    if opts.cfg.driver == Driver::Callers {
        match (xous::connect(public), xous::current_pid()) {
            (Ok(cid), Ok(pid)) => {
                let _ = WAKE_CID.set(cid);
                let _ = OWN_PID.set(pid.get() as u32);
            }
            (c, p) => log::warn!(
                "engine25519: no wake connection to the public server ({c:?}, {p:?}): every job waits on its thread"
            ),
        }
    }
    let receivers = if opts.cfg.driver == Driver::Callers { opts.receivers } else { 1 };
    log::info!(
        "engine25519: registered '{}' and '{}' ({} control slot(s)), backend {} isa {} ({}), pacing {}, receive threads {}",
        api::SERVER_NAME,
        api::CONTROL_NAME,
        api::CONTROL_SLOTS,
        opts.backend,
        isa,
        if ex.unavailable_reason().is_some() {
            if opts.cfg.software_fallback { "no engine: software fallback" } else { "no engine" }
        } else {
            "engine available"
        },
        if opts.cfg.pace_hz > 0 { format!("{} Hz", opts.cfg.pace_hz) } else { "off".into() },
        receivers
    );
    #[cfg(target_os = "xous")]
    suspend_hook::start(&xns, ex.clone());
    drop(xns);
    {
        let ex = ex.clone();
        std::thread::Builder::new()
            .name("engine25519-control".into())
            .spawn(move || loop {
                let env = xous::receive_message(control).unwrap();
                dispatch_control(&ex, env);
                if ex.config().driver == Driver::Callers {
                    ex.drive(); // a Suspend/Resume request is work for the engine token holder
                }
            })
            .expect("spawn control thread");
    }
    for i in 1..receivers {
        let ex = ex.clone();
        std::thread::Builder::new()
            .name(format!("engine25519-rx{}", i))
            .spawn(move || receive_loop(public, &ex))
            .expect("spawn receive thread");
    }
    receive_loop(public, &ex)
}

/// System suspend and resume (device): the server registers with xous-susres, the Xous
/// convention for a service with hardware state. On a suspend event it has the executor save the
/// engine (the running job paused at an instruction boundary on an engine that can resume, or run
/// to its end on one that cannot; microcode RAM and every register-file window copied to RAM,
/// the engine reset), tells susres it is ready and blocks until the system has resumed; the SoC
/// was powered down meanwhile, the engine with it. Then it has the executor restore microcode and
/// register file into the reset engine, and the paused job continues, the queued ones start:
/// every client gets its answer. docs/engine-service.md, "Suspend / resume".
#[cfg(target_os = "xous")]
mod suspend_hook {
    use std::sync::mpsc;
    use std::sync::Arc;

    use engine25519_server::api::Status;
    use engine25519_server::executor::{Driver, Executor};

    fn wait(ex: &Executor, rx: &mpsc::Receiver<(Status, usize)>) -> (Status, usize) {
        if ex.config().driver == Driver::Callers {
            ex.drive(); // takes the request now if no thread holds the engine
        }
        rx.recv().unwrap_or((Status::Internal, 0))
    }

    pub fn start(xns: &xous_api_names::XousNames, ex: Arc<Executor>) {
        if ex.unavailable_reason().is_some() {
            return; // no engine state to keep
        }
        let lost = "a system suspend would lose the engine's state";
        service_ipc::suspend::register("engine25519", xns, lost, move |sleep| {
            let (tx, rx) = mpsc::channel();
            let t = tx.clone();
            ex.suspend(Box::new(move |s, n| {
                let _ = t.send((s, n));
            }));
            let (s, n) = wait(&ex, &rx);
            log::info!("engine25519: suspend: engine saved ({s:?}), {n} job(s) in flight");
            let clean = sleep();
            // powered up again: the engine was reset with the SoC; restore it
            ex.resume(Box::new(move |s, n| {
                let _ = tx.send((s, n));
            }));
            let (s, n) = wait(&ex, &rx);
            log::info!(
                "engine25519: resumed (clean {clean:?}): engine restored ({s:?}), {n} job(s) in flight continue"
            );
        });
    }
}

/// Default number of receive threads.
const RECEIVERS: usize = 2;
/// Upper bound (the hosted kernel has ~30 thread slots per process).
const MAX_RECEIVERS: usize = 8;

fn receive_loop(sid: xous::SID, ex: &Arc<Executor>) -> ! {
    RECEIVER.with(|r| r.set(true));
    loop {
        // the reply held from the last round (if any) and the next receive in one syscall
        let mut msg = HELD.with(|h| h.take());
        let held = msg.is_some();
        if let Err(e) = xous::reply_and_receive_next(sid, &mut msg) {
            if !held {
                panic!("engine25519: receive on the public server failed: {e:?}");
            }
            // the held reply could not be delivered (e.g. its sender has gone; a plain reply
            // would have failed the same way, silently) and nothing was received: receive
            // again, without a reply, and keep serving everyone else
            log::warn!("engine25519: a held reply could not be delivered: {e:?}");
            continue;
        }
        let Some(env) = msg.take() else { continue };
        if env.body.id() == WAKE_ID && OWN_PID.get().is_some_and(|&p| p == sender_pid(&env)) {
            // the backend about a detached job (its end, or a tick of its ticker)
            let tick = scalar_args(&env).is_some_and(|a| a[0] == WAKE_TICK);
            drop(env); // a scalar: nothing to answer
            ex.wake(tick, &send_held);
            continue;
        }
        dispatch_public(ex, env);
        if !DETACHED.with(|d| d.replace(false)) && ex.config().driver == Driver::Callers {
            // run what was queued if the engine is idle; returns at once if another thread has it
            ex.drive_with(&send_held);
        }
    }
}

#[cfg(test)]
mod option_tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Options, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        parse_options_from(&args, &move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn defaults_and_good_options() {
        let o = parse(&[], &[]).unwrap();
        assert_eq!((o.backend.as_str(), o.isa, o.receivers), ("model", engine25519_core::isa::Isa::V2, RECEIVERS));
        let o = parse(
            &[
                "--backend",
                "software",
                "--isa",
                "v1",
                "--pace=25_000_000",
                "--quantum",
                "0x1000",
                "--receivers",
                "3",
                "--no-fallback",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            (o.backend.as_str(), o.isa, o.cfg.pace_hz, o.cfg.quantum, o.receivers),
            ("software", engine25519_core::isa::Isa::V1, 25_000_000, 0x1000, 3)
        );
        assert!(!o.cfg.software_fallback);
        // arguments win over the environment
        let o = parse(&["--isa", "v2"], &[("ENGINE25519_ISA", "v1"), ("ENGINE25519_QUEUE", "7")]).unwrap();
        assert_eq!((o.isa, o.cfg.global_cap), (engine25519_core::isa::Isa::V2, 7));
    }

    #[test]
    fn malformed_options_get_a_clear_error() {
        for (args, env, want) in [
            (&["--isa", "v9"][..], &[][..], "unknown ISA 'v9'"),
            (&["--isa"][..], &[][..], "--isa needs a value"),
            (&["--quantum", "lots"][..], &[][..], "is not a number"),
            (&["--quantum", "0"][..], &[][..], "must be > 0"),
            (&["--queue", "-3"][..], &[][..], "is not a number"),
            (&["--per-client", "0"][..], &[][..], "must be > 0"),
            (&["--pace=fast"][..], &[][..], "is not a number"),
            (&["--driver", "turbo"][..], &[][..], "unknown driver 'turbo'"),
            (&["--receivers", "1"][..], &[][..], "receivers must be 2..="),
            (&["--receivers", "99"][..], &[][..], "receivers must be 2..="),
            (&["--frobnicate"][..], &[][..], "unknown option '--frobnicate'"),
            (&[][..], &[("ENGINE25519_ISA", "x")][..], "unknown ISA 'x'"),
            (&[][..], &[("ENGINE25519_PACE_HZ", "1e9")][..], "is not a number"),
            (&[][..], &[("ENGINE25519_RECEIVERS", "0")][..], "receivers must be 2..="),
        ] {
            match parse(args, env) {
                Ok(_) => panic!("{args:?} {env:?} accepted"),
                Err(e) => assert!(e.contains(want), "{args:?} {env:?}: {e}"),
            }
        }
    }

    #[test]
    fn unknown_backend_is_refused_at_creation() {
        let o = parse(&["--backend", "quantum"], &[]).unwrap();
        let e = engine25519_server::factory::create(&o.backend, o.isa).err().expect("unknown backend accepted");
        assert!(e.contains("unknown backend 'quantum'"), "{e}");
        // hw exists only on the device (either ISA: the server probes the engine there)
        for isa in [engine25519_core::isa::Isa::V1, engine25519_core::isa::Isa::V2] {
            let e = engine25519_server::factory::create("hw", isa).err().expect("hw accepted on the host");
            assert!(e.contains("only on the Xous target"), "{e}");
        }
        assert!(engine25519_server::factory::create_hw_probed().is_err());
        // the software fallback runs no microcode: it takes either ISA
        for isa in [engine25519_core::isa::Isa::V1, engine25519_core::isa::Isa::V2] {
            assert!(engine25519_server::factory::create("software", isa).is_ok(), "software with {isa} refused");
        }
    }
}
