//! The TRNG server's work, free of the kernel: `main.rs` decodes a message, calls one method
//! here and sends the reply. Everything in this module is unit-tested without a Xous kernel
//! (subscriber notifications go through the [`Notifier`] trait).
//!
//! Public operations (any app): [`TrngServer::get_words`], [`TrngServer::fill`],
//! [`TrngServer::seed`], [`TrngServer::health_stats`], [`TrngServer::error_stats`],
//! [`TrngServer::subscribe`]. Control operations (the control server only, docs/security.md):
//! [`TrngServer::clear_errors`], [`TrngServer::set_test_mode`], [`TrngServer::test_get_data`],
//! [`TrngServer::inject_fault`], [`TrngServer::quit`]. After [`TrngServer::quit`] every
//! operation fails with `Stopped`.

use num_traits::FromPrimitive;
use trng::api::{self, ErrorStats, FaultRequest, HealthStats, Subscription, TestMode, TrngError};
use trng_core::pipeline::RawMode;

use crate::backend::Backend;

/// What became of one notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Sent,
    /// the subscriber's queue is full: kept, this notification is lost
    Busy,
    /// the subscriber is gone: dropped from the table
    Gone,
}

/// Delivery of error notifications to subscribers (the kernel in `main.rs`, a recorder in tests).
pub trait Notifier: Send {
    /// Open a connection to subscriber server `sid`; `None` if it does not exist.
    fn connect(&mut self, sid: [u32; 4]) -> Option<u32>;
    /// Send the non-blocking scalar `opcode(bits, total)` on connection `conn`.
    fn notify(&mut self, conn: u32, opcode: u32, bits: u32, total: u32) -> Delivery;
}

/// Validate a bulk request of `requested` bytes (the message's `valid`) into a lent buffer of
/// `buf_len` bytes.
pub fn check_bulk_len(requested: Option<usize>, buf_len: usize) -> Result<usize, TrngError> {
    match requested {
        None | Some(0) => Err(TrngError::ZeroLength),
        Some(n) if n > buf_len || n > api::MAX_FILL_BYTES => Err(TrngError::TooLarge),
        Some(n) => Ok(n),
    }
}

pub struct TrngServer {
    backend: Box<dyn Backend>,
    test_mode: TestMode,
    subscribers: Vec<(u32, u32)>,
    notifications_sent: u32,
    notifier: Box<dyn Notifier>,
    stopped: bool,
}

impl TrngServer {
    pub fn new(backend: Box<dyn Backend>, notifier: Box<dyn Notifier>) -> Self {
        TrngServer {
            backend,
            test_mode: TestMode::None,
            subscribers: Vec::new(),
            notifications_sent: 0,
            notifier,
            stopped: false,
        }
    }

    pub fn source_name(&self) -> &'static str {
        self.backend.name()
    }

    fn running(&self) -> Result<(), TrngError> {
        if self.stopped {
            Err(TrngError::Stopped)
        } else {
            Ok(())
        }
    }

    /// Start-up test and conditioner seeding (before clients are accepted). A failure is
    /// latched (reported through ErrorStats) and the server still serves.
    pub fn startup(&mut self) -> Result<(), TrngError> {
        let mut probe = [0u8; 4];
        let r = self.backend.fill_conditioned(&mut probe);
        probe.fill(0);
        r
    }

    /// The system resumed from a suspend: the backend brings its source back
    /// (`Backend::resume`; on the device only, from the susres hook).
    #[cfg_attr(not(target_os = "xous"), allow(dead_code))]
    pub fn resume(&mut self) {
        self.backend.resume()
    }

    /// `count` (1 or 2) conditioned words; the second is 0 when one was asked for.
    pub fn get_words(&mut self, count: usize) -> Result<(u32, u32), TrngError> {
        self.running()?;
        match count {
            0 => return Err(TrngError::ZeroLength),
            1 | 2 => {}
            _ => return Err(TrngError::TooLarge),
        }
        let mut b = [0u8; 8];
        let r = self.backend.fill_conditioned(&mut b[..count * 4]);
        let words = (u32::from_le_bytes(b[0..4].try_into().unwrap()), u32::from_le_bytes(b[4..8].try_into().unwrap()));
        b.fill(0);
        r.map(|()| words)
    }

    /// Conditioned bytes into `out` (its length already checked with [`check_bulk_len`]).
    pub fn fill(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        self.running()?;
        self.backend.fill_conditioned(out)
    }

    pub fn seed(&mut self, words: [usize; 4]) -> Result<(), TrngError> {
        self.running()?;
        for w in words {
            self.backend.seed_user(w as u32);
        }
        Ok(())
    }

    pub fn health_stats(&self) -> Result<HealthStats, TrngError> {
        self.running()?;
        Ok(self.backend.health_stats())
    }

    pub fn error_stats(&self) -> Result<ErrorStats, TrngError> {
        self.running()?;
        let mut es = self.backend.error_stats();
        es.subscribers = self.subscribers.len() as u32;
        es.notifications_sent = self.notifications_sent;
        Ok(es)
    }

    pub fn subscribe(&mut self, s: &Subscription) -> Result<(), TrngError> {
        self.running()?;
        if self.subscribers.len() >= api::MAX_SUBSCRIBERS {
            return Err(TrngError::TooManySubscribers);
        }
        let conn = self.notifier.connect(s.sid).ok_or(TrngError::BadMessage)?;
        self.subscribers.push((conn, s.opcode));
        Ok(())
    }

    // ---- control operations

    pub fn clear_errors(&mut self) -> Result<(), TrngError> {
        self.running()?;
        self.backend.clear_errors();
        log::info!("TRNG errors cleared");
        Ok(())
    }

    pub fn set_test_mode(&mut self, mode: usize) -> Result<(), TrngError> {
        self.running()?;
        self.test_mode = TestMode::from_usize(mode).ok_or(TrngError::UnknownMode)?;
        Ok(())
    }

    /// Output of the current test mode. Raw words come straight from the sources and are never
    /// fed to the conditioner (trng_core::pipeline::Pipeline::fill_raw draws its own samples).
    pub fn test_get_data(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        self.running()?;
        let raw = match self.test_mode {
            TestMode::None => return Err(TrngError::TestModeOff),
            TestMode::Cprng => None,
            TestMode::Av => Some(RawMode::Av),
            TestMode::Ro => Some(RawMode::Ro),
            TestMode::Both => Some(RawMode::Both),
        };
        self.tester_fill(raw, out)
    }

    /// The hosted tester's fills (a thread of this process, reached over loopback TCP only):
    /// conditioned (`None`) or raw output, with the same gating as every other request.
    pub fn tester_fill(&mut self, raw: Option<RawMode>, out: &mut [u8]) -> Result<(), TrngError> {
        self.running()?;
        match raw {
            None => self.backend.fill_conditioned(out),
            Some(m) => self.backend.fill_raw(m, out),
        }
    }

    pub fn inject_fault(&mut self, r: &FaultRequest) -> Result<(), TrngError> {
        self.running()?;
        let len = r.len as usize;
        let spec = r.spec.get(..len).and_then(|b| core::str::from_utf8(b).ok()).ok_or(TrngError::BadConfig)?;
        self.backend.set_faults(spec)?;
        log::info!("TRNG fault injection set to {spec:?}");
        Ok(())
    }

    /// Stop serving: every later operation fails with `Stopped` (the process stays until the
    /// system shuts down).
    pub fn quit(&mut self) -> Result<(), TrngError> {
        self.running()?;
        self.stopped = true;
        log::info!("TRNG service stopped by its control server");
        Ok(())
    }

    /// After each request (and when the tester reports a failure): notify every subscriber
    /// once per newly latched error. Returns true if an error was newly latched.
    pub fn check_new_error(&mut self) -> bool {
        if !self.backend.take_new_error() {
            return false;
        }
        let es = self.backend.error_stats();
        log::warn!("TRNG health failure latched: error bits {:#x}; output disabled until ClearErrors", es.error_bits);
        let mut keep = Vec::with_capacity(self.subscribers.len());
        for (conn, opcode) in self.subscribers.drain(..) {
            match self.notifier.notify(conn, opcode, es.error_bits, es.total_failures) {
                Delivery::Sent => {
                    self.notifications_sent += 1;
                    keep.push((conn, opcode));
                }
                Delivery::Busy => keep.push((conn, opcode)),
                Delivery::Gone => log::warn!("dropping error subscriber (conn {conn})"),
            }
        }
        self.subscribers = keep;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::SoftBackend;
    use std::sync::{Arc, Mutex};
    use trng_core::pipeline::Feed;

    /// Records notifications; subscriber sids with first word 0 "do not exist", 0xdead is gone.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<(u32, u32, u32)>>>);
    impl Notifier for Recorder {
        fn connect(&mut self, sid: [u32; 4]) -> Option<u32> {
            (sid[0] != 0).then_some(sid[0])
        }
        fn notify(&mut self, conn: u32, opcode: u32, bits: u32, _total: u32) -> Delivery {
            if conn == 0xdead {
                return Delivery::Gone;
            }
            self.0.lock().unwrap().push((conn, opcode, bits));
            Delivery::Sent
        }
    }

    fn server() -> (TrngServer, Recorder) {
        let rec = Recorder::default();
        let be = SoftBackend::new(Feed::Models, None, api::SOURCE_NONE, [7; 32], "model");
        let mut s = TrngServer::new(Box::new(be), Box::new(rec.clone()));
        s.startup().unwrap();
        (s, rec)
    }

    fn fault(spec: &str) -> FaultRequest {
        let mut r = FaultRequest { spec: [0; 256], len: spec.len() as u32 };
        r.spec[..spec.len()].copy_from_slice(spec.as_bytes());
        r
    }

    #[test]
    fn words_and_fills() {
        let (mut s, _) = server();
        assert_eq!(s.get_words(0), Err(TrngError::ZeroLength));
        assert_eq!(s.get_words(3), Err(TrngError::TooLarge));
        assert_eq!(s.get_words(usize::MAX), Err(TrngError::TooLarge));
        let (a, b) = s.get_words(2).unwrap();
        assert_ne!((a, b), s.get_words(2).unwrap());
        assert_eq!(s.get_words(1).unwrap().1, 0, "one word asked, the second is 0");
        let mut buf = [0u8; 1000];
        s.fill(&mut buf).unwrap();
        assert!(buf.iter().filter(|b| **b == 0).count() < 20);
        s.seed([1, 2, 3, 4]).unwrap();
        assert!(s.health_stats().unwrap().blocks_out > 0);
    }

    #[test]
    fn bulk_lengths() {
        assert_eq!(check_bulk_len(None, 4096), Err(TrngError::ZeroLength));
        assert_eq!(check_bulk_len(Some(0), 4096), Err(TrngError::ZeroLength));
        assert_eq!(check_bulk_len(Some(4097), 4096), Err(TrngError::TooLarge));
        assert_eq!(check_bulk_len(Some(usize::MAX), usize::MAX), Err(TrngError::TooLarge));
        assert_eq!(check_bulk_len(Some(api::MAX_FILL_BYTES + 1), api::MAX_FILL_BYTES + 4096), Err(TrngError::TooLarge));
        assert_eq!(check_bulk_len(Some(4096), 4096), Ok(4096));
    }

    #[test]
    fn test_modes() {
        let (mut s, _) = server();
        let mut buf = [0u8; 64];
        assert_eq!(s.test_get_data(&mut buf), Err(TrngError::TestModeOff));
        assert_eq!(s.set_test_mode(99), Err(TrngError::UnknownMode));
        for m in [TestMode::Av, TestMode::Ro, TestMode::Both, TestMode::Cprng] {
            s.set_test_mode(m as usize).unwrap();
            s.test_get_data(&mut buf).unwrap();
        }
    }

    /// Raw output handed to a tester never touches the conditioner: its block and seed counters
    /// do not move while raw words are drawn.
    #[test]
    fn raw_output_does_not_touch_the_conditioner() {
        let (mut s, _) = server();
        let before = s.health_stats().unwrap();
        s.set_test_mode(TestMode::Both as usize).unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        s.test_get_data(&mut buf).unwrap();
        let after = s.health_stats().unwrap();
        assert_eq!(
            (before.blocks_out, before.reseeds, before.full_seeds, before.selfmix_blocks),
            (after.blocks_out, after.reseeds, after.full_seeds, after.selfmix_blocks)
        );
    }

    #[test]
    fn faults_latch_notify_and_clear() {
        let (mut s, rec) = server();
        s.subscribe(&Subscription { sid: [5, 0, 0, 0], opcode: 0x77 }).unwrap();
        s.subscribe(&Subscription { sid: [0xdead, 0, 0, 0], opcode: 1 }).unwrap();
        assert_eq!(s.subscribe(&Subscription { sid: [0; 4], opcode: 1 }), Err(TrngError::BadMessage));
        for bad in ["av9:stuck", "garbage", "ro:bias=7"] {
            assert_eq!(s.inject_fault(&fault(bad)), Err(TrngError::BadConfig), "{bad}");
        }
        let mut r = fault("av0:stuck");
        r.len = 300;
        assert_eq!(s.inject_fault(&r), Err(TrngError::BadConfig), "length past the array");
        let mut r = fault("av0:stuck");
        r.spec[0] = 0xff;
        assert_eq!(s.inject_fault(&r), Err(TrngError::BadConfig), "not UTF-8");

        s.inject_fault(&fault("av0:stuck=0x123")).unwrap();
        s.set_test_mode(TestMode::Av as usize).unwrap();
        let mut buf = [0xEEu8; 4096];
        assert_eq!(s.test_get_data(&mut buf), Err(TrngError::HealthFailure));
        assert!(buf.iter().all(|b| *b == 0), "no raw bytes while failing");
        assert!(s.check_new_error());
        assert!(!s.check_new_error(), "one notification per latched error");
        let got = rec.0.lock().unwrap().clone();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].0, got[0].1), (5, 0x77));
        assert!(got[0].2 & 1 != 0, "av0 RCT bit");
        let es = s.error_stats().unwrap();
        assert!(es.latched);
        assert_eq!((es.subscribers, es.notifications_sent), (1, 1), "the gone subscriber was dropped");
        let mut out = [0xEEu8; 100];
        assert_eq!(s.fill(&mut out), Err(TrngError::HealthFailure));
        assert!(out.iter().all(|b| *b == 0));
        assert_eq!(s.get_words(2), Err(TrngError::HealthFailure));

        s.inject_fault(&fault("")).unwrap();
        s.clear_errors().unwrap();
        s.fill(&mut out).unwrap();
        assert!(!s.error_stats().unwrap().latched);
    }

    #[test]
    fn subscriber_table_is_bounded() {
        let (mut s, _) = server();
        for i in 0..api::MAX_SUBSCRIBERS as u32 {
            s.subscribe(&Subscription { sid: [i + 1, 0, 0, 0], opcode: 1 }).unwrap();
        }
        assert_eq!(s.subscribe(&Subscription { sid: [999, 0, 0, 0], opcode: 1 }), Err(TrngError::TooManySubscribers));
    }

    #[test]
    fn quit_stops_everything() {
        let (mut s, _) = server();
        s.quit().unwrap();
        let mut b = [0u8; 8];
        assert_eq!(s.get_words(1), Err(TrngError::Stopped));
        assert_eq!(s.fill(&mut b), Err(TrngError::Stopped));
        assert_eq!(s.health_stats().err(), Some(TrngError::Stopped));
        assert_eq!(s.clear_errors(), Err(TrngError::Stopped));
        assert_eq!(s.tester_fill(None, &mut b), Err(TrngError::Stopped));
        assert_eq!(s.quit(), Err(TrngError::Stopped));
    }
}
