//! The chat on the simulated Precursor (docs/chat.md "On the simulated Precursor"):
//! `cargo xtask run --device`, step `chat:device` and bench provider `device-chat`.
//!
//! The device image plus three programs of apps/ratchet-demo built for the device: chat-device
//! (Alice: the memory LCD and the keyboard; PID 9, allowed to power the SoC off: `/quit`),
//! chat-relay (PID 10) and chat-bob (PID 11). The image gives processes no command line, so the
//! options are baked into the build (`CHAT_DEVICE_ARGS`, `CHAT_BOB_DEVICE_ARGS`). Typed lines
//! reach Alice through the debug UART and Precursor's keyboard block (run.py `--keys` /
//! `--type-after`); the screen is what the memory LCD's panel received (its log).

use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::Engine;
use crate::build::power::Extra;
use crate::build::target::TARGET;
use crate::ctx::Ctx;
use crate::harness::precursor::{self, Phase, ProfileReq, RunOptions, SIM_CLK_HZ};
use crate::harness::profile::{self, RunInfo, Show, Window};
use crate::steps::{BenchProvider, BenchResults};

/// The programs, in layout order (PID 9, 10, 11).
pub const PROGRAMS: [&str; 3] = ["chat-device", "chat-relay", "chat-bob"];
/// Bob's options on the device: fewer prekeys than hosted (each one-time ML-KEM-1024 prekey is
/// an ML-KEM key generation and an XEdDSA signature on the simulated CPU), but enough that the
/// one session of a run does not make him refill them (chat-bob refills below 4 one-time
/// prekeys and below a quarter of the PQ ones).
const BOB_ARGS: &str = "--store /device --no-pace --one-time-prekeys 8 --pq-one-time-prekeys 2";
/// The ticker's text row on the screen (apps/ratchet-demo chat-device `rows`): redrawn once
/// per frame and at no other time, so its first pixel line's sends are the frames.
pub const TICKER_ROW: usize = 49;
/// The conversation's first text row.
const CONVERSATION_ROW: usize = 3;

/// The SoC's engine for a chat engine (software X25519 needs none: the v2 SoC).
fn soc_isa(engine: Engine) -> Result<&'static str> {
    match engine {
        Engine::V1 => Ok("v1"),
        Engine::V2 | Engine::Software => Ok("v2"),
        Engine::Rtl => bail!("--engine rtl is the hosted chat's Verilated engine; on the simulated Precursor the engine is on the SoC (v1 or v2)"),
    }
}

/// Alice's baked options.
fn alice_args(engine: Engine, sync_dh: bool) -> String {
    let mut a = format!("--store /device --no-pace --engine {}", engine.name());
    if sync_dh {
        a.push_str(" --sync-dh");
    }
    a
}

/// Build the three programs with their options baked in; the extras in layout order.
pub fn build(engine: Engine, sync_dh: bool) -> Result<Vec<Extra>> {
    soc_isa(engine)?;
    crate::build::target::ensure_toolchain()?;
    let mut c = crate::build::device::build_command(&["ratchet-demo".to_string()], &[]);
    c.arg("--no-default-features");
    for p in PROGRAMS {
        c.args(["--bin", p]);
    }
    c.env("CHAT_DEVICE_ARGS", alice_args(engine, sync_dh)).env("CHAT_BOB_DEVICE_ARGS", BOB_ARGS);
    crate::supervisor::run(&mut c, Duration::from_secs(2300), "cross-build of the chat for the device")?;
    let dir = crate::util::target_dir().join(TARGET).join("release");
    let mut out = Vec::new();
    for (i, p) in PROGRAMS.iter().enumerate() {
        let elf = dir.join(p);
        let n = crate::build::device_xous::compressed_instructions(&elf)?;
        if n != 0 {
            bail!("{}: {n} compressed instructions (the simulated CPU has no C extension)", elf.display());
        }
        out.push(if i == 0 { Extra::system(elf) } else { Extra::app(elf) });
    }
    Ok(out)
}

/// The phases every chat run passes: the boot, the relay, Bob, Alice's UI, the session.
fn start_phases() -> Vec<Phase> {
    let mut v = precursor::boot_phases();
    v.push(Phase::new("relay", r"^CHAT-RELAY ready"));
    v.push(Phase::new("bob", r"^CHAT-BOB ready"));
    v.push(Phase::new("alice", r"^CHAT-DEVICE ready"));
    v
}

/// A scripted exchange: `texts` typed one after the other (the next once Bob's reply to the
/// previous is on the screen), then `/quit`. Returns the typing script and the phases.
fn script(texts: &[String]) -> (Vec<(String, String)>, Vec<Phase>) {
    let mut typing = Vec::new();
    let mut phases = start_phases();
    let mut after = r"^CHAT-DEVICE ready".to_string();
    for (i, t) in texts.iter().enumerate() {
        let seq = i + 1;
        typing.push((after.clone(), format!("{t}\r")));
        phases.push(Phase::new(&format!("sent-{seq}"), &format!(r"^CHAT-SHOWN sent seq={seq}$")));
        phases.push(Phase::new(&format!("acked-{seq}"), &format!(r"^CHAT-SHOWN acked seq={seq}$")));
        phases.push(Phase::new(&format!("reply-{seq}"), &format!(r"^CHAT-SHOWN reply seq={seq}$")));
        if seq == 1 {
            phases.push(Phase::new("session", r"^CHAT-SESSION ready$"));
        }
        after = format!(r"^CHAT-SHOWN reply seq={seq}$");
    }
    typing.push((after, "/quit\r".into()));
    phases.push(Phase::new("quit", r"^CHAT-DEVICE quit "));
    (typing, phases)
}

/// One scripted run on the simulated Precursor; the result, the panel log and the keyboard log.
struct Run {
    r: precursor::SmokeResult,
    panel: String,
    keys: String,
}

fn scripted_run(ctx: &Ctx, engine: Engine, sync_dh: bool, texts: &[String], timeout_s: u64) -> Result<Run> {
    let extras = build(engine, sync_dh)?;
    let (typing, phases) = script(texts);
    let keys_log = crate::build::sim_layout::sim_dir().join("chat-keys.log");
    let _ = std::fs::remove_file(&keys_log);
    let opts = RunOptions {
        engine_isa: Some(soc_isa(engine)?),
        type_after: &typing,
        keys_log: Some(&keys_log),
        ..Default::default()
    };
    // the run ends at Alice's quit line: the exchange is what is judged (her power-off after
    // /quit was seen to hang in longer runs; `run --device` still waits for it)
    let r = precursor::smoke_run_with(&extras, &phases, true, timeout_s, ctx.verbose, &opts)?;
    precursor::report(&r);
    if !r.ok {
        let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
        bail!("the chat on the simulated Precursor ({}, DH {}) failed: end {}, phases not reached: [{}], failure lines: {:?}", engine.name(), if sync_dh { "sync" } else { "async" }, r.reason, missing.join(", "), r.failed_lines);
    }
    let panel = std::fs::read_to_string(precursor::memlcd_log()).context("the panel log")?;
    let keys = std::fs::read_to_string(&keys_log).with_context(|| keys_log.display().to_string())?;
    Ok(Run { r, panel, keys })
}

// ------------------------------------------------------------------------------ the screen

/// The screen's text rows after every line of a panel log up to cycle `until` (all if None).
pub fn screen_rows(panel_log: &str, until: Option<u64>) -> Result<Vec<String>> {
    let mut fb = memlcd::FrameBuffer::new();
    apply_panel(&mut fb, panel_log, until)?;
    let g = memlcd::grid::Glyphs::new();
    Ok((0..memlcd::grid::ROWS).map(|r| g.read_row(&fb, r).trim_end().to_string()).collect())
}

/// Apply panel-log lines (`<cycle> <line> <words 10..0 as 88 hex digits>`) to `fb`; a
/// malformed line is refused with its number. Returns the lines applied.
fn apply_panel(fb: &mut memlcd::FrameBuffer, log: &str, until: Option<u64>) -> Result<usize> {
    let mut n = 0;
    for (i, row) in log.lines().enumerate() {
        let (c, y, words) = parse_panel_line(row).with_context(|| format!("panel log line {}", i + 1))?;
        if until.is_some_and(|u| c > u) {
            break;
        }
        fb.write_line(y, &words);
        n += 1;
    }
    Ok(n)
}

fn parse_panel_line(row: &str) -> Result<(u64, usize, [u32; memlcd::WORDS_PER_LINE])> {
    let f: Vec<&str> = row.split(' ').collect();
    if f.len() != 3 || f[2].len() != 88 {
        bail!("malformed: {row:?}");
    }
    let c: u64 = f[0].parse().with_context(|| format!("cycle in {row:?}"))?;
    let y: usize = f[1].parse().with_context(|| format!("line in {row:?}"))?;
    if y >= memlcd::LINES {
        bail!("line {y} is outside the panel");
    }
    let mut words = [0u32; memlcd::WORDS_PER_LINE];
    for (w, word) in words.iter_mut().enumerate() {
        let hex = &f[2][88 - 8 * (w + 1)..88 - 8 * w];
        *word = u32::from_str_radix(hex, 16).with_context(|| format!("hex in {row:?}"))?;
    }
    Ok((c, y, words))
}

/// For each of `wanted` (a text row as chat-device draws it), the first cycle at which a
/// conversation row of the panel reads exactly that (glyph by glyph, all ten of its pixel
/// lines received), from the panel log's lines at or after cycle `from`; None if never.
fn first_shown(panel_log: &str, wanted: &[String], from: u64) -> Result<Vec<Option<u64>>> {
    let g = memlcd::grid::Glyphs::new();
    let mut fb = memlcd::FrameBuffer::new();
    let mut at = vec![None; wanted.len()];
    let rows = CONVERSATION_ROW..CONVERSATION_ROW + 38;
    for (i, row) in panel_log.lines().enumerate() {
        let (c, y, words) = parse_panel_line(row).with_context(|| format!("panel log line {}", i + 1))?;
        fb.write_line(y, &words);
        let r = y / memlcd::grid::CELL_H;
        if c < from || !rows.contains(&r) {
            continue;
        }
        let text = g.read_row(&fb, r);
        let text = text.trim_end();
        for (w, a) in wanted.iter().zip(at.iter_mut()) {
            if a.is_none() && text == w {
                *a = Some(c);
            }
        }
    }
    Ok(at)
}

/// The conversation the screen must show after `texts` were sent and answered (Bob answers
/// `re <seq>: <text>`; apps/ratchet-demo chat-bob), each line as chat-device draws it.
fn expected_conversation(texts: &[String]) -> Vec<String> {
    let mut v = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        v.push(format!("you #{} {t} [ok]", i + 1));
        v.push(format!("Bob #{} re {}: {t}", i + 1, i + 1));
    }
    v
}

/// The conversation rows of the screen (read back glyph by glyph) must hold every expected
/// entry, once. Entries may interleave (a reply can arrive before the next acknowledgement is
/// drawn), so each is looked for on its own.
fn judge_screen(rows: &[String], texts: &[String]) -> Result<()> {
    let conv = &rows[CONVERSATION_ROW..CONVERSATION_ROW + 38];
    for want in expected_conversation(texts) {
        let n = conv.iter().filter(|r| **r == want).count();
        if n != 1 {
            bail!("the screen shows {want:?} {n} times (conversation rows: {conv:#?})");
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------ step chat:device

/// Two messages: the first rides on the PQXDH set-up, Bob's reply to it carries his new ratchet
/// key, so the second costs a DH ratchet step on both sides (the shortest exchange that shows
/// the whole protocol; the bench types four).
const STEP_TEXTS: [&str; 2] = ["hello Bob", "second: a ratchet step each"];
/// Wall-clock limit of the step's simulation (boot, PQXDH set-up, two messages).
const STEP_SIM_TIMEOUT_S: u64 = 2400;

pub fn test_steps() -> Vec<crate::steps::TestStep> {
    vec![crate::steps::step!("chat:device", STEP_SIM_TIMEOUT_S + 30 * 60, check)]
}

/// Step `chat:device`: two messages on the v2 engine, typed on the keyboard, through the
/// relay to Bob and back; then the screen must show each message acknowledged and each reply.
pub fn check(ctx: &Ctx) -> Result<()> {
    let texts: Vec<String> = STEP_TEXTS.iter().map(|s| s.to_string()).collect();
    let run = scripted_run(ctx, Engine::V2, false, &texts, STEP_SIM_TIMEOUT_S)?;
    // every byte typed went through the keyboard block
    let typed: usize = texts.iter().map(|t| t.len() + 1).sum::<usize>() + "/quit\r".len();
    let taken = run.keys.lines().count();
    if taken != typed {
        bail!("the keyboard block took {taken} bytes, {typed} were typed");
    }
    let quit = run.r.phase("quit").context("no quit")?.0;
    let rows = screen_rows(&run.panel, Some(quit))?;
    for r in &rows[CONVERSATION_ROW..CONVERSATION_ROW + 2 * texts.len()] {
        eprintln!("chat:device: screen: {r}");
    }
    judge_screen(&rows, &texts)?;
    let line = run.r.phase_line("quit").unwrap_or("");
    eprintln!("chat:device: {line}");
    eprintln!(
        "chat:device: every message and reply read back from the panel, {} keys through the keyboard block",
        taken
    );
    Ok(())
}

// ------------------------------------------------------------------------------ bench

/// Messages per bench run (the figures cover the second on: seven messages, each with a DH
/// ratchet step on each side; with the exchange at about 0.08 s per message, five messages
/// left 8 frame intervals in the window, too few for a p99).
const BENCH_MESSAGES: usize = 8;
/// Wall-clock limit of each bench simulation: four run in parallel (by default), at 0.1-0.15 M
/// cycles/s each on a busy 2-core machine, and the sync-software run needs about 400 M cycles.
const BENCH_SIM_TIMEOUT_S: u64 = 7200;
/// The async v2 run is sampled (a PC every PROFILE_PERIOD cycles; docs/sim.md "Profiling") and
/// the bench window's samples are attributed to processes and functions: where the one core
/// goes while messages are in flight (printed, and profile.json in the run's directory).
const PROFILE_PERIOD: u32 = 2048;

pub fn bench_providers() -> Vec<BenchProvider> {
    vec![BenchProvider { name: "device-chat", timeout: Duration::from_secs(BENCH_SIM_TIMEOUT_S + 60 * 60), run: bench }]
}

/// Frame intervals (ms) from the panel log: the sends of the ticker row's first pixel line
/// between cycles `from` and `to`.
pub fn frame_intervals_ms(panel_log: &str, from: u64, to: u64) -> Result<Vec<f64>> {
    let line = TICKER_ROW * memlcd::grid::CELL_H;
    let mut at = Vec::new();
    for (i, row) in panel_log.lines().enumerate() {
        let (c, y, _) = parse_panel_line(row).with_context(|| format!("panel log line {}", i + 1))?;
        if y == line && c >= from && c <= to {
            at.push(c);
        }
    }
    Ok(at.windows(2).map(|w| (w[1] - w[0]) as f64 / SIM_CLK_HZ * 1e3).collect())
}

/// Cycles at which the keyboard block took an Enter (0x0d), in order.
fn enter_cycles(keys_log: &str) -> Result<Vec<u64>> {
    let mut v = Vec::new();
    for (i, l) in keys_log.lines().enumerate() {
        let (c, b) = l.split_once(' ').with_context(|| format!("keys log line {}: {l:?}", i + 1))?;
        if b.trim() == "0d" {
            v.push(c.parse().with_context(|| format!("keys log line {}: {l:?}", i + 1))?);
        }
    }
    Ok(v)
}

/// Figures of one run: frame p99 over the exchange from the second message on, the mean DH
/// ratchet step as Alice's UI reported it, and per message from the second on Enter -> its
/// acknowledgement on the screen (the panel log: the first cycle at which its row reads
/// `you #N <text> [ok]`, not the app's own `CHAT-SHOWN acked` line).
struct Figures {
    frame_p99_ms: f64,
    frames: usize,
    step_ms: f64,
    send_to_ack_ms: Vec<f64>,
}

/// The bench window: from the second message's Enter (the first one's exchange includes Bob's
/// PQXDH acceptance) to the last reply on the screen.
fn window(run: &Run, n: usize) -> Result<(u64, u64)> {
    let enters = enter_cycles(&run.keys)?;
    if enters.len() < n {
        bail!("{} Enter keys in the keyboard log, {n} messages", enters.len());
    }
    let last = run.r.phase(&format!("reply-{n}")).context("no last reply")?.0;
    Ok((enters[1.min(n - 1)], last))
}

fn figures(run: &Run, texts: &[String]) -> Result<Figures> {
    let n = texts.len();
    let enters = enter_cycles(&run.keys)?;
    let (from, to) = window(run, n)?;
    let iv = frame_intervals_ms(&run.panel, from, to)?;
    if iv.len() < 10 {
        bail!("only {} frames while the messages were in flight", iv.len());
    }
    let acked: Vec<String> = expected_conversation(texts).into_iter().step_by(2).collect();
    let shown = first_shown(&run.panel, &acked, from)?;
    let mut send_to_ack = Vec::new();
    for (i, e) in enters.iter().take(n).enumerate().skip(1) {
        let a = shown[i].with_context(|| format!("{:?} never on the panel", acked[i]))?;
        send_to_ack.push((a.saturating_sub(*e)) as f64 / SIM_CLK_HZ * 1e3);
    }
    let quit = run.r.phase_line("quit").context("no quit line")?;
    let step_ms = field(quit, "step_ms")?;
    Ok(Figures { frame_p99_ms: ratchet_demo_p99(iv.clone()), frames: iv.len(), step_ms, send_to_ack_ms: send_to_ack })
}

fn field(line: &str, key: &str) -> Result<f64> {
    let v = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .with_context(|| format!("no {key}= in {line:?}"))?;
    v.parse().with_context(|| format!("{key}={v} in {line:?}"))
}

/// Nearest-rank 99th percentile.
fn ratchet_demo_p99(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// The four runs of the bench: (engine, DH on the UI thread, key suffix).
const BENCH_RUNS: [(Engine, bool, &str); 4] = [
    (Engine::V2, false, "async_v2"),
    (Engine::V1, false, "async_v1"),
    (Engine::Software, false, "async_software"),
    (Engine::Software, true, "sync_software"),
];

/// Which runs of [`BENCH_RUNS`] to make (env `DEVICE_CHAT_RUNS`, comma-separated keys, e.g.
/// `async_v2`; all when unset) and how many simulations at once (env `DEVICE_CHAT_JOBS`, 1-4,
/// default 4: all in parallel). For iterating on one mode on a busy machine; the bench's
/// figures are the whole provider's.
fn bench_selection(runs: Option<&str>, jobs: Option<&str>) -> Result<(Vec<(Engine, bool, &'static str)>, usize)> {
    let sel: Vec<(Engine, bool, &'static str)> = match runs.map(str::trim).filter(|v| !v.is_empty()) {
        None => BENCH_RUNS.to_vec(),
        Some(v) => {
            let mut sel = Vec::new();
            for k in v.split(',').map(str::trim) {
                let r = BENCH_RUNS.iter().find(|r| r.2 == k).with_context(|| {
                    format!("DEVICE_CHAT_RUNS: no run {k:?} (runs: {})", BENCH_RUNS.map(|r| r.2).join(", "))
                })?;
                if !sel.iter().any(|s: &(Engine, bool, &str)| s.2 == k) {
                    sel.push(*r);
                }
            }
            sel
        }
    };
    let jobs = match jobs.map(str::trim).filter(|v| !v.is_empty()) {
        None => BENCH_RUNS.len(),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=BENCH_RUNS.len()).contains(&n) => n,
            _ => bail!("DEVICE_CHAT_JOBS must be 1..={}, got {v:?}", BENCH_RUNS.len()),
        },
    };
    Ok((sel, jobs))
}

/// The runs are built and laid out one after the other (each in its own directory, its
/// options baked in), then simulated `DEVICE_CHAT_JOBS` at a time (one simulator process each).
fn bench(ctx: &Ctx) -> Result<BenchResults> {
    let (runs, jobs) = bench_selection(
        std::env::var("DEVICE_CHAT_RUNS").ok().as_deref(),
        std::env::var("DEVICE_CHAT_JOBS").ok().as_deref(),
    )?;
    let texts: Vec<String> = (1..=BENCH_MESSAGES).map(|i| format!("bench message {i}")).collect();
    let (typing, phases) = script(&texts);
    let base = crate::build::sim_layout::sim_dir().join("device-chat-bench");
    let mut prepared = Vec::new();
    for (engine, sync_dh, key) in runs {
        let dir = base.join(key);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("elf"))?;
        let mut extras = Vec::new();
        for e in build(engine, sync_dh)? {
            let to = dir.join("elf").join(e.elf.file_name().context("ELF name")?);
            std::fs::copy(&e.elf, &to)?;
            extras.push(Extra { elf: to, may_power_off: e.may_power_off });
        }
        crate::build::sim_layout::build(&dir, &extras, &[], ctx.verbose).context("the boot files")?;
        prepared.push((engine, sync_dh, key, dir, extras));
    }
    let profiled = "async_v2";
    type Outcome = (String, Result<Figures>, bool, Engine, (u64, u64, u64));
    let mut results: Vec<Result<Outcome>> = Vec::new();
    for group in prepared.chunks(jobs) {
        results.extend(std::thread::scope(|s| {
            let handles: Vec<_> = group
                .iter()
                .map(|(engine, sync_dh, key, dir, extras)| {
                    let (typing, phases, texts) = (&typing, &phases, &texts);
                    s.spawn(move || -> Result<Outcome> {
                        let keys_log = dir.join("keys.log");
                        let panel = dir.join("memlcd.log");
                        let prof = (*key == profiled)
                            .then(|| ProfileReq { file: dir.join("samples.txt"), period: PROFILE_PERIOD });
                        let opts = RunOptions {
                            engine_isa: Some(soc_isa(*engine)?),
                            type_after: typing,
                            keys_log: Some(&keys_log),
                            dir: Some(dir),
                            memlcd: Some(&panel),
                            laid_out: true,
                            profile: prof.as_ref(),
                            ..Default::default()
                        };
                        // the figures need the exchange, not the power-off: the run ends at the
                        // quit line (one bench run's power-off after /quit hung)
                        let r = precursor::smoke_run_with(extras, phases, true, BENCH_SIM_TIMEOUT_S, false, &opts)?;
                        if !r.ok {
                            let missing: Vec<&str> =
                                r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
                            bail!(
                                "device-chat {key}: end {}, phases not reached: [{}], failure lines: {:?}",
                                r.reason,
                                missing.join(", "),
                                r.failed_lines
                            );
                        }
                        let run = Run {
                            r,
                            panel: std::fs::read_to_string(&panel)?,
                            keys: std::fs::read_to_string(&keys_log)?,
                        };
                        let rows = screen_rows(&run.panel, run.r.phase("quit").map(|p| p.0))?;
                        judge_screen(&rows, texts)?;
                        precursor::report(&run.r);
                        let (from, to) = window(&run, texts.len())?;
                        // the figures may fail (too few frames): the profile is still reported
                        Ok((
                            key.to_string(),
                            figures(&run, texts),
                            *sync_dh,
                            *engine,
                            (from, to, run.r.cycles.unwrap_or(0)),
                        ))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a bench run panicked"))))
                .collect::<Vec<_>>()
        }));
    }
    let mut out = BenchResults::new();
    for r in results {
        let (key, f, sync_dh, engine, (from, to, end)) = r?;
        if key == profiled {
            let (_, _, _, dir, extras) = prepared.iter().find(|p| p.2 == key).context("the profiled run")?;
            let info = RunInfo::new(
                "v2",
                PROFILE_PERIOD,
                texts.len() as u64 - 1,
                (from, to),
                end,
                profile::programs(false, extras, dir)?,
            );
            std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&info.to_json())? + "\n")?;
            eprintln!("device-chat {key}: where the core went from the second message's Enter to the last reply (per message):");
            profile::report(dir, &info, &Show { window: Window::Timing, top: 25, trace: None })?;
        }
        let f = f.with_context(|| format!("device-chat {key}"))?;
        eprintln!(
            "device-chat {key}: frame p99 {:.1} ms over {} frames, DH ratchet step {:.2} ms, Enter->ack {:?} ms",
            f.frame_p99_ms, f.frames, f.step_ms, f.send_to_ack_ms
        );
        out.insert(format!("device_ui_frame_p99_ms_{key}"), (f.frame_p99_ms * 100.0).round() / 100.0);
        if !sync_dh {
            out.insert(format!("device_ratchet_step_ms_{}", engine.name()), (f.step_ms * 100.0).round() / 100.0);
        }
        if key == "async_v2" {
            let mean = f.send_to_ack_ms.iter().sum::<f64>() / f.send_to_ack_ms.len() as f64;
            out.insert("device_send_to_ack_ms_v2".into(), (mean * 100.0).round() / 100.0);
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------------------ run --device

/// `cargo xtask run --device`: the chat on the simulated Precursor, its screen as text in this
/// terminal, typed lines to its keyboard. Ends when the device powers off (`/quit`).
pub fn run(ctx: &Ctx, engine: Engine, sync_dh: bool) -> Result<()> {
    let extras = build(engine, sync_dh)?;
    let sim = crate::build::sim_layout::sim_dir();
    let dir = sim.join("chat");
    crate::build::sim_layout::build(&dir, &extras, &[], ctx.verbose).context("the boot files")?;
    let run_dir = sim.join("chat-run");
    let _ = std::fs::remove_dir_all(&run_dir);
    std::fs::create_dir_all(&run_dir)?;
    let keys = dir.join("keys.txt");
    std::fs::write(&keys, b"")?;
    let log_path = dir.join("run.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = precursor::runner(&dir.join("rom.bin"), &dir.join("ram.bin"), 24 * 3600)?;
    cmd.arg("--keep").arg(&run_dir).arg("--keys").arg(&keys).args(["--end", "powerdown"]);
    cmd.env(precursor::ENGINE_ISA_VAR, soc_isa(engine)?);
    cmd.stdout(log.try_clone()?).stderr(log).stdin(std::process::Stdio::null());
    let mut child = crate::supervisor::spawn_grouped(&mut cmd)?;
    println!(
        "The chat on the simulated Precursor ({} engine, DH {}): booting (a minute or more).",
        engine.name(),
        if sync_dh { "on the UI thread" } else { "async" }
    );
    println!("Type a line and press Enter; /quit powers the device off. Its log: {}", log_path.display());
    // typed lines go to the keyboard, each ended by Enter (CR, as a terminal sends it)
    let kp = keys.clone();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { return };
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&kp) {
                let _ = f.write_all(format!("{line}\r").as_bytes());
            }
        }
    });
    let panel_path = run_dir.join("memlcd.log");
    let mut fb = memlcd::FrameBuffer::new();
    let glyphs = memlcd::grid::Glyphs::new();
    let mut pos = 0u64;
    let mut partial = String::new();
    let mut shown: Vec<String> = Vec::new();
    let mut drawn_at = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait()? {
            println!("The simulated Precursor stopped ({st}); its log: {}", log_path.display());
            return if std::fs::read_to_string(&log_path).unwrap_or_default().contains("precursor.run: powerdown") {
                Ok(())
            } else {
                bail!("the simulation did not end by the device powering off: see {}", log_path.display())
            };
        }
        if let Ok(mut f) = std::fs::File::open(&panel_path) {
            f.seek(SeekFrom::Start(pos))?;
            let mut chunk = String::new();
            pos += f.read_to_string(&mut chunk)? as u64;
            partial.push_str(&chunk);
            if let Some(end) = partial.rfind('\n') {
                let whole: String = partial.drain(..=end).collect();
                apply_panel(&mut fb, &whole, None)?;
            }
        }
        let rows: Vec<String> =
            (0..memlcd::grid::ROWS).map(|r| glyphs.read_row(&fb, r).trim_end().to_string()).collect();
        // the ticker row changes every frame: redraw for it at most every 2 s (each redraw
        // clears the terminal, and with it the echo of a line being typed)
        let others_changed =
            rows.iter().zip(&shown).enumerate().any(|(i, (a, b))| i != TICKER_ROW && a != b) || shown.is_empty();
        if others_changed || (rows != shown && drawn_at.elapsed() > Duration::from_secs(2)) {
            drawn_at = std::time::Instant::now();
            let mut out = std::io::stdout().lock();
            // home + clear, then the screen in a frame of its width
            let _ = write!(out, "\x1b[H\x1b[2J+{}+\r\n", "-".repeat(memlcd::grid::COLS));
            for r in &rows {
                let _ = write!(out, "|{r:<w$}|\r\n", w = memlcd::grid::COLS);
            }
            let _ = write!(
                out,
                "+{}+\r\ntype a line + Enter (/quit ends); log: {}\r\n",
                "-".repeat(memlcd::grid::COLS),
                log_path.display()
            );
            let _ = out.flush();
            shown = rows;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(c: u64, y: usize, words: &[u32; 11]) -> String {
        let hex: String = words.iter().rev().map(|w| format!("{w:08x}")).collect();
        format!("{c} {y} {hex}")
    }

    #[test]
    fn the_screen_is_read_back_from_a_panel_log_and_judged() {
        // draw what chat-device would show, send every line, read it back
        let texts = vec!["hi".to_string(), "two".to_string()];
        let g = memlcd::grid::Glyphs::new();
        let mut fb = memlcd::FrameBuffer::new();
        for (i, e) in expected_conversation(&texts).iter().enumerate() {
            g.draw_row(&mut fb, CONVERSATION_ROW + i, e);
        }
        let log: String =
            fb.dirty_lines().map(|y| line(1000 + y as u64, y, fb.line(y).try_into().unwrap()) + "\n").collect();
        let rows = screen_rows(&log, None).unwrap();
        assert_eq!(rows[CONVERSATION_ROW], "you #1 hi [ok]");
        judge_screen(&rows, &texts).unwrap();
        // a missing acknowledgement fails; so does a screen before the lines were sent
        let mut bad = rows.clone();
        bad[CONVERSATION_ROW] = "you #1 hi [..]".into();
        assert!(judge_screen(&bad, &texts).is_err());
        assert!(judge_screen(&screen_rows(&log, Some(10)).unwrap(), &texts).is_err());
        // when each row was first on the panel: "[ok]" only once its row was sent, counted
        // from `from` on; a row never sent is None
        let mut pending = memlcd::FrameBuffer::new();
        g.draw_row(&mut pending, CONVERSATION_ROW, "you #1 hi [..]");
        let early: String = pending
            .dirty_lines()
            .map(|y| line(500 + y as u64, y, pending.line(y).try_into().unwrap()) + "\n")
            .collect();
        let want = vec!["you #1 hi [..]".to_string(), "you #1 hi [ok]".to_string(), "you #3 never".to_string()];
        // (a row reads right once its lines that differ arrived: "[ok]" and "[..]" share
        // their glyphs' blank last line)
        let ok_at = |at: &[Option<u64>]| at[1].is_some_and(|c| (1030..=1039).contains(&c));
        let at = first_shown(&(early.clone() + &log), &want, 0).unwrap();
        assert!(at[0].is_some_and(|c| (530..=539).contains(&c)) && ok_at(&at) && at[2].is_none(), "{at:?}");
        let at = first_shown(&(early + &log), &want, 600).unwrap();
        // (from 600 on: the "[..]" row was still there when the first line after it came)
        assert!(at[0] == Some(1030) && ok_at(&at) && at[2].is_none(), "{at:?}");
        // a malformed line is refused with its number
        let e = screen_rows(&format!("{log}1 2 zz\n"), None).unwrap_err();
        assert!(format!("{e:#}").contains("panel log line"), "{e:#}");
    }

    #[test]
    fn frames_keys_and_figures_come_from_the_logs() {
        let y = TICKER_ROW * 10;
        let w = [0u32; 11];
        let log: String =
            [0u64, 3_333_333, 6_666_666, 16_666_666].iter().map(|c| line(*c, y, &w) + "\n").collect::<String>()
                + &line(5, 3, &w);
        let iv = frame_intervals_ms(&log, 0, 20_000_000).unwrap();
        assert_eq!(iv.len(), 3);
        assert!((iv[2] - 100.0).abs() < 1e-6);
        assert_eq!(ratchet_demo_p99(iv), 100.0);
        assert_eq!(enter_cycles("10 68\n20 0d\n30 0d\n").unwrap(), vec![20, 30]);
        assert!(enter_cycles("garbage\n").is_err());
        assert_eq!(field("CHAT-DEVICE quit frames=3 step_ms=2.5", "step_ms").unwrap(), 2.5);
        assert!(field("CHAT-DEVICE quit", "step_ms").is_err());
    }

    #[test]
    fn the_script_types_each_line_after_the_previous_reply() {
        let (t, p) = script(&["a".into(), "b".into()]);
        assert_eq!(t[0], (r"^CHAT-DEVICE ready".to_string(), "a\r".to_string()));
        assert_eq!(t[1].0, r"^CHAT-SHOWN reply seq=1$");
        assert_eq!(t[2].1, "/quit\r");
        assert!(p.iter().any(|x| x.name == "acked-2"));
        assert!(soc_isa(Engine::Rtl).is_err());
    }

    #[test]
    fn the_bench_runs_can_be_chosen_and_serialised() {
        let (all, jobs) = bench_selection(None, None).unwrap();
        assert_eq!((all.len(), jobs), (4, 4));
        let (one, jobs) = bench_selection(Some("async_v2"), Some("1")).unwrap();
        assert_eq!((one.iter().map(|r| r.2).collect::<Vec<_>>(), jobs), (vec!["async_v2"], 1));
        let (two, _) = bench_selection(Some(" sync_software, async_v2 ,async_v2"), Some("")).unwrap();
        assert_eq!(two.iter().map(|r| r.2).collect::<Vec<_>>(), vec!["sync_software", "async_v2"]);
        assert!(bench_selection(Some("async_v3"), None).unwrap_err().to_string().contains("no run"));
        for bad in ["0", "5", "x"] {
            assert!(bench_selection(None, Some(bad)).unwrap_err().to_string().contains("1..=4"), "{bad}");
        }
    }
}
