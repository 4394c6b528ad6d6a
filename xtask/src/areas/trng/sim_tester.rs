//! The TRNG tester on the simulated Precursor (docs/trng-tester-protocol.md section 3.4):
//! `cargo xtask trng-sim-tester` and the test step `trng:sim-tester` (docs/trng-tester-protocol.md
//! section 5).
//!
//! Boots the device image with the TRNG server built with its `tester` feature (the default
//! image has none) on the simulated Precursor with the UART Wishbone bridge on a local TCP
//! port, waits for the server's mailbox line, then streams frames of each requested source
//! through `tools/trng_test.py --transport sim` (the device transport's mailbox, frame, seq and
//! CRC checks). Reports, per source, the device's cycles per frame (from the cycle stamps of the
//! server's `fill` / `published` lines) and the tool's wall time per frame, and checks the bytes
//! of every source are near-uniform (the simulated noise source is xorshift-based, so a raw
//! frame of zeros, of the poison word or of a repeated word fails). Timeouts: the boot (the
//! runner's wall limit), each tool run (`supervisor::wait_timeout`), the whole step.

use super::tester::tool_path;
use super::types::Source;
use crate::build::sim_layout;
use crate::harness::driver::{Echo, Options, Sim, Stop};
use crate::harness::precursor as sim;
use crate::setup;
use crate::steps::{step, TestStep};
use crate::supervisor;
use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use trng_core::spec::tester as T;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("trng:sim-tester", 40 * 60, step)]
}

#[derive(clap::Args, Debug, Clone)]
pub struct SimTesterArgs {
    /// Sources to stream, in order (repeatable).
    #[arg(long = "source", value_enum, default_values_t = [Source::Cprng, Source::Av])]
    pub sources: Vec<Source>,
    /// Frames per source (512 KiB each, spec/trng.toml [tester] buffer_bytes).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: u32,
    /// Wall-clock limit of the whole simulation, seconds.
    #[arg(long, default_value_t = 2400)]
    pub timeout: u64,
}

impl Default for SimTesterArgs {
    fn default() -> Self {
        SimTesterArgs { sources: vec![Source::Cprng, Source::Av], frames: 1, timeout: 2400 }
    }
}

/// The simulated device's output as the tester reads it: stamped lines (`[<cycle> <uart>]
/// text`, `precursor::stamp`) from the simulation driver, whose failure patterns are the
/// device's ([`sim::FAIL_LINES`]).
struct Lines {
    sim: Sim,
}

impl Lines {
    /// Wait for a line matching `want`; fail on a failure line, the simulation's end, or `deadline`.
    fn wait(&mut self, want: impl Fn(&str) -> bool, deadline: Instant, what: &str) -> Result<(u64, String)> {
        self.sim
            .wait_for(deadline, |l| sim::stamp(l).filter(|(_, t)| want(t)).map(|(c, t)| (c, t.to_string())))
            .map_err(|e| match e {
                Stop::Failed(l) => anyhow!("the simulated device printed a failure line while waiting for {what}: {l}"),
                Stop::Timeout => anyhow!("timed out waiting for {what}"),
                Stop::Ended => anyhow!("the simulation ended while waiting for {what}"),
            })
    }
    /// Take the lines printed meanwhile; fail if one is a failure line.
    fn drain(&mut self) -> Result<()> {
        self.sim.drain().map_err(|e| anyhow!("the simulated device printed a {e}"))
    }
    /// Every stamped line read so far.
    fn seen(&self) -> Vec<(u64, &str)> {
        self.sim.lines().iter().filter_map(|l| sim::stamp(l)).collect()
    }
}

/// The frame mode number of a source (spec/trng.toml [tester.modes]).
fn mode_of(s: Source) -> u32 {
    (match s {
        Source::Cprng => T::modes::CPRNG,
        Source::Av => T::modes::AV,
        Source::Ro => T::modes::RO,
        Source::Both => T::modes::BOTH,
    }) as u32
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(l.local_addr()?.port())
}

struct SourceResult {
    source: Source,
    frames: u64,
    wall_s: f64,
    /// device cycles from a `fill` line to its `published` line, per frame of this source's mode
    fill_cycles: Vec<u64>,
    bits_per_byte: f64,
}

/// The sources of step `trng:sim-tester`, in order: a raw AV frame, a raw RO frame (the AV
/// channels off: the kernel must keep getting conditioned words), then a conditioned frame
/// (both families back, the conditioner never held). About 13-14 M device cycles per raw frame
/// and 50 M for the conditioned one, plus at most one 64 KiB chunk of the previous mode per
/// switch (the device abandons a fill when CONTROL changes).
pub const STEP_SOURCES: [Source; 3] = [Source::Av, Source::Ro, Source::Cprng];

/// Step `trng:sim-tester`: one frame of each of [`STEP_SOURCES`] through the bridge.
pub fn step(ctx: &crate::ctx::Ctx) -> Result<()> {
    run(&SimTesterArgs { sources: STEP_SOURCES.to_vec(), ..SimTesterArgs::default() }, ctx.verbose)
}

/// Empirical entropy of `data` in bits per byte (Shannon, byte histogram).
pub fn bits_per_byte(data: &[u8]) -> f64 {
    let mut counts = [0u64; 256];
    for &b in data {
        counts[b as usize] += 1;
    }
    let n = data.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// The least empirical entropy a frame of the simulated sources may have (bits per byte). A
/// uniform 512 KiB frame measures about 7.9996; a frame that is one repeated word has at most 2.
pub const MIN_BITS_PER_BYTE: f64 = 7.99;

pub fn run(a: &SimTesterArgs, verbose: bool) -> Result<()> {
    if a.frames == 0 || a.sources.is_empty() {
        bail!("trng-sim-tester: need at least one source and one frame");
    }
    let t_all = Instant::now();
    let dir = sim_layout::sim_dir().join("tester");
    std::fs::create_dir_all(&dir)?;
    // the image with the tester: the TRNG server built with its `tester` feature
    sim_layout::build(&dir, &[], &["trng-server/tester"], verbose)
        .context("the boot files with the TRNG tester (cargo xtask sim-layout)")?;
    let py = setup::venv()?;
    let port = free_port()?;
    let mut cmd = sim::runner(&dir.join("rom.bin"), &dir.join("ram.bin"), a.timeout)?;
    cmd.args(["--bridge-port", &port.to_string()]);
    for f in sim::FAIL_LINES {
        cmd.args(["--fail", f]);
    }
    eprintln!("trng-sim-tester: booting the simulated Precursor (bridge on 127.0.0.1:{port})");
    let log_path = dir.join("sim.log");
    let opts = Options {
        echo: if verbose { Echo::Stdout } else { Echo::Off },
        log: Some(log_path.clone()),
        fail: sim::FAIL_LINES.iter().map(|f| f.to_string()).collect(),
    };
    let mut lines = Lines { sim: Sim::spawn(&mut cmd, "the simulated Precursor", opts)? };
    let deadline = t_all + Duration::from_secs(a.timeout);
    let res = stream(a, &py, port, &dir, &mut lines, deadline);
    // stop the simulation (the runner kills the simulator on SIGTERM)
    lines.sim.stop(Duration::from_secs(30));
    let (boot, results, abandoned) =
        res.with_context(|| format!("trng-sim-tester (simulation log: {})", log_path.display()))?;
    eprintln!(
        "trng-sim-tester: mailbox up at cycle {boot} ({:.1} ms of device time at 100 MHz)",
        boot as f64 / sim::SIM_CLK_HZ * 1e3
    );
    for r in &results {
        let c = &r.fill_cycles;
        let avg = if c.is_empty() { 0 } else { c.iter().sum::<u64>() / c.len() as u64 };
        eprintln!(
            "trng-sim-tester: {:<5} {} frame(s) of {} bytes: device {avg} cycles per frame ({:.1} ms at 100 MHz, {:.0} cycles per 32-bit word; fills {c:?}), tool {:.1} s wall per frame, {:.4} bits/byte",
            r.source.name(),
            r.frames,
            T::BUFFER_BYTES,
            avg as f64 / sim::SIM_CLK_HZ * 1e3,
            avg as f64 / (T::BUFFER_BYTES / 4) as f64,
            r.wall_s / r.frames.max(1) as f64,
            r.bits_per_byte
        );
    }
    if abandoned > 0 {
        eprintln!("trng-sim-tester: {abandoned} fill(s) abandoned by the device when the next source's request changed CONTROL");
    }
    eprintln!("trng-sim-tester: PASS in {:.1} s", t_all.elapsed().as_secs_f64());
    Ok(())
}

fn stream(
    a: &SimTesterArgs,
    py: &Path,
    port: u16,
    dir: &Path,
    lines: &mut Lines,
    deadline: Instant,
) -> Result<(u64, Vec<SourceResult>, usize)> {
    let marker = format!("{} at ", T::DEVICE_MARKER);
    let (boot, _) = lines.wait(|t| t.contains(&marker), deadline, "the TRNG server's tester mailbox line")?;
    let mut results = Vec::new();
    for &src in &a.sources {
        let out = dir.join(format!("{}.bin", src.name()));
        let stats = dir.join(format!("{}.json", src.name()));
        let errlog = dir.join(format!("{}.log", src.name()));
        let _ = std::fs::remove_file(&stats);
        let bytes = a.frames as u64 * T::BUFFER_BYTES as u64;
        let mut cmd = std::process::Command::new(py);
        cmd.arg(tool_path())
            .args(["--transport", "sim", "--bridge", &port.to_string(), "--source", src.name()])
            .args(["--bytes", &bytes.to_string(), "--timeout", "900", "--retries", "2", "--quiet"])
            .arg("--out")
            .arg(&out)
            .arg("--stats-json")
            .arg(&stats)
            .stderr(std::fs::File::create(&errlog)?);
        let what = format!("trng_test.py --transport sim --source {}", src.name());
        let mut child = supervisor::spawn_grouped(&mut cmd)?;
        // while the tool runs: a failure line of the device or the step's deadline stops it
        loop {
            if child.try_wait()?.is_some() {
                break;
            }
            let bad = lines.drain();
            if bad.is_err() || Instant::now() > deadline {
                supervisor::signal_group(child.id() as i32, libc::SIGTERM);
                let _ = supervisor::wait_timeout(&mut child, Duration::from_secs(10), &what);
                bad?;
                bail!("{what}: the step's time limit passed");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let st = supervisor::wait_timeout(&mut child, Duration::from_secs(10), &what)?;
        let err = std::fs::read_to_string(&errlog).unwrap_or_default();
        if !st.success() {
            bail!("trng_test.py --source {} exited {st}:\n{}", src.name(), err.trim());
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&stats)?).context("the tool's --stats-json")?;
        let got = std::fs::metadata(&out)?.len();
        if got != bytes || v["bytes"].as_u64() != Some(bytes) || v["frames"].as_u64() != Some(a.frames as u64) {
            bail!("trng_test.py --source {}: {got} bytes written, stats {v}", src.name());
        }
        lines.drain()?;
        let h = bits_per_byte(&std::fs::read(&out)?);
        if h < MIN_BITS_PER_BYTE {
            bail!("trng_test.py --source {}: the frames' bytes have {h:.4} bits/byte of empirical entropy (< {MIN_BITS_PER_BYTE}): not the simulated source's output", src.name());
        }
        results.push(SourceResult {
            source: src,
            frames: a.frames as u64,
            wall_s: v["seconds"].as_f64().unwrap_or(0.0),
            fill_cycles: Vec::new(),
            bits_per_byte: h,
        });
    }
    // device cycles per frame: each `fill mode=M` line to the next `published` line
    let fill = format!("{} fill mode=", T::DEVICE_MARKER);
    let publ = format!("{} published", T::DEVICE_MARKER);
    let aband = format!("{} abandoned", T::DEVICE_MARKER);
    let mut open: Option<(u64, u32)> = None;
    let mut abandoned = 0;
    for (c, t) in lines.seen() {
        if let Some(m) = t.split_once(&fill).and_then(|(_, m)| m.trim().parse::<u32>().ok()) {
            open = Some((c, m));
        } else if t.contains(&aband) {
            open = None;
            abandoned += 1;
        } else if t.contains(&publ) {
            if let Some((c0, m)) = open.take() {
                if let Some(r) = results.iter_mut().find(|r| mode_of(r.source) == m) {
                    r.fill_cycles.push(c - c0);
                }
            }
        }
    }
    Ok((boot, results, abandoned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_gate() {
        // uniform bytes pass; zeros, the poison word, one repeated word do not
        let uniform: Vec<u8> =
            (0..T::BUFFER_BYTES).map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_right(13) as u8).collect();
        assert!(bits_per_byte(&uniform) > MIN_BITS_PER_BYTE, "{}", bits_per_byte(&uniform));
        assert_eq!(bits_per_byte(&vec![0u8; 4096]), 0.0);
        let poison: Vec<u8> = std::iter::repeat(0xDEAD_BEEFu32.to_le_bytes()).take(1024).flatten().collect();
        assert!((bits_per_byte(&poison) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_step_streams_a_raw_frame() {
        assert!(STEP_SOURCES.iter().any(|&s| mode_of(s) != T::modes::CPRNG as u32), "the step streams a raw frame");
    }
}
