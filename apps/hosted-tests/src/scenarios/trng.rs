//! TRNG server: hands out words and buffers that are not constant.

use hosted_tests::{Step, StepResult};

pub fn steps() -> Vec<Step> {
    vec![Step { name: "trng/get_u32", run: get_u32 }, Step { name: "trng/fill_buf-4k", run: fill_buf }]
}

fn get_u32() -> StepResult {
    let t = trng::Trng::new().map_err(|e| format!("connect: {e:?}"))?;
    let mut words = Vec::new();
    for _ in 0..64 {
        words.push(t.get_u32().map_err(|e| format!("get_u32: {e:?}"))?);
    }
    words.sort_unstable();
    words.dedup();
    // 64 words from a 32-bit source: a repeat is a ~5e-7 event, a constant source gives 1.
    if words.len() < 63 {
        return Err(format!("only {} distinct words out of 64", words.len()));
    }
    Ok(())
}

fn fill_buf() -> StepResult {
    let mut t = trng::Trng::new().map_err(|e| format!("connect: {e:?}"))?;
    let mut buf = vec![0u8; 4096];
    t.fill_buf(&mut buf).map_err(|e| format!("fill_buf: {e:?}"))?;
    // Every 256-byte block must be non-zero and the blocks distinct (catches untouched tails and
    // repeated blocks).
    let mut blocks: Vec<&[u8]> = buf.chunks(256).collect();
    if blocks.iter().any(|b| b.iter().all(|&x| x == 0)) {
        return Err("a 256-byte block of the 4 KiB buffer is all zero".into());
    }
    blocks.sort();
    blocks.dedup();
    if blocks.len() != 16 {
        return Err("repeated 256-byte blocks in the 4 KiB buffer".into());
    }
    Ok(())
}
