//! The chat without a terminal: `--script N` and `--bench N` draw every frame into an
//! off-screen terminal and judge the run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratchet_demo::party::{DhInfo, Dir};
use ratchet_demo::BOB;
use verdict::bench::BenchLine;
use verdict::Verdict;

use crate::app::*;
use crate::ui::frame_pace;

/// What a `--script` run must also have seen to pass (the harness's scenario).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expect {
    /// every relay fault happened, and replayed and corrupted frames were rejected
    pub faults: bool,
    /// the run resumed a conversation from the store
    pub resume: bool,
}

/// Headless: `script` sends `n` messages (a window of 4 in flight) and returns its verdict line;
/// `bench` sends one at a time, measures frame intervals and returns its `BENCH-JSON` line.
/// Both draw every frame into an off-screen terminal.
pub fn run_headless(app: &mut App, fps: u32, n: u32, bench: bool, expect: Expect) -> Result<String, String> {
    let mut term = Terminal::new(ratatui::backend::TestBackend::new(120, 36)).map_err(|e| e.to_string())?;
    let frame = Duration::from_secs(1) / fps;
    let mut next = Instant::now();
    let window = if bench { 1 } else { 4 };
    let deadline = Instant::now() + Duration::from_secs(if bench { 600 } else { 300 });
    let already_in = app.party.history().iter().filter(|e| e.dir == Dir::In).count();
    let mut measuring: Option<Instant> = None;
    let mut setup_ms = 0.0;
    let mut intervals: Vec<f64> = Vec::new();
    // frame intervals before the session is ready: the bundle fetch and the PQXDH set-up
    // (X25519 on the engine, the ML-KEM encapsulation on the worker)
    let mut setup_intervals: Vec<f64> = Vec::new();
    let started = Instant::now();
    let mut last = None::<Instant>;
    let mut draw_ms: Vec<f64> = Vec::new();
    loop {
        let now = Instant::now();
        app.frame_start(now);
        if let Some(l) = last {
            let dt = now.duration_since(l).as_secs_f64() * 1e3;
            if measuring.is_some() {
                intervals.push(dt);
            } else {
                setup_intervals.push(dt);
            }
        }
        last = Some(now);
        let sent =
            app.party.history().iter().filter(|e| e.dir == Dir::Out).count() as u32 + app.party.queued_texts() as u32;
        let replies = app.party.history().iter().filter(|e| e.dir == Dir::In).count() as u32;
        let ready = app.party.session(BOB).is_some();
        if ready && measuring.is_none() {
            measuring = Some(now);
            setup_ms = now.duration_since(started).as_secs_f64() * 1e3;
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
        let dev = if dh.is_empty() {
            0.0
        } else {
            dh.iter().map(|d| d.device_us as f64).sum::<f64>() / dh.len() as f64 / 1e3
        };
        let host =
            if dh.is_empty() { 0.0 } else { dh.iter().map(|d| d.host_us as f64).sum::<f64>() / dh.len() as f64 / 1e3 };
        return Ok(BenchLine::new()
            .num("frame_p99_ms", percentile(intervals.clone(), 0.99), 2)
            .num("frame_p50_ms", percentile(intervals.clone(), 0.5), 2)
            .int("frames", intervals.len() as u64)
            .num("msgs_per_s", n as f64 / elapsed, 3)
            .num("dh_device_ms", dev, 3)
            .num("dh_host_ms", host, 3)
            .int("dh_steps", dh.len() as u64)
            .num("draw_p99_ms", percentile(draw_ms, 0.99), 3)
            .num("store_write_ms", app.party.save_time.as_secs_f64() * 1e3 / app.party.saves.max(1) as f64, 3)
            .num("setup_ms", setup_ms, 1)
            .num("setup_frame_max_ms", setup_intervals.iter().cloned().fold(0.0, f64::max), 2)
            .to_string());
    }
    // every reply arrived exactly once and echoes the text that was sent
    let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
    let mut wrong = 0;
    for e in app.party.history().iter().filter(|e| e.dir == Dir::In) {
        let k = e
            .text
            .strip_prefix("re ")
            .and_then(|t| t.split_once(':'))
            .and_then(|(a, b)| a.parse::<u32>().ok().map(|k| (k, b.trim().to_string())));
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
        for (k, v) in [
            ("dropped", s.dropped),
            ("reordered", s.reordered),
            ("duplicated", s.duplicated),
            ("corrupted", s.corrupted),
        ] {
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
