//! power-probe: an ORDINARY app asks to stop the system; every request must be refused and the
//! services must keep serving it (docs/security.md, "Power-off and shutdown").
//!
//! Once the system has booted (both public names resolve, trusted_init_done), it:
//! - on the device, asks xous-susres for `PowerOff` (a scalar: susres logs the refusal, the SoC
//!   stays on) and for a suspend (`SuspendRequest`, blocking: refused, answered 0);
//! - on the device, asks the kernel to map the simulated Precursor's fault-injection and
//!   control pages, system pages (each must be answered `AccessDenied`);
//! - calls the kernel's `Shutdown` (must be answered `AccessDenied`);
//! - then needs the engine (RFC 7748 5.2's first vector) and the TRNG (two words that differ)
//!   to serve it, and prints `VERDICT power-probe PASS pid=N` (or FAIL with what went wrong).
//!
//! The image builder lays it out as an ordinary app beside the device self-test client
//! (xtask `sim:selftest`); the client, this run's harness, then powers the SoC off.

use device_selftest::{unhex32, wait_for_system};
use engine25519_core::vectors::RFC7748;
use verdict::Verdict;

const PROGRAM: &str = "power-probe";

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The device's power operations through xous-susres, each of which must be refused.
#[cfg(target_os = "xous")]
fn susres_refused(bad: &mut Vec<String>) {
    let xns = match xous_api_names::XousNames::new() {
        Ok(x) => x,
        Err(e) => return bad.push(format!("xous-names: {e:?}")),
    };
    let s = match xous_api_susres::Susres::new_without_hook(&xns) {
        Ok(s) => s,
        Err(e) => return bad.push(format!("susres connection: {e:?}")),
    };
    say("POWER-PROBE POWEROFF");
    if let Err(e) = s.immediate_poweroff() {
        bad.push(format!("PowerOff could not be sent: {e:?}"));
    }
    say("POWER-PROBE SUSPEND");
    // susres takes one message at a time, in order: when this blocking request is answered,
    // the PowerOff before it was handled, and the SoC is still on. Refused: susres answers 0,
    // which the client library reports as Timeout
    match s.initiate_suspend() {
        Err(xous::Error::Timeout) => {}
        other => bad.push(format!("SuspendRequest answered {other:?} (want the refusal, Timeout)")),
    }
}

#[cfg(not(target_os = "xous"))]
fn susres_refused(_bad: &mut Vec<String>) {
    // hosted systems run no susres server
}

/// The simulated Precursor's fault-injection and control pages are system pages
/// (kernel-patches/device/0005): the kernel must refuse to map them for an ordinary app.
#[cfg(target_os = "xous")]
fn system_page_refused(bad: &mut Vec<String>) {
    use device_selftest::{SIMCTL_BASE, SIMFAULT_BASE};
    say("POWER-PROBE SYSTEM-PAGES");
    let flags = xous::MemoryFlags::R | xous::MemoryFlags::W;
    for (name, base) in [("fault-injection", SIMFAULT_BASE), ("simulation control", SIMCTL_BASE)] {
        match xous::map_memory(xous::MemoryAddress::new(base), None, 4096, flags) {
            Err(xous::Error::AccessDenied) => {}
            Ok(page) => {
                let _ = xous::unmap_memory(page);
                bad.push(format!("the {name} page was mapped for an ordinary app"));
            }
            Err(e) => bad.push(format!("mapping the {name} page answered {e:?} (want AccessDenied)")),
        }
    }
}

#[cfg(not(target_os = "xous"))]
fn system_page_refused(_bad: &mut Vec<String>) {
    // hosted systems have no physical pages to map
}

fn main() {
    xous_api_log::init_wait().unwrap();
    let mut bad: Vec<String> = Vec::new();
    if let Err(e) = wait_for_system() {
        bad.push(format!("boot: {e}"));
    }
    susres_refused(&mut bad);
    system_page_refused(&mut bad);
    say("POWER-PROBE SHUTDOWN");
    match xous::rsyscall(xous::SysCall::Shutdown) {
        Err(xous::Error::AccessDenied) => {}
        other => bad.push(format!("the kernel's Shutdown answered {other:?} (want AccessDenied)")),
    }
    // still served
    let (k, u, w) = RFC7748[0];
    let served = (|| -> Result<(), String> {
        let e = engine25519::Engine25519::new().map_err(|e| format!("engine: {e}"))?;
        let r = e.x25519(&unhex32(k)?, &unhex32(u)?).map_err(|e| format!("x25519: {e}"))?;
        if r != unhex32(w)? {
            return Err("x25519 result differs from RFC 7748".into());
        }
        let t = trng::Trng::new().map_err(|e| format!("trng: {e:?}"))?;
        let (a, b) = (t.get_u32().map_err(|e| e.to_string())?, t.get_u32().map_err(|e| e.to_string())?);
        if a == b {
            return Err("the TRNG repeated a word".into());
        }
        Ok(())
    })();
    if let Err(e) = served {
        bad.push(format!("not served after the refusals: {e}"));
    }
    let v = Verdict::judged(PROGRAM, bad.is_empty()).with("pid", xous::process::id());
    say(&if bad.is_empty() { v } else { v.detail(bad.join("; ")) }.to_string());
    // done: block in the kernel on a private server (no timer, nothing scheduled: the
    // self-test client's timed calls run beside an idle process, as beside the services)
    let sid = xous::create_server().expect("power-probe: private server");
    loop {
        let _ = xous::receive_message(sid);
    }
}
