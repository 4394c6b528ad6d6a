//! TRNG server (`trng`): raw sources -> SP 800-90B health tests -> ChaCha20 conditioner ->
//! clients over Xous IPC, plus the tester (docs/trng-tester-protocol.md): hosted over TCP
//! (docs/trng-tester-protocol.md section 2), on the device through the mailbox (cargo feature `tester`).
//!
//! This file decodes, dispatches and replies (service-ipc conventions, docs/ipc.md); the work is
//! done by the kernel-free [`server::TrngServer`]. Two servers (docs/security.md): the control
//! server `api::CONTROL_NAME` (registered first, `api::CONTROL_SLOTS` connections, claimed at
//! boot by the system controller) serves ClearErrors, test modes and raw data, fault injection
//! and Quit; the public server `api::SERVER_NAME` serves everything else and answers the
//! privileged opcode numbers `NotPermitted`.
//!
//! Start-up configuration (arguments win over environment variables):
//!
//! | argument | env | meaning |
//! |---|---|---|
//! | `--source S` | `TRNG_SOURCE` | `hosted-os` (default off-device: OS entropy feeds the conditioner), `model` (the avalanche + ring-oscillator models feed it), `hw` (device only: the TRNG registers) |
//! | `--faults SPEC` | `TRNG_FAULTS` | model fault injection at start, e.g. `av0:stuck=0x800@5000` (see trng_core::sources) |
//! | `--model-seed HEX64` | `TRNG_MODEL_SEED` | fixed 32-byte seed for the models' physics (reproducible tests); default: OS entropy |
//! | `--tester-port P` | `TRNG_TESTER_PORT` | start the hosted TCP tester on 127.0.0.1:P (0 = ephemeral); not given: no tester (docs/security.md) |
//! | `--tester-portfile F` | `TRNG_TESTER_PORTFILE` | write the tester's port to F (docs/trng-tester-protocol.md) |
//! | `--no-tester` | `TRNG_TESTER=0` | no tester even if a port is given |
//!
//! The server logs `TRNG-SERVER ready source=S` (spec `server.ready_marker`) once registered.

mod backend;
#[cfg(target_os = "xous")]
mod hw;
mod server;
#[cfg(not(target_os = "xous"))]
mod tester;
#[cfg(all(target_os = "xous", feature = "tester"))]
mod tester_device;
mod tester_mailbox;

use std::sync::{Arc, Mutex};

use num_traits::FromPrimitive;
use service_ipc::options::{Opt, Takes};
use service_ipc::server::{
    decode_request, reply_archive, reply_bad_kind, reply_bytes, reply_error, reply_ok, reply_scalar2, scalar_args,
    sender_pid, Kind,
};
use trng::api::{self, Opcode, TrngError};
use xous::{Message, MessageEnvelope};

use backend::Backend;
use server::{check_bulk_len, Delivery, Notifier, TrngServer};

struct Config {
    source: String,
    faults: Option<String>,
    model_seed: Option<[u8; 32]>,
    /// The hosted tester's port (0 = ephemeral); `None`: no tester.
    tester_port: Option<u16>,
    tester_portfile: Option<String>,
}

const OPTS: &[Opt] = &[
    Opt { flag: "--source", env: Some("TRNG_SOURCE"), takes: Takes::Value },
    Opt { flag: "--faults", env: Some("TRNG_FAULTS"), takes: Takes::Value },
    Opt { flag: "--model-seed", env: Some("TRNG_MODEL_SEED"), takes: Takes::Value },
    // the tester serves raw samples: it runs only when a port is given (docs/security.md)
    Opt { flag: "--tester-port", env: Some(trng_core::spec::tester::PORT_ENV), takes: Takes::Value },
    Opt { flag: "--tester-portfile", env: Some(trng_core::spec::tester::PORTFILE_ENV), takes: Takes::Value },
    // the variable TRNG_TESTER=0 turns the tester off even with a port (any other value: no effect)
    Opt { flag: "--no-tester", env: Some("TRNG_TESTER"), takes: Takes::Nothing },
];

const USAGE: &str =
    "usage: trng [--source hosted-os|model|hw] [--faults SPEC] [--model-seed HEX64] [--tester-port PORT [--tester-portfile FILE]] [--no-tester]";

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

/// Configuration from `args` (after the program name) and the environment lookup `getenv`.
fn parse_config_from(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Config, String> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Err(USAGE.into());
    }
    let p = service_ipc::options::parse(OPTS, args, getenv).map_err(|e| format!("{e}\n{USAGE}"))?;
    let default_source = if cfg!(target_os = "xous") { "hw" } else { "hosted-os" };
    // `--no-tester` (no value) or TRNG_TESTER=0
    let no_tester = p.is_set("--no-tester") && p.get("--no-tester").map_or(true, |v| v.trim() == "0");
    let tester_port = match p.u64("--tester-port")? {
        Some(n) => Some(
            u16::try_from(n)
                .map_err(|_| format!("{}: port {n} is out of range (0..=65535)", p.source("--tester-port")))?,
        ),
        None => None,
    };
    Ok(Config {
        source: p.get("--source").unwrap_or(default_source).to_string(),
        faults: p.get("--faults").map(str::to_string),
        model_seed: p.get("--model-seed").map(parse_seed).transpose()?,
        tester_port: tester_port.filter(|_| !no_tester),
        tester_portfile: p.get("--tester-portfile").map(str::to_string),
    })
}

fn model_seed(cfg: &Config) -> [u8; 32] {
    if let Some(s) = cfg.model_seed {
        return s;
    }
    let mut s = [0u8; 32];
    #[cfg(not(target_os = "xous"))]
    getrandom::getrandom(&mut s).expect("OS entropy for the model seed");
    #[cfg(target_os = "xous")]
    if cfg.source == "model" {
        // on the device the models are seeded from the hardware conditioner output (bounded:
        // a page that does not come up ends the server with the reason)
        s = hw::model_seed().unwrap_or_else(|e| fail(&e));
    }
    // the `hw` source feeds the pipeline from the hardware: its models are not used
    s
}

fn make_backend(cfg: &Config) -> Result<Box<dyn Backend>, String> {
    use trng_core::pipeline::Feed;
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

/// Subscriber notifications through the kernel: one connection per subscriber server, a
/// non-blocking scalar per latched error.
struct KernelNotifier;

impl Notifier for KernelNotifier {
    fn connect(&mut self, sid: [u32; 4]) -> Option<u32> {
        xous::try_connect(xous::SID::from_array(sid)).ok()
    }
    fn notify(&mut self, conn: u32, opcode: u32, bits: u32, total: u32) -> Delivery {
        match xous::try_send_message(conn, Message::new_scalar(opcode as usize, bits as usize, total as usize, 0, 0)) {
            Ok(_) => Delivery::Sent,
            Err(xous::Error::ServerQueueFull) => Delivery::Busy,
            Err(_) => Delivery::Gone,
        }
    }
}

/// Reply to a result without payload.
fn reply_status(env: MessageEnvelope, r: Result<(), TrngError>) {
    match r {
        Ok(()) => reply_ok(env),
        Err(e) => reply_error(env, e),
    }
}

/// FillTrng / TestGetData: validate the lend, produce `valid` bytes into it.
fn bulk(mut env: MessageEnvelope, f: impl FnOnce(&mut [u8]) -> Result<(), TrngError>) {
    let r = match &mut env.body {
        Message::MutableBorrow(mem) => check_bulk_len(mem.valid.map(|v| v.get()), mem.buf.len()).and_then(|n| {
            // Safety: the kernel mapped `buf` (page-aligned, buf.len() bytes) into our space for
            // the duration of this message; n <= buf.len().
            let out = unsafe { core::slice::from_raw_parts_mut(mem.buf.as_mut_ptr(), n) };
            f(out).map(|()| n)
        }),
        _ => return reply_bad_kind(env, TrngError::BadMessage),
    };
    match r {
        Ok(n) => reply_bytes(env, n),
        Err(e) => reply_error(env, e), // wipes the page
    }
}

/// One message to either server. `control`: it arrived on the control server.
fn dispatch(srv: &Mutex<TrngServer>, env: MessageEnvelope, control: bool) {
    let op = match Opcode::from_usize(env.body.id()) {
        Some(op) => op,
        None => return reply_error(env, TrngError::UnknownOpcode),
    };
    if op.is_control() && !control {
        log::warn!("trng: pid {} sent privileged opcode {:?} to the public server: refused", sender_pid(&env), op);
        return reply_error(env, TrngError::NotPermitted);
    }
    if !op.is_control() && control {
        return reply_error(env, TrngError::UnknownOpcode);
    }
    let kind = Kind::of(&env.body);
    let mut s = srv.lock().unwrap();
    match (op, kind) {
        (Opcode::GetTrng, Kind::BlockingScalar) => {
            let [count, ..] = scalar_args(&env).unwrap();
            match s.get_words(count) {
                Ok((a, b)) => reply_scalar2(env, a as usize, b as usize),
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::SeedTrng, Kind::BlockingScalar) => {
            let words = scalar_args(&env).unwrap();
            reply_status(env, s.seed(words))
        }
        (Opcode::ClearErrors, Kind::BlockingScalar) => reply_status(env, s.clear_errors()),
        (Opcode::TestSetMode, Kind::BlockingScalar) => {
            let [mode, ..] = scalar_args(&env).unwrap();
            reply_status(env, s.set_test_mode(mode))
        }
        (Opcode::Quit, Kind::BlockingScalar) => reply_status(env, s.quit()),
        (Opcode::FillTrng, Kind::LendMut) => bulk(env, |out| s.fill(out)),
        (Opcode::TestGetData, Kind::LendMut) => bulk(env, |out| s.test_get_data(out)),
        (Opcode::HealthStats, Kind::LendMut) => match s.health_stats() {
            Ok(h) => reply_archive(env, h, TrngError::BadMessage),
            Err(e) => reply_error(env, e),
        },
        (Opcode::ErrorStats, Kind::LendMut) => match s.error_stats() {
            Ok(es) => reply_archive(env, es, TrngError::BadMessage),
            Err(e) => reply_error(env, e),
        },
        (Opcode::ErrorSubscribe, Kind::LendMut) => match decode_request::<api::Subscription>(&env) {
            Some(sub) => match s.subscribe(&sub) {
                Ok(()) => reply_archive(env, sub, TrngError::BadMessage),
                Err(e) => reply_error(env, e),
            },
            None => reply_error(env, TrngError::BadMessage),
        },
        (Opcode::TestInjectFault, Kind::LendMut) => match decode_request::<api::FaultRequest>(&env) {
            Some(req) => match s.inject_fault(&req) {
                Ok(()) => reply_archive(env, req, TrngError::BadMessage),
                Err(e) => reply_error(env, e),
            },
            None => reply_error(env, TrngError::BadMessage),
        },
        _ => reply_bad_kind(env, TrngError::BadMessage),
    }
    s.check_new_error();
}

fn fail(msg: &str) -> ! {
    log::error!("trng: {msg}");
    eprintln!("trng: {msg}");
    xous::terminate_process(2)
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = parse_config_from(&args, &|k: &str| std::env::var(k).ok()).unwrap_or_else(|e| fail(&e));
    let backend = make_backend(&cfg).unwrap_or_else(|e| fail(&e));
    let mut srv = TrngServer::new(backend, Box::new(KernelNotifier));
    // start-up test + conditioner seeding before we accept clients (errors are latched and
    // reported through ErrorStats; the server still serves)
    if srv.startup().is_err() {
        log::error!("TRNG start-up test failed: output disabled until ClearErrors");
    }
    let source_name = srv.source_name();
    let srv = Arc::new(Mutex::new(srv));

    let xns = xous_api_names::XousNames::new().unwrap();
    // control first: once the public name resolves, the control name exists (docs/security.md)
    let control = service_ipc::control::register_control(&xns, api::CONTROL_NAME, api::CONTROL_SLOTS)
        .unwrap_or_else(|e| fail(&e));
    let public = service_ipc::control::register_public(&xns, api::SERVER_NAME).unwrap_or_else(|e| fail(&e));

    // notifier: tester threads report health failures over a std channel; this one thread (one
    // kernel slot) notifies the subscribers
    let (notify_tx, notify_rx) = std::sync::mpsc::channel::<()>();
    {
        let srv = srv.clone();
        std::thread::spawn(move || {
            for () in notify_rx {
                srv.lock().unwrap().check_new_error();
            }
        });
    }
    #[cfg(not(target_os = "xous"))]
    if let Some(port) = cfg.tester_port {
        if let Err(e) = tester::start(srv.clone(), notify_tx.clone(), port, cfg.tester_portfile.as_deref()) {
            log::error!("TRNG tester failed to start: {e}");
        }
    }
    #[cfg(all(target_os = "xous", feature = "tester"))]
    if let Err(e) = tester_device::start(srv.clone(), notify_tx.clone()) {
        log::error!("TRNG tester failed to start: {e}");
    }
    #[cfg(target_os = "xous")]
    let _ = (&notify_tx, cfg.tester_port, &cfg.tester_portfile);
    {
        let srv = srv.clone();
        std::thread::Builder::new()
            .name("trng-control".into())
            .spawn(move || loop {
                match xous::receive_message(control) {
                    Ok(env) => dispatch(&srv, env, true),
                    Err(e) => log::error!("receive_message (control): {e:?}"),
                }
            })
            .unwrap_or_else(|e| fail(&format!("spawn control thread: {e}")));
    }

    #[cfg(target_os = "xous")]
    if source_name == "hw" {
        suspend_hook::start(&xns, srv.clone());
    }

    log::info!(
        "{} source={} name={:?} control={:?} ({} slot(s))",
        trng_core::spec::server::READY_MARKER,
        source_name,
        api::SERVER_NAME,
        api::CONTROL_NAME,
        api::CONTROL_SLOTS
    );
    println!("{} source={source_name}", trng_core::spec::server::READY_MARKER);
    // the server never exits: after Quit it answers `Stopped` until the system shuts down, so
    // no client ever waits on a server that is gone
    loop {
        match xous::receive_message(public) {
            Ok(env) => dispatch(&srv, env, false),
            Err(e) => log::error!("receive_message: {e:?}"),
        }
    }
}

/// System suspend and resume (device, `hw` source): the server registers with xous-susres, the
/// Xous convention for a service with hardware state. On a suspend event it takes the server
/// (no request touches the page while the SoC powers down), tells susres it is ready and blocks
/// until the system has resumed; the SoC was powered down meanwhile and the TRNG block reset with
/// it (its cutoffs and intervals back at their reset values, whatever the SoC itself enables at
/// power-up). Then the backend programs the page again and brings it up (`HwRegs::resume`,
/// bounded as at start-up), and requests are served again. docs/trng-service.md.
#[cfg(target_os = "xous")]
mod suspend_hook {
    use std::sync::{Arc, Mutex};

    use crate::server::TrngServer;

    pub fn start(xns: &xous_api_names::XousNames, srv: Arc<Mutex<TrngServer>>) {
        let lost = "after a system suspend the TRNG block would keep its reset configuration";
        service_ipc::suspend::register("trng", xns, lost, move |sleep| {
            let mut s = srv.lock().unwrap();
            let clean = sleep();
            log::info!("trng: resumed (clean {clean:?})");
            s.resume();
        });
    }
}

#[cfg(test)]
mod config_tests {
    use super::*;

    fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        parse_config_from(&args, &move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn good_configuration() {
        let c =
            parse(&["--source", "model", "--faults", "ro:stuck", "--tester-port", "0", "--no-tester"], &[]).unwrap();
        assert_eq!((c.source.as_str(), c.faults.as_deref(), c.tester_port), ("model", Some("ro:stuck"), None));
        let seed = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let env =
            [("TRNG_SOURCE", "model"), ("TRNG_MODEL_SEED", seed), ("TRNG_TESTER_PORT", "0"), ("TRNG_TESTER", "0")];
        let c = parse(&[], &env).unwrap();
        assert_eq!((c.source.as_str(), c.model_seed.unwrap()[1], c.tester_port), ("model", 0x11, None));
        // the tester (raw samples) runs only when a port is given
        assert_eq!(parse(&[], &[]).unwrap().tester_port, None, "no tester by default");
        assert_eq!(
            parse(&[], &[("TRNG_TESTER", "1")]).unwrap().tester_port,
            None,
            "TRNG_TESTER=1 alone starts nothing"
        );
        let c =
            parse(&[], &[("TRNG_TESTER_PORT", "0"), ("TRNG_TESTER_PORTFILE", "/tmp/p"), ("TRNG_TESTER", "1")]).unwrap();
        assert_eq!((c.tester_port, c.tester_portfile.as_deref()), (Some(0), Some("/tmp/p")));
        assert_eq!(
            parse(&["--tester-port=4321"], &[("TRNG_TESTER_PORT", "0")]).unwrap().tester_port,
            Some(4321),
            "arguments win"
        );
        assert!(parse(&["--source=model"], &[("TRNG_SOURCE", "hw")]).unwrap().source == "model", "arguments win");
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
            (&["--tester-port"][..], "--tester-port needs a value"),
            (&["--tester-port", "http"][..], "is not a number"),
            (&["--tester-port", "65536"][..], "out of range"),
            (&["--bogus"][..], "unknown option"),
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
