//! engine25519: API and client library of the Engine25519 Xous service.
//!
//! `api` holds the wire protocol; the server's logic lives in modules testable without a kernel;
//! the `client` module (re-exported at the crate root) is what applications link.

pub mod api;
pub mod backend;
pub mod executor;
pub mod factory;
#[cfg(target_os = "xous")]
pub mod hw;
pub mod model_backend;
pub mod programs;
pub mod scheduler;
pub mod ucode;
mod client;

pub use api::{BackendId, Status};
pub use client::*;
