"""The engine25519 gateware (docs/gateware.md): one Migen module per file, every table from
spec/engine25519.toml through gateware/engine_isa.py."""
