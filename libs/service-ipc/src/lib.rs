//! service-ipc: the IPC layer shared by the engine25519 and trng Xous servers and their clients.
//!
//! One convention for every reply, documented once in docs/ipc.md:
//!
//! | message kind | success | error |
//! |---|---|---|
//! | blocking scalar | `Scalar1(0)` (no payload) or `Scalar2(a, b)` (payload) | `Scalar1(code)`, code != 0 |
//! | lend_mut | memory returned with `valid = Some(..)` (archive reply or bytes produced) | memory wiped, returned with `offset = code`, `valid = None` |
//! | lend | memory returned with `valid = Some(..)` | returned with `offset = code`, `valid = None` |
//! | scalar | nothing to answer | nothing to answer (counted, logged) |
//! | move | nothing to answer | the page is freed (counted, logged) |
//!
//! Error codes are each service's own status numbers (never 0). A request the server refuses
//! because of its kind (a known opcode sent as the wrong message kind) gets the same error reply
//! with the service's "bad message" code ([`server::reply_error`] handles every kind).
//!
//! Modules:
//! * [`archive`]: bounds check of rkyv 0.4 archives (rkyv 0.4 checks nothing) and decoding;
//! * [`server`]: error and archive replies for every message kind;
//! * [`client`]: typed calls (rkyv request/reply in one call, blocking scalars, raw lends);
//! * [`options`]: the `--flag value` / environment-variable option parser both servers use;
//! * [`control`]: privileged control servers with a fixed connection count (docs/security.md);
//! * `suspend` (device only): registration with xous-susres and its suspend-event thread.

pub mod archive;
pub mod client;
pub mod control;
pub mod options;
pub mod server;
#[cfg(target_os = "xous")]
pub mod suspend;

/// Zero `len` bytes at `p` with volatile writes (the compiler may not drop them: the bytes may
/// have held a secret), a 32-bit word at a time where `p` is word-aligned (lent pages are): a
/// 4 KiB page in 1,024 stores instead of 4,096. Both sides of a lend that may carry a secret
/// wipe the page with this.
///
/// # Safety
/// `p..p + len` must be writable memory this thread may write.
pub unsafe fn wipe_raw(p: *mut u8, len: usize) {
    let mut i = 0;
    while i < len && !(p as usize + i).is_multiple_of(4) {
        p.add(i).write_volatile(0);
        i += 1;
    }
    while i + 4 <= len {
        (p.add(i) as *mut u32).write_volatile(0);
        i += 4;
    }
    while i < len {
        p.add(i).write_volatile(0);
        i += 1;
    }
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// Zero a buffer with volatile writes ([`wipe_raw`]).
pub fn wipe_bytes(b: &mut [u8]) {
    // Safety: the slice is writable memory of exactly this length.
    unsafe { wipe_raw(b.as_mut_ptr(), b.len()) }
}

#[cfg(test)]
mod wipe_tests {
    #[test]
    fn every_byte_is_zeroed_whatever_the_alignment_and_length() {
        let mut backing = [0xa5u8; 64];
        for start in 0..4 {
            for len in [0, 1, 3, 4, 5, 8, 31, 57] {
                backing.fill(0xa5);
                super::wipe_bytes(&mut backing[start..start + len]);
                assert!(backing[start..start + len].iter().all(|&b| b == 0), "start {start} len {len}");
                assert!(
                    backing[..start].iter().chain(&backing[start + len..]).all(|&b| b == 0xa5),
                    "outside start {start} len {len}"
                );
            }
        }
    }
}

/// A service status code that can travel in an error reply (never 0: 0 means success).
pub trait ErrorCode: Copy {
    fn code(self) -> u32;
}
