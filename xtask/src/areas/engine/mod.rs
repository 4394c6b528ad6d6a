//! Steps `engine:*` (engine25519: the ISA tools, the RTL on Verilator, the SoC benchmark) and
//! the commands `asm`, `gen-docs`, `engine-vectors`, `engine-run` and `gateware`.

pub mod cli;
pub mod fpga;
pub mod isa;
pub mod rtl;
pub mod run;
pub mod soc_bench;
