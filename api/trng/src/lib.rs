//! Client library of the TRNG service (server: package `trng-server`, services/trng). Apps link
//! this crate; it carries no conditioner, health tests or source models.
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
//!
//! [`TrngControl`] is the privileged side (docs/security.md): only the system's own processes
//! can claim it (the control server has a fixed number of connections, taken at boot).

pub mod api;

use std::time::Duration;

use api::Opcode;
pub use api::{ErrorStats, HealthStats, SourceStats, TestMode, TrngError};
use xous::{MemoryRange, MemorySize, Message, CID};

/// Page-aligned scratch buffer for bulk requests (FillTrng, TestGetData), mapped on first use.
struct Bulk {
    scratch: Option<MemoryRange>,
}

impl Bulk {
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
    fn request(&mut self, conn: CID, opcode: Opcode, out: &mut [u8]) -> Result<(), TrngError> {
        debug_assert!(!out.is_empty() && out.len() <= api::CLIENT_CHUNK_BYTES);
        let scratch = self.scratch()?;
        let pages = (out.len() + 0xFFF) & !0xFFF;
        // lend only the pages needed: the hosted kernel copies the whole range both ways
        let range = unsafe { MemoryRange::new(scratch.as_ptr() as usize, pages) }.map_err(|_| TrngError::Internal)?;
        let msg = Message::new_lend_mut(opcode as usize, range, None, MemorySize::new(out.len()));
        let res = xous::send_message(conn, msg).map_err(|_| TrngError::Ipc);
        let buf = unsafe { core::slice::from_raw_parts_mut(scratch.as_mut_ptr(), pages) };
        let result = match res.and_then(|r| service_ipc::client::memory_reply(r).map_err(TrngError::from)) {
            Ok((None, valid)) if valid == out.len() => {
                out.copy_from_slice(&buf[..out.len()]);
                Ok(())
            }
            Ok(_) => Err(TrngError::Internal),
            Err(e) => Err(e),
        };
        // do not keep random bytes lying around in the scratch buffer
        for b in buf[..out.len()].iter_mut() {
            unsafe { core::ptr::write_volatile(b, 0) };
        }
        result
    }

    /// Fill `out` exactly (any length; split into 64 KiB requests). On error every byte of
    /// `out` is zeroed: never stale or raw data.
    fn fill(&mut self, conn: CID, opcode: Opcode, out: &mut [u8]) -> Result<(), TrngError> {
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(api::CLIENT_CHUNK_BYTES);
            if let Err(e) = self.request(conn, opcode, &mut out[done..done + n]) {
                out.iter_mut().for_each(|b| *b = 0);
                return Err(e);
            }
            done += n;
        }
        Ok(())
    }
}

impl Drop for Bulk {
    fn drop(&mut self) {
        if let Some(r) = self.scratch.take() {
            let _ = xous::unmap_memory(r);
        }
    }
}

fn status_call(conn: CID, opcode: Opcode, args: [usize; 4]) -> Result<(usize, usize), TrngError> {
    Ok(service_ipc::client::blocking_scalar(conn, opcode as u32, args)?)
}

/// Handle to the TRNG service's public server.
pub struct Trng {
    conn: CID,
    bulk: Bulk,
}

impl Trng {
    /// Connect to the server by name (blocks until the server has registered).
    pub fn new() -> Result<Self, xous::Error> {
        let xns = xous_api_names::XousNames::new()?;
        let conn = xns.request_connection_blocking(api::SERVER_NAME)?;
        Ok(Trng { conn, bulk: Bulk { scratch: None } })
    }

    /// The connection ID (for tests that want to send raw, possibly malformed messages).
    pub fn conn(&self) -> CID {
        self.conn
    }

    /// Two conditioned words in one scalar round trip.
    pub fn get_u32_pair(&self) -> Result<(u32, u32), TrngError> {
        let (a, b) = status_call(self.conn, Opcode::GetTrng, [2, 0, 0, 0])?;
        Ok((a as u32, b as u32))
    }

    /// One conditioned 32-bit word, or the server's error (a latched health failure, ...).
    pub fn get_u32(&self) -> Result<u32, TrngError> {
        Ok(status_call(self.conn, Opcode::GetTrng, [1, 0, 0, 0])?.0 as u32)
    }

    /// One conditioned 64-bit word (one round trip).
    pub fn get_u64(&self) -> Result<u64, TrngError> {
        let (lo, hi) = self.get_u32_pair()?;
        Ok((hi as u64) << 32 | lo as u64)
    }

    /// Fill `out` exactly with conditioned bytes (any length; large requests are split into
    /// 64 KiB memory messages). On error every byte of `out` is zeroed (never stale or raw data).
    pub fn fill_buf(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        self.bulk.fill(self.conn, Opcode::FillTrng, out)
    }

    /// Fold up to four user seed words into the conditioner (never replaces raw entropy).
    pub fn seed(&self, words: [u32; 4]) -> Result<(), TrngError> {
        status_call(self.conn, Opcode::SeedTrng, words.map(|w| w as usize)).map(|_| ())
    }

    pub fn health_stats(&self) -> Result<HealthStats, TrngError> {
        Ok(service_ipc::client::call(self.conn, Opcode::HealthStats as u32, HealthStats::default())?)
    }

    pub fn error_stats(&self) -> Result<ErrorStats, TrngError> {
        Ok(service_ipc::client::call(self.conn, Opcode::ErrorStats as u32, ErrorStats::default())?)
    }

    /// Ask for a non-blocking scalar `opcode` to be sent to server `sid` whenever a health test
    /// latches an error (arg1 = error bits, arg2 = total failures).
    pub fn subscribe_errors(&self, sid: xous::SID, opcode: u32) -> Result<(), TrngError> {
        let s = api::Subscription { sid: sid.to_array(), opcode };
        service_ipc::client::call(self.conn, Opcode::ErrorSubscribe as u32, s)?;
        Ok(())
    }
}

/// The TRNG's privileged control server: only the system's own processes hold it.
pub struct TrngControl {
    conn: CID,
    bulk: Bulk,
}

impl TrngControl {
    /// Claim a control slot (waits up to `deadline` for the service to register). Fails with
    /// `SlotTaken` once the slots are claimed (docs/security.md).
    pub fn claim(deadline: Duration) -> Result<TrngControl, service_ipc::control::ClaimError> {
        service_ipc::control::claim(api::SERVER_NAME, api::CONTROL_NAME, deadline)
            .map(|conn| TrngControl { conn, bulk: Bulk { scratch: None } })
    }

    /// The connection id (tests).
    pub fn conn(&self) -> CID {
        self.conn
    }

    /// Output of the current test mode (raw source words or conditioned), `out.len()` bytes.
    /// Raw words handed out here are never also fed to the conditioner (docs/security.md).
    pub fn test_get_data(&mut self, out: &mut [u8]) -> Result<(), TrngError> {
        self.bulk.fill(self.conn, Opcode::TestGetData, out)
    }

    pub fn test_set_mode(&self, mode: TestMode) -> Result<(), TrngError> {
        status_call(self.conn, Opcode::TestSetMode, [mode as usize, 0, 0, 0]).map(|_| ())
    }

    /// Clear latched health-test errors; the server re-runs the start-up test and reseeds.
    pub fn clear_errors(&self) -> Result<(), TrngError> {
        status_call(self.conn, Opcode::ClearErrors, [0; 4]).map(|_| ())
    }

    /// Model sources only: replace the active fault injection (`""` removes all faults).
    pub fn inject_fault(&self, spec: &str) -> Result<(), TrngError> {
        let bytes = spec.as_bytes();
        if bytes.len() > 256 {
            return Err(TrngError::BadConfig);
        }
        let mut req = api::FaultRequest { spec: [0u8; 256], len: bytes.len() as u32 };
        req.spec[..bytes.len()].copy_from_slice(bytes);
        service_ipc::client::call(self.conn, Opcode::TestInjectFault as u32, req)?;
        Ok(())
    }

    /// Stop the service: every later request is answered `Stopped`; the server process stays
    /// until the system shuts down.
    pub fn quit(&self) -> Result<(), TrngError> {
        status_call(self.conn, Opcode::Quit, [0; 4]).map(|_| ())
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
