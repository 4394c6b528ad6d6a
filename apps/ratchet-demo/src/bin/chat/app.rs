//! The chat's state and logic, without a terminal: the network and engine-statistics threads,
//! the `/command` parser, and `App` (the party, the DH runner, the relay, what the screen shows
//! and the frame statistics), stepped once per frame by the UI or the headless runner.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::style::{Color, Style};
use ratchet_demo::config::EngineMode;
use ratchet_demo::dh::DhRunner;
use ratchet_demo::entropy::PoolRng;
use ratchet_demo::party::{DhInfo, Event, Party, Reject};
use ratchet_demo::relay_api::{Faults, RelayStats};
use ratchet_demo::relay_client::{DrainEnd, Relay};
use ratchet_demo::{ALICE, BOB};

pub enum NetCmd {
    Send(u32, Vec<u8>),
    GetBundle(u32),
    SetFaults(Faults),
}

pub enum NetEvent {
    Frame(u32, Vec<u8>),
    Bundle(Vec<u8>),
    Stats(RelayStats),
    Error(String),
}

pub fn start_net(mut relay: Relay) -> (mpsc::Sender<NetCmd>, mpsc::Receiver<NetEvent>) {
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
                let (n, end) = relay.drain(ALICE, |from, data| etx.send(NetEvent::Frame(from, data)).is_ok());
                busy |= n > 0;
                match end {
                    DrainEnd::Empty => {}
                    DrainEnd::Refused => return,
                    DrainEnd::Failed(e) => {
                        let _ = etx.send(NetEvent::Error(format!("recv: {e}")));
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
pub fn start_engine_stats(engine: engine25519::Engine25519) -> Arc<Mutex<Option<engine25519::Stats>>> {
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
pub enum Command {
    Faults(Faults),
    Help,
    Quit,
}

/// A `/command` typed in the input line (without the slash); `f` = the current faults.
pub fn parse_command(cmd: &str, mut f: Faults) -> Result<Command, String> {
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

pub struct Activity {
    pub at: Instant,
    pub text: String,
    pub style: Style,
}

pub struct App {
    pub args_desc: String,
    pub engine_mode: EngineMode,
    pub clock_hz: u64,
    pub sync_dh: bool,
    pub party: Party,
    pub dh: Box<dyn DhRunner>,
    pub rng: PoolRng,
    pub net_tx: mpsc::Sender<NetCmd>,
    pub net_rx: mpsc::Receiver<NetEvent>,
    pub engine_stats: Arc<Mutex<Option<engine25519::Stats>>>,
    pub backend_name: String,
    pub relay: RelayStats,
    pub faults: Faults,
    pub input: String,
    pub activity: VecDeque<Activity>,
    pub scroll: usize,
    pub quit: bool,
    pub bundle_asked: Option<Instant>,
    // frame statistics
    pub t0: Instant,
    pub frames: u64,
    pub last_frame: Option<Instant>,
    pub intervals: VecDeque<f64>,
    pub frame_ms: f64,
    pub worst_recent: f64,
    pub dh_lat: VecDeque<DhInfo>,
}

pub const ACTIVITY_LINES: usize = 64;

impl App {
    pub fn note(&mut self, text: impl Into<String>, color: Color) {
        let text = text.into();
        log::info!("chat: {text}");
        self.activity.push_back(Activity { at: Instant::now(), text, style: Style::default().fg(color) });
        while self.activity.len() > ACTIVITY_LINES {
            self.activity.pop_front();
        }
    }

    pub fn frame_start(&mut self, now: Instant) {
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

    pub fn p99(&self) -> f64 {
        percentile(self.intervals.iter().copied().collect(), 0.99)
    }

    /// The frame's work: network, ratchet, never waiting (unless `--sync-dh`).
    pub fn step(&mut self, now: Instant) {
        while let Ok(ev) = self.net_rx.try_recv() {
            match ev {
                NetEvent::Frame(from, data) => self.party.deliver(from, data),
                NetEvent::Bundle(b) => match self.party.set_bundle(&b) {
                    Ok(()) => self.note("Bob's PQXDH bundle fetched from the relay, both signatures verified (XEdDSA; ML-KEM-1024 prekey)", Color::Cyan),
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
                            format!(
                                "Bob #{seq}: new ratchet key -> DH ratchet step, {} X25519: device {} / host {}",
                                d.jobs,
                                ms(d.device_us),
                                ms(d.host_us)
                            ),
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
                Event::Retransmit { seq, .. } => {
                    self.note(format!("no ack for #{seq}: resending the same ciphertext"), Color::Magenta)
                }
                Event::Acked { .. } | Event::Sent { .. } => {}
                Event::SessionReady { .. } => self.note("PQXDH done: Double Ratchet session with Bob", Color::Cyan),
                Event::Info(i) => self.note(i, Color::Cyan),
                Event::Error(e) => self.note(e, Color::Red),
                Event::BundleChanged => {}
            }
        }
        for (to, f) in self.party.take_outgoing() {
            let _ = self.net_tx.send(NetCmd::Send(to, f));
        }
        if let Some(s) = *self.engine_stats.lock().unwrap() {
            self.backend_name =
                engine25519::BackendId::from_u32(s.backend).map(|b| b.name()).unwrap_or("?").to_string();
        }
    }

    pub fn submit(&mut self) {
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

    pub fn command(&mut self, cmd: &str) {
        match parse_command(cmd, self.faults) {
            Ok(Command::Quit) => self.quit = true,
            Ok(Command::Help) => {
                self.note("/drop N  /reorder N  /dup N  /corrupt N  (percent)  /chaos  /clean  /quit", Color::Cyan)
            }
            Ok(Command::Faults(f)) => {
                self.faults = f;
                let _ = self.net_tx.send(NetCmd::SetFaults(f));
                self.note(
                    format!(
                        "relay faults: drop {}% reorder {}% duplicate {}% corrupt {}%",
                        f.drop, f.reorder, f.duplicate, f.corrupt
                    ),
                    Color::Cyan,
                );
            }
            Err(e) => self.note(e, Color::Red),
        }
    }

    pub fn key(&mut self, k: KeyEvent) {
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
            KeyCode::PageUp | KeyCode::Up => {
                self.scroll = self.scroll.saturating_add(if k.code == KeyCode::Up { 1 } else { 10 })
            }
            KeyCode::PageDown | KeyCode::Down => {
                self.scroll = self.scroll.saturating_sub(if k.code == KeyCode::Down { 1 } else { 10 })
            }
            _ => {}
        }
    }

    // -------------------------------------------------------------------------- drawing
}

pub fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

pub fn ms(us: u64) -> String {
    if us >= 10_000 {
        format!("{:.0} ms", us as f64 / 1e3)
    } else {
        format!("{:.2} ms", us as f64 / 1e3)
    }
}

pub fn clock(unix_ms: u64) -> String {
    let s = unix_ms / 1000;
    format!("{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_malformed_commands() {
        let z = Faults::default();
        assert_eq!(parse_command("drop 30", z), Ok(Command::Faults(Faults { drop: 30, ..z })));
        assert_eq!(
            parse_command("corrupt 5%", Faults { drop: 30, ..z }),
            Ok(Command::Faults(Faults { drop: 30, corrupt: 5, ..z }))
        );
        assert_eq!(parse_command("dup 100", z), Ok(Command::Faults(Faults { duplicate: 100, ..z })));
        assert_eq!(
            parse_command("chaos", z),
            Ok(Command::Faults(Faults { drop: 20, reorder: 20, duplicate: 20, corrupt: 20 }))
        );
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
