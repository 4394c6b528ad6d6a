//! Gateware-facing file formats (docs/engine-formats.md), one implementation for every consumer
//! (xtask's CLI, the gateware tests through the exported files):
//!
//! - program images: hex (one 32-bit word per line as 8 hex digits, the `$readmemh` layout; the
//!   reader also accepts a `0x` prefix, several words per line, blank lines and `//` or `#`
//!   comments) and bin (the words as little-endian u32, the bytes of the microcode RAM window);
//! - [`export`] (feature `export`): the vector directory (`manifest.json`, images, `.vect` files)
//!   written from the cycle-exact model, and its re-check.
//!
//! Errors are `String`s naming the file, line or field.

use std::path::Path;

use crate::isa;

/// Result of this module: errors are human-readable strings.
pub type Res<T> = Result<T, String>;

/// Program image formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Hex,
    Bin,
}

/// Adds context to errors.
#[allow(dead_code)] // `ctx` is used by the `export` feature only
trait Ctx<T> {
    fn ctx(self, what: &str) -> Res<T>;
    fn with_ctx(self, what: impl FnOnce() -> String) -> Res<T>;
}

impl<T, E: std::fmt::Display> Ctx<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Res<T> {
        self.map_err(|e| format!("{what}: {e}"))
    }
    fn with_ctx(self, what: impl FnOnce() -> String) -> Res<T> {
        self.map_err(|e| format!("{}: {e}", what()))
    }
}

/// Hex image text: one word per line.
pub fn words_to_hex(words: &[u32]) -> String {
    words.iter().map(|w| format!("{w:08x}\n")).collect()
}

/// Parse a hex image (see the module docs). Errors name the 1-based line.
pub fn hex_to_words(text: &str) -> Res<Vec<u32>> {
    let mut words = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap().split('#').next().unwrap();
        for tok in code.split_whitespace() {
            let digits = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")).unwrap_or(tok);
            let w = (!digits.is_empty() && digits.len() <= 8 && digits.chars().all(|c| c.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(digits, 16).ok())
                .flatten()
                .ok_or_else(|| format!("line {}: {tok:?} is not a 32-bit hex word", i + 1))?;
            words.push(w);
        }
    }
    Ok(words)
}

/// Little-endian bytes -> words.
pub fn bin_to_words(bytes: &[u8]) -> Res<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(format!("binary image is {} bytes, not a multiple of 4", bytes.len()));
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
}

pub fn words_to_bin(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Read a program image, checking it fits the microcode RAM.
pub fn read_image(path: &Path, format: ImageFormat) -> Res<Vec<u32>> {
    let words = match format {
        ImageFormat::Bin => bin_to_words(&std::fs::read(path).with_ctx(|| format!("reading {}", path.display()))?),
        ImageFormat::Hex => {
            hex_to_words(&std::fs::read_to_string(path).with_ctx(|| format!("reading {}", path.display()))?)
        }
    }
    .with_ctx(|| format!("{}", path.display()))?;
    if words.len() > isa::UCODE_WORDS {
        return Err(format!(
            "{}: {} words exceed the microcode RAM ({} words)",
            path.display(),
            words.len(),
            isa::UCODE_WORDS
        ));
    }
    Ok(words)
}

/// The gateware vector directory: layout in docs/engine-formats.md. Expected outputs and cycle
/// counts come from the cycle-exact model; the RFC 7748 X25519 vectors are also checked against
/// the RFC's published outputs before anything is written.
#[cfg(feature = "export")]
pub mod export {
    use super::*;
    use crate::isa::{self, Isa};
    use crate::programs::{self, MicroProgram, Runner};
    use serde_json::{json, Value};
    use std::path::PathBuf;

    pub const FORMAT: &str = "engine25519-vectors/1";
    pub const VECT_MAGIC: u32 = 0x5645_4354;

    /// RFC 7748 sections 5.2 and 6.1: (scalar, u, output) (one copy, in engine25519-core).
    pub use crate::vectors::RFC7748;

    use crate::vectors::parse32;

    fn words_of(b: &[u8; 32]) -> [u32; 8] {
        std::array::from_fn(|i| u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap()))
    }

    /// SplitMix64: deterministic inputs from `--seed`.
    struct SplitMix(u64);
    impl SplitMix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn bytes32(&mut self) -> [u8; 32] {
            let mut b = [0u8; 32];
            for c in b.chunks_mut(8) {
                c.copy_from_slice(&self.next().to_le_bytes());
            }
            b
        }
        /// Uniform-ish element of [0, p).
        fn field(&mut self) -> [u8; 32] {
            loop {
                let mut b = self.bytes32();
                b[31] &= 0x7f;
                if !(b[0] >= 0xed && b[1..31].iter().all(|&x| x == 0xff) && b[31] == 0x7f) {
                    return b;
                }
            }
        }
    }

    fn p_minus(k: u8) -> [u8; 32] {
        let mut b = [0xffu8; 32];
        b[31] = 0x7f;
        b[0] = 0xed - k;
        b
    }

    fn small(v: u8) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0] = v;
        b
    }

    /// Fixed and random inputs for one program, with a tag per vector.
    fn inputs_for(p: &MicroProgram, rng: &mut SplitMix, count: usize) -> Res<Vec<(&'static str, Vec<[u8; 32]>)>> {
        let mut v: Vec<(&'static str, Vec<[u8; 32]>)> = Vec::new();
        match p.name {
            "x25519" => {
                for (k, u, _) in RFC7748 {
                    v.push(("rfc7748", vec![parse32(k)?, parse32(u)?]));
                }
                v.push(("edge", vec![[0xff; 32], small(0)]));
                v.push(("edge", vec![[0x00; 32], small(9)]));
                v.push(("edge", vec![rng.bytes32(), p_minus(0)])); // u = p (non-canonical)
                v.push(("edge", vec![rng.bytes32(), [0xff; 32]])); // bit 255 set
                for _ in 0..count {
                    v.push(("random", vec![rng.bytes32(), rng.bytes32()]));
                }
            }
            "x25519_batch" => {
                // runs of N = 1..=3 jobs: RFC 7748 vectors (N consecutive ones), then random
                // runs of N = 1, 2, 3, 1, ...
                let rfc: Vec<([u8; 32], [u8; 32])> =
                    RFC7748.iter().map(|(k, u, _)| Ok((parse32(k)?, parse32(u)?))).collect::<Res<_>>()?;
                let batch =
                    |jobs: &[([u8; 32], [u8; 32])]| programs::x25519_batch_inputs(jobs).map_err(|e| e.to_string());
                for n in 1..=programs::X25519_BATCH_MAX {
                    let jobs: Vec<_> = (0..n).map(|j| rfc[(n - 1 + j) % rfc.len()]).collect();
                    v.push(("rfc7748", batch(&jobs)?));
                }
                for i in 0..count {
                    let jobs: Vec<_> =
                        (0..1 + i % programs::X25519_BATCH_MAX).map(|_| (rng.bytes32(), rng.bytes32())).collect();
                    v.push(("random", batch(&jobs)?));
                }
            }
            "field_add" | "field_sub" => {
                for (a, b) in
                    [(small(0), small(0)), (p_minus(1), small(1)), (small(0), small(1)), (p_minus(1), p_minus(1))]
                {
                    v.push(("edge", vec![a, b]));
                }
                for _ in 0..count {
                    v.push(("random", (0..p.inputs.len()).map(|_| rng.field()).collect()));
                }
            }
            _ => {
                for e in [small(0), small(1), p_minus(1), p_minus(0), [0xff; 32]] {
                    v.push(("edge", vec![e; p.inputs.len()]));
                }
                for _ in 0..count {
                    v.push(("random", (0..p.inputs.len()).map(|_| rng.bytes32()).collect()));
                }
            }
        }
        Ok(v)
    }

    /// VECT file bytes.
    pub fn vect_bytes(p: &MicroProgram, window: usize, vectors: &[(Vec<[u8; 32]>, [u8; 32])]) -> Res<Vec<u8>> {
        let nargs = p.inputs.len();
        if nargs >= 32 || window >= 16 || vectors.len() >= 1 << 23 || p.len() >= 1 << 16 {
            return Err(format!("{} ({}): does not fit the VECT header fields", p.name, p.isa));
        }
        let mut w =
            vec![VECT_MAGIC, p.len() as u32, (nargs as u32) << 27 | (window as u32) << 23 | vectors.len() as u32];
        w.extend_from_slice(p.words());
        while w.len() % 8 != 0 {
            w.push(0);
        }
        for (args, out) in vectors {
            for a in args {
                w.extend_from_slice(&words_of(a));
            }
            w.extend_from_slice(&words_of(out));
        }
        Ok(words_to_bin(&w))
    }

    /// Parsed VECT file.
    #[derive(Debug, PartialEq, Eq)]
    pub struct Vect {
        pub load_addr: u32,
        pub window: u32,
        pub code: Vec<u32>,
        /// (arguments, expected output), each 8 words LSW first.
        pub vectors: Vec<(Vec<[u32; 8]>, [u32; 8])>,
    }

    pub fn parse_vect(bytes: &[u8]) -> Res<Vect> {
        let w = bin_to_words(bytes)?;
        if w.len() < 3 || w[0] != VECT_MAGIC {
            return Err(format!("not a VECT file (bad magic or shorter than its header)"));
        }
        let code_len = (w[1] & 0xffff) as usize;
        let load_addr = w[1] >> 16;
        let nargs = (w[2] >> 27) as usize;
        let window = (w[2] >> 23) & 0xf;
        let nvec = (w[2] & 0x7f_ffff) as usize;
        let code_end = 3 + code_len;
        let data = code_end.div_ceil(8) * 8;
        let need = data + nvec * (nargs + 1) * 8;
        if code_len > isa::UCODE_WORDS || w.len() != need {
            return Err(format!("VECT size mismatch: header implies {need} words, file has {}", w.len()));
        }
        if w[code_end..data].iter().any(|&x| x != 0) {
            return Err(format!("VECT padding is not zero"));
        }
        let reg = |i: usize| -> [u32; 8] { w[i..i + 8].try_into().unwrap() };
        let mut vectors = Vec::new();
        let mut at = data;
        for _ in 0..nvec {
            let args = (0..nargs).map(|k| reg(at + 8 * k)).collect();
            at += 8 * nargs;
            vectors.push((args, reg(at)));
            at += 8;
        }
        Ok(Vect { load_addr, window, code: w[3..code_end].to_vec(), vectors })
    }

    fn file_stem(p: &MicroProgram) -> String {
        format!("{}_{}", p.name, p.isa)
    }

    /// The X25519 jobs of a vector and their results: (scalar, u) -> output for `x25519`, each
    /// job of a run of `x25519_batch` (read from the result registers of its ring), none for
    /// other programs.
    #[allow(clippy::type_complexity)]
    fn job_results(
        p: &MicroProgram,
        runner: &Runner,
        inputs: &[[u8; 32]],
        result: [u8; 32],
    ) -> Res<(Vec<([u8; 32], [u8; 32])>, Vec<[u8; 32]>)> {
        match p.name {
            "x25519" => Ok((vec![(inputs[0], inputs[1])], vec![result])),
            "x25519_batch" => {
                let n = batch_jobs(inputs)?;
                let mut jobs = Vec::new();
                let mut results = Vec::new();
                for j in 0..n {
                    jobs.push((inputs[2 * j], inputs[2 * j + 1]));
                    let reg = programs::x25519_batch_result_reg(n, j).map_err(|e| e.to_string())?;
                    results.push(runner.engine.reg(runner.window, reg).map_err(|e| format!("{e}"))?);
                }
                Ok((jobs, results))
            }
            _ => Ok((Vec::new(), Vec::new())),
        }
    }

    /// Jobs in a batch program vector (its counter input + 1).
    fn batch_jobs(inputs: &[[u8; 32]]) -> Res<usize> {
        let c = inputs.last().ok_or("batch vector without inputs")?;
        if c[1..].iter().any(|&b| b != 0) || c[0] as usize >= programs::X25519_BATCH_MAX {
            return Err(format!("batch vector counter {} is not 0..{}", hex::encode(c), programs::X25519_BATCH_MAX));
        }
        Ok(c[0] as usize + 1)
    }

    /// A batch program vector's `outputs`: `[[register, hex]]`, every job's result in job order
    /// (the VECT file's single output is `output`, the last job's). None for other programs.
    fn batch_outputs(p: &MicroProgram, runner: &Runner, inputs: &[[u8; 32]]) -> Res<Option<Value>> {
        if p.name != "x25519_batch" {
            return Ok(None);
        }
        let n = batch_jobs(inputs)?;
        let mut outs = Vec::new();
        for j in 0..n {
            let reg = programs::x25519_batch_result_reg(n, j).map_err(|e| e.to_string())?;
            outs.push(json!([reg, hex::encode(runner.engine.reg(runner.window, reg).map_err(|e| format!("{e}"))?)]));
        }
        Ok(Some(Value::Array(outs)))
    }

    /// Generate everything and write it to `out`. Returns the manifest.
    pub fn export(out: &Path, count: usize, seed: u64) -> Res<Value> {
        std::fs::create_dir_all(out).with_ctx(|| format!("creating {}", out.display()))?;
        let mut rng = SplitMix(seed);
        let mut progs = Vec::new();
        for p in programs::all() {
            let mut runner = Runner::new(p);
            let job = runner.job();
            let mut vecs = Vec::new();
            let mut raw = Vec::new();
            for (kind, inputs) in inputs_for(p, &mut rng, count)? {
                let (result, o) =
                    runner.run(&inputs).map_err(|e| format!("model failed on {} ({}): {e}", p.name, p.isa))?;
                // every job's (scalar, u) and result: the batch program's results sit in its ring
                let (jobs, results) = job_results(p, &runner, &inputs, result)?;
                if kind == "rfc7748" {
                    for ((k, u), got) in jobs.iter().zip(&results) {
                        let (_, _, want) = RFC7748
                            .iter()
                            .find(|(rk, ru, _)| parse32(rk).ok() == Some(*k) && parse32(ru).ok() == Some(*u))
                            .ok_or_else(|| format!("{} ({}): not an RFC 7748 vector", p.name, p.isa))?;
                        if hex::encode(got) != *want {
                            return Err(format!(
                                "{} ({}): model result {} != RFC 7748 {want}",
                                p.name,
                                p.isa,
                                hex::encode(got)
                            ));
                        }
                    }
                }
                let outputs = batch_outputs(p, &runner, &inputs)?;
                runner.engine.clear_window(job.window).map_err(|e| format!("{e}"))?;
                vecs.push(json!({
                    "kind": kind,
                    "inputs": inputs.iter().map(hex::encode).collect::<Vec<_>>(),
                    "expected": hex::encode(&result),
                    "cycles": o.cycles,
                    "instructions": o.instructions,
                    "stop_reason": format!("{:?}", o.stop_reason),
                }));
                if let Some(outs) = outputs {
                    vecs.last_mut().unwrap()["outputs"] = outs;
                }
                raw.push((inputs, result));
            }
            let stem = file_stem(p);
            std::fs::write(out.join(format!("{stem}.hex")), words_to_hex(p.words())).ctx(&stem)?;
            std::fs::write(out.join(format!("{stem}.bin")), words_to_bin(p.words())).ctx(&stem)?;
            std::fs::write(out.join(format!("{stem}.vect")), vect_bytes(p, job.window, &raw)?).ctx(&stem)?;
            let cycles: Vec<u64> = vecs.iter().map(|v| v["cycles"].as_u64().unwrap()).collect();
            progs.push(json!({
                "name": p.name,
                "isa": p.isa.name(),
                "source": p.file,
                "words": p.len(),
                "hex": format!("{stem}.hex"),
                "bin": format!("{stem}.bin"),
                "vect": format!("{stem}.vect"),
                "window": job.window,
                "mpstart": job.mpstart,
                "mplen": job.mplen,
                "inputs": p.inputs,
                "output": p.output,
                "constant_cycles": cycles.iter().all(|&c| c == cycles[0]),
                "vectors": vecs,
            }));
        }
        let manifest = json!({
            "format": FORMAT,
            "spec_version": isa::SPEC_VERSION,
            "seed": seed,
            "register_encoding": "64 hex digits = 32 little-endian bytes (RF layout: 8 u32 words, LSW first)",
            "programs": progs,
        });
        std::fs::write(out.join("manifest.json"), serde_json::to_string_pretty(&manifest).ctx("manifest")?)
            .ctx("manifest.json")?;
        Ok(manifest)
    }

    /// Re-read an exported directory and check every file against the manifest and the model:
    /// images agree with each other and with the assembled source, VECT agrees with the JSON,
    /// and re-running each vector on the model reproduces its output and cycle count.
    pub fn verify(dir: &Path) -> Res<usize> {
        let text = std::fs::read_to_string(dir.join("manifest.json")).ctx("reading manifest.json")?;
        let m: Value = serde_json::from_str(&text).ctx("manifest.json")?;
        if m["format"] != FORMAT {
            return Err(format!("manifest format {:?}, expected {FORMAT:?}", m["format"]));
        }
        let progs = m["programs"].as_array().ok_or_else(|| format!("manifest: programs missing"))?;
        let mut checked = 0;
        for pj in progs {
            let name = pj["name"].as_str().ok_or_else(|| format!("program without name"))?;
            let isa: Isa = pj["isa"].as_str().unwrap_or("").parse()?;
            let p = programs::get(name, isa).ok_or_else(|| format!("unknown program {name} ({isa})"))?;
            let file = |k: &str| -> Res<PathBuf> {
                Ok(dir.join(pj[k].as_str().ok_or_else(|| format!("{name}: {k} missing"))?))
            };
            let hex = read_image(&file("hex")?, ImageFormat::Hex)?;
            let bin = read_image(&file("bin")?, ImageFormat::Bin)?;
            let vect = parse_vect(&std::fs::read(file("vect")?).ctx("reading the .vect file")?)
                .with_ctx(|| format!("{name} ({isa}) vect"))?;
            if hex != p.words() || bin != p.words() || vect.code != p.words() {
                return Err(format!("{name} ({isa}): program images disagree with the assembled source"));
            }
            let vecs = pj["vectors"].as_array().ok_or_else(|| format!("{name}: vectors missing"))?;
            if vect.vectors.len() != vecs.len() || vect.window as u64 != pj["window"].as_u64().unwrap_or(99) {
                return Err(format!("{name} ({isa}): VECT header disagrees with the manifest"));
            }
            let mut runner = Runner::new(p);
            let mut cycles = Vec::new();
            for (v, (vargs, vout)) in vecs.iter().zip(&vect.vectors) {
                let inputs: Vec<[u8; 32]> = v["inputs"]
                    .as_array()
                    .ok_or_else(|| format!("{name}: vector inputs missing"))?
                    .iter()
                    .map(|s| parse32(s.as_str().unwrap_or("")))
                    .collect::<Res<_>>()?;
                let expected = parse32(v["expected"].as_str().unwrap_or(""))?;
                let in_words: Vec<[u32; 8]> = inputs.iter().map(words_of).collect();
                if &in_words != vargs || words_of(&expected) != *vout {
                    return Err(format!("{name} ({isa}): VECT vector disagrees with the manifest"));
                }
                let (got, o) = runner.run(&inputs).map_err(|e| format!("{name} ({isa}): {e}"))?;
                if batch_outputs(p, &runner, &inputs)? != v.get("outputs").cloned() {
                    return Err(format!(
                        "{name} ({isa}): the model's job results disagree with the manifest's outputs"
                    ));
                }
                runner.engine.clear_window(runner.window).map_err(|e| format!("{e}"))?;
                if got != expected || Some(o.cycles) != v["cycles"].as_u64() {
                    return Err(format!(
                        "{name} ({isa}): model gives {} in {} cycles, manifest says {} in {}",
                        hex::encode(&got),
                        o.cycles,
                        v["expected"],
                        v["cycles"]
                    ));
                }
                cycles.push(o.cycles);
                checked += 1;
            }
            if name == "x25519" && cycles.iter().any(|&c| c != cycles[0]) {
                return Err(format!("{name} ({isa}): cycle count depends on the inputs: {cycles:?}"));
            }
        }
        Ok(checked)
    }
}
