//! engine25519-server: the Engine25519 Xous server. `main.rs` decodes, dispatches and replies;
//! the work lives in modules testable without a kernel: `executor` (queue, windows, engine
//! token), `scheduler`, `ucode` (microcode RAM manager), `programs` (built-in program table),
//! `backend` (the `EngineBackend` trait), `factory` and the backends (`model_backend`,
//! `rtl_backend`, `hw`).
//! The wire protocol is the client crate's (`engine25519::api`), re-exported here as `api`.

pub use engine25519::api;
pub mod backend;
pub mod executor;
pub mod factory;
#[cfg(target_os = "xous")]
pub mod hw;
pub mod model_backend;
pub mod programs;
pub mod rtl_backend;
pub mod scheduler;
pub mod ucode;
