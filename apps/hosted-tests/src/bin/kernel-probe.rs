//! Probe used by the kernel-patch tests (`cargo xtask kernel-test`).
//!
//! Modes (first argument):
//! - `sid`: create two servers and print `PROBE-SID <hex>` for each (the kernel's RNG makes
//!   server IDs; with the stock kernel they are identical on every run).
//! - `ready`: print `PROBE-READY <pid>` as soon as the first syscall returned (start-up latency).
//! - `shutdown`: print `PROBE-SHUTDOWN-CALL`, then issue the Shutdown syscall.
//! - `idle`: connect, then wait forever (a process the kernel must stop on Shutdown).

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "sid" => {
            for _ in 0..2 {
                let sid = xous::create_server().expect("create_server");
                let w = sid.to_u32();
                hosted_tests::marker(&format!(
                    "PROBE-SID {:08x}{:08x}{:08x}{:08x}",
                    w.0, w.1, w.2, w.3
                ));
            }
        }
        "ready" => {
            let pid = xous::process::id();
            hosted_tests::marker(&format!("PROBE-READY {pid}"));
        }
        "shutdown" => {
            let _ = xous::process::id();
            hosted_tests::marker("PROBE-SHUTDOWN-CALL");
            match hosted_tests::shutdown_system() {
                Ok(()) => hosted_tests::marker("PROBE-SHUTDOWN-OK"),
                Err(e) => hosted_tests::marker(&format!("PROBE-SHUTDOWN-ERR {e:?}")),
            }
            // The kernel closes our connection; the xous runtime exits the process then.
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
        "idle" => {
            let pid = xous::process::id();
            hosted_tests::marker(&format!("PROBE-IDLE {pid}"));
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
        other => {
            eprintln!("kernel-probe: unknown mode {other:?} (sid|ready|shutdown|idle)");
            std::process::exit(2);
        }
    }
}
