//! The self-test's plan: the checks the client (src/main.rs) runs, in order, the lines it prints
//! around its timed calls, its default number of calls and how it refuses malformed options.
//! The harness builds its expectations from this same file (xtask/src/areas/selftest/ includes
//! it as a module), so it has no dependencies.

/// The verdict subject of the whole program (its final line).
pub const PROGRAM: &str = "device-selftest";
/// The checks the client runs on every target, in order; each prints `VERDICT <check> PASS`
/// (docs/selftest.md).
pub const CHECKS: &[&str] = &[
    "selftest/control-refused",
    "selftest/engine-version",
    "selftest/engine-isa",
    "selftest/engine-job",
    "selftest/x25519-rfc7748-0",
    "selftest/x25519-rfc7748-1",
    "selftest/x25519-rfc7748-2",
    "selftest/x25519-rfc7748-3",
    "selftest/x25519-rfc7748-4",
    "selftest/x25519-rfc7748-5",
    "selftest/x25519-exchange",
    "selftest/x25519-batch",
    "selftest/x25519-timing",
    "selftest/trng-words",
    "selftest/trng-fill",
    "selftest/trng-health",
    "selftest/kernel-trng",
];
/// The check whose calls are timed: the timing and spinner lines come before its verdict.
pub const TIMED_CHECK: &str = "selftest/x25519-timing";
/// Checks the client runs only on the simulated Precursor, right after [`TIMED_CHECK`].
pub const DEVICE_CHECKS: &[&str] = &["selftest/engine-lost-irq", "selftest/suspend-resume"];
/// Malformed options (as one command line) and the text their refusal contains: the client
/// then prints `VERDICT device-selftest FAIL options: <refusal>`.
pub const BAD_OPTIONS: &[(&str, &str)] = &[
    ("--calls many", "--calls: 'many' is not a number"),
    ("--calls 0", "out of range"),
    ("--isa v9", "unknown ISA 'v9'"),
    ("--backend fpga", "unknown value 'fpga'"),
    ("--frobnicate", "--frobnicate"),
];
/// Default number of timed X25519 calls (the device passes no options).
pub const DEFAULT_CALLS: u64 = 20;
/// Most timed calls accepted (a typo must not keep the simulated device busy for hours).
pub const MAX_CALLS: u64 = 10_000;
/// System suspend/resume cycles of the check `selftest/suspend-resume`: with the client's
/// feature `long-suspend` 20 (the figure of `cargo xtask bench --only sim-suspend`), otherwise 3
/// (the shortest run that shows the engine's state surviving repeated power cycles in CI).
pub const SUSPEND_CYCLES_SHORT: u32 = 3;
pub const SUSPEND_CYCLES_LONG: u32 = 20;
/// Client threads running X25519s (each with its own connection) while the system suspends.
pub const SUSPEND_CLIENTS: usize = 3;
/// Printed before each suspend request and after the system has resumed from it,
/// `<MARKER> <cycle number>`.
pub const SUSPEND_MARKER: &str = "SELFTEST-SUSPEND";
pub const RESUMED_MARKER: &str = "SELFTEST-RESUMED";

/// Line that carries the timing figures for `cargo xtask bench` (flat JSON follows).
pub const BENCH_MARKER: &str = "SELFTEST-BENCH";
/// Printed right before the timed calls start, `<MARKER> calls=<n>` (the harness may stamp it
/// with a cycle count).
pub const TIMING_START_MARKER: &str = "SELFTEST-TIMING-START";
/// Printed right after the timed calls end (stamped like the start line).
pub const TIMING_END_MARKER: &str = "SELFTEST-TIMING-END";
/// Printed around [`BATCH_ROUNDS`] X25519Batch requests of [`BATCH_SIZE`] jobs each, right after
/// the timed calls: `<MARKER> jobs=<BATCH_ROUNDS x BATCH_SIZE>` (stamped like the timing lines).
pub const BATCH_START_MARKER: &str = "SELFTEST-BATCH-START";
pub const BATCH_END_MARKER: &str = "SELFTEST-BATCH-END";
/// engine25519's `MAX_BATCH` (src/main.rs asserts it at compile time)
pub const BATCH_SIZE: usize = 4;
pub const BATCH_ROUNDS: u64 = 5;
/// Printed with the spinner's count around a window where the client sleeps (the spinner's
/// rate with the CPU to itself) and around a second run of the timed calls (the spinner's rate
/// beside them): `<MARKER> spin=<count>` (the busy end line also carries `calls=N`).
pub const SPIN_IDLE_START_MARKER: &str = "SELFTEST-SPIN-IDLE-START";
pub const SPIN_IDLE_END_MARKER: &str = "SELFTEST-SPIN-IDLE-END";
pub const SPIN_BUSY_START_MARKER: &str = "SELFTEST-SPIN-BUSY-START";
pub const SPIN_BUSY_END_MARKER: &str = "SELFTEST-SPIN-BUSY-END";
