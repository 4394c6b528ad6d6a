//! device-selftest: a Xous test client, built for the device (riscv32imac-unknown-xous-elf, run
//! on the simulated Precursor by `cargo xtask sim-smoke`) and for the host (the hosted system,
//! step `selftest:hosted`). One verdict line per check (libs/verdict), then its own:
//! `VERDICT device-selftest PASS|FAIL pass=N fail=M`. docs/selftest.md lists the checks.
//!
//! Options (hosted only: a device process gets no arguments): `--backend model|hw|rtl|software`
//! (the backend every engine reply must report; default hw on the device, model hosted),
//! `--isa v1|v2` (the server's engine ISA: the expected cycle count; default v1 on the device,
//! v2 hosted), `--calls N` (timed X25519 calls, default 20), `--shutdown` (after the verdict,
//! shut the hosted system down: xtask gives it to this process as the system's test process).

use device_selftest::*;
use engine25519::{BackendId, Engine25519};
use engine25519_core::isa::Isa;
use engine25519_core::vectors::RFC7748;
use verdict::{Status, Verdict};

// The plan has no dependencies (the harness includes it as source): its batch is the largest
// X25519Batch the engine service takes, checked here where both are in reach.
const _: () =
    assert!(BATCH_SIZE == engine25519::api::MAX_BATCH, "the self-test's batches are full X25519Batch requests");

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The spinner process (src/bin/spinner.rs), if the system runs one (the device image built by
/// xtask for the simulated Precursor does; hosted systems do not).
struct Spinner(xous::CID);

impl Spinner {
    #[cfg(target_os = "xous")]
    fn connect() -> Option<Spinner> {
        let xns = xous_api_names::XousNames::new().ok()?;
        xns.request_connection_blocking(SPINNER_NAME).ok().map(Spinner)
    }
    #[cfg(not(target_os = "xous"))]
    fn connect() -> Option<Spinner> {
        None
    }
    /// A request (SPIN_*); the answer is its loop iterations so far.
    fn request(&self, what: usize) -> Result<u64, String> {
        match xous::send_message(self.0, xous::Message::new_blocking_scalar(what, 0, 0, 0, 0)) {
            Ok(xous::Result::Scalar2(lo, hi)) => Ok(lo as u64 | (hi as u64) << 32),
            other => Err(format!("spinner query answered {other:?}")),
        }
    }
}

/// Results so far, and the ticktimer (the finest clock a user process has on the device).
struct Run {
    opts: Options,
    /// the ISA the server's engine runs (the option, or what the probe found)
    isa: Isa,
    passed: usize,
    failed: usize,
    tt: xous_api_ticktimer::Ticktimer,
}

impl Run {
    /// Run one check: BEGIN, then PASS with its figures or FAIL with the reason.
    fn check(&mut self, name: &str, f: impl FnOnce(&mut Run) -> Result<Vec<(&'static str, String)>, String>) {
        say(&Verdict::new(name, Status::Begin).to_string());
        let t0 = self.tt.elapsed_ms();
        let r = f(self);
        let ms = self.tt.elapsed_ms() - t0;
        match r {
            Ok(fields) => {
                self.passed += 1;
                let mut v = Verdict::new(name, Status::Pass).with("ms", ms);
                for (k, x) in fields {
                    v = v.with(k, x);
                }
                say(&v.to_string());
            }
            Err(why) => {
                self.failed += 1;
                say(&Verdict::new(name, Status::Fail).with("ms", ms).detail(why).to_string());
            }
        }
    }
}

/// One X25519 through the service, the reply's backend and cycles checked.
fn x25519_checked(run: &Run, e: &Engine25519, k: &[u8; 32], u: &[u8; 32]) -> Result<[u8; 32], String> {
    x25519_counted(run, e, k, u).map(|(r, _)| r)
}

/// [`x25519_checked`] with the engine cycles the reply reports.
fn x25519_counted(run: &Run, e: &Engine25519, k: &[u8; 32], u: &[u8; 32]) -> Result<([u8; 32], u64), String> {
    let r = e.x25519_detailed(k, u).map_err(|e| e.to_string())?;
    if r.backend != Some(run.opts.backend) {
        return Err(format!("the reply reports backend {:?}, expected {}", r.backend, run.opts.backend.name()));
    }
    check_cycles(run.opts.backend, run.isa, r.cycles)?;
    Ok((r.result, r.cycles))
}

fn vector(i: usize) -> Result<([u8; 32], [u8; 32], [u8; 32]), String> {
    let (k, u, w) = RFC7748.get(i).ok_or("vector table too short")?;
    Ok((unhex32(k)?, unhex32(u)?, unhex32(w)?))
}

/// Stop the system after the final verdict (docs/selftest.md, "Shutting down").
/// Device: this program is laid out only as the simulated system's test process (xtask's
/// `sim-smoke`), never in the flashed image; it asks xous-susres to power the SoC off, as a
/// user's power-off does on Precursor. Hosted: only with `--shutdown` (the system builder lists
/// it as the test process), through the hosted kernel's Shutdown call.
fn shutdown(opts: &Options) {
    #[cfg(target_os = "xous")]
    {
        let _ = opts;
        say("SELFTEST-POWEROFF");
        let r = xous_api_names::XousNames::new()
            .and_then(|xns| xous_api_susres::Susres::new_without_hook(&xns))
            .and_then(|s| s.immediate_poweroff());
        if let Err(e) = r {
            say(&format!("SELFTEST-POWEROFF-FAILED {e:?}"));
        }
    }
    #[cfg(not(target_os = "xous"))]
    if opts.shutdown {
        if let Err(e) = xous::rsyscall(xous::SysCall::Shutdown) {
            say(&format!("SELFTEST-SHUTDOWN-FAILED {e:?}"));
        }
    }
}

/// `SUSPEND_CYCLES` suspends through xous-susres (this client is a system process: susres
/// allows it) while `SUSPEND_CLIENTS` threads, each with its own connection to the engine, run
/// X25519s of RFC 7748 (5.2 and 6.1) back to back and check each result. Before each suspend
/// every client must have had an answer since the previous one, so suspends land while jobs run
/// and wait in the queue. Any error, wrong result or client without progress fails the check.
#[cfg(target_os = "xous")]
fn suspend_resume(run: &mut Run) -> Result<Vec<(&'static str, String)>, String> {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};
    let vectors: Vec<([u8; 32], [u8; 32], [u8; 32])> = (0..RFC7748.len()).map(vector).collect::<Result<_, _>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    let done: Arc<Vec<AtomicU32>> = Arc::new((0..SUSPEND_CLIENTS).map(|_| AtomicU32::new(0)).collect());
    let bad = Arc::new(Mutex::new(Vec::<String>::new()));
    let finished: Arc<Vec<AtomicBool>> = Arc::new((0..SUSPEND_CLIENTS).map(|_| AtomicBool::new(false)).collect());
    let backend = run.opts.backend;
    let mut threads = Vec::new();
    for c in 0..SUSPEND_CLIENTS {
        let (stop, done, bad, vectors, finished) =
            (stop.clone(), done.clone(), bad.clone(), vectors.clone(), finished.clone());
        threads.push(std::thread::spawn(move || {
            let e = match Engine25519::new() {
                Ok(e) => e,
                Err(e) => return bad.lock().unwrap().push(format!("client {c}: connect: {e}")),
            };
            let mut i = c;
            while !stop.load(Ordering::SeqCst) {
                let (k, u, want) = &vectors[i % vectors.len()];
                match e.x25519_detailed(k, u) {
                    Ok(r) if r.result == *want && r.backend == Some(backend) => {}
                    Ok(r) => bad.lock().unwrap().push(format!(
                        "client {c} job {i}: result {} backend {:?}",
                        hex(&r.result),
                        r.backend
                    )),
                    Err(err) => bad.lock().unwrap().push(format!("client {c} job {i}: {err}")),
                }
                done[c].fetch_add(1, Ordering::SeqCst);
                i += 1;
            }
            finished[c].store(true, Ordering::SeqCst);
        }));
    }
    let susres = xous_api_names::XousNames::new()
        .and_then(|xns| xous_api_susres::Susres::new_without_hook(&xns))
        .map_err(|e| format!("susres connection: {e:?}"))?;
    let mut result = Ok(());
    let mut last: Vec<u32> = vec![0; SUSPEND_CLIENTS];
    for n in 1..=SUSPEND_CYCLES {
        // every client answered since the previous suspend (bounded: 2 s of device time)
        let t0 = run.tt.elapsed_ms();
        while (0..SUSPEND_CLIENTS).any(|c| done[c].load(Ordering::SeqCst) <= last[c]) {
            if run.tt.elapsed_ms() - t0 > 2000 {
                result = Err(format!(
                    "before suspend {n}: a client got no answer for 2 s (answers so far {:?})",
                    done.iter().map(|d| d.load(Ordering::SeqCst)).collect::<Vec<_>>()
                ));
                break;
            }
            xous::yield_slice();
        }
        if result.is_err() {
            break;
        }
        last = done.iter().map(|d| d.load(Ordering::SeqCst)).collect();
        say(&format!("{SUSPEND_MARKER} {n}"));
        let before = run.tt.elapsed_ms();
        if let Err(e) = susres.initiate_suspend() {
            result = Err(format!("suspend {n}: susres answered {e:?}"));
            break;
        }
        // the system time goes on from where it stopped (xous-susres restores the ticktimer)
        let after = run.tt.elapsed_ms();
        if after < before {
            result = Err(format!("suspend {n}: the system time went back from {before} ms to {after} ms"));
            break;
        }
        say(&format!("{RESUMED_MARKER} {n}"));
    }
    stop.store(true, Ordering::SeqCst);
    // every client gets its last answer (bounded: 2 s of device time; a client still waiting
    // then fails the check instead of hanging it)
    let t0 = run.tt.elapsed_ms();
    while !finished.iter().all(|f| f.load(Ordering::SeqCst)) {
        if run.tt.elapsed_ms() - t0 > 2000 {
            let waiting: Vec<usize> = (0..SUSPEND_CLIENTS).filter(|&c| !finished[c].load(Ordering::SeqCst)).collect();
            result = result.and(Err(format!("client(s) {waiting:?} got no answer to their last job within 2 s")));
            break;
        }
        xous::yield_slice();
    }
    for (c, t) in threads.into_iter().enumerate() {
        if finished[c].load(Ordering::SeqCst) {
            let _ = t.join();
        }
    }
    result?;
    let bad = bad.lock().unwrap();
    if !bad.is_empty() {
        return Err(format!(
            "{} bad answer(s): {}",
            bad.len(),
            bad.iter().take(4).cloned().collect::<Vec<_>>().join("; ")
        ));
    }
    let jobs: u32 = done.iter().map(|d| d.load(Ordering::SeqCst)).sum();
    Ok(vec![
        ("suspends", SUSPEND_CYCLES.to_string()),
        ("clients", SUSPEND_CLIENTS.to_string()),
        ("jobs", jobs.to_string()),
    ])
}

fn main() -> ! {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = parse_options(&args);
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let opts = match opts {
        Ok(o) => o,
        Err(e) => {
            say(&Verdict::new(PROGRAM, Status::Fail).detail(format!("options: {e}")).to_string());
            std::process::exit(2);
        }
    };
    // Wait until the system is up (our services registered, sysctl holds their control slots)
    // before using any service, by yielding (no timer requests while the system boots).
    let booted = wait_for_system();
    let tt = xous_api_ticktimer::Ticktimer::new().expect("ticktimer");
    log::info!(
        "device-selftest: expecting backend {}, ISA {}",
        opts.backend.name(),
        opts.isa.map(|i| i.to_string()).unwrap_or("(probe)".into())
    );
    let isa = opts.isa.unwrap_or(Isa::V1);
    let mut run = Run { opts, isa, passed: 0, failed: 0, tt };

    // The system's controller holds every control slot, and an ordinary client is refused them.
    run.check("selftest/control-refused", |_| {
        let spins = booted?;
        for name in [engine25519::api::CONTROL_NAME, trng::api::CONTROL_NAME] {
            if service_ipc::control::try_lookup(name).is_ok() {
                return Err(format!("an ordinary client got a connection to '{name}'"));
            }
        }
        Ok(vec![("refused", "2".into()), ("boot_spins", spins.to_string())])
    });

    let engine = match Engine25519::new() {
        Ok(e) => Some(e),
        Err(e) => {
            run.failed += 1;
            say(&Verdict::new("selftest/engine-connect", Status::Fail).detail(e.to_string()).to_string());
            None
        }
    };
    let trng = trng::Trng::new();

    if let Some(e) = &engine {
        run.check("selftest/engine-version", |run| {
            let v = e.version().map_err(|e| e.to_string())?;
            if v.api != engine25519::api::API_VERSION || v.backend != Some(run.opts.backend) {
                return Err(format!(
                    "api {} backend {:?}: expected api {} backend {}",
                    v.api,
                    v.backend,
                    engine25519::api::API_VERSION,
                    run.opts.backend.name()
                ));
            }
            Ok(vec![("backend", run.opts.backend.name().into())])
        });
        // Which ISA the engine runs: a custom job of field_add for v2 (`fadd`, an opcode v1 does
        // not define): v2 returns a + b mod p, v1 refuses it (IllegalInstruction)
        run.check("selftest/engine-isa", |run| {
            let (a, b, want) = FIELD_ADD_PROBE;
            let mut regs = [[0u8; 32]; engine25519::api::NUM_REGS];
            regs[FIELD_ADD_INPUT_REGS[0]] = a;
            regs[FIELD_ADD_INPUT_REGS[1]] = b;
            let found = match e.run_job(FIELD_ADD_V2, &regs, engine25519::Window::Any) {
                Ok(r) => {
                    if r.backend != Some(run.opts.backend) {
                        return Err(format!("the probe job reports backend {:?}", r.backend));
                    }
                    if r.regs[FIELD_ADD_OUTPUT_REG] != want {
                        return Err(format!(
                            "v2 field_add returned {} (model: {})",
                            hex(&r.regs[FIELD_ADD_OUTPUT_REG]),
                            hex(&want)
                        ));
                    }
                    Isa::V2
                }
                Err(engine25519::Error::Service(engine25519::Status::IllegalInstruction)) => Isa::V1,
                Err(e) => return Err(format!("probe job: {e}")),
            };
            run.isa = found;
            if let Some(want) = run.opts.isa {
                if want != found {
                    return Err(format!("the engine runs ISA {found}, expected {want}"));
                }
            }
            Ok(vec![("isa", found.to_string()), ("x25519_cycles", expected_cycles(found).to_string())])
        });
        // A short custom job on the ISA found: field_add, a + b mod p, against the model's sum
        // (the register file written and read back through the service, one job end to end)
        run.check("selftest/engine-job", |run| {
            let (a, b, want) = FIELD_ADD_PROBE;
            let mut regs = [[0u8; 32]; engine25519::api::NUM_REGS];
            regs[FIELD_ADD_INPUT_REGS[0]] = a;
            regs[FIELD_ADD_INPUT_REGS[1]] = b;
            let prog = if run.isa == Isa::V1 { FIELD_ADD_V1 } else { FIELD_ADD_V2 };
            let r = e
                .run_job(prog, &regs, engine25519::Window::Any)
                .map_err(|e| format!("field_add ({}): {e}", run.isa))?;
            let got = r.regs[FIELD_ADD_OUTPUT_REG];
            if got != want || r.backend != Some(run.opts.backend) {
                return Err(format!(
                    "field_add ({}) returned {} backend {:?} (model: {}); input a read back as {}",
                    run.isa,
                    hex(&got),
                    r.backend,
                    hex(&want),
                    hex(&r.regs[FIELD_ADD_INPUT_REGS[0]])
                ));
            }
            Ok(vec![("isa", run.isa.to_string()), ("cycles", r.cycles.to_string())])
        });
        // RFC 7748 5.2 and 6.1, from their one copy (engine25519-core's vectors)
        for i in 0..RFC7748.len() {
            run.check(&format!("selftest/x25519-rfc7748-{i}"), |run| {
                let (k, u, want) = vector(i)?;
                let (got, cycles) = x25519_counted(run, e, &k, &u)?;
                if got != want {
                    return Err(format!("result {} != RFC 7748 {}", hex(&got), hex(&want)));
                }
                Ok(vec![
                    ("backend", run.opts.backend.name().into()),
                    ("isa", run.isa.to_string()),
                    ("cycles", cycles.to_string()),
                ])
            });
        }
        // RFC 7748 6.1 as an exchange: both public keys from the private keys, then both
        // shared secrets, equal to each other and to the RFC's K (vectors 3, 4, 5)
        run.check("selftest/x25519-exchange", |run| {
            let (alice, nine, alice_pub_rfc) = vector(3)?;
            let (bob, _, bob_pub_rfc) = vector(4)?;
            let (k5, u5, shared_rfc) = vector(5)?;
            if k5 != alice || u5 != bob_pub_rfc {
                return Err("the vector table's 6.1 rows moved (3: Alice, 4: Bob, 5: K)".into());
            }
            let alice_pub = x25519_checked(run, e, &alice, &nine)?;
            let bob_pub = x25519_checked(run, e, &bob, &nine)?;
            let ka = x25519_checked(run, e, &alice, &bob_pub)?;
            let kb = x25519_checked(run, e, &bob, &alice_pub)?;
            if alice_pub != alice_pub_rfc || bob_pub != bob_pub_rfc {
                return Err("a public key differs from RFC 7748 6.1".into());
            }
            if ka != kb || ka != shared_rfc {
                return Err(format!("shared secrets {} / {} (RFC: {})", hex(&ka), hex(&kb), hex(&shared_rfc)));
            }
            Ok(vec![])
        });
        // four RFC 7748 vectors in one X25519Batch request (the server runs them back to back:
        // on the device the engine's interrupt handler starts each next job), then a batch of
        // 2 and one of 3 (every batch size the detached path takes)
        run.check("selftest/x25519-batch", |run| {
            let v: Vec<([u8; 32], [u8; 32], [u8; 32])> = (0..4).map(vector).collect::<Result<_, _>>()?;
            for n in [4, 2, 3] {
                let jobs: Vec<([u8; 32], [u8; 32])> = v[..n].iter().map(|(k, u, _)| (*k, *u)).collect();
                let r = e.x25519_batch(&jobs).map_err(|e| format!("batch of {n}: {e}"))?;
                if r.len() != n {
                    return Err(format!("batch of {n}: {} results", r.len()));
                }
                for (i, (got, (_, _, want))) in r.iter().zip(&v).enumerate() {
                    if got.result != *want || got.backend != Some(run.opts.backend) {
                        return Err(format!(
                            "batch of {n}, job {i}: result {} backend {:?} (RFC 7748: {})",
                            hex(&got.result),
                            got.backend,
                            hex(want)
                        ));
                    }
                }
            }
            Ok(vec![("jobs", "4+2+3".into())])
        });
        // N calls end to end: client library, syscalls, context switches, the server, the
        // engine; timed with the ticktimer (ms) over all of them
        run.check(TIMED_CHECK, |run| {
            let (k, u, want) = vector(0)?;
            let n = run.opts.calls;
            // the harness stamps the start and end lines with the CPU cycle at which each was
            // written (the simulated Precursor): a second, finer clock. Between them only the
            // calls: the ticktimer reads (an IPC each) and the figures' formatting lie outside,
            // and the two lines are alike, so their way to the UART costs the same at both ends
            let t0 = run.tt.elapsed_ms();
            say(&format!("{TIMING_START_MARKER} calls={n}"));
            for i in 0..n {
                let r = e.x25519_detailed(&k, &u).map_err(|e| format!("call {i}: {e}"))?;
                if r.result != want || r.backend != Some(run.opts.backend) {
                    return Err(format!("call {i}: result {} backend {:?}", hex(&r.result), r.backend));
                }
            }
            say(&format!("{TIMING_END_MARKER} calls={n}"));
            let ms = run.tt.elapsed_ms() - t0;
            // the same X25519 in batches (one request each, the jobs back to back on the engine)
            let batch = vec![(k, u); BATCH_SIZE];
            say(&format!("{BATCH_START_MARKER} jobs={}", BATCH_ROUNDS * BATCH_SIZE as u64));
            for i in 0..BATCH_ROUNDS {
                let r = e.x25519_batch(&batch).map_err(|e| format!("batch {i}: {e}"))?;
                if r.len() != BATCH_SIZE || r.iter().any(|r| r.result != want) {
                    return Err(format!("batch {i}: {} results, not all {}", r.len(), hex(&want)));
                }
            }
            say(&format!("{BATCH_END_MARKER} jobs={}", BATCH_ROUNDS * BATCH_SIZE as u64));
            // then the same calls again beside the spinner (a low-priority process counting
            // loop iterations): its rate with the CPU to itself (this client sleeps), then
            // beside the calls; each count is taken right before / after the stamped line
            // that carries it
            if let Some(sp) = Spinner::connect() {
                sp.request(SPIN_START)?;
                say(&format!("{SPIN_IDLE_START_MARKER} spin={}", sp.request(SPIN_QUERY)?));
                run.tt.sleep_ms(SPIN_IDLE_MS).map_err(|e| format!("sleep: {e:?}"))?;
                say(&format!("{SPIN_IDLE_END_MARKER} spin={}", sp.request(SPIN_QUERY)?));
                say(&format!("{SPIN_BUSY_START_MARKER} spin={}", sp.request(SPIN_QUERY)?));
                for i in 0..n {
                    let r = e.x25519_detailed(&k, &u).map_err(|e| format!("call {i} beside the spinner: {e}"))?;
                    if r.result != want {
                        return Err(format!("call {i} beside the spinner: result {}", hex(&r.result)));
                    }
                }
                say(&format!("{SPIN_BUSY_END_MARKER} spin={}", sp.request(SPIN_STOP)?));
            }
            let us = us_per_call(ms, n);
            // the whole call cannot take less than the engine's own time for it
            let engine_us = expected_cycles(run.isa) as f64 * 1e6 / run.isa.info().eng_clk_hz as f64;
            if run.opts.backend == BackendId::Hw && us + 1000.0 / (n as f64) < engine_us {
                return Err(format!("{us:.1} us per call is less than the engine's own {engine_us:.1} us"));
            }
            say(&format!("{BENCH_MARKER} {{\"x25519_us_per_call\": {us:.1}, \"calls\": {n}, \"ms\": {ms}, \"isa\": \"{}\", \"backend\": \"{}\"}}", run.isa, run.opts.backend.name()));
            Ok(vec![("calls", n.to_string()), ("total_ms", ms.to_string()), ("us_per_call", format!("{us:.1}")), ("engine_us", format!("{engine_us:.1}"))])
        });
    }

    // bad input from the hardware: the engine finishes a job but its completion interrupt never
    // reaches the CPU (the simulated SoC's fault injector drops exactly one). That job must fail
    // with a clear error within a bounded time, and the next one must work (device only: the
    // injector is part of the simulated Precursor)
    // (not in the A/B build whose engine server polls, ENGINE25519_HW_WAIT=poll: no interrupt
    // to lose; xtask then does not expect the check either)
    #[cfg(target_os = "xous")]
    if let (Some(e), false) = (&engine, option_env!("ENGINE25519_HW_WAIT") == Some("poll")) {
        run.check("selftest/engine-lost-irq", |run| {
            let (k, u, want) = vector(0)?;
            let flags = xous::MemoryFlags::R | xous::MemoryFlags::W;
            let page = xous::map_memory(xous::MemoryAddress::new(SIMFAULT_BASE), None, 4096, flags)
                .map_err(|e| format!("map the simulated SoC's fault-injection page: {e:?}"))?;
            let regs = page.as_mut_ptr() as *mut u32;
            // Safety: the page was just mapped for this process; 32-bit registers
            unsafe { regs.add(SIMFAULT_ENGINE_IRQ_DROP / 4).write_volatile(1) };
            let t0 = run.tt.elapsed_ms();
            let lost = e.x25519_detailed(&k, &u);
            let ms = run.tt.elapsed_ms() - t0;
            let left = unsafe { regs.add(SIMFAULT_ENGINE_IRQ_LEFT / 4).read_volatile() };
            let _ = xous::unmap_memory(page);
            match lost {
                Err(engine25519::Error::Service(engine25519::Status::EngineFault)) => {}
                other => {
                    return Err(format!("the job whose interrupt was dropped answered {other:?} (want EngineFault)"))
                }
            }
            if left != 0 {
                return Err(format!("the injector still holds {left} interrupt(s): none was dropped"));
            }
            if ms > LOST_IRQ_BOUND_MS {
                return Err(format!("the failure took {ms} ms (bound {LOST_IRQ_BOUND_MS} ms)"));
            }
            let next = x25519_checked(run, e, &k, &u)?;
            if next != want {
                return Err(format!("the next job's result {} differs from RFC 7748", hex(&next)));
            }
            Ok(vec![("failed_after_ms", ms.to_string()), ("bound_ms", LOST_IRQ_BOUND_MS.to_string())])
        });
    }

    // system suspend and resume through xous-susres while clients run X25519s: the SoC powers
    // down (CPU, peripherals and engine reset, RAM kept) and the loader's resume path brings the
    // kernel back; every client's job must be answered, every result right (device only)
    #[cfg(target_os = "xous")]
    if engine.is_some() {
        run.check("selftest/suspend-resume", suspend_resume);
    }

    match trng {
        Err(e) => {
            run.failed += 1;
            say(&Verdict::new("selftest/trng-connect", Status::Fail).detail(format!("{e:?}")).to_string());
        }
        Ok(mut t) => {
            run.check("selftest/trng-words", |_| {
                let mut words = Vec::new();
                for _ in 0..32 {
                    let (a, b) = t.get_u32_pair().map_err(|e| e.to_string())?;
                    words.extend([a, b]);
                }
                check_words("the TRNG server", &words)?;
                Ok(vec![("words", words.len().to_string())])
            });
            run.check("selftest/trng-fill", |_| {
                let (mut a, mut b) = (vec![0u8; 4096], vec![0u8; 4096]);
                t.fill_buf(&mut a).map_err(|e| e.to_string())?;
                t.fill_buf(&mut b).map_err(|e| e.to_string())?;
                check_buffer(&a, &b)?;
                check_buffer(&b, &a)?;
                Ok(vec![("bytes", "8192".into())])
            });
            run.check("selftest/trng-health", |_| {
                let h = t.health_stats().map_err(|e| e.to_string())?;
                let s = t.error_stats().map_err(|e| e.to_string())?;
                if s.latched || s.error_bits != 0 {
                    return Err(format!("errors latched={} bits={:#x}", s.latched, s.error_bits));
                }
                if !h.conditioner_valid {
                    return Err("the conditioner is not valid".into());
                }
                // the sources that fed samples (a slot can be listed with none: e.g. the model's sources
                // when the server runs on the OS source)
                let used: Vec<_> =
                    h.sources.iter().filter(|x| x.kind != trng::api::SOURCE_NONE && x.samples > 0).collect();
                let detail = || {
                    used.iter()
                        .map(|x| format!("kind {} samples {} startup {}", x.kind, x.samples, x.startup_passed))
                        .collect::<Vec<_>>()
                        .join("; ")
                };
                if used.is_empty() || used.iter().any(|x| !x.startup_passed) {
                    return Err(format!("not every source passed its start-up test: {}", detail()));
                }
                let kinds: Vec<String> = used.iter().map(|x| x.kind.to_string()).collect();
                Ok(vec![
                    ("sources", kinds.join(",")),
                    ("blocks", h.blocks_out.to_string()),
                    ("reseeds", h.reseeds.to_string()),
                ])
            });
        }
    }

    // The kernel's own random numbers: the kernel draws every server ID from its TRNG port
    // (on the device: the conditioned kernel port, kernel-patches/device/0002); CreateServerId
    // hands four such words to the caller without creating anything.
    run.check("selftest/kernel-trng", |_| {
        let mut words = Vec::new();
        for _ in 0..8 {
            let sid = xous::create_server_id().map_err(|e| format!("CreateServerId: {e:?}"))?;
            words.extend(sid.to_array());
        }
        check_words("the kernel's server IDs", &words)?;
        Ok(vec![("words", words.len().to_string())])
    });

    let pass = run.failed == 0;
    say(&Verdict::judged(PROGRAM, pass).with("pass", run.passed).with("fail", run.failed).to_string());
    shutdown(&run.opts);
    // stay, like the servers, until the system stops
    let sid = xous::create_server().expect("private server");
    loop {
        let _ = xous::receive_message(sid);
    }
}
