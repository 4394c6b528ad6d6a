//! Scripted smoke client: runs every scenario step (src/scenarios/), prints SMOKE-* markers,
//! then shuts the whole hosted system down through the kernel's Shutdown syscall.
//! `smoke --no-shutdown` leaves the system running.

#[path = "../scenarios/mod.rs"]
mod scenarios;

fn main() {
    let no_shutdown = std::env::args().any(|a| a == "--no-shutdown");
    xous_api_log::init_wait().expect("log server");
    log::set_max_level(log::LevelFilter::Info);
    log::info!("smoke client starting");
    let failed = hosted_tests::run_steps(&scenarios::all());
    if !no_shutdown {
        hosted_tests::marker("SMOKE-SHUTDOWN");
        if let Err(e) = hosted_tests::shutdown_system() {
            hosted_tests::marker(&format!("SMOKE-SHUTDOWN-FAILED {e:?}"));
        }
    }
    std::process::exit(if failed == 0 { 0 } else { 1 });
}
