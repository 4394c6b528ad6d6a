//! Backend factory: the backend named on the command line (`--backend`), for the ISA asked for.
//! Kept apart from the trait (backend.rs) so that the backends depend on the trait and the
//! factory depends on the backends, never the other way round.

use crate::backend::{EngineBackend, Unavailable};

/// Create the backend named `name`.
pub fn create(name: &str, isa: engine25519_core::isa::Isa) -> Result<Box<dyn EngineBackend>, String> {
    if !["model", "rtl", "software", "hw"].contains(&name) {
        return Err(format!("unknown backend '{}': expected model, hw, rtl or software", name));
    }
    match name {
        "model" => Ok(Box::new(crate::model_backend::ModelEngine::new(isa))),
        "rtl" => Ok(match crate::rtl_backend::RtlEngine::new(isa) {
            Ok(e) => Box::new(e),
            Err(e) => {
                log::error!("{e}");
                Box::new(Unavailable::rtl())
            }
        }),
        "software" => Ok(Box::new(Unavailable::software())),
        "hw" => hw_backend(Some(isa)).map(|(e, _)| e),
        other => Err(format!("unknown backend '{}': expected model, hw, rtl or software", other)),
    }
}

/// The `hw` backend with the ISA the engine on the bus implements (found by a probe job,
/// `HwEngine::probe_isa`): what the device server uses unless `--isa` names one.
pub fn create_hw_probed() -> Result<(Box<dyn EngineBackend>, engine25519_core::isa::Isa), String> {
    hw_backend(None)
}

/// The hw backend for `isa` (None: probe the engine). Precursor's engine is v1; a v2 engine
/// exists on SoCs built with it (the simulated Precursor's `PRECURSOR_ENGINE_ISA=v2`).
#[cfg(target_os = "xous")]
fn hw_backend(
    isa: Option<engine25519_core::isa::Isa>,
) -> Result<(Box<dyn EngineBackend>, engine25519_core::isa::Isa), String> {
    let mut e = crate::hw::HwEngine::new(isa.unwrap_or(engine25519_core::isa::Isa::V1))?;
    let isa = match isa {
        Some(i) => i,
        None => e.probe_isa()?,
    };
    // a failed known-answer test leaves the backend unavailable (available() says why)
    match e.self_test(isa) {
        Ok(polls) => {
            log::info!("engine25519: hw known-answer test passed (X25519 on {isa}, {polls} status polls)");
            if e.resumable() {
                log::info!("engine25519: hw MPRESUME driven: paused jobs resume where they stopped");
            } else {
                log::warn!("engine25519: hw MPRESUME undriven (the shipped engine): a job is paused only for a system suspend, then restarted from its inputs; otherwise each runs to its end");
            }
        }
        Err(err) => log::error!("{err}"),
    }
    // completion by interrupt from here on (the start-up jobs above poll). A build with
    // ENGINE25519_HW_WAIT=poll keeps polling: the A/B figure of docs/selftest.md, nothing else
    if option_env!("ENGINE25519_HW_WAIT") == Some("poll") {
        log::warn!("engine25519: hw completion by polling STATUS (built with ENGINE25519_HW_WAIT=poll)");
    } else {
        match e.enable_interrupt() {
            Ok(()) => log::info!("engine25519: hw completion by interrupt {}", engine25519_core::isa::csr::IRQ),
            Err(err) => log::error!("{err}; polling STATUS instead"),
        }
    }
    Ok((Box::new(e) as Box<dyn EngineBackend>, isa))
}

#[cfg(not(target_os = "xous"))]
fn hw_backend(
    _isa: Option<engine25519_core::isa::Isa>,
) -> Result<(Box<dyn EngineBackend>, engine25519_core::isa::Isa), String> {
    Err("hw backend: the engine25519 hardware exists only on the Xous target (riscv32imac-unknown-xous-elf)".into())
}
