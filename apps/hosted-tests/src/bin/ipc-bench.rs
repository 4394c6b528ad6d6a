//! IPC round-trip benchmark client (a bench provider: prints `BENCH-JSON {...}`).
//! Measures blocking scalar round trips and 4 KiB mutable-lend round trips to `echo-server`,
//! checking every answer. `--shutdown` ends the hosted system afterwards (patched kernel only).

use hosted_tests::echo::{Opcode, SERVER_NAME};
use std::time::Instant;

const WARMUP: usize = 200;
const ROUNDS: usize = 3000;

fn main() {
    let shutdown = std::env::args().any(|a| a == "--shutdown");
    let xns = xous_api_names::XousNames::new().expect("xous-names");
    let cid = xns.request_connection_blocking(SERVER_NAME).expect("connect echo server");

    // Scalar round trips.
    let mut scalar = Vec::with_capacity(ROUNDS);
    for i in 0..WARMUP + ROUNDS {
        let t0 = Instant::now();
        let r = xous::send_message(cid, xous::Message::new_blocking_scalar(Opcode::ScalarPlusOne as usize, i, 0, 0, 0))
            .expect("scalar send");
        let dt = t0.elapsed();
        match r {
            xous::Result::Scalar1(v) if v == i + 1 => {}
            other => panic!("echo scalar: got {other:?} for {i}"),
        }
        if i >= WARMUP {
            scalar.push(dt.as_secs_f64() * 1e6);
        }
    }

    // 4 KiB mutable lends of one page-aligned buffer.
    let mut page = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).expect("map page");
    let mut lend = Vec::with_capacity(ROUNDS);
    for i in 0..WARMUP + ROUNDS {
        let fill = (i % 251) as u8;
        page.as_slice_mut::<u8>().fill(fill);
        let msg = xous::MemoryMessage { id: Opcode::LendIncrement as usize, buf: page, offset: None, valid: None };
        let t0 = Instant::now();
        xous::send_message(cid, xous::Message::MutableBorrow(msg)).expect("lend send");
        let dt = t0.elapsed();
        let s = page.as_slice::<u8>();
        if s.iter().any(|&b| b != fill.wrapping_add(1)) {
            panic!("echo lend: buffer not incremented in round {i}");
        }
        if i >= WARMUP {
            lend.push(dt.as_secs_f64() * 1e6);
        }
    }
    let s50 = hosted_tests::median(&mut scalar);
    let l50 = hosted_tests::median(&mut lend);
    hosted_tests::marker(
        &verdict::bench::BenchLine::new()
            .num("ipc_scalar_rtt_us_p50", s50, 2)
            .num("ipc_lend_4k_rtt_us_p50", l50, 2)
            .to_string(),
    );
    xous::send_message(cid, xous::Message::new_blocking_scalar(Opcode::Quit as usize, 0, 0, 0, 0)).ok();
    if shutdown {
        hosted_tests::shutdown_system().ok();
    }
}
