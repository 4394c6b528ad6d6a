//! What the steps run: the builds, each cached (kernels and base services for the host and the
//! device, our programs cross-built, the signed device image, the simulated Precursor's boot
//! files, the gateware's tools). They know nothing of steps, the context or the harness.

pub mod device;
pub mod device_xous;
pub mod gateware;
pub mod image;
pub mod pinned;
pub mod power;
pub mod sim_layout;
pub mod target;
pub mod xous;
