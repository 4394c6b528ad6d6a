//! device-crypto: the chat's cryptography, one operation at a time, timed on the device
//! (riscv32imac-unknown-xous-elf on the simulated Precursor, `cargo xtask bench --only
//! device-crypto`; docs/chat.md). Each operation's runs lie between two stamped lines
//! (`CRYPTO-BENCH-START` / `-END op=<name> n=<n>`), then its verdict; then
//! `VERDICT device-crypto PASS|FAIL` and, on the device, the power-off.
//!
//! X25519 jobs go to the engine service (the reply must come from the engine: `hw` on the
//! device, the model hosted); keys come from the TRNG service.

use device_crypto::*;
use engine25519::{BackendId, Engine25519};
use ratchet::{Dh, DhJob, DhOutput};
use verdict::{Status, Verdict};
use zeroize::Zeroizing;

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// X25519 jobs through the engine service, one call per job (as the chat submits them); every
/// reply must come from the engine itself, not the service's software fallback.
struct EngineDh {
    engine: Engine25519,
    backend: BackendId,
    cycles: u64,
}

impl Dh for EngineDh {
    fn run(&mut self, jobs: &[DhJob]) -> Result<Vec<DhOutput>, ratchet::Error> {
        let mut out = Vec::with_capacity(jobs.len());
        for j in jobs {
            let r = self
                .engine
                .x25519_detailed(&j.secret_bytes(), &j.public)
                .map_err(|e| ratchet::Error::Dh(e.to_string()))?;
            if r.backend != Some(self.backend) {
                return Err(ratchet::Error::Dh(format!(
                    "the reply came from backend {:?}, not {}",
                    r.backend,
                    self.backend.name()
                )));
            }
            self.cycles += r.cycles;
            out.push(Zeroizing::new(r.result));
        }
        Ok(out)
    }
}

fn shutdown() {
    #[cfg(target_os = "xous")]
    {
        say("CRYPTO-BENCH-POWEROFF");
        let r = xous_api_names::XousNames::new()
            .and_then(|xns| xous_api_susres::Susres::new_without_hook(&xns))
            .and_then(|s| s.immediate_poweroff());
        if let Err(e) = r {
            say(&format!("CRYPTO-BENCH-POWEROFF-FAILED {e:?}"));
        }
    }
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let booted = device_selftest::wait_for_system();
    let mut failed = 0usize;
    let mut passed = 0usize;
    let setup = booted.and_then(|_| {
        let engine = Engine25519::new().map_err(|e| format!("engine25519: {e}"))?;
        let trng = trng::Trng::new().map_err(|e| format!("trng: {e:?}"))?;
        Ok((engine, trng))
    });
    match setup {
        Err(e) => {
            failed += 1;
            say(&Verdict::new("crypto/setup", Status::Fail).detail(e).to_string());
        }
        Ok((engine, mut trng)) => {
            let backend = if cfg!(target_os = "xous") { BackendId::Hw } else { BackendId::Model };
            let mut dh = EngineDh { engine, backend, cycles: 0 };
            run_all(&mut dh, &mut trng, &mut |m| say(&m.to_string()), &mut |o, r| {
                let name = format!("crypto/{}", o.name);
                match r {
                    Ok(note) => {
                        passed += 1;
                        say(&Verdict::new(&name, Status::Pass).with("n", o.n).detail(note).to_string());
                    }
                    Err(why) => {
                        failed += 1;
                        say(&Verdict::new(&name, Status::Fail).with("n", o.n).detail(why).to_string());
                    }
                }
            });
            log::info!("device-crypto: {} engine cycles reported in all", dh.cycles);
        }
    }
    say(&Verdict::judged(PROGRAM, failed == 0 && passed == OPS.len())
        .with("pass", passed)
        .with("fail", failed)
        .to_string());
    shutdown();
    let sid = xous::create_server().expect("private server");
    loop {
        let _ = xous::receive_message(sid);
    }
}
