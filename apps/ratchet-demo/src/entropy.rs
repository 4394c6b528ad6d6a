//! Keys from the TRNG service without ever waiting for it: a background thread keeps a small
//! pool of TRNG output filled; [`PoolRng`] hands bytes out of the pool (each byte once, wiped
//! as it leaves) and fails at once, never blocks, when the pool is short. The ratchet's phase
//! one then reports `Error::Rng` and the app simply retries on a later frame.
//!
//! If the TRNG refuses (health tests failing), nothing is added: no stale or raw randomness is
//! ever used, keys just wait.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use zeroize::{Zeroize, Zeroizing};

/// Bytes kept ready (a DH ratchet step draws 32; a responder setup a few hundred).
pub const POOL_BYTES: usize = 4096;

#[derive(Default)]
struct Pool {
    bytes: Zeroizing<Vec<u8>>,
    /// TRNG errors seen by the filler
    errors: u64,
    last_error: Option<String>,
}

#[derive(Clone)]
pub struct PoolRng {
    inner: Arc<(Mutex<Pool>, Condvar)>,
}

/// A source the filler draws from (the TRNG client; OsRng in tests).
pub type FillFn = Box<dyn FnMut(&mut [u8]) -> Result<(), String> + Send>;

impl PoolRng {
    /// Starts the filler thread.
    pub fn start(mut fill: FillFn) -> PoolRng {
        let inner = Arc::new((Mutex::new(Pool::default()), Condvar::new()));
        let i2 = inner.clone();
        std::thread::Builder::new()
            .name("chat-entropy".into())
            .spawn(move || {
                let mut chunk = Zeroizing::new(vec![0u8; 1024]);
                loop {
                    {
                        let g = i2.0.lock().unwrap();
                        let (g, _) =
                            i2.1.wait_timeout_while(g, Duration::from_millis(50), |p| p.bytes.len() >= POOL_BYTES)
                                .unwrap();
                        if g.bytes.len() >= POOL_BYTES {
                            continue;
                        }
                    }
                    match fill(&mut chunk[..]) {
                        Ok(()) => {
                            let mut g = i2.0.lock().unwrap();
                            let room = POOL_BYTES.saturating_sub(g.bytes.len()).min(chunk.len());
                            g.bytes.extend_from_slice(&chunk[..room]);
                            chunk[..].zeroize();
                        }
                        Err(e) => {
                            {
                                let mut g = i2.0.lock().unwrap();
                                g.errors += 1;
                                g.last_error = Some(e);
                            }
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                }
            })
            .expect("spawn the entropy thread");
        PoolRng { inner }
    }

    /// The TRNG service client as the source.
    pub fn from_trng() -> Result<PoolRng, String> {
        let mut t = trng::Trng::new().map_err(|e| format!("connect to the TRNG: {e:?}"))?;
        Ok(Self::start(Box::new(move |b: &mut [u8]| t.fill_buf(b).map_err(|e| format!("TRNG: {e:?}")))))
    }

    /// Bytes ready now.
    pub fn available(&self) -> usize {
        self.inner.0.lock().unwrap().bytes.len()
    }
    /// TRNG errors seen so far, and the last one.
    pub fn errors(&self) -> (u64, Option<String>) {
        let g = self.inner.0.lock().unwrap();
        (g.errors, g.last_error.clone())
    }
    /// Blocks (bounded) until `n` bytes are ready: for set-up code off the UI thread.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while self.available() < n {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }
}

impl rand_core::RngCore for PoolRng {
    fn next_u32(&mut self) -> u32 {
        rand_core::impls::next_u32_via_fill(self)
    }
    fn next_u64(&mut self) -> u64 {
        rand_core::impls::next_u64_via_fill(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.try_fill_bytes(dest).expect("entropy pool empty")
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        let mut g = self.inner.0.lock().unwrap();
        let n = dest.len();
        if g.bytes.len() < n {
            drop(g);
            self.inner.1.notify_all();
            return Err(rand_core::Error::from(
                core::num::NonZeroU32::new(rand_core::Error::CUSTOM_START + 1).unwrap(),
            ));
        }
        let start = g.bytes.len() - n;
        dest.copy_from_slice(&g.bytes[start..]);
        g.bytes[start..].zeroize();
        g.bytes.truncate(start);
        drop(g);
        self.inner.1.notify_all();
        Ok(())
    }
}

impl rand_core::CryptoRng for PoolRng {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::RngCore;

    #[test]
    fn pool_never_blocks_and_never_repeats() {
        let mut r = PoolRng::start(Box::new(|b: &mut [u8]| {
            rand_core::OsRng.fill_bytes(b);
            Ok(())
        }));
        assert!(r.wait_for(POOL_BYTES, Duration::from_secs(5)));
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let mut k = [0u8; 32];
            if r.try_fill_bytes(&mut k).is_ok() {
                assert!(seen.insert(k), "a key came out twice");
            }
        }
        // a request larger than the pool fails at once
        let t0 = std::time::Instant::now();
        assert!(r.try_fill_bytes(&mut vec![0u8; POOL_BYTES + 1]).is_err());
        assert!(t0.elapsed() < Duration::from_millis(20));
    }

    #[test]
    fn a_failing_source_gives_nothing() {
        let mut r = PoolRng::start(Box::new(|_b: &mut [u8]| Err("health test failed".into())));
        std::thread::sleep(Duration::from_millis(100));
        let mut k = [0u8; 32];
        assert!(r.try_fill_bytes(&mut k).is_err());
        assert_eq!(k, [0u8; 32]);
        assert!(r.errors().0 >= 1);
    }
}
