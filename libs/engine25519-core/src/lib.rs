//! engine25519-core: the Curve25519 engine's ISA (generated from `spec/engine25519.toml`),
//! assembler, disassembler and the cycle-exact model.
//!
//! # Running microcode on the model (the hosted engine)
//! ```
//! use engine25519_core::{isa::Isa, model::{EngineModel, Job}, programs};
//! // convenience: X25519 by the real microcode, with its engine cycle count
//! let (_out, cycles) = programs::x25519(Isa::V2, &[1u8; 32], &[9u8; 32]);
//! // or drive the engine like the service does
//! let prog = programs::x25519_v1();
//! let mut e = EngineModel::new(Isa::V1);
//! e.load_program(prog.words(), 0).unwrap();
//! e.set_reg(0, programs::X25519_SCALAR_REG, &[1u8; 32]).unwrap();
//! e.set_reg(0, programs::X25519_U_REG, &[9u8; 32]).unwrap();
//! let job = Job { window: 0, mpstart: 0, mplen: prog.len(), cycle_budget: 1_000_000 };
//! let o = e.run(&job).unwrap();
//! assert_eq!(e.reg(0, programs::RESULT_REG).unwrap(), programs::x25519(Isa::V1, &[1u8; 32], &[9u8; 32]).0);
//! assert!(o.cycles > cycles);
//! ```
//! [`model::EngineModel::run_limited`] pauses at an instruction boundary and returns a serializable
//! [`model::PausedJob`]; [`model::EngineModel::resume`] continues it with identical result and cycle
//! count. ISA v2's design and timing: `docs/engine-v2-design.md`.

//!
//! Without the default `std` feature the crate is `no_std` and has only [`isa`].

#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(feature = "std")]
pub mod asm;
#[cfg(feature = "std")]
pub mod disasm;
#[cfg(feature = "std")]
pub mod docs;
#[cfg(feature = "std")]
pub mod formats;
pub mod isa;
#[cfg(feature = "std")]
pub mod model;
#[cfg(feature = "std")]
pub mod model_field;
#[cfg(feature = "std")]
pub mod programs;
#[cfg(feature = "std")]
pub mod vectors;
