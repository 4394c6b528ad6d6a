//! engine25519 malformed-message client: sends `--count N` (default 10,000) random malformed
//! messages to the server (every opcode and unknown ones, every message kind, short/oversized
//! buffers, bad archive offsets, garbage archives, bad magic, out-of-range windows, lengths and
//! handles, X25519Batch counts, unused slots and truncated archives, illegal and runaway
//! microcode), checks that each one that can be answered gets an
//! error answer (never success), then checks that valid X25519 calls still succeed.
//! Prints `VERDICT engine-fuzz PASS|FAIL sent=N answered=A bad_ok=B valid_after=V valid_tried=20
//! -- kinds, server stats, first bad answer`: PASS only if all N were sent, none was answered
//! with success and all valid calls afterwards succeeded.

use engine25519::api::{
    self, JobMsg, Opcode, ProgramMsg, Status, X25519BatchMsg, X25519Msg, MAGIC, MAX_BATCH, NUM_REGS, UCODE_WORDS,
};
use xous::{MemoryMessage, MemoryRange, Message};
use xous_ipc::Buffer;

use det_rng::XorShift64 as Rng;

fn arg(name: &str) -> Option<u64> {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).and_then(|v| v.parse().ok())
}

#[derive(Default)]
struct Tally {
    sent: u64,
    answered: u64,
    bad_ok: u64,
    first_bad: Option<String>,
    kinds: std::collections::BTreeMap<&'static str, u64>,
}

impl Tally {
    fn bad(&mut self, what: String) {
        self.bad_ok += 1;
        if self.first_bad.is_none() {
            self.first_bad = Some(what);
        }
    }
}

/// Status of a memory reply (docs/ipc.md): `Some(code)` for an error reply (memory returned
/// with `offset = code`, `valid = None`), `Some(0)` for a success, `None` if not understood.
fn memory_reply_status(r: &xous::Result) -> Option<u32> {
    match r {
        xous::Result::MemoryReturned(_, Some(_)) => Some(Status::Ok as u32),
        xous::Result::MemoryReturned(Some(code), None) => Some(code.get() as u32),
        _ => None,
    }
}

fn main() {
    xous_api_log::init_wait().expect("log server");
    let count = arg("--count").unwrap_or(10_000);
    let seed = arg("--seed").unwrap_or(0x5eed_f00d);
    let e = engine25519::Engine25519::new().expect("connect to engine25519");
    let conn = e.conn();
    let mut rng = Rng(seed | 1);
    let mut t = Tally::default();
    // three reusable page-aligned buffers of 1, 2 and 3 pages
    let pages: Vec<MemoryRange> = (1..=3)
        .map(|n| xous::map_memory(None, None, n * 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).unwrap())
        .collect();
    let memory_ops = [Opcode::Stats, Opcode::X25519, Opcode::LoadProgram, Opcode::RunJob, Opcode::X25519Batch];
    let illegal = engine25519_core::isa::UDF_WORD;

    while t.sent < count {
        let kind = rng.below(9);
        match kind {
            // blocking scalar to a memory opcode, a privileged opcode (refused NotPermitted on
            // the public server) or an unknown opcode (Version, valid as a scalar, is left out)
            0 => {
                let id = match rng.below(3) {
                    0 => memory_ops[rng.below(memory_ops.len() as u64) as usize] as usize,
                    1 => 5 + rng.below(1000) as usize,
                    _ => rng.next() as usize,
                };
                let m =
                    Message::new_blocking_scalar(id, rng.next() as usize, rng.next() as usize, 0, rng.next() as usize);
                t.sent += 1;
                *t.kinds.entry("blocking-scalar").or_default() += 1;
                match xous::send_message(conn, m) {
                    Ok(xous::Result::Scalar1(s)) if s != 0 => t.answered += 1,
                    other => t.bad(format!("blocking scalar id {id}: {other:?}")),
                }
            }
            // mutable lend of random bytes / random offset / random size to any opcode
            1 | 2 => {
                let which = rng.below(3) as usize;
                let range = pages[which];
                let page = unsafe { core::slice::from_raw_parts_mut(range.as_mut_ptr(), range.len()) };
                rng.fill(page);
                let id = if rng.below(4) == 0 {
                    rng.below(64) as usize
                } else {
                    memory_ops[rng.below(memory_ops.len() as u64) as usize] as usize
                };
                if memory_ops.iter().any(|&op| op as usize == id) {
                    // never let random bytes carry the right magic at the archive position
                    for w in page.chunks_mut(4) {
                        if w.len() == 4 && u32::from_le_bytes(w.try_into().unwrap()) == MAGIC {
                            w[0] ^= 1;
                        }
                    }
                }
                let offset = match rng.below(4) {
                    0 => None,
                    1 => xous::MemoryAddress::new(rng.below(range.len() as u64 * 2) as usize),
                    2 => xous::MemoryAddress::new(usize::MAX - rng.below(64) as usize),
                    _ => xous::MemoryAddress::new((rng.below(range.len() as u64 / 8) * 8) as usize),
                };
                let valid = xous::MemorySize::new(1 + rng.below(range.len() as u64 - 1) as usize);
                let mm = MemoryMessage { id, buf: range, offset, valid };
                t.sent += 1;
                *t.kinds.entry("lend-mut-garbage").or_default() += 1;
                let r = xous::send_message(conn, Message::MutableBorrow(mm));
                match r.as_ref().ok().and_then(memory_reply_status) {
                    Some(s) if s != Status::Ok as u32 => t.answered += 1,
                    other => t.bad(format!("lend_mut garbage id {id}: {r:?} status {other:?}")),
                }
            }
            // immutable lend (wrong kind for every opcode)
            3 => {
                let range = pages[0];
                let id = rng.below(10) as usize;
                let mm = MemoryMessage { id, buf: range, offset: None, valid: xous::MemorySize::new(4096) };
                t.sent += 1;
                *t.kinds.entry("lend").or_default() += 1;
                let r = xous::send_message(conn, Message::Borrow(mm));
                match &r {
                    Ok(xous::Result::MemoryReturned(Some(code), None)) if code.get() != 0 => t.answered += 1,
                    other => t.bad(format!("lend id {id}: {other:?}")),
                }
            }
            // non-blocking scalar / moved memory: nothing to answer; the server must just survive
            4 => {
                t.sent += 1;
                *t.kinds.entry("scalar-or-move").or_default() += 1;
                if rng.below(2) == 0 {
                    let m = Message::new_scalar(rng.below(20) as usize, 1, 2, 3, 4);
                    let _ = xous::send_message(conn, m);
                } else {
                    let r = xous::map_memory(None, None, 4096, xous::MemoryFlags::R | xous::MemoryFlags::W).unwrap();
                    let mm = MemoryMessage { id: rng.below(8) as usize, buf: r, offset: None, valid: None };
                    let _ = xous::send_message(conn, Message::Move(mm));
                }
            }
            // well-formed archives with bad fields: magic, window, reserved, handle, length
            5 | 6 => {
                t.sent += 1;
                *t.kinds.entry("bad-fields").or_default() += 1;
                let sub = rng.below(7);
                let (status, what) = match sub {
                    0 => {
                        let mut m = X25519Msg::new([1; 32], [9; 32]);
                        m.magic = rng.next() as u32 | 0x8000_0000;
                        let mut b = Buffer::into_buf(m).unwrap();
                        let r = b.lend_mut(conn, Opcode::X25519 as u32);
                        (r.ok().and_then(|r| memory_reply_status(&r)), "x25519 bad magic")
                    }
                    1 | 2 => {
                        let mut m = JobMsg {
                            magic: MAGIC,
                            status: 0,
                            handle: rng.next() as u32,
                            window: if sub == 1 { 16 + rng.below(1 << 20) as u32 } else { rng.below(16) as u32 },
                            max_cycles: 0,
                            cycles: 0,
                            backend: 0,
                            reserved: if rng.below(2) == 0 { 1 + rng.below(100) as u32 } else { 0 },
                            regs: [[0; 32]; NUM_REGS],
                        };
                        if sub == 2 && m.reserved == 0 {
                            m.handle |= 0x8000_0000; // slot >= 32768: never a valid handle
                        }
                        let mut b = Buffer::into_buf(m).unwrap();
                        let r = b.lend_mut(conn, Opcode::RunJob as u32);
                        (r.ok().and_then(|r| memory_reply_status(&r)), "runjob bad window/handle/reserved")
                    }
                    3 => {
                        let len =
                            if rng.below(2) == 0 { 0 } else { UCODE_WORDS as u32 + 1 + rng.below(1 << 30) as u32 };
                        let m =
                            ProgramMsg { magic: MAGIC, status: 0, len, handle: 0, mpstart: 0, words: [0; UCODE_WORDS] };
                        let mut b = Buffer::into_buf(m).unwrap();
                        let r = b.lend_mut(conn, Opcode::LoadProgram as u32);
                        (r.ok().and_then(|r| memory_reply_status(&r)), "loadprogram bad length")
                    }
                    4 => {
                        // archive of the wrong type for the opcode (too small to hold the reply)
                        let m = X25519Msg::new([2; 32], [9; 32]);
                        let mut b = Buffer::into_buf(m).unwrap();
                        let r = b.lend_mut(conn, Opcode::LoadProgram as u32);
                        (r.ok().and_then(|r| memory_reply_status(&r)), "loadprogram with an x25519 archive")
                    }
                    5 => {
                        // X25519Batch: a wrong count (0, one over MAX_BATCH, huge), a nonzero
                        // unused slot, a wrong magic, or the archive truncated by the page's end
                        let mut m = X25519BatchMsg::new(&[([3; 32], [9; 32]); 2]).unwrap();
                        let what = match rng.below(5) {
                            0 => {
                                m.count = [0, MAX_BATCH as u32 + 1, rng.next() as u32 | 0x100][rng.below(3) as usize];
                                "x25519batch bad count"
                            }
                            1 => {
                                m.us[MAX_BATCH - 1][rng.below(32) as usize] = 1 + rng.below(255) as u8;
                                "x25519batch unused slot not zero"
                            }
                            2 => {
                                m.magic = rng.next() as u32 | 0x8000_0000;
                                "x25519batch bad magic"
                            }
                            _ => "x25519batch truncated",
                        };
                        let mut b = Buffer::into_buf(m).unwrap();
                        let r = if what == "x25519batch truncated" {
                            // the archive's position so close to the page's end that it cannot fit
                            let range = unsafe { MemoryRange::new(b.as_mut_ptr() as usize, b.len()).unwrap() };
                            let at = range.len()
                                - 1
                                - rng.below(core::mem::size_of::<rkyv::Archived<X25519BatchMsg>>() as u64 - 1) as usize;
                            let mm = MemoryMessage {
                                id: Opcode::X25519Batch as usize,
                                buf: range,
                                offset: xous::MemoryAddress::new(at),
                                valid: xous::MemorySize::new(range.len()),
                            };
                            xous::send_message(conn, Message::MutableBorrow(mm))
                        } else {
                            b.lend_mut(conn, Opcode::X25519Batch as u32)
                        };
                        (r.ok().and_then(|r| memory_reply_status(&r)), what)
                    }
                    _ => {
                        let m = api::StatsMsg { magic: MAGIC ^ 0xFF, ..Default::default() };
                        let mut b = Buffer::into_buf(m).unwrap();
                        let r = b.lend_mut(conn, Opcode::Stats as u32);
                        (r.ok().and_then(|r| memory_reply_status(&r)), "stats bad magic")
                    }
                };
                match status {
                    Some(s) if s != Status::Ok as u32 => t.answered += 1,
                    other => t.bad(format!("{what}: status {other:?}")),
                }
            }
            // illegal instructions and runaway programs through the client library
            7 => {
                t.sent += 1;
                *t.kinds.entry("bad-microcode").or_default() += 1;
                let regs = [[0u8; 32]; NUM_REGS];
                let n = 1 + rng.below(8) as usize;
                let mut prog: Vec<u32> = (0..n).map(|_| 0).collect(); // psa r0 <- r0
                let runaway = rng.below(2) == 0;
                if runaway {
                    // brz #0 jumps back to the start forever
                    let back = -(n as i16);
                    prog.push(
                        engine25519_core::isa::Instr { opcode: 9, ra: 0, ca: true, rb: 0, cb: false, wd: 0, imm: back }
                            .encode(),
                    );
                    // a word after the branch: a BRZ on the program's last word halts (shipped RTL)
                    prog.push(0);
                } else {
                    prog.push(illegal);
                }
                let r = e.run_job_budget(&prog, &regs, engine25519::Window::Any, 50_000);
                let want = if runaway { Status::Runaway } else { Status::IllegalInstruction };
                match r {
                    Err(engine25519::Error::Service(s)) if s == want => t.answered += 1,
                    Err(engine25519::Error::Service(Status::Busy)) => t.answered += 1,
                    other => t.bad(format!("bad microcode (runaway {runaway}): {:?}", other.map(|r| r.cycles))),
                }
            }
            // out-of-range window through the client library
            _ => {
                t.sent += 1;
                *t.kinds.entry("bad-window").or_default() += 1;
                let regs = [[0u8; 32]; NUM_REGS];
                match e.run_job(&[0], &regs, engine25519::Window::Fixed(16 + rng.below(200) as u8)) {
                    Err(engine25519::Error::Service(Status::BadWindow)) => t.answered += 1,
                    other => t.bad(format!("bad window: {:?}", other.map(|r| r.window))),
                }
            }
        }
    }
    // the server must still serve valid requests
    const VALID_AFTER: u64 = 20;
    let mut ok = 0;
    for i in 0..VALID_AFTER as u8 {
        let k = [i.wrapping_mul(37).wrapping_add(1); 32];
        let u = x25519_dalek::X25519_BASEPOINT_BYTES;
        if e.x25519(&k, &u).ok() == Some(x25519_dalek::x25519(k, u)) {
            ok += 1;
        }
    }
    // and a batch
    let jobs: Vec<([u8; 32], [u8; 32])> =
        (0..MAX_BATCH as u8).map(|i| ([i | 0x40; 32], x25519_dalek::X25519_BASEPOINT_BYTES)).collect();
    let batch_ok = match e.x25519_batch(&jobs) {
        Ok(r) => jobs.iter().zip(&r).all(|((k, u), r)| r.result == x25519_dalek::x25519(*k, *u)),
        Err(_) => false,
    };
    let stats = e
        .stats()
        .map(|s| format!("errors={} jobs={} busy={}", s.errors, s.jobs, s.busy))
        .unwrap_or_else(|e| e.to_string());
    hosted_tests::report(
        &hosted_tests::Verdict::judged(
            "engine-fuzz",
            t.sent >= count && t.bad_ok == 0 && ok == VALID_AFTER && batch_ok,
        )
        .with("sent", t.sent)
        .with("answered", t.answered)
        .with("bad_ok", t.bad_ok)
        .with("valid_after", ok)
        .with("valid_tried", VALID_AFTER)
        .with("batch_after", if batch_ok { "ok" } else { "failed" })
        .detail(format_args!(
            "kinds={:?} server_stats[{stats}] first_bad={:?}",
            t.kinds,
            t.first_bad.unwrap_or_default()
        )),
    );
}
