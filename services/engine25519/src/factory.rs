//! Backend factory: the backend named on the command line (`--backend`), for the ISA asked for.
//! Kept apart from the trait (backend.rs) so that the backends depend on the trait and the
//! factory depends on the backends, never the other way round.

use crate::backend::{EngineBackend, Unavailable};

/// Create the backend named `name`.
pub fn create(name: &str, isa: engine25519_core::isa::Isa) -> Result<Box<dyn EngineBackend>, String> {
    if !["model", "rtl", "software", "hw"].contains(&name) {
        return Err(format!("unknown backend '{}': expected model, hw, rtl or software", name));
    }
    // the software fallback runs no microcode, so any ISA goes; the hardware is Precursor's v1
    if isa != engine25519_core::isa::Isa::V1 && name == "hw" {
        return Err(format!("ISA {} is not in the hw backend (Precursor's engine implements v1); the model and rtl backends run it", isa));
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
        "hw" => hw_backend(),
        other => Err(format!("unknown backend '{}': expected model, hw, rtl or software", other)),
    }
}

#[cfg(target_os = "xous")]
fn hw_backend() -> Result<Box<dyn EngineBackend>, String> {
    crate::hw::HwEngine::new().map(|e| Box::new(e) as Box<dyn EngineBackend>)
}

#[cfg(not(target_os = "xous"))]
fn hw_backend() -> Result<Box<dyn EngineBackend>, String> {
    Err("hw backend: the engine25519 hardware exists only on the Xous target (riscv32imac-unknown-xous-elf)".into())
}
