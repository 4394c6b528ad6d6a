//! An ORDINARY TRNG client tries every privileged operation (docs/security.md) and must be
//! refused each time, while the service keeps serving:
//! 1. it waits until the system controller (sysctl) has claimed the control slots;
//! 2. looking up the TRNG's control name is refused, and so is `TrngControl::claim`;
//! 3. each privileged opcode (ClearErrors, TestSetMode, TestGetData, TestInjectFault, Quit) sent
//!    to the PUBLIC server, as every message kind, gets `NotPermitted` (blocking scalar:
//!    `Scalar1(13)`; lend/lend_mut: memory back with `offset = 13`, `valid = None`);
//! 4. none of it had an effect: no error was cleared (`clears` unchanged), nothing is latched,
//!    and 20 pairs of words and a 64 KiB fill are still served, all distinct.
//!
//! Prints `VERDICT trng-privilege PASS|FAIL refused=R of=N lookup=refused claim=refused
//! served_after=S of_valid=20 -- first problem`.

use std::time::Duration;

use hosted_tests::privilege;
use trng::api::{Opcode, TrngError, CONTROL_NAME};

fn main() {
    xous_api_log::init_wait().expect("log server");
    let mut t = trng::Trng::new().expect("connect to the TRNG");
    let mut bad: Vec<String> = Vec::new();
    let clears_before = t.error_stats().map(|s| s.clears).unwrap_or(u32::MAX);

    privilege::wait_trusted_boot(&mut bad);
    let (lookup, claim) =
        privilege::control_refused(CONTROL_NAME, trng::TrngControl::claim(Duration::from_secs(2)), &mut bad);
    let ops: Vec<(usize, &str)> = [
        (Opcode::ClearErrors, "ClearErrors"),
        (Opcode::TestSetMode, "TestSetMode"),
        (Opcode::TestGetData, "TestGetData"),
        (Opcode::TestInjectFault, "TestInjectFault"),
        (Opcode::Quit, "Quit"),
    ]
    .iter()
    .map(|(o, n)| (*o as usize, *n))
    .collect();
    let (refused, tried) =
        privilege::privileged_opcodes_refused(t.conn(), &ops, TrngError::NotPermitted as usize, &mut bad);
    // the kernel's Shutdown: the system's own processes only
    let shutdown = privilege::shutdown_refused(&mut bad);

    // no effect, and the service still serves
    const VALID: usize = 20;
    let mut words = Vec::new();
    for _ in 0..VALID {
        match t.get_u64() {
            Ok(w) => words.push(w),
            Err(e) => bad.push(format!("get_u64 after the attempts: {e}")),
        }
    }
    let served = words.len();
    words.sort();
    words.dedup();
    if words.len() != served {
        bad.push("repeated words after the attempts".into());
    }
    let mut buf = vec![0u8; 64 * 1024];
    if let Err(e) = t.fill_buf(&mut buf) {
        bad.push(format!("fill after the attempts: {e}"));
    }
    match t.error_stats() {
        Ok(s) if s.clears == clears_before && !s.latched => {}
        other => bad.push(format!("error stats changed: {other:?} (clears before {clears_before})")),
    }
    let outcome = privilege::Outcome { refused, tried, lookup, claim, served, of_valid: VALID, shutdown };
    hosted_tests::report(&outcome.verdict("trng-privilege", &bad));
}
