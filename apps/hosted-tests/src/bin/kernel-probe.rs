//! Probe used by the kernel-patch tests (`cargo xtask kernel-test`).
//!
//! Modes (first argument):
//! - `sid`: create two servers and print `PROBE-SID <hex>` for each (the kernel's RNG makes
//!   server IDs; with the stock kernel they are identical on every run).
//! - `ready`: print `PROBE-READY <pid>` as soon as the first syscall returned (start-up latency).
//! - `shutdown`: wait until the `idle` probe's server is registered (so the system is fully up),
//!   print `PROBE-SHUTDOWN-CALL`, then issue the Shutdown syscall.
//! - `idle`: register a server with xous-names, then serve forever (a process the kernel must
//!   stop on Shutdown).

const IDLE_NAME: &str = "_kernel-probe idle_";

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
            let xns = xous_api_names::XousNames::new().expect("xous-names");
            xns.request_connection_blocking(IDLE_NAME).expect("connect to the idle probe");
            hosted_tests::marker("PROBE-SHUTDOWN-CALL");
            match hosted_tests::shutdown_system() {
                Ok(()) => hosted_tests::marker("PROBE-SHUTDOWN-OK"),
                Err(e) => hosted_tests::marker(&format!("PROBE-SHUTDOWN-ERR {e:?}")),
            }
            // The kernel closes our connection; the xous runtime exits the process then.
            std::thread::sleep(std::time::Duration::from_secs(30));
        }
        "idle" => {
            let xns = xous_api_names::XousNames::new().expect("xous-names");
            let sid = xns.register_name(IDLE_NAME, None).expect("register idle server");
            hosted_tests::marker(&format!("PROBE-IDLE {}", xous::process::id()));
            loop {
                // Serve (and drop) whatever arrives; blocking in the kernel like a real server.
                let _ = xous::receive_message(sid);
            }
        }
        other => {
            eprintln!("kernel-probe: unknown mode {other:?} (sid|ready|shutdown|idle)");
            std::process::exit(2);
        }
    }
}
