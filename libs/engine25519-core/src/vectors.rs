//! Published X25519 test vectors (RFC 7748), written down once for every consumer: the model's
//! tests (tests/x25519.rs) and the gateware vector export (`cargo xtask engine-vectors`).
//! These are the RFC's own numbers, not outputs of our code.

/// RFC 7748 section 5.2 (the two function vectors), then section 6.1 (Alice's and Bob's public
/// keys and the shared secret): (scalar, u, output), hex, little-endian as in the RFC.
pub const RFC7748: &[(&str, &str, &str)] = &[
    // 5.2
    (
        "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
        "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
    ),
    (
        "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
        "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
        "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
    ),
    // 5.2 iterated, one iteration: k = u = 9
    (
        "0900000000000000000000000000000000000000000000000000000000000000",
        "0900000000000000000000000000000000000000000000000000000000000000",
        "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079",
    ),
    // 6.1: Alice's public key, Bob's public key, the shared secret
    (
        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        "0900000000000000000000000000000000000000000000000000000000000000",
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
    ),
    (
        "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
        "0900000000000000000000000000000000000000000000000000000000000000",
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
    ),
    (
        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
        "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
    ),
];

/// RFC 7748 section 5.2 iterated X25519 (k = u = 9 initially): k after 1 and after 1,000
/// iterations (the 1,000,000-iteration value takes minutes and is not used here).
pub const RFC7748_ITERATED_1: &str = "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079";
pub const RFC7748_ITERATED_1000: &str = "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51";

/// 32 bytes from 64 hex digits (a vector's text form); the error names the text.
pub fn parse32(s: &str) -> Result<[u8; 32], String> {
    <[u8; 32] as hex::FromHex>::from_hex(s).map_err(|e| format!("{s:?} is not 64 hex digits ({e})"))
}

/// 32 bytes from the 64 hex digits of a vector above (panics on anything else: the tables are
/// constants). The other direction, bytes to hex, is `hex::encode`.
pub fn bytes32(s: &str) -> [u8; 32] {
    parse32(s).expect("a vector of 64 hex digits")
}
