//! engine25519-core (placeholder, being written)
