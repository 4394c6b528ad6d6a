//! The tester's frames and the device transport's mailbox protocol (docs/trng-tester-protocol.md
//! sections 1 and 3.2), without the kernel: frame headers and buffer fills shared by the hosted
//! tester (tester.rs) and the device tester (tester_device.rs), and [`MailboxTester`], the device
//! side of the mailbox over any register file ([`Mailbox`]) and any two frame slots. Host unit
//! tests drive it against a simulated host.

// MailboxTester runs only in the device build with the `tester` feature (and in the tests);
// the hosted build uses the frame helpers only
#![cfg_attr(not(all(target_os = "xous", feature = "tester")), allow(dead_code))]

use std::sync::Mutex;

use trng::api::TrngError;
use trng_core::pipeline::RawMode;
use trng_core::spec::tester as T;

use crate::server::TrngServer;

pub const HEADER_BYTES: usize = T::FRAME_HEADER_BYTES;
/// One frame slot: header + a full payload.
pub const SLOT_BYTES: usize = T::FRAME_HEADER_BYTES + T::BUFFER_BYTES;
/// Buffers are filled in chunks so IPC clients are not blocked for a whole 512 KiB fill.
const FILL_CHUNK: usize = 64 * 1024;

/// The 32-byte frame header (section 1).
pub fn header(seq: u64, mode: u32, len: u32, crc: u32, status: u32) -> [u8; 32] {
    let mut h = [0u8; 32];
    h[0..8].copy_from_slice(T::FRAME_MAGIC.as_bytes());
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..20].copy_from_slice(&mode.to_le_bytes());
    h[20..24].copy_from_slice(&len.to_le_bytes());
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h[28..32].copy_from_slice(&status.to_le_bytes());
    h
}

/// The device's frame CRC: CRC-32/ISO-HDLC (zlib's `crc32`, what the tool and the hosted
/// tester's crc32fast compute), through the `crc` crate with one 256-entry table (1 KiB).
/// crc32fast's slice-by-16 tables (16 KiB) cost about 30 cycles per byte on the simulated
/// Precursor's VexRiscv, three quarters of a raw frame's device time
/// (docs/trng-tester-protocol.md section 5); one small table is cheaper there.
const FRAME_CRC: crc::Crc<u32, crc::Table<1>> = crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);

pub fn frame_crc(payload: &[u8]) -> u32 {
    FRAME_CRC.checksum(payload)
}

/// The raw mode of a frame mode number, `None` for conditioned output.
pub fn raw_mode(mode: u32) -> Result<Option<RawMode>, TrngError> {
    match mode as usize {
        T::modes::CPRNG => Ok(None),
        T::modes::AV => Ok(Some(RawMode::Av)),
        T::modes::RO => Ok(Some(RawMode::Ro)),
        T::modes::BOTH => Ok(Some(RawMode::Both)),
        _ => Err(TrngError::UnknownMode),
    }
}

/// Fill `buf` with output of `mode` through `TrngServer::tester_fill` (the same gating as every
/// other request), in chunks, the server locked per chunk. On any error the whole buffer is
/// zeroed: no raw or stale byte survives a failed fill. (The hosted tester's; the device
/// tester uses [`fill_until`].)
#[cfg_attr(target_os = "xous", allow(dead_code))]
pub fn fill(server: &Mutex<TrngServer>, mode: u32, buf: &mut [u8]) -> Result<(), TrngError> {
    fill_until(server, mode, buf, &mut || true).unwrap_or(Err(TrngError::Internal))
}

/// [`fill`], asking `keep()` before every chunk after the first whether the fill is still
/// wanted (the device tester: CONTROL unchanged). `None`: abandoned, the buffer zeroed.
pub fn fill_until(
    server: &Mutex<TrngServer>,
    mode: u32,
    buf: &mut [u8],
    keep: &mut dyn FnMut() -> bool,
) -> Option<Result<(), TrngError>> {
    let raw = match raw_mode(mode) {
        Ok(r) => r,
        Err(e) => {
            buf.fill(0);
            return Some(Err(e));
        }
    };
    for (i, chunk) in buf.chunks_mut(FILL_CHUNK).enumerate() {
        if i > 0 && !keep() {
            buf.fill(0);
            return None;
        }
        let r = match server.lock() {
            Ok(mut s) => s.tester_fill(raw, chunk),
            Err(_) => Err(TrngError::Internal),
        };
        if let Err(e) = r {
            buf.fill(0);
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}

/// Frame status of a fill result.
pub fn status_of(r: &Result<(), TrngError>) -> u32 {
    match r {
        Ok(()) => T::status::DATA as u32,
        Err(TrngError::HealthFailure) => T::status::HEALTH as u32,
        Err(_) => T::status::INTERNAL as u32,
    }
}

/// The mailbox registers (byte offsets of spec/trng.toml `[tester.mailbox]`).
pub trait Mailbox {
    fn read(&mut self, offset: usize) -> u32;
    fn write(&mut self, offset: usize, value: u32);
}

/// What one [`MailboxTester::step`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// CONTROL.run is 0: nothing filled.
    Idle,
    /// The next frame's slot still holds a frame the host has not acknowledged.
    WaitingForAck,
    /// Frame `seq` was filled and published (PHASE = seq) with this status.
    Published { seq: u64, status: u32 },
    /// CONTROL changed while a frame of `mode` was being filled (the host asked for another
    /// mode, or cleared run): the fill was abandoned, nothing published, seq unchanged.
    Abandoned { mode: u32 },
}

/// What a frame fill gets: the mode, the payload, and `keep()`, which says whether the frame is
/// still wanted (ask it between chunks); it returns `None` when it abandoned the frame.
pub type FillFn<'f> = dyn FnMut(u32, &mut [u8], &mut dyn FnMut() -> bool) -> Option<Result<(), TrngError>> + 'f;

/// The device side of section 3.2 over a mailbox and two frame slots (`slots[i]` at physical
/// address `phys[i]`, each at least [`SLOT_BYTES`]).
pub struct MailboxTester<'a, M: Mailbox> {
    mb: M,
    slots: [&'a mut [u8]; 2],
    /// seq of the newest published frame (0 = none)
    seq: u64,
}

impl<'a, M: Mailbox> MailboxTester<'a, M> {
    /// Set the mailbox up: BUF0/BUF1, PHASE = 0, then MAGIC (the host trusts the rest once
    /// MAGIC is there). The slots are zeroed first.
    pub fn new(mut mb: M, slots: [&'a mut [u8]; 2], phys: [u32; 2]) -> Self {
        assert!(slots.iter().all(|s| s.len() >= SLOT_BYTES), "a frame slot is smaller than {SLOT_BYTES} bytes");
        let mut slots = slots;
        for s in slots.iter_mut() {
            s.fill(0);
        }
        mb.write(T::mailbox::BUF0, phys[0]);
        mb.write(T::mailbox::BUF1, phys[1]);
        mb.write(T::mailbox::PHASE, 0);
        fence();
        mb.write(T::mailbox::MAGIC, T::mailbox::MAGIC_VALUE as u32);
        MailboxTester { mb, slots, seq: 0 }
    }

    /// One round: if the host asked for frames and the next slot is free (ACK >= P-1 for the
    /// next seq P+1), fill frame P+1 with `fill(mode, payload, keep)`, write its header,
    /// publish it. A failed fill publishes an error frame (len 0, crc 0, payload zeroed). `keep`
    /// re-reads CONTROL: once it differs from the value the fill started with, the frame is
    /// abandoned (payload zeroed, nothing published), so a new request does not wait for a
    /// whole frame of the old mode (a 512 KiB frame takes 0.13-0.5 s of device time on the
    /// simulated Precursor).
    pub fn step(&mut self, fill: &mut FillFn<'_>) -> Step {
        let ctl = self.mb.read(T::mailbox::CONTROL);
        if ctl & T::mailbox::RUN_BIT as u32 == 0 {
            return Step::Idle;
        }
        let next = self.seq + 1;
        let ack = self.mb.read(T::mailbox::ACK) as u64;
        // the slot of `next` last held next - 2: the host must be done with it
        if next >= 3 && ack < next - 2 {
            return Step::WaitingForAck;
        }
        let mode = ctl & 3;
        let slot = &mut self.slots[(next % 2) as usize];
        let (head, rest) = slot.split_at_mut(HEADER_BYTES);
        let payload = &mut rest[..T::BUFFER_BYTES];
        // the payload first, then the header, then PHASE: a published frame is complete
        let mb = &mut self.mb;
        let mut keep = || mb.read(T::mailbox::CONTROL) == ctl;
        let Some(r) = fill(mode, payload, &mut keep) else {
            payload.fill(0);
            return Step::Abandoned { mode };
        };
        let status = status_of(&r);
        let h = if r.is_ok() {
            header(next, mode, payload.len() as u32, frame_crc(payload), status)
        } else {
            payload.fill(0);
            header(next, mode, 0, 0, status)
        };
        head.copy_from_slice(&h);
        fence();
        self.mb.write(T::mailbox::PHASE, next as u32);
        self.seq = next;
        Step::Published { seq: next, status }
    }
}

/// Order the frame's memory writes before the PHASE write (VexRiscv's data cache is
/// write-through; this keeps the compiler and the CPU from reordering).
fn fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Registers + the host's view of the two slots, shared between the device side (through
    /// `Regs`) and the test (the host).
    #[derive(Default)]
    struct Regs(Rc<RefCell<[u32; 6]>>);
    impl Mailbox for Regs {
        fn read(&mut self, o: usize) -> u32 {
            self.0.borrow()[o / 4]
        }
        fn write(&mut self, o: usize, v: u32) {
            self.0.borrow_mut()[o / 4] = v;
        }
    }

    fn parse(slot: &[u8]) -> (u64, u32, u32, u32, u32) {
        assert_eq!(&slot[..8], T::FRAME_MAGIC.as_bytes());
        let u = |a: usize| u32::from_le_bytes(slot[a..a + 4].try_into().unwrap());
        (u64::from_le_bytes(slot[8..16].try_into().unwrap()), u(16), u(20), u(24), u(28))
    }

    fn counting(
        n: &mut u32,
    ) -> impl FnMut(u32, &mut [u8], &mut dyn FnMut() -> bool) -> Option<Result<(), TrngError>> + '_ {
        move |mode, out, _keep| {
            *n += 1;
            for (i, b) in out.iter_mut().enumerate() {
                *b = (i as u32).wrapping_mul(31).wrapping_add(*n * 7 + mode) as u8;
            }
            Some(Ok(()))
        }
    }

    /// A TRNG server on the software models (the hosted build's `model` feed).
    fn model_server() -> Mutex<TrngServer> {
        struct NoSubscribers;
        impl crate::server::Notifier for NoSubscribers {
            fn connect(&mut self, _sid: [u32; 4]) -> Option<u32> {
                None
            }
            fn notify(&mut self, _c: u32, _o: u32, _b: u32, _t: u32) -> crate::server::Delivery {
                crate::server::Delivery::Gone
            }
        }
        let be = crate::backend::SoftBackend::new(
            trng_core::pipeline::Feed::Models,
            None,
            trng::api::SOURCE_NONE,
            [7; 32],
            "model",
        );
        let mut s = TrngServer::new(Box::new(be), Box::new(NoSubscribers));
        s.startup().unwrap();
        Mutex::new(s)
    }

    #[test]
    fn fill_until_asks_between_chunks_and_zeroes_an_abandoned_buffer() {
        let srv = model_server();
        let mut buf = vec![0u8; 3 * FILL_CHUNK];
        let mut asked = 0;
        let r = fill_until(&srv, T::modes::AV as u32, &mut buf, &mut || {
            asked += 1;
            true
        });
        assert_eq!(r, Some(Ok(())));
        assert_eq!(asked, 2, "asked before the second and the third chunk, not before the first");
        assert!(buf.iter().any(|&b| b != 0));
        // abandoned before the third chunk: nothing of the first two stays
        let mut asked = 0;
        let r = fill_until(&srv, T::modes::RO as u32, &mut buf, &mut || {
            asked += 1;
            asked < 2
        });
        assert_eq!(r, None);
        assert!(buf.iter().all(|&b| b == 0), "an abandoned buffer is zeroed");
        // an unknown mode is refused before anything is asked or filled
        let r = fill_until(&srv, 7, &mut buf, &mut || panic!("not asked"));
        assert_eq!(r, Some(Err(TrngError::UnknownMode)));
        assert_eq!(fill(&srv, T::modes::CPRNG as u32, &mut buf), Ok(()));
    }

    #[test]
    fn a_control_change_during_a_fill_abandons_the_frame() {
        let regs = Rc::new(RefCell::new([0u32; 6]));
        let (mut a, mut b) = (vec![0u8; SLOT_BYTES], vec![0u8; SLOT_BYTES]);
        let mut t = MailboxTester::new(Regs(regs.clone()), [&mut a, &mut b], [1, 2]);
        let run = T::mailbox::RUN_BIT as u32;
        regs.borrow_mut()[T::mailbox::CONTROL / 4] = run | T::modes::AV as u32;
        // the host asks for RO while the AV frame is half filled
        let host = regs.clone();
        let mut switching = |mode: u32, out: &mut [u8], keep: &mut dyn FnMut() -> bool| {
            let (first, second) = out.split_at_mut(out.len() / 2);
            first.fill(0xA5);
            if mode == T::modes::AV as u32 {
                host.borrow_mut()[T::mailbox::CONTROL / 4] = run | T::modes::RO as u32;
            }
            if !keep() {
                out.fill(0);
                return None;
            }
            second.fill(mode as u8);
            Some(Ok(()))
        };
        assert_eq!(t.step(&mut switching), Step::Abandoned { mode: T::modes::AV as u32 });
        assert_eq!(regs.borrow()[T::mailbox::PHASE / 4], 0, "nothing published");
        assert_eq!(t.seq, 0, "seq unchanged");
        // the next round fills seq 1 with the new mode
        assert_eq!(t.step(&mut switching), Step::Published { seq: 1, status: 0 });
        // clearing run abandons too
        let host = regs.clone();
        let mut stopping = |_m: u32, out: &mut [u8], keep: &mut dyn FnMut() -> bool| {
            out.fill(0x5A);
            host.borrow_mut()[T::mailbox::CONTROL / 4] = 0;
            if keep() {
                Some(Ok(()))
            } else {
                None
            }
        };
        assert_eq!(t.step(&mut stopping), Step::Abandoned { mode: T::modes::RO as u32 });
        assert_eq!(t.step(&mut stopping), Step::Idle);
        assert_eq!(regs.borrow()[T::mailbox::PHASE / 4], 1);
        drop(t);
        let (seq, mode, len, crc, status) = parse(&b);
        assert_eq!((seq, mode, len as usize, status), (1, T::modes::RO as u32, T::BUFFER_BYTES, 0));
        assert_eq!(crc, crc32fast::hash(&b[HEADER_BYTES..SLOT_BYTES]));
        assert!(a.iter().all(|&x| x == 0), "the abandoned seq-2 frame left nothing in its slot");
    }

    #[test]
    fn setup_publishes_magic_and_slots() {
        let regs = Rc::new(RefCell::new([0u32; 6]));
        let (mut a, mut b) = (vec![0xAAu8; SLOT_BYTES], vec![0x55u8; SLOT_BYTES]);
        let t = MailboxTester::new(Regs(regs.clone()), [&mut a, &mut b], [0x4080_0000, 0x4090_1000]);
        let r = *regs.borrow();
        assert_eq!(r[T::mailbox::MAGIC / 4], T::mailbox::MAGIC_VALUE as u32);
        assert_eq!(
            (r[T::mailbox::BUF0 / 4], r[T::mailbox::BUF1 / 4], r[T::mailbox::PHASE / 4]),
            (0x4080_0000, 0x4090_1000, 0)
        );
        assert_eq!(t.seq, 0);
        drop(t);
        assert!(a.iter().chain(b.iter()).all(|&x| x == 0), "leftover slot contents are wiped");
    }

    #[test]
    fn protocol_in_order_with_acks_and_mode_changes() {
        let regs = Rc::new(RefCell::new([0u32; 6]));
        let (mut a, mut b) = (vec![0u8; SLOT_BYTES], vec![0u8; SLOT_BYTES]);
        let mut t = MailboxTester::new(Regs(regs.clone()), [&mut a, &mut b], [1, 2]);
        let mut n = 0;
        let mut f = counting(&mut n);
        assert_eq!(t.step(&mut f), Step::Idle, "nothing before run = 1");
        regs.borrow_mut()[T::mailbox::CONTROL / 4] = T::mailbox::RUN_BIT as u32 | T::modes::RO as u32;
        assert_eq!(t.step(&mut f), Step::Published { seq: 1, status: 0 });
        assert_eq!(t.step(&mut f), Step::Published { seq: 2, status: 0 }, "slot 0 was never used");
        assert_eq!(t.step(&mut f), Step::WaitingForAck, "seq 3 would overwrite seq 1, not acknowledged");
        assert_eq!(regs.borrow()[T::mailbox::PHASE / 4], 2);
        regs.borrow_mut()[T::mailbox::ACK / 4] = 1;
        // a mode change takes effect for the next frame filled
        regs.borrow_mut()[T::mailbox::CONTROL / 4] = T::mailbox::RUN_BIT as u32;
        assert_eq!(t.step(&mut f), Step::Published { seq: 3, status: 0 });
        assert_eq!(t.step(&mut f), Step::WaitingForAck);
        regs.borrow_mut()[T::mailbox::ACK / 4] = 3; // cumulative
        assert_eq!(t.step(&mut f), Step::Published { seq: 4, status: 0 });
        drop(f);
        drop(t);
        for (slot, want_seq, want_mode) in [(&b, 3u64, T::modes::CPRNG as u32), (&a, 4, T::modes::CPRNG as u32)] {
            let (seq, mode, len, crc, status) = parse(slot);
            assert_eq!((seq, mode, len as usize, status), (want_seq, want_mode, T::BUFFER_BYTES, 0));
            assert_eq!(crc, crc32fast::hash(&slot[HEADER_BYTES..SLOT_BYTES]));
        }
    }

    #[test]
    fn failed_fill_is_an_error_frame_without_bytes() {
        let regs = Rc::new(RefCell::new([0u32; 6]));
        let (mut a, mut b) = (vec![0u8; SLOT_BYTES], vec![0u8; SLOT_BYTES]);
        let mut t = MailboxTester::new(Regs(regs.clone()), [&mut a, &mut b], [1, 2]);
        regs.borrow_mut()[T::mailbox::CONTROL / 4] = T::mailbox::RUN_BIT as u32 | T::modes::AV as u32;
        // a fill that wrote raw bytes, then failed its health tests
        let mut bad = |_m: u32, out: &mut [u8], _k: &mut dyn FnMut() -> bool| {
            out[..1000].fill(0x5A);
            Some(Err(TrngError::HealthFailure))
        };
        assert_eq!(t.step(&mut bad), Step::Published { seq: 1, status: T::status::HEALTH as u32 });
        let mut internal = |_m: u32, _o: &mut [u8], _k: &mut dyn FnMut() -> bool| Some(Err(TrngError::Internal));
        assert_eq!(t.step(&mut internal), Step::Published { seq: 2, status: T::status::INTERNAL as u32 });
        drop(t);
        let (seq, mode, len, crc, status) = parse(&b);
        assert_eq!((seq, mode, len, crc, status), (1, T::modes::AV as u32, 0, 0, T::status::HEALTH as u32));
        assert!(b[HEADER_BYTES..].iter().all(|&x| x == 0), "no raw byte of the failed fill stays in the slot");
    }

    #[test]
    fn frame_crc_is_zlibs() {
        // the check value of CRC-32/ISO-HDLC, and agreement with crc32fast (the hosted tester's)
        assert_eq!(frame_crc(b"123456789"), 0xCBF4_3926);
        let frame: Vec<u8> = (0..T::BUFFER_BYTES as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
        assert_eq!(frame_crc(&frame), crc32fast::hash(&frame));
        assert_eq!(frame_crc(&[]), 0);
    }

    #[test]
    fn header_layout() {
        let h = header(7, 2, 524288, 0xDEADBEEF, 0);
        assert_eq!(&h[..8], b"TRNGBUF1");
        assert_eq!(u64::from_le_bytes(h[8..16].try_into().unwrap()), 7);
        assert_eq!(u32::from_le_bytes(h[20..24].try_into().unwrap()), 524288);
        assert_eq!(u32::from_le_bytes(h[24..28].try_into().unwrap()), 0xDEADBEEF);
        assert_eq!(raw_mode(4), Err(TrngError::UnknownMode));
        assert_eq!(raw_mode(T::modes::BOTH as u32), Ok(Some(RawMode::Both)));
    }
}
