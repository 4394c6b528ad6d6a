//! TRNG server (`trng`): raw sources -> SP 800-90B health tests -> ChaCha20 conditioner ->
//! clients over Xous IPC, plus the hosted tester (TCP, interface 5).
//!
//! Start-up configuration (arguments win over environment variables):
//!
//! | argument | env | meaning |
//! |---|---|---|
//! | `--source S` | `TRNG_SOURCE` | `hosted-os` (default off-device: OS entropy feeds the conditioner), `model` (the avalanche + ring-oscillator models feed it), `hw` (device only: the TRNG registers) |
//! | `--faults SPEC` | `TRNG_FAULTS` | model fault injection at start, e.g. `av0:stuck=0x800@5000` (see trng_core::sources) |
//! | `--model-seed HEX64` | `TRNG_MODEL_SEED` | fixed 32-byte seed for the models' physics (reproducible tests); default: OS entropy |
//! | `--no-tester` | `TRNG_TESTER=0` | do not start the TCP tester |
//! | | `TRNG_TESTER_PORT`, `TRNG_TESTER_PORTFILE` | tester port / port file (docs/trng-tester-protocol.md) |
//!
//! The server logs `TRNG-SERVER ready source=S` once registered.

mod backend;
#[cfg(target_os = "xous")]
mod hw;
#[cfg(not(target_os = "xous"))]
mod tester;

use std::sync::{Arc, Mutex};

use num_traits::FromPrimitive;
use trng::api::{self, Opcode, TestMode, TrngError};
use trng_core::engine::RawMode;

use backend::Backend;

struct Config {
    source: String,
    faults: Option<String>,
    model_seed: Option<[u8; 32]>,
    tester: bool,
}

fn parse_seed(s: &str) -> Result<[u8; 32], String> {
    let s = s.trim();
    if !s.is_ascii() {
        return Err("model seed must be 64 hex digits (ASCII)".into());
    }
    if s.len() != 64 {
        return Err(format!("model seed must be 64 hex digits, got {} characters", s.len()));
    }
    let mut out = [0u8; 32];
    for i in 0..32 {
        out[i] = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| format!("bad hex in model seed {s:?}"))?;
    }
    Ok(out)
}

fn parse_config() -> Result<Config, String> {
    parse_config_from(std::env::args().skip(1), &|k: &str| std::env::var(k).ok())
}

/// Configuration from `args` (after the program name) and the environment lookup `getenv`.
fn parse_config_from(args: impl IntoIterator<Item = String>, getenv: &dyn Fn(&str) -> Option<String>) -> Result<Config, String> {
    let env = |k: &str| getenv(k).filter(|v| !v.is_empty());
    let default_source = if cfg!(target_os = "xous") { "hw" } else { "hosted-os" };
    let mut cfg = Config {
        source: env("TRNG_SOURCE").unwrap_or_else(|| default_source.into()),
        faults: env("TRNG_FAULTS"),
        model_seed: env("TRNG_MODEL_SEED").map(|s| parse_seed(&s)).transpose()?,
        tester: env("TRNG_TESTER").map(|v| v != "0").unwrap_or(true),
    };
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--source" => cfg.source = val("--source")?,
            "--faults" => cfg.faults = Some(val("--faults")?),
            "--model-seed" => cfg.model_seed = Some(parse_seed(&val("--model-seed")?)?),
            "--no-tester" => cfg.tester = false,
            "-h" | "--help" => {
                return Err("usage: trng [--source hosted-os|model|hw] [--faults SPEC] [--model-seed HEX64] [--no-tester]".into())
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(cfg)
}

fn model_seed(cfg: &Config) -> [u8; 32] {
    if let Some(s) = cfg.model_seed {
        return s;
    }
    let mut s = [0u8; 32];
    #[cfg(not(target_os = "xous"))]
    getrandom::getrandom(&mut s).expect("OS entropy for the model seed");
    #[cfg(target_os = "xous")]
    {
        // on the device the models are seeded from the hardware conditioner output
        let mut h = hw::HwRegs::new().expect("map TRNG registers");
        for c in s.chunks_mut(4) {
            c.copy_from_slice(&h.urandom_blocking().to_le_bytes());
        }
    }
    s
}

fn make_backend(cfg: &Config) -> Result<Box<dyn Backend>, String> {
    use trng_core::engine::Feed;
    let seed = model_seed(cfg);
    let mut b: Box<dyn Backend> = match cfg.source.as_str() {
        #[cfg(not(target_os = "xous"))]
        "hosted-os" => Box::new(backend::SoftBackend::new(
            Feed::External,
            Some(Box::new(backend::OsSource::new())),
            api::SOURCE_OS,
            seed,
            "hosted-os",
        )),
        "model" => Box::new(backend::SoftBackend::new(Feed::Models, None, api::SOURCE_NONE, seed, "model")),
        #[cfg(target_os = "xous")]
        "hw" => Box::new(hw::HwBackend::new(seed).map_err(|e| format!("hw backend: {e:?}"))?),
        other => return Err(format!("unknown or unavailable source {other:?} (hosted-os, model, hw on the device)")),
    };
    if let Some(f) = &cfg.faults {
        b.set_faults(f).map_err(|_| format!("bad fault spec {f:?}"))?;
    }
    Ok(b)
}

/// Validated view of a lent buffer holding an rkyv archive of `T`: the archive must lie inside
/// the buffer, aligned. Every field of our request types is a plain integer/array, so any bit
/// pattern is a valid value.
fn archived_in_bounds<T: rkyv::Archive>(mem: &xous::MemoryMessage) -> bool {
    let off = mem.offset.map(|o| o.get()).unwrap_or(0);
    let size = core::mem::size_of::<T::Archived>();
    let align = core::mem::align_of::<T::Archived>();
    mem.buf.len() >= 4096 && off % align == 0 && off.checked_add(size).is_some_and(|end| end <= mem.buf.len())
}

struct Subscribers {
    list: Vec<(xous::CID, u32)>,
    sent: u32,
}

impl Subscribers {
    fn notify(&mut self, bits: u32, total: u32) {
        let mut keep = Vec::with_capacity(self.list.len());
        for (cid, opcode) in self.list.drain(..) {
            match xous::try_send_message(cid, xous::Message::new_scalar(opcode as usize, bits as usize, total as usize, 0, 0)) {
                Ok(_) => {
                    self.sent += 1;
                    keep.push((cid, opcode));
                }
                Err(xous::Error::ServerQueueFull) => keep.push((cid, opcode)),
                Err(e) => log::warn!("dropping error subscriber (cid {cid}): {e:?}"),
            }
        }
        self.list = keep;
    }
}

/// The memory part of any memory message, including immutable lends (which
/// `Message::memory_message_mut` leaves out; their offset/valid are still returned to the caller).
fn mem_mut(body: &mut xous::Message) -> Option<&mut xous::MemoryMessage> {
    match body {
        xous::Message::MutableBorrow(m) | xous::Message::Borrow(m) | xous::Message::Move(m) => Some(m),
        _ => None,
    }
}

fn err_reply_mem(mem: &mut xous::MemoryMessage, e: TrngError) {
    mem.offset = xous::MemoryAddress::new(e.code());
    mem.valid = None;
}

/// FillTrng / TestGetData: validate the lend, produce `valid` bytes into it.
fn bulk(msg: &mut xous::MessageEnvelope, f: &mut dyn FnMut(&mut [u8]) -> Result<(), TrngError>) {
    let is_mut = matches!(msg.body, xous::Message::MutableBorrow(_));
    match mem_mut(&mut msg.body) {
        Some(mem) => {
            if !is_mut {
                return err_reply_mem(mem, TrngError::BadMessage);
            }
            let n = match mem.valid {
                None => return err_reply_mem(mem, TrngError::ZeroLength),
                Some(v) => v.get(),
            };
            if n > mem.buf.len() || n > api::MAX_FILL_BYTES {
                return err_reply_mem(mem, TrngError::TooLarge);
            }
            // Safety: the kernel mapped `buf` (page-aligned, buf.len() bytes) into our space for
            // the duration of this message; n <= buf.len().
            let out = unsafe { core::slice::from_raw_parts_mut(mem.buf.as_mut_ptr(), n) };
            match f(out) {
                Ok(()) => {
                    mem.offset = None;
                    mem.valid = xous::MemorySize::new(n);
                }
                Err(e) => {
                    out.fill(0);
                    err_reply_mem(mem, e)
                }
            }
        }
        None => reply_bad_kind(msg),
    }
}

/// A message of the wrong kind for its opcode: a clear error where a reply is possible.
fn reply_bad_kind(msg: &mut xous::MessageEnvelope) {
    if let Some(mem) = mem_mut(&mut msg.body) {
        err_reply_mem(mem, TrngError::BadMessage);
    } else if msg.body.is_blocking() {
        xous::return_scalar(msg.sender, TrngError::BadMessage.code()).ok();
    } else {
        log::debug!("ignoring non-blocking message of the wrong kind, id {}", msg.body.id());
    }
}

fn scalar_args(msg: &xous::MessageEnvelope) -> Option<[usize; 4]> {
    match &msg.body {
        xous::Message::BlockingScalar(s) => Some([s.arg1, s.arg2, s.arg3, s.arg4]),
        _ => None,
    }
}

fn main() {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let cfg = match parse_config() {
        Ok(c) => c,
        Err(e) => {
            log::error!("trng: {e}");
            eprintln!("trng: {e}");
            xous::terminate_process(2);
        }
    };
    let mut backend_box = match make_backend(&cfg) {
        Ok(b) => b,
        Err(e) => {
            log::error!("trng: {e}");
            eprintln!("trng: {e}");
            xous::terminate_process(2);
        }
    };
    // start-up test + conditioner seeding before we accept clients (errors are latched and
    // reported through ErrorStats; the server still serves)
    let mut probe = [0u8; 4];
    if backend_box.fill_conditioned(&mut probe).is_err() {
        log::error!("TRNG start-up test failed: output disabled until ClearErrors");
    }
    probe.fill(0);
    let backend: Arc<Mutex<Box<dyn Backend>>> = Arc::new(Mutex::new(backend_box));

    let xns = xous_api_names::XousNames::new().unwrap();
    let sid = xns.register_name(api::SERVER_NAME, None).expect("can't register server");

    // notifier: tester threads signal health failures over a std channel; this one thread (one
    // kernel slot) turns them into ErrorNotification messages to our own loop
    let (notify_tx, notify_rx) = std::sync::mpsc::channel::<()>();
    {
        let sid_arr = sid.to_array();
        std::thread::spawn(move || {
            let cid = xous::connect(xous::SID::from_array(sid_arr)).expect("connect to self");
            for () in notify_rx {
                xous::send_message(cid, xous::Message::new_scalar(Opcode::ErrorNotification as usize, 0, 0, 0, 0)).ok();
            }
        });
    }
    #[cfg(not(target_os = "xous"))]
    if cfg.tester {
        if let Err(e) = tester::start(backend.clone(), notify_tx.clone()) {
            log::error!("TRNG tester failed to start: {e}");
        }
    }
    #[cfg(target_os = "xous")]
    let _ = (&notify_tx, cfg.tester);

    let source_name = backend.lock().unwrap().name();
    log::info!("TRNG-SERVER ready source={} name={:?}", source_name, api::SERVER_NAME);
    println!("TRNG-SERVER ready source={source_name}");

    let mut test_mode = TestMode::None;
    let mut subs = Subscribers { list: Vec::new(), sent: 0 };
    loop {
        let mut msg = match xous::receive_message(sid) {
            Ok(m) => m,
            Err(e) => {
                log::error!("receive_message: {e:?}");
                continue;
            }
        };
        let opcode: Option<Opcode> = FromPrimitive::from_usize(msg.body.id());
        let mut quit = false;
        {
            let mut be = backend.lock().unwrap();
            match opcode {
                Some(Opcode::GetTrng) => match scalar_args(&msg) {
                    Some([count, ..]) => {
                        if count == 0 {
                            xous::return_scalar(msg.sender, TrngError::ZeroLength.code()).ok();
                        } else if count > 2 {
                            xous::return_scalar(msg.sender, TrngError::TooLarge.code()).ok();
                        } else {
                            let mut b = [0u8; 8];
                            match be.fill_conditioned(&mut b[..count * 4]) {
                                Ok(()) => {
                                    let w0 = u32::from_le_bytes(b[0..4].try_into().unwrap());
                                    let w1 = u32::from_le_bytes(b[4..8].try_into().unwrap());
                                    b.fill(0);
                                    xous::return_scalar2(msg.sender, w0 as usize, w1 as usize).ok();
                                }
                                Err(e) => {
                                    xous::return_scalar(msg.sender, e.code()).ok();
                                }
                            }
                        }
                    }
                    None => reply_bad_kind(&mut msg),
                },
                Some(Opcode::FillTrng) => bulk(&mut msg, &mut |out| be.fill_conditioned(out)),
                Some(Opcode::TestGetData) => {
                    let mode = test_mode;
                    bulk(&mut msg, &mut |out| match mode {
                        TestMode::None => Err(TrngError::TestModeOff),
                        TestMode::Cprng => be.fill_conditioned(out),
                        TestMode::Av => be.fill_raw(RawMode::Av, out),
                        TestMode::Ro => be.fill_raw(RawMode::Ro, out),
                        TestMode::Both => be.fill_raw(RawMode::Both, out),
                    })
                }
                Some(Opcode::TestSetMode) => match scalar_args(&msg) {
                    Some([m, ..]) => {
                        let code = match <TestMode as FromPrimitive>::from_usize(m) {
                            Some(mode) => {
                                test_mode = mode;
                                0
                            }
                            None => TrngError::UnknownMode.code(),
                        };
                        xous::return_scalar(msg.sender, code).ok();
                    }
                    None => reply_bad_kind(&mut msg),
                },
                Some(Opcode::ClearErrors) => match scalar_args(&msg) {
                    Some(_) => {
                        be.clear_errors();
                        log::info!("TRNG errors cleared");
                        xous::return_scalar(msg.sender, 0).ok();
                    }
                    None => reply_bad_kind(&mut msg),
                },
                Some(Opcode::SeedTrng) => match scalar_args(&msg) {
                    Some(words) => {
                        for w in words {
                            be.seed_user(w as u32);
                        }
                        xous::return_scalar(msg.sender, 0).ok();
                    }
                    None => reply_bad_kind(&mut msg),
                },
                Some(Opcode::HealthStats) | Some(Opcode::ErrorStats) => {
                    let is_mut = matches!(msg.body, xous::Message::MutableBorrow(_));
                    match msg.body.memory_message_mut() {
                        Some(mem) if is_mut && mem.buf.len() >= 4096 => {
                            let mut buf = unsafe { xous_ipc::Buffer::from_memory_message_mut(mem) };
                            let r = if opcode == Some(Opcode::HealthStats) {
                                buf.replace(be.health_stats())
                            } else {
                                let mut es = be.error_stats();
                                es.subscribers = subs.list.len() as u32;
                                es.notifications_sent = subs.sent;
                                buf.replace(es)
                            };
                            if r.is_err() {
                                log::error!("stats reply serialisation failed");
                            }
                        }
                        _ => reply_bad_kind(&mut msg),
                    }
                }
                Some(Opcode::ErrorSubscribe) => {
                    let is_mut = matches!(msg.body, xous::Message::MutableBorrow(_));
                    match msg.body.memory_message_mut() {
                        Some(mem) if is_mut && archived_in_bounds::<api::Subscription>(mem) => {
                            let mut buf = unsafe { xous_ipc::Buffer::from_memory_message_mut(mem) };
                            let mut s: api::Subscription = buf.to_original().unwrap();
                            s.status = if subs.list.len() >= api::MAX_SUBSCRIBERS {
                                TrngError::TooManySubscribers.code() as u32
                            } else if s.opcode as usize > u32::MAX as usize {
                                TrngError::BadMessage.code() as u32
                            } else {
                                match xous::try_connect(xous::SID::from_array(s.sid)) {
                                    Ok(cid) => {
                                        subs.list.push((cid, s.opcode));
                                        0
                                    }
                                    Err(_) => TrngError::BadMessage.code() as u32,
                                }
                            };
                            buf.replace(s).ok();
                        }
                        Some(mem) if is_mut && mem.buf.len() >= 4096 => {
                            let mut buf = unsafe { xous_ipc::Buffer::from_memory_message_mut(mem) };
                            buf.replace(api::Subscription { status: TrngError::BadMessage.code() as u32, ..Default::default() }).ok();
                        }
                        _ => reply_bad_kind(&mut msg),
                    }
                }
                Some(Opcode::TestInjectFault) => {
                    let is_mut = matches!(msg.body, xous::Message::MutableBorrow(_));
                    match msg.body.memory_message_mut() {
                        Some(mem) if is_mut && archived_in_bounds::<api::FaultRequest>(mem) => {
                            let mut buf = unsafe { xous_ipc::Buffer::from_memory_message_mut(mem) };
                            let mut r: api::FaultRequest = buf.to_original().unwrap();
                            r.status = match (r.len as usize <= r.spec.len()).then(|| core::str::from_utf8(&r.spec[..r.len as usize])) {
                                Some(Ok(spec)) => match be.set_faults(spec) {
                                    Ok(()) => {
                                        log::info!("TRNG fault injection set to {spec:?}");
                                        0
                                    }
                                    Err(e) => e.code() as u32,
                                },
                                _ => TrngError::BadConfig.code() as u32,
                            };
                            buf.replace(r).ok();
                        }
                        Some(mem) if is_mut && mem.buf.len() >= 4096 => {
                            let mut buf = unsafe { xous_ipc::Buffer::from_memory_message_mut(mem) };
                            buf.replace(api::FaultRequest { spec: [0; 256], len: 0, status: TrngError::BadMessage.code() as u32 }).ok();
                        }
                        _ => reply_bad_kind(&mut msg),
                    }
                }
                // internal, non-blocking only; the latched-error check below does the work
                Some(Opcode::ErrorNotification) => {
                    if !matches!(msg.body, xous::Message::Scalar(_)) {
                        reply_bad_kind(&mut msg);
                    }
                }
                Some(Opcode::Quit) => match scalar_args(&msg) {
                    Some(_) => {
                        xous::return_scalar(msg.sender, 0).ok();
                        quit = true;
                    }
                    None => reply_bad_kind(&mut msg),
                },
                None => {
                    log::warn!("unknown opcode {}", msg.body.id());
                    if let Some(mem) = mem_mut(&mut msg.body) {
                        err_reply_mem(mem, TrngError::UnknownOpcode);
                    } else if msg.body.is_blocking() {
                        xous::return_scalar(msg.sender, TrngError::UnknownOpcode.code()).ok();
                    }
                }
            }
            if be.take_new_error() {
                let es = be.error_stats();
                log::warn!("TRNG health failure latched: error bits {:#x}; output disabled until ClearErrors", es.error_bits);
                subs.notify(es.error_bits, es.total_failures);
            }
        }
        drop(msg); // returns lent memory to the caller
        if quit {
            break;
        }
    }
    log::info!("TRNG server quitting");
    xns.unregister_server(sid).ok();
    xous::destroy_server(sid).ok();
    xous::terminate_process(0);
}

#[cfg(test)]
mod config_tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        parse_config_from(args.iter().map(|s| s.to_string()), &move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn good_configuration() {
        let c = parse(&["--source", "model", "--faults", "ro:stuck", "--no-tester"], &[]).unwrap();
        assert_eq!((c.source.as_str(), c.faults.as_deref(), c.tester), ("model", Some("ro:stuck"), false));
        let seed = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let c = parse(&[], &[("TRNG_SOURCE", "model"), ("TRNG_MODEL_SEED", seed), ("TRNG_TESTER", "0")]).unwrap();
        assert_eq!((c.source.as_str(), c.model_seed.unwrap()[1], c.tester), ("model", 0x11, false));
        assert!(make_backend(&c).is_ok());
    }

    #[test]
    fn malformed_configuration_gets_a_clear_error() {
        // the last one is 64 bytes whose 2-byte chunks split UTF-8 characters (used to panic)
        let misaligned = format!("a{}a", "é".repeat(31));
        let bad_seeds = ["12", &"g".repeat(64), &"é".repeat(32), &misaligned];
        for s in bad_seeds {
            let e = parse(&["--model-seed", s], &[]).err().expect("bad seed accepted");
            assert!(e.contains("model seed"), "{s:?}: {e}");
            let e = parse(&[], &[("TRNG_MODEL_SEED", s)]).err().expect("bad seed accepted (env)");
            assert!(e.contains("model seed"), "{s:?}: {e}");
        }
        for (args, want) in [
            (&["--source"][..], "--source needs a value"),
            (&["--faults"][..], "--faults needs a value"),
            (&["--model-seed"][..], "--model-seed needs a value"),
            (&["--bogus"][..], "unknown argument"),
            (&["--help"][..], "usage: trng"),
        ] {
            let e = parse(args, &[]).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
        // values that parse but cannot start a source
        let c = parse(&["--source", "quantum-foam"], &[]).unwrap();
        assert!(make_backend(&c).err().unwrap().contains("unknown or unavailable source"));
        let c = parse(&["--source", "model", "--faults", "av9:melt"], &[]).unwrap();
        assert!(make_backend(&c).err().unwrap().contains("bad fault spec"));
    }
}
