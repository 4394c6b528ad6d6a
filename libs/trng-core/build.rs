//! Generates `spec.rs` (constants) from spec/trng.toml, the single source of truth shared with the
//! gateware (Python, tomllib). Nothing in the Rust sources repeats these numbers.
//!
//! The health-test cutoffs of each source in `[health.*]` (a table with `min_entropy` and
//! `apt_window`) are computed here, on the host, with the crate's own f64 functions
//! (src/cutoff.rs, compiled into this script), and written as `RCT_CUTOFF` / `APT_CUTOFF` into
//! that source's module: the device (no FPU) never runs the floating-point code.
use std::fmt::Write as _;

#[allow(dead_code)]
#[path = "src/cutoff.rs"]
mod cutoff;
use std::path::PathBuf;

fn ident(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

fn emit_value(out: &mut String, indent: &str, name: &str, v: &toml::Value) {
    let n = ident(name).to_ascii_uppercase();
    match v {
        toml::Value::Integer(i) => {
            if *i < 0 {
                writeln!(out, "{indent}pub const {n}: i64 = {i};").unwrap();
            } else {
                writeln!(out, "{indent}pub const {n}: usize = {i:#x};").unwrap();
            }
        }
        toml::Value::Float(f) => writeln!(out, "{indent}pub const {n}: f64 = {f:?};").unwrap(),
        toml::Value::Boolean(b) => writeln!(out, "{indent}pub const {n}: bool = {b};").unwrap(),
        toml::Value::String(s) => writeln!(out, "{indent}pub const {n}: &str = {s:?};").unwrap(),
        toml::Value::Table(t) => emit_table(out, indent, name, t),
        other => panic!("spec/trng.toml: unsupported value for {name}: {other:?}"),
    }
}

/// The computed cutoffs of a health source's table (`[health.X]` with `min_entropy` and
/// `apt_window`), at the spec's `health.alpha_log2`.
fn emit_cutoffs(out: &mut String, indent: &str, name: &str, t: &toml::Table, alpha_log2: Option<u32>) {
    let (Some(h), Some(w)) = (t.get("min_entropy"), t.get("apt_window")) else { return };
    let alpha = alpha_log2.unwrap_or_else(|| panic!("spec/trng.toml: [health.{name}] needs health.alpha_log2"));
    let h = h.as_float().unwrap_or_else(|| panic!("spec/trng.toml: health.{name}.min_entropy must be a float"));
    let w = w.as_integer().unwrap_or_else(|| panic!("spec/trng.toml: health.{name}.apt_window must be an integer"));
    assert!(
        h > 0.0 && w > 1 && w <= u32::MAX as i64,
        "spec/trng.toml: health.{name}: bad min_entropy {h} or apt_window {w}"
    );
    let (rct, apt) = (cutoff::rct_cutoff(alpha, h), cutoff::apt_cutoff(alpha, h, w as u32));
    writeln!(out, "{indent}/// RCT cutoff: 1 + ceil(alpha_log2 / min_entropy) (computed by build.rs)").unwrap();
    writeln!(out, "{indent}pub const RCT_CUTOFF: u32 = {rct};").unwrap();
    writeln!(
        out,
        "{indent}/// APT cutoff: 1 + CRITBINOM(apt_window, 2^-min_entropy, 1 - 2^-alpha_log2) (computed by build.rs)"
    )
    .unwrap();
    writeln!(out, "{indent}pub const APT_CUTOFF: u32 = {apt};").unwrap();
}

fn emit_table(out: &mut String, indent: &str, name: &str, t: &toml::Table) {
    emit_table_in(out, indent, name, t, None)
}

fn emit_table_in(out: &mut String, indent: &str, name: &str, t: &toml::Table, parent: Option<&toml::Table>) {
    writeln!(out, "{indent}#[allow(dead_code)]\n{indent}pub mod {} {{", ident(name).to_ascii_lowercase()).unwrap();
    let inner = format!("{indent}    ");
    if name == "registers" {
        writeln!(out, "{inner}#[allow(unused_imports)]\n{inner}use crate::Field;").unwrap();
        for (reg, def) in t {
            let def = def.as_table().expect("register must be a table");
            let off = def["offset"].as_integer().expect("offset");
            let access = def["access"].as_str().expect("access");
            writeln!(out, "{inner}/// access: {access}").unwrap();
            writeln!(out, "{inner}pub const {}: usize = {off:#x};", ident(reg).to_ascii_uppercase()).unwrap();
            writeln!(out, "{inner}pub mod {} {{", ident(reg).to_ascii_lowercase()).unwrap();
            writeln!(out, "{inner}    use crate::Field;").unwrap();
            writeln!(out, "{inner}    pub const OFFSET: usize = {off:#x};").unwrap();
            for (f, lw) in def["fields"].as_table().expect("fields") {
                let a = lw.as_array().expect("[lsb, width]");
                let (lsb, width) = (a[0].as_integer().unwrap(), a[1].as_integer().unwrap());
                assert!(lsb >= 0 && width >= 1 && lsb + width <= 32, "bad field {reg}.{f}");
                writeln!(
                    out,
                    "{inner}    pub const {}: Field = Field::new({lsb}, {width});",
                    ident(f).to_ascii_uppercase()
                )
                .unwrap();
            }
            writeln!(out, "{inner}}}").unwrap();
        }
    } else {
        for (k, v) in t {
            match v {
                // a health source's table sees its parent's alpha_log2
                toml::Value::Table(sub) if name == "health" => emit_table_in(out, &inner, k, sub, Some(t)),
                _ => emit_value(out, &inner, k, v),
            }
        }
        if let Some(p) = parent {
            let alpha = p.get("alpha_log2").and_then(|a| a.as_integer()).map(|a| a as u32);
            emit_cutoffs(out, &inner, name, t, alpha);
        }
    }
    writeln!(out, "{indent}}}").unwrap();
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let spec = manifest.join("../../spec/trng.toml");
    println!("cargo:rerun-if-changed={}", spec.display());
    let text = std::fs::read_to_string(&spec).unwrap_or_else(|e| panic!("read {}: {e}", spec.display()));
    let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("parse {}: {e}", spec.display()));
    let mut out = String::from("// @generated by libs/trng-core/build.rs from spec/trng.toml. Do not edit.\n");
    for (k, v) in &doc {
        emit_value(&mut out, "", k, v);
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("spec.rs");
    std::fs::write(dest, out).unwrap();
}
