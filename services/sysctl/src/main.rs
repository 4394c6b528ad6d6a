//! sysctl: the hosted system's controller, the "system's own process" of docs/security.md.
//!
//! xtask starts it in every hosted system right after the servers. At boot it:
//! 1. claims the control connection of every service in [`CONTROLS`] (xous-names brokers a
//!    fixed number of them; `service_ipc::control::claim`): a refusal means another process
//!    took the slot first;
//! 2. checks `trusted_init_done()`: every connection-limited server has all its slots taken
//!    (a service with a control server sysctl does not know about would leave it false);
//! 3. prints `SYSCTL READY claimed=...`, or `SYSCTL ERROR <why>` and shuts the system down
//!    (fail closed: the system never runs with a control slot in unknown hands; on the device
//!    it powers the SoC off through xous-susres);
//! 4. runs the privileged checks named in `SYSCTL_CHECK` (comma-separated; tests), printing
//!    `SYSCTL CHECK <name> ok|FAILED <why>`;
//! 5. keeps the connections for the life of the system (they are never released, so the slots
//!    cannot be claimed again).

use std::time::Duration;

/// A service's public and control names.
struct Control {
    service: &'static str,
    public: &'static str,
    control: &'static str,
}

/// Every control server of the system (one entry per service).
const CONTROLS: &[Control] = &[
    Control { service: "engine25519", public: engine25519::api::SERVER_NAME, control: engine25519::api::CONTROL_NAME },
    Control { service: "trng", public: trng::api::SERVER_NAME, control: trng::api::CONTROL_NAME },
];

/// How long to wait for a service to register at boot.
const BOOT_DEADLINE: Duration = Duration::from_secs(20);

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn fail_closed(why: &str) -> ! {
    log::error!("sysctl: {}", why);
    say(&format!("SYSCTL ERROR {why}"));
    // the system must not run with a control slot in unknown hands
    power_off();
    let _ = xous::rsyscall(xous::SysCall::Shutdown);
    std::process::exit(1);
}

/// The device: power the SoC off through xous-susres (`PowerOff`: it writes its POWERDOWN
/// register), as a user's power-off does on Precursor. The kernel's Shutdown alone would stop
/// every process and leave the device powered and idle. Hosted there is no susres server:
/// the kernel's Shutdown ends the system.
fn power_off() {
    #[cfg(target_os = "xous")]
    {
        say("SYSCTL POWEROFF");
        let r = xous_api_names::XousNames::new()
            .and_then(|xns| xous_api_susres::Susres::new_without_hook(&xns))
            .and_then(|s| s.immediate_poweroff());
        match r {
            // the power goes off as soon as susres handles the request; the kernel's Shutdown
            // (the fallback below) would end susres before it does
            Ok(()) => std::thread::sleep(POWEROFF_WAIT),
            Err(e) => say(&format!("SYSCTL POWEROFF FAILED {e:?}")),
        }
    }
}

/// How long fail_closed waits for the power to go off before it falls back to the kernel's
/// Shutdown (device time; susres acts within a scheduling quantum or two).
#[cfg(target_os = "xous")]
const POWEROFF_WAIT: Duration = Duration::from_millis(200);

/// Privileged check: suspend and resume the engine through its control server (a second
/// Suspend is refused BadState, public opcodes are refused UnknownOpcode there), and show that
/// X25519 is served again afterwards.
fn check_engine_suspend_resume(cid: xous::CID) -> Result<(), String> {
    use engine25519::api::Opcode;
    use service_ipc::client::{blocking_scalar, CallError};
    let raw = |op: Opcode| blocking_scalar(cid, op as u32, [0; 4]);
    let call = |op: Opcode| raw(op).map_err(|e| format!("{op:?}: {e}"));
    call(Opcode::Suspend)?;
    let e = engine25519::Engine25519::new().map_err(|e| e.to_string())?;
    if e.stats().map_err(|e| e.to_string())?.suspended != 1 {
        return Err("stats do not report the engine suspended".into());
    }
    // a second Suspend is refused (BadState), through the error-reply convention
    match raw(Opcode::Suspend) {
        Err(CallError::Service(c)) if c == engine25519::Status::BadState as u32 => {}
        other => return Err(format!("second Suspend: {other:?} (want BadState)")),
    }
    call(Opcode::Resume)?;
    // the control server serves only the control opcodes
    for op in [Opcode::Version, Opcode::X25519] {
        match raw(op) {
            Err(CallError::Service(c)) if c == engine25519::Status::UnknownOpcode as u32 => {}
            other => return Err(format!("{op:?} on the control server: {other:?} (want UnknownOpcode)")),
        }
    }
    let k = [7u8; 32];
    let r = e.x25519(&k, &[9; 32]).map_err(|e| e.to_string())?;
    if e.stats().map_err(|e| e.to_string())?.suspended != 0 || r == [0; 32] {
        return Err("engine not serving after Resume".into());
    }
    Ok(())
}

/// Privileged check: Quit stops the engine service: a call made afterwards is refused
/// (`BadState`) at once, it does not hang.
fn check_engine_quit(cid: xous::CID) -> Result<(), String> {
    use engine25519::api::Opcode;
    let e = engine25519::Engine25519::new().map_err(|e| e.to_string())?;
    e.x25519(&[3; 32], &[9; 32]).map_err(|e| format!("before Quit: {e}"))?;
    service_ipc::client::blocking_scalar(cid, Opcode::Quit as u32, [0; 4]).map_err(|e| format!("Quit: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(e.x25519(&[3; 32], &[9; 32]).map(|_| ()));
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Err(engine25519::Error::Service(engine25519::Status::BadState))) => Ok(()),
        Ok(other) => Err(format!("X25519 after Quit: {other:?} (want BadState)")),
        Err(_) => Err("a call after Quit hung for 10 s".into()),
    }
}

/// Privileged check: the TRNG's control server takes test-mode changes and ClearErrors, refuses
/// public opcodes (`UnknownOpcode`), and the public server keeps serving words afterwards.
fn check_trng_control(cid: xous::CID) -> Result<(), String> {
    use service_ipc::client::{blocking_scalar, CallError};
    use trng::api::{Opcode, TestMode, TrngError};
    let call = |op: Opcode, a: usize| blocking_scalar(cid, op as u32, [a, 0, 0, 0]).map_err(|e| format!("{op:?}: {e}"));
    call(Opcode::TestSetMode, TestMode::Cprng as usize)?;
    call(Opcode::TestSetMode, TestMode::None as usize)?;
    call(Opcode::ClearErrors, 0)?;
    match blocking_scalar(cid, Opcode::TestSetMode as u32, [99, 0, 0, 0]) {
        Err(CallError::Service(c)) if c == TrngError::UnknownMode as u32 => {}
        other => return Err(format!("TestSetMode(99): {other:?} (want UnknownMode)")),
    }
    match blocking_scalar(cid, Opcode::GetTrng as u32, [1, 0, 0, 0]) {
        Err(CallError::Service(c)) if c == TrngError::UnknownOpcode as u32 => {}
        other => return Err(format!("GetTrng on the control server: {other:?} (want UnknownOpcode)")),
    }
    let t = trng::Trng::new().map_err(|e| format!("{e:?}"))?;
    let (a, b) = (t.get_u64().map_err(|e| e.to_string())?, t.get_u64().map_err(|e| e.to_string())?);
    if a == b {
        return Err("the public server repeated a word".into());
    }
    Ok(())
}

/// Privileged check: Quit stops the TRNG service: a request made afterwards is refused
/// (`Stopped`) at once, it does not hang.
fn check_trng_quit(cid: xous::CID) -> Result<(), String> {
    let t = trng::Trng::new().map_err(|e| format!("{e:?}"))?;
    t.get_u32().map_err(|e| format!("before Quit: {e}"))?;
    service_ipc::client::blocking_scalar(cid, trng::api::Opcode::Quit as u32, [0; 4])
        .map_err(|e| format!("Quit: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(t.get_u32().map(|_| ()));
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(Err(trng::TrngError::Stopped)) => Ok(()),
        Ok(other) => Err(format!("get_u32 after Quit: {other:?} (want Stopped)")),
        Err(_) => Err("a request after Quit hung for 10 s".into()),
    }
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let mut claimed = Vec::new();
    for c in CONTROLS {
        match service_ipc::control::claim(c.public, c.control, BOOT_DEADLINE) {
            Ok(cid) => claimed.push((c.service, cid)),
            Err(e) => fail_closed(&format!("{}: {}", c.service, e)),
        }
    }
    match service_ipc::control::trusted_init_done() {
        Ok(true) => {}
        Ok(false) => fail_closed(
            "trusted_init_done is false after every claim: a connection-limited server sysctl does not claim",
        ),
        Err(e) => fail_closed(&format!("trusted_init_done: {e:?}")),
    }
    let names: Vec<&str> = claimed.iter().map(|(s, _)| *s).collect();
    log::info!("sysctl: claimed the control connections of {}", names.join(", "));
    say(&format!("SYSCTL READY claimed={}", names.join(",")));

    let checks = std::env::var("SYSCTL_CHECK").unwrap_or_default();
    for check in checks.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let cid = |svc: &str| claimed.iter().find(|(s, _)| *s == svc).map(|(_, c)| *c);
        let r = match check {
            "engine-suspend-resume" => check_engine_suspend_resume(cid("engine25519").unwrap()),
            "engine-quit" => check_engine_quit(cid("engine25519").unwrap()),
            "trng-control" => check_trng_control(cid("trng").unwrap()),
            "trng-quit" => check_trng_quit(cid("trng").unwrap()),
            other => Err(format!(
                "unknown check '{other}' (known: engine-suspend-resume, engine-quit, trng-control, trng-quit)"
            )),
        };
        match r {
            Ok(()) => say(&format!("SYSCTL CHECK {check} ok")),
            Err(e) => say(&format!("SYSCTL CHECK {check} FAILED {e}")),
        }
    }

    // hold the connections for the life of the system; block in the kernel like the servers
    // do, so that the kernel's Shutdown ends this process with them
    let sid = xous::create_server().expect("sysctl: private server");
    loop {
        let _ = xous::receive_message(sid);
    }
}
