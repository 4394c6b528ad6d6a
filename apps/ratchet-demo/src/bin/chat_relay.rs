//! chat-relay: the chat's network as a Xous server (`_Chat relay_`, ratchet_demo::relay_api). Mailboxes,
//! a prekey-bundle directory and live-switchable faults (ratchet_demo::relay_net).
//!
//! A party's `RecvWait` is answered when a frame for it arrives: the relay keeps the request's
//! envelope (at most one per mailbox) and replies from the `Send` that brings the frame, so no
//! party polls. While a request waits and the fault injector holds frames back, a timer thread
//! sends the relay `Wake` at the earliest release time.
//!
//! Options: `--seed N` (env CHAT_RELAY_SEED) seeds the fault generator (default: from the clock);
//! `--faults D,R,U,C` (env CHAT_RELAY_FAULTS) sets the initial drop/reorder/duplicate/corrupt
//! percentages.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ratchet_demo::relay_api::{frame_at, frame_at_mut, Faults, Opcode, RelayStats, Status, MAGIC, SERVER_NAME};
use ratchet_demo::relay_net::Net;
use service_ipc::options::{Opt, Takes};
use service_ipc::server::{
    decode_request, reply_archive, reply_bad_kind, reply_error, reply_ok, scalar_args, send_prepared, Kind,
};
use xous::{Message, MessageEnvelope};

const OPTS: &[Opt] = &[
    Opt { flag: "--seed", env: Some("CHAT_RELAY_SEED"), takes: Takes::Value },
    Opt { flag: "--faults", env: Some("CHAT_RELAY_FAULTS"), takes: Takes::Value },
];

/// The request's frame, read in place in the lent page (its payload is not copied): (from,
/// to, payload if its length is in range).
fn frame_request(env: &MessageEnvelope) -> Result<(u32, u32, Option<&[u8]>), Status> {
    let Message::MutableBorrow(mem) = &env.body else { return Err(Status::BadMessage) };
    let f = frame_at(mem.buf.as_slice(), mem.offset.map(|o| o.get()).unwrap_or(0)).ok_or(Status::BadMessage)?;
    if f.magic != MAGIC {
        return Err(Status::BadMessage);
    }
    Ok((f.from, f.to, f.payload()))
}

/// Writes the reply frame in place over the request's (at its position; only the payload's
/// bytes are copied) and marks the page answered; the caller sends it (dropping the envelope,
/// or `send_prepared`). None if the envelope holds no page that can take a frame (it was
/// answered with an error).
fn fill(mut env: MessageEnvelope, from: u32, to: u32, data: &[u8]) -> Option<MessageEnvelope> {
    if let Message::MutableBorrow(mem) = &mut env.body {
        let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
        if let Some(f) = frame_at_mut(mem.buf.as_slice_mut(), pos) {
            if f.set(from, to, data) {
                mem.valid = xous::MemorySize::new(mem.buf.len());
                return Some(env);
            }
        }
    }
    reply_error(env, Status::BadMessage);
    None
}

/// The reply to a request whose frame comes back as it was sent (Send, PutBundle): the page
/// goes back unchanged, with the archive where it was.
fn reply_same(mut env: MessageEnvelope) {
    if let Message::MutableBorrow(mem) = &mut env.body {
        mem.valid = xous::MemorySize::new(mem.buf.len());
    }
}

/// The relay's state: the network model and the `RecvWait` requests it keeps (mailbox ->
/// envelope), with the timer that wakes it for held-back frames.
struct Relay {
    net: Net,
    waiters: BTreeMap<u32, MessageEnvelope>,
    timer: mpsc::Sender<u64>,
    /// the release time the timer is set for
    armed: Option<u64>,
}

/// Answers a kept `RecvWait` with `f`. False if `f` did not reach its sender (its process is
/// gone, or its page cannot hold the reply and got an error instead): the caller keeps the frame.
fn answer(env: MessageEnvelope, from: u32, to: u32, data: &[u8]) -> bool {
    let Some(env) = fill(env, from, to, data) else { return false };
    match send_prepared(env) {
        Ok(()) => true,
        Err(e) => {
            log::warn!("chat-relay: a waiting receiver could not be answered ({e:?}); its frame stays queued");
            false
        }
    }
}

impl Relay {
    /// Answers every kept `RecvWait` whose mailbox now holds a frame; then sets the timer if a
    /// request still waits while frames are held back.
    fn serve_waiters(&mut self, now: u64) {
        let boxes: Vec<u32> = self.waiters.keys().copied().collect();
        for to in boxes {
            if let Ok(Some(p)) = self.net.recv(to, now) {
                let env = self.waiters.remove(&to).expect("a kept request");
                if !answer(env, p.from, to, &p.data) {
                    self.net.unrecv(to, p);
                }
            }
        }
        let due = if self.waiters.is_empty() { None } else { self.net.next_deadline() };
        if let Some(d) = due {
            if self.armed != Some(d) {
                self.armed = Some(d);
                let _ = self.timer.send(d);
            }
        }
    }
}

/// The timer thread: after the relay names a release time (ms since `t0`; a later one replaces
/// it), sends the relay `Wake` when it comes.
fn start_timer(sid: xous::SID, t0: Instant) -> mpsc::Sender<u64> {
    let (tx, rx) = mpsc::channel::<u64>();
    let cid = xous::connect(sid).expect("connect to the relay itself");
    std::thread::Builder::new()
        .name("chat-relay-timer".into())
        .spawn(move || {
            let mut due: Option<u64> = None;
            loop {
                let r = match due {
                    None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    Some(d) => {
                        rx.recv_timeout(Duration::from_millis(d.saturating_sub(t0.elapsed().as_millis() as u64)))
                    }
                };
                match r {
                    Ok(d) => due = Some(d),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        due = None;
                        let _ = xous::send_message(cid, Message::new_scalar(Opcode::Wake as usize, 0, 0, 0, 0));
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        })
        .expect("spawn the relay's timer");
    tx
}

fn dispatch(relay: &mut Relay, env: MessageEnvelope, t0: Instant) {
    let now = t0.elapsed().as_millis() as u64;
    let op = match Opcode::from_usize(env.body.id()) {
        Some(op) => op,
        None => return reply_error(env, Status::UnknownOpcode),
    };
    let kind = Kind::of(&env.body);
    let net = &mut relay.net;
    match (op, kind) {
        (Opcode::Send, Kind::LendMut) => {
            let r = frame_request(&env).and_then(|(from, to, p)| net.send(from, to, p.ok_or(Status::BadLength)?, now));
            match r {
                Ok(()) => {
                    reply_same(env);
                    // the frame (or held ones it released) may be what a receiver waits for
                    relay.serve_waiters(now);
                }
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::Recv, Kind::LendMut) => {
            match frame_request(&env).and_then(|(_, to, _)| net.recv(to, now).map(|p| (to, p))) {
                Ok((to, Some(p))) => drop(fill(env, p.from, to, &p.data)),
                Ok((to, None)) => drop(fill(env, 0, to, &[])),
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::RecvWait, Kind::LendMut) => {
            match frame_request(&env).and_then(|(_, to, _)| net.recv(to, now).map(|p| (to, p))) {
                Ok((to, Some(p))) => drop(fill(env, p.from, to, &p.data)),
                Ok((to, None)) => {
                    // kept until a frame comes; an earlier request for this mailbox is let go empty
                    if let Some(old) = relay.waiters.insert(to, env) {
                        answer(old, 0, to, &[]);
                    }
                    relay.serve_waiters(now);
                }
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::Wake, Kind::Scalar) => {
            relay.armed = None;
            relay.serve_waiters(now);
        }
        (Opcode::PutBundle, Kind::LendMut) => {
            let r = frame_request(&env)
                .and_then(|(from, _, p)| net.put_bundle(from, p.ok_or(Status::BadLength)?).map(|()| from));
            match r {
                Ok(from) => {
                    log::info!("chat-relay: prekey bundle of mailbox {from} registered");
                    reply_same(env)
                }
                Err(e) => reply_error(env, e),
            }
        }
        (Opcode::GetBundle, Kind::LendMut) => {
            match frame_request(&env).and_then(|(_, to, _)| net.get_bundle(to).map(|b| (to, b.to_vec()))) {
                Ok((to, b)) => drop(fill(env, to, to, &b)),
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
    let t0 = Instant::now();
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
    let mut relay = Relay { net, waiters: BTreeMap::new(), timer: start_timer(sid, t0), armed: None };
    // never exits: a client calling a server whose process has exited would block forever
    loop {
        match xous::receive_message(sid) {
            Ok(env) => dispatch(&mut relay, env, t0),
            Err(e) => log::error!("chat-relay: receive_message: {e:?}"),
        }
    }
}
