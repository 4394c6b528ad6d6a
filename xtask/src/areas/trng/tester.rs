//! The TRNG tester as seen from xtask: the hosted system started with the server's tester on a
//! local port (or an already running one), tools/trng_test.py spawned against it, and the
//! external statistics tools installed.

use super::types::Source;
use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{Hosted, Launch};
use crate::setup;
use crate::supervisor;
use crate::util;
use crate::util::shell_quote;
use anyhow::{bail, Result};
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// dieharder, rngtest (rng-tools5) and ent from Debian: installed when missing (as root),
/// otherwise the exact apt-get command is printed and we fail.
pub fn ensure_tools() -> Result<()> {
    setup::require_apt(setup::apt::TRNG_TOOLS)
}

pub fn tool_path() -> PathBuf {
    util::root().join("tools").join("trng_test.py")
}

/// A running tester: the hosted system (kernel + base services + trng) or just a port.
pub struct Tester {
    pub port: u16,
    pub hosted: Option<Hosted>,
    /// The project's venv python (tools/requirements.txt) that runs the tool.
    pub py: PathBuf,
}

impl Tester {
    /// Build and start the hosted system with the TRNG server; wait for its tester's port file.
    pub fn start(ctx: &Ctx, work: &Path, feed: &str) -> Result<Tester> {
        let py = setup::venv()?;
        let bins = ctx.xous()?;
        let trng = ctx.program("trng")?;
        std::fs::create_dir_all(work)?;
        let portfile = work.join("tester.port");
        let _ = std::fs::remove_file(&portfile);
        let mut sys = Launch::new(&bins, Flavor::Patched)
            .env("TRNG_TESTER_PORT", "0")
            .env("TRNG_TESTER_PORTFILE", portfile.display().to_string())
            .program(format!("{} --source {}", shell_quote(&trng), shell_quote(Path::new(feed))))
            .echo(ctx.verbose)
            .start()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&portfile) {
                if let Some(p) = text.strip_suffix('\n').and_then(|t| t.trim().parse::<u16>().ok()) {
                    break p;
                }
            }
            if let Some(st) = sys.try_status()? {
                bail!("hosted system exited ({st}) before the TRNG tester listened:\n{}", sys.tail(30));
            }
            if Instant::now() > deadline {
                bail!("the TRNG tester wrote no port file ({}) within 60 s:\n{}", portfile.display(), sys.tail(30));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Ok(Tester { port, hosted: Some(sys), py })
    }

    pub fn external(port: u16) -> Result<Tester> {
        Ok(Tester { port, hosted: None, py: setup::venv()? })
    }

    /// Fails when the hosted system died meanwhile (then its output tail is in the error).
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(h) = self.hosted.as_mut() {
            if let Some(st) = h.try_status()? {
                bail!("hosted system exited ({st}):\n{}", h.tail(30));
            }
        }
        Ok(())
    }

    pub fn stop(&mut self, log: Option<&Path>) {
        if let Some(mut h) = self.hosted.take() {
            h.stop();
            if let Some(p) = log {
                let _ = std::fs::write(p, h.lines().join("\n") + "\n");
            }
        }
    }
}

/// The tool as a child process (own process group), stdout piped, stats to `stats`.
pub fn spawn_tool(
    py: &Path,
    port: u16,
    source: Source,
    limit: Option<u64>,
    stats: &Path,
    stderr: File,
) -> Result<std::process::Child> {
    let mut cmd = Command::new(py);
    cmd.arg(tool_path())
        .args(["--quiet", "--timeout", "30", "--retries", "5", "--source", source.name()])
        .args(["--port", &port.to_string()])
        .arg("--stats-json")
        .arg(stats)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    if let Some(n) = limit {
        cmd.args(["--bytes", &n.to_string()]);
    }
    supervisor::spawn_grouped(&mut cmd)
}

pub fn read_stats(path: &Path) -> Value {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}
