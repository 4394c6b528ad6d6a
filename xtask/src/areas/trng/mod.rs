//! Steps `trng:*`: the `cargo xtask trng-test` and `trng-sim-tester` commands, the test steps,
//! the trng-* bench providers, the gateware's (gateware.rs) and the SoC's (soc.rs). The
//! service's privilege step is areas/trng_service/.
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
//! * `types`     — the tester's sources and the dieharder levels;
//! * `cli`       — the command's flags and entry point;
//! * `tester`    — starting the hosted tester (or attaching to a port), spawning the tool,
//!                 installing dieharder/rngtest/ent;
//! * `dieharder` — test lists per level, result parser, the runner;
//! * `stats`     — rngtest + ent over one stream, parsers and gates;
//! * `report`    — summary.json, dieharder.txt and the verdict line;
//! * `ci`        — the trng:* test steps;
//! * `bench`     — the trng-stream and trng-ipc bench providers;
//! * `sim_tester` — `cargo xtask trng-sim-tester` and step `trng:sim-tester`: the device tester
//!                 on the simulated Precursor through its UART Wishbone bridge
//!                 (docs/trng-tester-protocol.md section 5);
//! * `gateware`  — step `trng:gateware-rtl` and bench provider `trng-gateware`;
//! * `soc`       — step `trng:soc` and bench provider `trng-soc`.

mod bench;
pub mod ci;
mod cli;
mod dieharder;
pub mod gateware;
mod report;
pub mod sim_tester;
pub mod soc;
mod stats;
mod tester;
mod types;

use crate::steps::BenchProvider;
use std::time::Duration;

pub use cli::{run, TrngCmd};

/// Bench providers (listed in registry.rs).
pub fn bench_providers() -> Vec<BenchProvider> {
    vec![
        BenchProvider { name: "trng-stream", timeout: Duration::from_secs(600), run: bench::stream },
        BenchProvider { name: "trng-ipc", timeout: Duration::from_secs(600), run: bench::ipc },
    ]
}
