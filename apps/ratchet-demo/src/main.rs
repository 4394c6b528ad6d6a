//! ratchet-demo (preview).
//!
//! The X3DH + Double Ratchet chat is a later issue. This preview already has the shape it will
//! keep: a UI loop that renders frames at a fixed rate and never blocks on crypto, keys drawn
//! from the TRNG service (`trng::Trng`, rand_core), and every Diffie-Hellman submitted to the
//! engine25519 service asynchronously (`Engine25519::x25519_async`), polled once per frame.
//!
//! Each "handshake": Alice and Bob draw fresh key pairs, compute their public keys and the shared
//! secret from both sides on the engine (4 X25519 jobs), and the UI checks that both sides agree.
//! The frame loop reports its worst frame time while jobs are in flight.
//!
//! Usage (under the hosted kernel, started by `cargo xtask run`):
//!   ratchet-demo [--handshakes N] [--fps F] [--shutdown]
//! Without `--handshakes` it runs until the system is stopped. With `--shutdown` it prints
//! `DEMO-DONE ok|fail ...` after N handshakes and shuts the hosted system down.

use std::time::{Duration, Instant};

use engine25519::{Engine25519, PendingX25519};
use x25519_dalek::{PublicKey, StaticSecret};

struct Args {
    handshakes: Option<u64>,
    fps: u32,
    shutdown: bool,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut a = Args { handshakes: None, fps: 30, shutdown: false };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--handshakes" => {
                let v = it.next().ok_or("--handshakes needs a value")?;
                a.handshakes = Some(v.parse().map_err(|_| format!("--handshakes: not a number: {v}"))?);
            }
            "--fps" => {
                let v = it.next().ok_or("--fps needs a value")?;
                let f: u32 = v.parse().map_err(|_| format!("--fps: not a number: {v}"))?;
                if !(1..=240).contains(&f) {
                    return Err(format!("--fps must be 1..=240, got {f}"));
                }
                a.fps = f;
            }
            "--shutdown" => a.shutdown = true,
            other => return Err(format!("unknown argument {other:?} (use --handshakes N, --fps F, --shutdown)")),
        }
    }
    Ok(a)
}

/// One party's key pair; the secret zeroizes itself on drop (x25519-dalek).
struct Party {
    secret: StaticSecret,
}

impl Party {
    fn new(rng: &mut trng::Trng) -> Result<Self, trng::TrngError> {
        let mut bytes = [0u8; 32];
        rng.fill_buf(&mut bytes)?;
        let secret = StaticSecret::from(bytes);
        bytes.iter_mut().for_each(|b| *b = 0);
        Ok(Party { secret })
    }
}

/// The state machine of one handshake, advanced once per frame without ever blocking.
enum Handshake {
    Keys { alice: Party, bob: Party, pa: PendingX25519, pb: PendingX25519 },
    Shared { ab: PendingX25519, ba: PendingX25519 },
}

const BASEPOINT: [u8; 32] = {
    let mut b = [0u8; 32];
    b[0] = 9;
    b
};

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ratchet-demo: {e}");
            std::process::exit(2);
        }
    };
    xous_api_log::init_wait().expect("log server");
    log::set_max_level(log::LevelFilter::Info);

    let engine = Engine25519::new().expect("connect to engine25519");
    let mut rng = trng::Trng::new().expect("connect to the TRNG");
    log::info!("ratchet-demo (preview): UI at {} fps, DH on engine25519, keys from the TRNG", args.fps);

    let frame = Duration::from_secs(1) / args.fps;
    let mut current: Option<Handshake> = None;
    let mut done = 0u64;
    let mut failures = 0u64;
    let mut frames = 0u64;
    let mut worst_frame = Duration::ZERO;
    let mut started_at = Instant::now();
    let mut next_frame = Instant::now();
    let mut next_handshake = Instant::now();
    let mut prev_frame_start: Option<Instant> = None;

    loop {
        // worst_frame = the longest interval between two frame starts (what a user sees as stutter)
        let frame_start = Instant::now();
        if let Some(prev) = prev_frame_start {
            worst_frame = worst_frame.max(frame_start - prev);
        }
        prev_frame_start = Some(frame_start);
        frames += 1;

        // --- crypto work: submit or poll, never wait ---
        current = match current.take() {
            None if Instant::now() >= next_handshake => match (Party::new(&mut rng), Party::new(&mut rng)) {
                (Ok(alice), Ok(bob)) => {
                    started_at = Instant::now();
                    let pa = engine.x25519_async(&alice.secret.to_bytes(), &BASEPOINT);
                    let pb = engine.x25519_async(&bob.secret.to_bytes(), &BASEPOINT);
                    Some(Handshake::Keys { alice, bob, pa, pb })
                }
                (Err(e), _) | (_, Err(e)) => {
                    log::warn!("TRNG refused keys ({e:?}); retrying in 1 s");
                    failures += 1;
                    next_handshake = Instant::now() + Duration::from_secs(1);
                    None
                }
            },
            None => None,
            Some(Handshake::Keys { alice, bob, pa, pb }) if pa.is_ready() && pb.is_ready() => {
                match (pa.try_take().unwrap(), pb.try_take().unwrap()) {
                    (Ok(a_pub), Ok(b_pub)) => {
                        // sanity: the engine's public keys equal the software ones (dalek at the edge)
                        let ok = PublicKey::from(&alice.secret).as_bytes() == &a_pub
                            && PublicKey::from(&bob.secret).as_bytes() == &b_pub;
                        if !ok {
                            log::error!("engine public key differs from x25519-dalek");
                            failures += 1;
                        }
                        let ab = engine.x25519_async(&alice.secret.to_bytes(), &b_pub);
                        let ba = engine.x25519_async(&bob.secret.to_bytes(), &a_pub);
                        Some(Handshake::Shared { ab, ba })
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        log::error!("engine error: {e:?}");
                        failures += 1;
                        None
                    }
                }
            }
            Some(Handshake::Shared { ab, ba }) if ab.is_ready() && ba.is_ready() => {
                match (ab.try_take().unwrap(), ba.try_take().unwrap()) {
                    (Ok(k1), Ok(k2)) if k1 == k2 && k1 != [0u8; 32] => {
                        done += 1;
                        log::info!(
                            "handshake {done}: shared secret agreed ({} ms, 4 X25519 on the engine); UI {frames} frames, worst frame interval {:.1} ms",
                            started_at.elapsed().as_millis(),
                            worst_frame.as_secs_f64() * 1e3
                        );
                    }
                    (Ok(_), Ok(_)) => {
                        log::error!("shared secrets differ");
                        failures += 1;
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        log::error!("engine error: {e:?}");
                        failures += 1;
                    }
                }
                next_handshake = Instant::now() + Duration::from_millis(500);
                None
            }
            other => other,
        };

        if let Some(n) = args.handshakes {
            if done + failures >= n {
                let verdict = if failures == 0 { "ok" } else { "fail" };
                println!(
                    "DEMO-DONE {verdict} handshakes={done} failures={failures} frames={frames} worst_frame_ms={:.1}",
                    worst_frame.as_secs_f64() * 1e3
                );
                if args.shutdown {
                    xous::rsyscall(xous::SysCall::Shutdown).ok();
                }
                std::process::exit(if failures == 0 { 0 } else { 1 });
            }
        }

        // --- "render": the frame's own work is done; keep the cadence ---
        next_frame += frame;
        let now = Instant::now();
        if next_frame > now {
            std::thread::sleep(next_frame - now);
        } else {
            next_frame = now; // fell behind: do not try to catch up with a burst
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    fn p(v: &[&str]) -> Result<super::Args, String> {
        parse_args(v.iter().map(|s| s.to_string()))
    }

    #[test]
    fn good_flags() {
        let a = p(&["--handshakes", "3", "--fps", "60", "--shutdown"]).unwrap();
        assert_eq!((a.handshakes, a.fps, a.shutdown), (Some(3), 60, true));
        let d = p(&[]).unwrap();
        assert_eq!((d.handshakes, d.fps, d.shutdown), (None, 30, false));
    }

    #[test]
    fn malformed_flags_are_refused_with_a_reason() {
        for (args, want) in [
            (&["--handshakes"][..], "needs a value"),
            (&["--handshakes", "x"][..], "not a number"),
            (&["--handshakes", "-1"][..], "not a number"),
            (&["--fps", "0"][..], "1..=240"),
            (&["--fps", "1000"][..], "1..=240"),
            (&["--fps"][..], "needs a value"),
            (&["--bogus"][..], "unknown argument"),
        ] {
            let e = p(args).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
