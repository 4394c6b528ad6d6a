//! engine25519 server. The receive loop decodes, dispatches and replies; the work (queue, windows,
//! microcode cache, backends) lives in `engine25519_server::executor` and friends.
//!
//! Two threads run the receive loop (`RECEIVERS`, `--receivers`). After queueing a job a thread drives the
//! engine itself if it is idle (`Executor::drive`, `Driver::Callers`): no hand-off to a worker
//! thread per request. While one thread is busy on the engine the other keeps receiving, so other
//! clients are always answered (queued, or refused with Busy) without waiting for the engine.
//!
//! Options (argument or environment variable; arguments win):
//!   --backend model|hw|rtl|software   ENGINE25519_BACKEND   (default: hw on Xous, model hosted)
//!   --isa v1|v2                       ENGINE25519_ISA       (model only; default v2 hosted, v1 on the device)
//!   --pace[=HZ]                       ENGINE25519_PACE_HZ   (off by default; --pace = 50 MHz)
//!   --quantum CYCLES                  ENGINE25519_QUANTUM
//!   --queue N / --per-client N        ENGINE25519_QUEUE / ENGINE25519_PER_CLIENT
//!   --no-fallback                     ENGINE25519_NO_FALLBACK=1
//!   --driver callers|thread           ENGINE25519_DRIVER    (default callers; thread = the
//!                                     receive loop hands every job to a worker thread)
//!   --receivers N                     ENGINE25519_RECEIVERS (callers only; 2..=8, default 2)

use num_traits::FromPrimitive;
use xous::{Message, MessageEnvelope};
use xous_ipc::Buffer;

use engine25519_server::api::{
    self, archive_fits, JobMsg, Opcode, ProgramMsg, StatsMsg, Status, X25519Msg, MAGIC, NUM_REGS, WINDOW_ANY,
};
use engine25519_server::executor::{Config, Driver, Executor, Outcome};
use engine25519_server::scheduler::WindowReq;

struct Options {
    backend: String,
    isa: engine25519_core::isa::Isa,
    cfg: Config,
    /// receive threads (`Driver::Callers` only)
    receivers: usize,
}

fn parse_u64(name: &str, v: &str) -> Result<u64, String> {
    let v = v.replace('_', "");
    let r = if let Some(h) = v.strip_prefix("0x") { u64::from_str_radix(h, 16) } else { v.parse() };
    r.map_err(|_| format!("{}: '{}' is not a number", name, v))
}

fn parse_options() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    parse_options_from(&args, &|k: &str| std::env::var(k).ok())
}

/// Options from `args` (after the program name) and the environment lookup `getenv`.
fn parse_options_from(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Options, String> {
    let mut o = Options {
        backend: if cfg!(target_os = "xous") { "hw".into() } else { "model".into() },
        // hosted: our v2 engine (what the gateware implements); device: Precursor's shipping v1
        isa: if cfg!(target_os = "xous") { engine25519_core::isa::Isa::V1 } else { engine25519_core::isa::Isa::V2 },
        cfg: Config { driver: Driver::Callers, ..Config::default() },
        receivers: RECEIVERS,
    };
    let env = |k: &str| getenv(k).filter(|v| !v.is_empty());
    if let Some(b) = env("ENGINE25519_BACKEND") {
        o.backend = b;
    }
    let parse_isa = |v: &str| v.parse::<engine25519_core::isa::Isa>().map_err(|_| format!("unknown ISA '{}': expected v1 or v2", v));
    if let Some(v) = env("ENGINE25519_ISA") {
        o.isa = parse_isa(&v)?;
    }
    if let Some(v) = env("ENGINE25519_PACE_HZ") {
        o.cfg.pace_hz = parse_u64("ENGINE25519_PACE_HZ", &v)?;
    }
    if let Some(v) = env("ENGINE25519_QUANTUM") {
        o.cfg.quantum = parse_u64("ENGINE25519_QUANTUM", &v)?;
    }
    if let Some(v) = env("ENGINE25519_QUEUE") {
        o.cfg.global_cap = parse_u64("ENGINE25519_QUEUE", &v)? as usize;
    }
    if let Some(v) = env("ENGINE25519_PER_CLIENT") {
        o.cfg.per_client_cap = parse_u64("ENGINE25519_PER_CLIENT", &v)? as usize;
    }
    let parse_driver = |v: &str| match v {
        "callers" => Ok(Driver::Callers),
        "thread" => Ok(Driver::Thread),
        _ => Err(format!("unknown driver '{}': expected callers or thread", v)),
    };
    if let Some(v) = env("ENGINE25519_DRIVER") {
        o.cfg.driver = parse_driver(&v)?;
    }
    if let Some(v) = env("ENGINE25519_RECEIVERS") {
        o.receivers = parse_u64("ENGINE25519_RECEIVERS", &v)? as usize;
    }
    if env("ENGINE25519_NO_FALLBACK").as_deref() == Some("1") {
        o.cfg.software_fallback = false;
    }
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let value = |i: &mut usize| -> Result<String, String> {
            *i += 1;
            args.get(*i).cloned().ok_or_else(|| format!("{} needs a value", a))
        };
        match a {
            "--backend" => o.backend = value(&mut i)?,
            "--isa" => o.isa = parse_isa(&value(&mut i)?)?,
            "--pace" => o.cfg.pace_hz = engine25519_core::isa::Isa::V1.info().eng_clk_hz,
            "--quantum" => o.cfg.quantum = parse_u64(a, &value(&mut i)?)?,
            "--queue" => o.cfg.global_cap = parse_u64(a, &value(&mut i)?)? as usize,
            "--per-client" => o.cfg.per_client_cap = parse_u64(a, &value(&mut i)?)? as usize,
            "--no-fallback" => o.cfg.software_fallback = false,
            "--driver" => o.cfg.driver = parse_driver(&value(&mut i)?)?,
            "--receivers" => o.receivers = parse_u64(a, &value(&mut i)?)? as usize,
            _ if a.starts_with("--pace=") => o.cfg.pace_hz = parse_u64("--pace", &a[7..])?,
            _ if a.starts_with("--backend=") => o.backend = a[10..].to_string(),
            _ => return Err(format!("unknown option '{}'", a)),
        }
        i += 1;
    }
    if o.cfg.quantum == 0 || o.cfg.global_cap == 0 || o.cfg.per_client_cap == 0 {
        return Err("quantum, queue and per-client must be > 0".into());
    }
    if !(2..=MAX_RECEIVERS).contains(&o.receivers) {
        // one thread would stop receiving while it runs a job: no Busy answers, no Suspend
        // until a long custom job ends
        return Err(format!("receivers must be 2..={} (one thread could not answer while it drives the engine)", MAX_RECEIVERS));
    }
    Ok(o)
}

/// Decode a request archive after checking that it lies inside the lent buffer.
fn decode<T>(mem: &xous::MemoryMessage) -> Result<T, Status>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !archive_fits::<T>(mem.buf.len(), pos) {
        return Err(Status::BadMessage);
    }
    let buf = unsafe { Buffer::from_memory_message(mem) };
    buf.to_original::<T, _>().map_err(|_| Status::BadMessage)
}

/// Write `msg` as the reply archive of a mutable lend (wiping the page first: it may hold a
/// secret scalar) and release the caller.
fn reply_mem<T>(mut env: MessageEnvelope, msg: T)
where
    T: for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
{
    if let Message::MutableBorrow(mem) = &mut env.body {
        // the archive must fit at position 0 (checked on decode for the same type)
        if archive_fits::<T>(mem.buf.len(), 0) {
            let mut buf = unsafe { Buffer::from_memory_message_mut(mem) };
            buf.volatile_clear();
            let _ = buf.replace(msg);
            drop(buf);
            return; // dropping `env` returns the memory with the new offset
        }
    }
    reply_status_in_valid(env, Status::BadMessage);
}

/// Error reply for a memory message that cannot carry a reply archive: the memory goes back
/// with offset 0 and `valid` = status code (documented in docs/engine-service.md).
fn reply_status_in_valid(env: MessageEnvelope, status: Status) {
    match &env.body {
        Message::MutableBorrow(mem) | Message::Borrow(mem) => {
            let (buf, sender) = (mem.buf, env.sender);
            let _ = env.take_message(); // we return the memory ourselves
            let _ = xous::return_memory_offset_valid(sender, buf, None, xous::MemorySize::new(status as usize));
        }
        Message::BlockingScalar(_) => {
            let _ = xous::return_scalar2(env.sender, status as usize, 0);
        }
        _ => {} // Move / Scalar: nothing to answer; dropping frees a moved page
    }
}

fn x25519_reply(status: Status) -> X25519Msg {
    let mut m = X25519Msg::new([0; 32], [0; 32]);
    m.status = status as u32;
    m
}

fn program_reply(status: Status) -> ProgramMsg {
    ProgramMsg { magic: MAGIC, status: status as u32, len: 0, handle: 0, mpstart: 0, words: [0; api::UCODE_WORDS] }
}

fn job_reply(status: Status) -> JobMsg {
    JobMsg {
        magic: MAGIC,
        status: status as u32,
        handle: 0,
        window: 0,
        max_cycles: 0,
        cycles: 0,
        backend: 0,
        reserved: 0,
        regs: [[0; 32]; NUM_REGS],
    }
}

/// Reply with an error archive of type T if the buffer can hold one, else via `valid`.
fn reply_error<T>(env: MessageEnvelope, ex: &Executor, reply: T, status: Status)
where
    T: for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
{
    ex.count_error();
    match &env.body {
        Message::MutableBorrow(_) => reply_mem(env, reply),
        _ => reply_status_in_valid(env, status),
    }
}

fn dispatch(ex: &std::sync::Arc<Executor>, mut env: MessageEnvelope) {
    let client = env.sender.pid().map(|p| p.get() as u32).unwrap_or(0);
    let op = Opcode::from_usize(env.body.id());
    let is_mut = matches!(env.body, Message::MutableBorrow(_));
    let is_bscalar = matches!(env.body, Message::BlockingScalar(_));
    match op {
        None => {
            ex.count_error();
            reply_status_in_valid(env, Status::UnknownOpcode);
        }
        Some(Opcode::Version) if is_bscalar => {
            let v = (api::API_VERSION << 16) | ex.stats().backend;
            let _ = xous::return_scalar2(env.sender, Status::Ok as usize, v as usize);
        }
        Some(Opcode::Suspend) if is_bscalar => {
            let sender = env.sender;
            std::mem::forget(env); // scalar envelope: no memory to return
            ex.suspend(Box::new(move |s, n| {
                let _ = xous::return_scalar2(sender, s as usize, n);
            }));
        }
        Some(Opcode::Resume) if is_bscalar => {
            let sender = env.sender;
            std::mem::forget(env);
            ex.resume(Box::new(move |s, n| {
                let _ = xous::return_scalar2(sender, s as usize, n);
            }));
        }
        Some(Opcode::Stats) if is_mut => {
            let Message::MutableBorrow(mem) = &env.body else { unreachable!() };
            match decode::<StatsMsg>(mem) {
                Ok(m) if m.magic == MAGIC => reply_mem(env, ex.stats()),
                _ => reply_error(env, ex, StatsMsg { magic: MAGIC, status: Status::BadMessage as u32, ..Default::default() }, Status::BadMessage),
            }
        }
        Some(Opcode::X25519) if is_mut => {
            let Message::MutableBorrow(mem) = &mut env.body else { unreachable!() };
            let mut m = match decode::<X25519Msg>(mem) {
                Ok(m) if m.magic == MAGIC => m,
                _ => return reply_error(env, ex, x25519_reply(Status::BadMessage), Status::BadMessage),
            };
            let (k, u) = (m.scalar, m.u);
            zeroize::Zeroize::zeroize(&mut m.scalar);
            let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(env)));
            let s2 = slot.clone();
            let r = ex.submit_x25519(
                client,
                &k,
                &u,
                Box::new(move |o: Outcome| {
                    let mut m = x25519_reply(o.status);
                    m.backend = o.backend as u32;
                    m.window = o.window;
                    m.cycles = o.cycles;
                    m.result = o.result;
                    if let Some(env) = s2.lock().unwrap().take() {
                        reply_mem(env, m);
                    }
                }),
            );
            if let Err(s) = r {
                if let Some(env) = slot.lock().unwrap().take() {
                    reply_mem(env, x25519_reply(s)); // counted by the executor
                }
            }
        }
        Some(Opcode::LoadProgram) if is_mut => {
            let Message::MutableBorrow(mem) = &env.body else { unreachable!() };
            let m = match decode::<ProgramMsg>(mem) {
                Ok(m) if m.magic == MAGIC => m,
                _ => return reply_error(env, ex, program_reply(Status::BadMessage), Status::BadMessage),
            };
            if m.len == 0 || m.len as usize > api::UCODE_WORDS {
                return reply_error(env, ex, program_reply(Status::BadProgram), Status::BadProgram);
            }
            match ex.load_program(&m.words[..m.len as usize]) {
                Ok((handle, start)) => {
                    let mut r = program_reply(Status::Ok);
                    r.len = m.len;
                    r.handle = handle;
                    r.mpstart = start as u32;
                    reply_mem(env, r)
                }
                Err(s) => reply_mem(env, program_reply(s)), // counted by the executor
            }
        }
        Some(Opcode::RunJob) if is_mut => {
            let Message::MutableBorrow(mem) = &env.body else { unreachable!() };
            let m = match decode::<JobMsg>(mem) {
                Ok(m) if m.magic == MAGIC => m,
                _ => return reply_error(env, ex, job_reply(Status::BadMessage), Status::BadMessage),
            };
            if m.reserved != 0 {
                return reply_error(env, ex, job_reply(Status::BadArgument), Status::BadArgument);
            }
            let window = match m.window {
                WINDOW_ANY => WindowReq::Any,
                w if (w as usize) < api::NUM_WINDOWS => WindowReq::Fixed(w as usize),
                _ => return reply_error(env, ex, job_reply(Status::BadWindow), Status::BadWindow),
            };
            let handle = m.handle;
            let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(env)));
            let s2 = slot.clone();
            let r = ex.submit_job(
                client,
                handle,
                window,
                &m.regs,
                m.max_cycles,
                Box::new(move |o: Outcome| {
                    let mut r = job_reply(o.status);
                    r.handle = handle;
                    r.window = o.window;
                    r.cycles = o.cycles;
                    r.backend = o.backend as u32;
                    if let Some(regs) = o.regs {
                        r.regs = *regs;
                    }
                    if let Some(env) = s2.lock().unwrap().take() {
                        reply_mem(env, r);
                    }
                }),
            );
            if let Err(s) = r {
                if let Some(env) = slot.lock().unwrap().take() {
                    reply_mem(env, job_reply(s)); // counted by the executor
                }
            }
        }
        Some(_) => {
            // known opcode, wrong message kind (e.g. X25519 as a scalar, Version as a lend)
            ex.count_error();
            reply_status_in_valid(env, Status::BadMessage);
        }
    }
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            log::error!("engine25519: bad options: {}", e);
            println!("ENGINE25519 ERROR bad options: {}", e);
            std::process::exit(2);
        }
    };
    let engine = match engine25519_server::factory::create(&opts.backend, opts.isa) {
        Ok(e) => e,
        Err(e) => {
            log::error!("engine25519: {}", e);
            println!("ENGINE25519 ERROR {}", e);
            std::process::exit(2);
        }
    };
    let x25519 = engine25519_server::programs::x25519_program(opts.isa);
    let ex = Executor::start(engine, x25519, opts.cfg.clone());
    if let Some(why) = ex.unavailable_reason() {
        log::warn!("engine25519: {}", why);
    }
    let xns = xous_api_names::XousNames::new().unwrap();
    let sid = xns.register_name(api::SERVER_NAME, None).expect("can't register server");
    log::info!(
        "engine25519: registered as '{}', backend {} isa {} ({}), pacing {}, receive threads {}",
        api::SERVER_NAME,
        opts.backend,
        opts.isa,
        if ex.unavailable_reason().is_some() {
            if opts.cfg.software_fallback { "no engine: software fallback" } else { "no engine" }
        } else {
            "engine available"
        },
        if opts.cfg.pace_hz > 0 { format!("{} Hz", opts.cfg.pace_hz) } else { "off".into() },
        if opts.cfg.driver == Driver::Callers { opts.receivers } else { 1 }
    );
    let receivers = if opts.cfg.driver == Driver::Callers { opts.receivers } else { 1 };
    for i in 1..receivers {
        let ex = ex.clone();
        std::thread::Builder::new()
            .name(format!("engine25519-rx{}", i))
            .spawn(move || receive_loop(sid, &ex))
            .expect("spawn receive thread");
    }
    receive_loop(sid, &ex)
}

/// Default number of receive threads.
const RECEIVERS: usize = 2;
/// Upper bound (the hosted kernel has ~30 thread slots per process).
const MAX_RECEIVERS: usize = 8;

fn receive_loop(sid: xous::SID, ex: &std::sync::Arc<Executor>) -> ! {
    loop {
        let env = xous::receive_message(sid).unwrap();
        dispatch(ex, env);
        if ex.config().driver == Driver::Callers {
            // run what was queued if the engine is idle; returns at once if another thread has it
            ex.drive();
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
        let o = parse(&["--backend", "software", "--isa", "v1", "--pace=25_000_000", "--quantum", "0x1000", "--receivers", "3", "--no-fallback"], &[]).unwrap();
        assert_eq!((o.backend.as_str(), o.isa, o.cfg.pace_hz, o.cfg.quantum, o.receivers), ("software", engine25519_core::isa::Isa::V1, 25_000_000, 0x1000, 3));
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
        let e = engine25519_server::factory::create("hw", engine25519_core::isa::Isa::V2).err().expect("hw with v2 accepted");
        assert!(e.contains("exists only in the model backend"), "{e}");
    }
}
