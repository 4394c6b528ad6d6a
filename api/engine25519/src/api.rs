//! Wire protocol of the engine25519 service (shared by the server and the client library).
//!
//! Two servers (docs/security.md): the public server [`SERVER_NAME`] (any app) and the control
//! server [`CONTROL_NAME`] (privileged: Suspend, Resume, Quit), registered with a fixed number
//! of connections ([`CONTROL_SLOTS`]) that the system's own processes claim at boot.
//!
//! Every memory message is an rkyv 0.4 archive (via xous-ipc `Buffer`) of a *plain-data* struct:
//! only integers and byte/word arrays, no enums, no pointers. Any bit pattern therefore decodes to
//! a well-formed value, and the server only has to check the archive position/size
//! (`service_ipc::archive`) and then the field values (`magic`, lengths, windows, handles).
//! Replies follow the one convention of docs/ipc.md: a success writes the reply archive
//! (`status` = Ok); an error is the error reply of the message kind (`Scalar1(code)`, or the
//! memory returned with `offset = code`, `valid = None`), code = [`Status`]. The protocol is
//! documented in docs/engine-service.md.

use num_derive::{FromPrimitive, ToPrimitive};
use rkyv::{Archive, Deserialize, Serialize};

/// Name of the public server (xous-names, any number of connections).
pub const SERVER_NAME: &str = "_Engine25519 accelerator service_";
/// Name of the privileged control server (xous-names, exactly [`CONTROL_SLOTS`] connections).
pub const CONTROL_NAME: &str = "_Engine25519 control_";
/// Connections xous-names brokers to [`CONTROL_NAME`]: one, claimed at boot by the system
/// controller (sysctl in hosted systems).
pub const CONTROL_SLOTS: u32 = 1;
/// Protocol version (answered by `Opcode::Version`).
/// 2: error replies follow docs/ipc.md, privileged opcodes moved to the control server.
/// 3: `Opcode::X25519Batch`.
pub const API_VERSION: u32 = 3;
/// Every request struct starts with this magic; anything else is rejected as `BadMessage`.
pub const MAGIC: u32 = 0x4532_3551; // "E25Q"

/// Register windows in the engine register file (16 x 32 x 256 bit).
pub const NUM_WINDOWS: usize = 16;
/// Registers per window.
pub const NUM_REGS: usize = 32;
/// Microcode RAM words.
pub const UCODE_WORDS: usize = 1024;
/// The `hw` backend waits for the engine's interrupt and counts time only in ticks of this
/// many milliseconds (its ticker thread): the engine cycles it reports are the full ticks a job
/// waited x the engine clock (0 for a job shorter than a tick), and slices, the runaway limit
/// and a lost interrupt are seen at this resolution (services/engine25519/src/hw.rs). Each tick
/// is a sleep request to xous-ticktimer and a wake-up of the waiting thread, about 300 us of
/// device CPU on the simulated Precursor (measured at 10 ms ticks: 99 us per v1 X25519 back to
/// back); at 50 ms that is under 1% of the CPU while jobs run, and a lost interrupt fails its
/// job within 100 ms.
pub const HW_TICK_MS: u64 = 50;

#[derive(Debug, Copy, Clone, PartialEq, Eq, FromPrimitive, ToPrimitive)]
pub enum Opcode {
    /// blocking scalar -> Scalar2(API_VERSION, backend id)
    Version = 0,
    /// lend_mut [`StatsMsg`]
    Stats = 1,
    /// lend_mut [`X25519Msg`]: one X25519 on the built-in ladder program
    X25519 = 2,
    /// lend_mut [`ProgramMsg`]: load (or find, by content) custom microcode; returns a handle
    LoadProgram = 3,
    /// lend_mut [`JobMsg`]: run a loaded program on a register window
    RunJob = 4,
    /// CONTROL server only. blocking scalar -> Scalar2(jobs in flight, 0): pause the engine at
    /// the next instruction boundary and save its state (as on a system suspend)
    Suspend = 5,
    /// CONTROL server only. blocking scalar -> Scalar2(jobs in flight, 0): resume a suspended
    /// engine where it stopped
    Resume = 6,
    /// CONTROL server only. blocking scalar -> Scalar1(0) once every queued job has been
    /// answered; from then on X25519, X25519Batch, LoadProgram and RunJob are refused with
    /// `BadState` (the process stays to answer: clients never hang on a vanished server)
    Quit = 7,
    /// lend_mut [`X25519BatchMsg`]: 1..=[`MAX_BATCH`] X25519s in one request, run back to back
    /// on the engine and answered together (one reply with every result, or one error)
    X25519Batch = 8,
}

impl Opcode {
    pub fn from_usize(v: usize) -> Option<Opcode> {
        num_traits::FromPrimitive::from_usize(v)
    }
    /// Served by the control server only; the public server answers `NotPermitted`.
    pub fn is_control(self) -> bool {
        matches!(self, Opcode::Suspend | Opcode::Resume | Opcode::Quit)
    }
}

/// Status codes: the code of an error reply (docs/ipc.md; never 0) and the `status` field of a
/// reply archive (always `Ok` there).
#[derive(Debug, Copy, Clone, PartialEq, Eq, FromPrimitive, ToPrimitive)]
#[repr(u32)]
pub enum Status {
    Ok = 0,
    /// the bounded queue (global or per-client) is full: try again later
    Busy = 1,
    /// archive position/size wrong, wrong magic, or wrong message kind for the opcode
    BadMessage = 2,
    /// opcode number not in [`Opcode`]
    UnknownOpcode = 3,
    /// the program hit an opcode its ISA does not define (the set differs between v1 and v2, see
    /// spec/engine25519.toml; `udf` = 63 is illegal in every ISA) or branched out of range
    IllegalInstruction = 4,
    /// the job exceeded its cycle budget (runaway program)
    Runaway = 5,
    /// window index out of range (>= 16)
    BadWindow = 6,
    /// program length 0 or > 1024 words, or no room in microcode RAM
    BadProgram = 7,
    /// program handle not (or no longer) loaded: load it again
    UnknownProgram = 8,
    /// no engine backend can run the job (e.g. `rtl` before the gateware exists)
    EngineUnavailable = 9,
    /// internal server error (a bug): reported, never hidden
    Internal = 10,
    /// request field out of range (e.g. mplen, reserved bits)
    BadArgument = 11,
    /// Suspend while already suspended / Resume while not suspended
    BadState = 12,
    /// a privileged opcode (Suspend, Resume, Quit) sent to the public server: only the
    /// control server serves it (docs/security.md)
    NotPermitted = 13,
    /// the engine did not report the job's end in time (its interrupt never came, or it did not
    /// stop within the job's budget in wall time): the job failed, the server keeps serving
    /// and the next job is tried normally
    EngineFault = 14,
}

impl service_ipc::ErrorCode for Status {
    fn code(self) -> u32 {
        self as u32
    }
}

impl Status {
    pub fn from_u32(v: u32) -> Option<Status> {
        num_traits::FromPrimitive::from_u32(v)
    }
    pub fn describe(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Busy => "engine queue full (busy), retry later",
            Status::BadMessage => "malformed message (bad archive, size, magic or message kind)",
            Status::UnknownOpcode => "unknown opcode",
            Status::IllegalInstruction => "illegal instruction in microcode",
            Status::Runaway => "job exceeded its cycle budget (runaway program)",
            Status::BadWindow => "register window out of range (0..16)",
            Status::BadProgram => "bad program (length 0, > 1024 words, or no room in microcode RAM)",
            Status::UnknownProgram => "program handle not loaded",
            Status::EngineUnavailable => "no engine backend available",
            Status::Internal => "internal server error",
            Status::BadArgument => "argument out of range",
            Status::BadState => "operation not valid in the current engine state",
            Status::NotPermitted => "not permitted: privileged operation (control server only)",
            Status::EngineFault => "the engine did not report the job's end (lost interrupt): job failed, retry",
        }
    }
}

/// Backend identifiers (reported by Version and Stats).
#[derive(Debug, Copy, Clone, PartialEq, Eq, FromPrimitive, ToPrimitive)]
#[repr(u32)]
pub enum BackendId {
    /// cycle-exact model executing the real microcode (hosted default)
    Model = 1,
    /// the engine25519 hardware block (CSR + memory window), Xous target only
    Hw = 2,
    /// Verilated engine gateware in a child process (gateware/engine); EngineUnavailable when it cannot start
    Rtl = 3,
    /// x25519-dalek in the server process: used only when no engine is available
    Software = 4,
}

impl BackendId {
    pub fn from_u32(v: u32) -> Option<BackendId> {
        num_traits::FromPrimitive::from_u32(v)
    }
    pub fn name(self) -> &'static str {
        match self {
            BackendId::Model => "model",
            BackendId::Hw => "hw",
            BackendId::Rtl => "rtl",
            BackendId::Software => "software",
        }
    }
}

/// Where the results of a message came from (`X25519Msg::backend`, `JobMsg::backend`).
pub const WINDOW_ANY: u32 = 0xFFFF_FFFF;

/// X25519 request/response.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy)]
pub struct X25519Msg {
    pub magic: u32,
    /// response: [`Status::Ok`] (errors come as the error reply, docs/ipc.md)
    pub status: u32,
    /// response: [`BackendId`] that computed the result
    pub backend: u32,
    /// response: engine window used
    pub window: u32,
    /// response: engine cycles (eng_clk) spent (0 for the software fallback)
    pub cycles: u64,
    /// request: scalar (clamped by the engine program as X25519 requires); zeroed in the reply
    pub scalar: [u8; 32],
    /// request: u coordinate
    pub u: [u8; 32],
    /// response: result u coordinate
    pub result: [u8; 32],
}

impl X25519Msg {
    pub fn new(scalar: [u8; 32], u: [u8; 32]) -> Self {
        X25519Msg {
            magic: MAGIC,
            status: Status::Internal as u32,
            backend: 0,
            window: 0,
            cycles: 0,
            scalar,
            u,
            result: [0; 32],
        }
    }
}

/// Most X25519s one [`Opcode::X25519Batch`] request carries.
pub const MAX_BATCH: usize = 4;

/// Several X25519s in one request ([`Opcode::X25519Batch`]). Jobs `0..count` are used; the
/// unused slots must be zero in a request and are zero in a reply. One reply carries every
/// result (each computed as [`Opcode::X25519`] computes it), or the request fails as a whole
/// with one error code (the first job's error in job order; the results of the other jobs are
/// then not returned).
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy)]
pub struct X25519BatchMsg {
    pub magic: u32,
    /// response: [`Status::Ok`]
    pub status: u32,
    /// request: jobs in the batch, 1..=[`MAX_BATCH`] (anything else: `BadArgument`)
    pub count: u32,
    /// response: [`BackendId`] that computed the results
    pub backend: u32,
    /// response: engine window each job ran in
    pub windows: [u32; MAX_BATCH],
    /// response: engine cycles (eng_clk) each job spent (the `hw` backend: full ticks, as for X25519)
    pub cycles: [u64; MAX_BATCH],
    /// request: scalars (clamped by the engine program); zeroed in the reply
    pub scalars: [[u8; 32]; MAX_BATCH],
    /// request: u coordinates; zeroed in the reply
    pub us: [[u8; 32]; MAX_BATCH],
    /// response: result u coordinates
    pub results: [[u8; 32]; MAX_BATCH],
}

impl X25519BatchMsg {
    /// A request for `jobs` (at most [`MAX_BATCH`]; more are an error of the caller).
    pub fn new(jobs: &[([u8; 32], [u8; 32])]) -> Option<Self> {
        if jobs.len() > MAX_BATCH {
            return None;
        }
        let mut m = X25519BatchMsg {
            magic: MAGIC,
            status: Status::Internal as u32,
            count: jobs.len() as u32,
            backend: 0,
            windows: [0; MAX_BATCH],
            cycles: [0; MAX_BATCH],
            scalars: [[0; 32]; MAX_BATCH],
            us: [[0; 32]; MAX_BATCH],
            results: [[0; 32]; MAX_BATCH],
        };
        for (i, (k, u)) in jobs.iter().enumerate() {
            m.scalars[i] = *k;
            m.us[i] = *u;
        }
        Some(m)
    }
}

/// Load custom microcode. The server deduplicates by content.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy)]
pub struct ProgramMsg {
    pub magic: u32,
    pub status: u32,
    /// request: number of valid words in `words` (1..=1024)
    pub len: u32,
    /// response: handle for RunJob (slot << 16 | generation), 0 = none
    pub handle: u32,
    /// response: microcode RAM address the program was placed at
    pub mpstart: u32,
    pub words: [u32; UCODE_WORDS],
}

/// Run a loaded program on one register window.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy)]
pub struct JobMsg {
    pub magic: u32,
    pub status: u32,
    /// request: handle from LoadProgram
    pub handle: u32,
    /// request: window 0..16, or WINDOW_ANY; response: window used
    pub window: u32,
    /// request: cycle budget (0 = server default); exceeded -> Status::Runaway
    pub max_cycles: u64,
    /// response: engine cycles
    pub cycles: u64,
    /// response: backend that ran the job
    pub backend: u32,
    pub reserved: u32,
    /// request: initial registers; response: registers after the job (32 x 256-bit LE)
    pub regs: [[u8; 32]; NUM_REGS],
}

/// Service statistics.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, Default)]
pub struct StatsMsg {
    pub magic: u32,
    pub status: u32,
    pub api_version: u32,
    /// configured backend ([`BackendId`])
    pub backend: u32,
    /// jobs completed successfully on an engine backend (X25519 + RunJob)
    pub jobs: u64,
    /// engine cycles spent on completed jobs
    pub cycles: u64,
    /// jobs computed by the software fallback (no engine available)
    pub fallbacks: u64,
    /// error replies (malformed messages, failed jobs, busy)
    pub errors: u64,
    /// of which: busy replies
    pub busy: u64,
    /// jobs queued or running right now
    pub queue_depth: u32,
    /// high-water mark of the queue
    pub queue_max: u32,
    /// times a running job was paused and later resumed (suspend/resume, preemption)
    pub resumes: u64,
    /// programs currently loaded in microcode RAM
    pub programs: u32,
    /// 1 if the engine is suspended
    pub suspended: u32,
    /// distinct clients seen
    pub clients: u32,
    /// pacing clock in Hz (0 = pacing off)
    pub pacing_hz: u32,
}

pub use service_ipc::archive::archive_fits;

/// Content key of a microcode program: 64-bit FNV-1a over the words (LE bytes) xor the length.
/// The client caches programs by it and the server deduplicates by it (collisions are resolved
/// by a full compare on both sides).
pub fn content_hash(words: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    }
    h ^ words.len() as u64
}
