//! The words of the existing programs are pinned: the gateware vectors, the cycle counts in the
//! docs and the RTL checks were taken with exactly these programs, so a change of their sources
//! (such as moving code into include fragments) must assemble to the same words. A deliberate
//! change of a program updates its entry here (and regenerates what depends on it).

// the content hash the engine service's microcode manager keys programs by
use engine25519::api::content_hash;
use engine25519_core::isa::Isa;
use engine25519_core::programs;

/// (name, isa, words, content hash) of every program as assembled before the X25519 ladder
/// and the inversion's `fin` moved into include fragments.
const PINNED: &[(&str, Isa, usize, u64)] = &[
    ("x25519", Isa::V1, 141, 0xc7e0839a908180a1),
    ("x25519", Isa::V2, 111, 0x870f54e838ece5db),
    ("field_mul", Isa::V1, 2, 0x14741f588b1aa0c6),
    ("field_mul", Isa::V2, 2, 0x14741f588b1aa0c6),
    ("field_add", Isa::V1, 4, 0xa87ce82bd4e544fd),
    ("field_sub", Isa::V1, 5, 0xfda0f39908fd81ab),
    ("field_add", Isa::V2, 2, 0x4767ff5eb11992cc),
    ("field_sub", Isa::V2, 2, 0xedd3e787582ce27f),
];

#[test]
fn existing_programs_keep_their_words() {
    for &(name, isa, len, hash) in PINNED {
        let p = programs::get(name, isa).unwrap_or_else(|| panic!("{name} ({isa}) missing"));
        assert_eq!((p.len(), content_hash(p.words())), (len, hash), "{name} ({isa}): words changed");
    }
}
