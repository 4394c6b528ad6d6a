//! Client library: `Engine25519` talks to the engine25519 server over Xous IPC.

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use num_traits::ToPrimitive;
use service_ipc::client::CallError;
use xous::CID;
use xous_ipc::Buffer;

use crate::api::{
    self, BackendId, JobMsg, Opcode, ProgramMsg, StatsMsg, Status, X25519BatchMsg, X25519Msg, MAGIC, MAX_BATCH,
    NUM_REGS, NUM_WINDOWS, UCODE_WORDS, WINDOW_ANY,
};

/// Errors returned by the client library.
#[derive(Debug, PartialEq)]
pub enum Error {
    /// the server answered with an error status
    Service(Status),
    /// the Xous IPC layer failed
    Ipc(xous::Error),
    /// the server's reply was not understood (protocol mismatch)
    Protocol(&'static str),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Service(s) => write!(f, "engine25519: {}", s.describe()),
            Error::Ipc(e) => write!(f, "engine25519: IPC error {:?}", e),
            Error::Protocol(s) => write!(f, "engine25519: protocol error: {}", s),
        }
    }
}
impl std::error::Error for Error {}

impl From<xous::Error> for Error {
    fn from(e: xous::Error) -> Self {
        Error::Ipc(e)
    }
}

impl From<CallError> for Error {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Service(code) => match Status::from_u32(code) {
                Some(s) => Error::Service(s),
                None => Error::Protocol("unknown status code"),
            },
            CallError::Ipc(e) => Error::Ipc(e),
            CallError::Protocol(p) => Error::Protocol(p),
        }
    }
}

fn status_result(code: u32) -> Result<(), Error> {
    match Status::from_u32(code) {
        Some(Status::Ok) => Ok(()),
        Some(s) => Err(Error::Service(s)),
        None => Err(Error::Protocol("unknown status code")),
    }
}

/// Statistics reported by the server.
pub type Stats = StatsMsg;

/// Version information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    pub api: u32,
    pub backend: Option<BackendId>,
}

/// The page a call lends, kept mapped for the connection: one archive of `T` at `pos`, written
/// in place for every call (the fields, not a new serialization) and read in place after it
/// (no deserialization), then wiped (only the bytes the archive spans). X25519 ([`X25519Msg`])
/// and X25519Batch ([`X25519BatchMsg`]) each have one.
pub(crate) struct MsgPage<T: rkyv::Archive> {
    range: xous::MemoryRange,
    pos: usize,
    _msg: core::marker::PhantomData<fn() -> T>,
}

/// The page of X25519 calls.
pub(crate) type XPage = MsgPage<X25519Msg>;
/// The page of X25519Batch calls.
pub(crate) type BPage = MsgPage<X25519BatchMsg>;

impl<T> MsgPage<T>
where
    T: rkyv::Archive + for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
{
    /// Map a page and serialize `init` into it once: where rkyv puts the archive is then known
    /// (`pos`), and every call after this writes its fields there.
    fn new(init: &T) -> Result<Self, Error> {
        let range = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W)?;
        // from here on the page is unmapped (wiped first) by Drop, whatever fails
        let mut p = MsgPage { range, pos: 0, _msg: core::marker::PhantomData };
        // Safety: just mapped, 4096 bytes, ours until unmapped in Drop
        let page = unsafe { core::slice::from_raw_parts_mut(range.as_mut_ptr(), range.len()) };
        let mut ser = rkyv::ser::serializers::BufferSerializer::new(page);
        p.pos = rkyv::ser::Serializer::serialize_value(&mut ser, init).map_err(|_| Error::Protocol("serialize"))?;
        if !api::archive_fits::<T>(range.len(), p.pos) {
            p.pos = 0;
            return Err(Error::Protocol("request archive does not fit a page"));
        }
        Ok(p)
    }
}

impl<T: rkyv::Archive> MsgPage<T> {
    /// The archive in the page.
    /// Safety: nothing else may use the page meanwhile (the caller holds the lock of the
    /// page's slot and the page is not lent).
    #[allow(clippy::mut_from_ref)]
    unsafe fn archive(&self) -> &mut rkyv::Archived<T> {
        let page = core::slice::from_raw_parts_mut(self.range.as_mut_ptr(), self.range.len());
        rkyv::archived_value_mut::<T>(core::pin::Pin::new(page), self.pos).get_unchecked_mut()
    }
    /// Lend the page (mutably) with `opcode` and wait for the server's reply: `Ok` once it has
    /// written its reply archive over the request (at the same position), the error of an
    /// error reply (docs/ipc.md) otherwise.
    fn lend(&self, conn: CID, opcode: Opcode) -> Result<(), Error> {
        let msg = xous::MemoryMessage {
            id: opcode as usize,
            buf: self.range,
            offset: xous::MemoryAddress::new(self.pos),
            valid: xous::MemorySize::new(self.range.len()),
        };
        let r = xous::send_message(conn, xous::Message::MutableBorrow(msg)).map_err(Error::Ipc)?;
        let (pos, _) = service_ipc::client::memory_reply(r)?;
        if pos.unwrap_or(0) != self.pos {
            return Err(Error::Protocol("reply archive not where the request was"));
        }
        Ok(())
    }
    /// Wipe the bytes an archive can occupy ([0, pos + its size)).
    fn wipe(&mut self) {
        let n = (self.pos + core::mem::size_of::<rkyv::Archived<T>>()).min(self.range.len());
        // Safety: n <= the page's length; the page is ours
        unsafe { service_ipc::wipe_raw(self.range.as_mut_ptr(), n) };
    }
}

impl<T: rkyv::Archive> Drop for MsgPage<T> {
    fn drop(&mut self) {
        self.wipe();
        let _ = xous::unmap_memory(self.range);
    }
}

// the page is only reached through the mutex of its slot (`Inner::xbuf`, `Inner::bbuf`)
unsafe impl<T: rkyv::Archive> Send for MsgPage<T> {}

pub(crate) struct Inner {
    pub(crate) conn: CID,
    /// reused page for X25519 calls (a new Buffer per call costs ~30 us), written in place
    xbuf: Mutex<Option<XPage>>,
    /// the same for X25519Batch calls
    bbuf: Mutex<Option<BPage>>,
    /// program content hash -> (words, server handle)
    programs: Mutex<HashMap<u64, (Vec<u32>, u32)>>,
    /// the async worker pool, started on first use
    pool: OnceLock<AsyncPool>,
}

/// Handle to the engine25519 service. Cheap to clone; usable from several threads.
#[derive(Clone)]
pub struct Engine25519 {
    pub(crate) inner: Arc<Inner>,
}

/// Send a lend_mut of the request archive in `buf` and decode the reply of the same type
/// (docs/ipc.md: an error reply becomes `Error::Service`).
pub(crate) fn lend_mut_typed<T>(conn: CID, buf: &mut Buffer<'static>, opcode: Opcode) -> Result<T, Error>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    Ok(service_ipc::client::lend_mut_in(conn, buf, opcode.to_u32().unwrap())?)
}

impl Engine25519 {
    /// Connect to the service (blocks until the server has registered its name).
    pub fn new() -> Result<Self, Error> {
        let xns = xous_api_names::XousNames::new()?;
        let conn = xns.request_connection_blocking(api::SERVER_NAME)?;
        Ok(Engine25519 {
            inner: Arc::new(Inner {
                conn,
                xbuf: Mutex::new(None),
                bbuf: Mutex::new(None),
                programs: Mutex::new(HashMap::new()),
                pool: OnceLock::new(),
            }),
        })
    }

    /// The connection id (for tests that want to send raw messages to the server).
    pub fn conn(&self) -> CID {
        self.inner.conn
    }

    /// Protocol version and the backend the server was started with.
    pub fn version(&self) -> Result<Version, Error> {
        let (api, backend) = service_ipc::client::blocking_scalar(self.inner.conn, Opcode::Version as u32, [0; 4])?;
        Ok(Version { api: api as u32, backend: BackendId::from_u32(backend as u32) })
    }

    /// Service statistics.
    pub fn stats(&self) -> Result<Stats, Error> {
        let msg = StatsMsg { magic: MAGIC, ..Default::default() };
        let mut buf = Buffer::into_buf(msg).map_err(|_| Error::Protocol("serialize"))?;
        let s: StatsMsg = lend_mut_typed(self.inner.conn, &mut buf, Opcode::Stats)?;
        status_result(s.status)?;
        Ok(s)
    }

    /// One X25519 (RFC 7748) on the engine: returns scalar * u. Blocks until the result is ready
    /// (use [`Engine25519::x25519_async`] from threads that must not wait).
    pub fn x25519(&self, scalar: &[u8; 32], u: &[u8; 32]) -> Result<[u8; 32], Error> {
        self.x25519_detailed(scalar, u).map(|r| r.result)
    }

    /// X25519 with the reply details (backend, cycles, window).
    pub fn x25519_detailed(&self, scalar: &[u8; 32], u: &[u8; 32]) -> Result<X25519Reply, Error> {
        let mut guard = self.inner.xbuf.lock().unwrap();
        if guard.is_none() {
            *guard = Some(XPage::new(&X25519Msg::new([0; 32], [0; 32]))?);
        }
        let p = guard.as_mut().expect("set above");
        // the request's fields written over the archive in place (no serialization per call)
        // Safety: the page is ours (mapped in XPage::new), the archive fits it (checked there)
        let a = unsafe { p.archive() };
        a.magic = MAGIC;
        a.status = Status::Internal as u32;
        a.backend = 0;
        a.window = 0;
        a.cycles = 0;
        a.scalar = *scalar;
        a.u = *u;
        a.result = [0; 32];
        let r = p.lend(self.inner.conn, Opcode::X25519).and_then(|()| {
            // Safety: as above; the server wrote the reply over the request (same type, same place)
            let a = unsafe { p.archive() };
            status_result(a.status)?;
            Ok(X25519Reply {
                result: a.result,
                backend: BackendId::from_u32(a.backend),
                cycles: a.cycles,
                window: a.window,
            })
        });
        // the page held our scalar, then the result: the archive's bytes are wiped whatever happened
        p.wipe();
        r
    }
}

impl Engine25519 {
    /// Several X25519s (RFC 7748) on the engine, each `scalar * u` for one `(scalar, u)` of
    /// `jobs`, results in the same order. Up to [`MAX_BATCH`] jobs travel in one request
    /// (`Opcode::X25519Batch`): the server runs them back to back and answers them together,
    /// which saves the per-call IPC and scheduling cost of separate calls; a longer list is
    /// sent as consecutive requests of at most [`MAX_BATCH`]. An empty list returns at once
    /// with no result. All or nothing: any job's error fails the call (no result is returned;
    /// those of requests already answered are wiped). Blocks until every result is ready (see
    /// [`Engine25519::x25519_batch_async`]; [`Engine25519::x25519_batch_into`] takes the
    /// caller's slots instead of returning a `Vec`).
    pub fn x25519_batch(&self, jobs: &[([u8; 32], [u8; 32])]) -> Result<Vec<X25519Reply>, Error> {
        let mut out = vec![X25519Reply::default(); jobs.len()];
        self.x25519_batch_into(jobs, &mut out)?;
        Ok(out)
    }

    /// [`Engine25519::x25519_batch`] into the caller's slots: reply `i` goes to `out[i]` (the
    /// slots from `jobs.len()` on are not touched; fewer slots than jobs is an error, before
    /// anything is sent). No allocation. On an error every slot of `out[..jobs.len()]` has its
    /// result zeroed (all or nothing, as `x25519_batch`). The results are secrets of the
    /// caller's: it wipes them when it is done with them.
    pub fn x25519_batch_into(&self, jobs: &[([u8; 32], [u8; 32])], out: &mut [X25519Reply]) -> Result<(), Error> {
        let Some(out) = out.get_mut(..jobs.len()) else {
            return Err(Error::Protocol("x25519_batch_into: fewer reply slots than jobs"));
        };
        let r =
            jobs.chunks(MAX_BATCH).zip(out.chunks_mut(MAX_BATCH)).try_for_each(|(j, o)| self.x25519_batch_one(j, o));
        if r.is_err() {
            use zeroize::Zeroize;
            for o in out.iter_mut() {
                o.result.zeroize();
            }
        }
        r
    }

    /// One X25519Batch request of 1..=MAX_BATCH jobs (`out`: as many slots), written in place
    /// into the page kept for it (as `x25519_detailed` does) and read in place after the reply.
    fn x25519_batch_one(&self, jobs: &[([u8; 32], [u8; 32])], out: &mut [X25519Reply]) -> Result<(), Error> {
        if jobs.is_empty() || jobs.len() > MAX_BATCH || out.len() != jobs.len() {
            return Err(Error::Protocol("batch of 1..=MAX_BATCH jobs with as many reply slots"));
        }
        let mut guard = self.inner.bbuf.lock().unwrap();
        if guard.is_none() {
            *guard = Some(BPage::new(&X25519BatchMsg::new(&[]).expect("an empty batch fits"))?);
        }
        let p = guard.as_mut().expect("set above");
        // the request's fields written over the archive in place (no serialization per call);
        // unused slots zero, as the server requires
        // Safety: the page is ours (mapped in MsgPage::new), the archive fits it (checked there)
        let a = unsafe { p.archive() };
        a.magic = MAGIC;
        a.status = Status::Internal as u32;
        a.count = jobs.len() as u32;
        a.backend = 0;
        a.windows = [0; MAX_BATCH];
        a.cycles = [0; MAX_BATCH];
        for i in 0..MAX_BATCH {
            // straight from the caller's jobs into the page (no copy of a scalar on the stack)
            match jobs.get(i) {
                Some((k, u)) => {
                    a.scalars[i] = *k;
                    a.us[i] = *u;
                }
                None => {
                    a.scalars[i] = [0; 32];
                    a.us[i] = [0; 32];
                }
            }
        }
        a.results = [[0; 32]; MAX_BATCH];
        let r = p.lend(self.inner.conn, Opcode::X25519Batch).and_then(|()| {
            // Safety: as above; the server wrote the reply over the request (same type, same place)
            let a = unsafe { p.archive() };
            status_result(a.status)?;
            if a.count as usize != jobs.len() {
                return Err(Error::Protocol("batch reply count differs from the request"));
            }
            let backend = BackendId::from_u32(a.backend);
            for (i, o) in out.iter_mut().enumerate() {
                *o = X25519Reply { result: a.results[i], backend, cycles: a.cycles[i], window: a.windows[i] };
            }
            Ok(())
        });
        // the page held our scalars, then the results: the archive's bytes are wiped whatever
        // happened
        p.wipe();
        r
    }
}

/// Details of one X25519 reply.
#[derive(Debug, Clone, Copy, Default)]
pub struct X25519Reply {
    pub result: [u8; 32],
    pub backend: Option<BackendId>,
    pub cycles: u64,
    pub window: u32,
}

/// Which register window a custom job should run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// any free window (recommended)
    Any,
    /// a specific window 0..16; the job waits until that window is free
    Fixed(u8),
}

/// Result of a custom microcode job.
#[derive(Clone)]
pub struct JobResult {
    /// the window's 32 registers after the job
    pub regs: [[u8; 32]; NUM_REGS],
    /// engine cycles
    pub cycles: u64,
    pub window: u32,
    pub backend: Option<BackendId>,
}

impl Drop for JobResult {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        for r in self.regs.iter_mut() {
            r.zeroize();
        }
    }
}

impl Engine25519 {
    /// Load `program` (microcode words) unless this client already loaded the same content.
    /// Returns the server's handle. Called implicitly by [`Engine25519::run_job`].
    pub fn load_program(&self, program: &[u32]) -> Result<u32, Error> {
        let key = crate::api::content_hash(program);
        if let Some((words, h)) = self.inner.programs.lock().unwrap().get(&key) {
            if words == program {
                return Ok(*h);
            }
        }
        self.load_program_uncached(program, key)
    }

    fn load_program_uncached(&self, program: &[u32], key: u64) -> Result<u32, Error> {
        if program.is_empty() || program.len() > UCODE_WORDS {
            return Err(Error::Service(Status::BadProgram));
        }
        let mut msg = ProgramMsg {
            magic: MAGIC,
            status: 0,
            len: program.len() as u32,
            handle: 0,
            mpstart: 0,
            words: [0; UCODE_WORDS],
        };
        msg.words[..program.len()].copy_from_slice(program);
        let mut buf = Buffer::into_buf(msg).map_err(|_| Error::Protocol("serialize"))?;
        let r: ProgramMsg = lend_mut_typed(self.inner.conn, &mut buf, Opcode::LoadProgram)?;
        status_result(r.status)?;
        self.inner.programs.lock().unwrap().insert(key, (program.to_vec(), r.handle));
        Ok(r.handle)
    }

    /// Run custom microcode: `program` is loaded once (cached by content on both sides), the
    /// registers are written to a window, the job runs to FIN / end of program, and the window's
    /// registers come back with the cycle count. Blocks until done; `Busy` if the queue is full.
    pub fn run_job(&self, program: &[u32], regs: &[[u8; 32]; NUM_REGS], window: Window) -> Result<JobResult, Error> {
        self.run_job_budget(program, regs, window, 0)
    }

    /// [`Engine25519::run_job`] with an explicit cycle budget (0 = server default); a job
    /// exceeding it fails with `Status::Runaway`.
    pub fn run_job_budget(
        &self,
        program: &[u32],
        regs: &[[u8; 32]; NUM_REGS],
        window: Window,
        max_cycles: u64,
    ) -> Result<JobResult, Error> {
        let window = match window {
            Window::Any => WINDOW_ANY,
            Window::Fixed(w) if (w as usize) < NUM_WINDOWS => w as u32,
            Window::Fixed(_) => return Err(Error::Service(Status::BadWindow)),
        };
        let mut handle = self.load_program(program)?;
        for attempt in 0..2 {
            let msg = JobMsg {
                magic: MAGIC,
                status: 0,
                handle,
                window,
                max_cycles,
                cycles: 0,
                backend: 0,
                reserved: 0,
                regs: *regs,
            };
            let mut buf = Buffer::into_buf(msg).map_err(|_| Error::Protocol("serialize"))?;
            let r: Result<JobMsg, Error> =
                service_ipc::client::lend_mut_wiping(self.inner.conn, &mut buf, Opcode::RunJob as u32)
                    .map_err(Error::from);
            match r {
                Ok(r) => {
                    status_result(r.status)?;
                    return Ok(JobResult {
                        regs: r.regs,
                        cycles: r.cycles,
                        window: r.window,
                        backend: BackendId::from_u32(r.backend),
                    });
                }
                Err(Error::Service(Status::UnknownProgram)) if attempt == 0 => {
                    // evicted from microcode RAM by other clients' programs: load again
                    let key = crate::api::content_hash(program);
                    self.inner.programs.lock().unwrap().remove(&key);
                    handle = self.load_program_uncached(program, key)?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Service(Status::UnknownProgram))
    }
}

// ------------------------------------------------------------------------------------------
// privileged control (docs/security.md)

/// Connection to the engine's control server: Suspend, Resume, Quit. Only the system's own
/// processes get one: xous-names brokers [`api::CONTROL_SLOTS`] connections to
/// [`api::CONTROL_NAME`], claimed at boot; every later [`Control::claim`] is refused.
pub struct Control {
    conn: CID,
}

impl Control {
    /// Claim a control slot (waits up to `deadline` for the service to register). Fails with
    /// `SlotTaken` once the slots are claimed (docs/security.md).
    pub fn claim(deadline: Duration) -> Result<Control, service_ipc::control::ClaimError> {
        service_ipc::control::claim(api::SERVER_NAME, api::CONTROL_NAME, deadline).map(|conn| Control { conn })
    }

    /// The connection id (tests).
    pub fn conn(&self) -> CID {
        self.conn
    }

    /// Suspend the engine (as the system does before sleep): the running job is paused at the
    /// next instruction boundary and the engine state saved. Returns jobs in flight.
    pub fn suspend(&self) -> Result<usize, Error> {
        Ok(service_ipc::client::blocking_scalar(self.conn, Opcode::Suspend as u32, [0; 4])?.0)
    }

    /// Resume a suspended engine; paused jobs continue where they stopped.
    pub fn resume(&self) -> Result<usize, Error> {
        Ok(service_ipc::client::blocking_scalar(self.conn, Opcode::Resume as u32, [0; 4])?.0)
    }

    /// Stop the service: every queued job is answered, then all new work is refused
    /// (`BadState`); the server process stays so that no client ever waits on it.
    pub fn quit(&self) -> Result<(), Error> {
        service_ipc::client::blocking_scalar(self.conn, Opcode::Quit as u32, [0; 4])?;
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// dalek types at the edges

impl Engine25519 {
    /// Public key of `secret` (X25519 with the base point), computed on the engine.
    pub fn public_key(&self, secret: &x25519_dalek::StaticSecret) -> Result<x25519_dalek::PublicKey, Error> {
        let k = zeroize::Zeroizing::new(secret.to_bytes());
        self.x25519(&k, &x25519_dalek::X25519_BASEPOINT_BYTES).map(x25519_dalek::PublicKey::from)
    }

    /// Shared secret of `secret` and `their` public key, computed on the engine. Returned as
    /// zeroizing bytes (x25519-dalek's `SharedSecret` cannot be built outside that crate).
    pub fn diffie_hellman(
        &self,
        secret: &x25519_dalek::StaticSecret,
        their: &x25519_dalek::PublicKey,
    ) -> Result<zeroize::Zeroizing<[u8; 32]>, Error> {
        let k = zeroize::Zeroizing::new(secret.to_bytes());
        self.x25519(&k, their.as_bytes()).map(zeroize::Zeroizing::new)
    }

    /// X25519 on curve25519-dalek's Montgomery type: clamp(scalar) * point.
    pub fn mul_clamped(
        &self,
        point: &curve25519_dalek::montgomery::MontgomeryPoint,
        scalar: &[u8; 32],
    ) -> Result<curve25519_dalek::montgomery::MontgomeryPoint, Error> {
        self.x25519(scalar, point.as_bytes()).map(curve25519_dalek::montgomery::MontgomeryPoint)
    }
}

// ------------------------------------------------------------------------------------------
// asynchronous form

/// Number of threads of the client-side async pool (each holds one Xous thread slot for good).
pub const ASYNC_THREADS: usize = 2;
/// How long the async pool retries a `Busy` answer before delivering it.
pub const ASYNC_BUSY_DEADLINE: Duration = Duration::from_secs(30);

type Callback = Box<dyn FnOnce(Result<X25519Reply, Error>) + Send>;

type BatchCallback = Box<dyn FnOnce(Result<Vec<X25519Reply>, Error>) + Send>;

enum AsyncReq {
    One { scalar: zeroize::Zeroizing<[u8; 32]>, u: [u8; 32], done: Callback },
    Batch { jobs: zeroize::Zeroizing<Vec<([u8; 32], [u8; 32])>>, done: BatchCallback },
}

/// A call retried while the server answers `Busy`, for up to [`ASYNC_BUSY_DEADLINE`] (backing off).
fn retry_busy<T>(mut call: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
    let deadline = Instant::now() + ASYNC_BUSY_DEADLINE;
    let mut backoff = Duration::from_micros(500);
    loop {
        match call() {
            Err(Error::Service(Status::Busy)) if Instant::now() < deadline => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

pub(crate) struct AsyncPool {
    tx: Mutex<mpsc::Sender<AsyncReq>>,
}

struct Slot<T> {
    value: Mutex<Option<Result<T, Error>>>,
    cv: Condvar,
}

impl<T> Slot<T> {
    fn new() -> Arc<Self> {
        Arc::new(Slot { value: Mutex::new(None), cv: Condvar::new() })
    }
    fn put(&self, r: Result<T, Error>) {
        *self.value.lock().unwrap() = Some(r);
        self.cv.notify_all();
    }
}

/// A pending asynchronous X25519: poll it with `try_take`, or wait (off the UI thread). The
/// reply carries the result and the job's details (backend, engine cycles, window).
pub type PendingX25519 = Pending<X25519Reply>;
/// A pending asynchronous batch ([`Engine25519::x25519_batch_async`]): every reply, in job order.
pub type PendingX25519Batch = Pending<Vec<X25519Reply>>;

/// A result that arrives later from the client library's worker threads.
pub struct Pending<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Pending<T> {
    /// The result if it has arrived (then the handle is spent: later calls return None).
    pub fn try_take(&self) -> Option<Result<T, Error>> {
        self.slot.value.lock().unwrap().take()
    }
    /// True once the result has arrived.
    pub fn is_ready(&self) -> bool {
        self.slot.value.lock().unwrap().is_some()
    }
    /// Block until the result arrives or `timeout` passes (None on timeout).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<T, Error>> {
        let deadline = Instant::now() + timeout;
        let mut g = self.slot.value.lock().unwrap();
        loop {
            if let Some(v) = g.take() {
                return Some(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            g = self.slot.cv.wait_timeout(g, deadline - now).unwrap().0;
        }
    }
    /// Block until the result arrives.
    pub fn wait(self) -> Result<T, Error> {
        loop {
            if let Some(v) = self.wait_timeout(Duration::from_secs(3600)) {
                return v;
            }
        }
    }
}

impl Engine25519 {
    fn pool(&self) -> &AsyncPool {
        self.inner.pool.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<AsyncReq>();
            let rx = Arc::new(Mutex::new(rx));
            for i in 0..ASYNC_THREADS {
                let rx = rx.clone();
                // the workers share this handle's connection (a CID may be used from any thread of the
                // process) and each has its own reply buffer and program cache
                let me = Engine25519 {
                    inner: Arc::new(Inner {
                        conn: self.inner.conn,
                        xbuf: Mutex::new(None),
                        bbuf: Mutex::new(None),
                        programs: Mutex::new(HashMap::new()),
                        pool: OnceLock::new(),
                    }),
                };
                std::thread::Builder::new()
                    .name(format!("engine25519-async-{i}"))
                    .spawn(move || loop {
                        let req = match rx.lock().unwrap().recv() {
                            Ok(r) => r,
                            Err(_) => return, // every Engine25519 handle is gone
                        };
                        match req {
                            AsyncReq::One { scalar, u, done } => done(retry_busy(|| me.x25519_detailed(&scalar, &u))),
                            AsyncReq::Batch { jobs, done } => done(retry_busy(|| me.x25519_batch(&jobs))),
                        }
                    })
                    .expect("spawn engine25519 async worker");
            }
            AsyncPool { tx: Mutex::new(tx) }
        })
    }

    /// Asynchronous X25519 with a callback: returns at once; `done` runs on a client-library
    /// worker thread when the result (or an error) arrives.
    pub fn x25519_with<F>(&self, scalar: &[u8; 32], u: &[u8; 32], done: F)
    where
        F: FnOnce(Result<X25519Reply, Error>) + Send + 'static,
    {
        let req = AsyncReq::One { scalar: zeroize::Zeroizing::new(*scalar), u: *u, done: Box::new(done) };
        self.send_async(req);
    }

    fn send_async(&self, req: AsyncReq) {
        if let Err(mpsc::SendError(req)) = self.pool().tx.lock().unwrap().send(req) {
            let e = Error::Protocol("async pool stopped");
            match req {
                AsyncReq::One { done, .. } => done(Err(e)),
                AsyncReq::Batch { done, .. } => done(Err(e)),
            }
        }
    }

    /// Asynchronous [`Engine25519::x25519_batch`] with a callback: returns at once; `done` runs
    /// on a client-library worker thread with every reply (job order) or the error.
    pub fn x25519_batch_with<F>(&self, jobs: &[([u8; 32], [u8; 32])], done: F)
    where
        F: FnOnce(Result<Vec<X25519Reply>, Error>) + Send + 'static,
    {
        let req = AsyncReq::Batch { jobs: zeroize::Zeroizing::new(jobs.to_vec()), done: Box::new(done) };
        self.send_async(req);
    }

    /// Asynchronous [`Engine25519::x25519_batch`]: returns a pollable handle at once.
    pub fn x25519_batch_async(&self, jobs: &[([u8; 32], [u8; 32])]) -> PendingX25519Batch {
        let slot = Slot::new();
        let s2 = slot.clone();
        self.x25519_batch_with(jobs, move |r| s2.put(r));
        Pending { slot }
    }

    /// Asynchronous X25519: returns a pollable handle at once.
    pub fn x25519_async(&self, scalar: &[u8; 32], u: &[u8; 32]) -> PendingX25519 {
        let slot = Slot::new();
        let s2 = slot.clone();
        self.x25519_with(scalar, u, move |r| s2.put(r));
        Pending { slot }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle on no connection: only for the checks a call makes before it sends anything.
    fn unconnected() -> Engine25519 {
        Engine25519 {
            inner: Arc::new(Inner {
                conn: 0,
                xbuf: Mutex::new(None),
                bbuf: Mutex::new(None),
                programs: Mutex::new(HashMap::new()),
                pool: OnceLock::new(),
            }),
        }
    }

    #[test]
    fn batch_into_refuses_fewer_slots_than_jobs_before_sending() {
        let e = unconnected();
        let jobs = [([1u8; 32], [9u8; 32]); 3];
        let mut out = [X25519Reply::default(); 2];
        out[0].result = [7; 32];
        match e.x25519_batch_into(&jobs, &mut out) {
            Err(Error::Protocol(m)) => assert!(m.contains("fewer reply slots than jobs"), "{m}"),
            other => panic!("3 jobs into 2 slots: {other:?}"),
        }
        // nothing was sent, nothing mapped, the caller's slots untouched
        assert!(e.inner.bbuf.lock().unwrap().is_none());
        assert_eq!(out[0].result, [7; 32]);
    }

    #[test]
    fn empty_batch_returns_at_once_with_no_result() {
        let e = unconnected();
        let mut out = [X25519Reply::default(); 1];
        out[0].window = 5;
        assert_eq!(e.x25519_batch_into(&[], &mut out), Ok(()));
        assert_eq!(out[0].window, 5, "a slot past the jobs was written");
        assert!(e.x25519_batch(&[]).expect("an empty batch").is_empty());
        assert!(e.inner.bbuf.lock().unwrap().is_none(), "an empty batch mapped a page");
    }
}
