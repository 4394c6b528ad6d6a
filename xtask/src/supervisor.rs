//! The process-group supervisor: every child xtask starts runs in its own process group with a
//! hard timeout (a hung child fails the caller instead of hanging CI), and every group still
//! alive is killed on Ctrl-C and at exit. xtask makes itself a child subreaper so that
//! grandchildren cannot escape to init. A test step runs as a child xtask leading a session of
//! its own ([`spawn_session`]): whatever groups it makes stay in that session, and
//! [`kill_session`] ends every process of it.

use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::Mutex;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Process groups we started: killed on Ctrl-C / step timeout / exit.

static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Set by the Ctrl-C / SIGTERM handler.
pub static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn register_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
}

pub fn unregister_group(pgid: i32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).retain(|g| *g != pgid);
}

/// SIGTERM, short grace, then SIGKILL every process group still registered, and every process
/// of a session still registered.
pub fn kill_all_groups() {
    let sessions: Vec<i32> = SESSIONS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for sid in sessions {
        kill_session(sid, Duration::from_millis(500));
    }
    let groups: Vec<i32> = GROUPS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for g in &groups {
        signal_group(*g, libc::SIGTERM);
    }
    if !groups.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
    }
    for g in &groups {
        signal_group(*g, libc::SIGKILL);
    }
    // Reap them (we are their parent or, for orphans, their subreaper) so that no zombie is
    // left for init to collect.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        for g in &groups {
            reap_group(*g);
        }
        if !groups.iter().any(|g| group_alive(*g)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn signal_group(pgid: i32, sig: i32) {
    if pgid > 1 {
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// True while some process (possibly a zombie) is in the group.
pub fn group_alive(pgid: i32) -> bool {
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Reap zombies of the group that were reparented to us (we are a child subreaper).
pub fn reap_group(pgid: i32) {
    loop {
        let mut status = 0;
        let r = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if r <= 0 {
            break;
        }
    }
}

/// Make orphaned descendants (children of the hosted kernel after it exits) our children, so we
/// can reap them and tell whether every process really exited.
pub fn become_subreaper() {
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Configure `cmd` to start in its own process group and to die if xtask dies.
pub fn own_group(cmd: &mut Command) -> &mut Command {
    cmd.process_group(0);
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    cmd
}

// ---------------------------------------------------------------------------------------------
// Sessions we started (test steps in a child xtask): killed on Ctrl-C / exit.

static SESSIONS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Spawn `cmd` as the leader of a new session (and process group), dying with xtask; the
/// session is registered for cleanup until [`kill_session`] ends it.
pub fn spawn_session(cmd: &mut Command) -> Result<Child> {
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    let child = cmd.spawn().with_context(|| format!("cannot start {:?}", cmd))?;
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner()).push(child.id() as i32);
    Ok(child)
}

/// One process from /proc/PID/stat: (pid, parent, session, zombie).
fn proc_stat(pid: i32) -> Option<(i32, i32, i32, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((pid, f.get(1)?.parse().ok()?, f.get(3)?.parse().ok()?, f.first() == Some(&"Z")))
}

/// The processes of session `sid`: (pid, parent, zombie).
pub fn session_members(sid: i32) -> Vec<(i32, i32, bool)> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_stat)
        .filter(|p| p.2 == sid)
        .map(|(pid, ppid, _, z)| (pid, ppid, z))
        .collect()
}

/// End every process of session `sid`: SIGTERM to each (their handlers clean up: a child
/// xtask stops its own groups), up to `grace` for them to exit, then SIGKILL until none is
/// left, reaping those that are (or were reparented to) us. Returns the PIDs still alive after
/// 5 s of SIGKILL (none, unless a process is stuck in the kernel).
pub fn kill_session(sid: i32, grace: Duration) -> Vec<i32> {
    let me = std::process::id() as i32;
    let reap_and_list = || {
        let mut alive = Vec::new();
        for (pid, ppid, zombie) in session_members(sid) {
            if zombie {
                if ppid == me {
                    unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
                }
            } else {
                alive.push(pid);
            }
        }
        alive
    };
    for pid in reap_and_list() {
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let t0 = Instant::now();
    while !reap_and_list().is_empty() && t0.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(20));
    }
    let t1 = Instant::now();
    let left = loop {
        let alive = reap_and_list();
        if alive.is_empty() || t1.elapsed() > Duration::from_secs(5) {
            break alive;
        }
        for pid in &alive {
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| *s != sid);
    left
}

/// Spawn `cmd` in its own process group (registered for cleanup).
pub fn spawn_grouped(cmd: &mut Command) -> Result<Child> {
    own_group(cmd);
    let child = cmd.spawn().with_context(|| format!("cannot start {:?}", cmd))?;
    register_group(child.id() as i32);
    Ok(child)
}

/// Wait for `child` (leader of its own group) up to `timeout`; on timeout kill the whole group
/// and fail naming `what`.
pub fn wait_timeout(child: &mut Child, timeout: Duration, what: &str) -> Result<ExitStatus> {
    let pgid = child.id() as i32;
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait()? {
            // Let any leftover group members finish, then make sure none remains.
            signal_group(pgid, libc::SIGTERM);
            reap_group(pgid);
            unregister_group(pgid);
            return Ok(st);
        }
        if t0.elapsed() > timeout {
            signal_group(pgid, libc::SIGTERM);
            std::thread::sleep(Duration::from_millis(300));
            signal_group(pgid, libc::SIGKILL);
            let _ = child.wait();
            reap_group(pgid);
            unregister_group(pgid);
            bail!("{what}: timed out after {:?} (process group killed)", timeout);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run a command to completion with a timeout, inheriting stdio. Fails on non-zero exit.
pub fn run(cmd: &mut Command, timeout: Duration, what: &str) -> Result<()> {
    let mut child = spawn_grouped(cmd)?;
    let st = wait_timeout(&mut child, timeout, what)?;
    if !st.success() {
        bail!("{what}: failed ({st})");
    }
    Ok(())
}

/// Run a command with a timeout and capture its stdout (stderr inherited). Fails on non-zero exit.
pub fn run_capture(cmd: &mut Command, timeout: Duration, what: &str) -> Result<String> {
    use std::io::Read;
    cmd.stdout(std::process::Stdio::piped());
    let mut child = spawn_grouped(cmd)?;
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let st = wait_timeout(&mut child, timeout, what)?;
    let text = reader.join().unwrap_or_default();
    if !st.success() {
        bail!("{what}: failed ({st})");
    }
    Ok(text)
}

/// Run a command with a timeout, capturing stdout+stderr; the output is shown only if it fails
/// (for noisy third-party builds). With `verbose` it behaves like `run`.
pub fn run_quiet(cmd: &mut Command, timeout: Duration, what: &str, verbose: bool) -> Result<()> {
    if verbose {
        return run(cmd, timeout, what);
    }
    use std::io::Read;
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = spawn_grouped(cmd)?;
    let mut readers = Vec::new();
    for mut pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()) as Box<dyn Read + Send>,
    ] {
        readers.push(std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = pipe.read_to_end(&mut v);
            v
        }));
    }
    let st = wait_timeout(&mut child, timeout, what);
    let output: Vec<u8> = readers.into_iter().flat_map(|r| r.join().unwrap_or_default()).collect();
    let failed = match &st {
        Ok(s) => !s.success(),
        Err(_) => true,
    };
    if failed {
        eprintln!("{}", String::from_utf8_lossy(&output));
    }
    let st = st?;
    if !st.success() {
        bail!("{what}: failed ({st})");
    }
    Ok(())
}
