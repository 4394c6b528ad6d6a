//! trng-core (placeholder, being written)
