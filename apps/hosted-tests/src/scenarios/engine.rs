//! engine25519 server: answers version/stats and computes X25519 against RFC 7748 vectors.

use hosted_tests::{Step, StepResult};

pub fn steps() -> Vec<Step> {
    vec![
        Step { name: "engine/connect-version", run: version },
        Step { name: "engine/x25519-rfc7748", run: x25519_rfc7748 },
        Step { name: "engine/x25519-batch", run: x25519_batch },
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

/// X25519Batch through the client library: every RFC 7748 vector in one batch (longer lists
/// go as several requests), batches of 1..=MAX_BATCH against x25519-dalek, the async form,
/// and the empty list.
fn x25519_batch() -> StepResult {
    let e = engine25519::Engine25519::new().map_err(|e| format!("connect: {e:?}"))?;
    let rfc: Vec<([u8; 32], [u8; 32])> =
        engine25519_core::vectors::RFC7748.iter().map(|(k, u, _)| (bytes32(k), bytes32(u))).collect();
    let got = e.x25519_batch(&rfc).map_err(|e| format!("x25519_batch (RFC 7748): {e:?}"))?;
    for ((k, _, want), r) in engine25519_core::vectors::RFC7748.iter().zip(&got) {
        if r.result != bytes32(want) {
            return Err(format!("batch: RFC 7748 vector k={k}: got {:02x?}", r.result));
        }
    }
    if got.len() != rfc.len() {
        return Err(format!("batch of {} answered {} results", rfc.len(), got.len()));
    }
    for n in 1..=engine25519::api::MAX_BATCH {
        let jobs: Vec<([u8; 32], [u8; 32])> =
            (0..n).map(|i| ([(7 * n + i) as u8 | 1; 32], [(i + 9) as u8; 32])).collect();
        let sync = e.x25519_batch(&jobs).map_err(|e| format!("batch of {n}: {e:?}"))?;
        let asy = e.x25519_batch_async(&jobs).wait().map_err(|e| format!("async batch of {n}: {e:?}"))?;
        for (i, (k, u)) in jobs.iter().enumerate() {
            let want = x25519_dalek::x25519(*k, *u);
            if sync[i].result != want || asy[i].result != want {
                return Err(format!("batch of {n}, job {i}: differs from x25519-dalek"));
            }
        }
    }
    if !e.x25519_batch(&[]).map_err(|e| format!("empty batch: {e:?}"))?.is_empty() {
        return Err("the empty batch returned results".into());
    }
    Ok(())
}
