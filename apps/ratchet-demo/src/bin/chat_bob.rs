//! chat-bob: Bob, a separate Xous process with his own sessions (one per peer mailbox). He
//! publishes his prekey bundle on the relay, accepts X3DH prekey messages, and answers every
//! message with `re <seq>: <text>`. Every X25519 runs on the engine service (his set-up ones as
//! blocking calls in this headless process, the ratchet's through the async runner), every key
//! comes from the TRNG service. His store: `<store>/bob.state`.
//!
//! Options: ratchet_demo::config::COMMON, plus `--one-time-prekeys N` (default 32).

use std::time::{Duration, Instant};

use ratchet_demo::config::{Common, COMMON, IDLE};
use ratchet_demo::dh::{engine_fn, AsyncRunner, Device, DhFn};
use ratchet_demo::entropy::PoolRng;
use ratchet_demo::party::{Event, Party};
use ratchet_demo::relay_client::Relay;
use ratchet_demo::BOB;
use ratchet::{DhJob, DhOutput, KeyPair, Responder};
use service_ipc::options::{Opt, Takes};

const MINE: &[Opt] = &[Opt { flag: "--one-time-prekeys", env: Some("CHAT_BOB_OPKS"), takes: Takes::Value }];

fn parse_args(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<(Common, usize), String> {
    let opts: Vec<Opt> = COMMON.iter().chain(MINE).copied().collect();
    let p = service_ipc::options::parse(&opts, args, getenv)?;
    let cfg = Common::from(&p)?;
    let opks = p.u64("--one-time-prekeys")?.unwrap_or(32);
    if !(1..=1000).contains(&opks) {
        return Err(format!("--one-time-prekeys must be 1..=1000, got {opks}"));
    }
    Ok((cfg, opks as usize))
}

fn die(msg: &str) -> ! {
    log::error!("chat-bob: {msg}");
    eprintln!("chat-bob: {msg}");
    xous::terminate_process(2)
}

/// Blocking X25519 on the engine for Bob's key set-up (a headless process: no UI to stall).
fn blocking_dh(f: &mut DhFn) -> impl FnMut(&[DhJob]) -> Result<Vec<DhOutput>, ratchet::Error> + '_ {
    move |jobs: &[DhJob]| jobs.iter().map(|j| f(j).map(|(o, _)| o).map_err(ratchet::Error::Dh)).collect()
}

/// Bob's answer to message `seq` (queued in the same store write as the acceptance).
fn reply(seq: u32, text: &str) -> String {
    let t: String = text.chars().take(200).collect();
    format!("re {seq}: {t}")
}

fn publish(relay: &mut Relay, party: &Party) {
    let b = party.responder_keys().expect("Bob is a responder").bundle().encode();
    if let Err(e) = relay.put_bundle(BOB, &b) {
        log::error!("chat-bob: publishing the bundle: {e}");
    }
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cfg, opks) = parse_args(&args, &|k: &str| std::env::var(k).ok()).unwrap_or_else(|e| die(&e));

    let engine = engine25519::Engine25519::new().unwrap_or_else(|e| die(&format!("engine25519: {e:?}")));
    let mut rng = PoolRng::from_trng().unwrap_or_else(|e| die(&e));
    let mut relay = Relay::new().unwrap_or_else(|e| die(&e.to_string()));
    let path = cfg.store.join("bob.state");
    let mut setup_dh = engine_fn(engine.clone());
    if !rng.wait_for(2048, Duration::from_secs(30)) {
        die("no entropy from the TRNG within 30 s");
    }
    let mut party = Party::responder(&path, BOB, || {
        let mut dh = blocking_dh(&mut setup_dh);
        let id = KeyPair::generate(&mut rng.clone(), &mut dh).map_err(|e| e.to_string())?;
        Responder::generate(id, opks, &mut rng.clone(), &mut dh).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
    party.auto_reply = Some(Box::new(reply));
    publish(&mut relay, &party);
    let mut dh = AsyncRunner::new(engine_fn(engine.clone()), Device::new(cfg.pacing()));
    log::info!(
        "chat-bob: ready ({}; {} sessions, {} messages in history, store {})",
        cfg.describe(),
        party.history().len(),
        party.counters().accepted,
        path.display()
    );
    println!("CHAT-BOB ready history={} accepted={}", party.history().len(), party.counters().accepted);

    let mut last_report = Instant::now();
    loop {
        let mut busy = false;
        loop {
            match relay.recv(BOB) {
                Ok(Some((from, data))) => {
                    party.deliver(from, data);
                    busy = true;
                }
                Ok(None) => break,
                Err(e) => {
                    log::error!("chat-bob: relay recv: {e}");
                    break;
                }
            }
        }
        if let Err(e) = party.tick(Instant::now(), &mut dh, &mut rng) {
            log::error!("chat-bob: store: {e}");
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
                            let mut rr = rng.clone();
                            party.responder_mut().unwrap().add_one_time_prekeys(opks, &mut rr, &mut sdh)
                        };
                        match r {
                            Ok(()) => log::info!("chat-bob: {opks} new one-time prekeys"),
                            Err(e) => log::error!("chat-bob: new one-time prekeys: {e}"),
                        }
                        let _ = party.save();
                    }
                    publish(&mut relay, &party);
                }
                Event::Rejected { peer, kind, why } => log::info!("chat-bob: rejected a frame from {peer} ({kind:?}): {why}"),
                Event::Error(e) => log::warn!("chat-bob: {e}"),
                Event::Info(i) => log::info!("chat-bob: {i}"),
                _ => {}
            }
        }
        for (to, f) in party.take_outgoing() {
            busy = true;
            if let Err(e) = relay.send(BOB, to, &f) {
                log::warn!("chat-bob: relay send: {e}");
            }
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            last_report = Instant::now();
            log::info!("chat-bob: {:?}", party.counters());
        }
        if !busy {
            std::thread::sleep(IDLE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    fn p(v: &[&str]) -> Result<usize, String> {
        let a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        parse_args(&a, &|_| None).map(|(_, n)| n)
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
