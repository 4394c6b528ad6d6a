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

/// How a drain of a mailbox ([`Relay::drain`]) ended.
#[derive(Debug, PartialEq)]
pub enum DrainEnd<E> {
    /// The mailbox is empty.
    Empty,
    /// The taker refused a frame (whoever takes the frames is gone): stop taking them.
    Refused,
    /// The relay failed; the frames before it were handed on.
    Failed(E),
}

/// Hands every frame `recv` yields to `take`, in order, until `recv` says there is none left,
/// `take` refuses one (returns false) or `recv` fails. Returns how many frames `take`
/// accepted and how the drain ended. The one drain loop of Alice (hosted and on the device)
/// and of Bob.
pub fn drain_with<E>(
    mut recv: impl FnMut() -> Result<Option<(u32, Vec<u8>)>, E>,
    mut take: impl FnMut(u32, Vec<u8>) -> bool,
) -> (usize, DrainEnd<E>) {
    let mut n = 0;
    loop {
        match recv() {
            Ok(Some((from, data))) => {
                if !take(from, data) {
                    return (n, DrainEnd::Refused);
                }
                n += 1;
            }
            Ok(None) => return (n, DrainEnd::Empty),
            Err(e) => return (n, DrainEnd::Failed(e)),
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

    /// The next frame for mailbox `me`, waiting for it as long as it takes (the relay answers
    /// when one comes: nobody polls); None when a later wait for the same mailbox took this
    /// one's place. Blocks the calling thread: give it a thread of its own.
    pub fn recv_wait(&mut self, me: u32) -> Result<Option<(u32, Vec<u8>)>, RelayError> {
        let f = self.frame_call(Opcode::RecvWait, Frame::new(0, me, &[]).unwrap())?;
        if f.len == 0 {
            return Ok(None);
        }
        let p = f.payload().ok_or(RelayError::Ipc("reply length out of range".into()))?;
        Ok(Some((f.from, p.to_vec())))
    }

    /// A thread of its own (named `name`) that waits on the relay for mailbox `me`'s frames
    /// ([`Relay::recv_wait`]: nobody polls) and hands each, or each error, to `deliver`; it ends
    /// when `deliver` returns false. After an error it waits 500 ms before asking again (a relay
    /// that fails is not hammered).
    pub fn spawn_receiver<F>(mut self, me: u32, name: &str, mut deliver: F) -> std::io::Result<()>
    where
        F: FnMut(Result<(u32, Vec<u8>), RelayError>) -> bool + Send + 'static,
    {
        std::thread::Builder::new().name(name.into()).spawn(move || loop {
            match self.recv_wait(me) {
                Ok(Some(frame)) => {
                    if !deliver(Ok(frame)) {
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    if !deliver(Err(e)) {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(500));
                }
            }
        })?;
        Ok(())
    }

    /// Every frame waiting in mailbox `me`, in order, to `take` (see [`drain_with`]).
    pub fn drain(&mut self, me: u32, take: impl FnMut(u32, Vec<u8>) -> bool) -> (usize, DrainEnd<RelayError>) {
        drain_with(|| self.recv(me), take)
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

#[cfg(test)]
mod tests {
    use super::{drain_with, DrainEnd};

    /// A mailbox of `frames`, failing with `fail` once they are taken (if set).
    fn mailbox(frames: &[u32], fail: Option<&'static str>) -> impl FnMut() -> Result<Option<(u32, Vec<u8>)>, &'static str> {
        let mut q: std::collections::VecDeque<u32> = frames.iter().copied().collect();
        move || match q.pop_front() {
            Some(f) => Ok(Some((f, vec![f as u8]))),
            None => fail.map_or(Ok(None), Err),
        }
    }

    #[test]
    fn a_drain_hands_on_every_frame_in_order_and_says_how_it_ended() {
        let mut got = Vec::new();
        assert_eq!(drain_with(mailbox(&[3, 1, 2], None), |f, d| { got.push((f, d)); true }), (3, DrainEnd::Empty));
        assert_eq!(got, vec![(3, vec![3]), (1, vec![1]), (2, vec![2])]);
        assert_eq!(drain_with(mailbox(&[], None), |_, _| true), (0, DrainEnd::Empty));
        // the relay failing after two frames: both handed on, then the error
        assert_eq!(drain_with(mailbox(&[5, 6], Some("gone")), |_, _| true), (2, DrainEnd::Failed("gone")));
        // the taker refusing the second frame: the drain stops there, the third stays queued
        let mut q = mailbox(&[7, 8, 9], None);
        let mut seen = 0;
        assert_eq!(drain_with(&mut q, |_, _| { seen += 1; seen < 2 }), (1, DrainEnd::Refused));
        assert_eq!(q(), Ok(Some((9, vec![9]))));
    }
}
