//! chat-bob: Bob, a separate Xous process with his own sessions (one per peer mailbox). He
//! publishes his PQXDH prekey bundle on the relay (identity key, signed prekey, a one-time
//! prekey, and a signed ML-KEM-1024 prekey: a one-time one while any is left, else the
//! last-resort one), accepts PQXDH (and X3DH) prekey messages, and answers every message with
//! `re <seq>: <text>`. Every X25519 runs on the engine service (his set-up ones as blocking calls
//! in this headless process, the ratchet's through the async runner), every ML-KEM operation on
//! the CPU (his PQ prekey generations here, his decapsulations on the async runner's worker),
//! every key comes from the TRNG service (hosted through the background pool, on the device
//! straight from the service when a key is needed). His store: `<store>/bob.state`.
//!
//! Options: ratchet_demo::config::COMMON, plus `--one-time-prekeys N` (default 32) and
//! `--pq-one-time-prekeys N` (default 8; each is 1,700 bytes of his store).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ratchet::{CpuKem, DhJob, DhOutput, KeyPair, Responder};
use ratchet_demo::config::{Common, COMMON};
use ratchet_demo::dh::{engine_fn, AsyncRunner, Device, DhFn};
use ratchet_demo::entropy::PoolRng;
use ratchet_demo::party::{Event, Party};
use ratchet_demo::relay_client::Relay;
use ratchet_demo::BOB;
use service_ipc::options::{Opt, Takes};

const MINE: &[Opt] = &[
    Opt { flag: "--one-time-prekeys", env: Some("CHAT_BOB_OPKS"), takes: Takes::Value },
    Opt { flag: "--pq-one-time-prekeys", env: Some("CHAT_BOB_PQ_OPKS"), takes: Takes::Value },
];

fn parse_args(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<(Common, usize, usize), String> {
    let opts: Vec<Opt> = COMMON.iter().chain(MINE).copied().collect();
    let p = service_ipc::options::parse(&opts, args, getenv)?;
    let cfg = Common::from(&p)?;
    let opks = p.u64("--one-time-prekeys")?.unwrap_or(32);
    if !(1..=1000).contains(&opks) {
        return Err(format!("--one-time-prekeys must be 1..=1000, got {opks}"));
    }
    let max_pq = ratchet::pqxdh::MAX_PQ_ONE_TIME_PREKEYS as u64;
    let pq = p.u64("--pq-one-time-prekeys")?.unwrap_or(8);
    if !(1..=max_pq).contains(&pq) {
        return Err(format!("--pq-one-time-prekeys must be 1..={max_pq}, got {pq}"));
    }
    Ok((cfg, opks as usize, pq as usize))
}

/// Where Bob's keys come from. Hosted: the background pool (`PoolRng`, its filler thread keeps
/// TRNG output ready). On the device: the TRNG service itself, one blocking call when a key is
/// needed (a few hundred us, as Alice's UI thread does), because the pool's filler thread and
/// its condition variable cost the one core far more there: each wake-up and notification goes
/// through the ticktimer service, and in the bench's profile a refill after a DH ratchet step's
/// 32 bytes held Bob's step back by about 5 ms of such calls before its X25519 reached the
/// engine (docs/chat.md).
trait Keys: rand_core::RngCore + rand_core::CryptoRng {
    /// Blocks (bounded) until `n` bytes can be drawn without a refusal.
    fn ready(&mut self, n: usize, timeout: Duration) -> bool;
}

impl Keys for PoolRng {
    fn ready(&mut self, n: usize, timeout: Duration) -> bool {
        self.wait_for(n, timeout)
    }
}

#[cfg(target_os = "xous")]
impl Keys for trng::Trng {
    /// The service answers each call (an error from it is an error of that draw, never stale
    /// bytes): nothing to wait for.
    fn ready(&mut self, _: usize, _: Duration) -> bool {
        true
    }
}

/// Gives Bob a last-resort PQ prekey if he has none (a store written before PQXDH) and refills
/// his one-time PQ prekeys to `n` when fewer than a quarter are left. ML-KEM key generation on
/// this (headless) thread; returns how many were made.
fn refill_pq(party: &mut Party, rng: &mut impl Keys, n: usize) -> Result<usize, String> {
    let r = party.responder_keys().expect("Bob is a responder");
    let (need_lr, left) = (!r.has_pq_prekey(), r.pq_one_time_prekeys());
    let mut made = 0;
    // 128 TRNG bytes per PQ prekey (seed and signature nonce): in chunks the pool can hold
    let mut make = |party: &mut Party, k: usize, one_time: bool| -> Result<(), String> {
        if !rng.ready(128 * k + 64, Duration::from_secs(30)) {
            return Err("no entropy from the TRNG within 30 s".into());
        }
        party
            .responder_mut()
            .unwrap()
            .add_pq_prekeys_with(k, one_time, &mut *rng, &mut CpuKem)
            .map_err(|e| e.to_string())
    };
    if need_lr {
        make(party, 1, false)?;
        made += 1;
    }
    if left * 4 < n.max(1) {
        let mut todo = n - left;
        while todo > 0 {
            let k = todo.min(8);
            make(party, k, true)?;
            todo -= k;
            made += k;
        }
    }
    if made > 0 {
        party.save().map_err(|e| e.to_string())?;
    }
    Ok(made)
}

fn die(msg: &str) -> ! {
    log::error!("chat-bob: {msg}");
    eprintln!("chat-bob: {msg}");
    xous::terminate_process(2)
}

/// Blocking X25519 on the engine for Bob's key set-up (a headless process: no UI to stall).
fn blocking_dh(f: &mut DhFn) -> impl FnMut(&[DhJob]) -> Result<Vec<DhOutput>, ratchet::Error> + '_ {
    move |jobs: &[DhJob]| f(jobs).map(|r| r.into_iter().map(|(o, _)| o).collect()).map_err(ratchet::Error::Dh)
}

/// Bob's answer to message `seq` (queued in the same store write as the acceptance).
fn reply(seq: u32, text: &str) -> String {
    let t: String = text.chars().take(200).collect();
    format!("re {seq}: {t}")
}

fn publish(relay: &mut Relay, party: &Party) {
    let b = party.responder_keys().expect("Bob is a responder").pqxdh_bundle().encode();
    if let Err(e) = relay.put_bundle(BOB, &b) {
        log::error!("chat-bob: publishing the bundle: {e}");
    }
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let args = ratchet_demo::config::process_args(option_env!("CHAT_BOB_DEVICE_ARGS"));
    let (cfg, opks, pq_opks) = parse_args(&args, &|k: &str| std::env::var(k).ok()).unwrap_or_else(|e| die(&e));

    #[cfg(target_os = "xous")]
    let rng = trng::Trng::new().unwrap_or_else(|e| die(&format!("TRNG: {e:?}")));
    #[cfg(not(target_os = "xous"))]
    let rng = PoolRng::from_trng().unwrap_or_else(|e| die(&e));
    run(cfg, opks, pq_opks, rng)
}

fn run(cfg: Common, opks: usize, pq_opks: usize, mut rng: impl Keys) -> ! {
    let engine = engine25519::Engine25519::new().unwrap_or_else(|e| die(&format!("engine25519: {e:?}")));
    let mut relay = Relay::new().unwrap_or_else(|e| die(&e.to_string()));
    let path = cfg.store.join("bob.state");
    let mut setup_dh = engine_fn(engine.clone());
    if !rng.ready(2048, Duration::from_secs(30)) {
        die("no entropy from the TRNG within 30 s");
    }
    let mut party = Party::responder_in(ratchet_demo::store::backing(&path), BOB, || {
        let mut dh = blocking_dh(&mut setup_dh);
        let id = KeyPair::generate(&mut rng, &mut dh).map_err(|e| e.to_string())?;
        Responder::generate(id, opks, &mut rng, &mut dh).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
    party.auto_reply = Some(Box::new(reply));
    // on the device, Alice's UI shares the one core: between the pieces of a tick, and inside a
    // DH ratchet step, a decryption or an encryption (libs/ratchet's pauses, each piece about
    // one KDF or one AES pass), Bob passes it on to whoever woke meanwhile (hosted, every
    // process has a host thread: no pauses)
    #[cfg(target_os = "xous")]
    {
        party.pause = Some(xous::yield_slice);
        ratchet::set_pause(xous::yield_slice);
    }
    match refill_pq(&mut party, &mut rng, pq_opks) {
        Ok(n) if n > 0 => log::info!("chat-bob: {n} new ML-KEM-1024 prekeys"),
        Ok(_) => {}
        Err(e) => die(&format!("PQ prekeys: {e}")),
    }
    publish(&mut relay, &party);
    // Bob waits for what he waits for: a frame (a receiver thread waits on the relay, which
    // answers when one comes), a finished DH batch (the worker says so) or the next time his
    // party has work by the clock (a retransmission): nobody polls.
    let (tx, rx) = mpsc::channel::<Wake>();
    let done = tx.clone();
    let mut dh = AsyncRunner::with_notify(
        engine_fn(engine.clone()),
        Device::new(cfg.pacing()),
        Box::new(move || {
            let _ = done.send(Wake::DhDone);
        }),
    );
    start_receiver(tx).unwrap_or_else(|e| die(&e));
    log::info!(
        "chat-bob: ready ({}; {} sessions, {} messages in history, store {})",
        cfg.describe(),
        party.history().len(),
        party.counters().accepted,
        party.store_desc()
    );
    println!("CHAT-BOB ready history={} accepted={}", party.history().len(), party.counters().accepted);

    let mut last_report = Instant::now();
    loop {
        let wait = party.wait_hint(Instant::now()).unwrap_or(REPORT).min(REPORT);
        let first = match rx.recv_timeout(wait) {
            Ok(w) => Some(w),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => die("the relay receiver stopped"),
        };
        for w in first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            match w {
                Wake::Frame(from, data) => party.deliver(from, data),
                Wake::RelayError(e) => log::error!("chat-bob: relay recv: {e}"),
                Wake::DhDone => {}
            }
        }
        if let Err(e) = party.tick(Instant::now(), &mut dh, &mut rng) {
            log::error!("chat-bob: store: {e}");
        }
        // replies and acknowledgements leave before any key refill below (a refill on the device
        // costs ML-KEM key generations and signatures: hundreds of ms)
        for (to, f) in party.take_outgoing() {
            if let Err(e) = relay.send(BOB, to, &f) {
                log::warn!("chat-bob: relay send: {e}");
            }
        }
        for ev in party.take_events() {
            match ev {
                Event::Received { peer, seq, text, dh } => {
                    log::info!("chat-bob: from {peer} #{seq}: {text:?} (DH: {dh:?})");
                }
                Event::BundleChanged => {
                    let left = party.responder_keys().map(|r| r.one_time_prekeys()).unwrap_or(0);
                    if left < 4 {
                        let r = {
                            let mut sdh = blocking_dh(&mut setup_dh);
                            party.responder_mut().unwrap().add_one_time_prekeys(opks, &mut rng, &mut sdh)
                        };
                        match r {
                            Ok(()) => log::info!("chat-bob: {opks} new one-time prekeys"),
                            Err(e) => log::error!("chat-bob: new one-time prekeys: {e}"),
                        }
                        let _ = party.save();
                    }
                    match refill_pq(&mut party, &mut rng, pq_opks) {
                        Ok(n) if n > 0 => log::info!("chat-bob: {n} new one-time ML-KEM-1024 prekeys"),
                        Ok(_) => {}
                        Err(e) => log::error!("chat-bob: new PQ prekeys: {e}"),
                    }
                    publish(&mut relay, &party);
                }
                Event::Rejected { peer, kind, why } => {
                    log::info!("chat-bob: rejected a frame from {peer} ({kind:?}): {why}")
                }
                Event::Error(e) => log::warn!("chat-bob: {e}"),
                Event::Info(i) => log::info!("chat-bob: {i}"),
                _ => {}
            }
        }
        for (to, f) in party.take_outgoing() {
            if let Err(e) = relay.send(BOB, to, &f) {
                log::warn!("chat-bob: relay send: {e}");
            }
        }
        if last_report.elapsed() > REPORT {
            last_report = Instant::now();
            log::info!("chat-bob: {:?}", party.counters());
        }
    }
}

/// What wakes Bob's loop.
enum Wake {
    Frame(u32, Vec<u8>),
    RelayError(String),
    DhDone,
}

/// Bob's counters go to the log this often (and his loop wakes at least this often).
const REPORT: Duration = Duration::from_secs(5);

/// A thread of its own that waits on the relay for Bob's frames (`RecvWait`: answered when one
/// comes) and hands them to his loop.
fn start_receiver(tx: mpsc::Sender<Wake>) -> Result<(), String> {
    let relay = Relay::new().map_err(|e| e.to_string())?;
    relay
        .spawn_receiver(BOB, "chat-bob-recv", move |r| {
            tx.send(match r {
                Ok((from, data)) => Wake::Frame(from, data),
                Err(e) => Wake::RelayError(e.to_string()),
            })
            .is_ok()
        })
        .map_err(|e| format!("spawn the relay receiver: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    fn p(v: &[&str]) -> Result<usize, String> {
        let a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        parse_args(&a, &|_| None).map(|(_, n, _)| n)
    }

    fn pq(v: &[&str]) -> Result<usize, String> {
        let a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        parse_args(&a, &|_| None).map(|(_, _, n)| n)
    }

    #[test]
    fn pq_prekey_flag() {
        assert_eq!(pq(&["--store", "/s", "--engine", "software"]), Ok(8));
        assert_eq!(pq(&["--store", "/s", "--engine", "software", "--pq-one-time-prekeys", "3"]), Ok(3));
        for bad in ["0", "101", "x"] {
            assert!(pq(&["--store", "/s", "--engine", "software", "--pq-one-time-prekeys", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_and_malformed_flags() {
        assert_eq!(p(&["--store", "/s", "--engine", "software"]), Ok(32));
        assert_eq!(p(&["--store", "/s", "--engine", "software", "--one-time-prekeys", "5"]), Ok(5));
        for (args, want) in [
            (&["--store", "/s", "--engine", "software", "--one-time-prekeys", "0"][..], "1..=1000"),
            (&["--store", "/s", "--engine", "software", "--one-time-prekeys", "1001"][..], "1..=1000"),
            (&["--store", "/s", "--engine", "software", "--one-time-prekeys", "many"][..], "not a number"),
            (&["--store", "/s", "--engine", "software", "--one-time-prekeys"][..], "needs a value"),
            (&["--engine", "software"][..], "--store"),
            (&["--store", "/s", "--sync-dh"][..], "unknown option"),
        ] {
            let e = p(args).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
