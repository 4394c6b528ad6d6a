//! PC-sample profiles of the simulated Precursor (docs/sim.md, "Profiling"): the samples the
//! simulator writes (gateware/precursor/sim_finish.v: every `period` cycles the PC of the
//! instruction in write-back, the privilege level and satp's ASID, which Xous sets to the PID)
//! attributed to functions: user-mode samples through the process's ELF symbols (PID from the
//! ASID, ELF from the layout's PID order), supervisor-mode samples through the kernel's
//! (kernel time is also counted under the process whose address space it ran in). The tables
//! per process and function, `profile.json`, and the per-call split the bench reports.
//! `cargo xtask sim-profile` is areas/sim/profile.rs.

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use object::{Object, ObjectSymbol, SymbolKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::harness::precursor::SIM_CLK_HZ;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Window {
    /// The self-test's timed X25519 calls (from its timing-start line to its result line).
    Timing,
    /// The whole run, from reset to the power-off.
    All,
}

/// One process's symbols: function start, end and demangled name, sorted by start.
#[derive(Debug, Default)]
pub struct Symbols {
    funcs: Vec<(u32, u32, String)>,
}

impl Symbols {
    pub fn from_elf(path: &Path) -> Result<Symbols> {
        let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let file = object::File::parse(&*data).with_context(|| format!("{}: not an ELF file", path.display()))?;
        let mut funcs: Vec<(u32, u32, String)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
            .filter_map(|s| {
                let name = s.name().ok()?;
                // the assembler's mapping symbols ($x, $xrv32i2p1...) are not functions
                if name.starts_with('$') || name.is_empty() {
                    return None;
                }
                let start = s.address() as u32;
                Some((start, start.wrapping_add(s.size() as u32), format!("{:#}", rustc_demangle::demangle(name))))
            })
            .collect();
        if funcs.is_empty() {
            bail!("{}: no function symbols (a stripped build cannot be profiled)", path.display());
        }
        funcs.sort();
        funcs.dedup_by_key(|f| f.0);
        Ok(Symbols { funcs })
    }

    #[cfg(test)]
    fn from_list(funcs: &[(u32, u32, &str)]) -> Symbols {
        let mut funcs: Vec<(u32, u32, String)> = funcs.iter().map(|(a, b, n)| (*a, *b, n.to_string())).collect();
        funcs.sort();
        Symbols { funcs }
    }

    /// The function holding `pc`; a PC past the end of the nearest symbol (code the symbol
    /// table does not cover) is named after that symbol with a `+` (never silently merged).
    pub fn lookup(&self, pc: u32) -> String {
        let i = self.funcs.partition_point(|f| f.0 <= pc);
        if i == 0 {
            return format!("?{pc:#010x}");
        }
        let (start, end, name) = &self.funcs[i - 1];
        if end > start && pc >= *end {
            return format!("{name}+?");
        }
        name.clone()
    }
}

/// One CPU sample: cycle, PC, privilege (0 user, 1 supervisor, 3 machine), ASID (= PID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub cycle: u64,
    pub pc: u32,
    pub privilege: u8,
    pub asid: u16,
}

/// Parse the simulator's sample file ("<cycle> <pc hex> <priv> <asid>" per line).
pub fn parse_samples(text: &str) -> Result<Vec<Sample>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad =
            || anyhow::anyhow!("profile samples, line {}: {line:?} is not \"<cycle> <pc hex> <priv> <asid>\"", n + 1);
        if f.len() != 4 {
            // the simulator may be killed mid-line: only the last line may be cut short
            if n + 1 == text.lines().count() && !text.ends_with('\n') {
                break;
            }
            return Err(bad());
        }
        let s = Sample {
            cycle: f[0].parse().map_err(|_| bad())?,
            pc: u32::from_str_radix(f[1], 16).map_err(|_| bad())?,
            privilege: f[2].parse().map_err(|_| bad())?,
            asid: f[3].parse().map_err(|_| bad())?,
        };
        if ![0, 1, 3].contains(&s.privilege) {
            return Err(bad().context(format!("privilege {} is none of 0, 1, 3", s.privilege)));
        }
        if let Some(prev) = out.last() {
            let prev: &Sample = prev;
            if s.cycle <= prev.cycle {
                return Err(bad().context(format!("cycle {} after {}: samples out of order", s.cycle, prev.cycle)));
            }
        }
        out.push(s);
    }
    if out.is_empty() {
        bail!("profile samples: none (was the run profiled?)");
    }
    Ok(out)
}

/// The processes of a run: PID -> (name, symbols); the kernel is PID 1.
pub struct Image {
    pub kernel: Symbols,
    pub procs: BTreeMap<u16, (String, Symbols)>,
}

#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub user: u64,
    pub kernel: u64,
}

/// Where the samples of one window went.
#[derive(Debug, Default)]
pub struct Profile {
    pub samples: u64,
    /// by process name: user-mode and supervisor-mode samples in its address space
    pub by_process: BTreeMap<String, Counts>,
    /// by (process, "user"|"kernel", function)
    pub by_function: BTreeMap<(String, &'static str, String), u64>,
    /// samples in machine mode (the start stub) or under an ASID no process has
    pub other: u64,
}

pub fn analyse(samples: &[Sample], from: u64, to: u64, image: &Image) -> Profile {
    let mut p = Profile::default();
    for s in samples.iter().filter(|s| s.cycle >= from && s.cycle < to) {
        p.samples += 1;
        let Some((name, syms)) = image.procs.get(&s.asid) else {
            p.other += 1;
            continue;
        };
        let c = p.by_process.entry(name.clone()).or_default();
        let (mode, func) = match s.privilege {
            0 => {
                c.user += 1;
                ("user", syms.lookup(s.pc))
            }
            1 => {
                c.kernel += 1;
                ("kernel", image.kernel.lookup(s.pc))
            }
            _ => {
                p.other += 1;
                continue;
            }
        };
        *p.by_function.entry((name.clone(), mode, func)).or_default() += 1;
    }
    p
}

/// One row of a timeline: `samples` consecutive samples from `start` in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub samples: u64,
    pub process: String,
    pub mode: &'static str,
    pub function: String,
}

/// The samples in `from..to` as a timeline of spans.
pub fn trace(samples: &[Sample], from: u64, to: u64, image: &Image) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for s in samples.iter().filter(|s| s.cycle >= from && s.cycle < to) {
        let (process, mode, function) = match (image.procs.get(&s.asid), s.privilege) {
            (Some((n, syms)), 0) => (n.clone(), "user", syms.lookup(s.pc)),
            (Some((n, _)), 1) => (n.clone(), "kernel", image.kernel.lookup(s.pc)),
            (_, p) => (format!("asid {}", s.asid), if p == 3 { "machine" } else { "?" }, format!("{:#010x}", s.pc)),
        };
        match out.last_mut() {
            Some(l) if l.process == process && l.mode == mode && l.function == function => l.samples += 1,
            _ => out.push(Span { start: s.cycle, samples: 1, process, mode, function }),
        }
    }
    out
}

fn print_trace(spans: &[Span], period: u32) {
    println!("timeline (cycle, length in us at 100 MHz, process, mode, function):");
    for s in spans {
        let f: String = s.function.chars().take(100).collect();
        println!("{:>11} {:>7.2}  {:<16} {:<6} {f}", s.start, us(s.samples, period, 1), s.process, s.mode);
    }
}

/// What a profiled run leaves for analysis (run.json next to samples.txt).
pub struct RunInfo {
    pub isa: String,
    pub period: u32,
    pub calls: u64,
    timing: (u64, u64),
    end_cycle: u64,
    /// PID -> program ELF (PID 1: the kernel)
    elfs: Vec<(u16, String, PathBuf)>,
}

impl RunInfo {
    /// A run on the `isa` engine sampled every `period` cycles; the window `timing` (cycles)
    /// holds `calls` calls; `elfs`: PID, name and ELF of every program (PID 1: the kernel).
    pub fn new(
        isa: &str,
        period: u32,
        calls: u64,
        timing: (u64, u64),
        end_cycle: u64,
        elfs: Vec<(u16, String, PathBuf)>,
    ) -> RunInfo {
        RunInfo { isa: isa.to_string(), period, calls, timing, end_cycle, elfs }
    }
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "isa": self.isa, "period": self.period, "calls": self.calls,
            "timing": [self.timing.0, self.timing.1], "end_cycle": self.end_cycle,
            "programs": self.elfs.iter().map(|(pid, n, p)| serde_json::json!({"pid": pid, "name": n, "elf": p})).collect::<Vec<_>>(),
        })
    }
    pub fn from_json(v: &serde_json::Value) -> Result<RunInfo> {
        let u = |k: &str| v[k].as_u64().with_context(|| format!("run.json: no number {k:?}"));
        let t = v["timing"].as_array().filter(|a| a.len() == 2).context("run.json: no timing [from, to]")?;
        let mut elfs = Vec::new();
        for p in v["programs"].as_array().context("run.json: no programs")? {
            let pid = p["pid"].as_u64().context("run.json: a program without a pid")? as u16;
            let name = p["name"].as_str().context("run.json: a program without a name")?.to_string();
            let elf = PathBuf::from(p["elf"].as_str().context("run.json: a program without an elf")?);
            elfs.push((pid, name, elf));
        }
        Ok(RunInfo {
            isa: v["isa"].as_str().context("run.json: no isa")?.to_string(),
            period: u("period")? as u32,
            calls: u("calls")?,
            timing: (t[0].as_u64().context("run.json: timing")?, t[1].as_u64().context("run.json: timing")?),
            end_cycle: u("end_cycle")?,
            elfs,
        })
    }
}

pub fn out_dir() -> PathBuf {
    crate::build::sim_layout::sim_dir().join("profile")
}

/// The PID order of the layout (`sim_layout::build`: the kernel, the image's programs, then
/// the extra ones), checked against the names the layout wrote (`layout_dir`/layout.json).
pub fn programs(
    verbose: bool,
    extra: &[crate::build::power::Extra],
    layout_dir: &Path,
) -> Result<Vec<(u16, String, PathBuf)>> {
    // the same builds sim_layout::build laid out (cached: nothing is rebuilt)
    let power = crate::build::power::PowerPids::of_image(extra);
    let mut v = vec![(1u16, "kernel".to_string(), crate::build::device_xous::ensure_kernel(&power, verbose)?)];
    let mut paths = crate::build::image::image_programs(&power, &[], verbose)?;
    paths.extend(extra.iter().map(|e| e.elf.clone()));
    for (i, p) in paths.into_iter().enumerate() {
        let name = p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        v.push((i as u16 + 2, name, p));
    }
    let layout = layout_dir.join("layout.json");
    let l: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&layout).with_context(|| layout.display().to_string())?)?;
    for p in l["processes"].as_array().context("layout.json: no processes")? {
        let (pid, name) = (p["pid"].as_u64().unwrap_or(0) as u16, p["name"].as_str().unwrap_or(""));
        if !v.iter().any(|(q, n, _)| *q == pid && n == name) {
            bail!("layout.json has PID {pid} = {name:?}, which the profile's program list does not");
        }
    }
    Ok(v)
}

/// What to print of a profile.
pub struct Show {
    pub window: Window,
    pub top: usize,
    /// timeline: (cycles into the window, length)
    pub trace: Option<(u64, u64)>,
}

/// Analyse the samples of `dir` (a run described by `info`), print the tables (and the
/// timeline), write profile.json; returns the profile of the window.
pub fn report(dir: &Path, info: &RunInfo, show: &Show) -> Result<Profile> {
    let samples_path = dir.join("samples.txt");
    let samples =
        parse_samples(&std::fs::read_to_string(&samples_path).with_context(|| samples_path.display().to_string())?)?;
    let mut image = Image { kernel: Symbols::default(), procs: BTreeMap::new() };
    for (pid, name, elf) in &info.elfs {
        if *pid == 1 {
            image.kernel = Symbols::from_elf(elf)?;
        }
        image.procs.insert(*pid, (name.clone(), Symbols::from_elf(elf)?));
    }
    let (from, to, calls) = match show.window {
        Window::Timing => (info.timing.0, info.timing.1, info.calls),
        Window::All => (0, u64::MAX, 1),
    };
    let p = analyse(&samples, from, to, &image);
    if p.samples == 0 {
        bail!(
            "no samples in the window {from}..{to} (samples cover {}..{})",
            samples[0].cycle,
            samples[samples.len() - 1].cycle
        );
    }
    if let Some((start, n)) = show.trace {
        let t0 = from.saturating_add(start);
        print_trace(&trace(&samples, t0, t0.saturating_add(n), &image), info.period);
    }
    let json = print_and_json(&p, info, show, from, to.min(info.end_cycle.max(from)), calls);
    let out = dir.join("profile.json");
    std::fs::write(&out, serde_json::to_string_pretty(&json)? + "\n")?;
    eprintln!("sim-profile: {}", out.display());
    Ok(p)
}

/// Where one call's device time went, in microseconds per call (the bench's breakdown).
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// the engine server in its hw backend's `run` (the engine's own time, polled)
    pub engine_wait_us: f64,
    /// the engine server's other user-mode code (receive, decode, queue, operands, reply)
    pub server_us: f64,
    /// every supervisor-mode sample (syscalls, context switches, the lend), any process
    pub kernel_us: f64,
    /// the client's user-mode code
    pub client_us: f64,
    /// everything else (other processes' user mode)
    pub other_us: f64,
}

/// Split a profile of the timed calls by who ran (`client`: the client's process name).
pub fn split(p: &Profile, period: u32, calls: u64, client: &str) -> Split {
    let per = |n: u64| us(n, period, calls);
    let (mut wait, mut server, mut kernel, mut cl, mut other) = (0, 0, 0, 0, 0);
    for ((proc_, mode, func), n) in &p.by_function {
        match (proc_.as_str(), *mode) {
            (_, "kernel") => kernel += n,
            ("engine25519", _) if func.contains("HwEngine as") && func.ends_with("::run") => wait += n,
            ("engine25519", _) => server += n,
            (c, _) if c == client => cl += n,
            _ => other += n,
        }
    }
    Split {
        engine_wait_us: per(wait),
        server_us: per(server),
        kernel_us: per(kernel),
        client_us: per(cl),
        other_us: per(other + p.other),
    }
}

/// Device microseconds per call at the simulated SoC's 100 MHz for `n` samples.
fn us(n: u64, period: u32, calls: u64) -> f64 {
    n as f64 * period as f64 / calls as f64 / SIM_CLK_HZ * 1e6
}

fn print_and_json(p: &Profile, info: &RunInfo, a: &Show, from: u64, to: u64, calls: u64) -> serde_json::Value {
    let per = |n: u64| us(n, info.period, calls);
    let pct = |n: u64| 100.0 * n as f64 / p.samples as f64;
    println!(
        "sim-profile: engine {}, window {} ({from}..{to} cycles, {calls} call(s)), {} samples every {} cycles",
        info.isa,
        match a.window {
            Window::Timing => "timing",
            Window::All => "all",
        },
        p.samples,
        info.period
    );
    println!("{:<18} {:>8} {:>8} {:>12} {:>12}", "process", "user %", "kernel %", "user us/call", "kern us/call");
    let mut procs: Vec<(&String, &Counts)> = p.by_process.iter().collect();
    procs.sort_by_key(|(_, c)| std::cmp::Reverse(c.user + c.kernel));
    for (name, c) in &procs {
        println!(
            "{:<18} {:>8.1} {:>8.1} {:>12.1} {:>12.1}",
            name,
            pct(c.user),
            pct(c.kernel),
            per(c.user),
            per(c.kernel)
        );
    }
    if p.other > 0 {
        println!("{:<18} {:>8.1} (machine mode or no process)", "other", pct(p.other));
    }
    let mut funcs: Vec<(&(String, &'static str, String), &u64)> = p.by_function.iter().collect();
    funcs.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
    println!("\n{:>6} {:>9}  {:<16} {:<6} function", "%", "us/call", "process", "mode");
    for ((proc_, mode, func), n) in funcs.iter().take(a.top) {
        let f: String = func.chars().take(110).collect();
        println!("{:>6.1} {:>9.1}  {:<16} {:<6} {f}", pct(**n), per(**n), proc_, mode);
    }
    serde_json::json!({
        "isa": info.isa, "period": info.period, "window": [from, to], "calls": calls, "samples": p.samples,
        "us_per_call_total": per(p.samples),
        "processes": procs.iter().map(|(n, c)| serde_json::json!({"name": n, "user_samples": c.user, "kernel_samples": c.kernel,
            "user_us_per_call": per(c.user), "kernel_us_per_call": per(c.kernel)})).collect::<Vec<_>>(),
        "functions": funcs.iter().map(|((pr, m, f), n)| serde_json::json!({"process": pr, "mode": m, "function": f, "samples": n, "us_per_call": per(**n)})).collect::<Vec<_>>(),
        "other_samples": p.other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> Image {
        let kernel = Symbols::from_list(&[
            (0xffd0_0000, 0xffd0_0100, "kernel::syscall"),
            (0xffd0_0100, 0xffd0_0180, "kernel::irq"),
        ]);
        let mut procs = BTreeMap::new();
        procs.insert(1, ("kernel".to_string(), Symbols::from_list(&[(0xffd0_0000, 0xffd0_0100, "kernel::syscall")])));
        procs.insert(
            6,
            ("engine25519".to_string(), Symbols::from_list(&[(0x1000, 0x1040, "hw::run"), (0x1040, 0x1080, "poll")])),
        );
        Image { kernel, procs }
    }

    #[test]
    fn samples_are_attributed_to_process_mode_and_function() {
        let s = parse_samples(
            "10 00001004 0 6\n20 00001044 0 6\n30 ffd00104 1 6\n40 ffd00004 1 1\n50 00000010 3 0\n60 00001000 0 9\n",
        )
        .unwrap();
        let p = analyse(&s, 0, 100, &image());
        assert_eq!(p.samples, 6);
        assert_eq!(p.other, 2, "machine mode and an unknown ASID");
        let e = &p.by_process["engine25519"];
        assert_eq!((e.user, e.kernel), (2, 1));
        assert_eq!(p.by_function[&("engine25519".into(), "kernel", "kernel::irq".into())], 1);
        assert_eq!(p.by_function[&("engine25519".into(), "user", "poll".into())], 1);
        // the window is half-open, by cycle
        assert_eq!(analyse(&s, 20, 40, &image()).samples, 2);
    }

    #[test]
    fn trace_collapses_consecutive_samples_in_one_place() {
        let s = parse_samples("10 00001004 0 6\n20 00001008 0 6\n30 ffd00004 1 6\n40 00001004 0 6\n50 00001044 0 6\n")
            .unwrap();
        let t = trace(&s, 0, 45, &image());
        let rows: Vec<(u64, u64, &str, &str)> =
            t.iter().map(|x| (x.start, x.samples, x.mode, x.function.as_str())).collect();
        assert_eq!(
            rows,
            vec![(10, 2, "user", "hw::run"), (30, 1, "kernel", "kernel::syscall"), (40, 1, "user", "hw::run")]
        );
    }

    #[test]
    fn split_sorts_samples_by_who_ran() {
        let mut p = Profile::default();
        for (proc_, mode, func, n) in [
            (
                "engine25519",
                "user",
                "<engine25519_server::hw::HwEngine as engine25519_server::backend::EngineBackend>::run",
                40,
            ),
            ("engine25519", "user", "engine25519::receive_loop", 10),
            ("engine25519", "kernel", "kernel::syscall", 5),
            ("device-selftest", "user", "x25519_detailed", 3),
            ("device-selftest", "kernel", "kernel::lend", 2),
            ("xous-log", "user", "reader", 1),
        ] {
            p.by_function.insert((proc_.into(), mode, func.into()), n);
            p.samples += n;
        }
        // 100 cycles per sample, 1 call: 1 us per sample
        let s = split(&p, 100, 1, "device-selftest");
        assert_eq!(s, Split { engine_wait_us: 40.0, server_us: 10.0, kernel_us: 7.0, client_us: 3.0, other_us: 1.0 });
    }

    #[test]
    fn malformed_run_json_is_refused_with_the_field() {
        let good = serde_json::json!({"isa": "v2", "period": 256, "calls": 20, "timing": [1, 2], "end_cycle": 3,
            "programs": [{"pid": 1, "name": "kernel", "elf": "/k"}]});
        assert!(RunInfo::from_json(&good).is_ok());
        for (field, value, want) in [
            ("timing", serde_json::json!([1]), "timing"),
            ("period", serde_json::json!("x"), "period"),
            ("programs", serde_json::json!([{"pid": 1}]), "name"),
            ("isa", serde_json::json!(7), "isa"),
        ] {
            let mut v = good.clone();
            v[field] = value;
            let e = format!("{:#}", RunInfo::from_json(&v).err().unwrap_or_else(|| panic!("{field} accepted")));
            assert!(e.contains(want), "{field}: {e}");
        }
    }

    #[test]
    fn lookup_names_gaps_and_addresses_below_every_symbol() {
        let s = Symbols::from_list(&[(0x100, 0x110, "a"), (0x200, 0x200, "b")]);
        assert_eq!(s.lookup(0x100), "a");
        assert_eq!(s.lookup(0x10f), "a");
        assert_eq!(s.lookup(0x110), "a+?");
        assert_eq!(s.lookup(0x2ff), "b", "a symbol without a size covers up to the next one");
        assert_eq!(s.lookup(0x50), "?0x00000050");
    }

    #[test]
    fn malformed_samples_are_refused_with_the_line() {
        for (text, want) in [
            ("", "none"),
            ("1 2 3\n", "line 1"),
            ("x 00001000 0 6\n", "line 1"),
            ("10 zz 0 6\n", "line 1"),
            ("10 00001000 2 6\n", "privilege 2"),
            ("10 00001000 0 6\n5 00001000 0 6\n", "out of order"),
            ("10 00001000 0 99999\n", "line 1"),
        ] {
            let e = format!("{:#}", parse_samples(text).unwrap_err());
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // a last line cut short by a killed simulator is dropped, not an error
        assert_eq!(parse_samples("10 00001000 0 6\n20 0000").unwrap().len(), 1);
    }

    #[test]
    fn per_call_microseconds_use_the_period_and_the_soc_clock() {
        // 100 samples x 256 cycles / 20 calls = 1280 cycles = 12.8 us at 100 MHz
        assert!((us(100, 256, 20) - 12.8).abs() < 1e-9);
    }
}
