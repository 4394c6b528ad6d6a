//! Running the ratchet's X25519 and ML-KEM jobs: asynchronously on a worker thread (the UI
//! thread only submits and polls) or synchronously on the calling thread (`--sync-dh`, to show
//! the stall), with completions paced to device time.
//!
//! A batch is a pending step's X25519 jobs plus its ML-KEM-1024 jobs (PQXDH: one encapsulation
//! for the initiator, one decapsulation for the responder). The X25519 go to the provider (the
//! engine service); the KEM jobs run on the same worker thread with libcrux-ml-kem
//! (`KemJob::run`), after the X25519. KEM jobs are not paced: their device time is their host
//! time (no figure for ML-KEM on the device's CPU is measured yet; docs/chat.md).
//!
//! Device time of one job:
//! - engine (v1 or v2 microcode): the engine cycles the service reports, at the engine clock
//!   (`eng_clk_hz` of spec/engine25519.toml, handed to the app by xtask);
//! - software: [`SOFTWARE_DH`] per X25519, the time x25519-dalek takes on the simulated
//!   Precursor's 100 MHz CPU (docs/chat.md).
//!
//! The engine is one device: jobs run one after the other on a virtual device timeline, and a
//! batch completes no earlier than that timeline says (and no earlier than the real result).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ratchet::{DhJob, DhOutput, KemJob, KemOutput};
use zeroize::Zeroizing;

/// Device time of one software X25519: x25519-dalek measured on the simulated Precursor
/// (VexRiscv at the declared 100 MHz), bench key `device_crypto_x25519_software_us` of `cargo
/// xtask bench --only device-crypto`: 7,317,632 cycles (docs/chat.md, "On the device").
pub const SOFTWARE_DH: Duration = Duration::from_micros(73_176);

/// How completions are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// engine cycles at this clock (Hz)
    Engine { clock_hz: u64 },
    /// a fixed time per X25519
    Software { per_dh: Duration },
    /// no pacing (tests, throughput benchmarks): device time still computed from cycles if known
    Off { clock_hz: u64 },
}

impl Pacing {
    /// Device time of one job that took `cycles` engine cycles.
    pub fn device_time(&self, cycles: u64) -> Duration {
        match *self {
            Pacing::Engine { clock_hz } | Pacing::Off { clock_hz } if clock_hz > 0 => {
                Duration::from_nanos((cycles as u128 * 1_000_000_000 / clock_hz as u128) as u64)
            }
            Pacing::Software { per_dh } => per_dh,
            _ => Duration::ZERO,
        }
    }
    fn paces(&self) -> bool {
        !matches!(self, Pacing::Off { .. })
    }
}

/// An X25519 provider: the results of a batch of jobs, in job order, each with the engine
/// cycles it took (0 if not an engine). The engine service takes a step's jobs in one request
/// (`x25519_batch`: one round trip through the OS, the jobs back to back on the engine).
pub type DhFn = Box<dyn FnMut(&[DhJob]) -> Result<Vec<(DhOutput, u64)>, String> + Send>;

/// Results of a batch, in job order, with its timing.
pub struct DhBatch {
    pub outputs: Vec<DhOutput>,
    pub jobs: usize,
    /// the ML-KEM results, in KEM job order
    pub kem_outputs: Vec<KemOutput>,
    pub kem_jobs: usize,
    /// host time of the KEM jobs (on the worker, or on the UI thread with `--sync-dh`)
    pub kem_host: Duration,
    pub cycles: u64,
    /// device time of the batch (cycles at the clock, or the software figure)
    pub device: Duration,
    /// host time from submission to the real result (before pacing)
    pub host: Duration,
    /// submission to delivery (what the user waits, pacing included)
    pub latency: Duration,
}

/// Submit a batch, poll for its result. The async runner never blocks in either call.
pub trait DhRunner: Send {
    /// A batch of X25519 jobs and ML-KEM jobs (either may be empty).
    fn submit(&mut self, jobs: Vec<DhJob>, kem: Vec<KemJob>) -> u64;
    fn poll(&mut self, ticket: u64) -> Option<Result<DhBatch, String>>;
    /// "async" or "sync"
    fn mode(&self) -> &'static str;
}

/// The device timeline shared by everything that submits to one engine.
#[derive(Clone)]
pub struct Device {
    free_at: Arc<Mutex<Instant>>,
    pacing: Pacing,
}

impl Device {
    pub fn new(pacing: Pacing) -> Device {
        Device { free_at: Arc::new(Mutex::new(Instant::now())), pacing }
    }
    pub fn pacing(&self) -> Pacing {
        self.pacing
    }

    /// Runs a batch on the calling thread: computes, then sleeps until the device timeline says
    /// the batch is done.
    fn run(&self, f: &mut DhFn, jobs: &[DhJob], kem: &[KemJob], submitted: Instant) -> Result<DhBatch, String> {
        let mut outputs = Vec::with_capacity(jobs.len());
        let mut cycles = 0u64;
        let mut device = Duration::ZERO;
        let results = if jobs.is_empty() { Vec::new() } else { f(jobs)? };
        // one clock reading per batch without ML-KEM (on the device a reading is a call to the
        // ticktimer service, 0.1-0.2 ms, between the engine's result and the worker's notice),
        // taken as soon as the results are in hand: before anything here frees or allocates.
        // On Xous std's allocator lock waits by yielding, and an interrupt may have stopped
        // another thread of this process (the UI) inside the allocator: the worker then waits
        // out that thread's turn (a whole frame, 0.3-0.8 ms on the simulated Precursor).
        let host = submitted.elapsed();
        if results.len() != jobs.len() {
            return Err(format!("the X25519 provider gave {} results for {} jobs", results.len(), jobs.len()));
        }
        for (o, c) in results {
            outputs.push(o);
            cycles += c;
            device += self.pacing.device_time(c);
        }
        let (kem_outputs, kem_host) = if kem.is_empty() {
            (Vec::new(), Duration::ZERO)
        } else {
            let out = kem.iter().map(|j| j.run()).collect::<Result<Vec<_>, _>>().map_err(|e| format!("ML-KEM: {e}"))?;
            (out, submitted.elapsed() - host)
        };
        device += kem_host;
        if self.pacing.paces() {
            let release = {
                let mut free = self.free_at.lock().unwrap();
                let start = (*free).max(submitted);
                *free = start + device;
                *free
            };
            let now = Instant::now();
            if release > now {
                std::thread::sleep(release - now);
            }
        }
        let latency = if self.pacing.paces() { submitted.elapsed() } else { host + kem_host };
        Ok(DhBatch {
            outputs,
            jobs: jobs.len(),
            kem_outputs,
            kem_jobs: kem.len(),
            kem_host,
            cycles,
            device,
            host,
            latency,
        })
    }
}

/// Runs batches on the calling thread (submit blocks for the whole batch).
pub struct SyncRunner {
    f: DhFn,
    device: Device,
    next: u64,
    done: HashMap<u64, Result<DhBatch, String>>,
}

impl SyncRunner {
    pub fn new(f: DhFn, device: Device) -> Self {
        SyncRunner { f, device, next: 1, done: HashMap::new() }
    }
}

impl DhRunner for SyncRunner {
    fn submit(&mut self, jobs: Vec<DhJob>, kem: Vec<KemJob>) -> u64 {
        let t = self.next;
        self.next += 1;
        let r = self.device.run(&mut self.f, &jobs, &kem, Instant::now());
        self.done.insert(t, r);
        t
    }
    fn poll(&mut self, ticket: u64) -> Option<Result<DhBatch, String>> {
        self.done.remove(&ticket)
    }
    fn mode(&self) -> &'static str {
        "sync"
    }
}

type Done = Arc<(Mutex<HashMap<u64, Result<DhBatch, String>>>, Condvar)>;

/// A batch on its way to the worker: ticket, X25519 jobs, KEM jobs, submission time.
pub type Work = (u64, Vec<DhJob>, Vec<KemJob>, Instant);

/// How a submitted batch reaches the worker thread: the submitting side's `send` (gives the
/// batch back if the worker is gone) and the worker's `recv` (blocks until a batch comes;
/// `None` once the submitting side is dropped).
pub struct Handoff {
    pub send: Box<dyn FnMut(Work) -> Result<(), Work> + Send>,
    pub recv: Box<dyn FnMut() -> Option<Work> + Send>,
}

impl Handoff {
    /// A std channel (any OS). On Xous a waiting receiver is woken through the ticktimer
    /// server (std's thread parking), a round trip through another process per batch.
    pub fn std_channel() -> Handoff {
        let (tx, rx) = mpsc::channel::<Work>();
        Handoff {
            send: Box::new(move |w| tx.send(w).map_err(|mpsc::SendError(w)| w)),
            recv: Box::new(move || rx.recv().ok()),
        }
    }

    /// A queue in this process and a private Xous server the worker waits on. When the worker
    /// waits, a batch is queued and announced by one blocking scalar message: the kernel runs
    /// the waiting worker at once (no third process, no turn of the other processes in
    /// between), the worker answers as soon as it has the message, and the submitting thread
    /// is ready again while the worker sends the batch to the engine. When the worker is busy
    /// the batch is only queued (the worker looks at the queue before it waits again), so a
    /// submission never waits for a running batch. The server is reachable only through its
    /// connection here (its SID is never registered or shared), and a message carries no data:
    /// the worker only ever takes what is queued.
    ///
    /// `waiting` is the wake-up token: the worker raises it before its last look at the queue
    /// and waiting; whoever lowers it first owns the wake-up: the submitting side (then it
    /// sends the message, which the worker takes) or the worker (it found a batch itself).
    pub fn xous_server() -> Result<Handoff, xous::Error> {
        let sid = xous::create_server()?;
        let cid = xous::connect(sid)?;
        let queue: Arc<Mutex<std::collections::VecDeque<Work>>> = Arc::default();
        let q = queue.clone();
        /// The submitting side's connection: announces a stop when dropped (with the runner),
        /// so the worker returns. (A method, not the field, in the closure below: a closure
        /// naming `bell.0` would capture only that copy and drop the bell at once.)
        struct Bell(xous::CID);
        impl Bell {
            fn wake(&self) -> Result<xous::Result, xous::Error> {
                xous::send_message(self.0, xous::Message::new_blocking_scalar(HANDOFF_WORK, 0, 0, 0, 0))
            }
            fn nudge(&self) -> Result<xous::Result, xous::Error> {
                xous::try_send_message(self.0, xous::Message::new_scalar(HANDOFF_WORK, 0, 0, 0, 0))
            }
        }
        impl Drop for Bell {
            fn drop(&mut self) {
                let _ = xous::try_send_message(self.0, xous::Message::new_scalar(HANDOFF_STOP, 0, 0, 0, 0));
            }
        }
        let bell = Bell(cid);
        let accepting = Arc::new(AtomicBool::new(true));
        let open = accepting.clone();
        let waiting = Arc::new(AtomicBool::new(false));
        let worker_waits = waiting.clone();
        Ok(Handoff {
            send: Box::new(move |w| {
                if !accepting.load(Ordering::SeqCst) {
                    return Err(w);
                }
                queue.lock().unwrap().push_back(w);
                if !waiting.swap(false, Ordering::SeqCst) {
                    // the worker is busy or has the wake-up: it looks at the queue before it waits
                    return Ok(());
                }
                match bell.wake() {
                    Ok(_) => Ok(()),
                    // the blocking wake-up failed: try a plain one (the worker takes any message
                    // but a stop as a wake-up), else hand the wake-up back to the waiting worker,
                    // so that the next submission wakes it
                    Err(_) if bell.nudge().is_ok() => Ok(()),
                    Err(_) => {
                        waiting.store(true, Ordering::SeqCst);
                        match queue.lock().unwrap().pop_back() {
                            Some(w) => Err(w),
                            // the worker has already taken it (and waits for this wake-up,
                            // which the next submission's brings)
                            None => Ok(()),
                        }
                    }
                }
            }),
            recv: Box::new(move || loop {
                worker_waits.store(true, Ordering::SeqCst);
                let found = q.lock().unwrap().pop_front();
                // with a batch in hand the wake-up is lowered again: if the submitting side had
                // lowered it first, its message is on the way and is taken below
                if found.is_some() && worker_waits.swap(false, Ordering::SeqCst) {
                    return found;
                }
                match xous::receive_message(sid) {
                    Ok(env) if env.body.id() == HANDOFF_STOP => return None,
                    Ok(env) => {
                        // the submitting thread is ready again once answered (an envelope's drop
                        // does not answer a blocking scalar)
                        if let xous::Message::BlockingScalar(_) = env.body {
                            let _ = xous::return_scalar(env.sender, 0);
                        }
                    }
                    Err(e) => {
                        // no more batches can reach the worker: later submissions fail at once
                        log::error!("DH worker: receiving from its server: {e:?}");
                        open.store(false, Ordering::SeqCst);
                        q.lock().unwrap().clear();
                        return None;
                    }
                }
                if found.is_some() {
                    return found;
                }
            }),
        })
    }
}

/// [`Handoff::xous_server`]'s message ids: a batch was queued; the submitting side is gone.
const HANDOFF_WORK: usize = 0;
const HANDOFF_STOP: usize = 1;

/// Runs batches on a worker thread; submit and poll return at once.
pub struct AsyncRunner {
    send: Box<dyn FnMut(Work) -> Result<(), Work> + Send>,
    done: Done,
    next: u64,
}

/// Called by the worker after each batch's result is ready (e.g. to wake a UI thread that
/// blocks on its own event channel).
pub type Notify = Box<dyn FnMut() + Send>;

impl AsyncRunner {
    pub fn new(f: DhFn, device: Device) -> Self {
        Self::with_notify(f, device, Box::new(|| {}))
    }

    /// As [`AsyncRunner::new`]; the worker calls `notify` after each result is ready to poll.
    pub fn with_notify(f: DhFn, device: Device, notify: Notify) -> Self {
        Self::with_handoff(f, device, notify, Handoff::std_channel())
    }

    /// As [`AsyncRunner::with_notify`], batches reaching the worker through `handoff`.
    pub fn with_handoff(mut f: DhFn, device: Device, mut notify: Notify, handoff: Handoff) -> Self {
        let Handoff { send, mut recv } = handoff;
        let done: Done = Arc::new((Mutex::new(HashMap::new()), Condvar::new()));
        let d2 = done.clone();
        std::thread::Builder::new()
            .name("chat-dh".into())
            .spawn(move || {
                while let Some((ticket, jobs, kem, submitted)) = recv() {
                    let r = device.run(&mut f, &jobs, &kem, submitted);
                    drop(jobs); // secrets wiped
                    drop(kem);
                    d2.0.lock().unwrap().insert(ticket, r);
                    d2.1.notify_all();
                    notify();
                }
            })
            .expect("spawn the DH worker");
        AsyncRunner { send, done, next: 1 }
    }

    /// Blocks until `ticket` is done or `timeout` passes (for headless callers; never the UI).
    pub fn wait(&mut self, ticket: u64, timeout: Duration) -> Option<Result<DhBatch, String>> {
        let deadline = Instant::now() + timeout;
        let mut g = self.done.0.lock().unwrap();
        loop {
            if let Some(r) = g.remove(&ticket) {
                return Some(r);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            g = self.done.1.wait_timeout(g, deadline - now).unwrap().0;
        }
    }
}

impl DhRunner for AsyncRunner {
    fn submit(&mut self, jobs: Vec<DhJob>, kem: Vec<KemJob>) -> u64 {
        let t = self.next;
        self.next += 1;
        if let Err((t, _, _, _)) = (self.send)((t, jobs, kem, Instant::now())) {
            self.done.0.lock().unwrap().insert(t, Err("DH worker stopped".into()));
        }
        t
    }
    fn poll(&mut self, ticket: u64) -> Option<Result<DhBatch, String>> {
        self.done.0.lock().unwrap().remove(&ticket)
    }
    fn mode(&self) -> &'static str {
        "async"
    }
}

/// x25519-dalek on the CPU (tests, and the reference the engine is compared with).
pub fn dalek_fn() -> DhFn {
    Box::new(|jobs: &[DhJob]| Ok(jobs.iter().map(|j| (j.run_dalek(), 0)).collect()))
}

/// A batch's jobs as the engine service takes them: (scalar, u) pairs, wiped when dropped.
pub fn engine_jobs(jobs: &[DhJob]) -> Zeroizing<Vec<([u8; 32], [u8; 32])>> {
    Zeroizing::new(jobs.iter().map(|j| (*j.secret_bytes(), j.public)).collect())
}

/// X25519 on the engine25519 service, a batch per request (blocking call: only ever on a
/// worker thread, or the UI thread in `--sync-dh` mode).
pub fn engine_fn(engine: engine25519::Engine25519) -> DhFn {
    Box::new(move |jobs: &[DhJob]| {
        let r = engine.x25519_batch(&engine_jobs(jobs)).map_err(|e| format!("engine25519: {e:?}"))?;
        Ok(r.into_iter().map(|r| (Zeroizing::new(r.result), r.cycles)).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::OsRng;

    /// A DH function that waits (at most 10 s) until the test opens its gate, and a flag
    /// raised once it has passed: a submit that returns with the flag down did not run its
    /// batch on the caller's thread (no wall-clock threshold, which a loaded machine breaks).
    fn gated_fn() -> (DhFn, mpsc::Sender<()>, Arc<std::sync::atomic::AtomicBool>) {
        let (open, gate) = mpsc::channel::<()>();
        let gate = std::sync::Mutex::new(gate);
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = ran.clone();
        let f: DhFn = Box::new(move |jobs: &[DhJob]| {
            let _ = gate.lock().unwrap().recv_timeout(Duration::from_secs(10));
            r.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(jobs.iter().map(|j| (j.run_dalek(), 1)).collect())
        });
        (f, open, ran)
    }

    fn job() -> DhJob {
        let s = ratchet::generate_secret(&mut OsRng).unwrap();
        DhJob::public_key(&s)
    }

    #[test]
    fn async_runner_notifies_after_each_result_is_ready() {
        let (ntx, nrx) = mpsc::channel::<()>();
        let (f, open, ran) = gated_fn();
        let mut r = AsyncRunner::with_notify(
            f,
            Device::new(Pacing::Off { clock_hz: 0 }),
            Box::new(move || {
                let _ = ntx.send(());
            }),
        );
        let jobs = vec![job(), job(), job()];
        let want: Vec<[u8; 32]> = jobs.iter().map(|j| *j.run_dalek()).collect();
        let a = r.submit(jobs, vec![]);
        let b = r.submit(vec![job()], vec![]);
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "submit ran a job on the caller's thread");
        assert!(nrx.try_recv().is_err(), "no notification before a batch is done");
        for _ in 0..4 {
            open.send(()).unwrap();
        }
        // one notification per batch, each after its result can be polled
        nrx.recv_timeout(Duration::from_secs(10)).expect("notified for a");
        let ba = r.poll(a).expect("a is ready when notified").unwrap();
        assert_eq!(ba.outputs.iter().map(|o| **o).collect::<Vec<_>>(), want);
        nrx.recv_timeout(Duration::from_secs(10)).expect("notified for b");
        assert_eq!(r.poll(b).expect("b is ready when notified").unwrap().jobs, 1);
        assert!(r.poll(a).is_none(), "a result is delivered once");
        assert!(nrx.try_recv().is_err(), "one notification per batch");
    }

    #[test]
    fn async_runner_returns_at_once_and_paces_to_device_time() {
        // 10,000 "cycles" per job at 1 MHz = 10 ms per job
        let f: DhFn = Box::new(|jobs: &[DhJob]| Ok(jobs.iter().map(|j| (j.run_dalek(), 10_000)).collect()));
        let mut r = AsyncRunner::new(f, Device::new(Pacing::Engine { clock_hz: 1_000_000 }));
        let jobs = vec![job(), job(), job()];
        let want: Vec<[u8; 32]> = jobs.iter().map(|j| *j.run_dalek()).collect();
        let t0 = Instant::now();
        let t = r.submit(jobs, vec![]);
        // (submit returning before the batch runs: kem_jobs_run_on_the_worker, gated)
        let b = r.wait(t, Duration::from_secs(5)).unwrap().unwrap();
        assert!(t0.elapsed() >= Duration::from_millis(30), "completed before the device would");
        assert_eq!(b.device, Duration::from_millis(30));
        assert_eq!(b.cycles, 30_000);
        assert_eq!(b.outputs.iter().map(|o| **o).collect::<Vec<_>>(), want);
    }

    #[test]
    fn sync_runner_blocks_for_the_batch() {
        let mut r = SyncRunner::new(dalek_fn(), Device::new(Pacing::Software { per_dh: Duration::from_millis(20) }));
        let t0 = Instant::now();
        let t = r.submit(vec![job(), job()], vec![]);
        assert!(t0.elapsed() >= Duration::from_millis(40));
        let b = r.poll(t).unwrap().unwrap();
        assert_eq!((b.jobs, b.device), (2, Duration::from_millis(40)));
    }

    #[test]
    fn provider_errors_are_delivered() {
        let f: DhFn = Box::new(|_jobs: &[DhJob]| Err("engine down".to_string()));
        let mut r = AsyncRunner::new(f, Device::new(Pacing::Off { clock_hz: 0 }));
        let t = r.submit(vec![job()], vec![]);
        assert_eq!(r.wait(t, Duration::from_secs(5)).unwrap().err().unwrap(), "engine down");
        // a KEM job that fails (an encapsulation key failing FIPS 203's modulus check)
        let mut r = AsyncRunner::new(dalek_fn(), Device::new(Pacing::Off { clock_hz: 0 }));
        let mut pk = Box::new([0u8; ratchet::kem::PUBLIC_KEY_LEN]);
        pk[0] = 0xff;
        pk[1] = 0x0f;
        let t = r.submit(vec![], vec![KemJob::Encapsulate { public_key: pk, randomness: Default::default() }]);
        assert!(r.wait(t, Duration::from_secs(5)).unwrap().err().unwrap().contains("ML-KEM"));
    }

    /// KEM jobs run on the worker too: submit returns at once, the results come with the batch.
    #[test]
    fn kem_jobs_run_on_the_worker() {
        let (f, open, ran) = gated_fn();
        let mut r = AsyncRunner::new(f, Device::new(Pacing::Off { clock_hz: 0 }));
        let seed = zeroize::Zeroizing::new([7u8; 64]);
        let KemOutput::PublicKey(pk) = (KemJob::KeyGen { seed: seed.clone() }).run().unwrap() else { panic!() };
        let kem = vec![
            KemJob::KeyGen { seed },
            KemJob::Encapsulate { public_key: pk.clone(), randomness: Default::default() },
        ];
        let t = r.submit(vec![job()], kem);
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "submit ran the batch on the caller's thread");
        assert!(r.poll(t).is_none(), "the batch is not done while its DH job waits");
        open.send(()).unwrap();
        let b = r.wait(t, Duration::from_secs(5)).unwrap().unwrap();
        assert_eq!((b.jobs, b.kem_jobs, b.kem_outputs.len()), (1, 2, 2));
        assert!(matches!(&b.kem_outputs[0], KemOutput::PublicKey(p) if **p == *pk));
        assert!(matches!(&b.kem_outputs[1], KemOutput::Encapsulated { .. }));
    }
}
