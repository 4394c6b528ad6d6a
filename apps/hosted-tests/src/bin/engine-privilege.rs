//! An ORDINARY engine25519 client tries every privileged operation (docs/security.md) and must be
//! refused each time, while the service keeps serving:
//! 1. it waits until the system controller (sysctl) has claimed the control slots
//!    (`trusted_init_done`), as an app started after boot would find the system;
//! 2. looking up the control name is refused (`request_connection` -> error, at once), and so
//!    is a claim through the client library (`engine25519::Control::claim` -> SlotTaken);
//! 3. each privileged opcode (Suspend, Resume, Quit) sent to the PUBLIC server, as every
//!    message kind, gets the error reply `NotPermitted` (blocking scalar: `Scalar1(13)`;
//!    lend/lend_mut: memory back with `offset = 13`, `valid = None`; scalar/move: no answer);
//! 4. none of it had an effect: the engine is not suspended, and 20 X25519 calls still match
//!    x25519-dalek.
//!
//! Prints `ENGINE-PRIVILEGE refused=R of=N lookup=refused claim=refused served_after=S/20
//! suspended=0 verdict=PASS|FAIL first_bad=...`.
//!
//! `--steal`: the race of docs/security.md instead. Started before sysctl, it claims the
//! control slot itself (`ENGINE-PRIVILEGE stole=yes|no`) and waits; the harness then checks that
//! sysctl notices (its claim is refused) and shuts the system down.

use std::time::{Duration, Instant};

use engine25519::api::{Opcode, Status, CONTROL_NAME};
use xous::{Message, MemoryMessage};

fn steal() -> ! {
    let stole = engine25519::Control::claim(Duration::from_secs(20)).is_ok();
    hosted_tests::marker(&format!("ENGINE-PRIVILEGE stole={}", if stole { "yes" } else { "no" }));
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
    let t0 = Instant::now();
    while !service_ipc::control::trusted_init_done().unwrap_or(false) {
        if t0.elapsed() > Duration::from_secs(20) {
            bad.push("trusted_init_done still false after 20 s (is sysctl running?)".into());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    // 2. the control name: lookup and claim refused
    let lookup = match service_ipc::control::try_lookup(CONTROL_NAME) {
        Err(_) => "refused",
        Ok(cid) => {
            bad.push(format!("lookup of {CONTROL_NAME:?} granted (cid {cid})"));
            "GRANTED"
        }
    };
    let claim = match engine25519::Control::claim(Duration::from_secs(2)) {
        Err(service_ipc::control::ClaimError::SlotTaken(_)) => "refused",
        Err(other) => {
            bad.push(format!("claim failed for the wrong reason: {other}"));
            "wrong-reason"
        }
        Ok(c) => {
            bad.push(format!("claim of the control server granted (cid {})", c.conn()));
            "GRANTED"
        }
    };

    // 3. privileged opcodes on the public server, every message kind
    let conn = e.conn();
    let not_permitted = Status::NotPermitted as usize;
    let page = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).unwrap();
    let (mut refused, mut tried) = (0, 0);
    for op in [Opcode::Suspend, Opcode::Resume, Opcode::Quit] {
        let id = op as usize;
        // blocking scalar: the real form of these opcodes
        tried += 1;
        match xous::send_message(conn, Message::new_blocking_scalar(id, 0, 0, 0, 0)) {
            Ok(xous::Result::Scalar1(c)) if c == not_permitted => refused += 1,
            other => bad.push(format!("{op:?} blocking scalar: {other:?}")),
        }
        // lend_mut and lend
        for mutable in [true, false] {
            tried += 1;
            let mm = MemoryMessage { id, buf: page, offset: None, valid: xous::MemorySize::new(4096) };
            let msg = if mutable { Message::MutableBorrow(mm) } else { Message::Borrow(mm) };
            match xous::send_message(conn, msg) {
                Ok(xous::Result::MemoryReturned(Some(c), None)) if c.get() == not_permitted => refused += 1,
                other => bad.push(format!("{op:?} {}: {other:?}", if mutable { "lend_mut" } else { "lend" })),
            }
        }
        // scalar and move: nothing can be answered; they must simply have no effect
        let _ = xous::send_message(conn, Message::new_scalar(id, 0, 0, 0, 0));
        let moved = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).unwrap();
        let _ = xous::send_message(conn, Message::Move(MemoryMessage { id, buf: moved, offset: None, valid: None }));
    }

    // 4. no effect, and the service still serves
    let mut served = 0;
    for i in 0..20u8 {
        let k = [i.wrapping_mul(29).wrapping_add(3); 32];
        let u = x25519_dalek::X25519_BASEPOINT_BYTES;
        match e.x25519(&k, &u) {
            Ok(r) if r == x25519_dalek::x25519(k, u) => served += 1,
            other => bad.push(format!("x25519 after the attempts: {other:?}")),
        }
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
    let verdict = if bad.is_empty() && refused == tried && served == 20 { "PASS" } else { "FAIL" };
    hosted_tests::marker(&format!(
        "ENGINE-PRIVILEGE refused={refused} of={tried} lookup={lookup} claim={claim} served_after={served}/20 suspended={suspended} verdict={verdict} first_bad={:?}",
        bad.first().cloned().unwrap_or_default()
    ));
}
