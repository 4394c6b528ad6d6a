//! Client of the relay server (blocking calls: use it from a network thread, never the UI's).

use crate::relay_api::{frame_at, frame_at_mut, ArchivedFrame, Faults, Opcode, RelayStats, Status, MAGIC, SERVER_NAME};
use service_ipc::client::{memory_reply, CallError};

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

/// A connection to the relay and its one page: each call writes its frame into the page in
/// place, lends it, and reads the reply frame in place (only a frame's payload bytes are ever
/// copied, not the page's 3 KiB of frame).
pub struct Relay {
    conn: xous::CID,
    page: xous::MemoryRange,
}

/// The page a relay call lends.
const PAGE: usize = 4096;

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = xous::unmap_memory(self.page);
    }
}

impl Relay {
    /// Connects (blocks until the relay has registered its name).
    pub fn new() -> Result<Relay, RelayError> {
        let xns = xous_api_names::XousNames::new().map_err(|e| RelayError::Ipc(format!("{e:?}")))?;
        let conn = xns.request_connection_blocking(SERVER_NAME).map_err(|e| RelayError::Ipc(format!("{e:?}")))?;
        let page = xous::map_memory(None, None, PAGE, xous::MemoryFlags::R | xous::MemoryFlags::W)
            .map_err(|e| RelayError::Ipc(format!("page: {e:?}")))?;
        Ok(Relay { conn, page })
    }

    pub fn conn(&self) -> xous::CID {
        self.conn
    }

    /// Writes the frame (from, to, data) at the start of the page, lends the page as `op` and
    /// returns the reply frame, read in place where the relay put it.
    fn frame_call(&mut self, op: Opcode, from: u32, to: u32, data: &[u8]) -> Result<&ArchivedFrame, RelayError> {
        // the page is mapped readable and writable for this Relay's life
        let page = self.page.as_slice_mut::<u8>();
        let f = frame_at_mut(page, 0).expect("a page holds a frame");
        if !f.set(from, to, data) {
            return Err(RelayError::Status(Status::BadLength));
        }
        let r = xous::send_message(
            self.conn,
            xous::Message::new_lend_mut(op as usize, self.page, None, xous::MemorySize::new(PAGE)),
        );
        let (pos, _) = memory_reply(r.map_err(CallError::Ipc)?)?;
        let page = self.page.as_slice::<u8>();
        frame_at(page, pos.unwrap_or(0)).ok_or(RelayError::Ipc("reply archive out of range".into()))
    }

    pub fn send(&mut self, from: u32, to: u32, data: &[u8]) -> Result<(), RelayError> {
        self.frame_call(Opcode::Send, from, to, data).map(|_| ())
    }

    /// The payload of a reply frame, copied out; None for an empty one.
    fn reply(f: &ArchivedFrame) -> Result<Option<(u32, Vec<u8>)>, RelayError> {
        if f.len == 0 {
            return Ok(None);
        }
        let p = f.payload().ok_or(RelayError::Ipc("reply length out of range".into()))?;
        Ok(Some((f.from, p.to_vec())))
    }

    /// The next frame for mailbox `me`: (from, payload), or None.
    pub fn recv(&mut self, me: u32) -> Result<Option<(u32, Vec<u8>)>, RelayError> {
        let f = self.frame_call(Opcode::Recv, 0, me, &[])?;
        Self::reply(f)
    }

    /// The next frame for mailbox `me`, waiting for it as long as it takes (the relay answers
    /// when one comes: nobody polls); None when a later wait for the same mailbox took this
    /// one's place. Blocks the calling thread: give it a thread of its own.
    pub fn recv_wait(&mut self, me: u32) -> Result<Option<(u32, Vec<u8>)>, RelayError> {
        let f = self.frame_call(Opcode::RecvWait, 0, me, &[])?;
        Self::reply(f)
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
        self.frame_call(Opcode::PutBundle, owner, owner, bundle).map(|_| ())
    }

    pub fn get_bundle(&mut self, owner: u32) -> Result<Vec<u8>, RelayError> {
        let f = self.frame_call(Opcode::GetBundle, 0, owner, &[])?;
        f.payload().map(|p| p.to_vec()).ok_or(RelayError::Ipc("reply length out of range".into()))
    }

    pub fn set_faults(&self, f: Faults) -> Result<(), RelayError> {
        service_ipc::client::blocking_scalar(self.conn, Opcode::SetFaults as u32, f.to_args())?;
        Ok(())
    }

    pub fn stats(&self) -> Result<RelayStats, RelayError> {
        Ok(service_ipc::client::call(
            self.conn,
            Opcode::Stats as u32,
            RelayStats { magic: MAGIC, ..Default::default() },
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::{drain_with, DrainEnd};

    /// A mailbox of `frames`, failing with `fail` once they are taken (if set).
    fn mailbox(
        frames: &[u32],
        fail: Option<&'static str>,
    ) -> impl FnMut() -> Result<Option<(u32, Vec<u8>)>, &'static str> {
        let mut q: std::collections::VecDeque<u32> = frames.iter().copied().collect();
        move || match q.pop_front() {
            Some(f) => Ok(Some((f, vec![f as u8]))),
            None => fail.map_or(Ok(None), Err),
        }
    }

    #[test]
    fn a_drain_hands_on_every_frame_in_order_and_says_how_it_ended() {
        let mut got = Vec::new();
        assert_eq!(
            drain_with(mailbox(&[3, 1, 2], None), |f, d| {
                got.push((f, d));
                true
            }),
            (3, DrainEnd::Empty)
        );
        assert_eq!(got, vec![(3, vec![3]), (1, vec![1]), (2, vec![2])]);
        assert_eq!(drain_with(mailbox(&[], None), |_, _| true), (0, DrainEnd::Empty));
        // the relay failing after two frames: both handed on, then the error
        assert_eq!(drain_with(mailbox(&[5, 6], Some("gone")), |_, _| true), (2, DrainEnd::Failed("gone")));
        // the taker refusing the second frame: the drain stops there, the third stays queued
        let mut q = mailbox(&[7, 8, 9], None);
        let mut seen = 0;
        assert_eq!(
            drain_with(&mut q, |_, _| {
                seen += 1;
                seen < 2
            }),
            (1, DrainEnd::Refused)
        );
        assert_eq!(q(), Ok(Some((9, vec![9]))));
    }
}
