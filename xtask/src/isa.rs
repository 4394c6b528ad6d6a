//! Engine25519 tooling commands (helper engine-isa):
//!
//! - `cargo xtask asm FILE [--isa v1|v2] [--out PATH] [--format hex|bin] [--disasm]`
//! - `cargo xtask gen-docs [--check]`
//! - `cargo xtask engine-vectors --out DIR [--count N] [--seed S]`
//!
//! All of them are thin wrappers around `engine25519_core` (`asm`, `disasm`, `docs`, `model`).
//!
//! Program file formats (`--format`, default from the extension: `.bin` = bin, anything else = hex):
//! - hex: one 32-bit word per line as 8 hex digits (no prefix), the `$readmemh` layout. The reader
//!   also accepts a `0x` prefix, several words per line, blank lines and `//` or `#` comments.
//! - bin: the words as little-endian u32, i.e. the bytes of the microcode RAM window.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use engine25519_core::asm::{assemble_with, declared_isa, AsmErrorKind};
use engine25519_core::disasm::disassemble;
use engine25519_core::isa::{self, Isa};
use std::path::{Path, PathBuf};

/// The engine commands, flattened into xtask's top-level subcommands.
#[derive(Subcommand, Debug)]
pub enum EngineCmd {
    /// Assemble engine25519 microcode (or, with --disasm, disassemble a program image).
    Asm(AsmArgs),
    /// Regenerate docs/engine-isa.md from spec/engine25519.toml (--check: fail if stale).
    GenDocs {
        #[arg(long)]
        check: bool,
    },
    /// Write gateware test vectors (programs, inputs, expected outputs and cycle counts from the
    /// cycle-exact model) to DIR; see docs/engine-isa.md.
    EngineVectors(VectorsArgs),
}

#[derive(Args, Debug)]
pub struct AsmArgs {
    /// Source file (assembly, `.include "NAME"` read relative to its directory; with --disasm a
    /// .hex or .bin program image).
    pub file: PathBuf,
    /// ISA to assemble for. Default: the source's `.isa` directive, else v1.
    #[arg(long, value_parser = parse_isa)]
    pub isa: Option<Isa>,
    /// Output file. Default: hex words (or the disassembly) on stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Program image format of --out (or of FILE with --disasm). Default: from the extension.
    #[arg(long, value_enum)]
    pub format: Option<ImageFormat>,
    /// Disassemble FILE instead of assembling it.
    #[arg(long)]
    pub disasm: bool,
}

#[derive(Args, Debug)]
pub struct VectorsArgs {
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Random vectors per program (in addition to the fixed ones).
    #[arg(long, default_value_t = 16)]
    pub count: usize,
    /// Seed of the deterministic input generator.
    #[arg(long, default_value_t = 0x25519)]
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ImageFormat {
    Hex,
    Bin,
}

fn parse_isa(s: &str) -> Result<Isa, String> {
    s.parse::<Isa>()
}

/// Run one engine command.
pub fn run(cmd: EngineCmd) -> Result<()> {
    match cmd {
        EngineCmd::Asm(a) => cmd_asm(&a),
        EngineCmd::GenDocs { check } => cmd_gen_docs(&crate::util::root(), check),
        EngineCmd::EngineVectors(v) => vectors::cmd_vectors(&v),
    }
}

fn format_for(path: &Path, explicit: Option<ImageFormat>) -> ImageFormat {
    explicit.unwrap_or(match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("bin") => ImageFormat::Bin,
        _ => ImageFormat::Hex,
    })
}

/// Hex image text: one word per line.
pub fn words_to_hex(words: &[u32]) -> String {
    words.iter().map(|w| format!("{w:08x}\n")).collect()
}

/// Parse a hex image (see the module docs). Errors name the 1-based line.
pub fn hex_to_words(text: &str) -> Result<Vec<u32>> {
    let mut words = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap().split('#').next().unwrap();
        for tok in code.split_whitespace() {
            let digits = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")).unwrap_or(tok);
            let w = (!digits.is_empty() && digits.len() <= 8 && digits.chars().all(|c| c.is_ascii_hexdigit()))
                .then(|| u32::from_str_radix(digits, 16).ok())
                .flatten()
                .ok_or_else(|| anyhow!("line {}: {tok:?} is not a 32-bit hex word", i + 1))?;
            words.push(w);
        }
    }
    Ok(words)
}

/// Little-endian bytes -> words.
pub fn bin_to_words(bytes: &[u8]) -> Result<Vec<u32>> {
    if bytes.len() % 4 != 0 {
        bail!("binary image is {} bytes, not a multiple of 4", bytes.len());
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
}

pub fn words_to_bin(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Read a program image, checking it fits the microcode RAM.
pub fn read_image(path: &Path, format: Option<ImageFormat>) -> Result<Vec<u32>> {
    let words = match format_for(path, format) {
        ImageFormat::Bin => bin_to_words(&std::fs::read(path).with_context(|| format!("reading {}", path.display()))?),
        ImageFormat::Hex => hex_to_words(&std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?),
    }
    .with_context(|| format!("{}", path.display()))?;
    if words.len() > isa::UCODE_WORDS {
        bail!("{}: {} words exceed the microcode RAM ({} words)", path.display(), words.len(), isa::UCODE_WORDS);
    }
    Ok(words)
}

fn write_or_print(out: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match out {
        Some(p) => std::fs::write(p, bytes).with_context(|| format!("writing {}", p.display())),
        None => {
            use std::io::Write;
            std::io::stdout().write_all(bytes)?;
            Ok(())
        }
    }
}

/// Assemble the source file at `path`; errors are `FILE:LINE:COL: message`, where FILE is the
/// included file when the error lies in one. `.include "NAME"` reads NAME relative to the
/// directory of `path` (also for includes inside included files).
pub fn assemble_file(path: &Path, isa: Option<Isa>) -> Result<engine25519_core::asm::Program> {
    let src = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let shown = path.display();
    let isa = match isa {
        Some(i) => i,
        None => declared_isa(&src).map_err(|e| anyhow!("{shown}:{e}"))?.unwrap_or(Isa::V1),
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    // why the last include could not be read (the assembler's resolver only says "not found")
    let failure = std::cell::RefCell::new(String::new());
    let resolve = |name: &str| {
        let file = dir.join(name);
        std::fs::read_to_string(&file)
            .map_err(|e| *failure.borrow_mut() = format!("reading {}: {e}", file.display()))
            .ok()
    };
    assemble_with(&src, isa, &resolve).map_err(|e| {
        let at = match &e.file {
            Some(f) => format!("{}:{}:{}", dir.join(f).display(), e.line, e.col),
            None => format!("{shown}:{}:{}", e.line, e.col),
        };
        match e.kind {
            AsmErrorKind::IncludeNotFound => anyhow!("{at}: {} ({})", e.message, failure.borrow()),
            _ => anyhow!("{at}: {}", e.message),
        }
    })
}

pub fn cmd_asm(a: &AsmArgs) -> Result<()> {
    if a.disasm {
        let words = read_image(&a.file, a.format)?;
        let isa = a.isa.unwrap_or(Isa::V1);
        return write_or_print(a.out.as_deref(), disassemble(&words, isa).as_bytes());
    }
    let p = assemble_file(&a.file, a.isa)?;
    match &a.out {
        Some(out) => {
            let bytes = match format_for(out, a.format) {
                ImageFormat::Bin => words_to_bin(&p.words),
                ImageFormat::Hex => words_to_hex(&p.words).into_bytes(),
            };
            write_or_print(Some(out), &bytes)?;
        }
        None => match a.format {
            Some(ImageFormat::Bin) => write_or_print(None, &words_to_bin(&p.words))?,
            _ => write_or_print(None, words_to_hex(&p.words).as_bytes())?,
        },
    }
    eprintln!(
        "{}: {} words for ISA {} ({} labels)",
        a.file.display(),
        p.len(),
        p.isa,
        p.labels.len()
    );
    Ok(())
}

/// Write (or with `check`, verify) docs/engine-isa.md.
pub fn cmd_gen_docs(root: &Path, check: bool) -> Result<()> {
    let path = root.join(engine25519_core::docs::DOC_PATH);
    let want = engine25519_core::docs::isa_markdown();
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if check {
        if have != want {
            bail!("{} is stale: run `cargo xtask gen-docs`", path.display());
        }
        eprintln!("{} is up to date", path.display());
    } else if have != want {
        std::fs::write(&path, want).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    } else {
        eprintln!("{} already up to date", path.display());
    }
    Ok(())
}

/// Steps for `cargo xtask test` (listed in registry.rs): the generated ISA doc is current, the
/// gateware's Python ISA reader passes its tests, and a vector export re-reads and re-checks.
/// Bench provider `engine`: the native `engine-bench` binary of engine25519-core (cycle counts
/// per ISA, ladder-step cycles, model vs x25519-dalek host time, per-program instruction counts).
pub fn bench_providers() -> Vec<crate::steps::BenchProvider> {
    vec![crate::steps::BenchProvider { name: "engine", timeout: std::time::Duration::from_secs(600), run: bench_engine }]
}

fn bench_engine(_ctx: &crate::ctx::Ctx) -> Result<crate::steps::BenchResults> {
    let mut c = crate::util::cargo();
    c.args(["run", "--quiet", "--release", "-p", "engine25519-core", "--bin", "engine-bench"]);
    crate::bench::native_provider(&mut c, std::time::Duration::from_secs(580), "engine-bench")
}

pub fn test_steps() -> Vec<crate::steps::TestStep> {
    use crate::steps::TestStep;
    use std::time::Duration;
    vec![
        TestStep {
            name: "engine:docs-current",
            timeout: Duration::from_secs(60),
            run: |_| cmd_gen_docs(&crate::util::root(), true),
        },
        TestStep {
            name: "engine:gateware-pytest",
            timeout: Duration::from_secs(5 * 60),
            run: |c| {
                let py = crate::setup::venv()?;
                let mut cmd = std::process::Command::new(py);
                cmd.args(["-m", "pytest", "-p", "no:cacheprovider", if c.verbose { "-v" } else { "-q" }, "gateware/tests"])
                    .current_dir(crate::util::root());
                crate::supervisor::run(&mut cmd, Duration::from_secs(5 * 60), "pytest gateware/tests")
            },
        },
        TestStep {
            name: "engine:vectors",
            timeout: Duration::from_secs(10 * 60),
            run: |_| {
                let dir = crate::util::target_dir().join("engine-vectors-test");
                let _ = std::fs::remove_dir_all(&dir);
                vectors::export(&dir, 16, 0x25519)?;
                let n = vectors::verify(&dir)?;
                eprintln!("engine:vectors: {n} vectors exported to {} and re-checked", dir.display());
                Ok(())
            },
        },
    ]
}

/// Gateware test vectors. Layout of DIR (all multi-byte binary values little-endian):
///
/// - `manifest.json`: `{"format": "engine25519-vectors/1", "spec_version", "seed", "programs": [...]}`;
///   each program: `name`, `isa`, `source` (file under libs/engine25519-core/programs), `words`,
///   `hex`/`bin`/`vect` (file names in DIR), `window`, `mpstart`, `mplen`, `inputs` (register
///   numbers, in argument order), `output` (register), `constant_cycles` (true when every vector
///   takes the same number of cycles) and `vectors`: `[{"kind", "inputs": [hex...], "expected":
///   hex, "cycles", "instructions", "stop_reason"}]`. Register values are 64 hex digits of the
///   32 little-endian bytes (byte 0 first), i.e. the RF window's 8 u32 words LSW first.
/// - `<name>_<isa>.hex` / `.bin`: the program image (see the module docs).
/// - `<name>_<isa>.vect`: the upstream VECT layout: word 0 magic 0x56454354 ("VECT"); word 1
///   `load_addr << 16 | code_len`; word 2 `nargs << 27 | window << 23 | nvectors`; the microcode;
///   zero words up to a multiple of 8 words; then per vector `nargs` x 8 words of arguments
///   (argument i goes to register `inputs[i]` of the manifest) and 8 words of the expected output.
///
/// Expected outputs and cycle counts come from the cycle-exact model; the RFC 7748 X25519 vectors
/// are additionally checked against the RFC's published outputs before anything is written.
pub mod vectors {
    use super::*;
    use engine25519_core::programs::{self, MicroProgram, Runner};
    use serde_json::{json, Value};

    pub const FORMAT: &str = "engine25519-vectors/1";
    pub const VECT_MAGIC: u32 = 0x5645_4354;

    /// RFC 7748 sections 5.2 and 6.1: (scalar, u, output) (one copy, in engine25519-core).
    pub use engine25519_core::vectors::RFC7748;

    pub fn hex32(b: &[u8; 32]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    pub fn unhex32(s: &str) -> Result<[u8; 32]> {
        if s.len() != 64 || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
            bail!("{s:?} is not 64 hex digits");
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)?;
        }
        Ok(out)
    }

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
    fn inputs_for(p: &MicroProgram, rng: &mut SplitMix, count: usize) -> Result<Vec<(&'static str, Vec<[u8; 32]>)>> {
        let mut v: Vec<(&'static str, Vec<[u8; 32]>)> = Vec::new();
        match p.name {
            "x25519" => {
                for (k, u, _) in RFC7748 {
                    v.push(("rfc7748", vec![unhex32(k)?, unhex32(u)?]));
                }
                v.push(("edge", vec![[0xff; 32], small(0)]));
                v.push(("edge", vec![[0x00; 32], small(9)]));
                v.push(("edge", vec![rng.bytes32(), p_minus(0)])); // u = p (non-canonical)
                v.push(("edge", vec![rng.bytes32(), [0xff; 32]])); // bit 255 set
                for _ in 0..count {
                    v.push(("random", vec![rng.bytes32(), rng.bytes32()]));
                }
            }
            "field_add" | "field_sub" => {
                for (a, b) in [(small(0), small(0)), (p_minus(1), small(1)), (small(0), small(1)), (p_minus(1), p_minus(1))] {
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
    pub fn vect_bytes(p: &MicroProgram, window: usize, vectors: &[(Vec<[u8; 32]>, [u8; 32])]) -> Result<Vec<u8>> {
        let nargs = p.inputs.len();
        if nargs >= 32 || window >= 16 || vectors.len() >= 1 << 23 || p.len() >= 1 << 16 {
            bail!("{} ({}): does not fit the VECT header fields", p.name, p.isa);
        }
        let mut w = vec![VECT_MAGIC, p.len() as u32, (nargs as u32) << 27 | (window as u32) << 23 | vectors.len() as u32];
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

    pub fn parse_vect(bytes: &[u8]) -> Result<Vect> {
        let w = bin_to_words(bytes)?;
        if w.len() < 3 || w[0] != VECT_MAGIC {
            bail!("not a VECT file (bad magic or shorter than its header)");
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
            bail!("VECT size mismatch: header implies {need} words, file has {}", w.len());
        }
        if w[code_end..data].iter().any(|&x| x != 0) {
            bail!("VECT padding is not zero");
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

    /// Generate everything and write it to `out`. Returns the manifest.
    pub fn export(out: &Path, count: usize, seed: u64) -> Result<Value> {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
        let mut rng = SplitMix(seed);
        let mut progs = Vec::new();
        for p in programs::all() {
            let mut runner = Runner::new(p);
            let job = runner.job();
            let mut vecs = Vec::new();
            let mut raw = Vec::new();
            for (kind, inputs) in inputs_for(p, &mut rng, count)? {
                let (result, o) = runner
                    .run(&inputs)
                    .map_err(|e| anyhow!("model failed on {} ({}): {e}", p.name, p.isa))?;
                if kind == "rfc7748" {
                    let (_, _, want) = RFC7748.iter().find(|(k, u, _)| unhex32(k).ok() == Some(inputs[0]) && unhex32(u).ok() == Some(inputs[1])).unwrap();
                    if hex32(&result) != *want {
                        bail!("{} ({}): model result {} != RFC 7748 {want}", p.name, p.isa, hex32(&result));
                    }
                }
                runner.engine.clear_window(job.window).map_err(|e| anyhow!("{e}"))?;
                vecs.push(json!({
                    "kind": kind,
                    "inputs": inputs.iter().map(hex32).collect::<Vec<_>>(),
                    "expected": hex32(&result),
                    "cycles": o.cycles,
                    "instructions": o.instructions,
                    "stop_reason": format!("{:?}", o.stop_reason),
                }));
                raw.push((inputs, result));
            }
            let stem = file_stem(p);
            std::fs::write(out.join(format!("{stem}.hex")), words_to_hex(p.words()))?;
            std::fs::write(out.join(format!("{stem}.bin")), words_to_bin(p.words()))?;
            std::fs::write(out.join(format!("{stem}.vect")), vect_bytes(p, job.window, &raw)?)?;
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
        std::fs::write(out.join("manifest.json"), serde_json::to_string_pretty(&manifest)?)?;
        Ok(manifest)
    }

    /// Re-read an exported directory and check every file against the manifest and the model:
    /// images agree with each other and with the assembled source, VECT agrees with the JSON,
    /// and re-running each vector on the model reproduces its output and cycle count.
    pub fn verify(dir: &Path) -> Result<usize> {
        let text = std::fs::read_to_string(dir.join("manifest.json")).context("reading manifest.json")?;
        let m: Value = serde_json::from_str(&text).context("manifest.json")?;
        if m["format"] != FORMAT {
            bail!("manifest format {:?}, expected {FORMAT:?}", m["format"]);
        }
        let progs = m["programs"].as_array().ok_or_else(|| anyhow!("manifest: programs missing"))?;
        let mut checked = 0;
        for pj in progs {
            let name = pj["name"].as_str().ok_or_else(|| anyhow!("program without name"))?;
            let isa: Isa = pj["isa"].as_str().unwrap_or("").parse().map_err(|e: String| anyhow!(e))?;
            let p = programs::get(name, isa).ok_or_else(|| anyhow!("unknown program {name} ({isa})"))?;
            let file = |k: &str| -> Result<PathBuf> { Ok(dir.join(pj[k].as_str().ok_or_else(|| anyhow!("{name}: {k} missing"))?)) };
            let hex = read_image(&file("hex")?, Some(ImageFormat::Hex))?;
            let bin = read_image(&file("bin")?, Some(ImageFormat::Bin))?;
            let vect = parse_vect(&std::fs::read(file("vect")?)?).with_context(|| format!("{name} ({isa}) vect"))?;
            if hex != p.words() || bin != p.words() || vect.code != p.words() {
                bail!("{name} ({isa}): program images disagree with the assembled source");
            }
            let vecs = pj["vectors"].as_array().ok_or_else(|| anyhow!("{name}: vectors missing"))?;
            if vect.vectors.len() != vecs.len() || vect.window as u64 != pj["window"].as_u64().unwrap_or(99) {
                bail!("{name} ({isa}): VECT header disagrees with the manifest");
            }
            let mut runner = Runner::new(p);
            let mut cycles = Vec::new();
            for (v, (vargs, vout)) in vecs.iter().zip(&vect.vectors) {
                let inputs: Vec<[u8; 32]> = v["inputs"]
                    .as_array()
                    .ok_or_else(|| anyhow!("{name}: vector inputs missing"))?
                    .iter()
                    .map(|s| unhex32(s.as_str().unwrap_or("")))
                    .collect::<Result<_>>()?;
                let expected = unhex32(v["expected"].as_str().unwrap_or(""))?;
                let in_words: Vec<[u32; 8]> = inputs.iter().map(words_of).collect();
                if &in_words != vargs || words_of(&expected) != *vout {
                    bail!("{name} ({isa}): VECT vector disagrees with the manifest");
                }
                let (got, o) = runner.run(&inputs).map_err(|e| anyhow!("{name} ({isa}): {e}"))?;
                if got != expected || Some(o.cycles) != v["cycles"].as_u64() {
                    bail!("{name} ({isa}): model gives {} in {} cycles, manifest says {} in {}", hex32(&got), o.cycles, v["expected"], v["cycles"]);
                }
                cycles.push(o.cycles);
                checked += 1;
            }
            if name == "x25519" && cycles.iter().any(|&c| c != cycles[0]) {
                bail!("{name} ({isa}): cycle count depends on the inputs: {cycles:?}");
            }
        }
        Ok(checked)
    }

    pub fn cmd_vectors(v: &VectorsArgs) -> Result<()> {
        let m = export(&v.out, v.count, v.seed)?;
        let n = verify(&v.out)?;
        for p in m["programs"].as_array().unwrap() {
            let c = &p["vectors"][0]["cycles"];
            eprintln!("{:<10} {:<3} {:>4} words {:>3} vectors, {} cycles{}", p["name"].as_str().unwrap(), p["isa"].as_str().unwrap(),
                p["words"], p["vectors"].as_array().unwrap().len(), c, if p["constant_cycles"] == true { " (constant)" } else { "" });
        }
        eprintln!("wrote {} ({n} vectors, re-read and re-checked on the model)", v.out.display());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(subcommand)]
        cmd: EngineCmd,
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-engine-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn parse(args: &[&str]) -> Result<EngineCmd, clap::Error> {
        TestCli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied())).map(|c| c.cmd)
    }

    #[test]
    fn flags_parse_and_reject_bad_values() {
        match parse(&["asm", "f.s", "--isa", "v2", "--out", "o.bin", "--disasm"]).unwrap() {
            EngineCmd::Asm(a) => {
                assert_eq!(a.isa, Some(Isa::V2));
                assert!(a.disasm);
                assert_eq!(a.out.as_deref(), Some(Path::new("o.bin")));
            }
            c => panic!("{c:?}"),
        }
        assert!(parse(&["asm", "f.s", "--isa", "v3"]).is_err());
        assert!(parse(&["asm", "f.s", "--isa"]).is_err());
        assert!(parse(&["asm"]).is_err());
        assert!(parse(&["asm", "f.s", "--format", "elf"]).is_err());
        assert!(parse(&["asm", "f.s", "--bogus"]).is_err());
        assert!(parse(&["engine-vectors"]).is_err());
        assert!(parse(&["engine-vectors", "--out", "d", "--count", "-1"]).is_err());
        assert!(parse(&["engine-vectors", "--out", "d", "--seed", "x"]).is_err());
        assert!(parse(&["gen-docs", "--check"]).is_ok());
    }

    #[test]
    fn asm_to_files_and_back() {
        let d = tmpdir("roundtrip");
        let src = d.join("p.s");
        std::fs::write(&src, ".isa v2\nstart: mul %1, %2, #3\n brz start, %1\n fin\n").unwrap();
        for ext in ["hex", "bin"] {
            let out = d.join(format!("p.{ext}"));
            cmd_asm(&AsmArgs { file: src.clone(), isa: None, out: Some(out.clone()), format: None, disasm: false }).unwrap();
            let words = read_image(&out, None).unwrap();
            assert_eq!(words, assemble_file(&src, Some(Isa::V2)).unwrap().words);
            let dis = d.join(format!("p.{ext}.s"));
            cmd_asm(&AsmArgs { file: out.clone(), isa: Some(Isa::V2), out: Some(dis.clone()), format: None, disasm: true }).unwrap();
            assert_eq!(assemble_file(&dis, None).unwrap().words, words, "disassembly reassembles");
        }
        assert_eq!(std::fs::read_to_string(d.join("p.hex")).unwrap().lines().count(), 3);
        assert_eq!(std::fs::read(d.join("p.bin")).unwrap().len(), 12);
        // --format overrides the extension
        let out = d.join("p.img");
        cmd_asm(&AsmArgs { file: src.clone(), isa: None, out: Some(out.clone()), format: Some(ImageFormat::Bin), disasm: false }).unwrap();
        assert_eq!(std::fs::read(&out).unwrap().len(), 12);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn malformed_inputs_fail_clearly() {
        let d = tmpdir("bad");
        let bad = d.join("bad.s");
        std::fs::write(&bad, "fin\n  frob %1\n").unwrap();
        let e = assemble_file(&bad, None).unwrap_err().to_string();
        assert!(e.ends_with("bad.s:2:3: unknown mnemonic \"frob\" for ISA v1"), "{e}");
        // .isa in the file vs --isa on the command line
        std::fs::write(&bad, ".isa v1\nfin\n").unwrap();
        let e = assemble_file(&bad, Some(Isa::V2)).unwrap_err().to_string();
        assert!(e.contains("bad.s:1:6:") && e.contains("declares .isa v1"), "{e}");
        // missing file
        assert!(assemble_file(&d.join("missing.s"), None).is_err());
        // images: odd length, bad hex, too long
        let b = d.join("x.bin");
        std::fs::write(&b, [1u8, 2, 3, 4, 5]).unwrap();
        assert!(read_image(&b, None).unwrap_err().to_string().contains("x.bin"));
        let h = d.join("x.hex");
        std::fs::write(&h, "0000000a\n// c\nzzzz\n").unwrap();
        let e = format!("{:#}", read_image(&h, None).unwrap_err());
        assert!(e.contains("line 3"), "{e}");
        std::fs::write(&h, "123456789\n").unwrap();
        assert!(read_image(&h, None).is_err());
        std::fs::write(&h, "0000000a\n".repeat(isa::UCODE_WORDS + 1)).unwrap();
        assert!(read_image(&h, None).unwrap_err().to_string().contains("exceed"));
        // empty and commented images are fine
        std::fs::write(&h, "# nothing\n\n0x0000000A 0000000a // two\n").unwrap();
        assert_eq!(read_image(&h, None).unwrap(), [10, 10]);
        // unwritable output
        std::fs::write(&bad, "fin\n").unwrap();
        let r = cmd_asm(&AsmArgs { file: bad.clone(), isa: None, out: Some(d.join("no/such/dir/o.hex")), format: None, disasm: false });
        assert!(r.is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn asm_includes_resolve_relative_to_the_file() {
        let d = tmpdir("include");
        std::fs::create_dir_all(d.join("src/lib")).unwrap();
        let main = d.join("src/main.s");
        std::fs::write(&main, ".isa v2\nstart: psa %1, #1\n.include \"lib/inc.s\"\n").unwrap();
        // nested includes resolve relative to the main file's directory too
        std::fs::write(d.join("src/lib/inc.s"), "brz start, #0\n.include \"lib/tail.s\"\n").unwrap();
        std::fs::write(d.join("src/lib/tail.s"), "fin\n").unwrap();
        let p = assemble_file(&main, None).unwrap();
        assert_eq!(p.isa, Isa::V2);
        assert_eq!(p.words, assemble_with(".isa v2\nstart: psa %1, #1\nbrz start, #0\nfin\n", Isa::V2, &|_: &str| None).unwrap().words);
        let out = d.join("main.hex");
        cmd_asm(&AsmArgs { file: main.clone(), isa: None, out: Some(out.clone()), format: None, disasm: false }).unwrap();
        assert_eq!(read_image(&out, None).unwrap(), p.words);
        // the built-in X25519 sources assemble from their directory to the programs' words
        let programs = crate::util::root().join("libs/engine25519-core/programs");
        for isa in [Isa::V1, Isa::V2] {
            let mp = engine25519_core::programs::x25519_program(isa);
            assert_eq!(assemble_file(&programs.join(mp.file), None).unwrap().words, mp.words(), "{isa}");
        }
        // an error inside an included file names that file (path as resolved)
        std::fs::write(d.join("src/lib/tail.s"), "fin\n  frob %1\n").unwrap();
        let e = assemble_file(&main, None).unwrap_err().to_string();
        assert!(e.ends_with(&format!("{}:2:3: unknown mnemonic \"frob\" for ISA v2", d.join("src").join("lib/tail.s").display())), "{e}");
        // a missing include file: where it is included, what was looked for
        std::fs::remove_file(d.join("src/lib/tail.s")).unwrap();
        let e = assemble_file(&main, None).unwrap_err().to_string();
        let inc = d.join("src").join("lib/inc.s");
        let want = d.join("src").join("lib/tail.s");
        assert!(e.starts_with(&format!("{}:2:10: include file \"lib/tail.s\" not found", inc.display())), "{e}");
        assert!(e.contains(&format!("reading {}", want.display())), "{e}");
        let r = cmd_asm(&AsmArgs { file: main.clone(), isa: None, out: Some(d.join("x.hex")), format: None, disasm: false });
        assert!(r.is_err() && !d.join("x.hex").exists());
        // a cycle through files on disk
        std::fs::write(d.join("src/lib/tail.s"), ".include \"lib/inc.s\"\n").unwrap();
        let e = assemble_file(&main, None).unwrap_err().to_string();
        assert!(e.contains("include cycle: lib/inc.s -> lib/tail.s -> lib/inc.s"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn committed_isa_doc_is_current() {
        cmd_gen_docs(&crate::util::root(), true).unwrap();
    }

    #[test]
    fn vectors_export_reread_and_reject_tampering() {
        let d = tmpdir("vectors");
        let m = vectors::export(&d, 2, 7).unwrap();
        let n = vectors::verify(&d).unwrap();
        let total: usize = m["programs"].as_array().unwrap().iter().map(|p| p["vectors"].as_array().unwrap().len()).sum();
        assert_eq!(n, total);
        for p in m["programs"].as_array().unwrap() {
            if p["name"] == "x25519" {
                assert_eq!(p["constant_cycles"], true, "{}", p["isa"]);
            }
        }
        // tamper: expected output, cycle count, VECT body, images, manifest format
        let man = d.join("manifest.json");
        let orig = std::fs::read_to_string(&man).unwrap();
        let first_expected = m["programs"][0]["vectors"][0]["expected"].as_str().unwrap().to_string();
        let mut flipped = first_expected.clone();
        flipped.replace_range(0..1, if &first_expected[0..1] == "0" { "1" } else { "0" });
        std::fs::write(&man, orig.replacen(&first_expected, &flipped, 1)).unwrap();
        assert!(vectors::verify(&d).is_err());
        let cycles = m["programs"][0]["vectors"][0]["cycles"].as_u64().unwrap();
        std::fs::write(&man, orig.replacen(&format!("\"cycles\": {cycles}"), &format!("\"cycles\": {}", cycles + 1), 1)).unwrap();
        assert!(vectors::verify(&d).is_err());
        std::fs::write(&man, orig.replacen(vectors::FORMAT, "engine25519-vectors/0", 1)).unwrap();
        assert!(vectors::verify(&d).is_err());
        std::fs::write(&man, "{ not json").unwrap();
        assert!(vectors::verify(&d).is_err());
        std::fs::write(&man, &orig).unwrap();
        let vect = d.join(m["programs"][0]["vect"].as_str().unwrap());
        let good = std::fs::read(&vect).unwrap();
        let mut bad = good.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        std::fs::write(&vect, &bad).unwrap();
        assert!(vectors::verify(&d).is_err());
        std::fs::write(&vect, &good[..good.len() - 4]).unwrap();
        assert!(vectors::verify(&d).is_err());
        assert!(vectors::parse_vect(&[0, 0, 0, 0]).is_err());
        assert!(vectors::parse_vect(&good[..6]).is_err());
        std::fs::write(&vect, &good).unwrap();
        let hex = d.join(m["programs"][0]["hex"].as_str().unwrap());
        let h = std::fs::read_to_string(&hex).unwrap();
        std::fs::write(&hex, h.replacen('0', "1", 1)).unwrap();
        assert!(vectors::verify(&d).is_err());
        std::fs::write(&hex, &h).unwrap();
        assert_eq!(vectors::verify(&d).unwrap(), n);
        // VECT parse agrees with the source program
        let v = vectors::parse_vect(&good).unwrap();
        assert_eq!(v.vectors.len(), m["programs"][0]["vectors"].as_array().unwrap().len());
        let _ = std::fs::remove_dir_all(&d);
    }
}
