//! The TRNG area of xtask: the `cargo xtask trng-test` command, the trng:* and
//! trng-service:privilege steps of `cargo xtask test`, and the trng-* bench providers.
//! (The gateware's step and provider are in trng_gateware.rs.)
//!
//! `trng-test` streams the TRNG server's tester (docs/trng-tester-protocol.md) through
//! tools/trng_test.py into dieharder (and rngtest/ent), one process per dieharder test, each fed
//! by its own tester connection:
//!   hosted kernel + trng server (tester on 127.0.0.1:PORT)
//!     -> python3 tools/trng_test.py --port PORT --source S   (verified buffers, stdout)
//!     -> dieharder -g 200 -d N [-n M]                         (stdin, closes it when done)
//! The tool exits 0 when dieharder closes the pipe; its --stats-json says how many bytes went in.
//!
//! Modules, by concern:
//! * `cli`       — the command's flags and entry point;
//! * `tester`    — starting the hosted tester (or attaching to a port), spawning the tool,
//!                 installing dieharder/rngtest/ent;
//! * `dieharder` — test lists per level, result parser, the runner;
//! * `stats`     — rngtest + ent over one stream, parsers and gates;
//! * `report`    — summary.json, dieharder.txt and the verdict line;
//! * `ci`        — the trng:* test steps;
//! * `privilege` — the trng-service:privilege step (docs/security.md);
//! * `bench`     — the trng-stream and trng-ipc bench providers;
//! * `sim_tester` — `cargo xtask trng-sim-tester` and step `trng:sim-tester`: the device tester
//!                 on the simulated Precursor through its UART Wishbone bridge
//!                 (docs/trng-tester-protocol.md section 5).

mod bench;
mod ci;
mod cli;
mod dieharder;
mod privilege;
mod report;
mod sim_tester;
mod stats;
mod tester;

use crate::steps::{BenchProvider, TestStep};
use std::time::Duration;

pub use cli::{run, TrngCmd};

/// Steps of `cargo xtask test` (listed in registry.rs).
pub fn test_steps() -> Vec<TestStep> {
    vec![
        TestStep { name: "trng:dieharder-ci", timeout: Duration::from_secs(40 * 60), run: ci::dieharder },
        TestStep { name: "trng:raw-models", timeout: Duration::from_secs(15 * 60), run: ci::raw_models },
        TestStep { name: "trng:hosted-scenarios", timeout: Duration::from_secs(10 * 60), run: ci::scenarios },
        TestStep { name: "trng-service:privilege", timeout: Duration::from_secs(180), run: privilege::privilege },
        TestStep { name: "trng:sim-tester", timeout: Duration::from_secs(40 * 60), run: sim_tester::step },
    ]
}

/// Bench providers (listed in registry.rs).
pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "trng-stream", timeout: Duration::from_secs(600), run: bench::stream },
        BenchProvider { name: "trng-ipc", timeout: Duration::from_secs(600), run: bench::ipc },
    ]
}
