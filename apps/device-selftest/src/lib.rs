//! The device self-test client (src/main.rs): its options and the pure checks it applies to
//! what the services return, kept here so that `cargo test -p device-selftest` covers them on
//! the host (malformed options included). Its plan (the checks, markers, default calls and
//! refusals the harness expects) is plan.rs. docs/selftest.md describes the program.

use engine25519::BackendId;
use engine25519_core::isa::Isa;
use service_ipc::options::{Opt, Takes};

include!(concat!(env!("OUT_DIR"), "/expected.rs"));

pub mod plan;
pub use plan::*;

/// Name the spinner process (src/bin/spinner.rs) registers with xous-names.
pub const SPINNER_NAME: &str = "selftest-spinner";
/// Its requests (blocking scalars, each answered with the iteration count, low and high word):
/// the count so far; start counting; stop counting (it then blocks until the next start).
pub const SPIN_QUERY: usize = 1;
pub const SPIN_START: usize = 2;
pub const SPIN_STOP: usize = 3;
/// Milliseconds of the spinner's idle window.
pub const SPIN_IDLE_MS: usize = 20;
/// The simulated Precursor's fault-injection page (gateware/precursor: map.py `simfault`,
/// peripherals.SimFault; not on Precursor, an empty page of its CSR region) and its
/// engine-interrupt injector: write N to ENGINE_IRQ_DROP and the engine's next N interrupts
/// never reach the CPU; ENGINE_IRQ_LEFT reads how many are still to be dropped. Checked against
/// the built SoC's csr.csv by gateware/precursor/tests/test_irq_drop.py.
pub const SIMFAULT_BASE: usize = 0xF001_0000;
pub const SIMFAULT_ENGINE_IRQ_DROP: usize = 0x00;
pub const SIMFAULT_ENGINE_IRQ_LEFT: usize = 0x04;
/// The simulated Precursor's control page (map.py `simctl`, peripherals.SimCtl; not on
/// Precursor): FINISH ends the run, so it is a system page (kernel-patches/device/0005), and
/// power-probe must be refused it. Checked against csr.csv by tests/test_irq_drop.py.
pub const SIMCTL_BASE: usize = 0xF003_F000;
/// How long a job whose completion interrupt is lost may take to fail (ms of device time): the
/// hw backend sees it at its second tick at the latest (`HW_TICK_MS`), plus the round trip.
pub const LOST_IRQ_BOUND_MS: u64 = 3 * engine25519::api::HW_TICK_MS;
/// System suspend/resume cycles of the check `selftest/suspend-resume` in this build (plan.rs).
pub const SUSPEND_CYCLES: u32 = if cfg!(feature = "long-suspend") { SUSPEND_CYCLES_LONG } else { SUSPEND_CYCLES_SHORT };

/// What the run expects and does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// the backend every engine reply must report
    pub backend: BackendId,
    /// the ISA the server's engine must run (selects the expected cycle count); None: the one
    /// the probe job finds (`selftest/engine-isa`)
    pub isa: Option<Isa>,
    /// timed X25519 calls
    pub calls: u64,
    /// after the final verdict, ask the (hosted) kernel to shut the system down: given only to
    /// the system's own test process by whoever builds the system (xtask), docs/selftest.md
    pub shutdown: bool,
}

impl Default for Options {
    /// The device: the engine hardware; hosted: the model (the engine25519 server's own
    /// defaults); the ISA is whatever the probe job finds.
    fn default() -> Self {
        let backend = if cfg!(target_os = "xous") { BackendId::Hw } else { BackendId::Model };
        Options { backend, isa: None, calls: DEFAULT_CALLS, shutdown: false }
    }
}

const OPTS: &[Opt] = &[
    Opt { flag: "--backend", env: None, takes: Takes::Value },
    Opt { flag: "--isa", env: None, takes: Takes::Value },
    Opt { flag: "--calls", env: None, takes: Takes::Value },
    Opt { flag: "--shutdown", env: None, takes: Takes::Nothing },
];

/// Options from the arguments after the program name (the device passes none).
pub fn parse_options(args: &[String]) -> Result<Options, String> {
    let p = service_ipc::options::parse(OPTS, args, &|_| None)?;
    let mut o = Options::default();
    if let Some(b) = p.one_of("--backend", &["model", "hw", "rtl", "software"])? {
        o.backend = [BackendId::Model, BackendId::Hw, BackendId::Rtl, BackendId::Software]
            .into_iter()
            .find(|x| x.name() == b)
            .unwrap();
    }
    if let Some(v) = p.get("--isa") {
        o.isa = Some(v.parse().map_err(|_| format!("--isa: unknown ISA '{v}' (expected v1 or v2)"))?);
    }
    if let Some(n) = p.u64("--calls")? {
        if n == 0 || n > MAX_CALLS {
            return Err(format!("--calls: {n} is out of range (1..={MAX_CALLS})"));
        }
        o.calls = n;
    }
    o.shutdown = p.is_set("--shutdown");
    Ok(o)
}

/// Engine cycles of one X25519 on `isa` (the model, at build time).
pub fn expected_cycles(isa: Isa) -> u64 {
    match isa {
        Isa::V1 => X25519_CYCLES_V1,
        Isa::V2 => X25519_CYCLES_V2,
    }
}

/// 32 bytes from 64 hex digits (the vector table's format), and bytes to hex.
pub use engine25519_core::vectors::parse32 as unhex32;
pub use hex::encode as hex;

/// The cycles an engine reply reports, judged against the expected count. Exact for the
/// backends that count engine cycles (model, rtl). The `hw` backend has no cycle counter (the
/// engine's CSR map has none) and waits for the engine's interrupt: it counts only the full
/// ticks of its ticker (`HW_TICK_MS`) that a job waited, so a ladder of a few milliseconds
/// reports 0 or, if the server thread ran late, one or two ticks' worth. A backend that could
/// not claim the interrupt (or was built to poll, `ENGINE25519_HW_WAIT=poll`) polls STATUS and
/// reports STATUS polls x the cycles per poll it learned at start-up from a known-answer X25519
/// of exactly `want` cycles: that estimate must be within a factor of 2 of `want`.
pub fn check_cycles(backend: BackendId, isa: Isa, reported: u64) -> Result<(), String> {
    let want = expected_cycles(isa);
    match backend {
        BackendId::Hw => {
            let tick = isa.info().eng_clk_hz / 1000 * engine25519::api::HW_TICK_MS;
            let ticks = reported % tick == 0 && reported <= 2 * tick;
            let polled = reported >= want / 2 && reported <= want * 2;
            if !ticks && !polled {
                return Err(format!("hw reported {reported} cycles: neither 0, 1 or 2 ticks of {tick} nor within a factor of 2 of the engine's {want}"));
            }
            Ok(())
        }
        BackendId::Software => Ok(()),
        _ if reported == want => Ok(()),
        _ => Err(format!("reported {reported} engine cycles, the model's X25519 on {isa} takes {want}")),
    }
}

/// Words that must look random: none repeats, none is the TRNG port's poison word (what an
/// empty or failing port reads), none is zero. `what` names the source in the error.
pub fn check_words(what: &str, words: &[u32]) -> Result<(), String> {
    let poison = trng_core::spec::regs::constants::URANDOM_INVALID as u32;
    let mut sorted = words.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("{what}: the word {:#010x} repeats among {} words", w[0], words.len()));
    }
    if words.contains(&poison) {
        return Err(format!("{what}: the port's poison word {poison:#010x} was handed out"));
    }
    if words.contains(&0) {
        return Err(format!("{what}: a zero word"));
    }
    Ok(())
}

/// A buffer of random bytes: its share of one bits within 45-55 % (for 4 KiB the standard
/// deviation is 0.28 %), and not equal to `other` (the previous buffer).
pub fn check_buffer(buf: &[u8], other: &[u8]) -> Result<(), String> {
    if buf == other {
        return Err(format!("two {}-byte fills are identical", buf.len()));
    }
    let ones: u64 = buf.iter().map(|b| b.count_ones() as u64).sum();
    let bits = buf.len() as u64 * 8;
    if ones * 100 < bits * 45 || ones * 100 > bits * 55 {
        return Err(format!("{ones} one bits of {bits}: outside 45-55 %"));
    }
    Ok(())
}

/// Device microseconds per call at `clk_hz` from `ms` milliseconds over `calls` calls.
pub fn us_per_call(ms: u64, calls: u64) -> f64 {
    ms as f64 * 1000.0 / calls as f64
}

/// Wait, yielding (at most BOOT_SPINS rounds), until both services' public names resolve and
/// then xous-names reports trusted_init_done. In that order: a service registers its control
/// name before its public name, so once the public names resolve the control servers exist,
/// and trusted_init_done (every connection-limited server has all its slots taken) then means
/// the system's controller has claimed them (before any limited server exists it is trivially
/// true). Returns the rounds waited.
pub fn wait_for_system() -> Result<u64, String> {
    const BOOT_SPINS: u64 = 1_000_000;
    let xns = xous_api_names::XousNames::new().map_err(|e| format!("xous-names: {e:?}"))?;
    let mut resolved = [false; 2];
    for i in 0..BOOT_SPINS {
        for (done, name) in resolved.iter_mut().zip([engine25519::api::SERVER_NAME, trng::api::SERVER_NAME]) {
            if !*done {
                *done = xns.request_connection(name).is_ok();
            }
        }
        if resolved == [true, true] {
            match xns.trusted_init_done() {
                Ok(true) => return Ok(i),
                Ok(false) => {}
                Err(e) => return Err(format!("trusted_init_done: {e:?}")),
            }
        }
        xous::yield_slice();
    }
    Err(format!("after {BOOT_SPINS} rounds: public names resolved {resolved:?}, trusted_init_done false (a control slot is unclaimed)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_parse() {
        let o = parse_options(&args(&["--backend", "hw", "--isa=v1", "--calls", "0x10", "--shutdown"])).unwrap();
        assert_eq!(o, Options { backend: BackendId::Hw, isa: Some(Isa::V1), calls: 16, shutdown: true });
        assert_eq!(parse_options(&[]).unwrap(), Options::default());
    }

    #[test]
    fn malformed_options_are_refused_with_a_reason() {
        for (bad, why) in [
            (&["--backend", "fpga"][..], "unknown value 'fpga'"),
            (&["--isa", "v3"], "unknown ISA 'v3'"),
            (&["--calls", "many"], "not a number"),
            (&["--calls", "0"], "out of range"),
            (&["--calls", "10001"], "out of range"),
            (&["--calls"], "--calls"),
            (&["--bogus"], "--bogus"),
            (&["stray"], "stray"),
            (&["--shutdown=yes"], "--shutdown"),
        ] {
            let e = parse_options(&args(bad)).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    /// The harness expects these refusals (plan.rs): the client gives them.
    #[test]
    fn the_plans_malformed_options_are_refused_as_it_says() {
        for (line, why) in BAD_OPTIONS {
            let a: Vec<&str> = line.split_whitespace().collect();
            let e = parse_options(&args(&a)).unwrap_err();
            assert!(e.contains(why), "{line:?}: {e}");
        }
        assert_eq!(parse_options(&[]).unwrap().calls, DEFAULT_CALLS);
        assert!(CHECKS.contains(&TIMED_CHECK));
    }

    #[test]
    fn expected_cycles_are_the_engines() {
        // the figures the gateware measures (docs/gateware.md) and the model runs
        assert_eq!(expected_cycles(Isa::V1), 114_072);
        assert_eq!(expected_cycles(Isa::V2), 22_099);
    }

    #[test]
    fn cycle_checks() {
        assert!(check_cycles(BackendId::Model, Isa::V2, 22_099).is_ok());
        assert!(check_cycles(BackendId::Model, Isa::V2, 22_100).is_err());
        assert!(check_cycles(BackendId::Model, Isa::V1, 22_099).is_err());
        // hw by interrupt: whole ticks (HW_TICK_MS of the 50 MHz engine clock), at most two
        let tick = 50_000 * engine25519::api::HW_TICK_MS;
        assert!(check_cycles(BackendId::Hw, Isa::V1, 0).is_ok());
        assert!(check_cycles(BackendId::Hw, Isa::V1, tick).is_ok());
        assert!(check_cycles(BackendId::Hw, Isa::V2, 2 * tick).is_ok());
        assert!(check_cycles(BackendId::Hw, Isa::V1, 3 * tick).is_err());
        assert!(check_cycles(BackendId::Hw, Isa::V2, tick - 1).is_err());
        // hw polling: a poll-count estimate, within a factor of 2
        assert!(check_cycles(BackendId::Hw, Isa::V1, 114_072).is_ok());
        assert!(check_cycles(BackendId::Hw, Isa::V1, 160_636).is_ok());
        assert!(check_cycles(BackendId::Hw, Isa::V1, 57_036).is_ok());
        assert!(check_cycles(BackendId::Hw, Isa::V1, 57_035).is_err());
        assert!(check_cycles(BackendId::Hw, Isa::V1, 228_145).is_err());
    }

    #[test]
    fn word_and_buffer_checks_catch_bad_output() {
        assert!(check_words("x", &[1, 2, 3]).is_ok());
        assert!(check_words("x", &[1, 2, 1]).unwrap_err().contains("repeats"));
        assert!(check_words("x", &[1, 0xDEAD_BEEF]).unwrap_err().contains("poison"));
        assert!(check_words("x", &[1, 0]).unwrap_err().contains("zero"));
        let a: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let b: Vec<u8> = a.iter().rev().cloned().collect();
        assert!(check_buffer(&a, &b).is_ok());
        assert!(check_buffer(&a, &a).unwrap_err().contains("identical"));
        assert!(check_buffer(&[0u8; 4096], &b).unwrap_err().contains("outside"));
        assert!(check_buffer(&[0xffu8; 4096], &b).unwrap_err().contains("outside"));
    }

    #[test]
    fn the_isa_probe_is_a_v2_only_program() {
        // v1 does not define fadd: the probe's first word must not decode in v1
        assert!(Isa::V2.opcode_of(FIELD_ADD_V2[0]).is_some());
        assert!(Isa::V1.opcode_of(FIELD_ADD_V2[0]).is_none());
        assert_ne!(FIELD_ADD_PROBE.2, [0u8; 32]);
    }

    #[test]
    fn vectors_decode() {
        assert_eq!(unhex32(engine25519_core::vectors::RFC7748[0].0).unwrap()[0], 0xa5);
        assert!(unhex32("zz").is_err());
    }
}
