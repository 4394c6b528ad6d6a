//! chat-device: Alice on the device (the simulated Precursor; docs/chat.md "On the simulated
//! Precursor"). The same party, store and protocol code as the hosted chat (ratchet_demo::party),
//! drawn on the memory LCD (libs/memlcd, text rows through ratchet_demo::device_ui), typed on the
//! debug UART through Precursor's keyboard block (UART_CHAR), Bob and the relay in the same image
//! (chat-bob, chat-relay: Xous processes, frames through the relay's IPC as in hosted mode).
//!
//! - DH: every X25519 on the engine service's `hw` backend (a reply from any other backend is an
//!   error), on a worker thread (`AsyncRunner`); `--sync-dh` runs them on the UI thread;
//!   `--engine software` runs x25519-dalek on this CPU instead (real cycles, nothing paced).
//! - Keys from the TRNG service (called on the UI thread: a blocking call of a few hundred us).
//! - The UI thread draws at `--fps` (30): each frame the ticker row (frame counter, interval,
//!   p99, worst); other rows only when they change; every change is sent to the panel at once
//!   (the rows that changed), so a key, a reply or an acknowledgement shows without waiting for
//!   the next frame. Between frames it waits on its event channel. A keyboard thread sleeps
//!   until the keyboard block's interrupt and then drains its FIFO; a network thread sends at
//!   once, a receiver thread waits on the relay (which answers when a frame comes); the DH
//!   worker wakes the UI when a batch is done. No thread polls.
//! - Lines for the host (stdout = the log server's console): `CHAT-DEVICE ready ...`,
//!   `CHAT-SESSION ready`, `CHAT-SHOWN sent seq=N`, `CHAT-SHOWN acked seq=N`, `CHAT-SHOWN
//!   reply seq=N` (printed after the panel received the rows that show it), `CHAT-STORE-FULL
//!   ...`, `CHAT-REFUSED ...`, and on `/quit` `CHAT-DEVICE quit frames=.. p99_ms=.. worst_ms=..`,
//!   then the SoC is powered off.
//!
//! Options (baked into the build by `cargo xtask run --device`: the image gives processes no
//! command line): ratchet_demo::config::COMMON, `--sync-dh`, `--fps F`.

use service_ipc::options::{Opt, Takes};

const MINE: &[Opt] = &[
    Opt { flag: "--sync-dh", env: None, takes: Takes::Nothing },
    Opt { flag: "--fps", env: None, takes: Takes::Value },
];

#[derive(Debug)]
#[allow(dead_code)]
struct Args {
    common: ratchet_demo::config::Common,
    sync_dh: bool,
    fps: u32,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let opts: Vec<Opt> = ratchet_demo::config::COMMON.iter().chain(MINE).copied().collect();
    let p = service_ipc::options::parse(&opts, args, &|_| None)?;
    let common = ratchet_demo::config::Common::from(&p)?;
    let fps = p.u64("--fps")?.unwrap_or(30);
    if !(1..=60).contains(&fps) {
        return Err(format!("--fps must be 1..=60, got {fps}"));
    }
    Ok(Args { common, sync_dh: p.is_set("--sync-dh"), fps: fps as u32 })
}

fn main() {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let args = ratchet_demo::config::process_args(option_env!("CHAT_DEVICE_ARGS"));
    let args = match parse_args(&args) {
        Ok(a) => a,
        Err(e) => {
            println!("CHAT-DEVICE error: {e}");
            xous::terminate_process(2)
        }
    };
    run(args)
}

#[cfg(not(target_os = "xous"))]
fn run(_: Args) {
    eprintln!(
        "chat-device draws on the device's memory LCD: run it on the simulated Precursor (cargo xtask run --device)"
    );
    std::process::exit(2);
}

#[cfg(target_os = "xous")]
fn run(args: Args) {
    device::run(args)
}

#[cfg(target_os = "xous")]
mod device {
    use std::cell::RefCell;
    use std::io::Write;
    use std::rc::Rc;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use engine25519::{BackendId, Engine25519, X25519Reply};
    use ratchet_demo::config::EngineMode;
    use ratchet_demo::device_ui::{conversation_rows, FrameStats, Key, LineEditor, Screen};
    use ratchet_demo::dh::{dalek_fn, AsyncRunner, Device, DhFn, DhRunner, Handoff, Pacing, SyncRunner};
    use ratchet_demo::party::{Dir, Event, Party, Reject, VerifiedBundle};
    use ratchet_demo::relay_client::Relay;
    use ratchet_demo::{store, ALICE, BOB};
    use utralib::generated::{utra, CSR, HW_KEYBOARD_BASE};
    use zeroize::Zeroizing;

    use super::Args;

    fn say(line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn die(msg: &str) -> ! {
        say(&format!("CHAT-DEVICE error: {msg}"));
        log::error!("chat-device: {msg}");
        xous::terminate_process(2)
    }

    /// X25519 on the engine service, a batch per request (a DH ratchet step's three jobs in
    /// one round trip through the OS, back to back on the engine); every reply must come from
    /// the engine (`hw`).
    fn hw_fn(engine: Engine25519) -> DhFn {
        Box::new(move |jobs| {
            use engine25519::api::MAX_BATCH;
            use zeroize::Zeroize;
            // operands and replies in slots on the stack (no allocation on the way to the
            // engine); a longer list goes as consecutive requests of MAX_BATCH
            let mut pairs = Zeroizing::new([([0u8; 32], [0u8; 32]); MAX_BATCH]);
            let mut replies = [X25519Reply::default(); MAX_BATCH];
            let mut out = Vec::with_capacity(jobs.len());
            for chunk in jobs.chunks(MAX_BATCH) {
                for (p, j) in pairs.iter_mut().zip(chunk) {
                    *p = (*j.secret_bytes(), j.public);
                }
                let n = chunk.len();
                let r = engine.x25519_batch_into(&pairs[..n], &mut replies[..n]);
                pairs.zeroize();
                let r = r.map_err(|e| format!("engine25519: {e:?}")).and_then(|()| {
                    for rep in &replies[..n] {
                        if rep.backend != Some(BackendId::Hw) {
                            return Err(format!("engine25519 answered from backend {:?}, not hw", rep.backend));
                        }
                        out.push((Zeroizing::new(rep.result), rep.cycles));
                    }
                    Ok(())
                });
                for rep in replies.iter_mut() {
                    rep.result.zeroize();
                }
                r?;
            }
            Ok(out)
        })
    }

    enum Ev {
        Keys(Vec<u8>),
        Frame(u32, Vec<u8>),
        /// Bob's bundle, its signatures checked on the network thread (two XEdDSA
        /// verifications, which would stall the UI thread for a few frames)
        Bundle(Result<VerifiedBundle, String>),
        /// the relay has no bundle for Bob yet
        NoBundle,
        NetError(String),
        /// the DH worker finished a batch (the UI polls the runner for it)
        DhDone,
    }

    enum NetCmd {
        Send(u32, Vec<u8>),
        GetBundle(u32),
    }

    /// What the keyboard interrupt's handler needs: the block's CSR page and the connection to
    /// the keyboard thread's private server.
    struct KeyBell {
        csr: *mut u32,
        cid: xous::CID,
    }

    /// The keyboard block's interrupt (IRQ 13, event `inject`: a character entered the FIFO):
    /// masks the event, clears it and wakes the keyboard thread, which drains the FIFO and
    /// unmasks it again (so at most one wake-up is outstanding).
    fn keyboard_irq(_irq: usize, arg: *mut usize) {
        // Safety: `arg` is the leaked KeyBell (start_keyboard); its CSR page stays mapped.
        let bell = unsafe { &*(arg as *const KeyBell) };
        let mut csr = CSR::new(bell.csr);
        csr.wfo(utra::keyboard::EV_ENABLE_INJECT, 0);
        csr.wfo(utra::keyboard::EV_PENDING_INJECT, 1);
        let _ = xous::try_send_message(bell.cid, xous::Message::new_scalar(0, 0, 0, 0, 0));
    }

    /// Precursor's keyboard block: characters typed on the debug UART, from its FIFO. Reading
    /// UART_CHAR takes the head character out; `stb` says whether there was one. The keyboard
    /// thread sleeps in the kernel until the block's interrupt says a character came (no
    /// polling), then takes every character there is.
    fn start_keyboard(tx: mpsc::Sender<Ev>) -> Result<(), xous::Error> {
        let page = xous::map_memory(
            xous::MemoryAddress::new(HW_KEYBOARD_BASE),
            None,
            4096,
            xous::MemoryFlags::R | xous::MemoryFlags::W,
        )?;
        let sid = xous::create_server()?;
        let cid = xous::connect(sid)?;
        let bell: &'static KeyBell = Box::leak(Box::new(KeyBell { csr: page.as_mut_ptr() as *mut u32, cid }));
        let addr = page.as_mut_ptr() as usize;
        xous::claim_interrupt(utra::keyboard::KEYBOARD_IRQ, keyboard_irq, bell as *const KeyBell as *mut usize)?;
        std::thread::Builder::new()
            .name("chat-keys".into())
            .spawn(move || {
                let mut csr = CSR::new(addr as *mut u32);
                loop {
                    let mut got = Vec::new();
                    loop {
                        let v = csr.r(utra::keyboard::UART_CHAR);
                        if v & (1 << 8) == 0 {
                            break;
                        }
                        got.push((v & 0xff) as u8);
                    }
                    if !got.is_empty() && tx.send(Ev::Keys(got)).is_err() {
                        return;
                    }
                    // a character that came since the FIFO was found empty left the event
                    // pending: unmasking it raises the interrupt at once
                    csr.wfo(utra::keyboard::EV_ENABLE_INJECT, 1);
                    if xous::receive_message(sid).is_err() {
                        return;
                    }
                }
            })
            .map_err(|_| xous::Error::InternalError)?;
        Ok(())
    }

    /// The network: a thread that sends (a command wakes it) and a receiver thread that waits
    /// on the relay for Alice's frames (`RecvWait`: the relay answers when one comes), each on
    /// its own connection. Neither polls.
    fn start_net(mut relay: Relay, tx: mpsc::Sender<Ev>) -> mpsc::Sender<NetCmd> {
        let inbound = Relay::new().unwrap_or_else(|e| die(&e.to_string()));
        let rtx = tx.clone();
        inbound
            .spawn_receiver(ALICE, "chat-recv", move |r| {
                rtx.send(match r {
                    Ok((from, data)) => Ev::Frame(from, data),
                    Err(e) => Ev::NetError(format!("recv: {e}")),
                })
                .is_ok()
            })
            .expect("spawn the receiver thread");
        let (ctx, crx) = mpsc::channel::<NetCmd>();
        std::thread::Builder::new()
            .name("chat-net".into())
            .spawn(move || {
                for c in crx {
                    match c {
                        NetCmd::Send(to, f) => {
                            if let Err(e) = relay.send(ALICE, to, &f) {
                                let _ = tx.send(Ev::NetError(format!("send: {e}")));
                            }
                        }
                        NetCmd::GetBundle(peer) => {
                            let ev = match relay.get_bundle(peer) {
                                Ok(b) => Ev::Bundle(VerifiedBundle::check(&b)),
                                Err(e) => {
                                    log::info!("chat-device: no bundle for {peer} yet ({e})");
                                    Ev::NoBundle
                                }
                            };
                            if tx.send(ev).is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .expect("spawn the network thread");
        ctx
    }

    struct Ui {
        args: Args,
        party: Party,
        dh: Box<dyn DhRunner>,
        rng: trng::Trng,
        net: mpsc::Sender<NetCmd>,
        editor: LineEditor,
        /// the screen, the panel and the frame clock: shared with the pauses inside the
        /// party's work ([`frame_pause`])
        frames: Rc<RefCell<Frames>>,
        /// the last five notes, a ring: a note replaces the oldest in place (its row and the
        /// marker of the one before change; a scrolling list changed all five rows, 50 pixel
        /// lines of panel transfer that the UI thread waits for)
        activity: [String; 5],
        /// the ring's newest note, if any
        act_newest: Option<usize>,
        message: String,
        bundle_asked: Option<Instant>,
        /// a bundle request is out (answered by Ev::Bundle or Ev::NoBundle)
        bundle_waiting: bool,
        session_said: bool,
        /// (what, seq) to announce once the panel shows it
        to_announce: Vec<(&'static str, u32)>,
        /// (what, seq) whose rows went out in the transfer running now: announced once it ends
        shown: Vec<(&'static str, u32)>,
        /// when to look at the panel again (a transfer runs, or rows wait for one)
        panel_at: Option<Instant>,
        quit: bool,
        /// DH ratchet steps (batches of 3 X25519) Alice's decryptions needed, and their time
        steps: u64,
        step_us: u64,
        /// the rows last built (the screen's text)
        rows: Vec<String>,
        /// the conversation's rows, and the history they show: (entries, acknowledged, the
        /// last entry's direction, peer and number)
        conv: Vec<String>,
        conv_key: Option<ConvKey>,
    }

    type ConvKey = (usize, usize, Option<(bool, u32, u32)>);

    /// The ticker's text row (xtask's device-chat bench reads frames off it).
    const TICKER: usize = 49;
    /// The ticker row's pixel lines.
    const TICKER_LINES: std::ops::Range<usize> = TICKER * memlcd::grid::CELL_H..(TICKER + 1) * memlcd::grid::CELL_H;
    /// How long before a frame is due the panel must be free again: rows drawn between frames
    /// go out only as far as their transfer ends by then (the clock counts whole milliseconds)
    const FRAME_MARGIN: Duration = Duration::from_millis(1);
    /// The panel's time per line sent (its serial clock at 2 MHz).
    const LINE_TIME: Duration = Duration::from_micros(memlcd::device::CLOCKS_PER_LINE / 2);

    /// What a frame needs: the screen, the panel, the frame clock and its statistics.
    struct Frames {
        screen: Screen,
        lcd: memlcd::device::Memlcd,
        stats: FrameStats,
        last_frame: Option<Instant>,
        /// when the next frame is due (a fixed cadence: each a period after the one before,
        /// unless a frame came more than a period late)
        next_frame: Instant,
        period: Duration,
        /// when the running transfer should end (its lines at the panel's clock)
        panel_end: Instant,
    }

    impl Frames {
        /// Whether a frame is due at `now`; if so it is counted (its interval) and the next one
        /// is set a period later (from when this one was due: a fixed cadence, so lateness does
        /// not add up), or a period from now if this one is more than a period late.
        fn due(&mut self, now: Instant) -> bool {
            if now < self.next_frame {
                return false;
            }
            self.next_frame = (self.next_frame + self.period).max(now);
            if let Some(t) = self.last_frame {
                self.stats.push(now.duration_since(t).as_secs_f64() * 1000.0);
            }
            self.last_frame = Some(now);
            true
        }

        /// The ticker row: changes with every frame and only then (the bench counts frames by
        /// this row, at [`TICKER`]).
        fn ticker(&self) -> String {
            // whole milliseconds as integers: `{:.0}` of an f64 is an exact decimal conversion
            // (big-number arithmetic in software on this CPU), three of them every frame
            let ms = |v: f64| (v + 0.5) as u64;
            format!(
                "frame {} {} ms p99 {} worst {}",
                self.stats.frames,
                ms(self.stats.last()),
                ms(self.stats.p99()),
                ms(self.stats.worst)
            )
        }

        /// A frame now if one is due (see [`Self::show_ticker`]).
        fn frame_if_due(&mut self) {
            let now = Instant::now();
            if self.due(now) {
                self.show_ticker(now);
            }
        }

        /// A frame's ticker row drawn and, if the panel is free, sent alone at once (else the
        /// next look at the panel sends it first), before any other work of the UI thread.
        fn show_ticker(&mut self, now: Instant) {
            let t = self.ticker();
            self.screen.show_row(TICKER, &t);
            if let Some(n) = self.lcd.start_flush_some(&mut self.screen.fb, |y| TICKER_LINES.contains(&y), usize::MAX) {
                self.panel_end = now + LINE_TIME * n as u32;
            }
        }
    }

    thread_local! {
        /// The UI thread's frames, for [`frame_pause`].
        static FRAMES: RefCell<Option<Rc<RefCell<Frames>>>> = const { RefCell::new(None) };
    }

    /// The pause between the pieces of the party's work on the UI thread (Party::pause, and
    /// libs/ratchet's pauses inside a DH ratchet step, a decryption, an encryption: each piece
    /// about one KDF or one AES pass): a frame that fell due meanwhile is drawn and sent here,
    /// not after the whole step (a reply's step, store write and rows are 7-9 ms on this CPU).
    /// One clock reading per pause.
    fn frame_pause() {
        FRAMES.with(|f| {
            if let Some(frames) = f.borrow().as_ref() {
                // (never borrowed elsewhere while the party works; if it were, no frame here)
                if let Ok(mut fr) = frames.try_borrow_mut() {
                    fr.frame_if_due();
                }
            }
        });
    }

    impl Ui {
        fn note(&mut self, s: String) {
            log::info!("chat-device: {s}");
            let i = self.act_newest.map_or(0, |n| (n + 1) % self.activity.len());
            self.activity[i] = s;
            self.act_newest = Some(i);
        }

        fn key(&mut self, b: u8) {
            match self.editor.feed(b) {
                Key::Submit(line) => {
                    if line.trim() == "/quit" {
                        self.quit = true;
                        return;
                    }
                    match self.party.queue_text(BOB, &line) {
                        Ok(()) => self.message.clear(),
                        Err(e) => {
                            // not queued: the line stays in the input (nothing typed is lost)
                            if e.contains("store full") {
                                say(&format!("CHAT-STORE-FULL {e}"));
                            }
                            self.message = format!("not sent: {e}");
                            self.editor.restore(line);
                        }
                    }
                }
                Key::Refused(why) => {
                    if self.editor.refused == 1 || self.editor.refused % 64 == 0 {
                        say(&format!("CHAT-REFUSED {why} (refused {})", self.editor.refused));
                    }
                    self.message = why;
                }
                Key::Edited | Key::Ignored => {}
            }
        }

        fn event(&mut self, ev: Ev) {
            match ev {
                Ev::Keys(k) => {
                    for b in k {
                        self.key(b);
                    }
                }
                Ev::Frame(from, data) => self.party.deliver(from, data),
                Ev::Bundle(b) => {
                    self.bundle_waiting = false;
                    match b {
                        Ok(b) => {
                            self.party.set_verified_bundle(b);
                            self.note("Bob's PQXDH bundle: both signatures verify".into())
                        }
                        Err(e) => self.note(format!("bundle refused: {e}")),
                    }
                }
                Ev::NoBundle => self.bundle_waiting = false,
                Ev::NetError(e) => self.note(format!("relay: {e}")),
                Ev::DhDone => {}
            }
        }

        /// Party work, its events, what the screen shows; `frame`: a frame tick (the ticker
        /// row advances).
        fn step(&mut self, frame: bool, got: bool, mut now: Instant) {
            if frame {
                // the frame first: the party's work below can take milliseconds
                self.frames.borrow_mut().show_ticker(now);
            }
            // the screen's rows are built again only when something may have changed (an event
            // came, the party reported or sent something, an error); a frame tick alone only
            // advances the ticker row
            let mut changed = got || self.rows.is_empty();
            if let Some(peer) = self.party.needs_bundle() {
                // one request at a time (its check takes a while), at most every 100 ms
                if !self.bundle_waiting
                    && self.bundle_asked.map(|t| now.duration_since(t) > Duration::from_millis(100)).unwrap_or(true)
                {
                    self.bundle_asked = Some(now);
                    self.bundle_waiting = true;
                    let _ = self.net.send(NetCmd::GetBundle(peer));
                }
            }
            // a DH batch handed to the worker here has reached the engine when `tick` returns:
            // the handoff runs the waiting worker at once (`Handoff::xous_server`)
            let tick = self.party.tick(now, self.dh.as_mut(), &mut self.rng);
            if let Err(e) = tick {
                let m = e.to_string();
                if m.contains("store full") {
                    say(&format!("CHAT-STORE-FULL {m}"));
                }
                self.message = m;
                changed = true;
            }
            let events = self.party.take_events();
            changed |= !events.is_empty();
            for ev in events {
                match ev {
                    Event::Received { seq, text, dh, .. } => {
                        // the device's own time: submission to result (the clock counts ms)
                        if let Some(d) = dh.filter(|d| d.jobs == 3) {
                            self.steps += 1;
                            self.step_us += d.host_us;
                        }
                        let d = dh.map(|d| format!(", DH x{} {} ms", d.jobs, d.host_us / 1000)).unwrap_or_default();
                        self.note(format!("Bob #{seq}: {} bytes{d}", text.len()));
                        self.to_announce.push(("reply", seq));
                    }
                    Event::Sent { seq, .. } => self.to_announce.push(("sent", seq)),
                    Event::Acked { seq, .. } => self.to_announce.push(("acked", seq)),
                    Event::Retransmit { seq, .. } => self.note(format!("no ack for #{seq}: resending")),
                    Event::Rejected { kind, why, .. } => {
                        let k = match kind {
                            Reject::Replay => "replay",
                            Reject::Tampered => "tampered",
                            Reject::Malformed => "malformed",
                        };
                        self.note(format!("rejected ({k}): {why}"));
                    }
                    Event::Error(e) => self.note(format!("error: {e}")),
                    Event::Info(i) => self.note(i),
                    _ => {}
                }
            }
            let outgoing = self.party.take_outgoing();
            // the party's work (a decryption, a store write, an encryption) takes milliseconds
            // on this CPU: a frame that fell due meanwhile and was not drawn in its pauses is
            // this step's
            let worked = changed || !outgoing.is_empty();
            for (to, f) in outgoing {
                changed = true;
                let _ = self.net.send(NetCmd::Send(to, f));
            }
            if !frame && worked {
                now = Instant::now();
                let mut f = self.frames.borrow_mut();
                if f.due(now) {
                    f.show_ticker(now);
                }
            }
            if !self.session_said && self.party.session(BOB).is_some() {
                self.session_said = true;
                say("CHAT-SESSION ready");
            }
            if changed {
                self.rows = self.rows();
            } else {
                self.rows[TICKER] = self.frames.borrow().ticker();
            }
            // a DH batch in flight: its result wakes the worker from the engine service's
            // interrupt, which readies the worker but does not preempt this thread; between the
            // rows and the drawing (each about a millisecond) the worker may take it at once
            self.let_worker_run();
            self.frames.borrow_mut().screen.show(&self.rows);
            self.let_worker_run();
            // a fresh reading: the rows, their drawing and the yields above took milliseconds,
            // and the room before the next frame is counted from now (with the step's first
            // reading a transfer of rows could run past the frame and hold its ticker back)
            self.panel(Instant::now());
        }

        /// Pass the core on once if a DH batch is in flight (a yield asks for nothing: if
        /// nobody else is ready this thread goes on at once).
        fn let_worker_run(&self) {
            if !self.args.sync_dh && self.party.dh_in_flight() {
                xous::yield_slice();
            }
        }

        /// The panel: rows drawn since the last transfer go out as soon as the panel is free,
        /// and the UI thread never waits for a transfer (it waited for every one, some 16 ms for
        /// a reply's rows, and its frames fell late meanwhile). The block raises no interrupt
        /// when a transfer ends: while one runs or rows wait for it, the UI wakes when its
        /// estimated end comes (`panel_at`). What a transfer showed is announced (`CHAT-SHOWN`)
        /// once the UI finds the panel free after it: the panel has received those rows.
        fn panel(&mut self, now: Instant) {
            let mut frames = self.frames.borrow_mut();
            let f = &mut *frames;
            if !f.lcd.busy() {
                for (what, seq) in self.shown.drain(..) {
                    say(&format!("CHAT-SHOWN {what} seq={seq}"));
                }
            }
            // A frame's ticker row (it changes with frames only) goes out alone, first; the
            // other rows after it, and between frames only as many lines as the panel sends
            // before the next frame is due, so that a frame never waits behind a transfer of
            // rows (a reply's rows are about 40 lines, 7 ms).
            let ticker = TICKER_LINES.clone().any(|y| f.screen.fb.is_dirty(y));
            let (pick, max): (fn(usize) -> bool, usize) = if ticker {
                (|y| TICKER_LINES.contains(&y), usize::MAX)
            } else {
                // whole text rows (a row is never half on the panel)
                let room = f.next_frame.saturating_duration_since(now).saturating_sub(FRAME_MARGIN);
                let lines = (room.as_micros() / LINE_TIME.as_micros()) as usize;
                (|_| true, lines / memlcd::grid::CELL_H * memlcd::grid::CELL_H)
            };
            let held = !ticker && max == 0 && f.screen.fb.any_dirty();
            if !held {
                if let Some(n) = f.lcd.start_flush_some(&mut f.screen.fb, pick, max) {
                    f.panel_end = now + LINE_TIME * n as u32;
                    // what this step drew is shown once every row drawn so far went out
                    if !f.screen.fb.any_dirty() {
                        self.shown.append(&mut self.to_announce);
                    }
                    if n == 0 {
                        for (what, seq) in self.shown.drain(..) {
                            say(&format!("CHAT-SHOWN {what} seq={seq}"));
                        }
                    }
                }
            }
            self.panel_at = if held {
                // the rows wait for the frame, which sends them after its ticker
                Some(f.next_frame)
            } else {
                (f.screen.fb.any_dirty() || !self.shown.is_empty())
                    .then(|| f.panel_end.max(now + Duration::from_millis(1)))
            };
        }

        fn rows(&mut self) -> Vec<String> {
            const W: usize = Screen::COLS;
            let sep = "-".repeat(W);
            let c = self.party.counters();
            let mut rows = Vec::with_capacity(Screen::ROWS);
            rows.push("Alice <-> Bob  PQXDH + Double Ratchet".to_string());
            let dev = match self.args.common.engine {
                EngineMode::Software => "x25519-dalek on the CPU".to_string(),
                m => format!("engine {} (hw)", m.name()),
            };
            rows.push(format!("DH: {dev}, {}", if self.args.sync_dh { "on the UI thread" } else { "async" }));
            rows.push(sep.clone());
            // the conversation's rows change only with a new entry or an acknowledgement: built
            // again (every entry formatted and wrapped) only then. The key names the last entry
            // too: a full history drops its oldest as a new one comes, its length stays.
            let h = self.party.history();
            let key =
                (h.len(), h.iter().filter(|e| e.acked).count(), h.last().map(|e| (e.dir == Dir::Out, e.peer, e.seq)));
            if self.conv_key != Some(key) {
                let entries: Vec<String> = h
                    .iter()
                    .map(|e| match e.dir {
                        Dir::Out => format!("you #{} {} {}", e.seq, e.text, if e.acked { "[ok]" } else { "[..]" }),
                        Dir::In => format!("Bob #{} {}", e.seq, e.text),
                    })
                    .collect();
                self.conv = conversation_rows(&entries, W, 38);
                self.conv_key = Some(key);
            }
            rows.extend(self.conv.iter().cloned());
            rows.push(sep.clone());
            // the newest note marked; the others keep their rows
            for (i, a) in self.activity.iter().enumerate() {
                rows.push(if a.is_empty() {
                    String::new()
                } else {
                    format!("{}{a}", if self.act_newest == Some(i) { "> " } else { "  " })
                });
            }
            rows.push(format!(
                "acc {} DH {} rej {} resent {} unacked {}",
                c.accepted,
                c.dh_steps,
                c.rejected(),
                c.retransmits,
                self.party.outbox_len()
            ));
            rows.push(format!("keys: TRNG service; store: {}", self.party.store_desc()));
            assert_eq!(rows.len(), TICKER, "the ticker row moved");
            rows.push(self.frames.borrow().ticker());
            rows.push(sep);
            let line = self.editor.line();
            let tail: String = line.chars().skip(line.chars().count().saturating_sub(W - 3)).collect();
            rows.push(format!("> {tail}_"));
            rows.push(self.message.clone());
            rows
        }
    }

    pub fn run(args: Args) {
        let engine = Engine25519::new().unwrap_or_else(|e| die(&format!("engine25519: {e:?}")));
        // keys straight from the TRNG service (a blocking call of a few hundred us on this
        // thread, a few per message), not the hosted chat's pool with its filler thread
        let rng = trng::Trng::new().unwrap_or_else(|e| die(&format!("TRNG: {e:?}")));
        let relay = Relay::new().unwrap_or_else(|e| die(&e.to_string()));
        let path = args.common.store.join("alice.state");
        let party =
            Party::initiator_in(store::backing(&path), ALICE, BOB).unwrap_or_else(|e| die(&format!("store: {e}")));
        let f = match args.common.engine {
            EngineMode::Software => dalek_fn(),
            _ => hw_fn(engine.clone()),
        };
        // nothing is paced on the device: every figure is the device's own time
        let device = Device::new(Pacing::Off { clock_hz: 0 });
        let lcd = memlcd::device::Memlcd::map().unwrap_or_else(|e| die(&format!("memlcd: {e:?}")));
        let (tx, rx) = mpsc::channel::<Ev>();
        let dh: Box<dyn DhRunner> = if args.sync_dh {
            Box::new(SyncRunner::new(f, device))
        } else {
            // a batch reaches the waiting worker by a message the kernel runs it with at once
            // (std's channel would wake it through the ticktimer process, and the worker would
            // wait for its turn); the worker wakes the UI thread when a batch is done
            let handoff = Handoff::xous_server().unwrap_or_else(|e| die(&format!("DH worker's server: {e:?}")));
            let done = tx.clone();
            Box::new(AsyncRunner::with_handoff(
                f,
                device,
                Box::new(move || {
                    let _ = done.send(Ev::DhDone);
                }),
                handoff,
            ))
        };
        start_keyboard(tx.clone()).unwrap_or_else(|e| die(&format!("keyboard: {e:?}")));
        let net = start_net(relay, tx);
        let fps = args.fps;
        let now = Instant::now();
        let frames = Rc::new(RefCell::new(Frames {
            screen: Screen::new(),
            lcd,
            stats: FrameStats::new(300),
            last_frame: None,
            next_frame: now,
            period: Duration::from_micros(1_000_000 / fps as u64),
            panel_end: now,
        }));
        // the party's work on this thread pauses between its pieces to draw a frame that fell due
        FRAMES.with(|f| *f.borrow_mut() = Some(frames.clone()));
        ratchet::set_pause(frame_pause);
        let mut ui = Ui {
            args,
            party,
            dh,
            rng,
            net,
            editor: LineEditor::default(),
            frames: frames.clone(),
            activity: Default::default(),
            act_newest: None,
            message: String::new(),
            bundle_asked: None,
            bundle_waiting: false,
            session_said: false,
            to_announce: Vec::new(),
            shown: Vec::new(),
            panel_at: None,
            quit: false,
            steps: 0,
            step_us: 0,
            rows: Vec::new(),
            conv: Vec::new(),
            conv_key: None,
        };
        ui.party.pause = Some(frame_pause);
        // the first frame clears the whole panel
        frames.borrow_mut().screen.fb.clear_screen();
        let now = Instant::now();
        frames.borrow_mut().due(now);
        ui.step(true, true, now);
        say(&format!(
            "CHAT-DEVICE ready engine={} dh={} fps={fps}",
            ui.args.common.engine.name(),
            if ui.args.sync_dh { "sync" } else { "async" }
        ));
        // The UI thread waits for its events (keys, frames, the bundle, a finished DH batch) on
        // its channel until the next frame is due, then draws: it wakes for an event or a frame,
        // never to look for one.
        loop {
            let mut got = false;
            let t = Instant::now();
            let next = frames.borrow().next_frame;
            let wait = next.min(ui.panel_at.unwrap_or(next)).saturating_duration_since(t);
            let first = match rx.recv_timeout(wait) {
                Ok(ev) => Some(ev),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => die("the keyboard and network threads stopped"),
            };
            for ev in first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
                got = true;
                ui.event(ev);
            }
            let now = Instant::now();
            // a late frame is drawn at once; the next one stays on the cadence
            let frame = frames.borrow_mut().due(now);
            if frame || got {
                ui.step(frame, got, now);
            } else if ui.panel_at.is_some_and(|t| now >= t) {
                ui.panel(now);
            }
            if ui.quit {
                break;
            }
        }
        let c = ui.party.counters();
        let step_ms = if ui.steps == 0 { 0.0 } else { ui.step_us as f64 / ui.steps as f64 / 1000.0 };
        say(&format!(
            "CHAT-DEVICE quit frames={} p99_ms={:.1} worst_ms={:.1} steps={} step_ms={step_ms:.2} sent={} acked={} accepted={} rejected={} dh_steps={} saves={}",
            frames.borrow().stats.frames,
            frames.borrow().stats.p99(),
            frames.borrow().stats.worst,
            ui.steps,
            c.sent,
            c.acked,
            c.accepted,
            c.rejected(),
            c.dh_steps,
            ui.party.saves,
        ));
        let r = xous_api_names::XousNames::new()
            .and_then(|xns| xous_api_susres::Susres::new_without_hook(&xns))
            .and_then(|s| s.immediate_poweroff());
        if let Err(e) = r {
            die(&format!("power-off: {e:?}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    #[test]
    fn options_and_bad_ones() {
        let a = |v: &[&str]| parse_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let ok = a(&["--store", "/s", "--engine", "software", "--sync-dh"]).unwrap();
        assert!(ok.sync_dh);
        assert_eq!(ok.fps, 30);
        assert_eq!(a(&["--store", "/s", "--no-pace", "--fps", "20"]).unwrap().fps, 20);
        for (bad, want) in [
            (&["--store", "/s", "--no-pace", "--fps", "0"][..], "1..=60"),
            (&["--store", "/s", "--no-pace", "--bogus"][..], "unknown option"),
        ] {
            let e = a(bad).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
