//! Native bench provider (`cargo xtask bench`): one line of flat JSON on stdout, a table on stderr.
//! In-process throughput of the software pipeline (no IPC): conditioned bytes and raw models.
use std::time::{Duration, Instant};
use trng_core::conditioner::ConditionerConfig;
use trng_core::pipeline::{Feed, Pipeline, RawMode};

fn rate(mut f: impl FnMut() -> usize) -> f64 {
    let t0 = Instant::now();
    let mut n = 0usize;
    while t0.elapsed() < Duration::from_millis(700) {
        n += f();
    }
    n as f64 / t0.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let mut e = Pipeline::new(Feed::Models, None, [7; 32], ConditionerConfig::default());
    let mut buf = vec![0u8; 64 * 1024];
    let cond = rate(|| {
        e.fill_conditioned(&mut buf).unwrap();
        buf.len()
    });
    let mut small = [0u8; 4];
    let t0 = Instant::now();
    let n = 20_000;
    for _ in 0..n {
        e.fill_conditioned(&mut small).unwrap();
    }
    let u32_ns = t0.elapsed().as_secs_f64() * 1e9 / n as f64;
    let av = rate(|| {
        e.fill_raw(RawMode::Av, &mut buf).unwrap();
        buf.len()
    });
    let ro = rate(|| {
        e.fill_raw(RawMode::Ro, &mut buf).unwrap();
        buf.len()
    });
    eprintln!("trng-core (in-process, models feeding the conditioner)");
    eprintln!("  conditioned 64 KiB requests   {cond:10.1} MB/s");
    eprintln!("  conditioned 4-byte request    {u32_ns:10.0} ns");
    eprintln!("  raw av model                  {av:10.1} MB/s");
    eprintln!("  raw ro model                  {ro:10.1} MB/s");
    println!("{{\"trng_core_cond_mb_s\": {cond:.1}, \"trng_core_u32_ns\": {u32_ns:.0}, \"trng_core_raw_av_mb_s\": {av:.1}, \"trng_core_raw_ro_mb_s\": {ro:.1}}}");
}
