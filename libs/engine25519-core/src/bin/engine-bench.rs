//! Bench provider for `cargo xtask bench` (a native provider, docs/hosted.md): prints ONE line of
//! flat JSON (key -> number) on stdout and a readable table on stderr.
//!
//! Keys: engine_v1_x25519_cycles, engine_v2_x25519_cycles, engine_v1_ladder_step_cycles,
//! engine_v2_ladder_step_cycles, model_x25519_us (median host time of one v2 X25519 on the
//! model), model_v1_x25519_us, dalek_x25519_us (x25519-dalek, same run), model_over_dalek,
//! engine_v1_x25519_us_at_clock / engine_v2_x25519_us_at_clock (cycles / eng_clk), and
//! prog_<name>_<isa>_instructions for every microcode program.
//!
//! Options: `--runs N` (timed X25519s per measurement, default 400), `--quick` (runs = 40).

use engine25519_core::isa::Isa;
use engine25519_core::model::RunStatus;
use engine25519_core::programs::{self, Runner};
use std::time::Instant;
use x25519_dalek::{PublicKey, StaticSecret};

use verdict::bench::median;

/// Deterministic test inputs (splitmix64): the bench measures real work on varying data.
fn inputs(n: usize) -> Vec<([u8; 32], [u8; 32])> {
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            let mut k = [0u8; 32];
            let mut u = [0u8; 32];
            for c in k.chunks_mut(8).chain(u.chunks_mut(8)) {
                c.copy_from_slice(&next().to_le_bytes());
            }
            (k, u)
        })
        .collect()
}

/// Cycle count between two consecutive arrivals of the sequencer at the ladder's `top` label in
/// the steady state (iterations 10 and 11), found by pausing at every instruction boundary.
fn ladder_step_cycles(isa: Isa) -> u64 {
    let prog = programs::x25519_program(isa);
    let top = prog.label("top").expect("x25519 programs define the label `top`");
    let mut r = Runner::new(prog);
    r.engine.set_reg(0, programs::X25519_SCALAR_REG, &[0x5a; 32]).unwrap();
    r.engine.set_reg(0, programs::X25519_U_REG, &[9; 32]).unwrap();
    let job = r.job();
    let mut st = r.engine.run_limited(&job, 1).unwrap();
    let mut arrivals = Vec::new();
    while let RunStatus::Paused(p) = st {
        if p.mpc == top {
            arrivals.push(p.cycle);
            if arrivals.len() == 12 {
                break;
            }
        }
        st = r.engine.resume(&p, 1).unwrap();
    }
    arrivals[11] - arrivals[10]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = 400usize;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--quick" => runs = 40,
            "--runs" => {
                i += 1;
                runs = match args.get(i).and_then(|v| v.parse().ok()) {
                    Some(n) if n > 0 => n,
                    _ => {
                        eprintln!("engine-bench: --runs needs a positive integer");
                        std::process::exit(2);
                    }
                };
            }
            "-h" | "--help" => {
                eprintln!("usage: engine-bench [--runs N | --quick]");
                return;
            }
            other => {
                eprintln!("engine-bench: unknown argument {other:?} (usage: engine-bench [--runs N | --quick])");
                std::process::exit(2);
            }
        }
        i += 1;
    }

    let data = inputs(runs);
    let mut keys: Vec<(String, f64)> = Vec::new();
    let mut table: Vec<(String, String)> = Vec::new();

    // cycles (identical for every input: checked by the test suite; here over the bench set)
    let mut cycles = [0u64; 2];
    for (n, isa) in [Isa::V1, Isa::V2].into_iter().enumerate() {
        let mut c = None;
        for (k, u) in data.iter().take(8) {
            let (_, cy) = programs::x25519(isa, k, u);
            assert!(c.is_none() || c == Some(cy), "cycle count depends on the input");
            c = Some(cy);
        }
        cycles[n] = c.unwrap();
        let hz = isa.info().eng_clk_hz as f64;
        keys.push((format!("engine_{isa}_x25519_cycles"), cycles[n] as f64));
        keys.push((format!("engine_{isa}_x25519_us_at_clock"), cycles[n] as f64 / hz * 1e6));
        keys.push((format!("engine_{isa}_ladder_step_cycles"), ladder_step_cycles(isa) as f64));
    }

    // host time: model (v2 and v1) vs x25519-dalek, interleaved in the same run
    let mut runner2 = Runner::new(programs::x25519_v2());
    let mut runner1 = Runner::new(programs::x25519_v1());
    let mut t_model2 = Vec::with_capacity(runs);
    let mut t_model1 = Vec::with_capacity(runs);
    let mut t_dalek = Vec::with_capacity(runs);
    let mut sink = 0u8;
    for (k, u) in &data {
        let t0 = Instant::now();
        let (out2, _) = runner2.run(&[*k, *u]).unwrap();
        let t1 = Instant::now();
        let (out1, _) = runner1.run(&[*k, *u]).unwrap();
        let t2 = Instant::now();
        let d = StaticSecret::from(*k).diffie_hellman(&PublicKey::from(*u));
        let t3 = Instant::now();
        assert_eq!(out2, *d.as_bytes(), "model v2 disagrees with x25519-dalek");
        assert_eq!(out1, *d.as_bytes(), "model v1 disagrees with x25519-dalek");
        sink ^= out2[0] ^ out1[0] ^ d.as_bytes()[0];
        t_model2.push((t1 - t0).as_secs_f64() * 1e6);
        t_model1.push((t2 - t1).as_secs_f64() * 1e6);
        t_dalek.push((t3 - t2).as_secs_f64() * 1e6);
    }
    std::hint::black_box(sink);
    let m2 = median(&mut t_model2);
    let m1 = median(&mut t_model1);
    let md = median(&mut t_dalek);
    keys.push(("model_x25519_us".into(), m2));
    keys.push(("model_v1_x25519_us".into(), m1));
    keys.push(("dalek_x25519_us".into(), md));
    keys.push(("model_over_dalek".into(), m2 / md));

    for p in programs::all() {
        keys.push((format!("prog_{}_{}_instructions", p.name, p.isa), p.len() as f64));
    }

    for (k, v) in &keys {
        let s = if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.3}") };
        table.push((k.clone(), s));
    }
    let w = table.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    eprintln!("engine25519 model bench ({runs} timed X25519 per implementation, medians)");
    for (k, v) in &table {
        eprintln!("  {k:<w$}  {v:>12}");
    }
    let json: serde_json::Map<String, serde_json::Value> = keys
        .into_iter()
        .map(|(k, v)| {
            let n = if v.fract() == 0.0 && v.abs() < 9e15 {
                serde_json::Value::from(v as i64)
            } else {
                serde_json::Value::from((v * 1000.0).round() / 1000.0)
            };
            (k, n)
        })
        .collect();
    println!("{}", serde_json::Value::Object(json));
}
