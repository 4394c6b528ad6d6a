//! chat-relay: the chat's network as a Xous server (`_Chat relay_`, ratchet_demo::relay_api). Mailboxes,
//! a prekey-bundle directory and live-switchable faults (ratchet_demo::relay_net).
//!
//! Options: `--seed N` (env CHAT_RELAY_SEED) seeds the fault generator (default: from the clock);
//! `--faults D,R,U,C` (env CHAT_RELAY_FAULTS) sets the initial drop/reorder/duplicate/corrupt
//! percentages.

use std::time::Instant;

use ratchet_demo::relay_api::{Faults, Frame, Opcode, RelayStats, Status, MAGIC, SERVER_NAME};
use ratchet_demo::relay_net::Net;
use service_ipc::options::{Opt, Takes};
use service_ipc::server::{decode_request, reply_archive, reply_bad_kind, reply_error, reply_ok, scalar_args, Kind};
use xous::MessageEnvelope;

const OPTS: &[Opt] = &[
    Opt { flag: "--seed", env: Some("CHAT_RELAY_SEED"), takes: Takes::Value },
    Opt { flag: "--faults", env: Some("CHAT_RELAY_FAULTS"), takes: Takes::Value },
];

fn frame_request(env: &MessageEnvelope) -> Result<Frame, Status> {
    let f: Frame = decode_request(env).ok_or(Status::BadMessage)?;
    if f.magic != MAGIC {
        return Err(Status::BadMessage);
    }
    Ok(f)
}

fn dispatch(net: &mut Net, env: MessageEnvelope, t0: Instant) {
    let now = t0.elapsed().as_millis() as u64;
    let op = match Opcode::from_usize(env.body.id()) {
        Some(op) => op,
        None => return reply_error(env, Status::UnknownOpcode),
    };
    let kind = Kind::of(&env.body);
    match (op, kind) {
        (Opcode::Send, Kind::LendMut) => {
            let r = frame_request(&env).and_then(|f| {
                let p = f.payload().ok_or(Status::BadLength)?;
                net.send(f.from, f.to, p, now).map(|()| f)
            });
            match r {
                Ok(f) => reply_archive(env, f, Status::BadMessage),
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::Recv, Kind::LendMut) => {
            let r = frame_request(&env).and_then(|f| net.recv(f.to, now).map(|p| (f.to, p)));
            match r {
                Ok((to, Some(p))) => reply_archive(env, Frame::new(p.from, to, &p.data).unwrap(), Status::BadMessage),
                Ok((to, None)) => reply_archive(env, Frame::new(0, to, &[]).unwrap(), Status::BadMessage),
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::PutBundle, Kind::LendMut) => {
            let r = frame_request(&env).and_then(|f| {
                let p = f.payload().ok_or(Status::BadLength)?;
                net.put_bundle(f.from, p).map(|()| f)
            });
            match r {
                Ok(f) => {
                    log::info!("chat-relay: prekey bundle of mailbox {} registered", f.from);
                    reply_archive(env, f, Status::BadMessage)
                }
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::GetBundle, Kind::LendMut) => {
            let r = frame_request(&env).and_then(|f| net.get_bundle(f.to).map(|b| Frame::new(f.to, f.to, b).unwrap()));
            match r {
                Ok(f) => reply_archive(env, f, Status::BadMessage),
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::SetFaults, Kind::BlockingScalar) => match Faults::from_args(scalar_args(&env).unwrap()) {
            Ok(f) => {
                log::info!("chat-relay: faults now {f:?}");
                net.set_faults(f);
                reply_ok(env)
            }
            Err(e) => reply_error(env, e),
        },
        (Opcode::Stats, Kind::LendMut) => match decode_request::<RelayStats>(&env) {
            Some(s) if s.magic == MAGIC => {
                let mut st = net.stats();
                st.magic = MAGIC;
                reply_archive(env, st, Status::BadMessage)
            }
            _ => reply_error(env, Status::BadMessage),
        },
        _ => reply_bad_kind(env, Status::BadMessage),
    }
}

/// The fault injector's seed when none is given: the clock; on the device (no real-time clock
/// service in the image) the TRNG service.
#[cfg(not(target_os = "xous"))]
fn default_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
}
#[cfg(target_os = "xous")]
fn default_seed() -> u64 {
    trng::Trng::new().ok().and_then(|t| t.get_u64().ok()).unwrap_or(1)
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let p = service_ipc::options::parse_process(OPTS).unwrap_or_else(|e| {
        eprintln!("chat-relay: {e}");
        xous::terminate_process(2)
    });
    let seed = match p.u64("--seed") {
        Ok(Some(s)) => s,
        Ok(None) => default_seed(),
        Err(e) => {
            eprintln!("chat-relay: {e}");
            xous::terminate_process(2)
        }
    };
    let mut net = Net::new(seed);
    if let Some(v) = p.get("--faults") {
        match Faults::parse_option(v) {
            Ok(f) => net.set_faults(f),
            Err(e) => {
                eprintln!("chat-relay: {e}");
                xous::terminate_process(2)
            }
        }
    }
    let xns = xous_api_names::XousNames::new().unwrap();
    let sid = xns.register_name(SERVER_NAME, None).expect("register the relay's name");
    log::info!("chat-relay: ready, seed {seed}, faults {:?}", net.faults());
    println!("CHAT-RELAY ready seed={seed}");
    let t0 = Instant::now();
    // never exits: a client calling a server whose process has exited would block forever
    loop {
        match xous::receive_message(sid) {
            Ok(env) => dispatch(&mut net, env, t0),
            Err(e) => log::error!("chat-relay: receive_message: {e:?}"),
        }
    }
}
