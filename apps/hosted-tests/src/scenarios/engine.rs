//! engine25519 server: answers version/stats and computes X25519 against RFC 7748 vectors.

use hosted_tests::{Step, StepResult};

pub fn steps() -> Vec<Step> {
    vec![
        Step { name: "engine/connect-version", run: version },
        Step { name: "engine/x25519-rfc7748", run: x25519_rfc7748 },
    ]
}

fn hex32(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

fn version() -> StepResult {
    let e = engine25519::Engine25519::new().map_err(|e| format!("connect: {e:?}"))?;
    let v = e.version().map_err(|e| format!("version: {e:?}"))?;
    if v.api == 0 {
        return Err(format!("version reports api 0: {v:?}"));
    }
    e.stats().map_err(|e| format!("stats: {e:?}"))?;
    Ok(())
}

fn x25519_rfc7748() -> StepResult {
    let e = engine25519::Engine25519::new().map_err(|e| format!("connect: {e:?}"))?;
    // RFC 7748 section 5.2, first test vector.
    let k = hex32("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
    let u = hex32("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
    let want = hex32("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
    let got = e.x25519(&k, &u).map_err(|e| format!("x25519: {e:?}"))?;
    if got != want {
        return Err(format!("x25519 RFC 7748 vector: got {got:02x?}"));
    }
    Ok(())
}
