//! Launchers and drivers: the hosted system's launcher (hosted.rs), the one driver of a
//! simulation process (driver.rs), the simulated Precursor on it (precursor.rs) with its
//! PC-sample profiles (profile.rs), and the LiteX SoC with its firmware runner on it (soc.rs).
//! They use the builds, never the steps' context or an area.

pub mod driver;
pub mod hosted;
pub mod precursor;
pub mod profile;
pub mod soc;
