//! Client side of the reply convention (docs/ipc.md): typed calls that send a request and
//! decode the reply, mapping error replies to [`CallError::Service`] with the server's code.

use xous::CID;
use xous_ipc::Buffer;

use crate::archive::archive_fits;

/// Why a call failed.
#[derive(Debug, PartialEq)]
pub enum CallError {
    /// the server answered with this (nonzero) error code: map it to the service's status type
    Service(u32),
    /// the Xous IPC layer failed
    Ipc(xous::Error),
    /// the reply was not understood (protocol mismatch)
    Protocol(&'static str),
}

impl core::fmt::Display for CallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CallError::Service(c) => write!(f, "server error code {}", c),
            CallError::Ipc(e) => write!(f, "IPC error {:?}", e),
            CallError::Protocol(s) => write!(f, "protocol error: {}", s),
        }
    }
}
impl std::error::Error for CallError {}

impl From<xous::Error> for CallError {
    fn from(e: xous::Error) -> Self {
        CallError::Ipc(e)
    }
}

/// Interpret the reply of a lend or lend_mut: `Ok(valid)` on success (the `valid` the server
/// returned), `Err(Service(code))` for an error reply (`valid = None`, `offset = code`).
pub fn memory_reply(r: xous::Result) -> Result<(Option<usize>, usize), CallError> {
    match r {
        xous::Result::MemoryReturned(offset, Some(valid)) => Ok((offset.map(|o| o.get()), valid.get())),
        xous::Result::MemoryReturned(Some(code), None) => Err(CallError::Service(code.get() as u32)),
        xous::Result::MemoryReturned(None, None) => {
            Err(CallError::Protocol("memory returned without valid or error code"))
        }
        _ => Err(CallError::Protocol("unexpected reply kind")),
    }
}

/// Interpret the reply of a blocking scalar: `Scalar1(0)` -> `Ok((0, 0))`, `Scalar2(a, b)` ->
/// `Ok((a, b))`, `Scalar1(code != 0)` -> `Err(Service(code))`.
pub fn scalar_reply(r: xous::Result) -> Result<(usize, usize), CallError> {
    match r {
        xous::Result::Scalar1(0) => Ok((0, 0)),
        xous::Result::Scalar1(code) => Err(CallError::Service(code as u32)),
        xous::Result::Scalar2(a, b) => Ok((a, b)),
        _ => Err(CallError::Protocol("unexpected reply kind")),
    }
}

/// Blocking scalar call with the reply convention applied.
pub fn blocking_scalar(conn: CID, opcode: u32, args: [usize; 4]) -> Result<(usize, usize), CallError> {
    let r = xous::send_message(
        conn,
        xous::Message::new_blocking_scalar(opcode as usize, args[0], args[1], args[2], args[3]),
    )?;
    scalar_reply(r)
}

/// Lend `buf` (which holds a request archive) mutably and decode the reply archive of type `R`
/// the server wrote into it, after checking its bounds. Reuse one `Buffer` across calls to save
/// the page allocation; wipe it afterwards if it carried a secret.
pub fn lend_mut_in<R>(conn: CID, buf: &mut Buffer<'static>, opcode: u32) -> Result<R, CallError>
where
    R: rkyv::Archive,
    rkyv::Archived<R>: rkyv::Deserialize<R, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let len = buf.len();
    let r = buf.lend_mut(conn, opcode)?;
    let (pos, _) = memory_reply(r)?;
    if !archive_fits::<R>(len, pos.unwrap_or(0)) {
        return Err(CallError::Protocol("reply archive out of range"));
    }
    buf.to_original::<R, _>().map_err(|_| CallError::Protocol("reply archive"))
}

/// Bytes from the start of a page that a plain-data `T` archive written by `Buffer::into_buf`
/// / `rewrite` can occupy: rkyv 0.4 serializes from position 0, the root at most one alignment
/// step in.
pub fn archive_span<T: rkyv::Archive>() -> usize {
    core::mem::size_of::<rkyv::Archived<T>>() + core::mem::align_of::<rkyv::Archived<T>>()
}

/// [`lend_mut_in`] for a request and reply of one type `T` that may carry secrets (a private
/// scalar out, a shared secret back): afterwards, whatever happened, the bytes either archive
/// can occupy are wiped (the request's [`archive_span`], the reply's up to its end), not the
/// whole page: the rest of the page was never written.
pub fn lend_mut_wiping<T>(conn: CID, buf: &mut Buffer<'static>, opcode: u32) -> Result<T, CallError>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let len = buf.len();
    let r = buf.lend_mut(conn, opcode);
    let (out, reply_end) = match r {
        Err(e) => (Err(e.into()), 0),
        Ok(r) => match memory_reply(r) {
            Err(e) => (Err(e), 0),
            Ok((pos, _)) => {
                let pos = pos.unwrap_or(0);
                if !archive_fits::<T>(len, pos) {
                    (Err(CallError::Protocol("reply archive out of range")), 0)
                } else {
                    (
                        buf.to_original::<T, _>().map_err(|_| CallError::Protocol("reply archive")),
                        pos + core::mem::size_of::<rkyv::Archived<T>>(),
                    )
                }
            }
        },
    };
    let n = archive_span::<T>().max(reply_end).min(len);
    crate::wipe_bytes(&mut buf[..n]);
    out
}

/// Request/reply in one call: serialize `req` into a fresh page, lend it mutably and decode the
/// reply archive (same type). The page is wiped before it is freed.
pub fn call<T>(conn: CID, opcode: u32, req: T) -> Result<T, CallError>
where
    T: rkyv::Archive + rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<Buffer<'static>>>,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let mut buf = Buffer::into_buf(req).map_err(|_| CallError::Protocol("serialize"))?;
    let r = lend_mut_in::<T>(conn, &mut buf, opcode);
    crate::wipe_bytes(&mut buf);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_conventions_decode() {
        let m = |o: usize, v: usize| xous::Result::MemoryReturned(xous::MemorySize::new(o), xous::MemorySize::new(v));
        assert_eq!(memory_reply(m(0, 64)), Ok((None, 64)));
        assert_eq!(memory_reply(m(16, 4096)), Ok((Some(16), 4096)));
        assert_eq!(memory_reply(m(7, 0)), Err(CallError::Service(7)));
        assert!(matches!(memory_reply(m(0, 0)), Err(CallError::Protocol(_))));
        assert!(matches!(memory_reply(xous::Result::Scalar1(3)), Err(CallError::Protocol(_))));
        assert_eq!(scalar_reply(xous::Result::Scalar1(0)), Ok((0, 0)));
        assert_eq!(scalar_reply(xous::Result::Scalar1(13)), Err(CallError::Service(13)));
        assert_eq!(scalar_reply(xous::Result::Scalar2(0, 5)), Ok((0, 5)));
        assert!(matches!(scalar_reply(xous::Result::Ok), Err(CallError::Protocol(_))));
    }
}
