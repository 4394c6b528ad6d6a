//! Launchers and drivers: the hosted system's launcher (hosted.rs), the simulated Precursor's
//! driver (precursor.rs) and its PC-sample profiles (profile.rs), and the LiteX SoC with its
//! firmware runner (soc.rs). They use the builds, never the steps' context or an area.

pub mod hosted;
pub mod precursor;
pub mod profile;
pub mod soc;
