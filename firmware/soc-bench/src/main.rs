//! SoC benchmark firmware (bare metal, RV32IMAC on the litex_sim SoC of gateware/soc).
//!
//! 1. X25519 in software (x25519-dalek) on RFC 7748's first vector, timed in CPU cycles
//!    (`mcycle`), checked against the RFC's output.
//! 2. For every engine build on the bus (v1, v2; the SoC's `engine_select` CSR), end to end in
//!    CPU cycles: load the X25519 microcode (assembled from the repository's programs by
//!    build.rs) and the operands into the memory window, GO, wait for finished, read the result
//!    (libs/engine25519-driver, the same driver as the Xous `hw` backend). The result must equal
//!    the software result; RFC 7748's second vector runs on it as well, this time waiting for
//!    the engine's interrupt line (EV_ENABLE.finished) instead of polling.
//! 3. The speed-up of each engine over software (CPU cycles), then one verdict line on the UART
//!    (libs/verdict's format), then `sim_finish` (simulated SoC) or, on a board, a wait for a
//!    key on the UART and the whole run again.

#![no_std]
#![no_main]

use core::fmt::Write;
use engine25519_driver::{Driver, Launch, MmioBus, Paused, Stop};
use verdict::Status;

mod soc {
    include!(concat!(env!("OUT_DIR"), "/soc.rs"));
}
mod trng;

core::arch::global_asm!(
    r#"
    .section .text.start, "ax"
    .global _start
_start:
    .option push
    .option norelax
    la sp, _stack_top
    .option pop
    la t0, _trap
    csrw mtvec, t0
    la t0, _data_lma
    la t1, _data_start
    la t2, _data_end
1:  bgeu t1, t2, 2f
    lw t3, 0(t0)
    sw t3, 0(t1)
    addi t0, t0, 4
    addi t1, t1, 4
    j 1b
2:  la t1, _bss_start
    la t2, _bss_end
3:  bgeu t1, t2, 4f
    sw zero, 0(t1)
    addi t1, t1, 4
    j 3b
4:  call fw_main
5:  j 5b

    .align 4
_trap:
    la sp, _stack_top
    call fw_trap
6:  j 6b
"#
);

const SUBJECT: &str = "soc-bench";
/// Driver polls before a job counts as hung (v1 X25519 needs ~10^4).
const MAX_POLLS: u32 = 2_000_000;

// RFC 7748 section 5.2, the two X25519 test vectors.
const RFC1_K: [u8; 32] = hex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
const RFC1_U: [u8; 32] = hex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c");
const RFC1_OUT: [u8; 32] = hex("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
const RFC2_K: [u8; 32] = hex("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d");
const RFC2_U: [u8; 32] = hex("e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493");
const RFC2_OUT: [u8; 32] = hex("95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");

const fn hex(s: &str) -> [u8; 32] {
    let b = s.as_bytes();
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        out[i] = (nib(b[2 * i]) << 4) | nib(b[2 * i + 1]);
        i += 1;
    }
    out
}

const fn nib(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => panic!("bad hex"),
    }
}

fn wr(addr: usize, v: u32) {
    unsafe { (addr as *mut u32).write_volatile(v) }
}
fn rd(addr: usize) -> u32 {
    unsafe { (addr as *const u32).read_volatile() }
}

struct Uart;
impl Write for Uart {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &b in s.as_bytes() {
            while rd(soc::UART_TXFULL) != 0 {}
            wr(soc::UART_RXTX, b as u32);
        }
        Ok(())
    }
}

/// The CPU's cycle counter (mcycle / mcycleh, read consistently).
fn cycles() -> u64 {
    loop {
        let (hi, lo, hi2): (u32, u32, u32);
        unsafe {
            core::arch::asm!("csrr {0}, mcycleh", "csrr {1}, mcycle", "csrr {2}, mcycleh", out(reg) hi, out(reg) lo, out(reg) hi2);
        }
        if hi == hi2 {
            return ((hi as u64) << 32) | lo as u64;
        }
    }
}

/// The end of a run. Simulated SoC: `sim_finish` (the simulation stops at the CSR write). A
/// board (no sim_finish): wait for a key on the UART, then run everything again from `_start`.
fn finish() -> ! {
    if let Some(a) = soc::SIM_FINISH {
        wr(a, 1);
        #[allow(clippy::empty_loop)]
        loop {}
    }
    let _ = Uart.write_str("soc-bench: press a key to run again\n");
    while rd(soc::UART_RXEMPTY) != 0 {}
    let _ = rd(soc::UART_RXTX);
    wr(soc::UART_EV_PENDING, 2); // pop the character (LiteX UART: the rx event)
    unsafe { core::arch::asm!("j _start", options(noreturn)) }
}

/// Speed-up of an engine over software, in tenths (rounded): CPU cycles over CPU cycles.
fn speedup_x10(sw: u64, engine: u64) -> u64 {
    (sw * 10 + engine / 2) / engine.max(1)
}

#[no_mangle]
extern "C" fn fw_trap() -> ! {
    let (cause, epc): (usize, usize);
    unsafe {
        core::arch::asm!("csrr {0}, mcause", "csrr {1}, mepc", out(reg) cause, out(reg) epc);
    }
    let mut u = Uart;
    let _ = verdict::write_head(&mut u, SUBJECT, Status::Fail);
    let _ = verdict::write_detail(&mut u, format_args!("trap mcause={cause:#x} mepc={epc:#x}"));
    let _ = u.write_str("\n");
    finish()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut u = Uart;
    let _ = verdict::write_head(&mut u, SUBJECT, Status::Fail);
    let _ = verdict::write_detail(&mut u, format_args!("panic: {info}"));
    let _ = u.write_str("\n");
    finish()
}

/// One engine build's X25519, end to end: (result, total CPU cycles, GO-to-finished cycles).
fn engine_x25519(d: &mut Driver<MmioBus>, ucode: &[u32], k: &[u8; 32], u: &[u8; 32]) -> Result<([u8; 32], u64, u64), &'static str> {
    let t0 = cycles();
    d.write_ucode(0, ucode).map_err(|_| "microcode does not fit")?;
    d.write_reg(0, soc::X25519_SCALAR_REG, k).map_err(|_| "bad register")?;
    d.write_reg(0, soc::X25519_U_REG, u).map_err(|_| "bad register")?;
    let t_go = cycles();
    let stop = d.run(Launch { window: 0, mpstart: 0, mplen: ucode.len() }, MAX_POLLS);
    let t_done = cycles();
    match stop {
        Ok(Stop::Finished) => {}
        Ok(Stop::Illegal { .. }) => return Err("engine halted on an illegal opcode"),
        Err(_) => return Err("engine did not finish (poll budget)"),
    }
    let out = d.read_reg(0, soc::RESULT_REG).map_err(|_| "bad register")?;
    let t1 = cycles();
    Ok((out, t1 - t0, t_done - t_go))
}

/// A verdict key built at run time (no allocator): up to 48 bytes.
struct Key {
    buf: [u8; 48],
    len: usize,
}

impl Key {
    fn new(args: core::fmt::Arguments) -> Key {
        let mut k = Key { buf: [0; 48], len: 0 };
        let _ = k.write_fmt(args);
        k
    }
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("key")
    }
}

impl Write for Key {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let b = s.as_bytes();
        if self.len + b.len() > self.buf.len() {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
        Ok(())
    }
}

/// Pending lines of the CPU's interrupt controller (VexRiscv as LiteX builds it: CSR 0xFC0,
/// the lines masked by CSR 0xBC0).
fn irq_pending() -> u32 {
    let v: u32;
    unsafe { core::arch::asm!("csrr {0}, 0xFC0", out(reg) v) };
    v
}

/// Unmask interrupt lines (CSR 0xBC0). mstatus.MIE stays clear: the line is observed, never
/// taken as a trap.
fn irq_set_mask(mask: u32) {
    unsafe { core::arch::asm!("csrw 0xBC0, {0}", in(reg) mask) };
}

/// X25519 waiting for the engine's interrupt line instead of polling its CSRs: the finished
/// event, enabled in EV_ENABLE, must raise line `ENGINE_IRQ`, and clearing EV_PENDING must
/// drop it.
fn engine_x25519_irq(d: &mut Driver<MmioBus>, ucode: &[u32], k: &[u8; 32], u: &[u8; 32]) -> Result<[u8; 32], &'static str> {
    use engine25519_core::isa::csr;
    use engine25519_driver::Bus;
    let line = 1u32 << soc::ENGINE_IRQ;
    d.write_ucode(0, ucode).map_err(|_| "microcode does not fit")?;
    d.write_reg(0, soc::X25519_SCALAR_REG, k).map_err(|_| "bad register")?;
    d.write_reg(0, soc::X25519_U_REG, u).map_err(|_| "bad register")?;
    irq_set_mask(line);
    d.bus().csr_write(csr::ev_enable::OFFSET, csr::ev_enable::FINISHED.mask());
    d.start(Launch { window: 0, mpstart: 0, mplen: ucode.len() }).map_err(|_| "bad launch")?;
    if irq_pending() & line != 0 {
        return Err("interrupt line high while the job runs");
    }
    let mut n = 0u32;
    while irq_pending() & line == 0 {
        n += 1;
        if n > MAX_POLLS {
            return Err("engine interrupt never raised");
        }
    }
    let r = match d.poll() {
        Some(Stop::Finished) => Ok(()),
        Some(Stop::Illegal { .. }) => Err("engine halted on an illegal opcode"),
        None => Err("interrupt raised while the engine still runs"),
    };
    // the clear is a bus store the CPU may still have in flight when it reads a CSR: a load
    // from the block orders after it (the usual read-back)
    let _ = d.bus().csr_read(csr::ev_pending::OFFSET);
    let dropped = irq_pending() & line == 0;
    d.bus().csr_write(csr::ev_enable::OFFSET, 0);
    irq_set_mask(0);
    r?;
    if !dropped {
        return Err("interrupt line stays high after EV_PENDING was cleared");
    }
    d.read_reg(0, soc::RESULT_REG).map_err(|_| "bad register")
}

/// X25519 paused every `interval` CPU cycles and resumed where it stopped (MPRESUME), the way
/// the `hw` backend time-slices jobs; a register is read through the memory window while
/// paused. Returns the result and the number of pauses.
fn engine_x25519_paused(d: &mut Driver<MmioBus>, ucode: &[u32], k: &[u8; 32], u: &[u8; 32], interval: u64) -> Result<([u8; 32], u32), &'static str> {
    d.write_ucode(0, ucode).map_err(|_| "microcode does not fit")?;
    d.write_reg(0, soc::X25519_SCALAR_REG, k).map_err(|_| "bad register")?;
    d.write_reg(0, soc::X25519_U_REG, u).map_err(|_| "bad register")?;
    let l = Launch { window: 0, mpstart: 0, mplen: ucode.len() };
    d.start(l).map_err(|_| "bad launch")?;
    let mut pauses = 0u32;
    loop {
        let t = cycles();
        while cycles() - t < interval {}
        match d.pause(MAX_POLLS).map_err(|_| "pause never granted")? {
            Paused::At { mpc } => {
                pauses += 1;
                if pauses > 10_000 {
                    return Err("job never ends under pause/resume");
                }
                d.read_reg(0, 0).map_err(|_| "bad register")?;
                d.resume(l, mpc).map_err(|_| "paused outside the program")?;
            }
            Paused::Ended(Stop::Finished) => break,
            Paused::Ended(Stop::Illegal { .. }) => return Err("engine halted on an illegal opcode under pause/resume"),
        }
    }
    Ok((d.read_reg(0, soc::RESULT_REG).map_err(|_| "bad register")?, pauses))
}

struct Report {
    ok: bool,
    why: &'static str,
    isa_failed: &'static str,
}

impl Report {
    fn fail(&mut self, isa: &'static str, why: &'static str) {
        if self.ok {
            self.ok = false;
            self.why = why;
            self.isa_failed = isa;
        }
    }
}

/// The TRNG phase alone (feature `trng-only`): one verdict line under `trng::SUBJECT`.
fn trng_only(u: &mut Uart) -> ! {
    let _ = verdict::write_head(u, trng::SUBJECT, Status::Begin);
    let _ = u.write_str("\n");
    match trng::bench(cycles) {
        Ok(f) => {
            let x = f.words_per_kcycle_x100();
            let _ = verdict::write_head(u, trng::SUBJECT, Status::Pass);
            let _ = verdict::write_field(u, "words", f.words);
            let _ = verdict::write_field(u, "kernel_words", f.kernel_words);
            let _ = verdict::write_field(u, "server_words", f.server_words);
            let _ = verdict::write_field(u, "cycles", f.cycles);
            let _ = verdict::write_field(u, "empty_reads", f.empty_reads);
            let _ = verdict::write_field(u, "first_word_cycles", f.first_word_cycles);
            let _ = verdict::write_field(u, "words_per_kcycle", format_args!("{}.{:02}", x / 100, x % 100));
        }
        Err(why) => {
            let _ = verdict::write_head(u, trng::SUBJECT, Status::Fail);
            let _ = verdict::write_detail(u, why);
        }
    }
    let _ = u.write_str("\n");
    finish()
}

#[no_mangle]
extern "C" fn fw_main() -> ! {
    let mut u = Uart;
    if cfg!(feature = "trng-only") {
        trng_only(&mut u);
    }
    let _ = verdict::write_head(&mut u, SUBJECT, Status::Begin);
    let _ = u.write_str("\n");
    let mut rep = Report { ok: true, why: "", isa_failed: "" };
    if cfg!(feature = "fault-no-verdict") {
        let _ = writeln!(u, "soc-bench: fault-no-verdict: spinning without a verdict");
        #[allow(clippy::empty_loop)]
        loop {}
    }

    // software
    let t0 = cycles();
    let sw = x25519_dalek::x25519(RFC1_K, RFC1_U);
    let sw_cycles = cycles() - t0;
    if sw != RFC1_OUT {
        rep.fail("sw", "x25519-dalek differs from RFC 7748");
    }
    let _ = writeln!(u, "soc-bench: software X25519 {sw_cycles} cycles");

    // engines
    let mut d = Driver::new(unsafe { MmioBus::at_spec_addresses() });
    let mut figures: [(&str, u64, u64); 4] = [("", 0, 0); 4];
    let mut pauses = [0u32; 4];
    for (i, &(isa, ucode)) in soc::ENGINES.iter().enumerate() {
        if let Some(sel) = soc::ENGINE_SELECT {
            wr(sel, i as u32);
        }
        if !d.present() {
            rep.fail(isa, "engine does not answer");
            continue;
        }
        match engine_x25519(&mut d, ucode, &RFC1_K, &RFC1_U) {
            Ok((mut out, total, run)) => {
                if cfg!(feature = "fault-engine-result") && i == 0 {
                    out[0] ^= 1;
                }
                if out != sw {
                    rep.fail(isa, "engine result differs from software");
                }
                if i < figures.len() {
                    figures[i] = (isa, total, run);
                }
                let _ = writeln!(u, "soc-bench: engine {isa} X25519 {total} cycles end to end ({run} from GO to finished)");
            }
            Err(why) => rep.fail(isa, why),
        }
        match engine_x25519_irq(&mut d, ucode, &RFC2_K, &RFC2_U) {
            Ok(out) if out == RFC2_OUT => {}
            Ok(_) => rep.fail(isa, "engine differs from RFC 7748 vector 2"),
            Err(why) => rep.fail(isa, why),
        }
        // about eight slices per job
        let interval = (figures.get(i).map(|f| f.2).unwrap_or(0) / 8).max(2_000);
        match engine_x25519_paused(&mut d, ucode, &RFC1_K, &RFC1_U, interval) {
            Ok((out, n)) if out == sw && n >= 3 => {
                if i < pauses.len() {
                    pauses[i] = n;
                }
                let _ = writeln!(u, "soc-bench: engine {isa} X25519 paused and resumed {n} times: same result");
            }
            Ok((out, _)) if out != sw => rep.fail(isa, "engine result differs after pause/resume"),
            Ok(_) => rep.fail(isa, "fewer than 3 pauses granted"),
            Err(why) => rep.fail(isa, why),
        }
    }

    for &(isa, total, _) in figures.iter().filter(|f| !f.0.is_empty()) {
        let x = speedup_x10(sw_cycles, total);
        let _ = writeln!(u, "soc-bench: X25519 speed-up of engine {isa} over software: {}.{}x ({sw_cycles} / {total} CPU cycles)", x / 10, x % 10);
    }
    let _ = verdict::write_head(&mut u, SUBJECT, if rep.ok { Status::Pass } else { Status::Fail });
    let _ = verdict::write_field(&mut u, "sw_cycles", sw_cycles);
    for (&(isa, total, run), &n) in figures.iter().zip(pauses.iter()).filter(|f| !f.0 .0.is_empty()) {
        let _ = verdict::write_field(&mut u, Key::new(format_args!("engine_{isa}_cycles")).as_str(), total);
        let _ = verdict::write_field(&mut u, Key::new(format_args!("engine_{isa}_run_cycles")).as_str(), run);
        let _ = verdict::write_field(&mut u, Key::new(format_args!("engine_{isa}_pauses")).as_str(), n);
        let _ = verdict::write_field(&mut u, Key::new(format_args!("engine_{isa}_speedup_x10")).as_str(), speedup_x10(sw_cycles, total));
    }
    let _ = verdict::write_field(&mut u, "cpu_hz", soc::CPU_HZ);
    let _ = verdict::write_field(&mut u, "eng_hz", soc::ENG_HZ);
    let _ = verdict::write_field(&mut u, "mul_hz", soc::MUL_HZ);
    if !rep.ok {
        let _ = verdict::write_detail(&mut u, format_args!("{}: {}", rep.isa_failed, rep.why));
    }
    let _ = u.write_str("\n");
    finish()
}
