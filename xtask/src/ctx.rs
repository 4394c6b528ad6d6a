//! The context every test step and bench provider receives: verbosity and the builds shared by
//! a whole xtask run (Xous kernels and base services, our release programs), each built once.

use crate::hosted::Launch;
use crate::{util, xous};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Shared context handed to test steps and bench providers.
#[derive(Clone)]
pub struct Ctx {
    pub verbose: bool,
    bins: Arc<OnceLock<xous::XousBins>>,
    programs: Arc<OnceLock<PathBuf>>,
}

/// Our packages with Xous programs, built (release) before anything is launched.
pub const PROGRAM_PACKAGES: &[&str] = &["engine25519-server", "trng-server", "sysctl", "hosted-tests", "ratchet-demo", "device-selftest"];

/// Our servers, started in every hosted system (binary names in target/release), then sysctl,
/// the system controller that claims their control connections (docs/security.md).
pub const SERVER_BINS: &[&str] = &["engine25519", "trng", "sysctl"];

/// The system's own processes among [`SERVER_BINS`]: the only programs of a system, besides the
/// harness that ends a test run, allowed to shut it down (hosted: the kernel's Shutdown,
/// kernel-patches/0006; device: xous-susres's power operations and the kernel's Shutdown,
/// kernel-patches/device/). docs/security.md, "Power-off and shutdown".
pub const SYSTEM_BINS: &[&str] = &["sysctl"];

impl Ctx {
    pub fn new(verbose: bool) -> Self {
        Ctx { verbose, bins: Arc::new(OnceLock::new()), programs: Arc::new(OnceLock::new()) }
    }

    /// Kernels and base services (built once, cached across runs).
    pub fn xous(&self) -> Result<&xous::XousBins> {
        if let Some(b) = self.bins.get() {
            return Ok(b);
        }
        let b = xous::ensure_built(self.verbose)?;
        Ok(self.bins.get_or_init(|| b))
    }

    /// Directory of our release Xous programs (built once per xtask run).
    pub fn programs(&self) -> Result<&PathBuf> {
        if let Some(p) = self.programs.get() {
            return Ok(p);
        }
        let p = xous::build_programs(PROGRAM_PACKAGES, self.verbose)?;
        Ok(self.programs.get_or_init(|| p))
    }

    /// Path of one of our programs.
    pub fn program(&self, bin: &str) -> Result<PathBuf> {
        let p = self.programs()?.join(bin);
        if !p.is_file() {
            bail!("program {} was not built", p.display());
        }
        Ok(p)
    }

    /// Shell command line starting one of our servers.
    pub fn server_program(&self, bin: &str) -> Result<String> {
        Ok(util::shell_quote(&self.program(bin)?))
    }

    /// Add our servers to a hosted system, in [`SERVER_BINS`] order, the ones in
    /// [`SYSTEM_BINS`] as programs that may shut the system down.
    pub fn add_servers(&self, mut l: Launch) -> Result<Launch> {
        for b in SERVER_BINS {
            let cmd = self.server_program(b)?;
            l = if SYSTEM_BINS.contains(b) { l.system_program(cmd) } else { l.program(cmd) };
        }
        Ok(l)
    }
}
