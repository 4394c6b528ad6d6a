//! chat: Alice's side, a terminal UI (ratatui + crossterm) started by `cargo xtask run`.
//!
//! The UI thread draws at `--fps` (default 30) and never waits on the engine or the TRNG: DH
//! jobs go to the engine service through an async runner (or, with `--sync-dh`, run on this
//! thread to show the stall), keys come from a pool the TRNG service fills in the background,
//! and the relay is called from a network thread. See docs/chat.md.
//!
//! Modes:
//! - interactive (default): the terminal on stdin/stdout (xtask hands it a pty bridged to the
//!   user's terminal). Ctrl-C, Esc or `/quit` restores the terminal and shuts the system down.
//! - `--script N`: headless, sends `message <k> from Alice` until N are sent, waits for all N
//!   replies, checks each arrived exactly once with the right text, prints its verdict
//!   `VERDICT chat PASS|FAIL messages=N replies=.. missing=.. ... -- why` (libs/verdict).
//!   Resumes from the store after a restart. `--expect-faults`: also fail unless the relay
//!   dropped, reordered, duplicated and corrupted frames and Alice rejected replayed and
//!   corrupted ones; `--expect-resume`: also fail unless the run resumed a stored conversation.
//! - `--bench N`: headless, draws into an off-screen terminal, N messages one at a time, prints
//!   `BENCH-JSON {...}` with the frame-interval p99 and the DH figures.
//!
//! Options: ratchet_demo::config::COMMON, `--sync-dh`, `--fps F`, `--script N`, `--bench N`,
//! `--shutdown` (script/bench: shut the system down at the end), `--faults D,R,U,C` (set the
//! relay's faults at start).
//!
//! Modules: main.rs (options, start-up, exit), app.rs (the state and logic: network thread,
//! `/commands`, `App`), ui.rs (drawing, the terminal, the interactive loop), headless.rs
//! (`--script` and `--bench`).

mod app;
mod headless;
mod ui;

use std::collections::VecDeque;
use std::io::Write;
use std::time::Instant;

use ratatui::style::Color;
use ratchet_demo::config::{Common, COMMON};
use ratchet_demo::dh::{engine_fn, AsyncRunner, Device, DhRunner, SyncRunner};
use ratchet_demo::entropy::PoolRng;
use ratchet_demo::party::Party;
use ratchet_demo::relay_api::{Faults, RelayStats};
use ratchet_demo::relay_client::Relay;
use ratchet_demo::{ALICE, BOB};
use service_ipc::options::{Opt, Takes};
use verdict::Verdict;

use app::*;
use headless::{run_headless, Expect};
use ui::{restore_terminal, run_interactive};

const MINE: &[Opt] = &[
    Opt { flag: "--sync-dh", env: Some("CHAT_SYNC_DH"), takes: Takes::Nothing },
    Opt { flag: "--fps", env: Some("CHAT_FPS"), takes: Takes::Value },
    Opt { flag: "--script", env: None, takes: Takes::Value },
    Opt { flag: "--bench", env: None, takes: Takes::Value },
    Opt { flag: "--shutdown", env: None, takes: Takes::Nothing },
    Opt { flag: "--faults", env: Some("CHAT_FAULTS"), takes: Takes::Value },
    Opt { flag: "--expect-faults", env: None, takes: Takes::Nothing },
    Opt { flag: "--expect-resume", env: None, takes: Takes::Nothing },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Interactive,
    Script(u32),
    Bench(u32),
}

struct Args {
    common: Common,
    sync_dh: bool,
    fps: u32,
    mode: Mode,
    shutdown: bool,
    faults: Option<Faults>,
    expect: Expect,
}

fn parse_args(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Args, String> {
    let opts: Vec<Opt> = COMMON.iter().chain(MINE).copied().collect();
    let p = service_ipc::options::parse(&opts, args, getenv)?;
    let common = Common::from(&p)?;
    let fps = p.u64("--fps")?.unwrap_or(30);
    if !(1..=240).contains(&fps) {
        return Err(format!("--fps must be 1..=240, got {fps}"));
    }
    let count = |f: &str| -> Result<Option<u32>, String> {
        match p.u64(f)? {
            Some(n) if (1..=100_000).contains(&n) => Ok(Some(n as u32)),
            Some(n) => Err(format!("{f} must be 1..=100000, got {n}")),
            None => Ok(None),
        }
    };
    let mode = match (count("--script")?, count("--bench")?) {
        (Some(_), Some(_)) => return Err("--script and --bench exclude each other".into()),
        (Some(n), None) => Mode::Script(n),
        (None, Some(n)) => Mode::Bench(n),
        (None, None) => Mode::Interactive,
    };
    let faults = p.get("--faults").map(Faults::parse_option).transpose()?;
    let expect = Expect { faults: p.is_set("--expect-faults"), resume: p.is_set("--expect-resume") };
    if expect != Expect::default() && !matches!(mode, Mode::Script(_)) {
        return Err("--expect-faults and --expect-resume need --script N".into());
    }
    Ok(Args {
        common,
        sync_dh: p.is_set("--sync-dh"),
        fps: fps as u32,
        mode,
        shutdown: p.is_set("--shutdown"),
        faults,
        expect,
    })
}

// ------------------------------------------------------------------------------ network thread

fn shutdown_system() -> ! {
    let _ = xous::rsyscall(xous::SysCall::Shutdown);
    std::process::exit(0)
}

fn die(msg: &str) -> ! {
    log::error!("chat: {msg}");
    eprintln!("chat: {msg}");
    xous::terminate_process(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args, &|k: &str| std::env::var(k).ok()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("chat: {e}");
            std::process::exit(2);
        }
    };
    // the terminal comes back whatever happens: panics restore it before the message is printed
    if args.mode == Mode::Interactive {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            default(info);
        }));
    }
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);

    let engine = engine25519::Engine25519::new().unwrap_or_else(|e| die(&format!("engine25519: {e:?}")));
    let rng = PoolRng::from_trng().unwrap_or_else(|e| die(&e));
    let relay = Relay::new().unwrap_or_else(|e| die(&e.to_string()));
    if let Some(f) = args.faults {
        relay.set_faults(f).unwrap_or_else(|e| die(&e.to_string()));
    }
    let path = args.common.store.join("alice.state");
    let party = Party::initiator(&path, ALICE, BOB).unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
    let device = Device::new(args.common.pacing());
    let dh: Box<dyn DhRunner> = if args.sync_dh {
        Box::new(SyncRunner::new(engine_fn(engine.clone()), device))
    } else {
        Box::new(AsyncRunner::new(engine_fn(engine.clone()), device))
    };
    let engine_stats = start_engine_stats(engine.clone());
    let (net_tx, net_rx) = start_net(relay);
    let mut app = App {
        args_desc: args.common.describe(),
        engine_mode: args.common.engine,
        clock_hz: args.common.clock_hz,
        sync_dh: args.sync_dh,
        party,
        dh,
        rng,
        net_tx,
        net_rx,
        engine_stats,
        backend_name: "?".into(),
        relay: RelayStats::default(),
        faults: args.faults.unwrap_or_default(),
        input: String::new(),
        activity: VecDeque::new(),
        scroll: 0,
        quit: false,
        bundle_asked: None,
        t0: Instant::now(),
        frames: 0,
        last_frame: None,
        intervals: VecDeque::new(),
        frame_ms: 0.0,
        worst_recent: 0.0,
        dh_lat: VecDeque::new(),
    };
    let resumed = app.party.history().len();
    let desc = app.args_desc.clone();
    app.note(
        format!(
            "{resumed} messages restored; {desc}; DH {}; store {}",
            if args.sync_dh { "on the UI thread (--sync-dh)" } else { "asynchronous" },
            path.display()
        ),
        Color::Cyan,
    );
    log::info!("chat: started ({desc}), mode {:?}", args.mode);
    match args.mode {
        Mode::Interactive => {
            let r = run_interactive(&mut app, args.fps);
            restore_terminal();
            if let Err(e) = r {
                log::error!("chat: terminal: {e}");
                eprintln!("chat: terminal: {e}");
            }
            log::info!("chat: quit by the user; shutting the system down");
            shutdown_system();
        }
        Mode::Script(n) | Mode::Bench(n) => {
            let bench = matches!(args.mode, Mode::Bench(_));
            let r = run_headless(&mut app, args.fps, n, bench, args.expect);
            let ok = match &r {
                Ok(line) if bench => {
                    println!("{line}");
                    true
                }
                Ok(line) => {
                    println!("{line}");
                    matches!(Verdict::parse(line), Some(Ok(v)) if v.passed())
                }
                Err(e) => {
                    println!("{}", Verdict::judged("chat", false).detail(e));
                    false
                }
            };
            let _ = std::io::stdout().flush();
            if args.shutdown {
                shutdown_system();
            }
            std::process::exit(if ok { 0 } else { 1 });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Result<Args, String> {
        let a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        parse_args(&a, &|_| None)
    }

    #[test]
    fn flags_and_malformed_flags() {
        let a =
            p(&["--store", "/s", "--engine", "software", "--sync-dh", "--script", "200", "--faults", "10,10,10,10"])
                .unwrap();
        assert!(a.sync_dh);
        assert_eq!(a.mode, Mode::Script(200));
        assert_eq!(a.faults, Some(Faults { drop: 10, reorder: 10, duplicate: 10, corrupt: 10 }));
        assert_eq!(p(&["--store", "/s", "--engine", "software"]).unwrap().mode, Mode::Interactive);
        assert_eq!(a.expect, Expect::default());
        let a = p(&["--store", "/s", "--engine", "software", "--script", "9", "--expect-faults", "--expect-resume"])
            .unwrap();
        assert_eq!(a.expect, Expect { faults: true, resume: true });
        for (args, want) in [
            (&["--store", "/s", "--engine", "software", "--fps", "0"][..], "1..=240"),
            (&["--store", "/s", "--engine", "software", "--script", "0"][..], "1..=100000"),
            (&["--store", "/s", "--engine", "software", "--script", "1", "--bench", "1"][..], "exclude"),
            (&["--store", "/s", "--engine", "software", "--faults", "1,2"][..], "--faults"),
            (&["--store", "/s", "--engine", "software", "--bogus"][..], "unknown option"),
            (&["--store", "/s", "--engine", "software", "--expect-faults"][..], "need --script"),
            (&["--store", "/s", "--engine", "software", "--bench", "3", "--expect-resume"][..], "need --script"),
            (&["--engine", "software"][..], "--store"),
        ] {
            let e = p(args).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
