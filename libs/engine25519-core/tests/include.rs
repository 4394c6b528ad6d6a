//! `.include`: resolution through the caller's resolver, labels shared across files, errors
//! attributed to the included file (`file:line:col`), cycles, nesting depth, missing files,
//! duplicate labels across files; and the built-in programs' use of include fragments.

use engine25519_core::asm::{assemble, assemble_with, AsmError, AsmErrorKind, Program, MAX_INCLUDE_DEPTH};
use engine25519_core::isa::{Instr, Isa};
use engine25519_core::programs::{self, FRAGMENTS};

/// A resolver over an in-memory file table.
fn files<'a>(table: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name: &str| table.iter().find(|(n, _)| *n == name).map(|(_, t)| t.to_string())
}

fn asm(src: &str, table: &[(&str, &str)]) -> Result<Program, AsmError> {
    assemble_with(src, Isa::V1, &files(table))
}

fn fails(src: &str, table: &[(&str, &str)]) -> AsmError {
    let e = asm(src, table).expect_err(src);
    // Display: line:col for the main source, file:line:col for an included file
    match &e.file {
        Some(f) => assert_eq!(e.to_string(), format!("{f}:{}:{}: {}", e.line, e.col, e.message)),
        None => assert_eq!(e.to_string(), format!("{}:{}: {}", e.line, e.col, e.message)),
    }
    e
}

#[test]
fn include_inserts_text_and_shares_labels() {
    let table = [
        // branches back to a label of the main source, defines one the main source uses
        ("inc.s", "; fragment\nmid: psa %2, #1\n    brz top, %2\n"),
        ("empty.s", "; nothing here\n\n"),
    ];
    let src = "top: psa %1, #0\nhere: .include \"inc.s\"\n.include \"empty.s\"\n  brz mid, #0\nfin\n";
    let p = asm(src, &table).unwrap();
    assert_eq!(p.len(), 5);
    // a label on the .include line names the first included word
    assert_eq!((p.label("top"), p.label("here"), p.label("mid")), (Some(0), Some(1), Some(1)));
    let back = Instr::decode(p.words[2]);
    assert_eq!(back.imm, -3); // 2 -> 0
    let fwd = Instr::decode(p.words[3]);
    assert_eq!(fwd.imm, -3); // 3 -> 1
    assert_eq!(p.source_lines, [1, 2, 3, 4, 5]);
    let inc = Some("inc.s".to_string());
    assert_eq!(p.source_files, [None, inc.clone(), inc, None, None]);
    // exactly the words of the same text written inline
    let inline = "top: psa %1, #0\nhere:\nmid: psa %2, #1\n    brz top, %2\n  brz mid, #0\nfin\n";
    assert_eq!(assemble(inline, Isa::V1).unwrap().words, p.words);
}

#[test]
fn nested_includes_and_isa_in_fragments() {
    let table =
        [("a.s", ".include \"b.s\"\npsa %1, #1\n"), ("b.s", ".isa v1\npsa %2, #2\n"), ("v2.s", ".isa v2\nfin\n")];
    let p = asm("fin\n.include \"a.s\"\n", &table).unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(p.source_files[1].as_deref(), Some("b.s"));
    assert_eq!(p.source_files[2].as_deref(), Some("a.s"));
    // a fragment may declare its ISA (a check), before its own first instruction
    let e = fails("fin\n.include \"v2.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::IsaMismatch, Some("v2.s"), 1, 6));
    // the same fragment twice is fine when it defines no labels
    assert_eq!(asm(".include \"b.s\"\n.include \"b.s\"\n", &table).unwrap().len(), 2);
}

#[test]
fn errors_in_included_files_name_the_file() {
    let table = [
        ("bad.s", "fin\n  frob %1\n"),
        ("undef.s", "fin\n  brz nowhere, #0\n"),
        ("outer.s", "fin\n.include \"bad.s\"\n"),
        ("long.s", "brz .+3, #0\n"),
    ];
    let e = fails("fin\n.include \"bad.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::UnknownMnemonic, Some("bad.s"), 2, 3));
    assert_eq!(e.to_string(), "bad.s:2:3: unknown mnemonic \"frob\" for ISA v1");
    // errors found while encoding (after every file is read) too
    let e = fails(".include \"undef.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::UndefinedLabel, Some("undef.s"), 2, 7));
    let e = fails(".include \"long.s\"\nfin\n", &table);
    assert_eq!((e.kind, e.file.as_deref()), (AsmErrorKind::TargetOutsideProgram, Some("long.s")));
    // nested: the innermost file
    let e = fails(".include \"outer.s\"\n", &table);
    assert_eq!((e.file.as_deref(), e.line, e.col), (Some("bad.s"), 2, 3));
    // an error in the main source after an include stays in the main source
    let e = fails(".include \"long.s\"\nfin\nfin\nfin\n  frob\n", &table);
    assert_eq!((e.kind, e.file, e.line), (AsmErrorKind::UnknownMnemonic, None, 5));
}

#[test]
fn include_without_resolver_is_a_clear_error() {
    let e = assemble("fin\n  .include \"x.s\"\n", Isa::V2).unwrap_err();
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::Include, None, 2, 3));
    assert!(e.message.contains("no include resolver"), "{e}");
    assert!(e.to_string().starts_with("2:3: "), "{e}");
    // the built-in X25519 sources need the fragment table
    let e = assemble(programs::x25519_v1().source, Isa::V1).unwrap_err();
    assert!(e.message.contains("no include resolver") && e.message.contains("x25519_invert.s"), "{e}");
}

#[test]
fn missing_include_file() {
    let e = fails("fin\n.include \"nope.s\"\n", &[]);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::IncludeNotFound, None, 2, 10));
    assert_eq!(e.to_string(), "2:10: include file \"nope.s\" not found");
    // missing from inside an included file: reported where that file includes it
    let e = fails(".include \"a.s\"\n", &[("a.s", "fin\nfin\n .include \"gone.s\"\n")]);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::IncludeNotFound, Some("a.s"), 3, 11));
}

#[test]
fn malformed_include_directives() {
    let table = [("a.s", "fin\n")];
    for (src, col) in [
        (".include a.s\n", 10),
        (".include \"a.s\n", 10),
        (".include \"\"\n", 10),
        (".include \"a\"b.s\"\n", 10),
        (".include\n", 1),
        (".include \"a.s\", \"a.s\"\n", 1),
    ] {
        let e = fails(src, &table);
        assert_eq!((e.kind, e.line, e.col), (AsmErrorKind::Syntax, 1, col), "{src:?}: {e}");
    }
    // the directive is case-insensitive like the others
    assert_eq!(asm(".INCLUDE \"a.s\"\n", &table).unwrap().len(), 1);
}

#[test]
fn include_cycles_are_detected() {
    let table = [
        ("a.s", "fin\n.include \"b.s\"\n"),
        ("b.s", "fin\n\n  .include \"a.s\"\n"),
        ("self.s", ".include \"self.s\"\n"),
    ];
    let e = fails(".include \"a.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::Include, Some("b.s"), 3, 12));
    assert_eq!(e.message, "include cycle: a.s -> b.s -> a.s");
    let e = fails(".include \"self.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref()), (AsmErrorKind::Include, Some("self.s")));
    assert_eq!(e.message, "include cycle: self.s -> self.s");
}

#[test]
fn include_depth_is_limited() {
    // f0 includes f1 includes f2 ... ; f{limit} is a plain instruction
    let chain = |limit: usize| {
        move |name: &str| {
            let n: usize = name.strip_prefix('f')?.strip_suffix(".s")?.parse().ok()?;
            Some(if n >= limit { "fin\n".to_string() } else { format!("psa %1, #1\n.include \"f{}.s\"\n", n + 1) })
        }
    };
    // the main source is depth 0, f1.s depth 1, ... f{MAX}.s depth MAX: allowed
    let p = assemble_with(".include \"f1.s\"\n", Isa::V1, &chain(MAX_INCLUDE_DEPTH)).unwrap();
    assert_eq!(p.len(), MAX_INCLUDE_DEPTH);
    // one more level is an error (a resolver that never ends must not recurse forever)
    for limit in [MAX_INCLUDE_DEPTH + 1, usize::MAX] {
        let e = assemble_with(".include \"f1.s\"\n", Isa::V1, &chain(limit)).unwrap_err();
        assert_eq!(e.kind, AsmErrorKind::Include, "{e}");
        let last = format!("f{MAX_INCLUDE_DEPTH}.s");
        assert_eq!((e.file.as_deref(), e.line), (Some(last.as_str()), 2), "{e}");
        assert!(e.message.contains("nested deeper than"), "{e}");
    }
}

#[test]
fn duplicate_labels_across_files() {
    let table = [("x.s", "fin\nx: fin\n"), ("y.s", "y: fin\n")];
    // defined in the main source first, again in the included file
    let e = fails("x: fin\n.include \"x.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::DuplicateLabel, Some("x.s"), 2, 1));
    assert_eq!(e.message, "label \"x\" already defined on line 1 of the main source");
    // defined in the included file first, again in the main source
    let e = fails(".include \"x.s\"\n  x: fin\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line, e.col), (AsmErrorKind::DuplicateLabel, None, 2, 3));
    assert_eq!(e.message, "label \"x\" already defined on line 2 of x.s");
    // the same labelled fragment included twice
    let e = fails(".include \"y.s\"\n.include \"y.s\"\n", &table);
    assert_eq!((e.kind, e.file.as_deref(), e.line), (AsmErrorKind::DuplicateLabel, Some("y.s"), 1));
    assert_eq!(e.message, "label \"y\" already defined on line 1");
}

/// The source with every `.include "NAME"` line replaced by the fragment's text (less its `.isa`
/// line: a fragment's own `.isa` is a check, and one file declares its ISA once).
fn inline_fragments(src: &str) -> String {
    let mut out = String::new();
    for line in src.lines() {
        let code = line.split(';').next().unwrap().trim();
        if let Some(rest) = code.strip_prefix(".include") {
            let name = rest.trim().trim_matches('"');
            let text = programs::resolve_fragment(name).unwrap_or_else(|| panic!("no fragment {name}"));
            for l in text.lines().filter(|l| !l.trim_start().starts_with(".isa")) {
                out.push_str(l);
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn x25519_programs_share_the_inversion_fragment() {
    let batch = programs::x25519_batch_program(Isa::V2).unwrap();
    for p in [programs::x25519_program(Isa::V1), programs::x25519_program(Isa::V2)] {
        let isa = p.isa;
        assert!(p.source.contains(".include \"x25519_invert.s\""), "{isa}");
        // the fragment's code is not repeated in the program source
        assert!(!p.source.contains("sq5:"), "{isa}: inversion written out again");
        // include == textual substitution: same words, same labels
        let inline = assemble(&inline_fragments(p.source), isa).unwrap();
        assert_eq!(inline.words, p.program.words, "{isa}");
        assert_eq!(inline.labels, p.program.labels, "{isa}");
        let inv = p.label("sq5").unwrap();
        assert_eq!(p.program.source_files[inv].as_deref(), Some("x25519_invert.s"));
        // the inversion ends without fin: the program's own last word is its fin
        let n = p.len();
        assert_eq!(p.program.source_files[n - 1], None, "{isa} {}", p.file);
        assert!(engine25519_core::disasm::disassemble(&p.words()[n - 1..], isa).trim().ends_with("\n    fin"), "{isa}");
    }
    // the batch program interleaves its jobs' inversions itself (its own code, not the fragment)
    assert!(!batch.source.contains(".include \"x25519_invert.s\""));
    let inline = assemble(&inline_fragments(batch.source), Isa::V2).unwrap();
    assert_eq!((inline.words, inline.labels), (batch.program.words.clone(), batch.program.labels.clone()));
    // each v2 program's ladder is a fragment, written once: x25519_v2.s the shared one, the
    // batch program its own rescheduled one (x25519_v2_ladder_sched.s), which x25519_v2.s does
    // not use (its words stay as they are)
    let single = programs::x25519_program(Isa::V2);
    for (p, frag) in [(single, "x25519_v2_ladder.s"), (batch, "x25519_v2_ladder_sched.s")] {
        assert!(p.source.contains(&format!(".include \"{frag}\"")) && !p.source.contains("ladder_done:"));
        let top = p.label("top").unwrap();
        assert_eq!(p.program.source_files[top].as_deref(), Some(frag), "{}", p.file);
    }
    let from = |p: &programs::MicroProgram, frag: &str| -> Vec<u32> {
        (0..p.len()).filter(|&i| p.program.source_files[i].as_deref() == Some(frag)).map(|i| p.words()[i]).collect()
    };
    // the single program starts with its ladder, the batch program's ladder follows its first
    // word (which sets up the job counter)
    let ladder = from(single, "x25519_v2_ladder.s");
    assert_eq!(single.program.source_files[0].as_deref(), Some("x25519_v2_ladder.s"));
    assert_eq!(&single.words()[..ladder.len()], &ladder[..]);
    assert!(!single.source.contains("x25519_v2_ladder_sched.s"));
    let sched = from(batch, "x25519_v2_ladder_sched.s");
    assert_eq!(&batch.words()[1..1 + sched.len()], &sched[..]);
    assert!(from(batch, "x25519_v2_ladder.s").is_empty());
    assert_ne!(sched, ladder);
}

#[test]
fn every_program_file_is_a_program_or_a_fragment() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("programs");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".s"))
        .collect();
    on_disk.sort();
    let mut known: Vec<String> = programs::all().iter().map(|p| p.file.to_string()).collect();
    known.extend(FRAGMENTS.iter().map(|(n, _)| n.to_string()));
    known.sort();
    known.dedup();
    assert_eq!(on_disk, known);
    // and the fragment table holds the files' current text
    for (name, text) in FRAGMENTS {
        assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), *text, "{name}");
        assert!(programs::all().iter().all(|p| p.file != *name), "{name} is both a program and a fragment");
    }
}
