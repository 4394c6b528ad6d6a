//! TRNG hosted scenarios and bench provider.
//!
//! `trng-tests [tests]`: runs the steps below with `hosted_tests::run_steps` (a verdict per
//! step, then `VERDICT trng-tests PASS|FAIL pass=N fail=M`), against a running `trng` server started with
//! `--source model` or `--source hosted-os` (fault injection drives the models in both cases;
//! the error latch is global, so conditioned output stops too). The test system it runs in has
//! no sysctl: this program claims the TRNG's control slot itself at start, as the system's own
//! process of that system (docs/security.md), for the privileged steps (test modes, fault
//! injection, clearing errors).
//! `trng-tests bench`: prints `BENCH-JSON {"trng_fill_mb_s": .., "trng_u32_us_p50": ..}`.
//! Add `--quit` to stop the service afterwards, `--quick` to skip the 0..=70,000 fill sweep
//! (~45 s hosted).

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use hosted_tests::{marker, median, run_steps, Step, StepResult};
use num_traits::ToPrimitive;
use trng::api::{self, Opcode, TestMode, TrngError};
use trng::{Trng, TrngControl};

fn connect() -> Result<Trng, String> {
    Trng::new().map_err(|e| format!("connect: {e:?}"))
}

/// The control connection claimed at start (privileged steps).
static CONTROL: OnceLock<Mutex<TrngControl>> = OnceLock::new();

fn control() -> Result<std::sync::MutexGuard<'static, TrngControl>, String> {
    CONTROL.get().ok_or("the control slot was not claimed")?.lock().map_err(|_| "control lock poisoned".to_string())
}

const POISON: u8 = 0xA5;
/// A run of this many poison bytes inside the filled region counts as "left untouched"
/// (probability for random bytes ~ len * 2^-64).
const POISON_RUN: usize = 8;

/// Every length 0..=70,000 into a poisoned buffer with guard bytes after the end.
fn fill_lengths() -> StepResult {
    let mut t = connect()?;
    const MAX: usize = 70_000;
    const GUARD: usize = 64;
    let mut buf = vec![POISON; MAX + GUARD];
    for len in 0..=MAX {
        buf[..len + GUARD].fill(POISON);
        t.fill_buf(&mut buf[..len]).map_err(|e| format!("fill_buf({len}): {e}"))?;
        if buf[len..len + GUARD].iter().any(|b| *b != POISON) {
            return Err(format!("fill_buf({len}) wrote past the end"));
        }
        let mut run = 0;
        for (i, b) in buf[..len].iter().enumerate() {
            run = if *b == POISON { run + 1 } else { 0 };
            if run >= POISON_RUN {
                return Err(format!("fill_buf({len}): bytes {}..={i} left untouched", i + 1 - run));
            }
        }
    }
    Ok(())
}

/// Large fills: several chunks, distinct 4 KiB blocks, tail of each 4 KiB chunk written
/// (the reference's defect 7, docs/reference-system.md: last 16 bytes of each 4096 chunk untouched, >= 4096 panicking).
fn fill_large() -> StepResult {
    let mut t = connect()?;
    for len in [4096usize, 4097, 65_536, 65_537, 200_000, 1 << 20] {
        let mut buf = vec![0u8; len];
        t.fill_buf(&mut buf).map_err(|e| format!("fill_buf({len}): {e}"))?;
        for (k, c) in buf.chunks(4096).enumerate() {
            let tail = &c[c.len().saturating_sub(16)..];
            if c.len() >= 16 && tail.iter().all(|b| *b == 0) {
                return Err(format!("fill_buf({len}): last 16 bytes of chunk {k} are zero"));
            }
        }
        let mut blocks: Vec<&[u8]> = buf.chunks_exact(4096).collect();
        let n = blocks.len();
        blocks.sort();
        blocks.dedup();
        if blocks.len() != n {
            return Err(format!("fill_buf({len}): repeated 4 KiB blocks"));
        }
    }
    let a = t.get_u64().map_err(|e| e.to_string())?;
    let b = t.get_u64().map_err(|e| e.to_string())?;
    if a == b {
        return Err("get_u64 repeated".into());
    }
    Ok(())
}

fn raw_blocking_scalar(cid: xous::CID, id: usize, a: [usize; 4]) -> Result<xous::Result, String> {
    xous::send_message(cid, xous::Message::new_blocking_scalar(id, a[0], a[1], a[2], a[3]))
        .map_err(|e| format!("send: {e:?}"))
}

fn expect_scalar_err(r: xous::Result, want: TrngError, what: &str) -> StepResult {
    match r {
        xous::Result::Scalar1(c) if c == want.code() => Ok(()),
        other => Err(format!("{what}: expected Scalar1({:?}), got {other:?}", want)),
    }
}

/// Lend a page buffer with the given content, `offset` and `valid`; returns (offset, valid).
fn raw_lend(
    cid: xous::CID,
    id: usize,
    pages: usize,
    fill: u8,
    offset: usize,
    valid: usize,
    mutable: bool,
) -> Result<(usize, usize), String> {
    let range = xous::map_memory(None, None, pages * 4096, xous::MemoryFlags::R | xous::MemoryFlags::W)
        .map_err(|e| format!("map: {e:?}"))?;
    unsafe { core::slice::from_raw_parts_mut(range.as_mut_ptr(), range.len()) }.fill(fill);
    let msg = if mutable {
        xous::Message::new_lend_mut(id, range, xous::MemoryAddress::new(offset), xous::MemorySize::new(valid))
    } else {
        xous::Message::new_lend(id, range, xous::MemoryAddress::new(offset), xous::MemorySize::new(valid))
    };
    let r = xous::send_message(cid, msg).map_err(|e| format!("send: {e:?}"));
    xous::unmap_memory(range).ok();
    match r? {
        xous::Result::MemoryReturned(o, v) => Ok((o.map(|x| x.get()).unwrap_or(0), v.map(|x| x.get()).unwrap_or(0))),
        other => Err(format!("unexpected reply {other:?}")),
    }
}

fn alive(t: &Trng) -> StepResult {
    t.get_u32().map(|_| ()).map_err(|e| format!("server stopped serving: {e}"))
}

/// Malformed input to every opcode on both servers; each must answer with clear errors and keep
/// serving. Privileged opcodes on the public server are refused `NotPermitted`, public opcodes
/// on the control server `UnknownOpcode`.
fn malformed() -> StepResult {
    let t = connect()?;
    let c = control()?;
    let (public, ctl) = (t.conn(), c.conn());
    let cid = |o: Opcode| if o.is_control() { ctl } else { public };
    let op = |o: Opcode| o.to_usize().unwrap();
    // scalar calls with bad arguments
    expect_scalar_err(
        raw_blocking_scalar(public, op(Opcode::GetTrng), [0, 0, 0, 0])?,
        TrngError::ZeroLength,
        "GetTrng(0)",
    )?;
    expect_scalar_err(
        raw_blocking_scalar(public, op(Opcode::GetTrng), [3, 0, 0, 0])?,
        TrngError::TooLarge,
        "GetTrng(3)",
    )?;
    expect_scalar_err(
        raw_blocking_scalar(public, op(Opcode::GetTrng), [usize::MAX, 0, 0, 0])?,
        TrngError::TooLarge,
        "GetTrng(huge)",
    )?;
    expect_scalar_err(
        raw_blocking_scalar(ctl, op(Opcode::TestSetMode), [99, 0, 0, 0])?,
        TrngError::UnknownMode,
        "TestSetMode(99)",
    )?;
    for conn in [public, ctl] {
        expect_scalar_err(raw_blocking_scalar(conn, 1234, [1, 2, 3, 4])?, TrngError::UnknownOpcode, "unknown opcode")?;
        expect_scalar_err(raw_blocking_scalar(conn, 16, [0; 4])?, TrngError::UnknownOpcode, "opcode 16")?;
    }
    // each server refuses the other's opcodes
    for o in [Opcode::ClearErrors, Opcode::TestSetMode, Opcode::Quit] {
        expect_scalar_err(
            raw_blocking_scalar(public, op(o), [0; 4])?,
            TrngError::NotPermitted,
            &format!("{o:?} on the public server"),
        )?;
    }
    for o in [Opcode::GetTrng, Opcode::SeedTrng] {
        expect_scalar_err(
            raw_blocking_scalar(ctl, op(o), [1, 0, 0, 0])?,
            TrngError::UnknownOpcode,
            &format!("{o:?} on the control server"),
        )?;
    }
    // memory opcodes sent as blocking scalars
    for o in [
        Opcode::FillTrng,
        Opcode::TestGetData,
        Opcode::HealthStats,
        Opcode::ErrorStats,
        Opcode::ErrorSubscribe,
        Opcode::TestInjectFault,
    ] {
        expect_scalar_err(
            raw_blocking_scalar(cid(o), op(o), [1, 2, 3, 4])?,
            TrngError::BadMessage,
            &format!("{o:?} as scalar"),
        )?;
    }
    // non-blocking scalars to everything (no reply possible; the servers must not choke)
    for id in 0..=20usize {
        if id == op(Opcode::Quit) {
            continue;
        }
        for conn in [public, ctl] {
            xous::send_message(conn, xous::Message::new_scalar(id, 7, 7, 7, 7)).map_err(|e| format!("send: {e:?}"))?;
        }
    }
    alive(&t)?;
    // memory messages to scalar opcodes
    for o in [Opcode::GetTrng, Opcode::ClearErrors, Opcode::TestSetMode, Opcode::SeedTrng, Opcode::Quit] {
        let (off, _) = raw_lend(cid(o), op(o), 1, 0x55, 0, 16, true)?;
        if off != TrngError::BadMessage.code() {
            return Err(format!("{o:?} as memory message: offset {off}"));
        }
    }
    // bulk calls: zero, oversized (beyond the buffer, beyond MAX_FILL), immutable lend, unknown id
    for o in [Opcode::FillTrng, Opcode::TestGetData] {
        let (off, v) = raw_lend(cid(o), op(o), 1, 0, 0, 0, true)?;
        if (off, v) != (TrngError::ZeroLength.code(), 0) {
            return Err(format!("{o:?} len 0: ({off}, {v})"));
        }
        let (off, _) = raw_lend(cid(o), op(o), 1, 0, 0, 4097, true)?;
        if off != TrngError::TooLarge.code() {
            return Err(format!("{o:?} len > buffer: {off}"));
        }
        let (off, _) = raw_lend(cid(o), op(o), 1, 0, 0, usize::MAX, true)?;
        if off != TrngError::TooLarge.code() {
            return Err(format!("{o:?} len huge: {off}"));
        }
        let pages = api::MAX_FILL_BYTES / 4096 + 1;
        let (off, _) = raw_lend(cid(o), op(o), pages, 0, 0, pages * 4096, true)?;
        if off != TrngError::TooLarge.code() {
            return Err(format!("{o:?} len > MAX_FILL: {off}"));
        }
        let (off, _) = raw_lend(cid(o), op(o), 1, 0, 0, 64, false)?;
        if off != TrngError::BadMessage.code() {
            return Err(format!("{o:?} immutable lend: {off}"));
        }
    }
    let (off, _) = raw_lend(public, 999, 1, 0, 0, 64, true)?;
    if off != TrngError::UnknownOpcode.code() {
        return Err(format!("unknown memory opcode: {off}"));
    }
    // TestGetData with the test mode off
    c.test_set_mode(TestMode::None).map_err(|e| e.to_string())?;
    let (off, _) = raw_lend(ctl, op(Opcode::TestGetData), 1, 0, 0, 64, true)?;
    if off != TrngError::TestModeOff.code() {
        return Err(format!("TestGetData with mode None: {off}"));
    }
    // rkyv calls with garbage buffers and out-of-range archive offsets
    for o in [Opcode::ErrorSubscribe, Opcode::TestInjectFault, Opcode::HealthStats, Opcode::ErrorStats] {
        for (fill, offset) in [(0xFFu8, 0usize), (0x00, 4095), (0x13, usize::MAX - 8), (0xFF, 3)] {
            raw_lend(cid(o), op(o), 1, fill, offset, 4096, true).map_err(|e| format!("{o:?}: {e}"))?;
            let (off, _) = raw_lend(cid(o), op(o), 1, fill, offset, 4096, false)?;
            if off != TrngError::BadMessage.code() {
                return Err(format!("{o:?} immutable: {off}"));
            }
        }
    }
    // a moved (not lent) buffer: the server frees it and carries on
    let range = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W)
        .map_err(|e| format!("{e:?}"))?;
    xous::send_message(
        public,
        xous::Message::Move(xous::MemoryMessage {
            id: op(Opcode::FillTrng),
            buf: range,
            offset: None,
            valid: xous::MemorySize::new(64),
        }),
    )
    .map_err(|e| format!("move: {e:?}"))?;
    // bad fault specifications
    for bad in ["av9:stuck", "ro:bias=7", "garbage", &"x".repeat(257)] {
        match c.inject_fault(bad) {
            Err(TrngError::BadConfig) => {}
            other => return Err(format!("inject_fault({bad:.20}): {other:?}")),
        }
    }
    alive(&t)?;
    // the good path still works after all that
    let mut b = [0u8; 100];
    let mut t2 = connect()?;
    t2.fill_buf(&mut b).map_err(|e| e.to_string())?;
    Ok(())
}

const NOTIFY_OPCODE: u32 = 0x77;

/// Stuck-at fault: errors reported (stats + notification), zero output bytes, recovery after clear.
fn fault_injection() -> StepResult {
    let mut t = connect()?;
    let mut c = control()?;
    c.clear_errors().map_err(|e| e.to_string())?;
    let before = t.error_stats().map_err(|e| e.to_string())?;
    if before.latched {
        return Err("error latched before the test".into());
    }
    let sid = xous::create_server().map_err(|e| format!("create_server: {e:?}"))?;
    t.subscribe_errors(sid, NOTIFY_OPCODE).map_err(|e| format!("subscribe: {e}"))?;
    let hs = t.health_stats().map_err(|e| e.to_string())?;
    let av0 = hs.sources.iter().find(|s| s.kind == api::SOURCE_AV0).ok_or("no av0 source in HealthStats")?;
    let cutoff = av0.rct_cutoff;

    c.inject_fault("av0:stuck=0x123").map_err(|e| format!("inject: {e}"))?;
    c.test_set_mode(TestMode::Av).map_err(|e| e.to_string())?;
    let mut raw = vec![0xEEu8; 4096];
    match c.test_get_data(&mut raw) {
        Err(TrngError::HealthFailure) => {}
        other => return Err(format!("raw av with stuck source: {other:?}")),
    }
    // client-side guarantee: failed calls never hand out stale/raw bytes
    let mut out = vec![0xEEu8; 10_000];
    match t.fill_buf(&mut out) {
        Err(TrngError::HealthFailure) => {}
        other => return Err(format!("fill_buf while latched: {other:?}")),
    }
    if out.iter().any(|b| *b != 0) {
        return Err("failed fill_buf left non-zero bytes".into());
    }
    match t.get_u32() {
        Err(TrngError::HealthFailure) => {}
        other => return Err(format!("get_u32 while latched: {other:?}")),
    }
    let es = t.error_stats().map_err(|e| e.to_string())?;
    if !es.latched || es.error_bits & 1 == 0 || es.subscribers == 0 {
        return Err(format!("error stats after stuck fault: {es:?}"));
    }
    let hs = t.health_stats().map_err(|e| e.to_string())?;
    let av0 = hs.sources.iter().find(|s| s.kind == api::SOURCE_AV0).unwrap();
    if av0.rct_failures == 0 || av0.rct_max_run < cutoff {
        return Err(format!("av0 stats after stuck fault: {av0:?}"));
    }
    // the notification arrives on our own server
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = None;
    while Instant::now() < deadline && got.is_none() {
        if let Some(m) = xous::try_receive_message(sid).map_err(|e| format!("{e:?}"))? {
            if let xous::Message::Scalar(s) = m.body {
                if s.id == NOTIFY_OPCODE as usize {
                    got = Some(s.arg1);
                }
            }
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    match got {
        Some(bits) if bits & 1 != 0 => {}
        other => return Err(format!("error notification: {other:?}")),
    }
    // clearing while the fault persists: start-up test fails again
    c.clear_errors().map_err(|e| e.to_string())?;
    if c.test_get_data(&mut raw).is_ok() {
        return Err("output while the source is still stuck".into());
    }
    // remove the fault, clear: output resumes
    c.inject_fault("").map_err(|e| e.to_string())?;
    c.clear_errors().map_err(|e| e.to_string())?;
    c.test_get_data(&mut raw).map_err(|e| format!("raw after recovery: {e}"))?;
    t.fill_buf(&mut out).map_err(|e| format!("fill after recovery: {e}"))?;
    c.test_set_mode(TestMode::None).map_err(|e| e.to_string())?;
    let es = t.error_stats().map_err(|e| e.to_string())?;
    if es.latched || es.clears < 2 || es.notifications_sent == 0 {
        return Err(format!("error stats after recovery: {es:?}"));
    }
    xous::destroy_server(sid).ok();
    Ok(())
}

fn test_modes() -> StepResult {
    let t = connect()?;
    let mut c = control()?;
    for m in [TestMode::Av, TestMode::Ro, TestMode::Both, TestMode::Cprng] {
        c.test_set_mode(m).map_err(|e| e.to_string())?;
        let mut a = vec![0u8; 8192];
        c.test_get_data(&mut a).map_err(|e| format!("{m:?}: {e}"))?;
        let ones: u32 = a.iter().map(|b| b.count_ones()).sum();
        let frac = ones as f64 / (8192.0 * 8.0);
        if (frac - 0.5).abs() > 0.03 {
            return Err(format!("{m:?}: bit balance {frac}"));
        }
    }
    c.test_set_mode(TestMode::None).map_err(|e| e.to_string())?;
    t.seed([1, 2, 3, 4]).map_err(|e| e.to_string())?;
    alive(&t)
}

fn bench() {
    let mut t = connect().expect("connect");
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..8 {
        t.fill_buf(&mut buf).expect("fill");
    }
    let t0 = Instant::now();
    let mut bytes = 0usize;
    while t0.elapsed() < Duration::from_secs(2) {
        t.fill_buf(&mut buf).expect("fill");
        bytes += buf.len();
    }
    let mb_s = bytes as f64 / t0.elapsed().as_secs_f64() / 1e6;
    let mut lat = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let s = Instant::now();
        t.get_u32().expect("get_u32");
        lat.push(s.elapsed().as_secs_f64() * 1e6);
    }
    let p50 = median(&mut lat);
    marker(&verdict::bench::BenchLine::new().num("trng_fill_mb_s", mb_s, 2).num("trng_u32_us_p50", p50, 2).to_string());
}

fn main() {
    xous_api_log::init_wait().expect("log server");
    log::set_max_level(log::LevelFilter::Info);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut failed = 0;
    if args.iter().any(|a| a == "bench") {
        bench();
    } else {
        match TrngControl::claim(Duration::from_secs(20)) {
            Ok(c) => {
                let _ = CONTROL.set(Mutex::new(c));
            }
            Err(e) => eprintln!("trng-tests: cannot claim the TRNG control slot: {e}"),
        }
        let mut steps = vec![
            Step { name: "trng/fill-lengths-0..=70000", run: fill_lengths },
            Step { name: "trng/fill-large", run: fill_large },
            Step { name: "trng/malformed-every-opcode", run: malformed },
            Step { name: "trng/test-modes", run: test_modes },
            Step { name: "trng/fault-injection-subscription", run: fault_injection },
        ];
        if args.iter().any(|a| a == "--quick") {
            steps.remove(0);
        }
        failed = run_steps("trng-tests", &steps);
    }
    if args.iter().any(|a| a == "--quit") {
        if let Ok(c) = control() {
            c.quit().ok();
        }
    }
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
