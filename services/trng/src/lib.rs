//! Client library for the TRNG server (`trng` binary). Other Xous processes link this.
//!
//! ```ignore
//! let mut trng = trng::Trng::new()?;
//! let w = trng.get_u32()?;
//! let mut key = [0u8; 32];
//! rand_core::RngCore::fill_bytes(&mut trng, &mut key); // panics only if the TRNG is failing
//! ```
//! `Trng` implements rand_core 0.6 `RngCore + CryptoRng` (what x25519-dalek 2 uses). The `try_*`
//! and `Result`-returning methods report health-test failures instead of panicking; no method
//! ever hands out bytes the server did not produce for this request.

pub mod api;

pub use api::{ErrorStats, HealthStats, SourceStats, TestMode, TrngError};
use num_traits::ToPrimitive;
use xous::{MemoryRange, MemorySize, Message, CID};

/// Handle to the TRNG server.
pub struct Trng {
    conn: CID,
    /// Page-aligned scratch buffer for bulk requests, mapped on first use.
    scratch: Option<MemoryRange>,
}

fn op(o: api::Opcode) -> usize {
    o.to_usize().unwrap()
}

impl Trng {
    /// Connect to the server by name (blocks until the server has registered).
    pub fn new() -> Result<Self, xous::Error> {
        let xns = xous_api_names::XousNames::new()?;
        let conn = xns.request_connection_blocking(api::SERVER_NAME)?;
        Ok(Trng { conn, scratch: None })
    }

    /// The connection ID (for tests that want to send raw, possibly malformed messages).
    pub fn conn(&self) -> CID {
        self.conn
    }

    fn scalar(&self, opcode: api::Opcode, a1: usize, a2: usize, a3: usize, a4: usize) -> Result<xous::Result, TrngError> {
        xous::send_message(self.conn, Message::new_blocking_scalar(op(opcode), a1, a2, a3, a4)).map_err(|_| TrngError::Ipc)
    }

    fn status_call(&self, opcode: api::Opcode, a1: usize, a2: usize, a3: usize, a4: usize) -> Result<(), TrngError> {
        match self.scalar(opcode, a1, a2, a3, a4)? {
            xous::Result::Scalar1(0) => Ok(()),
            xous::Result::Scalar1(code) => Err(TrngError::from_code(code)),
            _ => Err(TrngError::Internal),
        }
    }

    /// Two conditioned words in one scalar round trip.
    pub fn get_u32_pair(&self) -> Result<(u32, u32), TrngError> {
        match self.scalar(api::Opcode::GetTrng, 2, 0, 0, 0)? {
            xous::Result::Scalar2(a, b) => Ok((a as u32, b as u32)),
            xous::Result::Scalar1(code) => Err(TrngError::from_code(code)),
            _ => Err(TrngError::Internal),
        }
    }

    pub fn try_get_u32(&self) -> Result<u32, TrngError> {
        match self.scalar(api::Opcode::GetTrng, 1, 0, 0, 0)? {
            xous::Result::Scalar2(a, _) => Ok(a as u32),
            xous::Result::Scalar1(code) => Err(TrngError::from_code(code)),
            _ => Err(TrngError::Internal),
        }
    }

    /// One conditioned 32-bit word.
    pub fn get_u32(&self) -> Result<u32, TrngError> {
        self.try_get_u32()
    }

    /// One conditioned 64-bit word (one round trip).
    pub fn get_u64(&self) -> Result<u64, TrngError> {
        let (lo, hi) = self.get_u32_pair()?;
        Ok((hi as u64) << 32 | lo as u64)
    }

    fn scratch(&mut self) -> Result<MemoryRange, TrngError> {
        if let Some(r) = self.scratch {
            return Ok(r);
        }
        let r = xous::map_memory(None, None, api::CLIENT_CHUNK_BYTES, xous::MemoryFlags::R | xous::MemoryFlags::W)
            .map_err(|_| TrngError::Internal)?;
        self.scratch = Some(r);
        Ok(r)
    }

    /// One bulk request of 1..=CLIENT_CHUNK_BYTES bytes into `out`.
    fn bulk(&mut self, opcode: api::Opcode, out: &mut [u8]) -> Result<(), TrngError> {
        debug_assert!(!out.is_empty() && out.len() <= api::CLIENT_CHUNK_BYTES);
        let scratch = self.scratch()?;
        let pages = (out.len() + 0xFFF) & !0xFFF;
        // lend only the pages needed: the hosted kernel copies the whole range both ways
        let range = unsafe { MemoryRange::new(scratch.as_ptr() as usize, pages) }.map_err(|_| TrngError::Internal)?;
        let msg = Message::new_lend_mut(op(opcode), range, None, MemorySize::new(out.len()));
        let res = xous::send_message(self.conn, msg).map_err(|_| TrngError::Ipc)?;
        let buf = unsafe { core::slice::from_raw_parts_mut(scratch.as_mut_ptr(), pages) };
        let result = match res {
            xous::Result::MemoryReturned(None, Some(valid)) if valid.get() == out.len() => {
                out.copy_from_slice(&buf[..out.len()]);
                Ok(())
            }
            xous::Result::MemoryReturned(Some(code), _) => Err(TrngError::from_code(code.get())),
            _ => Err(TrngError::Internal),
        };
        // do not keep random bytes lying around in the scratch buffer
        for b in buf[..out.len()].iter_mut() {
            unsafe { core::ptr::write_volatile(b, 0) };
        }
        result
    }

    /// Fill `out` exactly with conditioned bytes (any length; large requests are split into
    /// 64 KiB memory messages). On error nothing is guaranteed about `out` except that bytes
    /// not produced for this call are zeroed (never stale or raw data).
    pub fn fill_buf(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(api::CLIENT_CHUNK_BYTES);
            if let Err(e) = self.bulk(api::Opcode::FillTrng, &mut out[done..done + n]) {
                for b in out.iter_mut() {
                    *b = 0;
                }
                return Err(e);
            }
            done += n;
        }
        Ok(())
    }

    /// Output of the current test mode (raw source words or conditioned), `out.len()` bytes.
    pub fn test_get_data(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(api::CLIENT_CHUNK_BYTES);
            self.bulk(api::Opcode::TestGetData, &mut out[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    pub fn test_set_mode(&self, mode: TestMode) -> Result<(), TrngError> {
        self.status_call(api::Opcode::TestSetMode, mode as usize, 0, 0, 0)
    }

    /// Clear latched health-test errors; the server re-runs the start-up test and reseeds.
    pub fn clear_errors(&self) -> Result<(), TrngError> {
        self.status_call(api::Opcode::ClearErrors, 0, 0, 0, 0)
    }

    /// Fold up to four user seed words into the conditioner (never replaces raw entropy).
    pub fn seed(&self, words: [u32; 4]) -> Result<(), TrngError> {
        self.status_call(api::Opcode::SeedTrng, words[0] as usize, words[1] as usize, words[2] as usize, words[3] as usize)
    }

    pub fn health_stats(&self) -> Result<HealthStats, TrngError> {
        let mut buf = xous_ipc::Buffer::into_buf(HealthStats::default()).map_err(|_| TrngError::Internal)?;
        buf.lend_mut(self.conn, op(api::Opcode::HealthStats) as u32).map_err(|_| TrngError::Ipc)?;
        let s: HealthStats = buf.to_original().map_err(|_| TrngError::Internal)?;
        if s.status != 0 {
            return Err(TrngError::from_code(s.status as usize));
        }
        Ok(s)
    }

    pub fn error_stats(&self) -> Result<ErrorStats, TrngError> {
        let mut buf = xous_ipc::Buffer::into_buf(ErrorStats::default()).map_err(|_| TrngError::Internal)?;
        buf.lend_mut(self.conn, op(api::Opcode::ErrorStats) as u32).map_err(|_| TrngError::Ipc)?;
        let s: ErrorStats = buf.to_original().map_err(|_| TrngError::Internal)?;
        if s.status != 0 {
            return Err(TrngError::from_code(s.status as usize));
        }
        Ok(s)
    }

    /// Ask for a non-blocking scalar `opcode` to be sent to server `sid` whenever a health test
    /// latches an error (arg1 = error bits, arg2 = total failures).
    pub fn subscribe_errors(&self, sid: xous::SID, opcode: u32) -> Result<(), TrngError> {
        let s = api::Subscription { sid: sid.to_array(), opcode, status: 0 };
        let mut buf = xous_ipc::Buffer::into_buf(s).map_err(|_| TrngError::Internal)?;
        buf.lend_mut(self.conn, op(api::Opcode::ErrorSubscribe) as u32).map_err(|_| TrngError::Ipc)?;
        let r: api::Subscription = buf.to_original().map_err(|_| TrngError::Internal)?;
        if r.status != 0 {
            return Err(TrngError::from_code(r.status as usize));
        }
        Ok(())
    }

    /// Model sources only: replace the active fault injection (`""` removes all faults).
    pub fn inject_fault(&self, spec: &str) -> Result<(), TrngError> {
        let bytes = spec.as_bytes();
        if bytes.len() > 256 {
            return Err(TrngError::BadConfig);
        }
        let mut req = api::FaultRequest { spec: [0u8; 256], len: bytes.len() as u32, status: 0 };
        req.spec[..bytes.len()].copy_from_slice(bytes);
        let mut buf = xous_ipc::Buffer::into_buf(req).map_err(|_| TrngError::Internal)?;
        buf.lend_mut(self.conn, op(api::Opcode::TestInjectFault) as u32).map_err(|_| TrngError::Ipc)?;
        let r: api::FaultRequest = buf.to_original().map_err(|_| TrngError::Internal)?;
        if r.status != 0 {
            return Err(TrngError::from_code(r.status as usize));
        }
        Ok(())
    }

    /// Ask the server to exit (hosted tests).
    pub fn quit(&self) -> Result<(), TrngError> {
        self.status_call(api::Opcode::Quit, 0, 0, 0, 0)
    }
}

impl Drop for Trng {
    fn drop(&mut self) {
        if let Some(r) = self.scratch.take() {
            let _ = xous::unmap_memory(r);
        }
    }
}

impl rand_core::RngCore for Trng {
    fn next_u32(&mut self) -> u32 {
        self.get_u32().expect("TRNG failure (health test or IPC)")
    }
    fn next_u64(&mut self) -> u64 {
        self.get_u64().expect("TRNG failure (health test or IPC)")
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.fill_buf(dest).expect("TRNG failure (health test or IPC)")
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_buf(dest).map_err(|e| {
            let code = core::num::NonZeroU32::new(rand_core::Error::CUSTOM_START + e.code() as u32).unwrap();
            rand_core::Error::from(code)
        })
    }
}

impl rand_core::CryptoRng for Trng {}
