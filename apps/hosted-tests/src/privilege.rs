//! What an ORDINARY client sees of a service's privileged side (docs/security.md), shared by
//! `engine-privilege` and `trng-privilege`: the system has finished its trusted boot, the control
//! name cannot be looked up or claimed, and every privileged opcode sent to the public server,
//! as every message kind, gets the service's `NotPermitted` error reply.

use std::time::{Duration, Instant};

use service_ipc::control::ClaimError;
use xous::{MemoryMessage, Message, CID};

/// Problems found, in order (the verdict is PASS only if this stays empty).
pub type Findings = Vec<String>;

/// Wait (up to 20 s) until the system controller has claimed every control slot
/// (`trusted_init_done`), as an app started after boot would find the system.
pub fn wait_trusted_boot(bad: &mut Findings) {
    let t0 = Instant::now();
    while !service_ipc::control::trusted_init_done().unwrap_or(false) {
        if t0.elapsed() > Duration::from_secs(20) {
            bad.push("trusted_init_done still false after 20 s (is sysctl running?)".into());
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The control name: a lookup and a claim through the client library must both be refused.
/// Returns (lookup, claim) as `refused` or what happened instead.
pub fn control_refused<T>(
    control_name: &str,
    claim: Result<T, ClaimError>,
    bad: &mut Findings,
) -> (&'static str, &'static str) {
    let lookup = match service_ipc::control::try_lookup(control_name) {
        Err(_) => "refused",
        Ok(cid) => {
            bad.push(format!("lookup of {control_name:?} granted (cid {cid})"));
            "GRANTED"
        }
    };
    let claim = match claim {
        Err(ClaimError::SlotTaken(_)) => "refused",
        Err(other) => {
            bad.push(format!("claim failed for the wrong reason: {other}"));
            "wrong-reason"
        }
        Ok(_) => {
            bad.push("claim of the control server granted".into());
            "GRANTED"
        }
    };
    (lookup, claim)
}

/// Send each privileged opcode to the public server `conn` as a blocking scalar, lend_mut and
/// lend (each must get `not_permitted`), then as a scalar and a move (no answer possible; they
/// must have no effect, which the caller checks). Returns (refused, tried).
pub fn privileged_opcodes_refused(
    conn: CID,
    ops: &[(usize, &str)],
    not_permitted: usize,
    bad: &mut Findings,
) -> (usize, usize) {
    let page = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).unwrap();
    let (mut refused, mut tried) = (0, 0);
    for &(id, name) in ops {
        tried += 1;
        match xous::send_message(conn, Message::new_blocking_scalar(id, 0, 0, 0, 0)) {
            Ok(xous::Result::Scalar1(c)) if c == not_permitted => refused += 1,
            other => bad.push(format!("{name} blocking scalar: {other:?}")),
        }
        for mutable in [true, false] {
            tried += 1;
            let mm = MemoryMessage { id, buf: page, offset: None, valid: xous::MemorySize::new(4096) };
            let msg = if mutable { Message::MutableBorrow(mm) } else { Message::Borrow(mm) };
            match xous::send_message(conn, msg) {
                Ok(xous::Result::MemoryReturned(Some(c), None)) if c.get() == not_permitted => refused += 1,
                other => bad.push(format!("{name} {}: {other:?}", if mutable { "lend_mut" } else { "lend" })),
            }
        }
        let _ = xous::send_message(conn, Message::new_scalar(id, 0, 0, 0, 0));
        let moved = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).unwrap();
        let _ = xous::send_message(conn, Message::Move(MemoryMessage { id, buf: moved, offset: None, valid: None }));
    }
    let _ = xous::unmap_memory(page);
    (refused, tried)
}

/// Ask the kernel to shut the whole system down, as an ordinary app: it must be refused
/// (`AccessDenied`, kernel-patches/0006; docs/security.md "Power-off and shutdown"); the caller
/// then checks that its service still serves. Returns `refused` or what happened instead.
pub fn shutdown_refused(bad: &mut Findings) -> &'static str {
    match crate::shutdown_system() {
        Err(xous::Error::AccessDenied) => "refused",
        Err(other) => {
            bad.push(format!("Shutdown failed for the wrong reason: {other:?}"));
            "wrong-reason"
        }
        Ok(()) => {
            bad.push("Shutdown granted to an ordinary app".into());
            "GRANTED"
        }
    }
}

/// What one privilege program found, judged: PASS only if nothing went wrong, every privileged
/// attempt was refused and every one of the `of_valid` ordinary requests afterwards was served.
pub struct Outcome<'a> {
    pub refused: usize,
    pub tried: usize,
    pub lookup: &'a str,
    pub claim: &'a str,
    pub served: usize,
    pub of_valid: usize,
    /// What the kernel answered this ordinary process's Shutdown ([`shutdown_refused`]).
    pub shutdown: &'a str,
}

impl Outcome<'_> {
    /// The verdict line of `program` (problems: the first one as the detail).
    pub fn verdict(&self, program: &str, bad: &Findings) -> crate::Verdict {
        let ok = bad.is_empty() && self.refused == self.tried && self.served == self.of_valid;
        crate::Verdict::judged(program, ok)
            .with("refused", self.refused)
            .with("of", self.tried)
            .with("lookup", self.lookup)
            .with("shutdown", self.shutdown)
            .with("claim", self.claim)
            .with("served_after", self.served)
            .with("of_valid", self.of_valid)
            .detail(bad.first().cloned().unwrap_or_default())
    }
}
