//! The one driver of a simulation process, used by every simulated-hardware harness: the
//! simulated Precursor's runner (precursor.rs: `smoke_run`, `sim-run`, the TRNG's simulated
//! tester) and the LiteX SoC's Verilated binary (soc.rs: firmware runs).
//!
//! * [`Sim::spawn`] starts the process in its own process group (registered with the
//!   supervisor, so Ctrl-C and a step's timeout kill it), its stdout piped and read line by line
//!   on a reader thread (each line echoed and logged as it arrives, if asked).
//! * [`Sim::wait_for`] consumes lines until one gives a value, under a deadline; a line
//!   matching one of the run's failure patterns, the end of the output or the deadline stop it
//!   with a [`Stop`] that the caller turns into its own message. [`Sim::drain`] checks the
//!   lines printed meanwhile without waiting.
//! * [`Sim::wait_exit`] lets the process finish under a time limit; [`Sim::stop`] (and Drop)
//!   ends it: SIGTERM to the group, a grace, SIGKILL, reap.
//! * The lines consumed are kept ([`Sim::lines`]) and the last ones shown on failure
//!   ([`Sim::tail`]).

use crate::supervisor;
use anyhow::{bail, Context, Result};
use regex::Regex;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where each output line goes as it arrives, besides the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Echo {
    #[default]
    Off,
    /// to our stdout, as the simulator printed it
    Stdout,
    /// to our stderr, indented (`  | line`)
    Stderr,
}

/// How to run a simulation process.
#[derive(Default)]
pub struct Options {
    pub echo: Echo,
    /// Every line is also written here.
    pub log: Option<PathBuf>,
    /// Regexes of lines that fail every wait (matched anywhere in the line).
    pub fail: Vec<String>,
}

/// Why a wait ended without its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The deadline passed.
    Timeout,
    /// The process closed its output (exited).
    Ended,
    /// A line matched a failure pattern.
    Failed(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Stop::Timeout => write!(f, "timed out"),
            Stop::Ended => write!(f, "the simulation ended"),
            Stop::Failed(l) => write!(f, "failure line: {l}"),
        }
    }
}

impl std::error::Error for Stop {}

/// How many of the last lines [`Sim::tail`] shows.
const TAIL: usize = 20;

/// A running simulation process (leader of its own process group).
pub struct Sim {
    what: String,
    child: Child,
    pgid: i32,
    rx: Receiver<String>,
    reader: Option<JoinHandle<()>>,
    fail: Vec<Regex>,
    lines: Vec<String>,
    tail: VecDeque<String>,
}

/// Compile failure patterns, naming a bad one.
pub fn patterns(p: &[impl AsRef<str>]) -> Result<Vec<Regex>> {
    p.iter().map(|s| Regex::new(s.as_ref()).with_context(|| format!("failure pattern {:?}", s.as_ref()))).collect()
}

impl Sim {
    /// Start `cmd` (stdout piped; stdin closed; stderr as `cmd` says), `what` naming it in errors.
    pub fn spawn(cmd: &mut Command, what: &str, opts: Options) -> Result<Sim> {
        let fail = patterns(&opts.fail)?;
        let mut log = match &opts.log {
            Some(p) => Some(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?),
            None => None,
        };
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        let mut child = supervisor::spawn_grouped(cmd).with_context(|| what.to_string())?;
        let pgid = child.id() as i32;
        let out = child.stdout.take().context("the simulation's stdout")?;
        let (tx, rx) = channel();
        let echo = opts.echo;
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                if let Some(f) = log.as_mut() {
                    let _ = writeln!(f, "{line}");
                }
                match echo {
                    Echo::Off => {}
                    Echo::Stdout => println!("{line}"),
                    Echo::Stderr => eprintln!("  | {line}"),
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Sim {
            what: what.into(),
            child,
            pgid,
            rx,
            reader: Some(reader),
            fail,
            lines: Vec::new(),
            tail: VecDeque::new(),
        })
    }

    fn take(&mut self, line: String) -> Result<String, Stop> {
        self.lines.push(line.clone());
        self.tail.push_back(line.clone());
        if self.tail.len() > TAIL {
            self.tail.pop_front();
        }
        if self.fail.iter().any(|r| r.is_match(&line)) {
            return Err(Stop::Failed(line));
        }
        Ok(line)
    }

    /// Consume lines until `want` gives a value for one; stop at a failure line, the end of
    /// the output or `deadline`.
    pub fn wait_for<T>(&mut self, deadline: Instant, mut want: impl FnMut(&str) -> Option<T>) -> Result<T, Stop> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left.min(Duration::from_millis(500))) {
                Ok(line) => {
                    let line = self.take(line)?;
                    if let Some(v) = want(&line) {
                        return Ok(v);
                    }
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(RecvTimeoutError::Timeout) => return Err(Stop::Timeout),
                Err(RecvTimeoutError::Disconnected) => return Err(Stop::Ended),
            }
        }
    }

    /// Consume the lines printed meanwhile; fail on a failure line.
    pub fn drain(&mut self) -> Result<(), Stop> {
        loop {
            match self.rx.try_recv() {
                Ok(line) => {
                    self.take(line)?;
                }
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return Ok(()),
            }
        }
    }

    /// Consume the output to its end and wait for the process, at most `timeout` in all; past
    /// it the group is killed and this fails. Failure lines are kept, not judged: the caller
    /// (or the process's own verdict) does.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.wait_for(deadline, |_| None::<()>) {
                Err(Stop::Ended) => break,
                Err(Stop::Timeout) => {
                    self.stop(Duration::from_millis(300));
                    bail!("{}: timed out after {timeout:?} (process group killed)", self.what);
                }
                _ => {}
            }
        }
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
        let st = supervisor::wait_timeout(&mut self.child, left, &self.what)?;
        self.join_reader();
        Ok(st)
    }

    /// End the process: SIGTERM to its group, up to `grace` for it to exit, then SIGKILL; reap
    /// the group. Lines still unread are kept.
    pub fn stop(&mut self, grace: Duration) {
        if self.child.try_wait().ok().flatten().is_none() {
            supervisor::signal_group(self.pgid, libc::SIGTERM);
            let t0 = Instant::now();
            while t0.elapsed() < grace && self.child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        supervisor::signal_group(self.pgid, libc::SIGKILL);
        let _ = self.child.wait();
        supervisor::reap_group(self.pgid);
        supervisor::unregister_group(self.pgid);
        self.join_reader();
        while let Ok(l) = self.rx.try_recv() {
            let _ = self.take(l);
        }
    }

    /// Wait (at most 2 s: a process outside the group may hold the pipe) for the reader to
    /// see the end of the output.
    fn join_reader(&mut self) {
        if let Some(r) = self.reader.take() {
            let t0 = Instant::now();
            while !r.is_finished() && t0.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if r.is_finished() {
                let _ = r.join();
            }
        }
    }

    /// Every line consumed so far.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The last lines consumed, one per line, indented.
    pub fn tail(&self) -> String {
        self.tail.iter().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if self.reader.is_some() {
            self.stop(Duration::ZERO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn waits_for_a_line_and_keeps_what_it_read() {
        let mut s = Sim::spawn(&mut sh("echo one; echo 'value 42'; echo three"), "sh", Options::default()).unwrap();
        let d = Instant::now() + Duration::from_secs(10);
        let v = s.wait_for(d, |l| l.strip_prefix("value ").map(|v| v.parse::<u32>().unwrap())).unwrap();
        assert_eq!(v, 42);
        assert_eq!(s.wait_for(d, |_| None::<()>), Err(Stop::Ended));
        assert_eq!(s.lines(), ["one", "value 42", "three"]);
        assert!(s.wait_exit(Duration::from_secs(10)).unwrap().success());
    }

    #[test]
    fn a_failure_line_stops_the_wait() {
        let opts = Options { fail: vec![r"VERDICT \S+ FAIL".into()], ..Options::default() };
        let mut s = Sim::spawn(&mut sh("echo 'VERDICT x FAIL why'; echo READY; sleep 30"), "sh", opts).unwrap();
        let r = s.wait_for(Instant::now() + Duration::from_secs(10), |l| (l == "READY").then_some(()));
        assert_eq!(r, Err(Stop::Failed("VERDICT x FAIL why".into())));
        assert!(s.tail().contains("VERDICT x FAIL"));
    }

    #[test]
    fn a_silent_process_times_out_and_its_group_is_killed() {
        let pidfile = crate::util::target_dir().join(format!("xtask-driver-test-{}", std::process::id()));
        let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let mut s = Sim::spawn(&mut sh(&script), "sh", Options::default()).unwrap();
        let t0 = Instant::now();
        assert_eq!(s.wait_for(Instant::now() + Duration::from_millis(300), |_| Some(())), Err(Stop::Timeout));
        assert!(t0.elapsed() < Duration::from_secs(5));
        let e = s.wait_exit(Duration::from_millis(200)).unwrap_err();
        assert!(format!("{e:#}").contains("timed out"), "{e:#}");
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        let _ = std::fs::remove_file(&pidfile);
        // the background sleep was in the group: gone (or a zombie for init to collect)
        let running = || {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            !state.is_empty() && !state.contains(") Z ")
        };
        let t0 = Instant::now();
        while running() && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!running(), "the group's sleep still runs");
    }

    #[test]
    fn a_bad_failure_pattern_is_refused() {
        let opts = Options { fail: vec!["(".into()], ..Options::default() };
        let e = Sim::spawn(&mut sh("true"), "sh", opts).err().unwrap();
        assert!(format!("{e:#}").contains("failure pattern"), "{e:#}");
    }
}
