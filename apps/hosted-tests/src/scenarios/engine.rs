//! engine25519 server: answers version/stats and computes X25519 against RFC 7748 vectors.

use hosted_tests::{Step, StepResult};

pub fn steps() -> Vec<Step> {
    vec![
        Step { name: "engine/connect-version", run: version },
        Step { name: "engine/x25519-rfc7748", run: x25519_rfc7748 },
    ]
}

use engine25519_core::vectors::bytes32;

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
        let got = e.x25519(&bytes32(k), &bytes32(u)).map_err(|e| format!("x25519: {e:?}"))?;
        if got != bytes32(want) {
            return Err(format!("x25519 RFC 7748 vector k={k}: got {got:02x?}"));
        }
    }
    Ok(())
}
