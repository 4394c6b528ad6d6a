//! The chat app (apps/ratchet-demo, docs/chat.md) in xtask: `cargo xtask run` (the interactive UI in
//! this terminal through a pty bridge), the scripted chat of `cargo xtask smoke`, the test steps
//! (kill -9 recovery, the tmux test) and the bench provider.
//!
//! How input reaches a hosted program: the kernel starts every program with `sh -c` and no
//! stdin. xtask opens a pseudo-terminal, starts Alice as `chat ... <PTY >PTY` (so crossterm sees
//! a real terminal on stdin/stdout), puts its own terminal in raw mode and copies bytes both
//! ways (and the window size). The user's terminal is only ever changed by xtask, which restores
//! it on every exit path: normal end, Ctrl-C (a byte for the app, which shuts the system down;
//! if nothing stops within 5 s xtask stops everything), SIGTERM/SIGINT to xtask (the ctrlc
//! handler), an error, or a crash of any hosted program. Everything the hosted system prints
//! goes to target/chat/run.log, never over the UI.

pub mod device;

use std::io::{Read, Write};
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::build::xous::Flavor;
use crate::ctx::Ctx;
use crate::harness::hosted::{is_panic, Hosted, Launch};
use crate::steps::{step, BenchProvider, BenchResults, TestStep};
use crate::supervisor;
use crate::util;
use crate::util::shell_quote;
use verdict::Verdict;

/// Which DH device the chat runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    V1,
    V2,
    Software,
    /// The Verilated engine gateware, ISA v2 (engine server's rtl backend, docs/gateware.md).
    Rtl,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::V1 => "v1",
            Engine::V2 => "v2",
            Engine::Software => "software",
            Engine::Rtl => "rtl",
        }
    }
    /// The engine clock of this ISA, from spec/engine25519.toml.
    fn clock_hz(self) -> u64 {
        use engine25519_core::isa::Isa;
        match self {
            Engine::V1 => Isa::V1.info().eng_clk_hz,
            Engine::V2 | Engine::Software | Engine::Rtl => Isa::V2.info().eng_clk_hz,
        }
    }
    /// Environment for every process of the system: the engine server's backend/ISA/pacing and
    /// the chat programs' device description.
    fn env(self, pace: bool) -> Vec<(String, String)> {
        let mut v = vec![
            ("CHAT_ENGINE".to_string(), self.name().to_string()),
            ("CHAT_ENGINE_HZ".into(), self.clock_hz().to_string()),
        ];
        match self {
            Engine::V1 => v.push(("ENGINE25519_ISA".into(), "v1".into())),
            Engine::V2 => v.push(("ENGINE25519_ISA".into(), "v2".into())),
            Engine::Software => v.push(("ENGINE25519_BACKEND".into(), "software".into())),
            Engine::Rtl => {
                v.push(("ENGINE25519_BACKEND".into(), "rtl".into()));
                v.push(("ENGINE25519_ISA".into(), "v2".into()));
                v.extend(crate::build::gateware::rtl_backend_env());
            }
        }
        if pace && self != Engine::Software {
            v.push(("ENGINE25519_PACE_HZ".into(), self.clock_hz().to_string()));
        }
        if !pace {
            v.push(("CHAT_NO_PACE".into(), "1".into()));
        }
        v
    }
}

/// Options of one chat system.
#[derive(Debug, Clone)]
pub struct ChatOpts {
    pub engine: Engine,
    pub sync_dh: bool,
    pub pace: bool,
    pub store: PathBuf,
    /// Alice's extra arguments (`--script N`, `--bench N`, ...); empty = interactive.
    pub alice_args: Vec<String>,
    /// shell redirections for Alice (`<PTY >PTY`)
    pub alice_redirect: String,
    pub relay_args: Vec<String>,
}

pub fn default_store() -> PathBuf {
    util::target_dir().join("chat")
}

/// A hosted system: our servers, the relay, Bob, Alice.
pub fn launch(ctx: &Ctx, o: &ChatOpts, flavor: Flavor, extra: &[String], echo: bool) -> Result<Hosted> {
    let bins = ctx.xous()?.clone();
    let mut l =
        Launch::new(&bins, flavor).echo(echo).env("CHAT_STORE", o.store.display().to_string()).env("TRNG_TESTER", "0");
    for (k, v) in o.engine.env(o.pace) {
        l = l.env(k, v);
    }
    l = crate::system::add_servers(ctx, l)?;
    let q = |s: &str| shell_quote(Path::new(s));
    let relay_args: Vec<String> = o.relay_args.iter().map(|a| q(a)).collect();
    l = l.program(format!("{} {}", shell_quote(&ctx.program("chat-relay")?), relay_args.join(" ")));
    l = l.program(shell_quote(&ctx.program("chat-bob")?));
    let mut alice = shell_quote(&ctx.program("chat")?);
    if o.sync_dh {
        alice.push_str(" --sync-dh");
    }
    for a in &o.alice_args {
        alice.push(' ');
        alice.push_str(&q(a));
    }
    if !o.alice_redirect.is_empty() {
        alice.push(' ');
        alice.push_str(&o.alice_redirect);
    }
    // Alice is the session's front end: scripts and benches end the run with her `--shutdown`,
    // and quitting the interactive chat ends the hosted session; she may shut the system down
    l = l.system_program(alice);
    for p in extra {
        l = l.program(p.clone());
    }
    std::fs::create_dir_all(&o.store)?;
    l.start()
}

// ------------------------------------------------------------------------------ pty bridge

/// The user's terminal settings before raw mode, restored by [`restore_terminal`].
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);
static CTRL_C_AT_MS: AtomicU64 = AtomicU64::new(0);
static BRIDGE_ON: AtomicBool = AtomicBool::new(false);

/// Puts the user's terminal back as it was (idempotent; called from every exit path, including
/// the Ctrl-C/SIGTERM handler in main.rs).
pub fn restore_terminal() {
    if let Some(t) = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take() {
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &t);
        }
        // leave the alternate screen and show the cursor, in case the app could not
        let _ = std::io::stdout().write_all(b"\x1b[?1049l\x1b[?25h");
        let _ = std::io::stdout().flush();
    }
    BRIDGE_ON.store(false, Ordering::SeqCst);
}

fn winsize(fd: RawFd) -> Option<libc::winsize> {
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0 && ws.ws_row > 0).then_some(ws)
}

pub struct Pty {
    master: RawFd,
    /// kept open so the master never reads EOF before Alice opens the slave
    _slave: RawFd,
    pub path: PathBuf,
}

impl Pty {
    pub fn open() -> Result<Pty> {
        let mut master: libc::c_int = -1;
        let mut slave: libc::c_int = -1;
        let ws = winsize(0).unwrap_or(libc::winsize { ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0 });
        let r = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &ws) };
        if r != 0 {
            bail!("openpty: {}", std::io::Error::last_os_error());
        }
        for fd in [master, slave] {
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        let mut buf = [0 as libc::c_char; 256];
        if unsafe { libc::ttyname_r(slave, buf.as_mut_ptr(), buf.len()) } != 0 {
            bail!("ttyname: {}", std::io::Error::last_os_error());
        }
        let path = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
        Ok(Pty { master, _slave: slave, path: PathBuf::from(path) })
    }

    /// Raw mode on our terminal; copy stdin -> pty and pty -> stdout; follow the window size.
    pub fn bridge(&self) -> Result<()> {
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut t) } != 0 {
            bail!("tcgetattr: {}", std::io::Error::last_os_error());
        }
        *SAVED.lock().unwrap() = Some(t);
        BRIDGE_ON.store(true, Ordering::SeqCst);
        let mut raw = t;
        unsafe {
            libc::cfmakeraw(&mut raw);
            libc::tcsetattr(0, libc::TCSANOW, &raw);
        }
        let m = self.master;
        let t0 = Instant::now();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut out = unsafe { std::fs::File::from_raw_fd_borrowed(m) };
            let mut buf = [0u8; 1024];
            loop {
                let n = match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if buf[..n].contains(&3) {
                    CTRL_C_AT_MS.store(t0.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
                }
                if out.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        });
        std::thread::spawn(move || {
            let mut inp = unsafe { std::fs::File::from_raw_fd_borrowed(m) };
            let mut buf = [0u8; 8192];
            let mut stdout = std::io::stdout();
            loop {
                let n = match inp.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if !BRIDGE_ON.load(Ordering::SeqCst) {
                    return;
                }
                let _ = stdout.write_all(&buf[..n]);
                let _ = stdout.flush();
            }
        });
        std::thread::spawn(move || {
            let mut last = winsize(0);
            while BRIDGE_ON.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                let now = winsize(0);
                if let Some(ws) = now {
                    if last.map(|l| (l.ws_row, l.ws_col) != (ws.ws_row, ws.ws_col)).unwrap_or(true) {
                        unsafe { libc::ioctl(m, libc::TIOCSWINSZ, &ws) };
                    }
                }
                last = now;
            }
        });
        Ok(())
    }

    /// Milliseconds since the bridge started at which the user last pressed Ctrl-C (0: never).
    pub fn ctrl_c_at() -> u64 {
        CTRL_C_AT_MS.load(Ordering::SeqCst)
    }
}

/// A `File` view of a descriptor we keep owning (never closed by the view).
trait BorrowedFile {
    unsafe fn from_raw_fd_borrowed(fd: RawFd) -> std::mem::ManuallyDrop<std::fs::File>;
}

impl BorrowedFile for std::fs::File {
    unsafe fn from_raw_fd_borrowed(fd: RawFd) -> std::mem::ManuallyDrop<std::fs::File> {
        use std::os::fd::FromRawFd;
        std::mem::ManuallyDrop::new(std::fs::File::from_raw_fd(fd))
    }
}

/// `cargo xtask run`: the chat UI in this terminal.
pub fn run(
    ctx: &Ctx,
    flavor: Flavor,
    engine: Engine,
    sync_dh: bool,
    fresh: bool,
    store: PathBuf,
    extra: Vec<String>,
) -> Result<()> {
    if unsafe { libc::isatty(0) } != 1 || unsafe { libc::isatty(1) } != 1 {
        bail!("cargo xtask run is the interactive chat: run it in a terminal (scripted runs: cargo xtask smoke, cargo xtask test --only chat:crash)");
    }
    if fresh {
        for f in ["alice.state", "bob.state"] {
            let _ = std::fs::remove_file(store.join(f));
        }
    }
    // build everything before the terminal goes raw (build output stays readable)
    ctx.xous()?;
    ctx.programs()?;
    std::fs::create_dir_all(&store)?;
    let log_path = store.join("run.log");
    let mut log = std::fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let pty = Pty::open()?;
    let p = shell_quote(&pty.path);
    let o = ChatOpts {
        engine,
        sync_dh,
        pace: true,
        store: store.clone(),
        alice_args: vec![],
        alice_redirect: format!("<{p} >{p}"),
        relay_args: vec![],
    };
    eprintln!(
        "xtask: starting the hosted chat ({} kernel, engine {}, DH {}); log: {}; Ctrl-C quits",
        flavor.name(),
        engine.name(),
        if sync_dh { "sync" } else { "async" },
        log_path.display()
    );
    let mut sys = launch(ctx, &o, flavor, &extra, false)?;
    pty.bridge()?;
    let r = (|| -> Result<std::process::ExitStatus> {
        loop {
            if let Ok(line) = sys.wait_line(Duration::from_millis(100), "output", |_| true) {
                let _ = writeln!(log, "{}", line.text);
            }
            if let Some(st) = sys.try_status()? {
                return Ok(st);
            }
            let c = Pty::ctrl_c_at();
            if c > 0 && sys.started.elapsed().as_millis() as u64 > c + 5000 {
                sys.stop();
                bail!("Ctrl-C: the system did not stop within 5 s; every process was stopped");
            }
        }
    })();
    restore_terminal();
    // the rest of the output, then make sure nothing is left
    while let Ok(line) = sys.wait_line(Duration::from_millis(50), "output", |_| true) {
        let _ = writeln!(log, "{}", line.text);
    }
    sys.stop();
    eprintln!(
        "xtask: chat ended; log in {}, conversation kept in {} (--fresh starts over)",
        log_path.display(),
        store.display()
    );
    let st = r?;
    if !st.success() {
        bail!("kernel exited with {st}; see {}", log_path.display());
    }
    Ok(())
}

// ------------------------------------------------------------------------------ scripted runs

fn fresh_store(name: &str) -> Result<PathBuf> {
    let d = util::target_dir().join("chat-test").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

fn panics(sys: &Hosted) -> Vec<String> {
    sys.lines().into_iter().filter(|l| is_panic(l)).collect()
}

/// Runs Alice scripted to the end in one system; returns her verdict (she judges the run
/// herself, with the `--expect-*` flags the caller passed).
fn scripted(ctx: &Ctx, o: &ChatOpts, limit: Duration) -> Result<Verdict> {
    let mut sys = launch(ctx, o, Flavor::Patched, &[], ctx.verbose)?;
    let v = match sys.wait_verdict(limit, "the chat verdict", |s| s == "chat") {
        Ok(v) => v,
        Err(e) => {
            let tail = sys.tail(40);
            sys.stop();
            bail!("chat: {e}\n--- last output ---\n{tail}");
        }
    };
    if let Err(e) = sys.wait_exit(Duration::from_secs(20)) {
        bail!("chat: after its verdict: {e:#}");
    }
    let p = panics(&sys);
    if !p.is_empty() {
        bail!("chat: panic in the hosted system: {p:?}");
    }
    Ok(v)
}

/// `cargo xtask smoke`'s chat part: 200 messages each way through a relay that drops, reorders,
/// duplicates and corrupts; every message must arrive exactly once with its text, and the
/// corrupted and replayed frames must have been rejected.
pub fn smoke(ctx: &Ctx) -> Result<()> {
    let n = 200;
    let store = fresh_store("smoke")?;
    let o = ChatOpts {
        engine: Engine::V2,
        sync_dh: false,
        pace: true,
        store: store.clone(),
        alice_args: vec!["--script".into(), n.to_string(), "--expect-faults".into(), "--shutdown".into()],
        alice_redirect: String::new(),
        relay_args: vec!["--faults".into(), "10,10,10,10".into(), "--seed".into(), "9".into()],
    };
    let t0 = Instant::now();
    let v = scripted(ctx, &o, Duration::from_secs(240))?;
    eprintln!("smoke: chat: {v} ({:.1} s)", t0.elapsed().as_secs_f64());
    if !v.passed() {
        bail!("chat scripted run failed: {v}");
    }
    let _ = std::fs::remove_dir_all(&store);
    eprintln!("smoke: PASS chat/scripted ({n} messages each way through drop/reorder/duplicate/corrupt)");
    Ok(())
}

pub fn test_steps() -> Vec<TestStep> {
    let mut v = vec![
        step!("chat:crash", 600, crash),
        step!("chat:tmux", 600, tmux_test),
        step!("chat:relay-bad-input", 180, relay_bad_input),
    ];
    v.extend(device::test_steps());
    v
}

/// Malformed input to the relay server (apps/ratchet-demo/src/bin/chat_relay_check.rs): every opcode as
/// every wrong kind, bad fields, random pages; then it must still serve correct calls.
fn relay_bad_input(ctx: &Ctx) -> Result<()> {
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose);
    l = crate::system::add_servers(ctx, l)?;
    l = l.program(shell_quote(&ctx.program("chat-relay")?));
    // the check is this run's harness: it ends the run
    l = l.system_program(format!("{} --shutdown", shell_quote(&ctx.program("chat-relay-check")?)));
    let mut sys = l.start()?;
    let v =
        match sys.wait_verdict(Duration::from_secs(120), "the chat-relay-check verdict", |s| s == "chat-relay-check") {
            Ok(v) => v,
            Err(e) => {
                let tail = sys.tail(30);
                sys.stop();
                bail!("{e}\n--- last output ---\n{tail}");
            }
        };
    eprintln!("chat:relay-bad-input: {v}");
    sys.wait_exit(Duration::from_secs(20))?;
    let p = panics(&sys);
    if !v.passed() || !p.is_empty() {
        bail!("{v} {p:?}");
    }
    Ok(())
}

/// PIDs of the processes of `sys` whose program is `bin` (argv[0] ends with /bin).
fn pids_of(sys: &Hosted, bin: &str) -> Vec<i32> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return v };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        if unsafe { libc::getpgid(pid) } != sys.pgid() {
            continue;
        }
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let argv0 = cmd.split(|&b| b == 0).next().unwrap_or(&[]);
        if String::from_utf8_lossy(argv0).ends_with(&format!("/{bin}")) {
            v.push(pid);
        }
    }
    v
}

/// The number of Bob's reply in Alice's log line for it (`chat: Bob #k: ...`), if `l` is one.
fn reply_number(l: &str) -> Option<u64> {
    let rest = &l[l.find("chat: Bob #")? + "chat: Bob #".len()..];
    let (k, _) = rest.split_once(':')?;
    k.parse().ok()
}

/// kill -9 of each chat process in turn, in the middle of a conversation through a faulty
/// relay; after each, the whole system is killed too and restarted from the stores. At the end
/// every message has arrived exactly once with its text (a reused message key would make a
/// message undecryptable: it would be missing).
///
/// Each round kills after a reply numbered at least its planned point and at least a few past
/// the furthest reply of the round before: the harness reads the output while the chat runs on,
/// so a round may end well past its point (seen: a kill planned after reply 25 came after 40,
/// and the next round then waited for a reply 40 that its conversation had already passed).
fn crash(ctx: &Ctx) -> Result<()> {
    let n = 60u64;
    let store = fresh_store("crash")?;
    let base = ChatOpts {
        engine: Engine::V2,
        sync_dh: false,
        pace: true,
        store: store.clone(),
        alice_args: vec!["--script".into(), n.to_string(), "--shutdown".into()],
        alice_redirect: String::new(),
        relay_args: vec!["--faults".into(), "10,10,10,10".into()],
    };
    // the furthest reply Alice logged so far
    let mut furthest = 0u64;
    for (round, (victim, planned)) in [("chat", 10u64), ("chat-bob", 25), ("chat-relay", 40)].iter().enumerate() {
        let after = (*planned).max(furthest + 3);
        if after >= n {
            bail!("round {round}: the conversation already reached reply {furthest} of {n}: no kill left to do in it");
        }
        let mut sys = launch(ctx, &base, Flavor::Patched, &[], ctx.verbose)?;
        let what = format!("a reply numbered {after} or more (\"chat: Bob #k:\")");
        if let Err(e) = sys.wait_line(Duration::from_secs(120), &what, |l| reply_number(l).is_some_and(|k| k >= after))
        {
            let tail = sys.tail(40);
            bail!("round {round}: {e}\n--- last output ---\n{tail}");
        }
        let pids = pids_of(&sys, victim);
        if pids.is_empty() {
            bail!("round {round}: no {victim} process found");
        }
        for p in &pids {
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        eprintln!("chat:crash: round {round}: kill -9 {victim} (pid {pids:?}) after a reply numbered {after} or more");
        std::thread::sleep(Duration::from_millis(300));
        // then the rest of the system dies the same way
        supervisor::signal_group(sys.pgid(), libc::SIGKILL);
        sys.stop();
        furthest = furthest.max(sys.lines().iter().filter_map(|l| reply_number(l)).max().unwrap_or(0));
        eprintln!("chat:crash: round {round}: the furthest reply logged was {furthest}");
    }
    // the final run must resume the stored conversation and complete it
    let mut last = base.clone();
    last.alice_args.push("--expect-resume".into());
    let v = scripted(ctx, &last, Duration::from_secs(180))?;
    eprintln!("chat:crash: final run: {v}");
    if !v.passed() {
        bail!("after three kill -9: {v}");
    }
    let _ = std::fs::remove_dir_all(&store);
    Ok(())
}

// ------------------------------------------------------------------------------ bench

pub fn bench_providers() -> Vec<BenchProvider> {
    let mut v = vec![BenchProvider { name: "chat", timeout: Duration::from_secs(900), run: bench }];
    v.extend(device::bench_providers());
    v
}

fn bench_json(line: &str) -> Result<serde_json::Value> {
    let j = verdict::bench::json_of(line).context("no BENCH-JSON line")?;
    Ok(serde_json::from_str(j)?)
}

fn bench_run(ctx: &Ctx, engine: Engine, sync_dh: bool, pace: bool, n: u32, fps: u32) -> Result<serde_json::Value> {
    let store = fresh_store(&format!("bench-{}-{}", engine.name(), if sync_dh { "sync" } else { "async" }))?;
    let o = ChatOpts {
        engine,
        sync_dh,
        pace,
        store: store.clone(),
        alice_args: vec!["--bench".into(), n.to_string(), "--fps".into(), fps.to_string(), "--shutdown".into()],
        alice_redirect: String::new(),
        relay_args: vec![],
    };
    let mut sys = launch(ctx, &o, Flavor::Patched, &[], ctx.verbose)?;
    let is_bench = |l: &str| verdict::bench::json_of(l).is_some();
    let line = match sys.wait_line(Duration::from_secs(300), verdict::bench::MARKER, |l| {
        is_bench(l) || Verdict::parse(l).is_some() || l.contains("SYSCTL ERROR")
    }) {
        Ok(l) if is_bench(&l.text) => l.text,
        Ok(l) => {
            sys.stop();
            bail!("chat bench ({} {}): {}", engine.name(), if sync_dh { "sync" } else { "async" }, l.text.trim());
        }
        Err(e) => {
            let tail = sys.tail(30);
            sys.stop();
            bail!("chat bench ({} {}): {e}\n{tail}", engine.name(), if sync_dh { "sync" } else { "async" });
        }
    };
    let _ = sys.wait_exit(Duration::from_secs(20));
    let _ = std::fs::remove_dir_all(&store);
    bench_json(&line)
}

fn bench(ctx: &Ctx) -> Result<BenchResults> {
    let mut r = BenchResults::new();
    let get = |j: &serde_json::Value, k: &str| j[k].as_f64().unwrap_or(f64::NAN);
    for engine in [Engine::V2, Engine::V1, Engine::Software] {
        for sync in [false, true] {
            let j = bench_run(ctx, engine, sync, true, 50, 30)?;
            let mode = if sync { "sync" } else { "async" };
            r.insert(format!("ui_frame_p99_ms_{mode}_{}", engine.name()), get(&j, "frame_p99_ms"));
            // the worst frame while the PQXDH session is set up (bundle fetch, X25519 on the
            // engine, ML-KEM encapsulation on the worker or, with --sync-dh, the UI thread)
            r.insert(format!("ui_setup_frame_max_ms_{mode}_{}", engine.name()), get(&j, "setup_frame_max_ms"));
            if !sync {
                r.insert(format!("ratchet_step_device_ms_{}", engine.name()), get(&j, "dh_device_ms"));
            }
        }
    }
    // throughput: engine service (model, ISA v2), unpaced, every message a DH ratchet step
    let j = bench_run(ctx, Engine::V2, false, false, 100, 240)?;
    r.insert("ratchet_msgs_per_s".into(), get(&j, "msgs_per_s"));
    r.insert("ratchet_step_host_ms_v2".into(), get(&j, "dh_host_ms"));
    Ok(r)
}

// ------------------------------------------------------------------------------ tmux test

/// A tmux server of our own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Result<String> {
        let mut c = std::process::Command::new("tmux");
        c.arg("-L").arg(&self.socket).args(args);
        // CI runs without a terminal type; tmux needs one for its own panes
        if std::env::var_os("TERM").map(|t| t.is_empty() || t == "dumb").unwrap_or(true) {
            c.env("TERM", "xterm-256color");
        }
        let out = c.output().context("running tmux")?;
        if !out.status.success() {
            bail!("tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "chat"]).unwrap_or_default()
    }
    /// Polls the screen until `pred` holds.
    fn wait(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.screen();
            if pred(&s) {
                return Ok(s);
            }
            if Instant::now() > deadline {
                bail!("tmux: timed out after {timeout:?} waiting for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    fn keys(&self, keys: &[&str]) -> Result<()> {
        let mut a = vec!["send-keys", "-t", "chat"];
        a.extend_from_slice(keys);
        self.cmd(&a).map(|_| ())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux").arg("-L").arg(&self.socket).arg("kill-server").output();
    }
}

/// The ticker's frame counter on a screen.
fn frame_no(screen: &str) -> Option<u64> {
    let i = screen.find(" frame ")?;
    screen[i + 7..].split_whitespace().next()?.parse().ok()
}

/// Processes (any) whose environment names this store: every process of the chat's system.
fn processes_with_store(store: &Path) -> Vec<(i32, String)> {
    let needle = format!("CHAT_STORE={}", store.display());
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return v };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            v.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    v
}

/// The chat as a person uses it: `cargo xtask run` in a tmux pane, messages typed with
/// send-keys, the screen read with capture-pane (own message, Bob's reply, the ticker moving, a
/// live fault command), Ctrl-C; then no process may be left and the terminal must be sane.
fn tmux_test(ctx: &Ctx) -> Result<()> {
    crate::setup::require_apt(crate::setup::apt::TMUX)?;
    // build first: the pane only runs the finished binaries
    ctx.xous()?;
    ctx.programs()?;
    let store = fresh_store("tmux")?;
    // a private copy of this xtask: a concurrent build may replace target/release/xtask
    let exe = store.join("xtask");
    std::fs::copy("/proc/self/exe", &exe).context("copying the xtask binary")?;
    let q = |p: &Path| shell_quote(p);
    let phase = |tag: &str, fresh: bool| {
        let done = store.join(tag);
        format!(
            "{} run{} --store {}; echo $? > {}.code; stty -a > {}.stty; echo done > {}; ",
            q(&exe),
            if fresh { " --fresh" } else { "" },
            q(&store),
            q(&done),
            q(&done),
            q(&done)
        )
    };
    let script = format!("{}{}exec sleep 600", phase("done1", true), phase("done2", false));
    let t = Tmux { socket: format!("xtask-chat-{}", std::process::id()) };
    t.cmd(&["new-session", "-d", "-s", "chat", "-x", "120", "-y", "40", "sh", "-c", &script])?;
    t.wait("the chat screen with Bob's session", Duration::from_secs(180), |s| {
        s.contains("Alice ↔ Bob") && s.contains("PQXDH done")
    })?;
    // the ticker moves at ~30 frames/s
    let f1 = frame_no(&t.screen()).context("no frame counter on the screen")?;
    std::thread::sleep(Duration::from_secs(2));
    let s = t.screen();
    let f2 = frame_no(&s).context("no frame counter on the screen")?;
    if f2 < f1 + 30 {
        bail!("the ticker did not move at >= 15 frames/s: frame {f1} -> {f2} in 2 s\n{s}");
    }
    eprintln!("chat:tmux: ticker frame {f1} -> {f2} in 2 s");
    t.keys(&["-l", "hello from tmux"])?;
    t.keys(&["Enter"])?;
    t.wait("my message and Bob's reply", Duration::from_secs(30), |s| {
        s.contains("you #1") && s.contains("hello from tmux") && s.contains("re 1: hello from tmux")
    })?;
    // a live fault command shows on the relay line, and messages still get through
    t.keys(&["-l", "/dup 50"])?;
    t.keys(&["Enter"])?;
    t.wait("the relay's new fault setting", Duration::from_secs(10), |s| s.contains("dup 50%"))?;
    for m in ["second message", "third message"] {
        t.keys(&["-l", m])?;
        t.keys(&["Enter"])?;
    }
    let s = t.wait("replies 2 and 3", Duration::from_secs(30), |s| {
        s.contains("re 2: second message") && s.contains("re 3: third message")
    })?;
    let f3 = frame_no(&s).unwrap_or(0);
    if f3 <= f2 {
        bail!("the ticker stopped: frame {f2} -> {f3}");
    }
    // Ctrl-C: the app quits, the system shuts down, xtask restores the terminal and exits 0
    t.keys(&["C-c"])?;
    let code = wait_phase(&t, &store, "done1")?;
    if code != "0" {
        bail!("cargo xtask run exited with {code} after Ctrl-C; the screen:\n{}", t.screen());
    }
    check_terminal_and_processes(&store, "done1")?;
    // Second run from the store: the conversation is back. Then the UI process dies (kill -9)
    // and the user presses Ctrl-C: xtask must still stop everything and restore the terminal.
    t.wait("the restored conversation", Duration::from_secs(180), |s| {
        s.contains("6 messages restored") && s.contains("re 3: third message")
    })?;
    let alice: Vec<i32> = processes_with_store(&store)
        .into_iter()
        .filter(|(_, cmd)| cmd.split(' ').next().map(|a| a.ends_with("/chat")).unwrap_or(false))
        .map(|(p, _)| p)
        .collect();
    if alice.is_empty() {
        bail!("no chat (Alice) process found in the second run");
    }
    for p in &alice {
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    std::thread::sleep(Duration::from_millis(500));
    t.keys(&["C-c"])?;
    let code = wait_phase(&t, &store, "done2")?;
    if code == "0" {
        bail!("cargo xtask run reported success although its UI was killed");
    }
    check_terminal_and_processes(&store, "done2")?;
    drop(t);
    let _ = std::fs::remove_dir_all(&store);
    eprintln!("chat:tmux: typed 3 messages, saw them and Bob's replies, /dup 50 live, ticker moving; Ctrl-C: exit 0, terminal sane, no process left; second run restored the conversation; UI killed -9 + Ctrl-C: stopped, terminal sane, no process left");
    Ok(())
}

/// Waits (30 s) for a phase of the pane's script to end; returns xtask's exit code.
fn wait_phase(t: &Tmux, store: &Path, tag: &str) -> Result<String> {
    let done = store.join(tag);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done.exists() {
        if Instant::now() > deadline {
            bail!("xtask did not exit within 30 s of Ctrl-C ({tag}); the screen:\n{}", t.screen());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(std::fs::read_to_string(store.join(format!("{tag}.code")))?.trim().to_string())
}

/// After xtask ended: the terminal is sane (stty in the same pane) and no process is left.
fn check_terminal_and_processes(store: &Path, tag: &str) -> Result<()> {
    let stty = std::fs::read_to_string(store.join(format!("{tag}.stty")))?;
    let words: Vec<&str> = stty.split_whitespace().collect();
    for flag in ["icanon", "echo", "isig", "icrnl", "opost"] {
        if !words.contains(&flag) {
            bail!("terminal not sane after {tag}: `{flag}` is off\n{stty}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with_store(store);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            for (p, _) in &left {
                unsafe { libc::kill(*p, libc::SIGKILL) };
            }
            bail!("processes left after {tag} (killed now): {left:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::reply_number;

    #[test]
    fn reply_numbers_are_read_from_alices_log_lines_only() {
        let l = "INFO:chat::app: chat: Bob #40: new ratchet key -> DH ratchet step (apps/ratchet-demo/src/bin/chat/app.rs:197)";
        assert_eq!(reply_number(l), Some(40));
        assert_eq!(reply_number("KERNEL(INFO:chat::app: chat: Bob #7: same chain"), Some(7));
        assert_eq!(reply_number("INFO:chat_bob: chat-bob: from 1 #41: \"message 41 from Alice\""), None);
        assert_eq!(reply_number("INFO:chat::app: chat: no ack for #56: resending"), None);
        assert_eq!(reply_number("chat: Bob #x: junk"), None);
    }
}
