//! The chat app (docs/chat.md): Alice's terminal UI in hosted mode (`chat`) or on the device's
//! memory LCD and keyboard (`chat-device`), Bob (`chat-bob`) and the relay server (`chat-relay`), over libs/ratchet (PQXDH with ML-KEM-1024, then the
//! Double Ratchet), with every X25519 on the engine25519 service and every key from the TRNG
//! service.
//!
//! Kernel-free parts (unit-tested natively): [`party`] (sessions, reliable delivery,
//! persistence), [`store`] (atomic, checksummed store files), [`dh`] (async/sync DH runners and
//! device-time pacing), [`entropy`] (a non-blocking TRNG pool), [`relay_net`] (the relay's
//! network model with fault injection), [`device_ui`] (the device's screen rows and input line). Xous parts: [`relay_api`] + [`relay_client`].

pub mod config;
pub mod device_ui;
pub mod dh;
pub mod entropy;
pub mod party;
pub mod relay_api;
pub mod relay_client;
pub mod relay_net;
pub mod store;

/// Mailbox numbers of the two parties of the demo.
pub const ALICE: u32 = 1;
pub const BOB: u32 = 2;
