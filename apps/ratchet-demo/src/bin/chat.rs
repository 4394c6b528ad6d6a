//! chat: Alice's side, a terminal UI (ratatui + crossterm) started by `cargo xtask run`.
//!
//! The UI thread draws at `--fps` (default 30) and never waits on the engine or the TRNG: DH
//! jobs go to the engine service through an async runner (or, with `--sync-dh`, run on this
//! thread to show the stall), keys come from a pool the TRNG service fills in the background,
//! and the relay is called from a network thread. See docs/chat.md.
//!
//! Modes:
//! - interactive (default): the terminal on stdin/stdout (xtask hands it a pty bridged to the
//!   user's terminal). Ctrl-C, Esc or `/quit` restores the terminal and shuts the system down.
//! - `--script N`: headless, sends `message <k> from Alice` until N are sent, waits for all N
//!   replies, checks each arrived exactly once with the right text, prints its verdict
//!   `VERDICT chat PASS|FAIL messages=N replies=.. missing=.. ... -- why` (libs/verdict).
//!   Resumes from the store after a restart. `--expect-faults`: also fail unless the relay
//!   dropped, reordered, duplicated and corrupted frames and Alice rejected replayed and
//!   corrupted ones; `--expect-resume`: also fail unless the run resumed a stored conversation.
//! - `--bench N`: headless, draws into an off-screen terminal, N messages one at a time, prints
//!   `BENCH-JSON {...}` with the frame-interval p99 and the DH figures.
//!
//! Options: ratchet_demo::config::COMMON, `--sync-dh`, `--fps F`, `--script N`, `--bench N`,
//! `--shutdown` (script/bench: shut the system down at the end), `--faults D,R,U,C` (set the
//! relay's faults at start).

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratchet_demo::config::{Common, EngineMode, COMMON};
use ratchet_demo::dh::{engine_fn, AsyncRunner, Device, DhRunner, SyncRunner};
use ratchet_demo::entropy::PoolRng;
use ratchet_demo::party::{DhInfo, Dir, Event, Party, Reject};
use ratchet_demo::relay_api::{Faults, RelayStats};
use ratchet_demo::relay_client::Relay;
use ratchet_demo::{ALICE, BOB};
use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::{Frame, Terminal};
use service_ipc::options::{Opt, Takes};
use verdict::Verdict;

const MINE: &[Opt] = &[
    Opt { flag: "--sync-dh", env: Some("CHAT_SYNC_DH"), takes: Takes::Nothing },
    Opt { flag: "--fps", env: Some("CHAT_FPS"), takes: Takes::Value },
    Opt { flag: "--script", env: None, takes: Takes::Value },
    Opt { flag: "--bench", env: None, takes: Takes::Value },
    Opt { flag: "--shutdown", env: None, takes: Takes::Nothing },
    Opt { flag: "--faults", env: Some("CHAT_FAULTS"), takes: Takes::Value },
    Opt { flag: "--expect-faults", env: None, takes: Takes::Nothing },
    Opt { flag: "--expect-resume", env: None, takes: Takes::Nothing },
];

/// What a `--script` run must also have seen to pass (the harness's scenario).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Expect {
    /// every relay fault happened, and replayed and corrupted frames were rejected
    faults: bool,
    /// the run resumed a conversation from the store
    resume: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Interactive,
    Script(u32),
    Bench(u32),
}

struct Args {
    common: Common,
    sync_dh: bool,
    fps: u32,
    mode: Mode,
    shutdown: bool,
    faults: Option<Faults>,
    expect: Expect,
}

fn parse_args(args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Args, String> {
    let opts: Vec<Opt> = COMMON.iter().chain(MINE).copied().collect();
    let p = service_ipc::options::parse(&opts, args, getenv)?;
    let common = Common::from(&p)?;
    let fps = p.u64("--fps")?.unwrap_or(30);
    if !(1..=240).contains(&fps) {
        return Err(format!("--fps must be 1..=240, got {fps}"));
    }
    let count = |f: &str| -> Result<Option<u32>, String> {
        match p.u64(f)? {
            Some(n) if (1..=100_000).contains(&n) => Ok(Some(n as u32)),
            Some(n) => Err(format!("{f} must be 1..=100000, got {n}")),
            None => Ok(None),
        }
    };
    let mode = match (count("--script")?, count("--bench")?) {
        (Some(_), Some(_)) => return Err("--script and --bench exclude each other".into()),
        (Some(n), None) => Mode::Script(n),
        (None, Some(n)) => Mode::Bench(n),
        (None, None) => Mode::Interactive,
    };
    let faults = p.get("--faults").map(Faults::parse_option).transpose()?;
    let expect = Expect { faults: p.is_set("--expect-faults"), resume: p.is_set("--expect-resume") };
    if expect != Expect::default() && !matches!(mode, Mode::Script(_)) {
        return Err("--expect-faults and --expect-resume need --script N".into());
    }
    Ok(Args { common, sync_dh: p.is_set("--sync-dh"), fps: fps as u32, mode, shutdown: p.is_set("--shutdown"), faults, expect })
}

// ------------------------------------------------------------------------------ network thread

enum NetCmd {
    Send(u32, Vec<u8>),
    GetBundle(u32),
    SetFaults(Faults),
}

enum NetEvent {
    Frame(u32, Vec<u8>),
    Bundle(Vec<u8>),
    Stats(RelayStats),
    Error(String),
}

fn start_net(mut relay: Relay) -> (mpsc::Sender<NetCmd>, mpsc::Receiver<NetEvent>) {
    let (ctx, crx) = mpsc::channel::<NetCmd>();
    let (etx, erx) = mpsc::channel::<NetEvent>();
    std::thread::Builder::new()
        .name("chat-net".into())
        .spawn(move || {
            let mut last_stats = Instant::now() - Duration::from_secs(1);
            loop {
                let mut busy = false;
                loop {
                    match crx.try_recv() {
                        Ok(NetCmd::Send(to, f)) => {
                            busy = true;
                            if let Err(e) = relay.send(ALICE, to, &f) {
                                let _ = etx.send(NetEvent::Error(format!("send: {e}")));
                            }
                        }
                        Ok(NetCmd::GetBundle(peer)) => match relay.get_bundle(peer) {
                            Ok(b) => {
                                let _ = etx.send(NetEvent::Bundle(b));
                            }
                            Err(e) => log::info!("chat: no bundle for {peer} yet ({e})"),
                        },
                        Ok(NetCmd::SetFaults(f)) => {
                            if let Err(e) = relay.set_faults(f) {
                                let _ = etx.send(NetEvent::Error(format!("faults: {e}")));
                            }
                            last_stats = Instant::now() - Duration::from_secs(1);
                        }
                        Err(mpsc::TryRecvError::Empty) => break,
                        Err(mpsc::TryRecvError::Disconnected) => return,
                    }
                }
                loop {
                    match relay.recv(ALICE) {
                        Ok(Some((from, data))) => {
                            busy = true;
                            if etx.send(NetEvent::Frame(from, data)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            let _ = etx.send(NetEvent::Error(format!("recv: {e}")));
                            break;
                        }
                    }
                }
                if last_stats.elapsed() >= Duration::from_millis(250) {
                    last_stats = Instant::now();
                    if let Ok(s) = relay.stats() {
                        let _ = etx.send(NetEvent::Stats(s));
                    }
                }
                if !busy {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
        .expect("spawn the network thread");
    (ctx, erx)
}

/// Engine statistics, polled by a thread of their own (a blocking IPC call).
fn start_engine_stats(engine: engine25519::Engine25519) -> Arc<Mutex<Option<engine25519::Stats>>> {
    let shared = Arc::new(Mutex::new(None));
    let s2 = shared.clone();
    std::thread::Builder::new()
        .name("chat-engine-stats".into())
        .spawn(move || loop {
            if let Ok(s) = engine.stats() {
                *s2.lock().unwrap() = Some(s);
            }
            std::thread::sleep(Duration::from_millis(500));
        })
        .expect("spawn the stats thread");
    shared
}

// ------------------------------------------------------------------------------ commands

#[derive(Debug, PartialEq)]
enum Command {
    Faults(Faults),
    Help,
    Quit,
}

/// A `/command` typed in the input line (without the slash); `f` = the current faults.
fn parse_command(cmd: &str, mut f: Faults) -> Result<Command, String> {
    let mut it = cmd.split_whitespace();
    let name = it.next().unwrap_or("");
    let args: Vec<&str> = it.collect();
    let pct = || -> Result<u8, String> {
        match args.as_slice() {
            [v] => {
                let n: u8 = v.trim_end_matches('%').parse().map_err(|_| format!("/{name}: not a percentage: {v}"))?;
                if n > 100 {
                    return Err(format!("/{name}: {n} is above 100"));
                }
                Ok(n)
            }
            [] => Err(format!("/{name} needs a percentage 0..100")),
            _ => Err(format!("/{name} takes one percentage")),
        }
    };
    let none = || if args.is_empty() { Ok(()) } else { Err(format!("/{name} takes no argument")) };
    match name {
        "drop" => f.drop = pct()?,
        "reorder" => f.reorder = pct()?,
        "dup" | "duplicate" => f.duplicate = pct()?,
        "corrupt" => f.corrupt = pct()?,
        "clean" | "clear" => {
            none()?;
            f = Faults::default()
        }
        "chaos" => {
            none()?;
            f = Faults { drop: 20, reorder: 20, duplicate: 20, corrupt: 20 }
        }
        "quit" | "exit" => return none().map(|()| Command::Quit),
        "help" => return Ok(Command::Help),
        "" => return Err("empty command (try /help)".into()),
        other => return Err(format!("unknown command /{other} (try /help)")),
    }
    Ok(Command::Faults(f))
}

// ------------------------------------------------------------------------------ the app

struct Activity {
    at: Instant,
    text: String,
    style: Style,
}

struct App {
    args_desc: String,
    engine_mode: EngineMode,
    clock_hz: u64,
    sync_dh: bool,
    party: Party,
    dh: Box<dyn DhRunner>,
    rng: PoolRng,
    net_tx: mpsc::Sender<NetCmd>,
    net_rx: mpsc::Receiver<NetEvent>,
    engine_stats: Arc<Mutex<Option<engine25519::Stats>>>,
    backend_name: String,
    relay: RelayStats,
    faults: Faults,
    input: String,
    activity: VecDeque<Activity>,
    scroll: usize,
    quit: bool,
    bundle_asked: Option<Instant>,
    // frame statistics
    t0: Instant,
    frames: u64,
    last_frame: Option<Instant>,
    intervals: VecDeque<f64>,
    frame_ms: f64,
    worst_recent: f64,
    dh_lat: VecDeque<DhInfo>,
}

const ACTIVITY_LINES: usize = 64;

impl App {
    fn note(&mut self, text: impl Into<String>, color: Color) {
        let text = text.into();
        log::info!("chat: {text}");
        self.activity.push_back(Activity { at: Instant::now(), text, style: Style::default().fg(color) });
        while self.activity.len() > ACTIVITY_LINES {
            self.activity.pop_front();
        }
    }

    fn frame_start(&mut self, now: Instant) {
        if let Some(prev) = self.last_frame {
            let ms = now.duration_since(prev).as_secs_f64() * 1e3;
            self.frame_ms = ms;
            self.intervals.push_back(ms);
            if self.intervals.len() > 300 {
                self.intervals.pop_front();
            }
        }
        self.last_frame = Some(now);
        self.frames += 1;
        self.worst_recent = self.intervals.iter().copied().fold(0.0, f64::max);
    }

    fn p99(&self) -> f64 {
        percentile(self.intervals.iter().copied().collect(), 0.99)
    }

    /// The frame's work: network, ratchet, never waiting (unless `--sync-dh`).
    fn step(&mut self, now: Instant) {
        while let Ok(ev) = self.net_rx.try_recv() {
            match ev {
                NetEvent::Frame(from, data) => self.party.deliver(from, data),
                NetEvent::Bundle(b) => match self.party.set_bundle(&b) {
                    Ok(()) => self.note("Bob's prekey bundle fetched from the relay, signature verified (XEdDSA)", Color::Cyan),
                    Err(e) => self.note(format!("bad bundle: {e}"), Color::Red),
                },
                NetEvent::Stats(s) => self.relay = s,
                NetEvent::Error(e) => self.note(format!("relay: {e}"), Color::Red),
            }
        }
        if let Some(peer) = self.party.needs_bundle() {
            if self.bundle_asked.map(|t| now.duration_since(t) > Duration::from_millis(500)).unwrap_or(true) {
                self.bundle_asked = Some(now);
                let _ = self.net_tx.send(NetCmd::GetBundle(peer));
            }
        }
        if let Err(e) = self.party.tick(now, self.dh.as_mut(), &mut self.rng) {
            self.note(format!("store: {e}"), Color::Red);
        }
        for ev in self.party.take_events() {
            match ev {
                Event::Received { seq, dh, .. } => {
                    if let Some(d) = dh {
                        self.dh_lat.push_back(d);
                        if self.dh_lat.len() > 64 {
                            self.dh_lat.pop_front();
                        }
                        self.note(
                            format!("Bob #{seq}: new ratchet key -> DH ratchet step, {} X25519: device {} / host {}", d.jobs, ms(d.device_us), ms(d.host_us)),
                            Color::Green,
                        );
                    } else {
                        self.note(format!("Bob #{seq}: same chain, message key from the chain (no DH)"), Color::Green);
                    }
                }
                Event::Rejected { kind, why, .. } => {
                    let what = match kind {
                        Reject::Replay => "replay/duplicate rejected",
                        Reject::Tampered => "tampered frame rejected (MAC)",
                        Reject::Malformed => "malformed frame rejected",
                    };
                    self.note(format!("{what}: {why}; state unchanged"), Color::Yellow);
                }
                Event::Retransmit { seq, .. } => self.note(format!("no ack for #{seq}: resending the same ciphertext"), Color::Magenta),
                Event::Acked { .. } | Event::Sent { .. } => {}
                Event::SessionReady { .. } => self.note("X3DH done: Double Ratchet session with Bob", Color::Cyan),
                Event::Info(i) => self.note(i, Color::Cyan),
                Event::Error(e) => self.note(e, Color::Red),
                Event::BundleChanged => {}
            }
        }
        for (to, f) in self.party.take_outgoing() {
            let _ = self.net_tx.send(NetCmd::Send(to, f));
        }
        if let Some(s) = *self.engine_stats.lock().unwrap() {
            self.backend_name = engine25519::BackendId::from_u32(s.backend).map(|b| b.name()).unwrap_or("?").to_string();
        }
    }

    fn submit(&mut self) {
        let line = std::mem::take(&mut self.input);
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        if let Some(cmd) = line.strip_prefix('/') {
            return self.command(cmd);
        }
        if let Err(e) = self.party.queue_text(BOB, line) {
            self.note(e, Color::Red);
        }
        self.scroll = 0;
    }

    fn command(&mut self, cmd: &str) {
        match parse_command(cmd, self.faults) {
            Ok(Command::Quit) => self.quit = true,
            Ok(Command::Help) => self.note("/drop N  /reorder N  /dup N  /corrupt N  (percent)  /chaos  /clean  /quit", Color::Cyan),
            Ok(Command::Faults(f)) => {
                self.faults = f;
                let _ = self.net_tx.send(NetCmd::SetFaults(f));
                self.note(format!("relay faults: drop {}% reorder {}% duplicate {}% corrupt {}%", f.drop, f.reorder, f.duplicate, f.corrupt), Color::Cyan);
            }
            Err(e) => self.note(e, Color::Red),
        }
    }

    fn key(&mut self, k: KeyEvent) {
        if k.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('c') | KeyCode::Char('d') if ctrl => self.quit = true,
            KeyCode::Esc => self.quit = true,
            KeyCode::Char('u') if ctrl => self.input.clear(),
            KeyCode::Char(c) => {
                if self.input.len() < ratchet_demo::party::MAX_TEXT {
                    self.input.push(c)
                }
            }
            KeyCode::Backspace => {
                self.input.pop();
            }
            KeyCode::Enter => self.submit(),
            KeyCode::PageUp | KeyCode::Up => self.scroll = self.scroll.saturating_add(if k.code == KeyCode::Up { 1 } else { 10 }),
            KeyCode::PageDown | KeyCode::Down => self.scroll = self.scroll.saturating_sub(if k.code == KeyCode::Down { 1 } else { 10 }),
            _ => {}
        }
    }

    // -------------------------------------------------------------------------- drawing

    fn draw(&self, f: &mut Frame) {
        let area = f.area();
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Min(6), Constraint::Length(9), Constraint::Length(1), Constraint::Length(1), Constraint::Length(1)])
            .split(area);
        self.draw_conversation(f, rows[0]);
        let mid = Layout::default().direction(Direction::Horizontal).constraints([Constraint::Percentage(58), Constraint::Percentage(42)]).split(rows[1]);
        self.draw_activity(f, mid[0]);
        self.draw_engine(f, mid[1]);
        self.draw_relay(f, rows[2]);
        self.draw_ticker(f, rows[3]);
        let input = Line::from(vec![Span::styled("> ", Style::default().fg(Color::Yellow)), Span::raw(self.input.as_str())]);
        f.render_widget(Paragraph::new(input), rows[4]);
        let x = rows[4].x + 2 + self.input.chars().count() as u16;
        f.set_cursor_position((x.min(rows[4].right().saturating_sub(1)), rows[4].y));
    }

    fn draw_conversation(&self, f: &mut Frame, r: Rect) {
        let inner_h = r.height.saturating_sub(2) as usize;
        let hist = self.party.history();
        let end = hist.len().saturating_sub(self.scroll.min(hist.len().saturating_sub(1)));
        let start = end.saturating_sub(inner_h);
        let mut lines: Vec<Line> = Vec::new();
        if hist.is_empty() {
            lines.push(Line::styled("Type a message and press Enter. /help for the relay's fault commands, Ctrl-C to quit.", Style::default().fg(Color::DarkGray)));
        }
        for e in &hist[start..end] {
            let (who, color) = match e.dir {
                Dir::Out => ("you", Color::Yellow),
                Dir::In => ("Bob", Color::Green),
            };
            let mut spans = vec![
                Span::styled(clock(e.unix_ms), Style::default().fg(Color::DarkGray)),
                Span::styled(format!(" {who:>3} #{:<4} ", e.seq), Style::default().fg(color).add_modifier(Modifier::BOLD)),
                Span::raw(e.text.clone()),
            ];
            match (e.dir, e.dh) {
                (Dir::Out, _) => spans.push(Span::styled(if e.acked { "  ✓" } else { "  …" }, Style::default().fg(Color::DarkGray))),
                (Dir::In, Some(d)) => spans.push(Span::styled(
                    format!("  [DH x{} device {} host {}]", d.jobs, ms(d.device_us), ms(d.host_us)),
                    Style::default().fg(Color::DarkGray),
                )),
                (Dir::In, None) => spans.push(Span::styled("  [no DH]", Style::default().fg(Color::DarkGray))),
            }
            lines.push(Line::from(spans));
        }
        let pending = self.party.queued_texts();
        let title = format!(
            " Alice ↔ Bob · X3DH + Double Ratchet{}{} ",
            if self.scroll > 0 { format!(" · scrolled {}", self.scroll) } else { String::new() },
            if pending > 0 { format!(" · {pending} waiting for the session") } else { String::new() }
        );
        f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), r);
    }

    fn draw_activity(&self, f: &mut Frame, r: Rect) {
        let c = self.party.counters();
        let mut lines = vec![
            Line::from(vec![
                Span::styled(format!("rejected {}", c.rejected()), Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD)),
                Span::raw(format!(" (replay {}, tampered {}, malformed {})", c.rej_replay, c.rej_tampered, c.rej_malformed)),
            ]),
            Line::from(format!(
                "accepted {} · DH steps {} · resent {} · unacked {}",
                c.accepted,
                c.dh_steps,
                c.retransmits,
                self.party.outbox_len()
            )),
        ];
        let n = r.height.saturating_sub(4) as usize;
        for a in self.activity.iter().rev().take(n).collect::<Vec<_>>().into_iter().rev() {
            let age = a.at.elapsed().as_secs();
            lines.push(Line::from(vec![Span::styled(format!("{age:>3}s "), Style::default().fg(Color::DarkGray)), Span::styled(a.text.clone(), a.style)]));
        }
        f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" What the ratchet did ")), r);
    }

    fn draw_engine(&self, f: &mut Frame, r: Rect) {
        let mut lines = Vec::new();
        let device = match self.engine_mode {
            EngineMode::Software => "software X25519 (100 ms/DH on a 100 MHz RV32)".to_string(),
            m => format!("engine {} @ {:.0} MHz", m.name(), self.clock_hz as f64 / 1e6),
        };
        lines.push(Line::from(format!("{device} · DH {}", if self.sync_dh { "SYNC on the UI thread" } else { "async" })));
        match *self.engine_stats.lock().unwrap() {
            Some(s) => {
                lines.push(Line::from(format!("service backend {} · jobs {} · fallbacks {}", self.backend_name, s.jobs, s.fallbacks)));
                lines.push(Line::from(format!("cycles {} · queue {} (max {}) · errors {} · clients {}", s.cycles, s.queue_depth, s.queue_max, s.errors, s.clients)));
            }
            None => lines.push(Line::from("engine stats: waiting")),
        }
        match self.party.last_dh {
            Some(d) => lines.push(Line::from(format!("last batch: {} X25519, {} cycles", d.jobs, d.cycles))),
            None => lines.push(Line::from("last batch: none yet")),
        }
        if let Some(d) = self.party.last_dh {
            lines.push(Line::from(format!("  device {} · host {}", ms(d.device_us), ms(d.host_us))));
        }
        if !self.dh_lat.is_empty() {
            let n = self.dh_lat.len() as u64;
            let dev = self.dh_lat.iter().map(|d| d.device_us).sum::<u64>() / n;
            let host = self.dh_lat.iter().map(|d| d.host_us).sum::<u64>() / n;
            lines.push(Line::from(format!("mean per message ({n}): device {} host {}", ms(dev), ms(host))));
        }
        let (errs, _) = self.rng.errors();
        lines.push(Line::from(format!("TRNG pool {} B ready{}", self.rng.available(), if errs > 0 { format!(" · {errs} TRNG errors") } else { String::new() })));
        f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Engine ")), r);
    }

    fn draw_relay(&self, f: &mut Frame, r: Rect) {
        let s = &self.relay;
        let t = format!(
            " relay: drop {}% reorder {}% dup {}% corrupt {}% │ sent {} delivered {} dropped {} reordered {} duplicated {} corrupted {}",
            s.drop, s.reorder, s.duplicate, s.corrupt, s.sent, s.delivered, s.dropped, s.reordered, s.duplicated, s.corrupted
        );
        f.render_widget(Paragraph::new(t).style(Style::default().fg(Color::Cyan)), r);
    }

    fn draw_ticker(&self, f: &mut Frame, r: Rect) {
        const SPIN: [char; 8] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧'];
        let spin = SPIN[(self.frames % SPIN.len() as u64) as usize];
        let w = 16u64;
        let pos = (self.frames % (2 * w)) as i64;
        let pos = if pos < w as i64 { pos } else { 2 * w as i64 - 1 - pos } as usize;
        let bar: String = (0..w as usize).map(|i| if i == pos { '●' } else { '·' }).collect();
        let t = format!(
            " {spin} {bar} frame {:>6} │ {:>5.1} ms │ p99 {:>5.1} ms │ worst {:>6.1} ms │ up {:>4} s ",
            self.frames,
            self.frame_ms,
            self.p99(),
            self.worst_recent,
            self.t0.elapsed().as_secs()
        );
        let style = if self.worst_recent > 50.0 { Style::default().fg(Color::Red) } else { Style::default().fg(Color::Green) };
        f.render_widget(Paragraph::new(t).style(style), r);
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

fn ms(us: u64) -> String {
    if us >= 10_000 {
        format!("{:.0} ms", us as f64 / 1e3)
    } else {
        format!("{:.2} ms", us as f64 / 1e3)
    }
}

fn clock(unix_ms: u64) -> String {
    let s = unix_ms / 1000;
    format!("{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60)
}

// ------------------------------------------------------------------------------ terminal

/// Puts the terminal back (raw mode off, main screen, cursor shown). Idempotent.
fn restore_terminal() {
    let _ = crossterm::terminal::disable_raw_mode();
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(out, crossterm::terminal::LeaveAlternateScreen, crossterm::cursor::Show);
    let _ = out.flush();
}

struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn shutdown_system() -> ! {
    let _ = xous::rsyscall(xous::SysCall::Shutdown);
    std::process::exit(0)
}

fn die(msg: &str) -> ! {
    log::error!("chat: {msg}");
    eprintln!("chat: {msg}");
    xous::terminate_process(2)
}

fn frame_pace(next: &mut Instant, frame: Duration) {
    *next += frame;
    let now = Instant::now();
    if *next > now {
        std::thread::sleep(*next - now);
    } else {
        *next = now;
    }
}

fn run_interactive(app: &mut App, fps: u32) -> std::io::Result<()> {
    crossterm::terminal::enable_raw_mode()?;
    let _guard = TerminalGuard;
    let mut out = std::io::stdout();
    crossterm::execute!(out, crossterm::terminal::EnterAlternateScreen)?;
    let mut term = Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    term.clear()?;
    let frame = Duration::from_secs(1) / fps;
    let mut next = Instant::now();
    while !app.quit {
        let now = Instant::now();
        app.frame_start(now);
        while event::poll(Duration::ZERO)? {
            match event::read()? {
                TermEvent::Key(k) => app.key(k),
                TermEvent::Paste(s) => app.input.push_str(&s),
                _ => {}
            }
        }
        app.step(now);
        term.draw(|f| app.draw(f))?;
        frame_pace(&mut next, frame);
    }
    Ok(())
}

/// Headless: `script` sends `n` messages (a window of 4 in flight); `bench` sends one at a time
/// and measures frame intervals. Both draw every frame into an off-screen terminal.
fn run_headless(app: &mut App, fps: u32, n: u32, bench: bool, expect: Expect) -> Result<String, String> {
    let mut term = Terminal::new(ratatui::backend::TestBackend::new(120, 36)).map_err(|e| e.to_string())?;
    let frame = Duration::from_secs(1) / fps;
    let mut next = Instant::now();
    let window = if bench { 1 } else { 4 };
    let deadline = Instant::now() + Duration::from_secs(if bench { 600 } else { 300 });
    let already_in = app.party.history().iter().filter(|e| e.dir == Dir::In).count();
    let mut measuring: Option<Instant> = None;
    let mut intervals: Vec<f64> = Vec::new();
    let mut last = None::<Instant>;
    let mut draw_ms: Vec<f64> = Vec::new();
    loop {
        let now = Instant::now();
        app.frame_start(now);
        if let Some(l) = last {
            if measuring.is_some() {
                intervals.push(now.duration_since(l).as_secs_f64() * 1e3);
            }
        }
        last = Some(now);
        let sent = app.party.history().iter().filter(|e| e.dir == Dir::Out).count() as u32 + app.party.queued_texts() as u32;
        let replies = app.party.history().iter().filter(|e| e.dir == Dir::In).count() as u32;
        let ready = app.party.session(BOB).is_some();
        if ready && measuring.is_none() {
            measuring = Some(now);
        }
        if ready && sent < n && sent.saturating_sub(replies) < window {
            let k = sent + 1;
            app.party.queue_text(BOB, &format!("message {k} from Alice")).map_err(|e| format!("queue: {e}"))?;
        }
        app.step(now);
        let t = Instant::now();
        term.draw(|f| app.draw(f)).map_err(|e| e.to_string())?;
        draw_ms.push(t.elapsed().as_secs_f64() * 1e3);
        if replies >= n && app.party.outbox_len() == 0 && app.party.queued_texts() == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("timed out: sent {sent} replies {replies} counters {:?}", app.party.counters()));
        }
        frame_pace(&mut next, frame);
    }
    let c = app.party.counters();
    if bench {
        let elapsed = measuring.map(|m| m.elapsed().as_secs_f64()).unwrap_or(1.0);
        let dh: Vec<&DhInfo> = app.dh_lat.iter().collect();
        let dev = if dh.is_empty() { 0.0 } else { dh.iter().map(|d| d.device_us as f64).sum::<f64>() / dh.len() as f64 / 1e3 };
        let host = if dh.is_empty() { 0.0 } else { dh.iter().map(|d| d.host_us as f64).sum::<f64>() / dh.len() as f64 / 1e3 };
        return Ok(format!(
            "{{\"frame_p99_ms\":{:.2},\"frame_p50_ms\":{:.2},\"frames\":{},\"msgs_per_s\":{:.3},\"dh_device_ms\":{:.3},\"dh_host_ms\":{:.3},\"dh_steps\":{},\"draw_p99_ms\":{:.3},\"store_write_ms\":{:.3}}}",
            percentile(intervals.clone(), 0.99),
            percentile(intervals.clone(), 0.5),
            intervals.len(),
            n as f64 / elapsed,
            dev,
            host,
            dh.len(),
            percentile(draw_ms, 0.99),
            app.party.save_time.as_secs_f64() * 1e3 / app.party.saves.max(1) as f64
        ));
    }
    // every reply arrived exactly once and echoes the text that was sent
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    let mut wrong = 0;
    for e in app.party.history().iter().filter(|e| e.dir == Dir::In) {
        let k = e.text.strip_prefix("re ").and_then(|t| t.split_once(':')).and_then(|(a, b)| a.parse::<u32>().ok().map(|k| (k, b.trim().to_string())));
        match k {
            Some((k, body)) if body == format!("message {k} from Alice") => *seen.entry(k).or_default() += 1,
            _ => wrong += 1,
        }
    }
    let dups = seen.values().filter(|&&v| v > 1).count();
    let missing = (1..=n).filter(|k| !seen.contains_key(k)).count();
    let s = &app.relay;
    let mut why = Vec::new();
    if wrong + dups + missing > 0 {
        why.push(format!("{missing} replies missing, {dups} duplicated, {wrong} wrong"));
    }
    if expect.faults {
        for (k, v) in [("dropped", s.dropped), ("reordered", s.reordered), ("duplicated", s.duplicated), ("corrupted", s.corrupted)] {
            if v == 0 {
                why.push(format!("the relay never {k} a frame"));
            }
        }
        if c.rej_replay == 0 || c.rej_tampered + c.rej_malformed == 0 {
            why.push("Alice rejected no replayed or no corrupted frame".into());
        }
    }
    if expect.resume && already_in == 0 {
        why.push("the run did not resume a stored conversation".into());
    }
    Ok(Verdict::judged("chat", why.is_empty())
        .with("messages", n)
        .with("replies", seen.values().sum::<u32>())
        .with("resumed_with", already_in)
        .with("missing", missing)
        .with("duplicates", dups)
        .with("wrong", wrong)
        .with("rejected", c.rejected())
        .with("replay", c.rej_replay)
        .with("tampered", c.rej_tampered)
        .with("malformed", c.rej_malformed)
        .with("dh_steps", c.dh_steps)
        .with("resent", c.retransmits)
        .with("relay_sent", s.sent)
        .with("dropped", s.dropped)
        .with("reordered", s.reordered)
        .with("duplicated", s.duplicated)
        .with("corrupted", s.corrupted)
        .detail(why.join("; "))
        .to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args, &|k: &str| std::env::var(k).ok()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("chat: {e}");
            std::process::exit(2);
        }
    };
    // the terminal comes back whatever happens: panics restore it before the message is printed
    if args.mode == Mode::Interactive {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            default(info);
        }));
    }
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);

    let engine = engine25519::Engine25519::new().unwrap_or_else(|e| die(&format!("engine25519: {e:?}")));
    let rng = PoolRng::from_trng().unwrap_or_else(|e| die(&e));
    let relay = Relay::new().unwrap_or_else(|e| die(&e.to_string()));
    if let Some(f) = args.faults {
        relay.set_faults(f).unwrap_or_else(|e| die(&e.to_string()));
    }
    let path = args.common.store.join("alice.state");
    let party = Party::initiator(&path, ALICE, BOB).unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
    let device = Device::new(args.common.pacing());
    let dh: Box<dyn DhRunner> = if args.sync_dh {
        Box::new(SyncRunner::new(engine_fn(engine.clone()), device))
    } else {
        Box::new(AsyncRunner::new(engine_fn(engine.clone()), device))
    };
    let engine_stats = start_engine_stats(engine.clone());
    let (net_tx, net_rx) = start_net(relay);
    let mut app = App {
        args_desc: args.common.describe(),
        engine_mode: args.common.engine,
        clock_hz: args.common.clock_hz,
        sync_dh: args.sync_dh,
        party,
        dh,
        rng,
        net_tx,
        net_rx,
        engine_stats,
        backend_name: "?".into(),
        relay: RelayStats::default(),
        faults: args.faults.unwrap_or_default(),
        input: String::new(),
        activity: VecDeque::new(),
        scroll: 0,
        quit: false,
        bundle_asked: None,
        t0: Instant::now(),
        frames: 0,
        last_frame: None,
        intervals: VecDeque::new(),
        frame_ms: 0.0,
        worst_recent: 0.0,
        dh_lat: VecDeque::new(),
    };
    let resumed = app.party.history().len();
    let desc = app.args_desc.clone();
    app.note(
        format!("{resumed} messages restored; {desc}; DH {}; store {}", if args.sync_dh { "on the UI thread (--sync-dh)" } else { "asynchronous" }, path.display()),
        Color::Cyan,
    );
    log::info!("chat: started ({desc}), mode {:?}", args.mode);
    match args.mode {
        Mode::Interactive => {
            let r = run_interactive(&mut app, args.fps);
            restore_terminal();
            if let Err(e) = r {
                log::error!("chat: terminal: {e}");
                eprintln!("chat: terminal: {e}");
            }
            log::info!("chat: quit by the user; shutting the system down");
            shutdown_system();
        }
        Mode::Script(n) | Mode::Bench(n) => {
            let bench = matches!(args.mode, Mode::Bench(_));
            let r = run_headless(&mut app, args.fps, n, bench, args.expect);
            let ok = match &r {
                Ok(line) if bench => {
                    println!("BENCH-JSON {line}");
                    true
                }
                Ok(line) => {
                    println!("{line}");
                    matches!(Verdict::parse(line), Some(Ok(v)) if v.passed())
                }
                Err(e) => {
                    println!("{}", Verdict::judged("chat", false).detail(e));
                    false
                }
            };
            let _ = std::io::stdout().flush();
            if args.shutdown {
                shutdown_system();
            }
            std::process::exit(if ok { 0 } else { 1 });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Result<Args, String> {
        let a: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        parse_args(&a, &|_| None)
    }

    #[test]
    fn flags_and_malformed_flags() {
        let a = p(&["--store", "/s", "--engine", "software", "--sync-dh", "--script", "200", "--faults", "10,10,10,10"]).unwrap();
        assert!(a.sync_dh);
        assert_eq!(a.mode, Mode::Script(200));
        assert_eq!(a.faults, Some(Faults { drop: 10, reorder: 10, duplicate: 10, corrupt: 10 }));
        assert_eq!(p(&["--store", "/s", "--engine", "software"]).unwrap().mode, Mode::Interactive);
        assert_eq!(a.expect, Expect::default());
        let a = p(&["--store", "/s", "--engine", "software", "--script", "9", "--expect-faults", "--expect-resume"]).unwrap();
        assert_eq!(a.expect, Expect { faults: true, resume: true });
        for (args, want) in [
            (&["--store", "/s", "--engine", "software", "--fps", "0"][..], "1..=240"),
            (&["--store", "/s", "--engine", "software", "--script", "0"][..], "1..=100000"),
            (&["--store", "/s", "--engine", "software", "--script", "1", "--bench", "1"][..], "exclude"),
            (&["--store", "/s", "--engine", "software", "--faults", "1,2"][..], "--faults"),
            (&["--store", "/s", "--engine", "software", "--bogus"][..], "unknown option"),
            (&["--store", "/s", "--engine", "software", "--expect-faults"][..], "need --script"),
            (&["--store", "/s", "--engine", "software", "--bench", "3", "--expect-resume"][..], "need --script"),
            (&["--engine", "software"][..], "--store"),
        ] {
            let e = p(args).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn commands_and_malformed_commands() {
        let z = Faults::default();
        assert_eq!(parse_command("drop 30", z), Ok(Command::Faults(Faults { drop: 30, ..z })));
        assert_eq!(parse_command("corrupt 5%", Faults { drop: 30, ..z }), Ok(Command::Faults(Faults { drop: 30, corrupt: 5, ..z })));
        assert_eq!(parse_command("dup 100", z), Ok(Command::Faults(Faults { duplicate: 100, ..z })));
        assert_eq!(parse_command("chaos", z), Ok(Command::Faults(Faults { drop: 20, reorder: 20, duplicate: 20, corrupt: 20 })));
        assert_eq!(parse_command("clean", Faults { drop: 9, ..z }), Ok(Command::Faults(z)));
        assert_eq!(parse_command("quit", z), Ok(Command::Quit));
        assert_eq!(parse_command("help", z), Ok(Command::Help));
        for (cmd, want) in [
            ("drop", "needs a percentage"),
            ("drop 101", "above 100"),
            ("drop -1", "not a percentage"),
            ("drop x", "not a percentage"),
            ("drop 1 2", "one percentage"),
            ("reorder 99999999999", "not a percentage"),
            ("quit now", "no argument"),
            ("chaos 5", "no argument"),
            ("", "empty command"),
            ("bogus", "unknown command"),
        ] {
            let e = parse_command(cmd, z).err().unwrap_or_else(|| panic!("/{cmd} accepted"));
            assert!(e.contains(want), "/{cmd}: {e}");
        }
    }

    #[test]
    fn percentile_is_nearest_rank() {
        assert_eq!(percentile(vec![], 0.99), 0.0);
        let v: Vec<f64> = (1..=100).map(|i| i as f64).collect();
        assert_eq!(percentile(v.clone(), 0.99), 99.0);
        assert_eq!(percentile(v, 0.5), 50.0);
    }
}
