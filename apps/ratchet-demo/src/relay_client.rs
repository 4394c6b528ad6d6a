//! Client of the relay server (blocking calls: use it from a network thread, never the UI's).

use xous_ipc::Buffer;

use crate::relay_api::{Faults, Frame, Opcode, RelayStats, Status, MAGIC, SERVER_NAME};
use service_ipc::client::CallError;

#[derive(Debug, Clone, PartialEq)]
pub enum RelayError {
    Status(Status),
    Ipc(String),
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayError::Status(s) => write!(f, "relay: {}", s.describe()),
            RelayError::Ipc(e) => write!(f, "relay IPC: {e}"),
        }
    }
}

impl From<CallError> for RelayError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Service(c) => match Status::from_u32(c) {
                Some(s) => RelayError::Status(s),
                None => RelayError::Ipc(format!("unknown status {c}")),
            },
            other => RelayError::Ipc(other.to_string()),
        }
    }
}

pub struct Relay {
    conn: xous::CID,
    buf: Buffer<'static>,
}

impl Relay {
    /// Connects (blocks until the relay has registered its name).
    pub fn new() -> Result<Relay, RelayError> {
        let xns = xous_api_names::XousNames::new().map_err(|e| RelayError::Ipc(format!("{e:?}")))?;
        let conn = xns.request_connection_blocking(SERVER_NAME).map_err(|e| RelayError::Ipc(format!("{e:?}")))?;
        let buf = Buffer::into_buf(Frame::new(0, 0, &[]).unwrap()).map_err(|_| RelayError::Ipc("buffer".into()))?;
        Ok(Relay { conn, buf })
    }

    pub fn conn(&self) -> xous::CID {
        self.conn
    }

    fn frame_call(&mut self, op: Opcode, f: Frame) -> Result<Frame, RelayError> {
        self.buf.rewrite(f).map_err(|_| RelayError::Ipc("serialize".into()))?;
        let r = service_ipc::client::lend_mut_in::<Frame>(self.conn, &mut self.buf, op as u32);
        Ok(r?)
    }

    pub fn send(&mut self, from: u32, to: u32, data: &[u8]) -> Result<(), RelayError> {
        let f = Frame::new(from, to, data).ok_or(RelayError::Status(Status::BadLength))?;
        self.frame_call(Opcode::Send, f).map(|_| ())
    }

    /// The next frame for mailbox `me`: (from, payload), or None.
    pub fn recv(&mut self, me: u32) -> Result<Option<(u32, Vec<u8>)>, RelayError> {
        let f = self.frame_call(Opcode::Recv, Frame::new(0, me, &[]).unwrap())?;
        if f.len == 0 {
            return Ok(None);
        }
        let p = f.payload().ok_or(RelayError::Ipc("reply length out of range".into()))?;
        Ok(Some((f.from, p.to_vec())))
    }

    pub fn put_bundle(&mut self, owner: u32, bundle: &[u8]) -> Result<(), RelayError> {
        let f = Frame::new(owner, owner, bundle).ok_or(RelayError::Status(Status::BadLength))?;
        self.frame_call(Opcode::PutBundle, f).map(|_| ())
    }

    pub fn get_bundle(&mut self, owner: u32) -> Result<Vec<u8>, RelayError> {
        let f = self.frame_call(Opcode::GetBundle, Frame::new(0, owner, &[]).unwrap())?;
        f.payload().map(|p| p.to_vec()).ok_or(RelayError::Ipc("reply length out of range".into()))
    }

    pub fn set_faults(&self, f: Faults) -> Result<(), RelayError> {
        service_ipc::client::blocking_scalar(self.conn, Opcode::SetFaults as u32, f.to_args())?;
        Ok(())
    }

    pub fn stats(&self) -> Result<RelayStats, RelayError> {
        Ok(service_ipc::client::call(self.conn, Opcode::Stats as u32, RelayStats { magic: MAGIC, ..Default::default() })?)
    }
}
