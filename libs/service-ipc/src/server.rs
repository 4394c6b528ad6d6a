//! Server side of the reply convention (docs/ipc.md): every message a server receives gets
//! exactly one of these replies, whatever its kind.

use xous::{Message, MessageEnvelope};
use xous_ipc::Buffer;

use crate::archive::archive_fits;
use crate::ErrorCode;

/// The five Xous message kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Scalar,
    BlockingScalar,
    Lend,
    LendMut,
    Move,
}

impl Kind {
    pub fn of(m: &Message) -> Kind {
        match m {
            Message::Scalar(_) => Kind::Scalar,
            Message::BlockingScalar(_) => Kind::BlockingScalar,
            Message::Borrow(_) => Kind::Lend,
            Message::MutableBorrow(_) => Kind::LendMut,
            Message::Move(_) => Kind::Move,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Kind::Scalar => "scalar",
            Kind::BlockingScalar => "blocking scalar",
            Kind::Lend => "lend",
            Kind::LendMut => "lend_mut",
            Kind::Move => "move",
        }
    }
}

/// The sender's PID as a u32 (0 if the kernel gave none).
pub fn sender_pid(env: &MessageEnvelope) -> u32 {
    env.sender.pid().map(|p| p.get() as u32).unwrap_or(0)
}

/// The request archive of a lend_mut message, after its bounds check
/// ([`crate::archive::decode`]). `None`: another message kind, or an archive that does not fit
/// the lent buffer (answer with the service's bad-message code).
pub fn decode_request<T>(env: &MessageEnvelope) -> Option<T>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    match &env.body {
        Message::MutableBorrow(mem) => crate::archive::decode::<T>(mem),
        _ => None,
    }
}

/// Scalar arguments of a scalar or blocking-scalar message.
pub fn scalar_args(env: &MessageEnvelope) -> Option<[usize; 4]> {
    match &env.body {
        Message::Scalar(s) | Message::BlockingScalar(s) => Some([s.arg1, s.arg2, s.arg3, s.arg4]),
        _ => None,
    }
}

/// Wipe a lent-mutable page (it may hold a secret) with volatile writes.
pub fn wipe(mem: &mut xous::MemoryMessage) {
    // Safety: the lent range is mapped writable into this process until the reply.
    unsafe { crate::wipe_raw(mem.buf.as_mut_ptr(), mem.buf.len()) }
}

/// The error reply, for every message kind:
/// * blocking scalar: `Scalar1(code)`;
/// * lend_mut: the page is wiped and returned with `offset = code`, `valid = None`;
/// * lend: returned with `offset = code`, `valid = None`;
/// * scalar: nothing can be answered (the caller counts it);
/// * move: the page is freed (dropping the envelope), nothing can be answered.
pub fn reply_error(mut env: MessageEnvelope, code: impl ErrorCode) {
    let code = code.code();
    debug_assert!(code != 0, "error replies carry a nonzero code");
    match &mut env.body {
        Message::BlockingScalar(_) => {
            let _ = xous::return_scalar(env.sender, code as usize);
        }
        Message::MutableBorrow(mem) => {
            wipe(mem);
            mem.offset = xous::MemoryAddress::new(code as usize);
            mem.valid = None;
            // dropping `env` returns the memory with this offset/valid
        }
        Message::Borrow(mem) => {
            mem.offset = xous::MemoryAddress::new(code as usize);
            mem.valid = None;
        }
        Message::Scalar(_) | Message::Move(_) => {
            log::debug!("error {} on a {} message: the sender cannot be answered", code, Kind::of(&env.body).name());
        }
    }
}

/// The reply to a known opcode sent as the wrong message kind: [`reply_error`] with the
/// service's bad-message code.
pub fn reply_bad_kind(env: MessageEnvelope, bad_message: impl ErrorCode) {
    log::debug!("opcode {} as a {} message: refused", env.body.id(), Kind::of(&env.body).name());
    reply_error(env, bad_message)
}

/// Success reply of a blocking scalar without payload: `Scalar1(0)`.
pub fn reply_ok(env: MessageEnvelope) {
    if let Message::BlockingScalar(_) = env.body {
        let _ = xous::return_scalar(env.sender, 0);
    }
}

/// Success reply of a blocking scalar with payload: `Scalar2(a, b)`.
pub fn reply_scalar2(env: MessageEnvelope, a: usize, b: usize) {
    if let Message::BlockingScalar(_) = env.body {
        let _ = xous::return_scalar2(env.sender, a, b);
    }
}

/// Write `msg` as the reply archive of a lend_mut (the page is wiped first: it may hold a
/// secret) and release the caller with `valid = Some(page length)`. A page too small for the
/// archive (or a message of another kind) gets [`reply_error`] with `bad_message` instead.
pub fn reply_archive<T>(mut env: MessageEnvelope, msg: T, bad_message: impl ErrorCode)
where
    T: for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
    T: rkyv::Archive,
{
    if let Message::MutableBorrow(mem) = &mut env.body {
        // the archive is written at position 0 (rkyv 0.4 would panic past the end)
        if archive_fits::<T>(mem.buf.len(), 0) {
            wipe(mem);
            let mut buf = unsafe { Buffer::from_memory_message_mut(mem) };
            let _ = buf.replace(msg);
            drop(buf);
            mem.valid = xous::MemorySize::new(mem.buf.len());
            return; // dropping `env` returns the memory with the new offset
        }
    }
    reply_error(env, bad_message)
}

/// [`reply_archive`] for a request and reply of the same plain-data type `T` (e.g. the engine's
/// X25519): instead of the whole page, only the bytes the request's archive can occupy are
/// wiped ([0, its position + T's size): rkyv 0.4 writes a plain-data archive from the start of
/// the buffer, and the server read nothing else), then the reply goes over them.
pub fn reply_archive_in_place<T>(env: MessageEnvelope, msg: T, bad_message: impl ErrorCode)
where
    T: for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
    T: rkyv::Archive,
{
    drop(prepare_archive_in_place(env, msg, bad_message)); // dropping the envelope replies
}

/// Sends a reply made ready by [`prepare_archive_in_place`] and says whether it reached its
/// sender. Dropping an envelope whose memory cannot go back (its sender is gone) panics, so a
/// server that keeps requests for a long time sends them this way and keeps what it could not
/// deliver. A message that carries no memory is answered by dropping it, as usual.
pub fn send_prepared(env: MessageEnvelope) -> Result<(), xous::Error> {
    let sender = env.sender;
    let r = match &env.body {
        Message::MutableBorrow(m) => xous::return_memory_offset_valid(sender, m.buf, m.offset, m.valid),
        _ => {
            drop(env);
            return Ok(());
        }
    };
    core::mem::forget(env); // its memory went back above (or cannot go back at all)
    r
}

/// [`reply_archive_in_place`] without sending: the envelope comes back ready (the archive
/// written, `offset` and `valid` set), for the caller to send by dropping it or with its next
/// receive (`xous::reply_and_receive_next`: one syscall for both). A page too small for the
/// archive (or a message of another kind) is answered with the error at once: `None`.
pub fn prepare_archive_in_place<T>(
    mut env: MessageEnvelope,
    msg: T,
    bad_message: impl ErrorCode,
) -> Option<MessageEnvelope>
where
    T: for<'b> rkyv::Serialize<rkyv::ser::serializers::BufferSerializer<&'b mut [u8]>>,
    T: rkyv::Archive,
{
    if let Message::MutableBorrow(mem) = &mut env.body {
        let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
        if archive_fits::<T>(mem.buf.len(), 0) && archive_fits::<T>(mem.buf.len(), pos) {
            let n = pos + core::mem::size_of::<rkyv::Archived<T>>();
            // Safety: n <= the lent length (archive_fits), mapped writable until the reply.
            unsafe { crate::wipe_raw(mem.buf.as_mut_ptr(), n) };
            let mut buf = unsafe { Buffer::from_memory_message_mut(mem) };
            let _ = buf.replace(msg);
            drop(buf);
            mem.valid = xous::MemorySize::new(mem.buf.len());
            return Some(env);
        }
    }
    reply_archive(env, msg, bad_message);
    None
}

/// Success reply of a raw lend / lend_mut: the memory goes back with `valid = Some(n)` (n = the
/// bytes produced, never 0) and no offset.
pub fn reply_bytes(mut env: MessageEnvelope, n: usize) {
    if let Message::MutableBorrow(mem) | Message::Borrow(mem) = &mut env.body {
        mem.offset = None;
        mem.valid = xous::MemorySize::new(n);
    }
}
