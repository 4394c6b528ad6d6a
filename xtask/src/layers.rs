//! The layers of xtask and the test that keeps them: every module refers (`crate::...`,
//! `super::...`) only to modules of its own layer or below, and no modules refer to each other
//! in a cycle. Layers, top to bottom (docs/hosted.md):
//!
//! 1. main.rs (the CLI), registry.rs, runner.rs;
//! 2. areas/ (the steps, one folder per step prefix);
//! 3. steps.rs, ctx.rs, system.rs, bench.rs (step types, shared builds, our hosted system);
//! 4. harness/ (hosted launcher, simulation driver, simulated Precursor and profiler, SoC runner);
//! 5. build/ (kernels, services, device builds, image, boot files, gateware tools);
//! 6. util.rs, supervisor.rs, setup.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layer of a module path (`areas::sim::layout`), 1 = top.
fn layer(module: &str) -> Option<u8> {
    let top = module.split("::").next().unwrap_or("");
    Some(match top {
        "" | "registry" | "runner" => 1,
        "areas" => 2,
        "steps" | "ctx" | "system" | "bench" => 3,
        "harness" => 4,
        "build" => 5,
        "util" | "supervisor" | "setup" => 6,
        // this file: tests only
        "layers" => 1,
        _ => return None,
    })
}

/// Every module of xtask/src: module path -> source.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, src, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(src).unwrap().with_extension("");
                let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
                if matches!(parts.last().map(String::as_str), Some("main" | "mod")) {
                    parts.pop();
                }
                out.insert(parts.join("::"), std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The code of `text` without comments and string literals (good enough for Rust paths).
fn code_only(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        for (i, c) in line.char_indices() {
            if !in_str && c == '/' && line[i..].starts_with("//") {
                break;
            }
            if c == '"' && prev != '\\' && prev != '\'' {
                in_str = !in_str;
            } else if !in_str {
                kept.push(c);
            }
            prev = c;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// The module paths `text` (the module `me`) refers to, resolved to the longest known module.
fn references(me: &str, text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let resolve = |path: &str| -> Option<String> {
        let parts: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        (0..=parts.len()).rev().map(|n| parts[..n].join("::")).find(|m| known.contains(m))
    };
    let mut paths = Vec::new();
    let code = code_only(text);
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (kw, base) in
        [("crate::", String::new()), ("super::", me.rsplit_once("::").map(|x| x.0.to_string()).unwrap_or_default())]
    {
        let mut rest = code.as_str();
        while let Some(i) = rest.find(kw) {
            let before = rest[..i].chars().last();
            rest = &rest[i + kw.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let join = |p: &str| if base.is_empty() { p.to_string() } else { format!("{base}::{p}") };
            if let Some(group) = rest.strip_prefix('{') {
                // use crate::{a, b::c};
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let item = item.split(" as ").next().unwrap().trim();
                    if !item.is_empty() && item != "self" {
                        paths.push(join(item));
                    }
                }
                continue;
            }
            let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            let mut p = rest[..end].trim_end_matches(':').to_string();
            // crate::a::b::{c, d}: the group's head is a module path too
            if p.ends_with("::") {
                p.truncate(p.len() - 2);
            }
            if p.is_empty() {
                // `super::*` (a test module's glob of its own file)
                continue;
            }
            paths.push(join(&p));
        }
    }
    paths.iter().filter_map(|p| resolve(p)).filter(|m| m != me).collect()
}

#[test]
fn modules_refer_only_downwards_and_never_in_a_cycle() {
    let src = crate::util::root().join("xtask").join("src");
    let mods = modules(&src);
    let known: BTreeSet<String> = mods.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> =
        mods.iter().map(|(m, t)| (m.clone(), references(m, t, &known))).collect();
    let mut wrong = Vec::new();
    for (m, refs) in &graph {
        let Some(lm) = layer(m) else {
            wrong.push(format!("module {m} is in no layer (add it to layers.rs)"));
            continue;
        };
        for r in refs {
            if layer(r).is_some_and(|lr| lr < lm) {
                wrong.push(format!("{m} (layer {lm}) refers upwards to {r} (layer {})", layer(r).unwrap()));
            }
        }
    }
    // cycles: a module that reaches itself
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> =
            graph[start].iter().map(|n| (n.clone(), vec![start.clone(), n.clone()])).collect();
        while let Some((n, path)) = stack.pop() {
            if &n == start {
                wrong.push(format!("import cycle: {}", path.join(" -> ")));
                break;
            }
            if seen.insert(n.clone()) {
                for next in graph.get(&n).into_iter().flatten() {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // the test sees the references it must see
    assert!(graph["areas::sim::selftest"].contains("harness::precursor"), "{:?}", graph["areas::sim::selftest"]);
    assert!(graph["system"].contains("harness::hosted") && graph["areas::trng::ci"].contains("areas::trng::types"));
}

#[test]
fn a_cycle_and_an_upward_reference_are_seen() {
    let known: BTreeSet<String> = ["build::a", "build::b", "ctx"].iter().map(|s| s.to_string()).collect();
    let a = references(
        "build::a",
        "use crate::build::b::Thing;\nuse crate::{ctx::Ctx, util};\n// crate::nothing\nlet s = \"crate::ctx\";",
        &known,
    );
    assert_eq!(a, ["build::b", "ctx"].iter().map(|s| s.to_string()).collect());
    let b = references("build::b", "use super::a::f; use super::*;", &known);
    assert_eq!(b, ["build::a"].iter().map(|s| s.to_string()).collect());
    assert!(layer("ctx").unwrap() < layer("build::a").unwrap(), "ctx is above build");
}
