//! The context every test step and bench provider receives: verbosity and the builds shared by
//! a whole xtask run (Xous kernels and base services, our release programs), each built once.
//! The hosted system made of them (our servers, sysctl) is in system.rs.

use crate::build::target::PROGRAM_PACKAGES;
use crate::build::xous;
use crate::util;
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
}
