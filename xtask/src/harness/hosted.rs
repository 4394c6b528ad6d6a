//! Launcher for hosted Xous systems (docs/hosted.md).
//!
//! ```ignore
//! let bins = xous::ensure_built(false)?;                // cached kernel + base services
//! let dir = xous::build_programs(&["hosted-tests"], false)?;
//! let mut sys = Launch::new(&bins, Flavor::Patched)
//!     .program(dir.join("kernel-probe").display().to_string() + " ready")
//!     .start()?;
//! sys.wait_marker("PROBE-READY", Duration::from_secs(10))?;
//! sys.stop();                                            // or Drop
//! ```
//!
//! The kernel runs in its own process group (every program it spawns inherits it), with
//! PR_SET_PDEATHSIG so it dies with xtask. Its stdout and stderr (shared by every program) are
//! captured line by line; `wait_*` helpers consume them with a deadline. Dropping a `Hosted`
//! kills the whole group and reaps it.

use crate::build::xous::{Flavor, XousBins};
use crate::supervisor;
use crate::util;
use crate::util::shell_quote;
use anyhow::{anyhow, bail, Result};
use std::io::BufRead;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use verdict::Verdict;

/// Which pipe a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One captured output line.
#[derive(Clone, Debug)]
pub struct Line {
    pub text: String,
    /// When xtask read it (relative to `Hosted::started`).
    pub at: Instant,
}

/// What to launch. Programs are shell command lines handed to the kernel, which starts each
/// with `sh -c` (so `VAR=x prog arg` works) in this order.
#[derive(Clone, Debug)]
pub struct Launch {
    pub kernel: PathBuf,
    pub programs: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Copy every line to our own stdout/stderr as it arrives (interactive `run`, `--verbose`).
    pub echo: bool,
    /// Fixed kernel address (XOUS_LISTEN_ADDR); default: a random free port.
    pub listen_addr: Option<String>,
    /// 1-based positions in `programs` of the programs that may shut the system down (the
    /// system's own processes and a run's harness; `system_program`). The patched kernel
    /// refuses Shutdown to every other process (kernel-patches/0006, docs/security.md).
    pub may_shut_down: Vec<usize>,
    /// The raw `XOUS_SHUTDOWN_ALLOWED` text instead of the one `may_shut_down` gives: only for
    /// the kernel test of its parsing of malformed values.
    pub shutdown_allowed_raw: Option<String>,
    /// Run the kernel and every program on this one host CPU (their affinity, inherited by each
    /// process the kernel starts); `None`: wherever the host schedules them.
    pub cpu: Option<usize>,
}

/// The patched hosted kernel's environment variable: the command-line positions of the
/// programs allowed to shut the system down (kernel-patches/0006-hosted-shutdown-privilege).
pub const SHUTDOWN_ALLOWED_ENV: &str = "XOUS_SHUTDOWN_ALLOWED";

impl Launch {
    /// The given kernel flavour plus the base services (xous-log, xous-names, xous-ticktimer).
    pub fn new(bins: &XousBins, flavor: Flavor) -> Self {
        let mut l = Launch::bare(bins.kernel(flavor));
        for s in &bins.services {
            l.programs.push(shell_quote(s));
        }
        l
    }

    /// Only the kernel, no base services.
    pub fn bare(kernel: &Path) -> Self {
        Launch {
            kernel: kernel.to_path_buf(),
            programs: vec![],
            env: vec![],
            echo: false,
            listen_addr: None,
            may_shut_down: vec![],
            shutdown_allowed_raw: None,
            cpu: None,
        }
    }

    /// Add a program (a shell command line): an ordinary process, refused Shutdown.
    pub fn program(mut self, cmdline: impl Into<String>) -> Self {
        self.programs.push(cmdline.into());
        self
    }

    /// Add a program that may shut the system down: one of the system's own processes
    /// (`ctx::SYSTEM_BINS`) or the harness program that ends a test run.
    pub fn system_program(mut self, cmdline: impl Into<String>) -> Self {
        self.programs.push(cmdline.into());
        self.may_shut_down.push(self.programs.len());
        self
    }

    /// Environment variable for the kernel and (inherited) every program.
    pub fn env(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    pub fn echo(mut self, on: bool) -> Self {
        self.echo = on;
        self
    }

    /// Keep the whole system on one host CPU (`Some`), or let the host place it (`None`).
    pub fn cpu(mut self, cpu: Option<usize>) -> Self {
        self.cpu = cpu;
        self
    }

    pub fn start(self) -> Result<Hosted> {
        supervisor::become_subreaper();
        let mut cmd = Command::new(&self.kernel);
        cmd.args(&self.programs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .current_dir(util::root());
        if let Some(a) = &self.listen_addr {
            cmd.env("XOUS_LISTEN_ADDR", a);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        // set last: the program list decides, never an inherited or caller-given value
        let allowed: Vec<String> = self.may_shut_down.iter().map(|p| p.to_string()).collect();
        cmd.env(SHUTDOWN_ALLOWED_ENV, self.shutdown_allowed_raw.clone().unwrap_or_else(|| allowed.join(",")));
        if let Some(cpu) = self.cpu {
            pin_to_cpu(&mut cmd, cpu)?;
        }
        let started = Instant::now();
        let mut child = supervisor::spawn_grouped(&mut cmd)?;
        let pgid = child.id() as i32;
        let (tx, rx) = std::sync::mpsc::channel();
        let all = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        spawn_reader(out, Stream::Stdout, tx.clone(), all.clone(), self.echo);
        spawn_reader(err, Stream::Stderr, tx, all.clone(), self.echo);
        Ok(Hosted { child: Some(child), pgid, rx, all, started, status: None })
    }
}

/// The first host CPU this process may run on: where a one-CPU system goes (an xtask started
/// under `taskset` keeps its system inside the set it was given).
pub fn first_allowed_cpu() -> Result<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
    }
    (0..libc::CPU_SETSIZE as usize)
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .ok_or_else(|| anyhow!("sched_getaffinity gave an empty CPU set"))
}

/// Make `cmd` (and every process it starts) run on host CPU `cpu` alone.
fn pin_to_cpu(cmd: &mut Command, cpu: usize) -> Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        bail!("CPU {cpu} is beyond the host's CPU set size ({})", libc::CPU_SETSIZE);
    }
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

fn spawn_reader(
    pipe: impl std::io::Read + Send + 'static,
    stream: Stream,
    tx: Sender<Line>,
    all: Arc<Mutex<Vec<String>>>,
    echo: bool,
) {
    std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string();
            if echo {
                match stream {
                    Stream::Stdout => println!("{text}"),
                    Stream::Stderr => eprintln!("{text}"),
                }
            }
            all.lock().unwrap_or_else(|e| e.into_inner()).push(text.clone());
            if tx.send(Line { text, at: Instant::now() }).is_err() {
                // Nobody listens any more; keep draining so programs never block on a full pipe.
            }
        }
    });
}

/// What a harness reads from a hosted system's output (`Hosted::next_report`).
#[derive(Debug)]
pub enum Report {
    /// A program's or a step's verdict.
    Verdict(Verdict),
    /// A Rust panic message of any process (its caller may now hang).
    Panic(String),
    /// Another line the caller asked for.
    Line(String),
}

/// Does the line report a panic (a process's or the kernel's)?
pub fn is_panic(line: &str) -> bool {
    line.contains("panicked at") || line.contains("Panic Details")
}

/// A running hosted system (kernel + the programs it spawned, one process group).
pub struct Hosted {
    child: Option<Child>,
    pgid: i32,
    rx: Receiver<Line>,
    all: Arc<Mutex<Vec<String>>>,
    /// When the kernel was spawned.
    pub started: Instant,
    status: Option<ExitStatus>,
}

impl Hosted {
    /// Process group id (= kernel pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Every line captured so far (both streams, arrival order).
    pub fn lines(&self) -> Vec<String> {
        self.all.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The last `n` captured lines, for failure reports.
    pub fn tail(&self, n: usize) -> String {
        let l = self.lines();
        l[l.len().saturating_sub(n)..].join("\n")
    }

    /// Wait for the next line satisfying `pred` (lines before it are consumed). Fails on timeout
    /// or when the kernel's output ends first.
    pub fn wait_line(&mut self, timeout: Duration, what: &str, mut pred: impl FnMut(&str) -> bool) -> Result<Line> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) if pred(&line.text) => return Ok(line),
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => bail!("timed out after {timeout:?} waiting for {what}"),
                Err(RecvTimeoutError::Disconnected) => bail!("hosted system output ended while waiting for {what}"),
            }
        }
    }

    /// Wait for a line containing `marker`.
    pub fn wait_marker(&mut self, marker: &str, timeout: Duration) -> Result<Line> {
        let m = marker.to_string();
        self.wait_line(timeout, &format!("{marker:?}"), move |l| l.contains(&m))
    }

    /// The next report in the output: a verdict line (libs/verdict, any subject), a panic, or a
    /// line for which `also` holds. A malformed verdict line is an error, not skipped.
    pub fn next_report(&mut self, timeout: Duration, what: &str, also: impl Fn(&str) -> bool) -> Result<Report> {
        let line = self.wait_line(timeout, what, |l| Verdict::parse(l).is_some() || is_panic(l) || also(l))?.text;
        match Verdict::parse(&line) {
            Some(Ok(v)) => Ok(Report::Verdict(v)),
            Some(Err(e)) => bail!("malformed verdict line ({e}): {line:?}"),
            None if is_panic(&line) => Ok(Report::Panic(line)),
            None => Ok(Report::Line(line)),
        }
    }

    /// The next verdict whose subject satisfies `subject` (a panic first is an error).
    pub fn wait_verdict(&mut self, timeout: Duration, what: &str, subject: impl Fn(&str) -> bool) -> Result<Verdict> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_report(deadline.saturating_duration_since(Instant::now()), what, |_| false)? {
                Report::Verdict(v) if subject(&v.subject) => return Ok(v),
                Report::Panic(l) => bail!("panic in the hosted system while waiting for {what}: {l}"),
                _ => {}
            }
        }
    }

    /// Non-blocking: has the kernel exited? (then its status)
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>> {
        if self.status.is_none() {
            if let Some(c) = self.child.as_mut() {
                self.status = c.try_wait()?;
            }
        }
        Ok(self.status)
    }

    /// Wait for the kernel to exit by itself (e.g. after a Shutdown syscall), then check that no
    /// process of the group is left within the rest of `timeout`. On timeout everything is killed
    /// and an error returned. Returns the kernel's exit status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(st) = self.try_status()? {
                break st;
            }
            if Instant::now() > deadline {
                self.stop();
                bail!("kernel did not exit within {timeout:?} (process group killed)");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        loop {
            supervisor::reap_group(self.pgid);
            if !supervisor::group_alive(self.pgid) {
                break;
            }
            if Instant::now() > deadline {
                self.stop();
                bail!(
                    "kernel exited ({status}) but processes of its group were still alive after {timeout:?} (killed)"
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        supervisor::unregister_group(self.pgid);
        // the output readers end at EOF: wait for them, so that `lines()` holds everything the
        // processes printed (the kernel can exit before its last line was read)
        loop {
            match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100)))
            {
                Ok(_) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    bail!("kernel exited ({status}) but its output did not end within {timeout:?}")
                }
            }
        }
        Ok(status)
    }

    /// Stop everything: SIGTERM to the group, up to 2 s grace, SIGKILL, reap. Idempotent.
    pub fn stop(&mut self) {
        let pgid = self.pgid;
        if supervisor::group_alive(pgid) {
            supervisor::signal_group(pgid, libc::SIGTERM);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(2) {
                let _ = self.try_status();
                supervisor::reap_group(pgid);
                if !supervisor::group_alive(pgid) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            supervisor::signal_group(pgid, libc::SIGKILL);
        }
        if let Some(c) = self.child.as_mut() {
            if self.status.is_none() {
                self.status = c.wait().ok();
            }
        }
        supervisor::reap_group(pgid);
        supervisor::unregister_group(pgid);
    }
}

impl Drop for Hosted {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The failed verdicts and the panics among `lines` (for a failure report).
pub fn failed_verdicts(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| is_panic(l) || matches!(Verdict::parse(l), Some(Ok(v)) if v.status == verdict::Status::Fail))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_programs_are_passed_by_command_line_position() {
        // "kernel" = sh: its arguments are the program list; the script prints what it got
        let mut sys = Launch::bare(Path::new("/bin/sh"))
            .env(SHUTDOWN_ALLOWED_ENV, "1,2,3")
            .program("-c")
            .system_program("echo allowed=$XOUS_SHUTDOWN_ALLOWED")
            .start()
            .unwrap();
        // position 2 (the script), never the caller's wider value
        sys.wait_marker("allowed=2", Duration::from_secs(10)).unwrap();
        sys.stop();
    }

    #[test]
    fn shell_quote_leaves_plain_paths_and_quotes_the_rest() {
        assert_eq!(shell_quote(Path::new("/a/b-c_d.e")), "/a/b-c_d.e");
        assert_eq!(shell_quote(Path::new("/a b")), "'/a b'");
        assert_eq!(shell_quote(Path::new("it's")), "'it'\\''s'");
        assert_eq!(shell_quote(Path::new("")), "''");
        assert_eq!(shell_quote(Path::new("$(rm -rf /)")), "'$(rm -rf /)'");
    }

    #[test]
    fn launcher_captures_lines_and_kills_the_group_on_timeout() {
        // `sh` stands in for the kernel: it prints, starts a grandchild and hangs.
        let mut sys = Launch::bare(Path::new("/bin/sh"))
            .program("-c")
            .program("echo hello; sleep 30 & echo started; sleep 30")
            .start()
            .unwrap();
        assert!(sys.wait_marker("hello", Duration::from_secs(5)).is_ok());
        assert!(sys.wait_marker("started", Duration::from_secs(5)).is_ok());
        let e = sys.wait_marker("never printed", Duration::from_millis(200)).unwrap_err();
        assert!(format!("{e}").contains("never printed"), "{e}");
        let e = sys.wait_exit(Duration::from_millis(300)).unwrap_err();
        assert!(format!("{e}").contains("did not exit"), "{e}");
        assert!(!supervisor::group_alive(sys.pgid()), "group left behind");
    }

    #[test]
    fn wait_exit_reports_clean_exit() {
        let mut sys = Launch::bare(Path::new("/bin/sh")).program("-c").program("echo bye").start().unwrap();
        let st = sys.wait_exit(Duration::from_secs(5)).unwrap();
        assert!(st.success());
        assert!(sys.lines().iter().any(|l| l == "bye"));
    }

    #[test]
    fn reports_verdicts_panics_and_malformed_verdict_lines() {
        let script = "echo 'VERDICT a BEGIN'; echo 'prefix: VERDICT a FAIL n=1 -- why'; \
                      echo 'other'; echo \"thread 'main' panicked at x.rs:1\"; echo 'VERDICT b PASS'; \
                      echo 'VERDICT c maybe'; sleep 30";
        let mut sys = Launch::bare(Path::new("/bin/sh")).program("-c").program(script).start().unwrap();
        let t = Duration::from_secs(5);
        let v = sys.wait_verdict(t, "a FAIL", |s| s == "a").unwrap();
        assert_eq!(v.status, verdict::Status::Begin);
        match sys.next_report(t, "a FAIL", |_| false).unwrap() {
            Report::Verdict(v) => assert_eq!((v.passed(), v.num("n"), v.detail.as_str()), (false, Some(1), "why")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(sys.next_report(t, "other", |l| l == "other").unwrap(), Report::Line(l) if l == "other"));
        // a panic before the wanted verdict fails the wait
        let e = sys.wait_verdict(t, "b", |s| s == "b").unwrap_err();
        assert!(format!("{e}").contains("panic"), "{e}");
        assert!(matches!(sys.next_report(t, "b", |_| false).unwrap(), Report::Verdict(v) if v.passed()));
        let e = sys.next_report(t, "c", |_| false).unwrap_err();
        assert!(format!("{e}").contains("malformed verdict"), "{e}");
        assert_eq!(failed_verdicts(&sys.lines()).len(), 2, "{:?}", sys.lines());
        sys.stop();
    }
}
