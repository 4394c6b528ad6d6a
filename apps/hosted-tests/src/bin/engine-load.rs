//! engine25519 load client (one of N concurrent processes).
//!
//! `engine-load --id N --calls C`: C X25519 calls with fresh keys (even calls blocking, odd calls
//! through the asynchronous API), each checked against x25519-dalek computed here; prints
//! `VERDICT engine-load/N PASS|FAIL calls=C done=D wrong=W errors=E -- first error`, PASS only if
//! all C calls returned the right result.
//! `engine-load --id N --start-at-ms T --window-ms W`: from unix time T, calls for W ms; prints
//! `VERDICT engine-load/N PASS|FAIL completed=K wrong=W errors=E -- first error` (jobs completed
//! inside the window; PASS if none was wrong or failed and at least one completed).

use hosted_tests::Verdict;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn arg(name: &str) -> Option<u64> {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).and_then(|v| v.parse().ok())
}

use det_rng::XorShift64 as Rng;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn main() {
    xous_api_log::init_wait().expect("log server");
    let id = arg("--id").unwrap_or(0);
    let subject = format!("engine-load/{id}");
    let e = engine25519::Engine25519::new().expect("connect to engine25519");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id + 1).wrapping_mul(0x1000_0000_01b3) ^ now_ms());
    let (mut wrong, mut errors) = (0u64, 0u64);
    let mut first_error = String::new();
    if let (Some(start), Some(window)) = (arg("--start-at-ms"), arg("--window-ms")) {
        let t = now_ms();
        if start > t {
            std::thread::sleep(Duration::from_millis(start - t));
        }
        let end = start + window;
        let mut completed = 0u64;
        let sync_only = std::env::args().any(|a| a == "--sync");
        // with the async API two requests stay in flight, so this client always has a job
        // queued at the server and the measured share is the server's round robin
        let depth = if sync_only { 1 } else { 2 };
        let mut inflight = std::collections::VecDeque::new();
        loop {
            while inflight.len() < depth {
                let (k, u) = (rng.bytes32(), rng.bytes32());
                let p = if sync_only { None } else { Some(e.x25519_async(&k, &u)) };
                inflight.push_back((k, u, p));
            }
            let (k, u, p) = inflight.pop_front().unwrap();
            let r = match p {
                None => e.x25519(&k, &u),
                Some(p) => p
                    .wait_timeout(Duration::from_secs(60))
                    .unwrap_or(Err(engine25519::Error::Protocol("timeout")))
                    .map(|r| r.result),
            };
            if now_ms() > end {
                break;
            }
            match r {
                Ok(v) if v == x25519_dalek::x25519(k, u) => completed += 1,
                Ok(_) => wrong += 1,
                Err(err) => {
                    errors += 1;
                    if first_error.is_empty() {
                        first_error = err.to_string();
                    }
                }
            }
        }
        hosted_tests::report(
            &Verdict::judged(&subject, wrong == 0 && errors == 0 && completed > 0)
                .with("completed", completed)
                .with("wrong", wrong)
                .with("errors", errors)
                .detail(&first_error),
        );
        return;
    }
    let calls = arg("--calls").unwrap_or(100);
    let sync_only = std::env::args().any(|a| a == "--sync");
    let mut done = 0u64;
    // every reply, sync or async, carries the job's engine cycles: X25519 is constant time, so
    // all replies from one backend report the same count
    let mut cycles: Option<(Option<engine25519::BackendId>, u64)> = None;
    let mut cycles_differ = 0u64;
    for i in 0..calls {
        let (k, u) = (rng.bytes32(), rng.bytes32());
        let r = if sync_only || i % 2 == 0 {
            e.x25519_detailed(&k, &u)
        } else {
            match e.x25519_async(&k, &u).wait_timeout(Duration::from_secs(60)) {
                Some(r) => r,
                None => Err(engine25519::Error::Protocol("async result did not arrive within 60 s")),
            }
        };
        if let Ok(rep) = &r {
            match cycles {
                None => cycles = Some((rep.backend, rep.cycles)),
                Some((b, c)) if b == rep.backend && c != rep.cycles => {
                    cycles_differ += 1;
                    if first_error.is_empty() {
                        first_error = format!("reply {i} reported {} cycles, the first {c}", rep.cycles);
                    }
                }
                Some(_) => {}
            }
        }
        match r.map(|rep| rep.result) {
            Ok(v) if v == x25519_dalek::x25519(k, u) => done += 1,
            Ok(_) => wrong += 1,
            Err(err) => {
                errors += 1;
                if first_error.is_empty() {
                    first_error = err.to_string();
                }
            }
        }
    }
    hosted_tests::report(
        &Verdict::judged(&subject, done == calls && wrong == 0 && errors == 0 && cycles_differ == 0)
            .with("calls", calls)
            .with("done", done)
            .with("wrong", wrong)
            .with("errors", errors)
            .with("cycles", cycles.map_or(0, |c| c.1))
            .with("cycles_differ", cycles_differ)
            .detail(&first_error),
    );
    // Returning from main with the async pool's threads still connected is fine: kernel patch
    // 0004-hosted-process-exit (the stock 0.9.37 kernel aborted here); the smoke run relies on it.
}
