//! Privileged control servers (docs/security.md).
//!
//! A service registers two servers with xous-names:
//! * its **public** server, any number of connections (what apps use);
//! * its **control** server, registered FIRST, with a fixed connection count (`slots`). Every
//!   privileged opcode (Quit, Suspend/Resume, test modes, raw data, fault injection, clearing
//!   latched failures) is served only there; the public server refuses those opcode numbers.
//!
//! The system's own processes claim the control slots at boot ([`claim`]): xous-names brokers
//! exactly `slots` connections to the control name and answers every later lookup with
//! `ServerNotFound` (a refusal at once, never a wait: see [`claim`] for why the blocking lookup
//! must not be used). Once every slot of every limited server is taken,
//! `XousNames::trusted_init_done()` turns true ([`trusted_init_done`]).
//!
//! Facts about xous-api-names 0.9.32 / xous-names 0.9.36 this relies on (read from their
//! sources): `register_name(name, Some(n))` limits brokered connections to n; `Lookup`
//! (`request_connection`) beyond the limit, or of an unknown name, returns `ServerNotFound`
//! after a 10 ms delay in hosted mode; `BlockingConnect` (`request_connection_blocking`) beyond
//! the limit parks the caller until that name is registered again, i.e. forever; registering a
//! name that already exists fails (the name server answers `Failure`).

use std::time::{Duration, Instant};

/// Register a service's control server (call before [`register_public`]).
pub fn register_control(xns: &xous_api_names::XousNames, name: &str, slots: u32) -> Result<xous::SID, String> {
    assert!(slots > 0, "a control server needs at least one slot");
    xns.register_name(name, Some(slots)).map_err(|e| {
        format!("cannot register control server '{}' ({:?}): the name is already taken, refusing to run", name, e)
    })
}

/// Register a service's public server (after its control server).
pub fn register_public(xns: &xous_api_names::XousNames, name: &str) -> Result<xous::SID, String> {
    xns.register_name(name, None)
        .map_err(|e| format!("cannot register server '{}' ({:?}): the name is already taken, refusing to run", name, e))
}

/// Why a claim failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimError {
    /// the public name did not appear within the deadline (the service is not running)
    NoService(String),
    /// the control name exists but xous-names refused a connection: every slot is already taken
    /// by another process. The system must not run (docs/security.md).
    SlotTaken(String),
}

impl core::fmt::Display for ClaimError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClaimError::NoService(n) => write!(f, "service '{}' did not register in time", n),
            ClaimError::SlotTaken(n) => {
                write!(f, "control server '{}' refused the connection: its slots are already taken", n)
            }
        }
    }
}

/// Claim one control slot of a service: wait (up to `deadline`) until its public name resolves
/// (the service registers the control name first, so from then on the control name exists),
/// then look the control name up ONCE with the non-blocking lookup. Success: the connection.
/// `ServerNotFound` at that point can only mean the slots are taken: [`ClaimError::SlotTaken`].
///
/// `request_connection_blocking` must not be used for control names: beyond the limit it would
/// wait forever instead of refusing.
pub fn claim(public_name: &str, control_name: &str, deadline: Duration) -> Result<xous::CID, ClaimError> {
    let xns = xous_api_names::XousNames::new().map_err(|_| ClaimError::NoService(public_name.into()))?;
    let until = Instant::now() + deadline;
    loop {
        match xns.request_connection(public_name) {
            Ok(_) => break,
            Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => return Err(ClaimError::NoService(public_name.into())),
        }
    }
    xns.request_connection(control_name).map_err(|_| ClaimError::SlotTaken(control_name.into()))
}

/// Look a control name up the way an ordinary process would (one non-blocking lookup): `Err`
/// once the slots are claimed. Used by tests to show the refusal.
pub fn try_lookup(name: &str) -> Result<xous::CID, xous::Error> {
    xous_api_names::XousNames::new()?.request_connection(name)
}

/// True once every server registered with a connection limit has all its slots taken
/// (xous-names `TrustedInitDone`).
pub fn trusted_init_done() -> Result<bool, xous::Error> {
    xous_api_names::XousNames::new()?.trusted_init_done()
}
