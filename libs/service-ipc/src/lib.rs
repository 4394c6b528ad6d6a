//! service-ipc: the IPC layer shared by the engine25519 and trng Xous servers and their clients.
//!
//! One convention for every reply, documented once in docs/ipc.md:
//!
//! | message kind | success | error |
//! |---|---|---|
//! | blocking scalar | `Scalar1(0)` (no payload) or `Scalar2(a, b)` (payload) | `Scalar1(code)`, code != 0 |
//! | lend_mut | memory returned with `valid = Some(..)` (archive reply or bytes produced) | memory wiped, returned with `offset = code`, `valid = None` |
//! | lend | memory returned with `valid = Some(..)` | returned with `offset = code`, `valid = None` |
//! | scalar | nothing to answer | nothing to answer (counted, logged) |
//! | move | nothing to answer | the page is freed (counted, logged) |
//!
//! Error codes are each service's own status numbers (never 0). A request the server refuses
//! because of its kind (a known opcode sent as the wrong message kind) gets the same error reply
//! with the service's "bad message" code ([`server::reply_error`] handles every kind).
//!
//! Modules:
//! * [`archive`]: bounds check of rkyv 0.4 archives (rkyv 0.4 checks nothing) and decoding;
//! * [`server`]: error and archive replies for every message kind;
//! * [`client`]: typed calls (rkyv request/reply in one call, blocking scalars, raw lends);
//! * [`options`]: the `--flag value` / environment-variable option parser both servers use;
//! * [`control`]: privileged control servers with a fixed connection count (docs/security.md).

pub mod archive;
pub mod client;
pub mod control;
pub mod options;
pub mod server;

/// A service status code that can travel in an error reply (never 0: 0 means success).
pub trait ErrorCode: Copy {
    fn code(self) -> u32;
}
