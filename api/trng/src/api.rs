//! The TRNG service's IPC interface: names, opcodes, status codes and rkyv message types.
//!
//! Two servers (docs/security.md): the public server [`SERVER_NAME`] (any app: words, fills,
//! statistics, error subscription, user seeding) and the control server [`CONTROL_NAME`]
//! (privileged: clearing latched health failures, test modes and raw data, fault injection,
//! Quit), registered first with [`CONTROL_SLOTS`] connections that the system's own controller
//! claims at boot. The public server answers every control opcode with
//! [`TrngError::NotPermitted`]; the control server answers public opcodes with
//! [`TrngError::UnknownOpcode`].
//!
//! Replies follow the one convention of docs/ipc.md (service-ipc):
//! - Scalar calls (`GetTrng`, `SeedTrng`, `ClearErrors`, `TestSetMode`, `Quit`) are blocking
//!   scalars. Success: `Scalar2(w0, w1)` (GetTrng) or `Scalar1(0)`; failure: `Scalar1(code)`
//!   with a nonzero [`TrngError`] code.
//! - Bulk data (`FillTrng`, `TestGetData`): a mutable lend of a page-aligned buffer; the message's
//!   `valid` field carries the number of bytes requested (1..=MAX_FILL_BYTES, <= buffer length).
//!   The server writes exactly that many bytes at the start of the buffer and returns
//!   `offset = None, valid = Some(len)`; on failure the buffer is wiped and returned with
//!   `offset = code`, `valid = None`.
//! - Structured calls (`HealthStats`, `ErrorStats`, `ErrorSubscribe`, `TestInjectFault`) use
//!   xous-ipc `Buffer` + rkyv: the request struct is archived in the buffer and the server replaces
//!   it with the reply struct (`valid = Some(..)`); failures as for bulk data.
//! - Error notifications: a subscriber registers `(SID, opcode)`; when a health test latches an
//!   error, the server sends the subscriber a non-blocking scalar `opcode` with
//!   `arg1 = error bits ([`ErrorStats::error_bits`])`, `arg2 = total failures (low 32 bits)`.

use trng_core::spec;

/// Name registered with xous-names.
pub const SERVER_NAME: &str = spec::server::NAME;
/// Largest FillTrng / TestGetData request in bytes.
pub const MAX_FILL_BYTES: usize = spec::server::MAX_FILL_BYTES;
/// Most error subscribers the server keeps.
pub const MAX_SUBSCRIBERS: usize = spec::server::MAX_SUBSCRIBERS;
/// Name of the privileged control server.
pub const CONTROL_NAME: &str = spec::server::CONTROL_NAME;
/// Connections xous-names brokers to [`CONTROL_NAME`] (claimed at boot by the system controller).
pub const CONTROL_SLOTS: u32 = spec::server::CONTROL_SLOTS as u32;
/// Bytes per client FillTrng request (the client splits larger fills).
pub const CLIENT_CHUNK_BYTES: usize = 64 * 1024;

#[derive(num_derive::FromPrimitive, num_derive::ToPrimitive, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    // ---- public server
    /// blocking scalar: arg1 = number of words (1 or 2) -> Scalar2(w0, w1) | Scalar1(err)
    GetTrng = 0,
    /// lend_mut raw buffer, valid = bytes -> conditioned bytes
    FillTrng = 1,
    /// lend_mut rkyv [`HealthStats`]
    HealthStats = 2,
    /// lend_mut rkyv [`ErrorStats`]
    ErrorStats = 3,
    /// lend_mut rkyv [`Subscription`]
    ErrorSubscribe = 4,
    /// blocking scalar: arg1..arg4 = user seed words folded into the conditioner -> Scalar1(0)
    SeedTrng = 9,
    // ---- control server (privileged)
    /// blocking scalar -> Scalar1(0 | err): clears latched errors, re-runs the start-up test
    ClearErrors = 5,
    /// blocking scalar: arg1 = [`TestMode`] -> Scalar1(0 | err)
    TestSetMode = 6,
    /// lend_mut raw buffer, valid = bytes -> output of the current test mode
    TestGetData = 7,
    /// lend_mut rkyv [`FaultRequest`] (model sources only)
    TestInjectFault = 8,
    /// blocking scalar -> Scalar1(0): the service stops: every later request is answered
    /// [`TrngError::Stopped`]; the process stays until the system shuts down, so no client ever
    /// waits on a server that is gone
    Quit = 15,
}

impl Opcode {
    /// Served only by the control server.
    pub fn is_control(self) -> bool {
        matches!(
            self,
            Opcode::ClearErrors | Opcode::TestSetMode | Opcode::TestGetData | Opcode::TestInjectFault | Opcode::Quit
        )
    }
}

/// Status codes (nonzero) in replies.
#[derive(num_derive::FromPrimitive, num_derive::ToPrimitive, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrngError {
    /// A health test failed (latched): no output until ClearErrors.
    HealthFailure = 1,
    /// Wrong message kind for the opcode, or malformed/short buffer.
    BadMessage = 2,
    /// Zero-length request.
    ZeroLength = 3,
    /// Request longer than the lent buffer or MAX_FILL_BYTES, or word count not 1..=2.
    TooLarge = 4,
    /// Unknown test mode number.
    UnknownMode = 5,
    /// TestGetData while the test mode is None.
    TestModeOff = 6,
    /// Operation not supported by the running source (e.g. fault injection on `hosted-os`).
    NotSupported = 7,
    /// Subscriber table full.
    TooManySubscribers = 8,
    /// Server-side failure.
    Internal = 9,
    /// Unparseable fault specification.
    BadConfig = 10,
    /// Unknown opcode.
    UnknownOpcode = 11,
    /// Transport error on the client side (IPC failed).
    Ipc = 12,
    /// A privileged opcode sent to the public server (docs/security.md).
    NotPermitted = 13,
    /// The service was stopped (Quit): it serves nothing until the system restarts.
    Stopped = 14,
}

impl TrngError {
    pub fn from_code(code: usize) -> TrngError {
        <TrngError as num_traits::FromPrimitive>::from_usize(code).unwrap_or(TrngError::Internal)
    }
    pub fn code(self) -> usize {
        self as usize
    }
}

impl core::fmt::Display for TrngError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self {
            TrngError::HealthFailure => "health test failure (latched): no output until errors are cleared",
            TrngError::BadMessage => "malformed message for this opcode",
            TrngError::ZeroLength => "zero-length request",
            TrngError::TooLarge => "request too large",
            TrngError::UnknownMode => "unknown test mode",
            TrngError::TestModeOff => "test mode is None",
            TrngError::NotSupported => "not supported by the running source",
            TrngError::TooManySubscribers => "too many error subscribers",
            TrngError::Internal => "internal server error",
            TrngError::BadConfig => "bad fault specification",
            TrngError::UnknownOpcode => "unknown opcode",
            TrngError::Ipc => "IPC failure",
            TrngError::NotPermitted => "not permitted: a privileged operation (control server only)",
            TrngError::Stopped => "the TRNG service was stopped",
        };
        f.write_str(s)
    }
}

impl std::error::Error for TrngError {}

impl service_ipc::ErrorCode for TrngError {
    fn code(self) -> u32 {
        self as u32
    }
}

impl From<service_ipc::client::CallError> for TrngError {
    fn from(e: service_ipc::client::CallError) -> Self {
        match e {
            service_ipc::client::CallError::Service(c) => TrngError::from_code(c as usize),
            service_ipc::client::CallError::Ipc(_) => TrngError::Ipc,
            service_ipc::client::CallError::Protocol(_) => TrngError::Internal,
        }
    }
}

/// Test modes (TestSetMode / TestGetData; the tester's TCP modes use the same numbers + 1:
/// tester mode 0 = Cprng, 1 = Av, 2 = Ro, 3 = Both).
#[derive(num_derive::FromPrimitive, num_derive::ToPrimitive, Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestMode {
    None = 0,
    Av = 1,
    Ro = 2,
    Both = 3,
    Cprng = 4,
}

/// Source kinds in [`SourceStats::kind`].
pub const SOURCE_NONE: u32 = 0;
pub const SOURCE_AV0: u32 = 1;
pub const SOURCE_AV1: u32 = 2;
pub const SOURCE_RO: u32 = 3;
pub const SOURCE_OS: u32 = 4;
pub const SOURCE_HW: u32 = 5;
pub const MAX_SOURCES: usize = 4;

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// SOURCE_* constant; SOURCE_NONE = unused slot.
    pub kind: u32,
    pub symbol_bits: u32,
    /// Claimed min-entropy per symbol, in 1/1000 bit.
    pub min_entropy_milli: u32,
    pub rct_cutoff: u32,
    pub apt_cutoff: u32,
    pub apt_window: u32,
    pub samples: u64,
    /// Longest repetition run seen / largest APT count seen (since last clear).
    pub rct_max_run: u32,
    pub apt_max_count: u32,
    pub rct_failures: u32,
    pub apt_failures: u32,
    pub startup_passed: bool,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HealthStats {
    pub sources: [SourceStats; MAX_SOURCES],
    pub conditioner_valid: bool,
    pub blocks_out: u64,
    pub reseeds: u64,
    pub rekeys: u64,
    pub selfmix_blocks: u64,
    pub full_seeds: u64,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorStats {
    /// True while an error is latched (output refused).
    pub latched: bool,
    /// Bit (2*i) = RCT failure of source slot i, bit (2*i+1) = APT failure, bit 30 = start-up
    /// test failure, bit 31 = hardware-reported error.
    pub error_bits: u32,
    pub total_failures: u32,
    pub startup_failures: u32,
    pub clears: u32,
    /// Requests refused because of a latched error.
    pub refused_requests: u64,
    pub subscribers: u32,
    pub notifications_sent: u32,
}

/// ErrorSubscribe payload: the subscriber's server ID and the opcode to receive.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subscription {
    pub sid: [u32; 4],
    pub opcode: u32,
}

/// TestInjectFault payload: a fault specification (see `trng_core::sources::FaultSpec`), e.g.
/// `av0:stuck=0x800` or `ro:bias=0.9@1000+5000`; empty = remove all faults.
/// Plain fields only (no relative pointers, no bools): the server reads requests in place and
/// every bit pattern is a valid value.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRequest {
    pub spec: [u8; 256],
    pub len: u32,
}
