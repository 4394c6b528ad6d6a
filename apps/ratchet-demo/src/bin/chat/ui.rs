//! The chat's terminal UI: `App` drawn with ratatui (conversation, activity, engine, relay,
//! ticker), the terminal's raw mode and its restoration, the frame pacing, and the interactive
//! loop on crossterm's events.

use std::io::Write;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event as TermEvent};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::{Frame, Terminal};
use ratchet_demo::config::EngineMode;
use ratchet_demo::party::Dir;

use crate::app::*;

impl App {
    pub fn draw(&self, f: &mut Frame) {
        let area = f.area();
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Min(6),
                Constraint::Length(9),
                Constraint::Length(1),
                Constraint::Length(1),
                Constraint::Length(1),
            ])
            .split(area);
        self.draw_conversation(f, rows[0]);
        let mid = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(58), Constraint::Percentage(42)])
            .split(rows[1]);
        self.draw_activity(f, mid[0]);
        self.draw_engine(f, mid[1]);
        self.draw_relay(f, rows[2]);
        self.draw_ticker(f, rows[3]);
        let input =
            Line::from(vec![Span::styled("> ", Style::default().fg(Color::Yellow)), Span::raw(self.input.as_str())]);
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
            lines.push(Line::styled(
                "Type a message and press Enter. /help for the relay's fault commands, Ctrl-C to quit.",
                Style::default().fg(Color::DarkGray),
            ));
        }
        for e in &hist[start..end] {
            let (who, color) = match e.dir {
                Dir::Out => ("you", Color::Yellow),
                Dir::In => ("Bob", Color::Green),
            };
            let mut spans = vec![
                Span::styled(clock(e.unix_ms), Style::default().fg(Color::DarkGray)),
                Span::styled(
                    format!(" {who:>3} #{:<4} ", e.seq),
                    Style::default().fg(color).add_modifier(Modifier::BOLD),
                ),
                Span::raw(e.text.clone()),
            ];
            match (e.dir, e.dh) {
                (Dir::Out, _) => {
                    spans.push(Span::styled(if e.acked { "  ✓" } else { "  …" }, Style::default().fg(Color::DarkGray)))
                }
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
            " Alice ↔ Bob · PQXDH (ML-KEM-1024) + Double Ratchet{}{} ",
            if self.scroll > 0 { format!(" · scrolled {}", self.scroll) } else { String::new() },
            if pending > 0 { format!(" · {pending} waiting for the session") } else { String::new() }
        );
        f.render_widget(Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)), r);
    }

    fn draw_activity(&self, f: &mut Frame, r: Rect) {
        let c = self.party.counters();
        let mut lines = vec![
            Line::from(vec![
                Span::styled(
                    format!("rejected {}", c.rejected()),
                    Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
                ),
                Span::raw(format!(
                    " (replay {}, tampered {}, malformed {})",
                    c.rej_replay, c.rej_tampered, c.rej_malformed
                )),
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
            lines.push(Line::from(vec![
                Span::styled(format!("{age:>3}s "), Style::default().fg(Color::DarkGray)),
                Span::styled(a.text.clone(), a.style),
            ]));
        }
        f.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" What the ratchet did ")),
            r,
        );
    }

    fn draw_engine(&self, f: &mut Frame, r: Rect) {
        let mut lines = Vec::new();
        let device = match self.engine_mode {
            EngineMode::Software => {
                format!("software X25519 ({:.1} ms/DH, device)", ratchet_demo::dh::SOFTWARE_DH.as_secs_f64() * 1e3)
            }
            m => format!("engine {} @ {:.0} MHz", m.name(), self.clock_hz as f64 / 1e6),
        };
        lines.push(Line::from(format!(
            "{device} · DH {}",
            if self.sync_dh { "SYNC on the UI thread" } else { "async" }
        )));
        match *self.engine_stats.lock().unwrap() {
            Some(s) => {
                lines.push(Line::from(format!(
                    "service backend {} · jobs {} · fallbacks {}",
                    self.backend_name, s.jobs, s.fallbacks
                )));
                lines.push(Line::from(format!(
                    "cycles {} · queue {} (max {}) · errors {} · clients {}",
                    s.cycles, s.queue_depth, s.queue_max, s.errors, s.clients
                )));
            }
            None => lines.push(Line::from("engine stats: waiting")),
        }
        match self.party.last_dh {
            Some(d) => lines.push(Line::from(match self.party.last_kem {
                Some((k, t)) => format!(
                    "last batch: {} X25519, {} cycles + {k} ML-KEM ({} on the worker)",
                    d.jobs,
                    d.cycles,
                    ms(t.as_micros() as u64)
                ),
                None => format!("last batch: {} X25519, {} cycles", d.jobs, d.cycles),
            })),
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
        lines.push(Line::from(format!(
            "TRNG pool {} B ready{}",
            self.rng.available(),
            if errs > 0 { format!(" · {errs} TRNG errors") } else { String::new() }
        )));
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
        let style =
            if self.worst_recent > 50.0 { Style::default().fg(Color::Red) } else { Style::default().fg(Color::Green) };
        f.render_widget(Paragraph::new(t).style(style), r);
    }
}

// ------------------------------------------------------------------------------ terminal

/// Puts the terminal back (raw mode off, main screen, cursor shown). Idempotent.
pub fn restore_terminal() {
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

pub fn frame_pace(next: &mut Instant, frame: Duration) {
    *next += frame;
    let now = Instant::now();
    if *next > now {
        std::thread::sleep(*next - now);
    } else {
        *next = now;
    }
}

pub fn run_interactive(app: &mut App, fps: u32) -> std::io::Result<()> {
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
