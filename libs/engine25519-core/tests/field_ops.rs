//! Field-operation microcode and the model's multiplier against a big-integer reference,
//! including the boundary operands where the reference engine's overflow detector failed
//! (the reference's defect 1, docs/reference-system.md): results must always be fully reduced and exact.

use engine25519_core::isa::Isa;
use engine25519_core::model_field as f;
use engine25519_core::programs::{self, Runner};
use num_bigint::BigUint;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn p() -> BigUint {
    (BigUint::from(1u8) << 255usize) - BigUint::from(19u8)
}
fn big(b: &[u8; 32]) -> BigUint {
    BigUint::from_bytes_le(b)
}
fn bytes(x: &BigUint) -> [u8; 32] {
    let mut v: Vec<u8> = x.to_bytes_le();
    v.resize(32, 0);
    v.try_into().unwrap()
}
fn mask255(x: &BigUint) -> BigUint {
    x % (BigUint::from(1u8) << 255usize)
}

/// Boundary values: 0, 1, p-1, p, p+1, 2^255-20..2^255-1, 2^255, 2^255+18, 2^256-1, 2^256-19, ...
fn edges() -> Vec<[u8; 32]> {
    let two255: BigUint = BigUint::from(1u8) << 255usize;
    let two256: BigUint = BigUint::from(1u8) << 256usize;
    let mut v: Vec<BigUint> = vec![
        BigUint::from(0u8),
        BigUint::from(1u8),
        BigUint::from(2u8),
        BigUint::from(19u8),
        BigUint::from(38u8),
        p() - BigUint::from(2u8),
        p() - BigUint::from(1u8),
        p(),
        p() + BigUint::from(1u8),
        two255.clone() - BigUint::from(1u8),
        two255.clone(),
        two255.clone() + BigUint::from(1u8),
        two255.clone() + p() - BigUint::from(1u8),
        two256.clone() - BigUint::from(1u8),
        two256 - BigUint::from(19u8),
        (BigUint::from(1u8) << 128usize) - BigUint::from(1u8),
        BigUint::from(1u8) << 254usize,
    ];
    for k in 0..20u8 {
        v.push(two255.clone() - BigUint::from(k + 1));
    }
    // sqrt-ish values whose square lands right at multiples of p
    v.push(BigUint::parse_bytes(b"2b8324804fc1df0b2b4d00993dfbd7a72f431806ad2fe478c4ee1b274a0ea0b0", 16).unwrap()); // sqrt(-1)
    v.iter().map(bytes).collect()
}

#[test]
fn multiplier_is_exact_and_fully_reduced() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut vals = edges();
    for _ in 0..300 {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        vals.push(b);
        // values just around the top: many 1 bits (stress the normalization)
        let mut c = [0xffu8; 32];
        c[0] = b[0];
        c[31] = 0x7f | (b[31] & 0x80);
        vals.push(c);
    }
    let pp = p();
    for a in &vals {
        for b in vals.iter().step_by(7) {
            let want = (mask255(&big(a)) * mask255(&big(b))) % &pp;
            let got = f::mul(&f::from_bytes(a), &f::from_bytes(b));
            assert_eq!(big(&f::to_bytes(&got)), want, "mul({:x}, {:x})", big(a), big(b));
        }
        let want = (mask255(&big(a)) * mask255(&big(a))) % &pp;
        assert_eq!(big(&f::to_bytes(&f::sqr(&f::from_bytes(a)))), want);
    }
}

#[test]
fn field_programs_match_bigint_reference() {
    let pp = p();
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut all_vals = edges();
    for _ in 0..200 {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        all_vals.push(b);
    }
    // add/sub are defined for canonical inputs
    let canon: Vec<[u8; 32]> = all_vals.iter().filter(|v| big(v) < pp).copied().collect();
    for isa in Isa::ALL {
        let mut mul = Runner::new(programs::get("field_mul", isa).unwrap());
        let mut add = Runner::new(programs::get("field_add", isa).unwrap());
        let mut sub = Runner::new(programs::get("field_sub", isa).unwrap());
        let mut cyc = [None; 3];
        for a in &all_vals {
            for b in all_vals.iter().step_by(5) {
                let (got, o) = mul.run(&[*a, *b]).unwrap();
                assert_eq!(big(&got), (mask255(&big(a)) * mask255(&big(b))) % &pp, "{isa} field_mul");
                assert!(cyc[0].is_none() || cyc[0] == Some(o.cycles));
                cyc[0] = Some(o.cycles);
            }
        }
        for a in &canon {
            for b in &canon {
                let (got, o) = add.run(&[*a, *b]).unwrap();
                assert_eq!(big(&got), (big(a) + big(b)) % &pp, "{isa} field_add");
                assert!(cyc[1].is_none() || cyc[1] == Some(o.cycles));
                cyc[1] = Some(o.cycles);
                let (got, o) = sub.run(&[*a, *b]).unwrap();
                assert_eq!(big(&got), (big(a) + &pp - big(b)) % &pp, "{isa} field_sub");
                assert!(cyc[2].is_none() || cyc[2] == Some(o.cycles));
                cyc[2] = Some(o.cycles);
            }
        }
    }
}

#[test]
fn alu_primitives_match_bigint_reference() {
    let pp = p();
    let two256: BigUint = BigUint::from(1u8) << 256usize;
    let vals = edges();
    for a in &vals {
        let (x, ab) = (f::from_bytes(a), big(a));
        assert_eq!(big(&f::to_bytes(&f::trd(&x))), if ab >= pp { pp.clone() } else { BigUint::from(0u8) });
        assert_eq!(big(&f::to_bytes(&f::shl(&x))), (&ab << 1usize) % &two256);
        assert_eq!(big(&f::to_bytes(&f::xbt(&x))), (&ab >> 254usize) & BigUint::from(1u8));
        for b in &vals {
            let (y, bb) = (f::from_bytes(b), big(b));
            assert_eq!(big(&f::to_bytes(&f::add(&x, &y))), (&ab + &bb) % &two256);
            assert_eq!(big(&f::to_bytes(&f::sub(&x, &y))), (&ab + &two256 - &bb) % &two256);
            let s = &ab + &bb;
            let want = if s >= pp { (s - &pp) % &two256 } else { s };
            assert_eq!(big(&f::to_bytes(&f::fadd(&x, &y))), want, "fadd");
            let want = if ab >= bb { &ab - &bb } else { (&ab + &pp + &two256 - &bb) % &two256 };
            assert_eq!(big(&f::to_bytes(&f::fsub(&x, &y))), want, "fsub");
        }
    }
}
