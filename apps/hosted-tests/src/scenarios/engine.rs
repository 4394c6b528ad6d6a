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
    // every RFC 7748 vector (sections 5.2 and 6.1), through the service
    for (k, u, want) in engine25519_core::vectors::RFC7748 {
        let got = e.x25519(&hex32(k), &hex32(u)).map_err(|e| format!("x25519: {e:?}"))?;
        if got != hex32(want) {
            return Err(format!("x25519 RFC 7748 vector k={k}: got {got:02x?}"));
        }
    }
    Ok(())
}
