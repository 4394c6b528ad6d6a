//! chat-relay-check: malformed input to the relay server (test step chat:relay-bad-input).
//! Every opcode as every wrong message kind, bad magic, lengths, mailboxes and percentages, an
//! archive position outside the page, 2,000 pages of random bytes to random opcodes (all but
//! RecvWait, whose valid requests wait by design); each must get its documented error reply (no
//! hang, no crash), and afterwards the relay must still serve correct calls, RecvWait among them
//! (answered at once, later by a Send or by the relay's timer for a held-back frame, or let go
//! empty by a second wait for its mailbox). Prints `VERDICT chat-relay-check PASS checks=N` or
//! `VERDICT chat-relay-check FAIL -- <why>` (libs/verdict);
//! `--shutdown` ends the hosted system.

use ratchet_demo::relay_api::{Faults, Frame, Opcode, RelayStats, Status, FRAME_DATA, MAGIC};
use ratchet_demo::relay_client::{Relay, RelayError};
use service_ipc::client::{blocking_scalar, memory_reply, CallError};
use xous::{MemorySize, Message};
use xous_ipc::Buffer;

struct Check {
    conn: xous::CID,
    n: u32,
}

impl Check {
    fn expect(&mut self, what: &str, got: Result<(), CallError>, want: Status) -> Result<(), String> {
        self.n += 1;
        match got {
            Err(CallError::Service(c)) if c == want as u32 => Ok(()),
            other => Err(format!("{what}: got {other:?}, want {want:?}")),
        }
    }

    fn scalar(&self, op: u32, args: [usize; 4]) -> Result<(), CallError> {
        blocking_scalar(self.conn, op, args).map(|_| ())
    }

    /// lend_mut of `f` as opcode `op`, archive at position `pos` of the page (None: 0).
    fn frame(&self, op: u32, f: Frame) -> Result<(), CallError> {
        let mut buf = Buffer::into_buf(f).map_err(|_| CallError::Protocol("serialize"))?;
        let r = buf.lend_mut(self.conn, op)?;
        memory_reply(r).map(|_| ())
    }

    /// A raw page with `bytes` at the start, lent mutably with archive position `pos`.
    fn raw(&self, op: u32, bytes: &[u8], pos: usize) -> Result<(), CallError> {
        let mut page =
            xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).map_err(CallError::Ipc)?;
        {
            let s = page.as_slice_mut::<u8>();
            s.fill(0);
            s[..bytes.len()].copy_from_slice(bytes);
        }
        let r = xous::send_message(
            self.conn,
            Message::new_lend_mut(op as usize, page, MemorySize::new(pos), MemorySize::new(4096)),
        );
        let out = r.map_err(CallError::Ipc).and_then(memory_reply).map(|_| ());
        let _ = xous::unmap_memory(page);
        out
    }
}

fn frame_with(from: u32, to: u32, len: u32, magic: u32) -> Frame {
    let mut f = Frame::new(from, to, &[]).unwrap();
    f.len = len;
    f.magic = magic;
    f
}

fn run() -> Result<u32, String> {
    let mut relay = Relay::new().map_err(|e| e.to_string())?;
    let mut c = Check { conn: relay.conn(), n: 0 };
    // unknown opcodes, every kind we can answer
    for op in [0u32, 9, 99, 0xFFFF] {
        c.expect("unknown opcode (blocking scalar)", c.scalar(op, [0; 4]), Status::UnknownOpcode)?;
        c.expect("unknown opcode (lend_mut)", c.frame(op, Frame::new(1, 1, b"x").unwrap()), Status::UnknownOpcode)?;
    }
    // every known opcode as the wrong kind
    for op in [
        Opcode::Send,
        Opcode::Recv,
        Opcode::PutBundle,
        Opcode::GetBundle,
        Opcode::Stats,
        Opcode::RecvWait,
        Opcode::Wake,
    ] {
        c.expect(&format!("{op:?} as blocking scalar"), c.scalar(op as u32, [1, 2, 3, 4]), Status::BadMessage)?;
    }
    c.expect(
        "SetFaults as lend_mut",
        c.frame(Opcode::SetFaults as u32, Frame::new(1, 1, b"x").unwrap()),
        Status::BadMessage,
    )?;
    c.expect("Wake as lend_mut", c.frame(Opcode::Wake as u32, Frame::new(1, 1, b"x").unwrap()), Status::BadMessage)?;
    // bad field values
    for op in [Opcode::Send, Opcode::Recv, Opcode::PutBundle, Opcode::GetBundle, Opcode::RecvWait] {
        c.expect(
            &format!("{op:?} with a bad magic"),
            c.frame(op as u32, frame_with(1, 2, 1, MAGIC ^ 1)),
            Status::BadMessage,
        )?;
    }
    c.expect("Send of length 0", c.frame(Opcode::Send as u32, frame_with(1, 2, 0, MAGIC)), Status::BadLength)?;
    c.expect(
        "Send longer than a frame",
        c.frame(Opcode::Send as u32, frame_with(1, 2, FRAME_DATA as u32 + 1, MAGIC)),
        Status::BadLength,
    )?;
    c.expect(
        "Send with length u32::MAX",
        c.frame(Opcode::Send as u32, frame_with(1, 2, u32::MAX, MAGIC)),
        Status::BadLength,
    )?;
    c.expect(
        "PutBundle longer than a frame",
        c.frame(Opcode::PutBundle as u32, frame_with(3, 3, FRAME_DATA as u32 + 1, MAGIC)),
        Status::BadLength,
    )?;
    c.expect("Send from mailbox 0", c.frame(Opcode::Send as u32, frame_with(0, 2, 1, MAGIC)), Status::BadMailbox)?;
    c.expect("Send to mailbox 65", c.frame(Opcode::Send as u32, frame_with(1, 65, 1, MAGIC)), Status::BadMailbox)?;
    c.expect("Recv of mailbox 0", c.frame(Opcode::Recv as u32, frame_with(0, 0, 0, MAGIC)), Status::BadMailbox)?;
    c.expect(
        "Recv of mailbox u32::MAX",
        c.frame(Opcode::Recv as u32, frame_with(0, u32::MAX, 0, MAGIC)),
        Status::BadMailbox,
    )?;
    c.expect(
        "RecvWait of mailbox 0",
        c.frame(Opcode::RecvWait as u32, frame_with(0, 0, 0, MAGIC)),
        Status::BadMailbox,
    )?;
    c.expect(
        "RecvWait of mailbox 65",
        c.frame(Opcode::RecvWait as u32, frame_with(0, 65, 0, MAGIC)),
        Status::BadMailbox,
    )?;
    c.expect(
        "GetBundle nobody registered",
        c.frame(Opcode::GetBundle as u32, frame_with(0, 60, 0, MAGIC)),
        Status::NoBundle,
    )?;
    c.expect("SetFaults 101 %", c.scalar(Opcode::SetFaults as u32, [0, 0, 0, 101]), Status::BadValue)?;
    c.expect("SetFaults usize::MAX", c.scalar(Opcode::SetFaults as u32, [usize::MAX, 0, 0, 0]), Status::BadValue)?;
    c.expect("Stats with a bad magic", c.frame(Opcode::Stats as u32, frame_with(0, 0, 0, 0)), Status::BadMessage)?;
    // archive outside the page or misaligned
    for pos in [4095usize, 4096 - 8, 3] {
        c.expect(&format!("Send archive at position {pos}"), c.raw(Opcode::Send as u32, &[], pos), Status::BadMessage)?;
    }
    // non-blocking scalars cannot be answered: the relay must just survive them
    for op in 0..10usize {
        xous::send_message(c.conn, Message::new_scalar(op, 1, 2, 3, 4)).map_err(|e| format!("scalar: {e:?}"))?;
    }
    // random pages to random opcodes: each gets a reply (any), nothing hangs
    let mut rng = det_rng::XorShift64(0x9E37_79B9_7F4A_7C15);
    let mut next = || rng.next();
    let mut garbage = vec![0u8; 4096];
    for _ in 0..2000 {
        for b in garbage.iter_mut() {
            *b = next() as u8;
        }
        let op = [0u32, 1, 2, 3, 4, 5, 6, 8, 9][(next() % 9) as usize];
        let pos = if next() % 4 == 0 { (next() % 4096) as usize } else { 0 };
        // valid-looking magic half the time, so field checks are reached
        if next() % 2 == 0 {
            garbage[..4].copy_from_slice(&MAGIC.to_le_bytes());
        }
        match c.raw(op, &garbage, pos) {
            Ok(()) | Err(CallError::Service(_)) => {}
            Err(e) => return Err(format!("random page to opcode {op}: {e:?}")),
        }
        c.n += 1;
    }
    // still serving correct calls
    relay.set_faults(Faults::default()).map_err(|e| e.to_string())?;
    while relay.recv(63).map_err(|e| e.to_string())?.is_some() {}
    relay.send(63, 63, b"still here").map_err(|e| e.to_string())?;
    match relay.recv(63) {
        Ok(Some((63, d))) if d == b"still here" => {}
        other => return Err(format!("after the bad input, Send/Recv: {other:?}")),
    }
    recv_wait_checks(&mut relay)?;
    c.n += 5;
    match relay.get_bundle(61) {
        Err(RelayError::Status(Status::NoBundle)) => {}
        other => return Err(format!("after the bad input, GetBundle: {other:?}")),
    }
    let s: RelayStats = relay.stats().map_err(|e| e.to_string())?;
    if s.delivered == 0 {
        return Err(format!("stats after the bad input: {s:?}"));
    }
    c.n += 3;
    Ok(c.n)
}

/// RecvWait: a frame already queued is answered at once; a wait is answered by the Send that
/// brings a frame; a second wait for the same mailbox lets the first go empty and gets the frame;
/// a frame the fault injector holds back reaches a waiter at its release time.
/// Each wait runs on a thread of its own, with a time limit.
fn recv_wait_checks(relay: &mut Relay) -> Result<(), String> {
    use std::sync::mpsc;
    use std::time::Duration;
    const LIMIT: Duration = Duration::from_secs(20);
    relay.send(62, 62, b"queued").map_err(|e| e.to_string())?;
    match relay.recv_wait(62) {
        Ok(Some((62, d))) if d == b"queued" => {}
        other => return Err(format!("RecvWait with a frame queued: {other:?}")),
    }
    let wait = |tag: &'static str| -> Result<mpsc::Receiver<(&'static str, Result<Option<(u32, Vec<u8>)>, RelayError>)>, String> {
        let mut r = Relay::new().map_err(|e| e.to_string())?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send((tag, r.recv_wait(61)));
        });
        Ok(rx)
    };
    let first = wait("first")?;
    // the first wait is kept: no answer while nothing comes
    if let Ok(got) = first.recv_timeout(Duration::from_millis(300)) {
        return Err(format!("RecvWait answered with nothing sent: {got:?}"));
    }
    let second = wait("second")?;
    match first.recv_timeout(LIMIT) {
        Ok(("first", Ok(None))) => {}
        other => return Err(format!("the first RecvWait, after a second one for its mailbox: {other:?}")),
    }
    relay.send(60, 61, b"for the waiter").map_err(|e| e.to_string())?;
    match second.recv_timeout(LIMIT) {
        Ok(("second", Ok(Some((60, d))))) if d == b"for the waiter" => {}
        other => return Err(format!("the second RecvWait, after a Send to its mailbox: {other:?}")),
    }
    // a frame held back (reorder: released after later frames or its release time) reaches a
    // waiting receiver by the relay's timer, with no other frame sent
    relay.set_faults(Faults { reorder: 100, ..Default::default() }).map_err(|e| e.to_string())?;
    let third = wait("held")?;
    relay.send(60, 61, b"held back").map_err(|e| e.to_string())?;
    let got = third.recv_timeout(LIMIT);
    relay.set_faults(Faults::default()).map_err(|e| e.to_string())?;
    match got {
        Ok(("held", Ok(Some((60, d))))) if d == b"held back" => Ok(()),
        other => Err(format!("RecvWait for a held-back frame: {other:?}")),
    }
}

fn main() {
    xous_api_log::init_wait().unwrap();
    let shutdown = std::env::args().any(|a| a == "--shutdown");
    let code = match run() {
        Ok(n) => {
            println!("{}", verdict::Verdict::judged("chat-relay-check", true).with("checks", n));
            0
        }
        Err(e) => {
            println!("{}", verdict::Verdict::judged("chat-relay-check", false).detail(e));
            1
        }
    };
    if shutdown {
        let _ = xous::rsyscall(xous::SysCall::Shutdown);
    }
    std::process::exit(code);
}
