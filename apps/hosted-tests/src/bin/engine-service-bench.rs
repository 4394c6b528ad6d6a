//! engine25519 service benchmark (hosted client). Measures, in this one process:
//! * blocking X25519 over IPC to the engine25519 server (model backend) -> service_x25519_us_p50
//! * the same X25519 on the model in-process (engine25519_core::programs::x25519, same ISA as the
//!   server, found from the cycle count it reports) -> service_model_inproc_us_p50 and
//!   service_overhead_ratio = service / in-process (like for like, same run)
//! * the IPC floor: a Stats request (4 KiB mutable lend, no engine work) to the same server with a
//!   reused buffer, interleaved with the above -> service_ipc_floor_us_p50 (what any lend round
//!   trip costs on the hosted kernel's TCP transport at that moment)
//! * a provider table: per backend, key generation (k * basepoint) and
//!   shared secret (k * peer) time and engine cycles.
//! Prints `ENGINE-BENCH-TABLE ...` lines and one `BENCH-JSON {...}` line.
//! Timed regions hold only the operation: every result is checked against x25519-dalek after the
//! timer stopped (wrong results are counted, never excluded).

use engine25519_core::isa::Isa;
use std::time::Instant;

fn key(i: u64) -> [u8; 32] {
    det_rng::XorShift64(0x9E37_79B9_7F4A_7C15u64 ^ i.wrapping_mul(0x2545_F491_4F6C_DD1D)).bytes32()
}

/// p50 in microseconds of `f(i)` over n calls after `warm` warm-up calls.
fn time_us<R>(n: u64, warm: u64, f: impl FnMut(u64) -> R) -> f64 {
    time_check_us(n, warm, f, |_, _| {})
}

/// Like `time_us`, and `check(i, result)` is called on every result outside the timed region.
fn time_check_us<R>(n: u64, warm: u64, f: impl FnMut(u64) -> R, check: impl FnMut(u64, R)) -> f64 {
    hosted_tests::median(&mut samples_us(n, warm, f, check))
}

/// Every timing (us) of `f(i)` over n calls after `warm` warm-up calls; `check(i, result)` runs
/// outside the timed region.
fn samples_us<R>(n: u64, warm: u64, mut f: impl FnMut(u64) -> R, mut check: impl FnMut(u64, R)) -> Vec<f64> {
    for i in 0..warm {
        let r = f(i);
        check(i, r);
    }
    (0..n)
        .map(|i| {
            let t = Instant::now();
            let r = std::hint::black_box(f(warm + i));
            let us = t.elapsed().as_secs_f64() * 1e6;
            check(warm + i, r);
            us
        })
        .collect()
}

fn main() {
    xous_api_log::init_wait().expect("log server");
    let n = std::env::args().skip_while(|a| a != "--n").nth(1).and_then(|v| v.parse().ok()).unwrap_or(300u64);
    let e = engine25519::Engine25519::new().expect("connect to engine25519");
    let base = x25519_dalek::X25519_BASEPOINT_BYTES;
    let peer = x25519_dalek::x25519(key(999_999), base);
    let mut wrong = 0u64;
    let mut svc_cycles = 0u64;

    // which ISA does the server run? the one whose microcode takes the cycles it reports
    let probe = e.x25519_detailed(&key(0), &peer).expect("service x25519");
    let isa = *Isa::ALL
        .iter()
        .find(|i| engine25519_core::programs::x25519(**i, &key(0), &peer).1 == probe.cycles)
        .expect("server cycle count matches no ISA's X25519 microcode");

    // interleave short service and in-process rounds so machine noise (a shared 2-core host)
    // hits both alike; the p50 is over all calls of each kind
    const ROUNDS: u64 = 30;
    let mut svc = Vec::new();
    let mut inproc = Vec::new();
    let mut floor = Vec::new();
    let mut stats_buf =
        xous_ipc::Buffer::into_buf(engine25519::api::StatsMsg { magic: engine25519::api::MAGIC, ..Default::default() })
            .expect("stats buffer");
    for round in 0..ROUNDS {
        floor.extend(samples_us(
            (n / ROUNDS).max(1),
            if round == 0 { 10 } else { 1 },
            |_| {
                stats_buf
                    .rewrite(engine25519::api::StatsMsg { magic: engine25519::api::MAGIC, ..Default::default() })
                    .expect("serialize");
                stats_buf.lend_mut(e.conn(), engine25519::api::Opcode::Stats as u32).expect("stats lend")
            },
            |_, r| assert!(matches!(r, xous::Result::MemoryReturned(..)), "stats reply {r:?}"),
        ));
        let warm = if round == 0 { 10 } else { 1 };
        svc.extend(samples_us(
            (n / ROUNDS).max(1),
            warm,
            |i| e.x25519_detailed(&key(round * 1_000_000 + i), &peer).expect("service x25519"),
            |i, r| {
                svc_cycles = r.cycles;
                if r.result != x25519_dalek::x25519(key(round * 1_000_000 + i), peer) {
                    wrong += 1;
                }
            },
        ));
        inproc.extend(samples_us(
            (n / ROUNDS).max(1),
            warm,
            |i| engine25519_core::programs::x25519(isa, &key(round * 1_000_000 + i), &peer),
            |i, (out, c)| {
                assert_eq!(c, probe.cycles, "constant-time: same cycles for every input");
                assert_eq!(out, x25519_dalek::x25519(key(round * 1_000_000 + i), peer));
            },
        ));
    }
    let svc_p50 = hosted_tests::median(&mut svc);
    let inproc_p50 = hosted_tests::median(&mut inproc);
    let floor_p50 = hosted_tests::median(&mut floor);

    // the provider table
    let m = n / 3;
    let rows: Vec<(&str, f64, f64, u64)> = vec![
        (
            if isa == Isa::V1 {
                "model v1 via engine25519 service (IPC)"
            } else {
                "model v2 via engine25519 service (IPC)"
            },
            time_check_us(
                m,
                5,
                |i| e.x25519(&key(i), &base).expect("service x25519"),
                |i, r| {
                    wrong += (r != x25519_dalek::x25519(key(i), base)) as u64;
                },
            ),
            time_check_us(
                m,
                5,
                |i| e.x25519(&key(i), &peer).expect("service x25519"),
                |i, r| {
                    wrong += (r != x25519_dalek::x25519(key(i), peer)) as u64;
                },
            ),
            svc_cycles,
        ),
        (
            "model v1 in-process",
            time_us(m, 5, |i| engine25519_core::programs::x25519(Isa::V1, &key(i), &base)),
            time_us(m, 5, |i| engine25519_core::programs::x25519(Isa::V1, &key(i), &peer)),
            engine25519_core::programs::x25519(Isa::V1, &key(1), &peer).1,
        ),
        (
            "model v2 in-process",
            time_us(m, 5, |i| engine25519_core::programs::x25519(Isa::V2, &key(i), &base)),
            time_us(m, 5, |i| engine25519_core::programs::x25519(Isa::V2, &key(i), &peer)),
            engine25519_core::programs::x25519(Isa::V2, &key(1), &peer).1,
        ),
        (
            "software x25519-dalek in-process",
            time_us(m, 5, |i| x25519_dalek::x25519(key(i), base)),
            time_us(m, 5, |i| x25519_dalek::x25519(key(i), peer)),
            0,
        ),
    ];
    hosted_tests::marker(
        "ENGINE-BENCH-TABLE X25519 providers (hosted, host CPU time; engine cycles at 50 MHz = device time)",
    );
    hosted_tests::marker(&format!(
        "ENGINE-BENCH-TABLE {:<42} {:>14} {:>16} {:>14} {:>12}",
        "provider", "keygen (us)", "shared (us)", "engine cycles", "@50MHz (ms)"
    ));
    for (name, kg, sh, cyc) in &rows {
        hosted_tests::marker(&format!(
            "ENGINE-BENCH-TABLE {:<42} {:>14.1} {:>16.1} {:>14} {:>12}",
            name,
            kg,
            sh,
            if *cyc > 0 { cyc.to_string() } else { "-".into() },
            if *cyc > 0 { format!("{:.3}", *cyc as f64 / 50e6 * 1e3) } else { "-".into() }
        ));
    }
    let stats = e.stats().expect("stats");
    let line = verdict::bench::BenchLine::new()
        .num("service_x25519_us_p50", svc_p50, 1)
        .num("service_model_inproc_us_p50", inproc_p50, 1)
        .num("service_overhead_ratio", svc_p50 / inproc_p50, 3)
        .num("service_ipc_floor_us_p50", floor_p50, 1)
        .num("service_keygen_us_model_ipc", rows[0].1, 1)
        .num("service_shared_us_model_ipc", rows[0].2, 1)
        .num("service_keygen_us_model_v2_inproc", rows[2].1, 1)
        .num("service_keygen_us_software", rows[3].1, 1)
        .int("service_x25519_cycles_v1", rows[1].3 as u64)
        .int("service_x25519_cycles_v2", rows[2].3 as u64)
        .int("service_wrong_results", wrong as u64)
        .int("service_errors", stats.errors as u64);
    hosted_tests::marker(&line.to_string());
}
