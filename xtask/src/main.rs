//! `cargo xtask`: the project's front door (see README.md and docs/hosted.md).

mod areas;
mod bench;
mod build;
mod ctx;
mod harness;
#[cfg(test)]
mod layers;
mod registry;
mod runner;
mod setup;
mod steps;
mod supervisor;
mod system;
mod util;

use anyhow::Result;
use clap::{Parser, Subcommand};
use ctx::Ctx;
use std::path::PathBuf;
use std::time::Duration;

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
        /// (73.2 ms per X25519: x25519-dalek measured on the simulated Precursor, docs/chat.md).
        #[arg(long, value_enum, default_value = "v2")]
        engine: areas::chat::Engine,
        /// Run the DH on the UI thread (shows the stall the async path avoids).
        #[arg(long)]
        sync_dh: bool,
        /// Forget the stored conversation and keys first.
        #[arg(long)]
        fresh: bool,
        /// Where the conversation is stored (default: target/chat).
        #[arg(long)]
        store: Option<PathBuf>,
        /// Extra programs (shell command lines) to start after ours.
        #[arg(long = "program")]
        programs: Vec<String>,
        /// Run the chat on the simulated Precursor instead (docs/chat.md "On the simulated
        /// Precursor"): the device image with Alice, the relay and Bob; the screen shown here as
        /// text, typed lines sent to its keyboard; slow (a simulation). --engine v1|v2 picks
        /// the SoC's engine, software runs x25519-dalek on the simulated CPU.
        #[arg(long, conflicts_with_all = ["stock", "fresh", "store", "programs"])]
        device: bool,
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
    DeviceBuild(areas::device::DeviceBuildArgs),
    /// Gateware tools (docs/gateware.md): Verilator tests of the engine's RTL, cache cleaning.
    Gateware(areas::engine::cli::GatewareArgs),
    /// Run a program (.s, .hex, .bin) on the engine model or the Verilated RTL; print the
    /// registers it writes and the cycle count.
    EngineRun(areas::engine::run::EngineRunArgs),
    /// A signed xous.img for Precursor (docs/device.md): the device kernel, the base services and
    /// our servers, made with xous-tools 0.1.2 and a development key in target/, then checked
    /// (header, tag CRCs, signature, fit in the kernel flash region).
    DeviceImage(areas::device::DeviceImageArgs),
    /// Boot the device kernel, base services and our servers on the simulated Precursor
    /// (docs/sim.md: LiteX + VexRiscv with MMU on Verilator, Precursor's map) and show their
    /// UART and log lines; --rom/--ram run any program instead.
    SimRun(areas::sim::SimRunArgs),
    /// Boot the device image on the simulated Precursor and pass only if every boot phase is
    /// reached (kernel, log, names, ticktimer, our servers registered, sysctl READY) within
    /// the time limit; prints cycles and wall time per phase.
    SimSmoke(areas::sim::SimSmokeArgs),
    /// Profile the simulated Precursor (PC samples of kernel and processes) while the device
    /// self-test times its X25519 calls: a table per process and function (docs/sim.md).
    SimProfile(areas::sim::profile::SimProfileArgs),
    /// Time the chat's cryptography per operation on the simulated Precursor
    /// (apps/device-crypto; docs/chat.md "On the device").
    SimCrypto(areas::sim::crypto::SimCryptoArgs),
    /// The simulated Precursor's screen as a PNG: what the memory LCD's panel received in the
    /// last simulated run (or --log), docs/sim.md "The screen".
    SimScreenshot(areas::sim::SimScreenshotArgs),
    /// A Xous program draws text on the simulated Precursor's memory LCD; the host reads it back
    /// from what the panel received (step sim:screen; docs/sim.md "The screen").
    SimScreen,
    /// Boot files for the simulated Precursor without the upstream loader: target/sim/ram.bin, rom.bin, layout.json (docs/sim-boot.md)
    SimLayout(areas::sim::layout::SimLayoutArgs),
    #[command(flatten)]
    Engine(areas::engine::isa::EngineCmd),
    #[command(flatten)]
    Trng(areas::trng::TrngCmd),
    /// One test step or bench provider in this process, its outcome written to --out: how the
    /// runner isolates each of them (runner.rs).
    #[command(name = "__run", hide = true)]
    Child {
        #[arg(long, conflicts_with = "bench", required_unless_present = "bench")]
        step: Option<String>,
        #[arg(long)]
        bench: Option<String>,
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() {
    let cli = Cli::parse();
    // Ctrl-C / SIGTERM: stop every process group we started, then exit.
    let _ = ctrlc::set_handler(|| {
        supervisor::INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        areas::chat::restore_terminal();
        eprintln!("\nxtask: interrupted; stopping every process we started");
        supervisor::kill_all_groups();
        std::process::exit(130);
    });
    supervisor::become_subreaper();
    let ctx = Ctx::new(cli.verbose);
    let r = match cli.cmd {
        Cmd::Build => cmd_build(&ctx),
        Cmd::Run { device: true, engine, sync_dh, .. } => areas::chat::device::run(&ctx, engine, sync_dh),
        Cmd::Run { stock, engine, sync_dh, fresh, store, programs, device: false } => {
            let flavor = if stock { build::xous::Flavor::Stock } else { build::xous::Flavor::Patched };
            areas::chat::run(
                &ctx,
                flavor,
                engine,
                sync_dh,
                fresh,
                store.unwrap_or_else(areas::chat::default_store),
                programs,
            )
        }
        Cmd::Smoke { timeout } => areas::hosted::smoke(&ctx, Duration::from_secs(timeout)),
        Cmd::KernelTest => areas::kernel::all(&ctx),
        Cmd::Test { only, skip, list } => runner::cmd_test(&ctx, only, skip, list),
        Cmd::Bench { json, only } => runner::cmd_bench(&ctx, json, only),
        Cmd::DeviceBuild(a) => areas::device::build_cli(a),
        Cmd::Gateware(a) => areas::engine::cli::run(&ctx, a),
        Cmd::EngineRun(a) => areas::engine::run::run(a),
        Cmd::DeviceImage(a) => areas::device::image_cli(a, ctx.verbose),
        Cmd::SimRun(a) => areas::sim::run(a, ctx.verbose),
        Cmd::SimSmoke(a) => areas::sim::smoke(a, ctx.verbose, areas::selftest::sim_extras),
        Cmd::SimProfile(a) => areas::sim::profile::main(a, ctx.verbose),
        Cmd::SimCrypto(a) => areas::sim::crypto::main(a, ctx.verbose),
        Cmd::SimScreenshot(a) => areas::sim::screenshot(a),
        Cmd::SimScreen => areas::sim::screen::check(ctx.verbose),
        Cmd::SimLayout(a) => areas::sim::layout::run(a, ctx.verbose),
        Cmd::Engine(c) => areas::engine::isa::run(c),
        Cmd::Trng(c) => areas::trng::run(&ctx, c),
        Cmd::Child { step, bench, out } => {
            let job = match (&step, &bench) {
                (Some(s), _) => runner::Job::Step(s),
                (None, Some(b)) => runner::Job::Bench(b),
                (None, None) => unreachable!("clap requires --step or --bench"),
            };
            runner::cmd_child(&ctx, job, &out)
        }
    };
    supervisor::kill_all_groups();
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

#[cfg(test)]
mod workspace_tests {
    /// The repository stands alone: no tracked file points at documents outside it (a clone has
    /// none of them). Facts go into docs/ with their public sources (docs/reference-system.md).
    #[test]
    fn no_file_refers_outside_the_repository() {
        // built from pieces so that this file does not match itself
        let banned: Vec<String> = [
            ["../", "shared"],
            ["anch", "ors"],
            ["seed ", "00"],
            ["seed-", "00"],
            ["project ", "brief"],
            ["environment", ".md"],
            ["architecture", ".md"],
        ]
        .iter()
        .map(|p| p.concat())
        .collect();
        let out = std::process::Command::new("git")
            .args(["ls-files", "-z"])
            .current_dir(crate::util::root())
            .output()
            .expect("git ls-files");
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

    /// Where `text` refers to the project's own bookkeeping instead of saying what a thing is:
    /// a work item by number ("issue 5", "interface 3"), who wrote something ("helper x-y"), or
    /// a defect number without docs/reference-system.md, whose table numbers them, next to it.
    /// Returns the byte offsets and the words found.
    fn bookkeeping_words(text: &str) -> Vec<(usize, String)> {
        let lower = text.to_lowercase();
        let b = lower.as_bytes();
        let mut found = Vec::new();
        let number_after = |at: usize| {
            let rest = &lower[at..];
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            let rest = rest.strip_prefix('#').unwrap_or(rest);
            rest.starts_with(|c: char| c.is_ascii_digit())
        };
        let word_start = |i: usize| i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        for (word, rule) in [("issue", 0), ("interface", 0), ("defect", 1), ("helper", 2)] {
            let mut from = 0;
            while let Some(k) = lower[from..].find(word) {
                let i = from + k;
                from = i + word.len();
                if !word_start(i) {
                    continue;
                }
                let end = i + word.len();
                let hit = match rule {
                    // "issue 5", "interface #3"; an upstream project's issue is a public reference
                    0 => number_after(end) && !lower[..i].ends_with("upstream "),
                    // "defect 1" without the table that numbers defects within 200 bytes
                    1 => {
                        let (lo, hi) = (i.saturating_sub(200), (end + 200).min(lower.len()));
                        let near = lower.get(lo..hi).unwrap_or(&lower[i..end]);
                        number_after(end) && !near.contains("reference-system")
                    }
                    // "helper engine-isa", "helper \"trng-tool\"", "helper/issue"
                    _ => {
                        let rest = &lower[end..];
                        rest.starts_with('/')
                            || rest.starts_with(" \"")
                            || rest.strip_prefix(' ').is_some_and(|r| {
                                let w: String =
                                    r.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
                                w.contains('-')
                            })
                    }
                };
                if hit {
                    found.push((i, lower[i..(end + 12).min(lower.len())].to_string()));
                }
            }
        }
        found
    }

    #[test]
    fn the_repository_speaks_of_itself() {
        let out = std::process::Command::new("git")
            .args(["ls-files", "-z"])
            .current_dir(crate::util::root())
            .output()
            .expect("git ls-files");
        assert!(out.status.success(), "git ls-files failed");
        let mut found = Vec::new();
        for path in out.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path).to_string();
            // this file holds the words as test cases
            if path == "Cargo.lock" || path == file!() {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(crate::util::root().join(&path)) else { continue };
            for (at, w) in bookkeeping_words(&text) {
                let line = text[..at].matches('\n').count() + 1;
                found.push(format!("{path}:{line}: {w:?}"));
            }
        }
        assert!(found.is_empty(), "say what a thing is, or cite docs/reference-system.md:\n{}", found.join("\n"));
    }

    #[test]
    fn bookkeeping_words_are_found() {
        let words = |t: &str| {
            bookkeeping_words(t)
                .into_iter()
                .map(|(_, w)| w.split_whitespace().next().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        for bad in [
            "see issue 10",
            "(Issue #5)",
            "interface 3 of",
            "written by helper engine-isa",
            "helper \"trng-tool\"",
            "owner: helper/issue x",
            "reference defect #1 here",
        ] {
            assert_eq!(words(bad).len(), 1, "{bad:?} not found");
        }
        for good in [
            "upstream issue #76",
            "issues in 2 cycles",
            "a helper function",
            "the interface of",
            "defect 3 (docs/reference-system.md)",
            "tissue 5",
        ] {
            assert!(words(good).is_empty(), "{good:?} flagged: {:?}", words(good));
        }
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
