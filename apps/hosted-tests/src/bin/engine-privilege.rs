//! An ORDINARY engine25519 client tries every privileged operation (docs/security.md) and must be
//! refused each time, while the service keeps serving:
//! 1. it waits until the system controller (sysctl) has claimed the control slots
//!    (`trusted_init_done`), as an app started after boot would find the system;
//! 2. looking up the control name is refused (`request_connection` -> error, at once), and so
//!    is a claim through the client library (`engine25519::Control::claim` -> SlotTaken);
//! 3. each privileged opcode (Suspend, Resume, Quit) sent to the PUBLIC server, as every
//!    message kind, gets the error reply `NotPermitted` (blocking scalar: `Scalar1(13)`;
//!    lend/lend_mut: memory back with `offset = 13`, `valid = None`; scalar/move: no answer);
//! 4. none of it had an effect: the engine is not suspended, and 20 X25519 calls and one
//!    X25519Batch of 4 still match x25519-dalek.
//!
//! Prints `VERDICT engine-privilege PASS|FAIL refused=R of=N lookup=refused claim=refused
//! served_after=S of_valid=20 suspended=0 -- first problem`.
//!
//! `--steal`: the race of docs/security.md instead. Started before sysctl, it claims the
//! control slot itself (`VERDICT engine-privilege/steal PASS|FAIL stole=yes|no`: PASS if it got
//! the slot, i.e. the race is exercised) and waits; the harness then checks that
//! sysctl notices (its claim is refused) and shuts the system down.

use std::time::Duration;

use engine25519::api::{Opcode, Status, CONTROL_NAME};
use hosted_tests::{privilege, Verdict};

fn steal() -> ! {
    let stole = engine25519::Control::claim(Duration::from_secs(20)).is_ok();
    hosted_tests::report(
        &Verdict::judged("engine-privilege/steal", stole).with("stole", if stole { "yes" } else { "no" }),
    );
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn main() {
    xous_api_log::init_wait().expect("log server");
    if std::env::args().any(|a| a == "--steal") {
        steal();
    }
    let e = engine25519::Engine25519::new().expect("connect to engine25519");
    let mut bad: Vec<String> = Vec::new();

    // 1. the system has finished its trusted boot (sysctl holds the control slots)
    privilege::wait_trusted_boot(&mut bad);
    // 2. the control name: lookup and claim refused
    let (lookup, claim) =
        privilege::control_refused(CONTROL_NAME, engine25519::Control::claim(Duration::from_secs(2)), &mut bad);
    // 3. privileged opcodes on the public server, every message kind
    let ops: Vec<(usize, &str)> = [(Opcode::Suspend, "Suspend"), (Opcode::Resume, "Resume"), (Opcode::Quit, "Quit")]
        .iter()
        .map(|(o, n)| (*o as usize, *n))
        .collect();
    let (refused, tried) =
        privilege::privileged_opcodes_refused(e.conn(), &ops, Status::NotPermitted as usize, &mut bad);
    // the kernel's Shutdown: the system's own processes only
    let shutdown = privilege::shutdown_refused(&mut bad);

    // 4. no effect, and the service still serves
    const VALID: usize = 20;
    let mut served = 0;
    for i in 0..VALID as u8 {
        let k = [i.wrapping_mul(29).wrapping_add(3); 32];
        let u = x25519_dalek::X25519_BASEPOINT_BYTES;
        match e.x25519(&k, &u) {
            Ok(r) if r == x25519_dalek::x25519(k, u) => served += 1,
            other => bad.push(format!("x25519 after the attempts: {other:?}")),
        }
    }
    // an ordinary app is served the batch call too (it is no privileged operation)
    let jobs: Vec<([u8; 32], [u8; 32])> =
        (0..4u8).map(|i| ([i.wrapping_mul(41) | 1; 32], x25519_dalek::X25519_BASEPOINT_BYTES)).collect();
    match e.x25519_batch(&jobs) {
        Ok(r)
            if r.len() == jobs.len()
                && jobs.iter().zip(&r).all(|((k, u), r)| r.result == x25519_dalek::x25519(*k, *u)) => {}
        other => bad.push(format!("x25519_batch after the attempts: {:?}", other.map(|r| r.len()))),
    }
    let suspended = match e.stats() {
        Ok(s) => s.suspended,
        Err(err) => {
            bad.push(format!("stats: {err}"));
            u32::MAX
        }
    };
    if suspended != 0 {
        bad.push(format!("engine reports suspended={suspended}"));
    }
    let outcome = privilege::Outcome { refused, tried, lookup, claim, served, of_valid: VALID, shutdown };
    hosted_tests::report(&outcome.verdict("engine-privilege", &bad).with("suspended", suspended));
}
