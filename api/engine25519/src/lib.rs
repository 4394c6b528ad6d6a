//! engine25519: the wire protocol (`api`) and the client library (`Engine25519`, re-exported at
//! the crate root) of the Engine25519 Xous service. This is what applications link: it carries
//! no server code and no engine model. The server is the package `engine25519-server`
//! (services/engine25519); docs/engine-service.md describes both.

pub mod api;
mod client;

pub use api::{BackendId, Status};
pub use client::*;
