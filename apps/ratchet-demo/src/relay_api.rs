//! The relay server's IPC interface: name, opcodes, status codes and rkyv message types.
//!
//! The relay is the chat's network: mailboxes keyed by a party number (1 = Alice, 2 = Bob, ...),
//! a prekey-bundle directory, and fault injection (drop, reorder, duplicate, corrupt) that
//! simulates a bad network. It only ever sees ciphertext and public prekey bundles.
//!
//! | opcode | kind | request | reply |
//! |---|---|---|---|
//! | Send | lend_mut [`Frame`] | from, to, len, data | the same frame (status in the convention) |
//! | Recv | lend_mut [`Frame`] | `to` = my mailbox | next frame for me, `len = 0` if none |
//! | RecvWait | lend_mut [`Frame`] | `to` = my mailbox | next frame for me, as soon as there is one (the relay keeps the request until then); `len = 0` if a later RecvWait for the same mailbox took its place |
//! | PutBundle | lend_mut [`Frame`] | `from` = owner, data = bundle | the same frame |
//! | GetBundle | lend_mut [`Frame`] | `to` = whose | frame with the bundle (`NoBundle` if none) |
//! | SetFaults | blocking scalar | drop, reorder, duplicate, corrupt in percent (0..=100) | `Scalar1(0)` |
//! | Stats | lend_mut [`RelayStats`] | magic | counters |
//! | Wake | scalar | - | none: the relay's own timer (a held-back frame's release time while a RecvWait waits) |
//!
//! Errors follow docs/ipc.md (service-ipc): a blocking scalar gets `Scalar1(code)`, a lend_mut
//! comes back with `offset = code`, `valid = None`.

use num_derive::{FromPrimitive, ToPrimitive};
use rkyv::{Archive, Deserialize, Serialize};

/// Name the relay registers with xous-names.
pub const SERVER_NAME: &str = "_Chat relay_";
/// Archive magic of every relay message ("CHR1").
pub const MAGIC: u32 = 0x4348_5231;
/// Largest payload of one frame (a chat message: the ratchet's PQXDH prekey message of the
/// longest text, 2,304 bytes with its tag, fits; a PQXDH bundle is 1,798 bytes). The whole
/// frame (16 + 3,072 bytes) travels in one 4 KiB page.
pub const FRAME_DATA: usize = 3072;
/// Most frames waiting in one mailbox; a sender gets `Full` beyond it and retries later.
pub const MAX_QUEUE: usize = 1024;
/// Highest mailbox number.
pub const MAX_MAILBOX: u32 = 64;

#[derive(Debug, Copy, Clone, PartialEq, Eq, FromPrimitive, ToPrimitive)]
#[repr(u32)]
pub enum Opcode {
    Send = 1,
    Recv = 2,
    PutBundle = 3,
    GetBundle = 4,
    SetFaults = 5,
    Stats = 6,
    RecvWait = 7,
    Wake = 8,
}

impl Opcode {
    pub fn from_usize(v: usize) -> Option<Opcode> {
        num_traits::FromPrimitive::from_usize(v)
    }
}

/// Status codes (0 = ok; nonzero ones travel in error replies).
#[derive(Debug, Copy, Clone, PartialEq, Eq, FromPrimitive, ToPrimitive)]
#[repr(u32)]
pub enum Status {
    Ok = 0,
    /// malformed request: archive out of bounds, wrong magic, wrong message kind
    BadMessage = 1,
    UnknownOpcode = 2,
    /// `len` larger than [`FRAME_DATA`] or zero
    BadLength = 3,
    /// mailbox number 0 or above [`MAX_MAILBOX`]
    BadMailbox = 4,
    /// the recipient's mailbox holds [`MAX_QUEUE`] frames
    Full = 5,
    /// no bundle registered for that mailbox
    NoBundle = 6,
    /// a fault percentage above 100
    BadValue = 7,
}

impl Status {
    pub fn from_u32(v: u32) -> Option<Status> {
        num_traits::FromPrimitive::from_u32(v)
    }
    pub fn describe(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::BadMessage => "malformed request",
            Status::UnknownOpcode => "unknown opcode",
            Status::BadLength => "frame length out of range",
            Status::BadMailbox => "no such mailbox",
            Status::Full => "recipient's mailbox is full",
            Status::NoBundle => "no prekey bundle registered",
            Status::BadValue => "fault percentage above 100",
        }
    }
}

impl service_ipc::ErrorCode for Status {
    fn code(self) -> u32 {
        self as u32
    }
}

/// One frame: a message between parties, or a prekey bundle. Its archived form
/// (`ArchivedFrame`, from the derive) is what lies in a lent page.
///
/// Both sides read and write it in place, in the lent page ([`frame_at`], [`frame_at_mut`]): a
/// frame is a 4 KiB page, but only its `len` bytes of payload are ever copied (the rest of
/// `data` is whatever the page held before, never read). The archive is rkyv's (this
/// struct's archived form at the request's position), so a client may also send one built
/// with `Buffer::into_buf`.
#[derive(Archive, Serialize, Deserialize, Clone, Copy)]
pub struct Frame {
    pub magic: u32,
    pub from: u32,
    pub to: u32,
    pub len: u32,
    pub data: [u8; FRAME_DATA],
}

impl Frame {
    pub fn new(from: u32, to: u32, data: &[u8]) -> Option<Frame> {
        if data.len() > FRAME_DATA {
            return None;
        }
        let mut f = Frame { magic: MAGIC, from, to, len: data.len() as u32, data: [0; FRAME_DATA] };
        f.data[..data.len()].copy_from_slice(data);
        Some(f)
    }
    /// The payload, if `len` is in range.
    pub fn payload(&self) -> Option<&[u8]> {
        self.data.get(..self.len as usize)
    }
}

/// The frame archived at byte `pos` of `page`, read in place: None if it does not fit the page
/// or is misaligned there.
pub fn frame_at(page: &[u8], pos: usize) -> Option<&ArchivedFrame> {
    let fits = service_ipc::archive::archive_fits::<Frame>(page.len(), pos)
        && (page.as_ptr() as usize + pos) % core::mem::align_of::<ArchivedFrame>() == 0;
    // Safety: the archived frame lies inside `page` and is aligned (checked); it holds only
    // integers and bytes, so any bytes are a valid value.
    fits.then(|| unsafe { &*(page.as_ptr().add(pos) as *const ArchivedFrame) })
}

/// [`frame_at`] for writing a frame in place.
pub fn frame_at_mut(page: &mut [u8], pos: usize) -> Option<&mut ArchivedFrame> {
    let fits = service_ipc::archive::archive_fits::<Frame>(page.len(), pos)
        && (page.as_ptr() as usize + pos) % core::mem::align_of::<ArchivedFrame>() == 0;
    // Safety: as in frame_at, and `page` is borrowed mutably.
    fits.then(|| unsafe { &mut *(page.as_mut_ptr().add(pos) as *mut ArchivedFrame) })
}

impl ArchivedFrame {
    /// The payload, if `len` is in range.
    pub fn payload(&self) -> Option<&[u8]> {
        self.data.get(..self.len as usize)
    }

    /// Writes a whole frame here: the header and `data`'s bytes, nothing else (false, and
    /// nothing written, if `data` is longer than a frame).
    pub fn set(&mut self, from: u32, to: u32, data: &[u8]) -> bool {
        if data.len() > FRAME_DATA {
            return false;
        }
        self.magic = MAGIC;
        self.from = from;
        self.to = to;
        self.len = data.len() as u32;
        self.data[..data.len()].copy_from_slice(data);
        true
    }
}

/// Fault injection settings, percent per frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    pub drop: u8,
    pub reorder: u8,
    pub duplicate: u8,
    pub corrupt: u8,
}

impl Faults {
    pub fn to_args(self) -> [usize; 4] {
        [self.drop as usize, self.reorder as usize, self.duplicate as usize, self.corrupt as usize]
    }
    pub fn from_args(a: [usize; 4]) -> Result<Faults, Status> {
        if a.iter().any(|&v| v > 100) {
            return Err(Status::BadValue);
        }
        Ok(Faults { drop: a[0] as u8, reorder: a[1] as u8, duplicate: a[2] as u8, corrupt: a[3] as u8 })
    }
    /// The `--faults drop,reorder,duplicate,corrupt` option (percentages), as the relay and the
    /// chat take it.
    pub fn parse_option(v: &str) -> Result<Faults, String> {
        let parts: Vec<&str> = v.split(',').collect();
        if parts.len() != 4 {
            return Err(format!("--faults wants drop,reorder,duplicate,corrupt percentages, got {v:?}"));
        }
        let mut a = [0usize; 4];
        for (i, p) in parts.iter().enumerate() {
            a[i] = p.trim().parse().map_err(|_| format!("--faults: not a number: {p:?}"))?;
        }
        Faults::from_args(a).map_err(|_| format!("--faults: percentages are 0..=100, got {v:?}"))
    }
}

#[cfg(test)]
mod fault_option_tests {
    use super::Faults;

    #[test]
    fn fault_option_is_checked() {
        assert_eq!(Faults::parse_option("10,20,30,40").unwrap().to_args(), [10, 20, 30, 40]);
        for bad in ["", "1,2,3", "1,2,3,4,5", "a,0,0,0", "0,0,0,101", "-1,0,0,0"] {
            assert!(Faults::parse_option(bad).is_err(), "{bad:?} accepted");
        }
    }
}

/// Relay counters.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayStats {
    pub magic: u32,
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub reordered: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub queued: u64,
    pub refused: u64,
    /// current settings, percent
    pub drop: u32,
    pub reorder: u32,
    pub duplicate: u32,
    pub corrupt: u32,
}
