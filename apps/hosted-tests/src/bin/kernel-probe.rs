//! Probe used by the kernel-patch tests (`cargo xtask kernel-test`).
//!
//! Modes (first argument):
//! - `sid`: create two servers and print `PROBE-SID <hex>` for each (the kernel's RNG makes
//!   server IDs; with the stock kernel they are identical on every run).
//! - `ready`: print `PROBE-READY <pid>` as soon as the first syscall returned (start-up latency).
//! - `shutdown`: wait until the `idle` probe's server is registered (so the system is fully up),
//!   print `PROBE-SHUTDOWN-CALL`, then issue the Shutdown syscall.
//! - `idle`: register a server with xous-names, then serve forever (a process the kernel must
//!   stop on Shutdown).
//! - `slow-server`: a server that answers blocking scalars and mutable lends only after a delay
//!   (given by the caller), so the caller can exit while the server still holds its message;
//!   it counts the delayed replies it delivered.
//! - `exit-with-threads`: connect to the slow server, start extra threads that make Xous calls
//!   (two blocking scalars and one mutable lend held by the slow server, one thread looping on
//!   ticktimer calls and yields, three looping on yields), print `PROBE-EXITING` and return from main while all of them
//!   are in flight. The kernel must clean the process up without disturbing anyone else.
//! - `after-exit`: wait until the slow server has answered every delayed message (the exited
//!   process is gone by then), then check that the system still serves: a scalar to the slow
//!   server, a ticktimer call and a xous-names lookup; print `VERDICT kernel-probe/after-exit
//!   PASS` (or FAIL with what broke) and call Shutdown.
//! - `shutdown-refused` (started as an ordinary program, kernel-patches/0006): connect to the
//!   slow server, call Shutdown, which must be answered `AccessDenied`; then check that the
//!   system still serves (a scalar round trip to the slow server, a ticktimer call); print
//!   `VERDICT kernel-probe/shutdown-refused PASS|FAIL`, register a name and serve forever.
//! - `shutdown-last` (started as a program allowed to shut down): wait for that name, then call
//!   Shutdown (printing `PROBE-SHUTDOWN-OK` or `PROBE-SHUTDOWN-ERR <error>`).

const IDLE_NAME: &str = "_kernel-probe idle_";
const SLOW_NAME: &str = "_kernel-probe slow_";
const REFUSED_NAME: &str = "_kernel-probe refused_";

/// slow-server opcodes.
const SLOW_DELAYED_SCALAR: usize = 1; // blocking scalar: reply arg2 + 1 after arg1 ms
const SLOW_NOW_SCALAR: usize = 2; // blocking scalar: reply arg1 + 1 at once
const SLOW_DELAYED_LEND: usize = 3; // mutable lend: increment every byte, return after `valid` ms
const SLOW_STATS: usize = 4; // blocking scalar: (messages delayed, delayed replies delivered)

/// Threads of `exit-with-threads` that only make short kernel calls.
const BUSY_THREADS: usize = 3;

/// How long the slow server holds the exiting probe's messages (it exits well before).
const HOLD_MS: usize = 400;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "sid" => {
            for _ in 0..2 {
                let sid = xous::create_server().expect("create_server");
                let w = sid.to_u32();
                hosted_tests::marker(&format!("PROBE-SID {:08x}{:08x}{:08x}{:08x}", w.0, w.1, w.2, w.3));
            }
        }
        "ready" => {
            let pid = xous::process::id();
            hosted_tests::marker(&format!("PROBE-READY {pid}"));
        }
        "shutdown" => {
            let xns = xous_api_names::XousNames::new().expect("xous-names");
            xns.request_connection_blocking(IDLE_NAME).expect("connect to the idle probe");
            hosted_tests::marker("PROBE-SHUTDOWN-CALL");
            match hosted_tests::shutdown_system() {
                Ok(()) => hosted_tests::marker("PROBE-SHUTDOWN-OK"),
                Err(e) => hosted_tests::marker(&format!("PROBE-SHUTDOWN-ERR {e:?}")),
            }
            // The kernel closes our connection; the xous runtime exits the process then.
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
        "idle" => {
            let xns = xous_api_names::XousNames::new().expect("xous-names");
            // The marker comes before the registration: the shutdown probe connects as soon as
            // the name exists and may shut the system down before a marker printed afterwards
            // reaches the harness (a flaky "output ended while waiting for PROBE-IDLE").
            hosted_tests::marker(&format!("PROBE-IDLE {}", xous::process::id()));
            let sid = xns.register_name(IDLE_NAME, None).expect("register idle server");
            loop {
                // Serve (and drop) whatever arrives; blocking in the kernel like a real server.
                let _ = xous::receive_message(sid);
            }
        }
        "slow-server" => slow_server(),
        "exit-with-threads" => exit_with_threads(),
        "after-exit" => after_exit(),
        "shutdown-refused" => shutdown_refused(),
        "shutdown-last" => {
            let xns = xous_api_names::XousNames::new().expect("xous-names");
            xns.request_connection_blocking(REFUSED_NAME).expect("wait for the refused probe");
            match hosted_tests::shutdown_system() {
                Ok(()) => hosted_tests::marker("PROBE-SHUTDOWN-OK"),
                Err(e) => hosted_tests::marker(&format!("PROBE-SHUTDOWN-ERR {e:?}")),
            }
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
        other => {
            eprintln!(
                "kernel-probe: unknown mode {other:?} (sid|ready|shutdown|idle|slow-server|exit-with-threads|after-exit|shutdown-refused|shutdown-last)"
            );
            std::process::exit(2);
        }
    }
}

fn slow_server() {
    use std::time::{Duration, Instant};
    let xns = xous_api_names::XousNames::new().expect("xous-names");
    let sid = xns.register_name(SLOW_NAME, None).expect("register slow server");
    hosted_tests::marker(&format!("PROBE-SLOW-READY {}", xous::process::id()));
    // Messages held back, with the time to answer them.
    let mut held: Vec<(Instant, xous::MessageEnvelope)> = Vec::new();
    let (mut delayed, mut delivered) = (0usize, 0usize);
    loop {
        let now = Instant::now();
        let mut i = 0;
        while i < held.len() {
            if held[i].0 <= now {
                let (_, mut env) = held.swap_remove(i);
                match &mut env.body {
                    xous::Message::BlockingScalar(s) => {
                        // The caller may be gone: whatever the kernel answers, keep serving.
                        let r = xous::return_scalar(env.sender, s.arg2.wrapping_add(1));
                        hosted_tests::marker(&format!("PROBE-SLOW-REPLIED scalar {r:?}"));
                    }
                    xous::Message::MutableBorrow(m) => {
                        for b in m.buf.as_slice_mut::<u8>() {
                            *b = b.wrapping_add(1);
                        }
                        hosted_tests::marker("PROBE-SLOW-REPLIED lend");
                        // dropping the envelope returns the memory
                    }
                    _ => {}
                }
                delivered += 1;
            } else {
                i += 1;
            }
        }
        let env = match xous::try_receive_message(sid) {
            Ok(Some(e)) => e,
            Ok(None) => {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            Err(e) => {
                eprintln!("kernel-probe slow-server: receive: {e:?}");
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
        };
        let id = env.body.id();
        match (id, &env.body) {
            (SLOW_DELAYED_SCALAR, xous::Message::BlockingScalar(s)) => {
                delayed += 1;
                held.push((Instant::now() + Duration::from_millis(s.arg1 as u64), env));
            }
            (SLOW_DELAYED_LEND, xous::Message::MutableBorrow(m)) => {
                delayed += 1;
                let ms = m.valid.map(|v| v.get()).unwrap_or(0) as u64;
                held.push((Instant::now() + Duration::from_millis(ms), env));
            }
            (SLOW_NOW_SCALAR, xous::Message::BlockingScalar(s)) => {
                xous::return_scalar(env.sender, s.arg1.wrapping_add(1)).ok();
            }
            (SLOW_STATS, xous::Message::BlockingScalar(_)) => {
                xous::return_scalar2(env.sender, delayed, delivered).ok();
            }
            (_, xous::Message::BlockingScalar(_)) => {
                xous::return_scalar(env.sender, usize::MAX).ok();
            }
            _ => eprintln!("kernel-probe slow-server: unexpected message {id}"),
        }
    }
}

fn exit_with_threads() {
    use std::time::Duration;
    let xns = xous_api_names::XousNames::new().expect("xous-names");
    let cid = xns.request_connection_blocking(SLOW_NAME).expect("connect to the slow server");
    let tt = xous_api_ticktimer::Ticktimer::new().expect("ticktimer");
    for i in 0..2usize {
        std::thread::spawn(move || {
            let r = xous::send_message(cid, xous::Message::new_blocking_scalar(SLOW_DELAYED_SCALAR, HOLD_MS, i, 0, 0));
            // Not reached: the process exits while the server holds this message.
            hosted_tests::marker(&format!("PROBE-EXIT-THREAD-ANSWERED {r:?}"));
        });
    }
    std::thread::spawn(move || {
        let mut page =
            xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).expect("map page");
        page.as_slice_mut::<u8>().fill(7);
        let msg = xous::MemoryMessage {
            id: SLOW_DELAYED_LEND,
            buf: page,
            offset: None,
            valid: xous::MemorySize::new(HOLD_MS),
        };
        let r = xous::send_message(cid, xous::Message::MutableBorrow(msg));
        hosted_tests::marker(&format!("PROBE-EXIT-THREAD-ANSWERED {r:?}"));
    });
    std::thread::spawn(move || loop {
        // Busy with short calls when the process exits: some are in flight in the kernel.
        let _ = tt.elapsed_ms();
        xous::yield_slice();
    });
    for _ in 0..BUSY_THREADS {
        std::thread::spawn(|| loop {
            // Answered by the kernel itself: its answers race with the process exit, so some
            // are written to the closed connection.
            xous::yield_slice();
        });
    }
    // Let every thread get into its call, then make sure the server holds all three messages.
    loop {
        match xous::send_message(cid, xous::Message::new_blocking_scalar(SLOW_STATS, 0, 0, 0, 0)) {
            Ok(xous::Result::Scalar2(delayed, _)) if delayed >= 3 => break,
            Ok(_) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("slow server stats: {e:?}"),
        }
    }
    hosted_tests::marker(&format!("PROBE-EXITING {}", xous::process::id()));
    // Returning from main ends the process with every thread still inside a Xous call.
}

/// The verdict of `after-exit`: `VERDICT kernel-probe/after-exit PASS ticktimer=T` once the
/// exiting probe's calls were answered and the system still serves, or FAIL with what broke.
const AFTER_EXIT: &str = "kernel-probe/after-exit";

fn after_exit_failed(what: String) -> ! {
    hosted_tests::report(&hosted_tests::Verdict::judged(AFTER_EXIT, false).detail(what));
    std::process::exit(1);
}

fn after_exit() {
    use std::time::{Duration, Instant};
    let xns = xous_api_names::XousNames::new().expect("xous-names");
    let cid = xns.request_connection_blocking(SLOW_NAME).expect("connect to the slow server");
    // The exiting probe's three held messages must all have been answered (after it exited).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match xous::send_message(cid, xous::Message::new_blocking_scalar(SLOW_STATS, 0, 0, 0, 0)) {
            Ok(xous::Result::Scalar2(_, delivered)) if delivered >= 3 => break,
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            other => after_exit_failed(format!("slow server stats: {other:?}")),
        }
    }
    // Give the kernel time to notice the exit (and to fail, if it is going to).
    std::thread::sleep(Duration::from_millis(300));
    let r = xous::send_message(cid, xous::Message::new_blocking_scalar(SLOW_NOW_SCALAR, 41, 0, 0, 0));
    if !matches!(r, Ok(xous::Result::Scalar1(42))) {
        after_exit_failed(format!("slow server scalar: {r:?}"));
    }
    let tt = xous_api_ticktimer::Ticktimer::new().expect("ticktimer");
    let t = tt.elapsed_ms();
    if xns.request_connection(SLOW_NAME).is_err() {
        after_exit_failed("xous-names lookup".into());
    }
    hosted_tests::report(&hosted_tests::Verdict::judged(AFTER_EXIT, true).with("ticktimer", t));
    match hosted_tests::shutdown_system() {
        Ok(()) => hosted_tests::marker("PROBE-SHUTDOWN-OK"),
        Err(e) => hosted_tests::marker(&format!("PROBE-SHUTDOWN-ERR {e:?}")),
    }
    std::thread::sleep(Duration::from_secs(30));
}

const SHUTDOWN_REFUSED: &str = "kernel-probe/shutdown-refused";

/// An ordinary process asks for Shutdown: it must be refused and the system keep serving.
fn shutdown_refused() {
    use std::time::Duration;
    let xns = xous_api_names::XousNames::new().expect("xous-names");
    let cid = xns.request_connection_blocking(SLOW_NAME).expect("connect to the slow server");
    let mut bad = Vec::new();
    let answer = hosted_tests::shutdown_system();
    if answer != Err(xous::Error::AccessDenied) {
        bad.push(format!("Shutdown answered {answer:?} (want AccessDenied)"));
    }
    // still serving: a round trip to another process's server, and the ticktimer
    std::thread::sleep(Duration::from_millis(200));
    match xous::send_message(cid, xous::Message::new_blocking_scalar(SLOW_NOW_SCALAR, 41, 0, 0, 0)) {
        Ok(xous::Result::Scalar1(42)) => {}
        other => bad.push(format!("slow server after the refusal: {other:?}")),
    }
    let t = xous_api_ticktimer::Ticktimer::new().map(|tt| tt.elapsed_ms());
    if t.is_err() {
        bad.push(format!("ticktimer after the refusal: {t:?}"));
    }
    let v = hosted_tests::Verdict::judged(SHUTDOWN_REFUSED, bad.is_empty())
        .with("answer", format!("{answer:?}").replace(' ', ""));
    hosted_tests::report(&if bad.is_empty() { v } else { v.detail(bad.join("; ")) });
    let sid = xns.register_name(REFUSED_NAME, None).expect("register the refused probe's name");
    loop {
        let _ = xous::receive_message(sid);
    }
}
