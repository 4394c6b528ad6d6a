//! Register-level driver of the engine25519 block, `no_std`, over a tiny bus trait ([`Bus`]:
//! 32-bit reads and writes of the CSR block and of the memory window, by byte offset).
//!
//! Every offset, bit field and size comes from `engine25519_core::isa` (generated from
//! `spec/engine25519.toml`); nothing is restated here. Users:
//! * the Xous engine server's `hw` backend (services/engine25519/src/hw.rs: pages mapped with
//!   `map_memory`, completion by the engine's interrupt, which the backend claims itself,
//!   polled only for short jobs and at start-up; pause/resume for time slicing);
//! * the bare-metal SoC benchmark (firmware/soc-bench: [`MmioBus::at_spec_addresses`], busy
//!   polling).
//!
//! ```
//! # use engine25519_driver::{Bus, Driver, Launch, Stop};
//! # struct Nop;
//! # impl Bus for Nop {
//! #     fn csr_read(&mut self, _: u32) -> u32 { 0 }
//! #     fn csr_write(&mut self, _: u32, _: u32) {}
//! #     fn mem_read(&mut self, _: u32) -> u32 { 0 }
//! #     fn mem_write(&mut self, _: u32, _: u32) {}
//! # }
//! let mut e = Driver::new(Nop);
//! e.write_ucode(0, &[0x0000_000a]).unwrap(); // fin
//! let l = Launch { window: 0, mpstart: 0, mplen: 1 };
//! assert_eq!(e.run(l, 1000), Ok(Stop::Finished));
//! ```

#![no_std]

use engine25519_core::isa::{self, csr, mem};

/// 32-bit accesses to the engine. Offsets are bytes from `csr::BASE` (CSR block) or from
/// `mem::BASE` (memory window), always multiples of 4.
pub trait Bus {
    fn csr_read(&mut self, offset: u32) -> u32;
    fn csr_write(&mut self, offset: u32, value: u32);
    fn mem_read(&mut self, offset: u32) -> u32;
    fn mem_write(&mut self, offset: u32, value: u32);
}

/// Volatile accesses through pointers to the CSR block and the memory window (bare metal, or
/// pages a kernel mapped for this process). A copy addresses the same engine.
#[derive(Clone, Copy)]
pub struct MmioBus {
    csr: *mut u32,
    mem: *mut u32,
}

impl MmioBus {
    /// # Safety
    /// `csr` must point to the engine's CSR block (at least the spec's registers) and `mem` to
    /// its memory window (`mem::SIZE` bytes), both valid for volatile 32-bit accesses for the
    /// lifetime of the bus, and nothing else may drive the engine meanwhile.
    pub const unsafe fn new(csr: *mut u32, mem: *mut u32) -> MmioBus {
        MmioBus { csr, mem }
    }

    /// The block at the spec's physical addresses (`csr::BASE`, `mem::BASE`): bare metal.
    ///
    /// # Safety
    /// As [`MmioBus::new`]: the engine must be at those addresses.
    pub const unsafe fn at_spec_addresses() -> MmioBus {
        MmioBus { csr: csr::BASE as usize as *mut u32, mem: mem::BASE as usize as *mut u32 }
    }
}

impl Bus for MmioBus {
    fn csr_read(&mut self, offset: u32) -> u32 {
        unsafe { self.csr.add(offset as usize / 4).read_volatile() }
    }
    fn csr_write(&mut self, offset: u32, value: u32) {
        unsafe { self.csr.add(offset as usize / 4).write_volatile(value) }
    }
    fn mem_read(&mut self, offset: u32) -> u32 {
        unsafe { self.mem.add(offset as usize / 4).read_volatile() }
    }
    fn mem_write(&mut self, offset: u32, value: u32) {
        unsafe { self.mem.add(offset as usize / 4).write_volatile(value) }
    }
}

/// Where a job runs (WINDOW, MPSTART, MPLEN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub window: usize,
    pub mpstart: usize,
    pub mplen: usize,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// FIN, or the end of the program.
    Finished,
    /// The engine halted on an illegal opcode (or a branch out of the program) at `mpc`.
    Illegal { mpc: u32 },
}

/// What a pause request ended in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paused {
    /// Paused at an instruction boundary; resume at `mpc` ([`Driver::resume`]).
    At { mpc: u32 },
    /// The job ended before the pause was granted.
    Ended(Stop),
}

/// Snapshot of STATUS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub running: bool,
    pub mpc: u32,
    pub pause_gnt: bool,
}

/// Refused requests (nothing was written to the engine) and timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Window index beyond `isa::WINDOWS`.
    BadWindow(usize),
    /// Register index beyond `isa::REGS_PER_WINDOW`.
    BadRegister(usize),
    /// Microcode range past `isa::UCODE_WORDS` (or an empty program).
    BadRange { start: usize, len: usize },
    /// Resume address outside the job's program.
    BadResume(u32),
    /// The job did not end (or pause) within the allowed number of polls.
    Timeout,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::BadWindow(w) => write!(f, "window {w} out of range (0..{})", isa::WINDOWS),
            Error::BadRegister(r) => write!(f, "register {r} out of range (0..{})", isa::REGS_PER_WINDOW),
            Error::BadRange { start, len } => {
                write!(f, "microcode range {start}+{len} outside the {}-word RAM", isa::UCODE_WORDS)
            }
            Error::BadResume(mpc) => write!(f, "resume address {mpc} outside the job's program"),
            Error::Timeout => f.write_str("the engine did not answer in time"),
        }
    }
}

/// Mask of every event bit of EV_PENDING (write 1 to clear).
const EVENTS: u32 = csr::ev_pending::FINISHED.mask() | csr::ev_pending::ILLEGAL_OPCODE.mask();

/// The register-level driver.
pub struct Driver<B: Bus> {
    bus: B,
}

impl<B: Bus> Driver<B> {
    pub const fn new(bus: B) -> Driver<B> {
        Driver { bus }
    }
    pub fn bus(&mut self) -> &mut B {
        &mut self.bus
    }
    pub fn into_bus(self) -> B {
        self.bus
    }

    /// False when the CSR block reads as the memory window's undecoded pattern (no engine).
    pub fn present(&mut self) -> bool {
        self.bus.csr_read(csr::window::OFFSET) != mem::UNDECODED_READ
    }

    fn check_range(start: usize, len: usize) -> Result<(), Error> {
        if start > isa::UCODE_WORDS || len > isa::UCODE_WORDS - start {
            return Err(Error::BadRange { start, len });
        }
        Ok(())
    }

    fn check_reg(window: usize, reg: usize) -> Result<(), Error> {
        if window >= isa::WINDOWS {
            return Err(Error::BadWindow(window));
        }
        if reg >= isa::REGS_PER_WINDOW {
            return Err(Error::BadRegister(reg));
        }
        Ok(())
    }

    fn check_launch(l: &Launch) -> Result<(), Error> {
        Self::check_reg(l.window, 0)?;
        if l.mplen == 0 {
            return Err(Error::BadRange { start: l.mpstart, len: 0 });
        }
        Self::check_range(l.mpstart, l.mplen)
    }

    /// Write microcode words at word address `start`.
    pub fn write_ucode(&mut self, start: usize, words: &[u32]) -> Result<(), Error> {
        Self::check_range(start, words.len())?;
        for (i, &w) in words.iter().enumerate() {
            self.bus.mem_write(mem::UCODE_OFFSET + 4 * (start + i) as u32, w);
        }
        Ok(())
    }

    /// Read microcode words from word address `start`.
    pub fn read_ucode(&mut self, start: usize, out: &mut [u32]) -> Result<(), Error> {
        Self::check_range(start, out.len())?;
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.bus.mem_read(mem::UCODE_OFFSET + 4 * (start + i) as u32);
        }
        Ok(())
    }

    /// Write register `reg` of `window` as `isa::REG_WORDS` words, least significant first.
    pub fn write_reg_words(&mut self, window: usize, reg: usize, words: &[u32; isa::REG_WORDS]) -> Result<(), Error> {
        Self::check_reg(window, reg)?;
        let base = isa::rf_offset(window, reg);
        for (i, &w) in words.iter().enumerate() {
            self.bus.mem_write(base + 4 * i as u32, w);
        }
        Ok(())
    }

    /// Read register `reg` of `window` as words, least significant first.
    pub fn read_reg_words(&mut self, window: usize, reg: usize) -> Result<[u32; isa::REG_WORDS], Error> {
        Self::check_reg(window, reg)?;
        let base = isa::rf_offset(window, reg);
        let mut out = [0u32; isa::REG_WORDS];
        for (i, w) in out.iter_mut().enumerate() {
            *w = self.bus.mem_read(base + 4 * i as u32);
        }
        Ok(out)
    }

    /// Write a register from its little-endian bytes.
    pub fn write_reg(&mut self, window: usize, reg: usize, value: &[u8; 4 * isa::REG_WORDS]) -> Result<(), Error> {
        let mut words = [0u32; isa::REG_WORDS];
        for (i, w) in words.iter_mut().enumerate() {
            *w = u32::from_le_bytes([value[4 * i], value[4 * i + 1], value[4 * i + 2], value[4 * i + 3]]);
        }
        self.write_reg_words(window, reg, &words)
    }

    /// Read a register as little-endian bytes.
    pub fn read_reg(&mut self, window: usize, reg: usize) -> Result<[u8; 4 * isa::REG_WORDS], Error> {
        let words = self.read_reg_words(window, reg)?;
        let mut out = [0u8; 4 * isa::REG_WORDS];
        for (i, w) in words.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        Ok(out)
    }

    /// STATUS, decoded.
    pub fn status(&mut self) -> Status {
        let s = self.bus.csr_read(csr::status::OFFSET);
        Status {
            running: csr::status::RUNNING.get(s) != 0,
            mpc: csr::status::MPC.get(s),
            pause_gnt: csr::status::PAUSE_GNT.get(s) != 0,
        }
    }

    fn power(&mut self, on: bool, pause: bool) {
        let v = csr::power::PAUSE_REQ.put(csr::power::ON.put(0, on as u32), pause as u32);
        self.bus.csr_write(csr::power::OFFSET, v);
    }

    fn launch_regs(&mut self, l: &Launch) {
        self.bus.csr_write(csr::window::OFFSET, csr::window::WINDOW.put(0, l.window as u32));
        self.bus.csr_write(csr::mpstart::OFFSET, csr::mpstart::MPSTART.put(0, l.mpstart as u32));
        self.bus.csr_write(csr::mplen::OFFSET, csr::mplen::MPLEN.put(0, l.mplen as u32));
        // stale events of an earlier job
        self.bus.csr_write(csr::ev_pending::OFFSET, EVENTS);
    }

    fn go(&mut self) {
        self.bus.csr_write(csr::control::OFFSET, csr::control::GO.put(0, 1));
    }

    /// Start a job at `mpstart` (engine on, no pause requested).
    pub fn start(&mut self, l: Launch) -> Result<(), Error> {
        Self::check_launch(&l)?;
        self.launch_regs(&l);
        self.power(true, false);
        self.go();
        Ok(())
    }

    /// Resume a paused job at `mpc`: GO with pause_req set reloads mpc from MPRESUME, then the
    /// pause is released.
    pub fn resume(&mut self, l: Launch, mpc: u32) -> Result<(), Error> {
        Self::check_launch(&l)?;
        if (mpc as usize) < l.mpstart || mpc as usize >= l.mpstart + l.mplen {
            return Err(Error::BadResume(mpc));
        }
        self.launch_regs(&l);
        self.bus.csr_write(csr::mpresume::OFFSET, csr::mpresume::MPRESUME.put(0, mpc));
        self.power(true, true);
        self.go();
        self.power(true, false);
        Ok(())
    }

    /// `Some(how)` once the job has ended (its events are then cleared), `None` while it runs.
    /// STATUS is read before EV_PENDING, so a job that halts between the two reads is seen
    /// with its event.
    pub fn poll(&mut self) -> Option<Stop> {
        let running = self.status().running;
        let pending = self.bus.csr_read(csr::ev_pending::OFFSET);
        let stop = if csr::ev_pending::ILLEGAL_OPCODE.get(pending) != 0 {
            Stop::Illegal { mpc: self.status().mpc }
        } else if csr::ev_pending::FINISHED.get(pending) != 0 || !running {
            Stop::Finished
        } else {
            return None;
        };
        self.bus.csr_write(csr::ev_pending::OFFSET, pending & EVENTS);
        Some(stop)
    }

    /// Poll until the job ends, at most `max_polls` times.
    pub fn wait(&mut self, max_polls: u32) -> Result<Stop, Error> {
        for _ in 0..max_polls {
            if let Some(s) = self.poll() {
                return Ok(s);
            }
        }
        Err(Error::Timeout)
    }

    /// Start a job and wait for its end (busy polling).
    pub fn run(&mut self, l: Launch, max_polls: u32) -> Result<Stop, Error> {
        self.start(l)?;
        self.wait(max_polls)
    }

    /// Request a pause and wait (at most `max_polls` STATUS reads) until it is granted or the
    /// job ends. A granted pause leaves pause_req set until [`Driver::resume`] or
    /// [`Driver::start`].
    pub fn pause(&mut self, max_polls: u32) -> Result<Paused, Error> {
        self.power(true, true);
        for _ in 0..max_polls {
            let s = self.status();
            if s.pause_gnt {
                return Ok(Paused::At { mpc: s.mpc });
            }
            if !s.running {
                self.power(true, false);
                let stop = self.poll().unwrap_or(Stop::Finished);
                return Ok(Paused::Ended(stop));
            }
        }
        Err(Error::Timeout)
    }

    /// Release a granted pause: the job continues where it stopped (no MPRESUME involved, so
    /// this works on an engine whose MPRESUME is undriven, as long as no other job ran
    /// meanwhile).
    pub fn unpause(&mut self) {
        self.power(true, false);
    }

    /// MPRESUME as read (the paused mpc on an engine that drives it; 0 on the shipped engine,
    /// which leaves it undriven).
    pub fn mpresume(&mut self) -> u32 {
        csr::mpresume::MPRESUME.get(self.bus.csr_read(csr::mpresume::OFFSET))
    }

    /// Engine clocks off, pause released.
    pub fn power_off(&mut self) {
        self.power(false, false);
    }
}
