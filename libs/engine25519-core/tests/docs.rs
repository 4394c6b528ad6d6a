//! Fails when the committed docs/engine-isa.md is not what the generator produces from the spec.
//! Regenerate with `cargo xtask gen-docs` or `ENGINE_ISA_UPDATE_DOCS=1 cargo test -p engine25519-core --test docs`.

use std::path::PathBuf;

#[test]
fn committed_isa_doc_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(engine25519_core::docs::DOC_PATH);
    let want = engine25519_core::docs::isa_markdown();
    if std::env::var_os("ENGINE_ISA_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale: run `cargo xtask gen-docs` (or ENGINE_ISA_UPDATE_DOCS=1 cargo test -p engine25519-core --test docs)",
        path.display()
    );
}
