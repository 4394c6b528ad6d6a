//! `cargo xtask`: the project's front door (see README.md and docs/hosted.md).

mod bench;
mod chat;
mod device;
mod engine;
mod engine_service;
mod hosted;
mod kernel_test;
mod ratchet;
mod setup;
mod smoke;
mod steps;
mod trng;
mod trng_gateware;
mod trng_service;
mod util;
mod xous;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use steps::TestStep;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Build, run, test and benchmark the hosted Xous crypto subsystem", long_about = None)]
struct Cli {
    /// Show build output and every line of the hosted system's output.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build (cached) the patched and stock xous-kernel 0.9.37, the base services (xous-names,
    /// xous-ticktimer, xous-log) and our Xous programs; print where they are.
    Build,
    /// The chat (docs/chat.md): the hosted system (patched kernel, base services, our services,
    /// the relay, Bob) and Alice's terminal UI in this terminal, DH paced to device time.
    /// Ctrl-C stops everything; the conversation is kept in target/chat (--fresh starts over).
    Run {
        /// Use the unpatched kernel.
        #[arg(long)]
        stock: bool,
        /// The DH device: engine ISA v1 or v2 (paced to the engine clock), or software
        /// (100 ms per X25519, a 100 MHz RV32 CPU).
        #[arg(long, value_enum, default_value = "v2")]
        engine: chat::Engine,
        /// Run the DH on the UI thread (shows the stall the async path avoids).
        #[arg(long)]
        sync_dh: bool,
        /// Forget the stored conversation and keys first.
        #[arg(long)]
        fresh: bool,
        /// Extra programs (shell command lines) to start after ours.
        #[arg(long = "program")]
        programs: Vec<String>,
    },
    /// Non-interactive end-to-end test: the whole system plus a scripted client that calls every
    /// server while 8 engine client processes run 100 X25519 each (checked against x25519-dalek),
    /// then shuts down through the kernel's Shutdown syscall. Exits 0 only if every step
    /// passed and every process exited, within its own time limit.
    Smoke {
        /// Overall time limit in seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// The kernel-patch tests: each patch's behaviour checked on the stock kernel (must fail)
    /// and the patched one (must pass).
    KernelTest,
    /// The whole test suite: cargo test --workspace --release, kernel-patch tests, pytest for
    /// tools/, the hosted smoke test and every area's registered steps. Installs what it needs.
    Test {
        /// Run only the named steps (repeatable; see --list).
        #[arg(long)]
        only: Vec<String>,
        /// Skip the named steps (repeatable).
        #[arg(long)]
        skip: Vec<String>,
        /// List the steps and exit.
        #[arg(long)]
        list: bool,
    },
    /// Run every benchmark provider; print one table and optionally write flat JSON
    /// (key -> number).
    Bench {
        /// Write the merged results as flat JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Run only the named providers (repeatable).
        #[arg(long)]
        only: Vec<String>,
    },
    /// Cross-compile our Xous servers for the device (riscv32imac-unknown-xous-elf: nightly,
    /// rust-src and build-std, installed through rustup when missing).
    DeviceBuild(device::DeviceBuildArgs),
    #[command(flatten)]
    Engine(engine::EngineCmd),
    #[command(flatten)]
    Trng(trng::TrngCmd),
}

/// Shared context handed to test steps and bench providers.
#[derive(Clone)]
pub struct Ctx {
    pub verbose: bool,
    bins: Arc<OnceLock<xous::XousBins>>,
    programs: Arc<OnceLock<PathBuf>>,
}

/// Our packages with Xous programs, built (release) before anything is launched.
pub const PROGRAM_PACKAGES: &[&str] = &["engine25519-server", "trng-server", "sysctl", "hosted-tests", "chat"];

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
        SERVER_BINS.iter().map(|b| Ok(hosted::shell_quote(&self.program(b)?))).collect()
    }
}

fn main() {
    let cli = Cli::parse();
    // Ctrl-C / SIGTERM: stop every process group we started, then exit.
    let _ = ctrlc::set_handler(|| {
        util::INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        chat::restore_terminal();
        eprintln!("\nxtask: interrupted; stopping every process we started");
        util::kill_all_groups();
        std::process::exit(130);
    });
    util::become_subreaper();
    let ctx = Ctx::new(cli.verbose);
    let r = match cli.cmd {
        Cmd::Build => cmd_build(&ctx),
        Cmd::Run { stock, engine, sync_dh, fresh, programs } => {
            chat::run(&ctx, if stock { xous::Flavor::Stock } else { xous::Flavor::Patched }, engine, sync_dh, fresh, programs)
        }
        Cmd::Smoke { timeout } => smoke::smoke(&ctx, Duration::from_secs(timeout)),
        Cmd::KernelTest => kernel_test::all(&ctx),
        Cmd::Test { only, skip, list } => cmd_test(&ctx, only, skip, list),
        Cmd::Bench { json, only } => bench::cmd_bench(&ctx, json, only),
        Cmd::DeviceBuild(a) => device::run(a),
        Cmd::Engine(c) => engine::run(c),
        Cmd::Trng(c) => trng::run(&ctx, c),
    };
    util::kill_all_groups();
    if let Err(e) = r {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn cmd_build(ctx: &Ctx) -> Result<()> {
    let b = ctx.xous()?;
    let dir = ctx.programs()?;
    println!("kernel (patched): {}", b.kernel.display());
    println!("kernel (stock):   {}", b.kernel_stock.display());
    for s in &b.services {
        println!("base service:     {}", s.display());
    }
    println!("our programs:     {}", dir.display());
    Ok(())
}

/// The steps this module owns; areas add theirs in steps.rs.
pub fn core_test_steps() -> Vec<TestStep> {
    vec![
        TestStep { name: "xous:build", timeout: Duration::from_secs(40 * 60), run: |c| c.xous().map(|_| ()) },
        TestStep { name: "programs:build", timeout: Duration::from_secs(30 * 60), run: |c| c.programs().map(|_| ()) },
        TestStep { name: "rust:cargo-test", timeout: Duration::from_secs(40 * 60), run: setup::cargo_test },
        TestStep { name: "kernel:patches", timeout: Duration::from_secs(5 * 60), run: kernel_test::all },
        TestStep { name: "python:pytest", timeout: Duration::from_secs(20 * 60), run: setup::pytest },
        TestStep { name: "hosted:smoke", timeout: Duration::from_secs(5 * 60), run: |c| smoke::smoke(c, Duration::from_secs(120)) },
    ]
}

fn cmd_test(ctx: &Ctx, only: Vec<String>, skip: Vec<String>, list: bool) -> Result<()> {
    let all = steps::all_test_steps();
    if list {
        for s in &all {
            println!("{:<28} timeout {:>5} s", s.name, s.timeout.as_secs());
        }
        return Ok(());
    }
    for n in only.iter().chain(skip.iter()) {
        if !all.iter().any(|s| s.name == n) {
            bail!("unknown step {n:?} (see cargo xtask test --list)");
        }
    }
    let selected: Vec<&TestStep> = all
        .iter()
        .filter(|s| (only.is_empty() || only.iter().any(|o| o == s.name)) && !skip.iter().any(|o| o == s.name))
        .collect();
    let mut results = Vec::new();
    let t_all = Instant::now();
    for s in selected {
        eprintln!("\n=== xtask test: {} (timeout {} s)", s.name, s.timeout.as_secs());
        let t0 = Instant::now();
        let c = ctx.clone();
        let run = s.run;
        let r = steps::with_timeout(s.name, s.timeout, move || run(&c));
        let secs = t0.elapsed().as_secs_f64();
        match &r {
            Ok(()) => eprintln!("=== {}: PASS ({secs:.1} s)", s.name),
            Err(e) => eprintln!("=== {}: FAIL ({secs:.1} s): {e:#}", s.name),
        }
        results.push((s.name, r.is_ok(), secs));
    }
    eprintln!("\n{:<28} {:>6} {:>9}", "step", "result", "seconds");
    for (n, ok, secs) in &results {
        eprintln!("{:<28} {:>6} {:>9.1}", n, if *ok { "PASS" } else { "FAIL" }, secs);
    }
    let failed = results.iter().filter(|r| !r.1).count();
    eprintln!("total {:.1} s; {} passed, {} failed", t_all.elapsed().as_secs_f64(), results.len() - failed, failed);
    if failed > 0 {
        bail!("{failed} test step(s) failed");
    }
    Ok(())
}

#[cfg(test)]
mod workspace_tests {
    /// The repository stands alone: no tracked file points at documents outside it (a clone has
    /// none of them). Facts go into docs/ with their public sources (docs/reference-system.md).
    #[test]
    fn no_file_refers_outside_the_repository() {
        // built from pieces so that this file does not match itself
        let banned: Vec<String> = [["../", "shared"], ["anch", "ors"], ["seed ", "00"], ["seed-", "00"], ["project ", "brief"], ["environment", ".md"], ["architecture", ".md"]]
            .iter()
            .map(|p| p.concat())
            .collect();
        let out = std::process::Command::new("git").args(["ls-files", "-z"]).current_dir(crate::util::root()).output().expect("git ls-files");
        assert!(out.status.success(), "git ls-files failed");
        let mut found = Vec::new();
        for path in out.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path).to_string();
            let Ok(text) = std::fs::read_to_string(crate::util::root().join(&path)) else { continue };
            let lower = text.to_lowercase();
            for b in &banned {
                if let Some(i) = lower.find(b.as_str()) {
                    let line = lower[..i].matches('\n').count() + 1;
                    found.push(format!("{path}:{line}: {b:?}"));
                }
            }
        }
        assert!(found.is_empty(), "references to files outside the repository:\n{}", found.join("\n"));
    }

    /// Every binary of the workspace lands in target/release/<name>: two packages declaring the
    /// same bin name silently overwrite each other (it happened: a hosted bench client and a
    /// native bench provider were both `engine-bench`, and the wrong one was launched).
    #[test]
    fn binary_names_are_unique_across_the_workspace() {
        let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["metadata", "--no-deps", "--format-version", "1"])
            .current_dir(crate::util::root())
            .output()
            .expect("cargo metadata");
        assert!(out.status.success(), "cargo metadata failed");
        let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
        let mut seen = std::collections::BTreeMap::new();
        for pkg in meta["packages"].as_array().unwrap() {
            for t in pkg["targets"].as_array().unwrap() {
                let kinds: Vec<&str> = t["kind"].as_array().unwrap().iter().filter_map(|k| k.as_str()).collect();
                if kinds.contains(&"bin") {
                    let name = t["name"].as_str().unwrap().to_string();
                    let pkg_name = pkg["name"].as_str().unwrap().to_string();
                    if let Some(other) = seen.insert(name.clone(), pkg_name.clone()) {
                        panic!("binary `{name}` is declared by both `{other}` and `{pkg_name}`");
                    }
                }
            }
        }
        assert!(seen.contains_key("engine25519") && seen.contains_key("trng"), "servers missing: {seen:?}");
    }
}
