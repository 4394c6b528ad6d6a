//! spinner: a low-priority background process that counts loop iterations, so that the device
//! self-test can tell what share of the CPU other processes get while it runs X25519s through
//! the engine service (docs/selftest.md, "CPU left to other processes").
//!
//! It registers `SPINNER_NAME` with xous-names and waits (blocked in the kernel, no CPU) for
//! `SPIN_START`. Then it counts: every `BATCH` iterations it offers the CPU to any other ready
//! thread (`yield_slice`: as low in priority as a Xous process can make itself, so a server
//! woken by an interrupt runs within one batch), and every `CHECK_EVERY` batches it answers a
//! pending request: `SPIN_QUERY` (the count so far) or `SPIN_STOP` (the count, then it waits
//! for the next start). Requests are blocking scalars answered with the count (low, high word).

use device_selftest::{SPINNER_NAME, SPIN_START, SPIN_STOP};

/// Iterations between two offers of the CPU.
const BATCH: u32 = 512;
/// Batches between two looks at the request queue.
const CHECK_EVERY: u32 = 8;

fn answer(env: &xous::MessageEnvelope, count: u64) {
    if env.body.is_blocking() {
        let _ = xous::return_scalar2(env.sender, count as u32 as usize, (count >> 32) as usize);
    }
}

fn main() {
    xous_api_log::init_wait().unwrap();
    let xns = xous_api_names::XousNames::new().expect("spinner: xous-names");
    let sid = xns.register_name(SPINNER_NAME, None).expect("spinner: register name");
    drop(xns);
    let mut count: u64 = 0;
    loop {
        // stopped: wait for a start
        let env = xous::receive_message(sid).expect("spinner: receive");
        let id = env.body.scalar_message().map(|m| m.id);
        answer(&env, count);
        if id != Some(SPIN_START) {
            continue;
        }
        'spin: loop {
            for _ in 0..CHECK_EVERY {
                for _ in 0..BATCH {
                    count = core::hint::black_box(count.wrapping_add(1));
                }
                xous::yield_slice();
            }
            while let Ok(Some(env)) = xous::try_receive_message(sid) {
                let id = env.body.scalar_message().map(|m| m.id);
                answer(&env, count);
                if id == Some(SPIN_STOP) {
                    break 'spin;
                }
            }
        }
    }
}
