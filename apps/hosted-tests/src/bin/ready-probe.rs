//! Start-up probe for `cargo xtask bench`: blocks until every server named on the command line
//! is registered with xous-names (connecting to each), then prints `HOSTED-READY`.
//! The harness measures from kernel launch to that line (hosted_startup_ms).

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    match hosted_tests::connect_all(&names) {
        Ok(_) => hosted_tests::marker(&format!("HOSTED-READY {}", names.len())),
        Err(e) => hosted_tests::marker(&format!("HOSTED-READY-FAILED {e:?}")),
    }
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
