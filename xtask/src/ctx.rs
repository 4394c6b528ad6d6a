//! The context every test step and bench provider receives: verbosity and the builds shared by
//! a whole xtask run (Xous kernels and base services, our release programs), each built once.

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
pub const PROGRAM_PACKAGES: &[&str] = &["engine25519-server", "trng-server", "sysctl", "hosted-tests", "chat", "device-selftest"];

/// Our servers, started in every hosted system (binary names in target/release), then sysctl,
/// the system controller that claims their control connections (docs/security.md).
pub const SERVER_BINS: &[&str] = &["engine25519", "trng", "sysctl"];

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

    /// Shell command lines starting our servers.
    pub fn server_programs(&self) -> Result<Vec<String>> {
        SERVER_BINS.iter().map(|b| Ok(util::shell_quote(&self.program(b)?))).collect()
    }
}
