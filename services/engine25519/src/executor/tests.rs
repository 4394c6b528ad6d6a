//! The executor's unit tests (executor.rs), on the model engine: results against x25519-dalek,
//! pause and resume, suspend, window wipes, failing and refused jobs, fairness, the callers'
//! driver and the software fallback.

use super::*;
use crate::model_backend::ModelEngine;
use crate::programs::x25519_program;
use engine25519_core::isa::{Instr, Isa, UDF_WORD};
use std::collections::HashSet;
use std::sync::mpsc;

use det_rng::XorShift64 as Rng;

/// The backend methods a test engine passes straight to its `inner` model engine (every one but
/// `run` and the suspend hooks, which the tests' engines change).
macro_rules! delegate_to_inner {
    () => {
        fn id(&self) -> BackendId {
            self.inner.id()
        }
        fn available(&self) -> Result<(), String> {
            self.inner.available()
        }
        fn write_ucode(&mut self, s: usize, w: &[u32]) {
            self.inner.write_ucode(s, w)
        }
        fn read_ucode(&mut self, s: usize, o: &mut [u32]) {
            self.inner.read_ucode(s, o)
        }
        fn write_reg(&mut self, w: usize, r: usize, v: &Reg) {
            self.inner.write_reg(w, r, v)
        }
        fn read_reg(&mut self, w: usize, r: usize) -> Reg {
            self.inner.read_reg(w, r)
        }
        fn reset(&mut self) {
            self.inner.reset()
        }
    };
}

impl Executor {
    /// Tests: the backend, with the engine token's lock held.
    fn with_engine<R>(&self, f: impl FnOnce(&mut dyn EngineBackend) -> R) -> R {
        let mut ctx = self.engine.lock().unwrap();
        f(&mut *ctx.engine)
    }
}

fn start(cfg: Config) -> Arc<Executor> {
    Executor::start(Box::new(ModelEngine::new(Isa::V1)), x25519_program(Isa::V1), cfg)
}

fn chan() -> (ReplyFn, mpsc::Receiver<Outcome>) {
    let (tx, rx) = mpsc::channel();
    (
        Box::new(move |o| {
            let _ = tx.send(o);
        }),
        rx,
    )
}

const T: Duration = Duration::from_secs(60);

/// No detached run (the model backend cannot answer on its own anyway).
fn nd() -> Option<fn(u32) -> Option<crate::backend::DetachedReply>> {
    None
}

/// brz #0 to itself: never ends.
fn spin_program() -> Vec<u32> {
    // brz to itself forever; the trailing word keeps the branch off the program's last word
    // (a BRZ to the last word halts, as in the shipped RTL)
    vec![Instr { opcode: 9, ra: 0, ca: true, rb: 0, cb: false, wd: 0, imm: -1 }.encode(), 0]
}

#[test]
fn x25519_matches_dalek_with_constant_cycles() {
    let ex = start(Config::default());
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut cycles = HashSet::new();
    for _ in 0..6 {
        let (k, u) = (rng.bytes32(), rng.bytes32());
        let (reply, rx) = chan();
        ex.submit_x25519(7, &k, &u, reply).unwrap();
        let o = rx.recv_timeout(T).unwrap();
        assert_eq!(o.status, Status::Ok);
        assert_eq!(o.backend, BackendId::Model);
        assert_eq!(o.result, x25519_dalek::x25519(k, u), "engine result equals x25519-dalek");
        cycles.insert(o.cycles);
    }
    assert_eq!(cycles.len(), 1, "X25519 cycle count must not depend on the inputs: {cycles:?}");
    let s = ex.stats();
    assert_eq!((s.jobs, s.errors, s.queue_depth), (6, 0, 0));
}

/// A backend whose engine loses the completion of one job (the hw backend's lost interrupt,
/// `RunEnd::Lost`): that job fails with `EngineFault`, the server keeps serving, and the
/// next job gets the right answer.
#[test]
fn a_lost_completion_fails_that_job_only() {
    struct LosesOne {
        inner: ModelEngine,
        lose_at_run: usize,
        runs: usize,
    }
    impl EngineBackend for LosesOne {
        delegate_to_inner!();
        fn run(&mut self, l: Launch, at: Option<u32>, slice: u64, max: u64) -> RunEnd {
            self.runs += 1;
            let r = self.inner.run(l, at, slice, max);
            if self.runs == self.lose_at_run {
                return RunEnd::Lost { cycles: r.cycles(), reason: "test: completion lost".into() };
            }
            r
        }
    }
    let engine = LosesOne { inner: ModelEngine::new(Isa::V1), lose_at_run: 1, runs: 0 };
    let ex = Executor::start(Box::new(engine), x25519_program(Isa::V1), Config::default());
    let mut rng = Rng(0x5eed);
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let (k, u) = (rng.bytes32(), rng.bytes32());
        let (reply, rx) = chan();
        ex.submit_x25519(3, &k, &u, reply).unwrap();
        let o = rx.recv_timeout(T).expect("every job is answered");
        if o.status == Status::Ok {
            assert_eq!(o.result, x25519_dalek::x25519(k, u));
        }
        statuses.push(o.status);
    }
    assert_eq!(statuses, [Status::EngineFault, Status::Ok, Status::Ok]);
    let s = ex.stats();
    assert_eq!((s.jobs, s.errors, s.queue_depth), (2, 1, 0));
}

/// Every window is all zeros after X25519 jobs, although only the registers the microcode
/// names are wiped at a job's end: windows that held anything before (here: every register
/// of every window set before the executor starts) are wiped whole before operands go in.
#[test]
fn windows_are_zero_after_x25519_jobs_with_the_named_register_wipe() {
    for isa in [Isa::V1, Isa::V2] {
        let prog = x25519_program(isa);
        let all = (1u64 << NUM_REGS) - 1;
        if isa == Isa::V2 {
            // the ladder, the inversion and the batch program's ring name every register of
            // the window on v2: its wipe is the whole window, nothing to test here
            assert!(prog.batch.is_some() && prog.named == all, "v2: {:#x}", prog.named);
            continue;
        }
        assert!(
            prog.named != all && prog.named.count_ones() >= 3,
            "{isa}: the wipe must be narrower than the window to be tested here"
        );
        let mut engine = ModelEngine::new(isa);
        for w in 0..crate::api::NUM_WINDOWS {
            for r in 0..NUM_REGS {
                engine.write_reg(w, r, &[0xa5; 32]);
            }
        }
        let ex = Executor::start(Box::new(engine), prog, Config::default());
        let mut rng = Rng(0x5eed_0000 + isa as u64);
        let mut used = HashSet::new();
        for _ in 0..3 {
            let rxs: Vec<_> = (0..4)
                .map(|c| {
                    let (k, u) = (rng.bytes32(), rng.bytes32());
                    let (reply, rx) = chan();
                    ex.submit_x25519(c, &k, &u, reply).unwrap();
                    (rx, x25519_dalek::x25519(k, u))
                })
                .collect();
            for (rx, want) in rxs {
                let o = rx.recv_timeout(T).unwrap();
                assert_eq!((o.status, o.result), (Status::Ok, want));
                used.insert(o.window as usize);
            }
        }
        // the windows the jobs ran in; the others still hold what they held (and are
        // wiped whole before a job uses them)
        let dirty: Vec<(usize, usize)> = ex.with_engine(|e| {
            used.iter()
                .flat_map(|&w| (0..NUM_REGS).map(move |r| (w, r)))
                .filter(|&(w, r)| e.read_reg(w, r) != [0u8; 32])
                .collect()
        });
        assert!(!used.is_empty() && dirty.is_empty(), "{isa}: non-zero (window, register) after the jobs: {dirty:?}");
        assert_eq!(
            ex.st.lock().unwrap().c.bus_wipes,
            0,
            "{isa}: the engine's wipe program did the wiping, not the bus fallback"
        );
        let untouched = (0..crate::api::NUM_WINDOWS).find(|w| !used.contains(w));
        if let Some(w) = untouched {
            assert_eq!(
                ex.with_engine(|e| e.read_reg(w, 0)),
                [0xa5; 32],
                "the test's premise: window {w} was set before start"
            );
        }
    }
}

/// Pause at random instruction boundaries, save the engine state, power-cycle it, restore and
/// resume: same result and same total cycle count as an uninterrupted run.
#[test]
fn random_pause_points_resume_exactly() {
    let prog = x25519_program(Isa::V1);
    let mut rng = Rng(0xfeed_beef_0bad_cafe);
    let reference = engine25519_core::programs::x25519(Isa::V1, &[9; 32], &[5; 32]);
    for round in 0..4 {
        let (k, u) = (rng.bytes32(), rng.bytes32());
        let want = x25519_dalek::x25519(k, u);
        let mut e = ModelEngine::new(Isa::V1);
        e.write_ucode(100, &prog.words);
        let w = (round * 5) % 16;
        e.write_reg(w, prog.scalar_reg, &k);
        e.write_reg(w, prog.u_reg, &u);
        let l = Launch { window: w, mpstart: 100, mplen: prog.words.len() };
        let (mut resume, mut total, mut pauses) = (None, 0u64, 0);
        loop {
            let slice = 1 + rng.next() % 3000;
            match e.run(l, resume, slice, 1_000_000 - total) {
                RunEnd::Paused { cycles, mpc } => {
                    total += cycles;
                    pauses += 1;
                    resume = Some(mpc);
                    if rng.next() % 2 == 0 {
                        let snap = e.snapshot();
                        e.reset();
                        assert_eq!(e.read_reg(w, prog.scalar_reg), [0; 32], "reset wipes the RF");
                        e.restore(&snap);
                    }
                }
                RunEnd::Finished { cycles } => {
                    total += cycles;
                    break;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(pauses > 30, "paused {pauses} times");
        assert_eq!(e.read_reg(w, prog.out_reg), want);
        assert_eq!(total, reference.1, "same cycle count as an uninterrupted run");
    }
}

/// Suspend/Resume through the executor while jobs from several clients are in flight, with
/// tiny slices so the pause lands mid-job.
#[test]
fn suspend_resume_mid_job() {
    let ex = start(Config { slice: 97, quantum: 5_000, ..Config::default() });
    let mut rng = Rng(42);
    let mut pending = vec![];
    for c in 0..6u32 {
        let (k, u) = (rng.bytes32(), rng.bytes32());
        let (reply, rx) = chan();
        ex.submit_x25519(c, &k, &u, reply).unwrap();
        pending.push((x25519_dalek::x25519(k, u), rx));
    }
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(3));
        let (tx, rx) = mpsc::channel();
        ex.suspend(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        let (s, _) = rx.recv_timeout(T).unwrap();
        assert_eq!(s, Status::Ok);
        assert_eq!(ex.stats().suspended, 1);
        let (tx2, rx2) = mpsc::channel();
        ex.suspend(Box::new(move |s, n| tx2.send((s, n)).unwrap()));
        assert_eq!(rx2.recv_timeout(T).unwrap().0, Status::BadState, "double suspend refused");
        let (tx, rx) = mpsc::channel();
        ex.resume(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        assert_eq!(rx.recv_timeout(T).unwrap().0, Status::Ok);
    }
    let (tx, rx) = mpsc::channel();
    ex.resume(Box::new(move |s, n| tx.send((s, n)).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap().0, Status::BadState, "resume while running refused");
    for (want, rx) in pending {
        let o = rx.recv_timeout(T).unwrap();
        assert_eq!(o.status, Status::Ok);
        assert_eq!(o.result, want);
        assert_eq!(o.cycles, 114_072);
    }
    assert!(ex.stats().resumes > 6, "jobs were preempted and resumed");
}

/// An engine that cannot resume a paused job (Precursor's shipped engine: MPRESUME
/// undriven): the executor gives it each job whole; the engine pauses one only when a
/// suspend is pending, and that job restarts from its saved inputs after the resume. Several
/// clients' jobs in flight and queued, three suspends: every answer is right, none lost.
#[test]
fn suspend_on_an_engine_that_cannot_resume_restarts_the_job() {
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
    /// Runs (job starts) on which the engine waits for the test's suspend before it runs
    /// on: the suspend lands mid-job, deterministically. Which job a held run belongs to
    /// depends on how the queue filled while the test submitted (a parked job may even be
    /// held twice), so the test counts lost cycles, not jobs.
    const HELD_RUNS: [u32; 3] = [1, 4, 7];
    struct NoResume {
        inner: ModelEngine,
        flag: Option<Arc<AtomicBool>>,
        runs: Arc<AtomicU32>,
        /// engine cycles of the starts a suspend cut short
        lost: Arc<AtomicU64>,
    }
    impl EngineBackend for NoResume {
        delegate_to_inner!();
        fn run(&mut self, l: Launch, at: Option<u32>, _slice: u64, max: u64) -> RunEnd {
            if at.is_some() {
                return RunEnd::Fault { cycles: 0, reason: "test: this engine cannot resume".into() };
            }
            let n = self.runs.fetch_add(1, SeqCst) + 1;
            let flag = self.flag.clone().unwrap();
            let mut hold = HELD_RUNS.contains(&n);
            // the engine runs on its own; it is paused (at an instruction boundary) only
            // when a suspend is pending, looked at every 97 cycles
            let (mut total, mut resume) = (0u64, None);
            loop {
                match self.inner.run(l, resume, 97, max - total) {
                    RunEnd::Paused { cycles, mpc } => {
                        total += cycles;
                        resume = Some(mpc);
                        let t0 = Instant::now();
                        while hold && !flag.load(SeqCst) && t0.elapsed() < T {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        hold = false;
                        if flag.load(SeqCst) {
                            self.lost.fetch_add(total, SeqCst);
                            return RunEnd::Paused { cycles: total, mpc };
                        }
                    }
                    RunEnd::Finished { cycles } => return RunEnd::Finished { cycles: total + cycles },
                    other => return other,
                }
            }
        }
        fn can_resume(&self) -> bool {
            false
        }
        fn suspend_flag(&mut self, flag: Arc<AtomicBool>) {
            self.flag = Some(flag);
        }
    }
    let runs = Arc::new(AtomicU32::new(0));
    let lost = Arc::new(AtomicU64::new(0));
    let engine = NoResume { inner: ModelEngine::new(Isa::V1), flag: None, runs: runs.clone(), lost: lost.clone() };
    let ex = Executor::start(Box::new(engine), x25519_program(Isa::V1), Config::default());
    let mut rng = Rng(0xdead_5eed);
    let mut pending = vec![];
    for c in 0..6u32 {
        for _ in 0..2 {
            let (k, u) = (rng.bytes32(), rng.bytes32());
            let (reply, rx) = chan();
            ex.submit_x25519(c, &k, &u, reply).unwrap();
            pending.push((x25519_dalek::x25519(k, u), rx));
        }
    }
    for held in HELD_RUNS {
        let t0 = Instant::now();
        while runs.load(SeqCst) < held {
            assert!(t0.elapsed() < T, "run {held} never started");
            std::thread::sleep(Duration::from_micros(200));
        }
        let (tx, rx) = mpsc::channel();
        ex.suspend(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        assert_eq!(rx.recv_timeout(T).unwrap().0, Status::Ok);
        let (tx, rx) = mpsc::channel();
        ex.resume(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        assert_eq!(rx.recv_timeout(T).unwrap().0, Status::Ok);
    }
    let mut extra = 0u64;
    for (want, rx) in pending {
        let o = rx.recv_timeout(T).expect("every job is answered");
        assert_eq!(o.status, Status::Ok);
        assert_eq!(o.result, want, "a restarted job gives the right result");
        assert!(o.cycles >= 114_072);
        extra += o.cycles - 114_072;
    }
    assert_eq!(ex.restarts(), HELD_RUNS.len() as u64, "each suspend paused a job, which restarted");
    let lost = lost.load(SeqCst);
    assert!(lost > 0, "the suspends cut starts short");
    assert_eq!(extra, lost, "restarted jobs count the cycles of their lost starts");
    assert_eq!(ex.stats().resumes, ex.restarts(), "jobs are parked only for the suspends");
}

#[test]
fn runaway_and_illegal_programs_fail_cleanly_and_others_proceed() {
    let ex = start(Config { quantum: 20_000, ..Config::default() });
    let (spin, _) = ex.load_program(&spin_program()).unwrap();
    let (ill, _) = ex.load_program(&[UDF_WORD]).unwrap();
    let regs = [[0u8; 32]; NUM_REGS];
    // each reply is stamped with its place in the order of completion (the executor's own
    // order: a check of the runaway's receiver at some later wall-clock time would race
    // with the runaway finishing while this thread is descheduled)
    let order = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stamped = || {
        let (tx, rx) = mpsc::channel();
        let order = order.clone();
        let f: ReplyFn = Box::new(move |o| {
            let _ = tx.send((order.fetch_add(1, std::sync::atomic::Ordering::SeqCst), o));
        });
        (f, rx)
    };
    let (r1, spin_rx) = stamped();
    ex.submit_job(1, spin, WindowReq::Any, &regs, 3_000_000, r1).unwrap();
    let (r2, ill_rx) = stamped();
    ex.submit_job(2, ill, WindowReq::Fixed(9), &regs, 0, r2).unwrap();
    let (r3, x_rx) = stamped();
    ex.submit_x25519(3, &[1; 32], &[9; 32], r3).unwrap();
    // the X25519 and the illegal job finish while the runaway program is still spinning
    let (x_at, x) = x_rx.recv_timeout(T).unwrap();
    assert_eq!(x.result, x25519_dalek::x25519([1; 32], [9; 32]));
    let (i_at, i) = ill_rx.recv_timeout(T).unwrap();
    assert_eq!((i.status, i.window), (Status::IllegalInstruction, 9));
    let (s_at, s) = spin_rx.recv_timeout(T).unwrap();
    assert!(x_at < s_at && i_at < s_at, "runaway job finished last: no global lock-out ({x_at}, {i_at}, {s_at})");
    assert_eq!(s.status, Status::Runaway);
    assert!(s.cycles >= 3_000_000);
    let st = ex.stats();
    assert_eq!((st.jobs, st.errors, st.queue_depth), (1, 2, 0));
}

#[test]
fn custom_job_returns_registers_and_cycles() {
    let ex = start(Config::default());
    let mul = engine25519_core::programs::get("field_mul", Isa::V1).unwrap();
    let (h, _) = ex.load_program(mul.words()).unwrap();
    let (h2, _) = ex.load_program(mul.words()).unwrap();
    assert_eq!(h, h2, "programs are cached by content");
    let mut regs = [[0u8; 32]; NUM_REGS];
    regs[0][0] = 7;
    regs[1][0] = 6;
    let (r, rx) = chan();
    ex.submit_job(1, h, WindowReq::Fixed(15), &regs, 0, r).unwrap();
    let o = rx.recv_timeout(T).unwrap();
    assert_eq!(o.status, Status::Ok);
    let out = o.regs.unwrap();
    assert_eq!(out[31][0], 42);
    assert_eq!(o.window, 15);
    assert!(o.cycles > 0);
}

#[test]
fn bad_requests_are_refused() {
    let ex = start(Config { global_cap: 3, per_client_cap: 2, ..Config::default() });
    let regs = [[0u8; 32]; NUM_REGS];
    assert_eq!(ex.load_program(&[]).unwrap_err(), Status::BadProgram);
    assert_eq!(ex.load_program(&vec![0; 1025]).unwrap_err(), Status::BadProgram);
    let (r, _) = chan();
    assert_eq!(ex.submit_job(1, 0xdead_0001, WindowReq::Any, &regs, 0, r).unwrap_err(), Status::UnknownProgram);
    let (h, _) = ex.load_program(&spin_program()).unwrap();
    let (r, _) = chan();
    assert_eq!(ex.submit_job(1, h, WindowReq::Fixed(16), &regs, 0, r).unwrap_err(), Status::BadWindow);
    let (r, _) = chan();
    assert_eq!(ex.submit_job(1, h, WindowReq::Any, &regs, u64::MAX, r).unwrap_err(), Status::BadArgument);
    // fill the queue (engine suspended so nothing drains): per-client share, then global cap
    let (tx, rx) = mpsc::channel();
    ex.suspend(Box::new(move |s, _| tx.send(s).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    let mut keep = vec![];
    for _ in 0..2 {
        let (r, rx) = chan();
        ex.submit_job(1, h, WindowReq::Any, &regs, 100_000, r).unwrap();
        keep.push(rx);
    }
    let (r, _) = chan();
    assert_eq!(ex.submit_job(1, h, WindowReq::Any, &regs, 100_000, r).unwrap_err(), Status::Busy);
    let (r, rx) = chan();
    ex.submit_x25519(2, &[3; 32], &[9; 32], r).unwrap();
    keep.push(rx);
    let (r, _) = chan();
    assert_eq!(ex.submit_x25519(3, &[3; 32], &[9; 32], r).unwrap_err(), Status::Busy);
    assert_eq!(ex.stats().queue_depth, 3);
    let (tx, rx) = mpsc::channel();
    ex.resume(Box::new(move |s, _| tx.send(s).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    for rx in keep {
        let o = rx.recv_timeout(T).unwrap();
        assert!(o.status == Status::Runaway || o.status == Status::Ok);
    }
    assert!(ex.stats().busy == 2);
}

#[test]
fn close_answers_queued_jobs_then_refuses_new_work() {
    let ex = start(Config::default());
    let (tx, rx) = mpsc::channel();
    ex.suspend(Box::new(move |s, _| tx.send(s).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    let (r, queued) = chan();
    ex.submit_x25519(1, &[5; 32], &[9; 32], r).unwrap();
    assert!(!ex.close(), "a queued job is still unanswered");
    let (r, _) = chan();
    assert_eq!(ex.submit_x25519(2, &[5; 32], &[9; 32], r).unwrap_err(), Status::BadState);
    assert_eq!(ex.load_program(&[0]).unwrap_err(), Status::BadState);
    let (tx, rx) = mpsc::channel();
    ex.resume(Box::new(move |s, _| tx.send(s).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    let o = queued.recv_timeout(T).unwrap();
    assert_eq!((o.status, o.result), (Status::Ok, x25519_dalek::x25519([5; 32], [9; 32])));
    assert!(ex.close(), "queue drained");
}

/// The server's form answers every request exactly once through its closure: served ones
/// with the result, refused ones (queue full, service closed) with the refusal.
#[test]
fn answering_submission_delivers_refusals_through_the_reply() {
    let ex = start(Config { global_cap: 1, ..Config::default() });
    let (tx, rx) = mpsc::channel();
    ex.suspend(Box::new(move |s, _| tx.send(s).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    let (r1, first) = chan();
    ex.submit_x25519_answering(1, &[5; 32], &[9; 32], r1);
    let (r2, second) = chan();
    ex.submit_x25519_answering(2, &[5; 32], &[9; 32], r2);
    assert_eq!(second.recv_timeout(T).unwrap().status, Status::Busy, "the queue holds one job");
    assert!(first.try_recv().is_err(), "the queued job is not answered while suspended");
    let (tx, rx) = mpsc::channel();
    ex.resume(Box::new(move |s, _| tx.send(s).unwrap()));
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    let o = first.recv_timeout(T).unwrap();
    assert_eq!((o.status, o.result), (Status::Ok, x25519_dalek::x25519([5; 32], [9; 32])));
    assert!(ex.close());
    let (r3, third) = chan();
    ex.submit_x25519_answering(3, &[5; 32], &[9; 32], r3);
    assert_eq!(third.recv_timeout(T).unwrap().status, Status::BadState);
    assert!(second.try_recv().is_err() && first.try_recv().is_err(), "each reply runs once");
}

#[test]
fn fair_round_robin_under_load() {
    // callers drive: no worker can finish client 1's first jobs before the others have
    // queued theirs (with a worker thread the order depended on how the threads were scheduled)
    let ex = start(Config { driver: Driver::Callers, ..Config::default() });
    let (tx, rx) = mpsc::channel();
    // client 1 queues 8 jobs first, then clients 2..=4 queue 2 each
    let mut order = vec![];
    for (c, n) in [(1u32, 8), (2, 2), (3, 2), (4, 2)] {
        for _ in 0..n {
            let tx = tx.clone();
            ex.submit_x25519(c, &[c as u8; 32], &[9; 32], Box::new(move |o| tx.send((c, o.status)).unwrap())).unwrap();
        }
    }
    ex.drive();
    for _ in 0..14 {
        let (c, s) = rx.recv_timeout(T).unwrap();
        assert_eq!(s, Status::Ok);
        order.push(c);
    }
    // within the first 8 completions every client has had its 2 turns
    let first: HashSet<u32> = order[..8].iter().copied().collect();
    assert_eq!(first.len(), 4, "order {order:?}");
    assert_eq!(order[8..].iter().filter(|&&c| c == 1).count(), 6, "order {order:?}");
}

/// `Driver::Callers` (the server's mode): 4 threads submit and drive concurrently, a fifth
/// suspends and resumes mid-job; every result is right, none is lost, and nothing else drives.
#[test]
fn callers_drive_concurrently_with_suspend() {
    let ex = start(Config { driver: Driver::Callers, slice: 97, quantum: 3_000, ..Config::default() });
    let mut threads = vec![];
    for c in 0..4u32 {
        let ex = ex.clone();
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng(0x5eed + c as u64);
            let mut pending = vec![];
            for _ in 0..5 {
                let (k, u) = (rng.bytes32(), rng.bytes32());
                let (reply, rx) = chan();
                ex.submit_x25519(c, &k, &u, reply).unwrap();
                ex.drive();
                pending.push((x25519_dalek::x25519(k, u), rx));
            }
            for (want, rx) in pending {
                ex.drive(); // a thread keeps driving until its results are in (the server
                            // calls drive after every message)
                let o = rx.recv_timeout(T).unwrap();
                assert_eq!((o.status, o.result), (Status::Ok, want));
            }
        }));
    }
    for _ in 0..3 {
        // land each suspend while a thread holds the engine with a job on it (after the first
        // job ended: the programs are in the microcode RAM), not after a fixed sleep: on a loaded
        // machine the 20 jobs could all end before the first suspend
        let t = Instant::now();
        while !(ex.st.lock().unwrap().driving && (1..20).contains(&ex.stats().jobs)) && ex.stats().jobs < 20 {
            assert!(t.elapsed() < T, "no job ever took the engine");
            std::thread::yield_now();
        }
        let (tx, rx) = mpsc::channel();
        ex.suspend(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        ex.drive();
        let s = rx.recv_timeout(T).unwrap().0;
        assert!(s == Status::Ok || s == Status::BadState, "{s:?}");
        let (tx, rx) = mpsc::channel();
        ex.resume(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        ex.drive();
        let r = rx.recv_timeout(T).unwrap().0;
        assert!(r == Status::Ok || r == Status::BadState, "{r:?}");
    }
    for t in threads {
        t.join().unwrap();
    }
    let s = ex.stats();
    assert_eq!((s.jobs, s.queue_depth, s.suspended), (20, 0, 0));
}

/// `Driver::Callers`: while one thread runs a long job, another thread's submit + drive
/// return at once (the receive loop never waits for the engine), and its job runs on the
/// driving thread after the long job's quantum.
#[test]
fn callers_drive_never_blocks_on_a_busy_engine() {
    let ex = start(Config { driver: Driver::Callers, quantum: 50_000, ..Config::default() });
    let (spin, _) = ex.load_program(&spin_program()).unwrap();
    let regs = [[0u8; 32]; NUM_REGS];
    let (r1, spin_rx) = chan();
    ex.submit_job(1, spin, WindowReq::Any, &regs, 5_000_000, r1).unwrap();
    let ex2 = ex.clone();
    let driver = std::thread::spawn(move || ex2.drive());
    while !ex.st.lock().unwrap().driving {
        std::thread::yield_now();
    }
    let (r2, x_rx) = chan();
    ex.submit_x25519(2, &[4; 32], &[9; 32], r2).unwrap();
    ex.drive();
    // no wall-clock bound (a loaded machine breaks one): a drive that waited for the busy
    // engine would have returned only after the runaway job's end
    assert!(spin_rx.try_recv().is_err(), "drive returned while the runaway job still runs");
    let x = x_rx.recv_timeout(T).unwrap();
    assert_eq!(x.result, x25519_dalek::x25519([4; 32], [9; 32]));
    assert!(spin_rx.try_recv().is_err(), "X25519 finished while the runaway job still runs");
    assert_eq!(spin_rx.recv_timeout(T).unwrap().status, Status::Runaway);
    driver.join().unwrap();
}

#[test]
fn software_fallback_is_labelled_and_counted() {
    let ex = Executor::start(Box::new(crate::backend::Unavailable::rtl()), x25519_program(Isa::V1), Config::default());
    assert!(ex.unavailable_reason().unwrap().contains("not available"));
    let (r, rx) = chan();
    ex.submit_x25519(1, &[5; 32], &[9; 32], r).unwrap();
    let o = rx.recv_timeout(T).unwrap();
    assert_eq!((o.status, o.backend), (Status::Ok, BackendId::Software));
    assert_eq!(o.result, x25519_dalek::x25519([5; 32], [9; 32]));
    assert_eq!(ex.stats().fallbacks, 1);
    assert_eq!(ex.load_program(&[1]).unwrap_err(), Status::EngineUnavailable);
    let strict = Executor::start(
        Box::new(crate::backend::Unavailable::rtl()),
        x25519_program(Isa::V1),
        Config { software_fallback: false, ..Config::default() },
    );
    let (r, _) = chan();
    assert_eq!(strict.submit_x25519(1, &[5; 32], &[9; 32], r).unwrap_err(), Status::EngineUnavailable);
}

/// `x25519_now` with the engine idle: the job runs on the calling thread and is answered
/// there before the call returns (no queue round), right and counted; with a job already on the
/// engine (another thread drives a long one), the call returns at once and the job is queued
/// and answered by the driving thread.
#[test]
fn x25519_now_runs_at_once_when_idle_and_queues_behind_a_busy_engine() {
    let ex = start(Config { driver: Driver::Callers, quantum: 50_000, ..Config::default() });
    let (tx, rx) = mpsc::channel();
    let me = std::thread::current().id();
    ex.x25519_now(
        7,
        &[5; 32],
        &[9; 32],
        &|| {},
        move |o: Outcome| tx.send((o, std::thread::current().id())).unwrap(),
        nd(),
    );
    let (o, on) = rx.try_recv().expect("answered before x25519_now returned");
    assert_eq!(
        (o.status, o.backend, o.result, on),
        (Status::Ok, BackendId::Model, x25519_dalek::x25519([5; 32], [9; 32]), me)
    );
    assert_eq!(o.cycles, x25519_program(Isa::V1).cycles);
    let s = ex.stats();
    assert_eq!((s.jobs, s.queue_depth, s.clients), (1, 0, 1));

    let (spin, _) = ex.load_program(&spin_program()).unwrap();
    let (r1, spin_rx) = chan();
    ex.submit_job(1, spin, WindowReq::Any, &[[0u8; 32]; NUM_REGS], 5_000_000, r1).unwrap();
    let ex2 = ex.clone();
    let driver = std::thread::spawn(move || ex2.drive());
    while !ex.st.lock().unwrap().driving {
        std::thread::yield_now();
    }
    let t = Instant::now();
    let (tx, rx) = mpsc::channel();
    ex.x25519_now(2, &[4; 32], &[9; 32], &|| {}, move |o: Outcome| tx.send(o).unwrap(), nd());
    assert!(t.elapsed() < Duration::from_millis(5), "x25519_now returned at once: {:?}", t.elapsed());
    let x = rx.recv_timeout(T).unwrap();
    assert_eq!((x.status, x.result), (Status::Ok, x25519_dalek::x25519([4; 32], [9; 32])));
    assert_eq!(spin_rx.recv_timeout(T).unwrap().status, Status::Runaway);
    driver.join().unwrap();
    // suspended: queued, answered after the resume
    let (tx, rx) = mpsc::channel();
    ex.suspend(Box::new(move |s, _| tx.send(s).unwrap()));
    ex.drive();
    assert_eq!(rx.recv_timeout(T).unwrap(), Status::Ok);
    let (tx, rx) = mpsc::channel();
    ex.x25519_now(3, &[6; 32], &[9; 32], &|| {}, move |o: Outcome| tx.send(o).unwrap(), nd());
    assert!(rx.try_recv().is_err(), "a job ran while suspended");
    let (tx2, rx2) = mpsc::channel();
    ex.resume(Box::new(move |s, _| tx2.send(s).unwrap()));
    ex.drive();
    assert_eq!(rx2.recv_timeout(T).unwrap(), Status::Ok);
    assert_eq!(rx.recv_timeout(T).unwrap().result, x25519_dalek::x25519([6; 32], [9; 32]));
}

/// `x25519_now` from 4 threads at once while a fifth suspends and resumes: jobs dispatched
/// directly and parked by a suspend go back to the queue with their reply (any thread may end
/// them); every result is right, none is lost.
#[test]
fn x25519_now_concurrently_with_suspend() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    /// Holds the first X25519 on the engine until a suspend is requested, so that one suspend
    /// surely lands mid-job (timing alone did not: on a loaded machine the 20 jobs could all end
    /// before the first suspend, or after the last)
    struct HoldsFirstJob {
        inner: ModelEngine,
        suspend: Option<Arc<AtomicBool>>,
        holding: Arc<AtomicBool>,
        held: bool,
    }
    impl EngineBackend for HoldsFirstJob {
        delegate_to_inner!();
        fn run(&mut self, l: Launch, at: Option<u32>, slice: u64, max: u64) -> RunEnd {
            if !self.held && max > WIPE_BUDGET {
                self.held = true;
                self.holding.store(true, SeqCst);
                let t = Instant::now();
                while !self.suspend.as_ref().unwrap().load(SeqCst) {
                    assert!(t.elapsed() < T, "no suspend came");
                    std::thread::yield_now();
                }
            }
            self.inner.run(l, at, slice, max)
        }
        fn suspend_flag(&mut self, f: Arc<AtomicBool>) {
            self.suspend = Some(f);
        }
        // the model keeps its paused sequencer states in its snapshot
        fn snapshot(&mut self) -> Snapshot {
            self.inner.snapshot()
        }
        fn restore(&mut self, s: &Snapshot) {
            self.inner.restore(s)
        }
    }
    let holding = Arc::new(AtomicBool::new(false));
    let engine =
        HoldsFirstJob { inner: ModelEngine::new(Isa::V1), suspend: None, holding: holding.clone(), held: false };
    let ex = Executor::start(
        Box::new(engine),
        x25519_program(Isa::V1),
        Config { driver: Driver::Callers, slice: 97, quantum: 3_000, ..Config::default() },
    );
    let mut threads = vec![];
    for c in 0..4u32 {
        let ex = ex.clone();
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng(0xd1ec7 + c as u64);
            for _ in 0..5 {
                let (k, u) = (rng.bytes32(), rng.bytes32());
                let (tx, rx) = mpsc::channel();
                ex.x25519_now(c, &k, &u, &|| {}, move |o: Outcome| tx.send(o).unwrap(), nd());
                let t = Instant::now();
                let o = loop {
                    if let Ok(o) = rx.try_recv() {
                        break o;
                    }
                    assert!(t.elapsed() < T, "client {c}: no answer");
                    ex.drive(); // as the server's receive loop does after every message
                    std::thread::yield_now();
                };
                assert_eq!((o.status, o.result), (Status::Ok, x25519_dalek::x25519(k, u)));
            }
        }));
    }
    for round in 0..3 {
        if round == 0 {
            // the first job is on the engine, held until this suspend
            let t = Instant::now();
            while !holding.load(SeqCst) {
                assert!(t.elapsed() < T, "no job reached the engine");
                std::thread::yield_now();
            }
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
        let (tx, rx) = mpsc::channel();
        ex.suspend(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        ex.drive();
        assert_eq!(rx.recv_timeout(T).unwrap().0, Status::Ok);
        let (tx, rx) = mpsc::channel();
        ex.resume(Box::new(move |s, n| tx.send((s, n)).unwrap()));
        ex.drive();
        assert_eq!(rx.recv_timeout(T).unwrap().0, Status::Ok);
    }
    for t in threads {
        t.join().unwrap();
    }
    let s = ex.stats();
    assert_eq!((s.jobs, s.queue_depth, s.suspended), (20, 0, 0));
    assert!(s.resumes > 0, "no job was ever parked");
}

/// `x25519_now` on an engine that cannot resume (the shipped engine): a suspend lands while
/// the directly dispatched job runs; the job is paused for it, goes back to the queue with its
/// reply, restarts from its inputs after the resume (on the thread that drives then) and gives
/// the right answer, exactly once.
#[test]
fn x25519_now_parked_by_a_suspend_on_an_engine_that_cannot_resume() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
    struct HoldsFirstRun {
        inner: ModelEngine,
        flag: Option<Arc<AtomicBool>>,
        runs: Arc<AtomicU32>,
    }
    impl EngineBackend for HoldsFirstRun {
        delegate_to_inner!();
        fn run(&mut self, l: Launch, at: Option<u32>, slice: u64, max: u64) -> RunEnd {
            assert!(at.is_none(), "a job resumed on an engine that cannot resume");
            if self.runs.fetch_add(1, SeqCst) == 0 {
                // the first job waits for the suspend, then stops at an instruction boundary
                let flag = self.flag.clone().unwrap();
                let t0 = Instant::now();
                while !flag.load(SeqCst) {
                    assert!(t0.elapsed() < T, "no suspend came");
                    std::thread::sleep(Duration::from_micros(200));
                }
                return match self.inner.run(l, None, 97, max) {
                    RunEnd::Paused { cycles, mpc } => RunEnd::Paused { cycles, mpc },
                    other => panic!("the first slice ended: {other:?}"),
                };
            }
            self.inner.run(l, at, slice.max(max), max)
        }
        fn can_resume(&self) -> bool {
            false
        }
        fn suspend_flag(&mut self, flag: Arc<AtomicBool>) {
            self.flag = Some(flag);
        }
    }
    let runs = Arc::new(AtomicU32::new(0));
    let engine = HoldsFirstRun { inner: ModelEngine::new(Isa::V1), flag: None, runs: runs.clone() };
    let ex = Executor::start(
        Box::new(engine),
        x25519_program(Isa::V1),
        Config { driver: Driver::Callers, ..Config::default() },
    );
    let (k, u) = ([0x31; 32], [9; 32]);
    let (tx, rx) = mpsc::channel();
    let ex2 = ex.clone();
    let client =
        std::thread::spawn(move || ex2.x25519_now(5, &k, &u, &|| {}, move |o: Outcome| tx.send(o).unwrap(), nd()));
    while runs.load(SeqCst) == 0 {
        std::thread::yield_now();
    }
    let (stx, srx) = mpsc::channel();
    ex.suspend(Box::new(move |s, n| stx.send((s, n)).unwrap()));
    ex.drive(); // returns at once: the client's thread holds the token and answers the suspend
    assert_eq!(srx.recv_timeout(T).unwrap(), (Status::Ok, 1), "suspended with the parked job in flight");
    client.join().unwrap();
    assert!(rx.try_recv().is_err(), "answered while suspended");
    let (rtx, rrx) = mpsc::channel();
    ex.resume(Box::new(move |s, n| rtx.send((s, n)).unwrap()));
    ex.drive();
    assert_eq!(rrx.recv_timeout(T).unwrap().0, Status::Ok);
    let o = rx.recv_timeout(T).expect("the parked job is answered after the resume");
    assert_eq!((o.status, o.result), (Status::Ok, x25519_dalek::x25519(k, u)));
    assert!(rx.try_recv().is_err(), "answered twice");
    // engine runs: the held start, the restart, the window wipe after it
    assert_eq!((ex.restarts(), runs.load(SeqCst)), (1, 3));
    assert_eq!(ex.stats().jobs, 1);
}

/// A backend that answers detached X25519s on its own, as the hw backend's interrupt handler
/// does: the model runs the job at its start; its "interrupt" comes when the test fires it (or
/// never, for a lost one). The client's answer is what the fake writes into its reply page.
struct Detaching {
    inner: ModelEngine,
    d: Arc<Mutex<FakeDetached>>,
}
#[derive(Default)]
struct FakeDetached {
    /// the running detached job
    job: Option<(Launch, crate::backend::DetachedReply)>,
    /// its interrupt has come / will never come
    fired: bool,
    lost: bool,
    /// the executor's wake flag (a thread wants the engine)
    want_wake: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// results the "handler" answered, in order
    answered: Vec<Reg>,
    /// jobs in each run the backend started (a batch: one run per X25519, or up to three
    /// jobs in one run of the batch program)
    runs: Vec<usize>,
    /// the batch program the executor handed over (`EngineBackend::batch_program`)
    program: Option<crate::backend::BatchRun>,
    ticks: u32,
}

/// What the hw backend's `load_run` does: jobs `first + from .. first + n` of a detached batch's
/// run from the lent page into their registers (wiped in the page), then the run's counter.
fn load_run_from_page(
    e: &mut ModelEngine,
    prog: Option<&crate::backend::BatchRun>,
    window: usize,
    r: &crate::backend::DetachedReply,
    b: &crate::backend::DetachedBatch,
    (first, from, n): (usize, usize, usize),
) {
    let page = unsafe { std::slice::from_raw_parts_mut(r.page as *mut u8, r.page_len) };
    for j in from..n {
        let (kr, ur) = b.operand_regs(prog, n, j);
        for (at, reg) in [(b.scalars_at, kr), (b.us_at, ur)] {
            let v: [u8; 32] = page[at + 32 * (first + j)..][..32].try_into().unwrap();
            e.write_reg(window, reg, &v);
            page[at + 32 * (first + j)..][..32].fill(0);
        }
    }
    if let Some((reg, v)) = b.counter(prog, n) {
        e.write_reg(window, reg, &v);
    }
}
impl EngineBackend for Detaching {
    delegate_to_inner!();
    fn run(&mut self, l: Launch, at: Option<u32>, slice: u64, max: u64) -> RunEnd {
        assert!(self.d.lock().unwrap().job.is_none(), "the engine ran a job while a detached one held it");
        self.inner.run(l, at, slice, max)
    }
    fn can_detach(&self) -> bool {
        true
    }
    fn wake_flag(&mut self, f: Arc<std::sync::atomic::AtomicBool>) {
        self.d.lock().unwrap().want_wake = Some(f);
    }
    fn batch_program(&mut self, p: crate::backend::BatchRun) {
        self.d.lock().unwrap().program = Some(p);
    }
    fn start_detached(&mut self, l: Launch, r: crate::backend::DetachedReply) -> bool {
        let mut d = self.d.lock().unwrap();
        assert!(d.job.is_none());
        // as the hw backend: a batch's first run takes up to three jobs with the batch program
        let prog = d.program;
        let n = r.batch.map_or(1, |b| b.run_len(prog.as_ref(), 0));
        let mut run = l;
        if let Some(b) = r.batch {
            load_run_from_page(&mut self.inner, prog.as_ref(), l.window, &r, &b, (0, 1, n));
            run = b.launch(prog.as_ref(), n, l);
        }
        d.runs.push(n);
        assert!(matches!(self.inner.run(run, None, r.max_cycles, r.max_cycles), RunEnd::Finished { .. }));
        (d.job, d.fired, d.ticks) = (Some((l, r)), false, 0);
        true
    }
    fn poll_detached(&mut self, tick: bool) -> Detached {
        let mut d = self.d.lock().unwrap();
        let (l, r) = d.job.expect("a detached job");
        if d.fired {
            d.job = None;
            let w = r.wipe.expect("the wipe program");
            // what the hw backend's handler does at each run's end, on a real page: the run's
            // results into their slots, the wipe, the next run's operands from the page
            let prog = d.program;
            let prog = prog.as_ref();
            let (mut first, mut n) = (0, r.batch.map_or(1, |b| b.run_len(prog, 0)));
            loop {
                for j in 0..n {
                    let reg = r.batch.map_or(r.out_reg, |b| b.result_reg(prog, n, j, r.out_reg));
                    let result = self.inner.read_reg(l.window, reg);
                    d.answered.push(result);
                    if r.batch.is_some() {
                        let page = unsafe { std::slice::from_raw_parts_mut(r.page as *mut u8, r.page_len) };
                        page[r.result_at + 32 * (first + j)..][..32].copy_from_slice(&result);
                    }
                }
                match r.batch {
                    Some(b) if first + n < b.count => {
                        assert!(matches!(self.inner.run(w, None, 10_000, 10_000), RunEnd::Finished { .. }));
                        assert!(self.inner.read_window(l.window).iter().all(|x| x == &[0u8; 32]), "wiped between runs");
                        first += n;
                        n = b.run_len(prog, first);
                        load_run_from_page(&mut self.inner, prog, l.window, &r, &b, (first, 0, n));
                        d.runs.push(n);
                        let run = b.launch(prog, n, l);
                        assert!(matches!(
                            self.inner.run(run, None, r.max_cycles, r.max_cycles),
                            RunEnd::Finished { .. }
                        ));
                    }
                    _ => break,
                }
            }
            return Detached::Answered {
                wiped: matches!(self.inner.run(w, None, 10_000, 10_000), RunEnd::Finished { .. }),
            };
        }
        if tick && d.lost {
            d.ticks += 1;
            if d.ticks >= 2 {
                d.job = None;
                return Detached::Unanswered(RunEnd::Lost { cycles: 0, reason: "test: interrupt lost".into() });
            }
        }
        Detached::Running
    }
}

/// A detached X25519 (the hw backend's interrupt handler answers the client): `x25519_now`
/// returns with the job on the engine and no thread waiting for it; the backend's answer is the
/// right result and the reply closure only releases the request (`answered`); the job holds the
/// engine until a thread settles it (the next request, a wake, Stats), so a job from another
/// client queues meanwhile and runs once the detached one is settled; a detached job whose
/// interrupt never comes fails with EngineFault at the backend's ticks, its reply closure
/// answers it, and the next detached job works; every window is zero afterwards.
#[test]
fn detached_x25519_is_answered_by_the_backend_and_settled_by_the_next_thread() {
    let d = Arc::new(Mutex::new(FakeDetached::default()));
    let engine = Detaching { inner: ModelEngine::new(Isa::V1), d: d.clone() };
    let ex = Executor::start(
        Box::new(engine),
        x25519_program(Isa::V1),
        Config { driver: Driver::Callers, ..Config::default() },
    );
    let target =
        |w: u32| Some(crate::backend::DetachedReply::over_page(1, 0x1000, 4096, 0, 64, 1, None)).filter(|_| w < 16);
    let (k1, k2, u) = ([5u8; 32], [6u8; 32], [9u8; 32]);
    ex.drive(); // the programs go into the microcode RAM (until then a job takes the queue)
    let (tx, rx) = mpsc::channel();
    let t1 = tx.clone();
    ex.x25519_now(7, &k1, &u, &|| {}, move |o: Outcome| t1.send(o).unwrap(), Some(target));
    assert!(rx.try_recv().is_err(), "a detached job is not answered through its closure at once");
    let woken = d.lock().unwrap().want_wake.as_ref().unwrap().load(std::sync::atomic::Ordering::SeqCst);
    assert!(!woken, "alone on the engine, its end wakes no thread");
    ex.drive_with(&|| {}); // as the receive loop does after each request: no wake asked either
    let woken = d.lock().unwrap().want_wake.as_ref().unwrap().load(std::sync::atomic::Ordering::SeqCst);
    assert!(!woken);
    assert!(d.lock().unwrap().job.is_some());
    // another client meanwhile: queued behind the detached job (its thread asks for a wake)
    let t2 = tx.clone();
    ex.x25519_now(8, &k2, &u, &|| {}, move |o: Outcome| t2.send(o).unwrap(), Some(target));
    assert!(rx.try_recv().is_err(), "a job ran while the detached one held the engine");
    let woken = d.lock().unwrap().want_wake.as_ref().unwrap().load(std::sync::atomic::Ordering::SeqCst);
    assert!(woken, "the queued job asks for a wake at the detached job's end");
    // the interrupt: the backend answers; the woken thread settles it and runs the queued job
    d.lock().unwrap().fired = true;
    ex.wake(false, &|| {});
    let a = rx.recv_timeout(T).unwrap();
    assert!(a.answered && a.status == Status::Ok, "the detached job's closure only releases its request");
    assert_eq!(d.lock().unwrap().answered, vec![x25519_dalek::x25519(k1, u)]);
    let b = rx.recv_timeout(T).unwrap();
    assert!(!b.answered);
    assert_eq!((b.status, b.result), (Status::Ok, x25519_dalek::x25519(k2, u)));
    let s = ex.stats();
    assert_eq!((s.jobs, s.errors, s.queue_depth), (2, 0, 0));
    // a lost interrupt: the ticks fail it, the closure answers EngineFault
    d.lock().unwrap().lost = true;
    let t3 = tx.clone();
    ex.x25519_now(7, &k1, &u, &|| {}, move |o: Outcome| t3.send(o).unwrap(), Some(target));
    ex.wake(true, &|| {});
    assert!(rx.try_recv().is_err(), "failed before its second tick");
    ex.wake(true, &|| {});
    let c = rx.recv_timeout(T).unwrap();
    assert!(!c.answered);
    assert_eq!(c.status, Status::EngineFault);
    // the next one works; Stats settles it
    d.lock().unwrap().lost = false;
    let t4 = tx.clone();
    ex.x25519_now(9, &k2, &u, &|| {}, move |o: Outcome| t4.send(o).unwrap(), Some(target));
    d.lock().unwrap().fired = true;
    let s = ex.stats();
    assert!(rx.recv_timeout(T).unwrap().answered);
    assert_eq!((s.jobs, s.errors, s.queue_depth), (3, 1, 0));
    assert_eq!(d.lock().unwrap().answered.last(), Some(&x25519_dalek::x25519(k2, u)));
    for w in 0..crate::api::NUM_WINDOWS {
        assert!(ex.with_engine(|e| e.read_window(w)).iter().all(|r| r == &[0u8; 32]), "window {w} wiped");
    }
}

fn batch_chan() -> (BatchReplyFn, mpsc::Receiver<(Status, Vec<Outcome>)>) {
    let (tx, rx) = mpsc::channel();
    (
        Box::new(move |s, o| {
            let _ = tx.send((s, o));
        }),
        rx,
    )
}

/// X25519Batch: 1..=MAX_BATCH jobs, each result equal to x25519-dalek's (and RFC 7748's first
/// vector among them), in job order, one reply per batch; the callers' driver runs them.
#[test]
fn batch_results_match_dalek_in_job_order() {
    for driver in [Driver::Thread, Driver::Callers] {
        let ex = start(Config { driver, ..Config::default() });
        let mut rng = Rng(0xba7c_4000_0000_0001);
        let (k0, u0, want0) = crate::programs::X25519_KAT;
        for n in 1..=crate::api::MAX_BATCH {
            let mut jobs: Vec<(Zeroizing<[u8; 32]>, [u8; 32])> =
                (0..n).map(|_| (Zeroizing::new(rng.bytes32()), rng.bytes32())).collect();
            jobs[0] = (Zeroizing::new(k0), u0);
            let (reply, rx) = batch_chan();
            ex.submit_x25519_batch(9, &jobs, reply);
            ex.drive();
            let (s, outs) = rx.recv_timeout(T).unwrap();
            assert_eq!(s, Status::Ok, "{driver:?} batch of {n}");
            assert_eq!(outs.len(), n);
            assert_eq!(outs[0].result, want0, "RFC 7748 5.2's first vector");
            for (o, (k, u)) in outs.iter().zip(&jobs) {
                assert_eq!((o.status, o.result), (Status::Ok, x25519_dalek::x25519(**k, *u)));
            }
            assert!(rx.try_recv().is_err(), "one reply per batch");
        }
        let s = ex.stats();
        assert_eq!((s.jobs, s.errors, s.queue_depth), (10, 0, 0), "{driver:?}");
    }
}

/// A batch that is empty or too long is refused (BadArgument, counted) without running a job;
/// a batch refused in the middle (queue full) fails as a whole with Busy and returns no result
/// (the jobs queued before the refusal still run and are wiped); the executor keeps serving.
#[test]
fn bad_and_refused_batches_fail_whole_and_the_executor_keeps_serving() {
    let ex = start(Config { driver: Driver::Callers, per_client_cap: 2, ..Config::default() });
    let job = (Zeroizing::new([5u8; 32]), [9u8; 32]);
    for n in [0, crate::api::MAX_BATCH + 1, 100] {
        let jobs = vec![job.clone(); n];
        let (reply, rx) = batch_chan();
        ex.submit_x25519_batch(1, &jobs, reply);
        let (s, outs) = rx.recv_timeout(T).unwrap();
        assert_eq!((s, outs.len()), (Status::BadArgument, 0), "batch of {n}");
    }
    assert_eq!((ex.stats().errors, ex.stats().jobs), (3, 0));
    // three jobs against a per-client share of two: the third is refused
    let (reply, rx) = batch_chan();
    ex.submit_x25519_batch(1, &vec![job.clone(); 3], reply);
    ex.drive();
    let (s, outs) = rx.recv_timeout(T).unwrap();
    assert_eq!(s, Status::Busy);
    assert_eq!(outs.len(), 2, "the two queued jobs ran");
    assert!(outs.iter().all(|o| o.result == [0; 32]), "no result of a failed batch survives");
    // a job that fails fails the batch with its own status: none here, so serve a good one
    let (reply, rx) = batch_chan();
    ex.submit_x25519_batch(1, &vec![job.clone(); 2], reply);
    ex.drive();
    let (s, outs) = rx.recv_timeout(T).unwrap();
    assert_eq!(s, Status::Ok);
    assert!(outs.iter().all(|o| o.result == x25519_dalek::x25519([5; 32], [9; 32])));
    // closed: refused with BadState
    assert!(ex.close());
    let (reply, rx) = batch_chan();
    ex.submit_x25519_batch(1, &vec![job; 2], reply);
    assert_eq!(rx.recv_timeout(T).unwrap().0, Status::BadState);
}

/// Back-to-back detached X25519s (one client after another, as the device's clients call): each
/// new job takes over the answered previous one's token and window (`handover`), the previous
/// one's closure still runs once (answered), every result is right and counted once; a pending
/// suspend request, or a queued job, stops the take-over (the answered job is settled the usual
/// way and the request served first); every window is zero at the end.
#[test]
fn back_to_back_detached_jobs_hand_the_engine_over() {
    let d = Arc::new(Mutex::new(FakeDetached::default()));
    let engine = Detaching { inner: ModelEngine::new(Isa::V1), d: d.clone() };
    let ex = Executor::start(
        Box::new(engine),
        x25519_program(Isa::V1),
        Config { driver: Driver::Callers, ..Config::default() },
    );
    let target = |_w: u32| Some(crate::backend::DetachedReply::over_page(1, 0x1000, 4096, 0, 64, 1, None));
    ex.drive();
    let (tx, rx) = mpsc::channel();
    let mut rng = Rng(0x4a4d_0001);
    let mut want = vec![];
    let mut windows = HashSet::new();
    for i in 0..6u32 {
        let (k, u) = (rng.bytes32(), rng.bytes32());
        want.push(x25519_dalek::x25519(k, u));
        let t = tx.clone();
        let detached = ex.x25519_now(7 + i % 2, &k, &u, &|| {}, move |o: Outcome| t.send(o).unwrap(), Some(target));
        assert!(detached, "job {i} ran detached");
        if i > 0 {
            let o = rx.recv_timeout(T).unwrap();
            assert!(o.answered && o.status == Status::Ok, "job {} released once the next one started", i - 1);
            windows.insert(o.window);
        }
        assert!(rx.try_recv().is_err(), "one release per job");
        d.lock().unwrap().fired = true;
    }
    assert_eq!(windows.len(), 1, "the take-over keeps the window: {windows:?}");
    // a suspend request pending: no take-over; the answered job is settled, the suspend served
    let (stx, srx) = mpsc::channel();
    ex.suspend(Box::new(move |s, _| stx.send(s).unwrap()));
    let t = tx.clone();
    ex.x25519_now(9, &[1; 32], &[9; 32], &|| {}, move |o: Outcome| t.send(o).unwrap(), Some(target));
    assert!(rx.recv_timeout(T).unwrap().answered, "the sixth job settled");
    assert_eq!(srx.recv_timeout(T).unwrap(), Status::Ok);
    let (rtx, rrx) = mpsc::channel();
    ex.resume(Box::new(move |s, _| rtx.send(s).unwrap()));
    ex.drive();
    assert_eq!(rrx.recv_timeout(T).unwrap(), Status::Ok);
    let o = rx.recv_timeout(T).unwrap();
    assert_eq!(
        (o.status, o.result),
        (Status::Ok, x25519_dalek::x25519([1; 32], [9; 32])),
        "queued behind the suspend, run the usual way"
    );
    assert_eq!(d.lock().unwrap().answered, want);
    let s = ex.stats();
    assert_eq!((s.jobs, s.errors, s.queue_depth), (7, 0, 0));
    for w in 0..crate::api::NUM_WINDOWS {
        assert!(ex.with_engine(|e| e.read_window(w)).iter().all(|r| r == &[0u8; 32]), "window {w} wiped");
    }
}

/// A detached batch (the hw backend runs the jobs back to back from its interrupt handler): the
/// executor loads the first job's operands, the backend takes the others from the page (here the
/// test backend does what the handler does), every result lands in its slot and matches
/// x25519-dalek, the batch counts as its jobs, the closure gets one answered outcome; a batch
/// whose detached run ends without the backend's answer fails as a whole (EngineFault); the
/// next batch works and every window is zero afterwards. With the engine busy, a batch queues.
#[test]
fn detached_batch_runs_back_to_back_and_answers_once() {
    detached_batch_on(Isa::V1);
    detached_batch_on(Isa::V2);
}

/// [`detached_batch_runs_back_to_back_and_answers_once`] on `isa`: on v2 the backend runs up to
/// three jobs in one run of the pinned batch program (2 -> one run, 3 -> one, 4 -> 3 + 1), on v1
/// one X25519 per run.
fn detached_batch_on(isa: Isa) {
    let d = Arc::new(Mutex::new(FakeDetached::default()));
    let engine = Detaching { inner: ModelEngine::new(isa), d: d.clone() };
    let ex =
        Executor::start(Box::new(engine), x25519_program(isa), Config { driver: Driver::Callers, ..Config::default() });
    ex.drive();
    let mut page = vec![0u8; 4096];
    let at = page.as_mut_ptr() as usize;
    let (scalars_at, us_at, result_at) = (0, 128, 256);
    let target = move |n: usize| {
        move |_w: u32| {
            let b = crate::backend::DetachedBatch { count: n, scalars_at, us_at, scalar_reg: 0, u_reg: 0 };
            Some(crate::backend::DetachedReply::over_page(1, at, 4096, 0, result_at, 1, Some(b)))
        }
    };
    let mut rng = Rng(0xba7c_de7a);
    for n in 2..=crate::api::MAX_BATCH {
        let jobs: Vec<(Zeroizing<[u8; 32]>, [u8; 32])> =
            (0..n).map(|_| (Zeroizing::new(rng.bytes32()), rng.bytes32())).collect();
        for (i, (k, u)) in jobs.iter().enumerate() {
            page[scalars_at + 32 * i..][..32].copy_from_slice(&**k);
            page[us_at + 32 * i..][..32].copy_from_slice(u);
        }
        d.lock().unwrap().answered.clear();
        d.lock().unwrap().runs.clear();
        let (reply, rx) = batch_chan();
        assert!(ex.x25519_batch_now(3, &jobs, &|| {}, reply, Some(target(n))), "batch of {n} detached");
        assert!(rx.try_recv().is_err());
        d.lock().unwrap().fired = true;
        ex.drive();
        let (s, outs) = rx.recv_timeout(T).unwrap();
        assert_eq!((s, outs.len()), (Status::Ok, 1));
        assert!(outs[0].answered);
        let want: Vec<Reg> = jobs.iter().map(|(k, u)| x25519_dalek::x25519(**k, *u)).collect();
        assert_eq!(d.lock().unwrap().answered, want, "{isa}: batch of {n}");
        let runs = match isa {
            Isa::V1 => vec![1; n],
            Isa::V2 => vec![[2].as_slice(), &[3], &[3, 1]][n - 2].to_vec(),
        };
        assert_eq!(d.lock().unwrap().runs, runs, "{isa}: batch of {n}");
        for (i, w) in want.iter().enumerate() {
            assert_eq!(&page[result_at + 32 * i..][..32], w, "batch of {n}: result {i} in its slot");
            if i > 0 {
                assert!(page[scalars_at + 32 * i..][..32].iter().all(|&b| b == 0), "scalar {i} wiped in the page");
            }
        }
    }
    assert_eq!(ex.stats().jobs, 2 + 3 + 4);
    // a lost end: the whole batch fails with EngineFault, the closure answers it
    d.lock().unwrap().lost = true;
    let jobs = vec![(Zeroizing::new([4u8; 32]), [9u8; 32]); 3];
    let (reply, rx) = batch_chan();
    assert!(ex.x25519_batch_now(3, &jobs, &|| {}, reply, Some(target(3))));
    ex.wake(true, &|| {});
    ex.wake(true, &|| {});
    let (s, outs) = rx.recv_timeout(T).unwrap();
    assert_eq!((s, outs.len()), (Status::EngineFault, 0));
    d.lock().unwrap().lost = false;
    // the engine held by a detached X25519: the batch queues, runs once that is settled
    let t = |_w: u32| Some(crate::backend::DetachedReply::over_page(1, 0x1000, 4096, 0, 64, 1, None));
    let (tx, one) = mpsc::channel();
    assert!(ex.x25519_now(5, &[7; 32], &[9; 32], &|| {}, move |o: Outcome| tx.send(o).unwrap(), Some(t)));
    let jobs = vec![(Zeroizing::new([4u8; 32]), [9u8; 32]); 2];
    let (reply, rx) = batch_chan();
    assert!(!ex.x25519_batch_now(3, &jobs, &|| {}, reply, Some(target(2))), "queued behind the busy engine");
    d.lock().unwrap().fired = true;
    ex.wake(false, &|| {});
    assert!(one.recv_timeout(T).unwrap().answered);
    let (s, outs) = rx.recv_timeout(T).unwrap();
    assert_eq!(s, Status::Ok);
    assert!(outs.iter().all(|o| !o.answered && o.result == x25519_dalek::x25519([4; 32], [9; 32])));
    assert_eq!(ex.stats().errors, 1);
    for w in 0..crate::api::NUM_WINDOWS {
        assert!(ex.with_engine(|e| e.read_window(w)).iter().all(|r| r == &[0u8; 32]), "window {w} wiped");
    }
    drop(page);
}
