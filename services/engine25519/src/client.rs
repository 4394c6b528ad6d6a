//! Client library: `Engine25519` talks to the engine25519 server over Xous IPC.

use std::sync::{Arc, Mutex};

use num_traits::ToPrimitive;
use xous::{MemorySize, CID};
use xous_ipc::Buffer;

use crate::api::{self, archive_fits, BackendId, Opcode, StatsMsg, Status, X25519Msg, MAGIC};

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

pub(crate) struct Inner {
    pub(crate) conn: CID,
    /// reused one-page buffer for X25519 calls (a new Buffer per call costs ~30 us)
    xbuf: Mutex<Option<Buffer<'static>>>,
}

/// Handle to the engine25519 service. Cheap to clone; usable from several threads.
#[derive(Clone)]
pub struct Engine25519 {
    pub(crate) inner: Arc<Inner>,
}

/// Send a lend_mut of `msg` in `buf` and decode the reply of the same type.
pub(crate) fn lend_mut_typed<T>(conn: CID, buf: &mut Buffer<'static>, opcode: Opcode) -> Result<T, Error>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let len = buf.len();
    let r = buf.lend_mut(conn, opcode.to_u32().unwrap())?;
    match r {
        xous::Result::MemoryReturned(offset, valid) => {
            if offset.is_none() {
                if let Some(v) = valid {
                    if v.get() < len && v.get() < 0x100 {
                        // the server could not write a reply archive: the status is in `valid`
                        return Err(match Status::from_u32(v.get() as u32) {
                            Some(s) => Error::Service(s),
                            None => Error::Protocol("unknown status code"),
                        });
                    }
                }
            }
            let pos = offset.map(|o| o.get()).unwrap_or(0);
            if !archive_fits::<T>(len, pos) {
                return Err(Error::Protocol("reply archive out of range"));
            }
            buf.to_original::<T, _>().map_err(|_| Error::Protocol("reply archive"))
        }
        _ => Err(Error::Protocol("unexpected reply kind")),
    }
}

impl Engine25519 {
    /// Connect to the service (blocks until the server has registered its name).
    pub fn new() -> Result<Self, Error> {
        let xns = xous_api_names::XousNames::new()?;
        let conn = xns.request_connection_blocking(api::SERVER_NAME)?;
        Ok(Engine25519 { inner: Arc::new(Inner { conn, xbuf: Mutex::new(None) }) })
    }

    /// The connection id (for tests that want to send raw messages to the server).
    pub fn conn(&self) -> CID {
        self.inner.conn
    }

    /// Protocol version and the backend the server was started with.
    pub fn version(&self) -> Result<Version, Error> {
        let r = xous::send_message(
            self.inner.conn,
            xous::Message::new_blocking_scalar(Opcode::Version as usize, 0, 0, 0, 0),
        )?;
        match r {
            xous::Result::Scalar2(status, v) => {
                status_result(status as u32)?;
                Ok(Version { api: (v >> 16) as u32, backend: BackendId::from_u32((v & 0xFFFF) as u32) })
            }
            _ => Err(Error::Protocol("unexpected reply kind")),
        }
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
        let msg = X25519Msg::new(*scalar, *u);
        let buf = match guard.as_mut() {
            Some(b) => {
                b.rewrite(msg).map_err(|_| Error::Protocol("serialize"))?;
                b
            }
            None => {
                *guard = Some(Buffer::into_buf(msg).map_err(|_| Error::Protocol("serialize"))?);
                guard.as_mut().unwrap()
            }
        };
        let r: Result<X25519Msg, Error> = lend_mut_typed(self.inner.conn, buf, Opcode::X25519);
        // the page held our scalar: wipe it whatever happened
        buf.volatile_clear();
        let r = r?;
        status_result(r.status)?;
        Ok(X25519Reply { result: r.result, backend: BackendId::from_u32(r.backend), cycles: r.cycles, window: r.window })
    }
}

/// Details of one X25519 reply.
#[derive(Debug, Clone, Copy)]
pub struct X25519Reply {
    pub result: [u8; 32],
    pub backend: Option<BackendId>,
    pub cycles: u64,
    pub window: u32,
}

#[allow(dead_code)]
pub(crate) fn memsize(v: usize) -> Option<MemorySize> {
    MemorySize::new(v)
}
