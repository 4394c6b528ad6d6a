//! `trng_health_replay av|ro < SAMPLES`: runs the software SP 800-90B health tests
//! (`trng_core::health::SourceHealth` with the spec's parameters for that source) over the
//! samples on stdin (hexadecimal, whitespace separated) and prints the result as one health case
//! of the vector format (`trng_core::vectors`): the cutoffs used, every failure event (sample
//! index and test) and where the start-up test completed. The gateware benches replay the
//! samples their simulated noise source produced through it (docs/trng-gateware.md).

use std::io::Read;

use trng_core::health::HealthParams;
use trng_core::vectors::{health_case, to_text, Case};

fn main() {
    let src = std::env::args().nth(1).unwrap_or_default();
    let params = match src.as_str() {
        "av" => HealthParams::av(),
        "ro" => HealthParams::ro(),
        _ => {
            eprintln!("usage: trng_health_replay av|ro < SAMPLES (hex, whitespace separated)");
            std::process::exit(2)
        }
    };
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("trng_health_replay: reading stdin: {e}");
        std::process::exit(1)
    }
    let mut samples = Vec::new();
    for (i, t) in text.split_whitespace().enumerate() {
        match u32::from_str_radix(t, 16) {
            Ok(v) => samples.push(v),
            Err(_) => {
                eprintln!("trng_health_replay: token {i} ({t:?}) is not a hexadecimal sample");
                std::process::exit(1)
            }
        }
    }
    print!("{}", to_text(&[Case::Health(health_case(&format!("replay-{src}"), params, &samples))]));
}
