//! Engine25519 tooling commands:
//!
//! - `cargo xtask asm FILE [--isa v1|v2] [--out PATH] [--format hex|bin] [--disasm]`
//! - `cargo xtask gen-docs [--check]`
//! - `cargo xtask engine-vectors --out DIR [--count N] [--seed S]`
//!
//! All of them are thin wrappers around `engine25519_core` (`asm`, `disasm`, `docs`, `formats`).
//!
//! Program file formats (`--format`, default from the extension: `.bin` = bin, anything else =
//! hex) and the vector directory are engine25519_core::formats, documented in
//! docs/engine-formats.md.

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use engine25519_core::asm::{assemble_with, declared_isa, AsmErrorKind};
use engine25519_core::disasm::disassemble;
use engine25519_core::formats::{self, words_to_bin, words_to_hex};
use engine25519_core::isa::Isa;
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

/// Read a program image (format from `--format` or the extension), checking it fits the
/// microcode RAM (engine25519_core::formats).
pub fn read_image(path: &Path, format: Option<ImageFormat>) -> Result<Vec<u32>> {
    let fmt = match format_for(path, format) {
        ImageFormat::Hex => formats::ImageFormat::Hex,
        ImageFormat::Bin => formats::ImageFormat::Bin,
    };
    formats::read_image(path, fmt).map_err(|e| anyhow!(e))
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
    eprintln!("{}: {} words for ISA {} ({} labels)", a.file.display(), p.len(), p.isa, p.labels.len());
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

/// Bench provider `engine`: the native `engine-bench` binary of engine25519-core (cycle counts
/// per ISA, ladder-step cycles, model vs x25519-dalek host time, per-program instruction counts).
pub fn bench_providers() -> Vec<crate::steps::BenchProvider> {
    vec![crate::steps::BenchProvider {
        name: "engine",
        timeout: std::time::Duration::from_secs(600),
        run: bench_engine,
    }]
}

fn bench_engine(_ctx: &crate::ctx::Ctx) -> Result<crate::steps::BenchResults> {
    let mut c = crate::util::cargo();
    c.args(["run", "--quiet", "--release", "-p", "engine25519-core", "--features", "bench", "--bin", "engine-bench"]);
    crate::bench::native_provider(&mut c, std::time::Duration::from_secs(580), "engine-bench")
}

/// Steps for `cargo xtask test` (listed in registry.rs): the generated ISA doc is current, the
/// gateware's Python ISA reader passes its tests, and a vector export re-reads and re-checks.
pub fn test_steps() -> Vec<crate::steps::TestStep> {
    use crate::steps::step;
    use std::time::Duration;
    vec![
        step!("engine:docs-current", 60, |_| cmd_gen_docs(&crate::util::root(), true)),
        step!("engine:gateware-pytest", 5 * 60, |c| {
            let py = crate::setup::venv()?;
            let mut cmd = std::process::Command::new(py);
            cmd.args(["-m", "pytest", "-p", "no:cacheprovider", if c.verbose { "-v" } else { "-q" }, "gateware/tests"])
                .current_dir(crate::util::root());
            crate::supervisor::run(&mut cmd, Duration::from_secs(5 * 60), "pytest gateware/tests")
        }),
        step!("engine:vectors", 10 * 60, |_| {
            let dir = crate::util::target_dir().join("engine-vectors-test");
            let _ = std::fs::remove_dir_all(&dir);
            vectors::export(&dir, 16, 0x25519).map_err(|e| anyhow!(e))?;
            let n = vectors::verify(&dir).map_err(|e| anyhow!(e))?;
            eprintln!("engine:vectors: {n} vectors exported to {} and re-checked", dir.display());
            Ok(())
        }),
    ]
}

/// `cargo xtask engine-vectors`: the gateware vector directory (format and layout:
/// docs/engine-formats.md, code: engine25519_core::formats::export).
pub mod vectors {
    use super::*;
    pub use engine25519_core::formats::export::{export, verify};
    #[cfg(test)]
    pub use engine25519_core::formats::export::{parse_vect, FORMAT};

    pub fn cmd_vectors(v: &VectorsArgs) -> Result<()> {
        let m = export(&v.out, v.count, v.seed).map_err(|e| anyhow!(e))?;
        let n = verify(&v.out).map_err(|e| anyhow!(e))?;
        for p in m["programs"].as_array().unwrap() {
            let c = &p["vectors"][0]["cycles"];
            eprintln!(
                "{:<10} {:<3} {:>4} words {:>3} vectors, {} cycles{}",
                p["name"].as_str().unwrap(),
                p["isa"].as_str().unwrap(),
                p["words"],
                p["vectors"].as_array().unwrap().len(),
                c,
                if p["constant_cycles"] == true { " (constant)" } else { "" }
            );
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
            cmd_asm(&AsmArgs { file: src.clone(), isa: None, out: Some(out.clone()), format: None, disasm: false })
                .unwrap();
            let words = read_image(&out, None).unwrap();
            assert_eq!(words, assemble_file(&src, Some(Isa::V2)).unwrap().words);
            let dis = d.join(format!("p.{ext}.s"));
            cmd_asm(&AsmArgs {
                file: out.clone(),
                isa: Some(Isa::V2),
                out: Some(dis.clone()),
                format: None,
                disasm: true,
            })
            .unwrap();
            assert_eq!(assemble_file(&dis, None).unwrap().words, words, "disassembly reassembles");
        }
        assert_eq!(std::fs::read_to_string(d.join("p.hex")).unwrap().lines().count(), 3);
        assert_eq!(std::fs::read(d.join("p.bin")).unwrap().len(), 12);
        // --format overrides the extension
        let out = d.join("p.img");
        cmd_asm(&AsmArgs {
            file: src.clone(),
            isa: None,
            out: Some(out.clone()),
            format: Some(ImageFormat::Bin),
            disasm: false,
        })
        .unwrap();
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
        std::fs::write(&h, "0000000a\n".repeat(engine25519_core::isa::UCODE_WORDS + 1)).unwrap();
        assert!(read_image(&h, None).unwrap_err().to_string().contains("exceed"));
        // empty and commented images are fine
        std::fs::write(&h, "# nothing\n\n0x0000000A 0000000a // two\n").unwrap();
        assert_eq!(read_image(&h, None).unwrap(), [10, 10]);
        // unwritable output
        std::fs::write(&bad, "fin\n").unwrap();
        let r = cmd_asm(&AsmArgs {
            file: bad.clone(),
            isa: None,
            out: Some(d.join("no/such/dir/o.hex")),
            format: None,
            disasm: false,
        });
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
        assert_eq!(
            p.words,
            assemble_with(".isa v2\nstart: psa %1, #1\nbrz start, #0\nfin\n", Isa::V2, &|_: &str| None).unwrap().words
        );
        let out = d.join("main.hex");
        cmd_asm(&AsmArgs { file: main.clone(), isa: None, out: Some(out.clone()), format: None, disasm: false })
            .unwrap();
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
        assert!(
            e.ends_with(&format!(
                "{}:2:3: unknown mnemonic \"frob\" for ISA v2",
                d.join("src").join("lib/tail.s").display()
            )),
            "{e}"
        );
        // a missing include file: where it is included, what was looked for
        std::fs::remove_file(d.join("src/lib/tail.s")).unwrap();
        let e = assemble_file(&main, None).unwrap_err().to_string();
        let inc = d.join("src").join("lib/inc.s");
        let want = d.join("src").join("lib/tail.s");
        assert!(e.starts_with(&format!("{}:2:10: include file \"lib/tail.s\" not found", inc.display())), "{e}");
        assert!(e.contains(&format!("reading {}", want.display())), "{e}");
        let r = cmd_asm(&AsmArgs {
            file: main.clone(),
            isa: None,
            out: Some(d.join("x.hex")),
            format: None,
            disasm: false,
        });
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
        let total: usize =
            m["programs"].as_array().unwrap().iter().map(|p| p["vectors"].as_array().unwrap().len()).sum();
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
        std::fs::write(
            &man,
            orig.replacen(&format!("\"cycles\": {cycles}"), &format!("\"cycles\": {}", cycles + 1), 1),
        )
        .unwrap();
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
