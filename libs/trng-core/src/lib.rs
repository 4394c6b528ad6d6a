//! trng-core: the pure (no Xous) parts of the TRNG service.
//!
//! - [`spec`]: constants generated from `spec/trng.toml` (register map, health parameters,
//!   conditioner defaults, tester protocol constants). The one source of truth.
//! - [`health`]: NIST SP 800-90B Repetition Count and Adaptive Proportion tests with cutoffs
//!   computed from alpha and the claimed min-entropy; start-up test; latched errors and counters.
//! - [`sources`]: raw noise-source models (avalanche-like 12-bit samples folded into words,
//!   ring-oscillator-like bits) with fault injection (stuck-at, bias, repetition bursts).
//! - [`conditioner`]: ChaCha20 conditioner organised like the hardware block plus fast key erasure.
//! - [`pipeline`]: sources -> health tests -> conditioner, with output gating: no bytes while any
//!   health test has a latched failure.
//! - [`vectors`]: the conditioner and health-test vector files the gateware is checked against.
//!
//! Without the default `pipeline` feature only [`spec`] and [`Field`] are built: what the TRNG
//! client crate (`api/trng`) needs, with no conditioner or source models in an app.
#![forbid(unsafe_code)]
// without the pipeline (the client crate, the register-level driver, bare-metal firmware) the
// crate is only constants and `Field`: no_std
#![cfg_attr(all(not(feature = "pipeline"), not(test)), no_std)]

#[cfg(feature = "pipeline")]
pub mod conditioner;
#[cfg(feature = "pipeline")]
mod cutoff;
#[cfg(feature = "pipeline")]
pub mod health;
#[cfg(feature = "pipeline")]
pub mod pipeline;
#[cfg(feature = "pipeline")]
pub mod sources;
#[cfg(feature = "pipeline")]
pub mod vectors;

/// Constants generated from `spec/trng.toml` by `build.rs`.
pub mod spec {
    include!(concat!(env!("OUT_DIR"), "/spec.rs"));
}

/// A bit field inside a 32-bit register: `width` bits starting at `lsb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub lsb: u32,
    pub width: u32,
}

impl Field {
    pub const fn new(lsb: u32, width: u32) -> Self {
        Field { lsb, width }
    }
    /// Mask of the field, already shifted into place.
    pub const fn mask(self) -> u32 {
        (if self.width >= 32 { u32::MAX } else { (1u32 << self.width) - 1 }) << self.lsb
    }
    /// Extract the field from a register value.
    pub const fn get(self, reg: u32) -> u32 {
        (reg & self.mask()) >> self.lsb
    }
    /// Return `reg` with the field replaced by `val` (truncated to the field width).
    pub const fn set(self, reg: u32, val: u32) -> u32 {
        (reg & !self.mask()) | ((val << self.lsb) & self.mask())
    }
    /// The value `val` placed in the field (other bits 0).
    pub const fn val(self, val: u32) -> u32 {
        self.set(0, val)
    }
    /// Largest value the field can hold.
    pub const fn max(self) -> u32 {
        self.mask() >> self.lsb
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_register_map_is_sane() {
        use spec::regs;
        assert_eq!(regs::server::BASE, 0xF001_D000);
        assert_eq!(regs::kernel::BASE, 0xF001_C000);
        assert_eq!(regs::server::registers::control::CLR_ERR, Field::new(4, 1));
        assert_eq!(regs::server::registers::chacha::RESEED_INTERVAL.max(), 0xFFF);
        assert_eq!(regs::server::registers::chacha::SELFMIX_INTERVAL, Field::new(12, 16));
        // every server register is word aligned and inside the page, offsets unique
        let offs = [
            regs::server::registers::CONTROL,
            regs::server::registers::DATA,
            regs::server::registers::STATUS,
            regs::server::registers::AV_CONFIG,
            regs::server::registers::RO_CONFIG,
            regs::server::registers::AV_NIST,
            regs::server::registers::RO_NIST,
            regs::server::registers::UNDERRUNS,
            regs::server::registers::NIST_ERRORS,
            regs::server::registers::READY,
            regs::server::registers::CHACHA,
            regs::server::registers::SEED,
            regs::server::registers::URANDOM,
            regs::server::registers::URANDOM_VALID,
        ];
        let mut sorted = offs.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), offs.len());
        assert!(offs.iter().all(|o| o % 4 == 0 && *o < 0x1000));
    }

    #[test]
    fn field_ops() {
        let f = Field::new(12, 16);
        assert_eq!(f.mask(), 0x0FFF_F000);
        assert_eq!(f.get(0x1234_5678), 0x2345);
        assert_eq!(f.set(0xFFFF_FFFF, 0), 0xF000_0FFF);
        assert_eq!(Field::new(0, 32).mask(), u32::MAX);
    }
}
