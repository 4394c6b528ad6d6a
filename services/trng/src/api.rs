//! The TRNG server's IPC interface: name, opcodes, status codes and rkyv message types.
//!
//! Conventions:
//! - Scalar calls (`GetTrng`, `ClearErrors`, `TestSetMode`, `SeedTrng`) are blocking scalars.
//!   Success replies `Scalar2(w0, w1)` (GetTrng) or `Scalar1(0)`; failure replies `Scalar1(code)`
//!   with a nonzero [`TrngError`] code (GetTrng: a `Scalar1` reply is always an error).
//! - Bulk data (`FillTrng`, `TestGetData`): a mutable lend of a page-aligned buffer; the message's
//!   `valid` field carries the number of bytes requested (1..=MAX_FILL_BYTES, <= buffer length).
//!   The server writes exactly that many bytes at the start of the buffer and returns
//!   `offset = None, valid = Some(len)` on success, or `offset = Some(code)` (a [`TrngError`]),
//!   `valid = None` and the buffer zeroed on failure.
//! - Structured calls (`HealthStats`, `ErrorStats`, `ErrorSubscribe`, `TestInjectFault`) use
//!   xous-ipc `Buffer` + rkyv: the request struct is archived in the buffer and the server replaces
//!   it with the reply struct.
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
/// Bytes per client FillTrng request (the client splits larger fills).
pub const CLIENT_CHUNK_BYTES: usize = 64 * 1024;

#[derive(num_derive::FromPrimitive, num_derive::ToPrimitive, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// blocking scalar: arg1 = number of words (1 or 2) -> Scalar2(w0, w1) | Scalar1(err)
    GetTrng = 0,
    /// lend_mut raw buffer, valid = bytes -> conditioned bytes
    FillTrng = 1,
    /// lend_mut rkyv [`HealthStats`]
    HealthStats = 2,
    /// lend_mut rkyv [`ErrorStats`]
    ErrorStats = 3,
    /// lend_mut rkyv [`Subscription`] -> [`Subscription::status`] set
    ErrorSubscribe = 4,
    /// blocking scalar -> Scalar1(0 | err): clears latched errors, re-runs the start-up test
    ClearErrors = 5,
    /// blocking scalar: arg1 = [`TestMode`] -> Scalar1(0 | err)
    TestSetMode = 6,
    /// lend_mut raw buffer, valid = bytes -> output of the current test mode
    TestGetData = 7,
    /// lend_mut rkyv [`FaultRequest`] (model sources only) -> [`FaultRequest::status`] set
    TestInjectFault = 8,
    /// blocking scalar: arg1..arg4 = user seed words folded into the conditioner -> Scalar1(0)
    SeedTrng = 9,
    /// blocking scalar -> Scalar1(0); the server exits (hosted tests)
    Quit = 15,
    /// internal (tester thread -> main loop), non-blocking scalar: notify subscribers
    ErrorNotification = 16,
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
        };
        f.write_str(s)
    }
}

impl std::error::Error for TrngError {}

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
    /// 0 on success, else a TrngError code.
    pub status: u32,
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
    pub status: u32,
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
    /// Reply: 0 = subscribed, else a TrngError code.
    pub status: u32,
}

/// TestInjectFault payload: a fault specification (see `trng_core::sources::FaultSpec`), e.g.
/// `av0:stuck=0x800` or `ro:bias=0.9@1000+5000`; empty = remove all faults.
/// Plain fields only (no relative pointers, no bools): the server reads requests in place and
/// every bit pattern is a valid value.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRequest {
    pub spec: [u8; 256],
    pub len: u32,
    pub status: u32,
}
