//! rkyv 0.4 archives in lent pages. rkyv 0.4 does no bounds or alignment checks of its own: the
//! archive position (`offset` of the memory message) and the archived size must be checked
//! against the lent buffer before `Buffer::to_original` touches it. Messages are plain-data
//! structs (integers and arrays only), so any bytes inside the bounds decode to some value and the
//! receiver then checks the field values.

use xous_ipc::Buffer;

/// True if an archived `T` at byte position `pos` lies inside a buffer of `buf_len` bytes and is
/// aligned for its type.
pub fn archive_fits<T: rkyv::Archive>(buf_len: usize, pos: usize) -> bool {
    let size = core::mem::size_of::<rkyv::Archived<T>>();
    let align = core::mem::align_of::<rkyv::Archived<T>>();
    pos.is_multiple_of(align) && pos.checked_add(size).map(|end| end <= buf_len).unwrap_or(false)
}

/// Decode the archive a client lent in `mem` (position = `mem.offset`, 0 if None) after checking
/// its bounds. `None`: the archive does not fit the buffer (answer with the bad-message code).
pub fn decode<T>(mem: &xous::MemoryMessage) -> Option<T>
where
    T: rkyv::Archive,
    rkyv::Archived<T>: rkyv::Deserialize<T, dyn rkyv::Fallible<Error = xous_ipc::XousUnreachable>>,
{
    let pos = mem.offset.map(|o| o.get()).unwrap_or(0);
    if !archive_fits::<T>(mem.buf.len(), pos) {
        return None;
    }
    let buf = unsafe { Buffer::from_memory_message(mem) };
    buf.to_original::<T, _>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkyv::{Archive, Deserialize, Serialize};

    #[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy)]
    struct Msg {
        a: u32,
        b: u64,
        c: [u8; 32],
    }

    #[test]
    fn bounds_and_alignment() {
        let size = core::mem::size_of::<rkyv::Archived<Msg>>();
        let align = core::mem::align_of::<rkyv::Archived<Msg>>();
        assert!(archive_fits::<Msg>(4096, 0));
        assert!(archive_fits::<Msg>(size, 0));
        assert!(!archive_fits::<Msg>(size - 1, 0), "one byte short");
        assert!(archive_fits::<Msg>(4096, 4096 - size - (4096 - size) % align));
        assert!(!archive_fits::<Msg>(4096, 4096 - size + align), "runs past the end");
        assert!(!archive_fits::<Msg>(4096, align + 1), "misaligned");
        assert!(!archive_fits::<Msg>(4096, usize::MAX - 7), "position overflow");
        assert!(!archive_fits::<Msg>(0, 0));
    }
}
