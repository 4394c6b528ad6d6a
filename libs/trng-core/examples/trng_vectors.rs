//! `cargo run -p trng-core --example trng_vectors -- OUT.vec`: writes the conditioner and
//! health-test vector file the TRNG gateware is checked against (format: trng_core::vectors).
//! Everything is deterministic (fixed seeds), so the file only changes when the model does.

use trng_core::health::HealthParams;
use trng_core::sources::{AvModel, FaultSpec, Physics};
use trng_core::vectors::{conditioner_case, health_case, raw_words_needed, to_text, Case};

fn words(seed: u8, n: usize) -> Vec<u32> {
    let mut p = Physics::new([seed; 32]);
    (0..n).map(|_| p.u32()).collect()
}

fn av_samples(seed: u8, faults: &str, n: usize) -> Vec<u32> {
    let mut m = AvModel::new([seed; 32]);
    m.set_faults(&FaultSpec::parse(faults).expect("fault spec"));
    (0..n).map(|_| m.sample(0)).collect()
}

/// Ring-oscillator-like bits: fair coin flips, with a stuck run and a biased stretch.
fn ro_bits(seed: u8, n: usize, stuck: Option<(usize, usize, u32)>, bias: Option<(usize, usize, u32)>) -> Vec<u32> {
    let mut p = Physics::new([seed; 32]);
    (0..n)
        .map(|i| {
            let r = p.u32();
            match (stuck, bias) {
                (Some((a, len, v)), _) if i >= a && i < a + len => v,
                // probability of a 1 = pct / 100
                (_, Some((a, len, pct))) if i >= a && i < a + len => (r % 100 < pct) as u32,
                _ => r & 1,
            }
        })
        .collect()
}

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: trng_vectors OUT.vec");
        std::process::exit(2)
    });
    let mut cases = Vec::new();
    let mut cond =
        |name: &str, ri: u32, si: u32, se: bool, raw: Vec<u32>, seeds: Vec<(usize, Vec<u32>)>, blocks: usize| {
            assert!(raw.len() >= raw_words_needed(ri, blocks));
            cases.push(Case::Conditioner(conditioner_case(name, ri, si, se, &raw, &seeds, blocks).expect(name)));
        };
    cond("defaults", 2, 64, true, words(1, 64), vec![], 8);
    cond(
        "reseed-every-block-selfmix-3-user-seeds",
        1,
        3,
        true,
        words(2, 64),
        vec![(3, vec![0x0123_4567]), (20, vec![0xdead_beef, 0x1]), (30, vec![0xffff_ffff])],
        12,
    );
    cond("reseed-5-selfmix-every-block", 5, 1, true, words(3, 64), vec![(40, vec![7])], 10);
    cond("selfmix-off", 3, 1, false, words(4, 64), vec![], 6);
    // the 64-bit block counter (seed words 8, 9 = raw words 8, 9 after seeding) wraps after 2 blocks
    let mut raw = words(5, 64);
    raw[8] = 0xffff_fffe;
    raw[9] = 0xffff_ffff;
    cond("counter-carry", 4095, 65535, false, raw, vec![], 4);
    let mut raw = words(6, 64);
    raw[8] = 0xffff_fffe;
    cond("counter-low-word-carry", 4095, 2, true, raw, vec![], 5);
    // long cases (Verilator only: hundreds of blocks, many reseeds and self-mixes)
    let seeds: Vec<(usize, Vec<u32>)> = (0..20).map(|i| (30 + 7 * i, vec![0x5eed_0000 + i as u32])).collect();
    cond("long-reseed-2-selfmix-5", 2, 5, true, words(7, 400), seeds, 300);
    cond("long-defaults", 2, 64, true, words(8, 400), vec![(100, vec![1, 2, 3])], 400);

    let av = HealthParams::av();
    let ro = HealthParams::ro();
    let mut health = |name: &str, p: HealthParams, s: Vec<u32>| cases.push(Case::Health(health_case(name, p, &s)));
    health("av-clean", av, av_samples(11, "", 6000));
    health("av-stuck", av, av_samples(12, "av0:stuck=0x800@1500+100", 6000));
    health("av-stuck-during-startup", av, av_samples(13, "av0:stuck=0x123@200+60", 3000));
    health("av-bias", av, av_samples(14, "av0:bias=0.6@1200+3000", 6000));
    health("av-burst", av, av_samples(15, "av0:burst=30/400@1000+3000", 6000));
    health("ro-clean", ro, ro_bits(21, 8000, None, None));
    health("ro-stuck", ro, ro_bits(22, 8000, Some((3000, 200, 1)), None));
    health("ro-bias", ro, ro_bits(23, 12000, None, Some((2048, 6000, 90))));
    std::fs::write(&out, to_text(&cases)).unwrap_or_else(|e| {
        eprintln!("trng_vectors: cannot write {out}: {e}");
        std::process::exit(1)
    });
    eprintln!("trng_vectors: {} cases -> {out}", cases.len());
}
