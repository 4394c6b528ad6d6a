"""The engine on a LiteX SoC (VexRiscv `imac`, litex_sim): the Wishbone adapter of the engine's
bus (engine_wishbone.py), the engine peripheral at the spec's addresses (engine.py) and the
benchmark SoC with its builder (soc.py). docs/gateware.md, section "SoC benchmark"."""
