//! Cycle-exact model of the engine (ISA v1 and v2): the hosted engine.
//!
//! [`EngineModel`] holds what the hardware holds: the register file (16 windows x 32 x 256 bits) and
//! the microcode RAM (1024 words). A job ([`Job`]) runs a program from `mpstart` on one window.
//! Instruction semantics are those of the spec's opcode table (`spec/engine25519.toml`, via
//! [`crate::isa`]); every cycle cost comes from the same table: nothing here restates a cost.
//!
//! # Execution rules (both ISAs)
//! * The job starts at `mpc = mpstart`, `go_cycles` after GO (the shipped v1 sequencer spends one
//!   cycle in IDLE seeing GO before its first FETCH). After each instruction the engine stops if
//!   it executed FIN ([`StopReason::Fin`]) or if it executed the word at
//!   `stop = mpstart + mplen - 1` without taking a branch ([`StopReason::EndOfProgram`]).
//! * BRZ: if Ra == 0 the branch is taken to `target = (mpc + imm + 1) mod 1024` (the 10-bit
//!   program counter wraps). It is followed only if `mpstart <= target < stop`, as in the shipped
//!   RTL (betrusted-io/gateware, `gateware/curve25519/engine.py`, state DO_BRZ). A branch to the
//!   last word `stop` halts the engine with the finished event without executing that word
//!   ([`StopReason::BranchToEnd`]); any other target outside the program halts it too, and the
//!   model reports that as a program error ([`ModelError::BranchOutOfProgram`]).
//! * An opcode the ISA does not define halts the engine after `illegal_cycles`
//!   ([`ModelError::IllegalOpcode`]). In every halt the engine first lets outstanding results
//!   land (v2's drain; v1 has none), so the reported cycle count includes them.
//! * A job whose cycle count exceeds its `cycle_budget` is stopped ([`ModelError::CycleBudgetExceeded`]).
//!
//! # Timing (issue model; identical to v1's sequential FETCH/EXEC/WAIT_DONE when every
//! opcode's latency equals its cost)
//! Each instruction *issues* at cycle `t`, the earliest cycle that is
//! * not before the previous instruction's issue cycle plus that instruction's `cycles`,
//! * not before the cycle at which every register it reads or writes has been written
//!   (a per-register ready time: the scoreboard / interlock),
//! * for an opcode of a unit declared with a count in `[isa.<name>.units]` (v2: two `mul`
//!   units), not before one instance of that unit is free; an instance is busy from issue until
//!   issue + latency; the earliest-free instance (lowest index on ties) is taken,
//! * for FIN: not before every outstanding result has been written (drain).
//!
//! Its results become readable at `t + latency`. The job's cycle count is the issue cycle of the
//! last instruction plus its `cycles`, or the last result write if that is later. In v1 every
//! latency equals its cost and no unit is declared, so the count is the plain sum of the costs.
//!
//! # Pausing
//! [`EngineModel::run_limited`] stops after a given number of instructions, at an instruction
//! boundary, and returns a [`PausedJob`] (serde-serializable): the job, mpc, cycle count, the
//! scoreboard (ready times, unit occupancy) and the 32 registers of the job's window.
//! [`EngineModel::resume`] restores it (on this or another engine of the same ISA) and continues; the
//! result and the final cycle count are identical to an uninterrupted run. Results of in-flight
//! multiplies are held in the saved registers; the scoreboard makes them invisible to the program
//! until their ready time, exactly as if the write happened later.

use crate::isa::{self, Instr, Isa, OperandKind};
use crate::model_field as f;
use crate::model_field::U256;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::OnceLock;

/// Number of register windows.
pub const WINDOWS: usize = isa::WINDOWS;
/// Registers per window.
pub const REGS: usize = isa::REGS_PER_WINDOW;
/// Microcode RAM words.
pub const UCODE_WORDS: usize = isa::UCODE_WORDS;
/// Maximum number of instances of one execution unit the model tracks.
const MAX_UNIT_INSTANCES: usize = 4;

/// What the engine executes (one per opcode mnemonic in the spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Psa,
    Psb,
    Msk,
    Xor,
    Not,
    Add,
    Sub,
    Mul,
    Sqr, // MUL with both operands the same source (same result, faster host path)
    Trd,
    Brz,
    Fin,
    Shl,
    Xbt,
    Fadd,
    Fsub,
    Cswap,
    Illegal,
}

fn op_of_mnemonic(m: &str) -> Option<Op> {
    Some(match m {
        "psa" => Op::Psa,
        "psb" => Op::Psb,
        "msk" => Op::Msk,
        "xor" => Op::Xor,
        "not" => Op::Not,
        "add" => Op::Add,
        "sub" => Op::Sub,
        "mul" => Op::Mul,
        "trd" => Op::Trd,
        "brz" => Op::Brz,
        "fin" => Op::Fin,
        "shl" => Op::Shl,
        "xbt" => Op::Xbt,
        "fadd" => Op::Fadd,
        "fsub" => Op::Fsub,
        "cswap" => Op::Cswap,
        _ => return None,
    })
}

/// Mnemonics of the spec the model does not implement (must be empty: a test checks it).
pub fn unimplemented_mnemonics(isa: Isa) -> Vec<&'static str> {
    isa.opcodes().iter().filter(|o| op_of_mnemonic(o.mnemonic).is_none()).map(|o| o.mnemonic).collect()
}

/// Operand source: register index, or constant ROM slot (flag bit 0x80).
const CONST_FLAG: u8 = 0x80;

/// A pre-decoded microcode word.
#[derive(Clone, Copy, Debug)]
struct Dec {
    op: Op,
    a: u8,
    b: u8,
    wd: u8,
    /// register reads/writes for the scoreboard: bit r = register r
    touch: u32,
    /// writes Wd (and, for CSWAP, Ra)
    writes: bool,
    imm: i32,
    cycles: u32,
    latency: u32,
    /// index of the tracked unit, or u8::MAX
    unit: u8,
}

const ILLEGAL: Dec =
    Dec { op: Op::Illegal, a: 0, b: 0, wd: 0, touch: 0, writes: false, imm: 0, cycles: 0, latency: 0, unit: u8::MAX };

/// Per-ISA tables derived once from the spec.
struct IsaTables {
    isa: Isa,
    consts: Vec<U256>,
    illegal_cycles: u32,
    /// (unit name, instance count) for units the spec declares in `[isa.<name>.units]`
    units: Vec<(String, usize)>,
}

fn tables(isa: Isa) -> &'static IsaTables {
    static T: OnceLock<Vec<IsaTables>> = OnceLock::new();
    let all = T.get_or_init(|| {
        Isa::ALL
            .iter()
            .map(|&i| {
                let info = i.info();
                let consts = info.const_rom.iter().map(f::from_words).collect();
                // instance counts come from the generated tables (build.rs reads [isa.<name>.units])
                let units = info
                    .units
                    .iter()
                    .map(|u| {
                        assert!(
                            (1..=MAX_UNIT_INSTANCES as u32).contains(&u.count),
                            "isa.{}.units.{}: count must be 1..={MAX_UNIT_INSTANCES}",
                            i.name(),
                            u.unit
                        );
                        (u.unit.to_string(), u.count as usize)
                    })
                    .collect();
                IsaTables { isa: i, consts, illegal_cycles: info.illegal_cycles, units }
            })
            .collect()
    });
    all.iter().find(|t| t.isa == isa).unwrap()
}

/// Declared execution-unit instance counts of an ISA (`[isa.<name>.units]`, e.g. v2: mul = 2).
pub fn unit_counts(isa: Isa) -> Vec<(String, usize)> {
    tables(isa).units.clone()
}

fn decode(isa: Isa, word: u32) -> Dec {
    let Some(info) = isa.opcode_of(word) else { return ILLEGAL };
    let Some(mut op) = op_of_mnemonic(info.mnemonic) else { return ILLEGAL };
    let i = Instr::decode(word);
    let mut d = Dec {
        op,
        a: if i.ca { i.ra | CONST_FLAG } else { i.ra },
        b: if i.cb { i.rb | CONST_FLAG } else { i.rb },
        wd: i.wd,
        touch: 0,
        writes: false,
        imm: i.imm as i32,
        cycles: info.cycles,
        latency: info.latency,
        unit: u8::MAX,
    };
    for k in info.operands {
        match k {
            OperandKind::Wd => {
                d.writes = true;
                d.touch |= 1 << i.wd;
            }
            OperandKind::Ra | OperandKind::RaReg if !i.ca => d.touch |= 1 << i.ra,
            OperandKind::Rb | OperandKind::RbReg if !i.cb => d.touch |= 1 << i.rb,
            _ => {}
        }
    }
    if op == Op::Mul && d.a == d.b {
        op = Op::Sqr;
        d.op = op;
    }
    let t = tables(isa);
    if let Some(u) = t.units.iter().position(|(n, _)| n == info.unit) {
        d.unit = u as u8;
    }
    d
}

/// A job: which window, which part of the microcode, how many cycles at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub window: usize,
    pub mpstart: usize,
    pub mplen: usize,
    /// The job fails with [`ModelError::CycleBudgetExceeded`] once it has used more cycles.
    pub cycle_budget: u64,
}

/// Why a job stopped normally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// FIN executed.
    Fin,
    /// The word at `mpstart + mplen - 1` executed (no FIN).
    EndOfProgram,
    /// A taken BRZ targeted the program's last word `mpstart + mplen - 1`: the engine halts with
    /// the finished event without executing it (the shipped RTL's range check is `target < stop`).
    BranchToEnd,
}

/// Result of a finished job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Engine cycles (eng_clk) from GO to the finished event.
    pub cycles: u64,
    /// Instructions executed.
    pub instructions: u64,
    pub stop_reason: StopReason,
    /// Address of the last instruction executed.
    pub last_mpc: usize,
}

/// Saved state of a paused job (at an instruction boundary).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PausedJob {
    /// ISA name ("v1", "v2"): a job resumes only on an engine of the same ISA.
    pub isa: String,
    pub job: Job,
    /// Address of the next instruction (what MPRESUME holds).
    pub mpc: usize,
    /// Sequencer cycle: the earliest issue cycle of the next instruction.
    pub cycle: u64,
    pub instructions: u64,
    /// Scoreboard: cycle at which each register of the window has been written.
    pub ready: Vec<u64>,
    /// Cycle at which each instance of each tracked unit becomes free (unit-major).
    pub unit_free: Vec<u64>,
    /// The job window's 32 registers, little-endian bytes.
    pub regs: Vec<[u8; 32]>,
}

/// Result of a run that may pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    Finished(RunOutcome),
    Paused(PausedJob),
}

/// Errors: bad job parameters, and the engine's halting conditions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelError {
    /// Window index beyond the register file.
    BadWindow { window: usize },
    /// `mplen == 0` or the program runs past the microcode RAM.
    BadProgramRange { mpstart: usize, mplen: usize },
    /// `load_program` would write past the microcode RAM.
    ProgramTooLong { at: usize, len: usize },
    /// Register index beyond the window.
    BadRegister { reg: usize },
    /// The engine fetched an opcode its ISA does not define (illegal_opcode event).
    IllegalOpcode { mpc: usize, word: u32, cycles: u64 },
    /// A taken BRZ pointed outside `[mpstart, mpstart + mplen)`: the engine halted.
    BranchOutOfProgram { mpc: usize, target: i64, cycles: u64 },
    /// The job ran longer than its cycle budget (runaway program).
    CycleBudgetExceeded { mpc: usize, cycles: u64, budget: u64 },
    /// A paused job is resumed on an engine of another ISA, or its state is malformed.
    BadPausedState { reason: String },
}

impl fmt::Display for ModelError {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::BadWindow { window } => write!(fm, "window {window} out of range (0..{WINDOWS})"),
            ModelError::BadProgramRange { mpstart, mplen } => {
                write!(fm, "bad program range mpstart={mpstart} mplen={mplen} (microcode has {UCODE_WORDS} words)")
            }
            ModelError::ProgramTooLong { at, len } => {
                write!(fm, "program of {len} words at {at} does not fit the {UCODE_WORDS}-word microcode RAM")
            }
            ModelError::BadRegister { reg } => write!(fm, "register {reg} out of range (0..{REGS})"),
            ModelError::IllegalOpcode { mpc, word, cycles } => {
                write!(fm, "illegal opcode: word {word:#010x} at mpc {mpc} (after {cycles} cycles)")
            }
            ModelError::BranchOutOfProgram { mpc, target, cycles } => {
                write!(fm, "branch at mpc {mpc} to {target}, outside the program (after {cycles} cycles)")
            }
            ModelError::CycleBudgetExceeded { mpc, cycles, budget } => {
                write!(fm, "runaway program: {cycles} cycles > budget {budget} (mpc {mpc})")
            }
            ModelError::BadPausedState { reason } => write!(fm, "cannot resume: {reason}"),
        }
    }
}

impl std::error::Error for ModelError {}

/// Scoreboard / sequencer state of a running job.
#[derive(Clone, Copy)]
struct Timing {
    t: u64,
    ready: [u64; REGS],
    unit_free: [[u64; MAX_UNIT_INSTANCES]; 4],
}

/// The cycle-exact engine model: register file + microcode RAM of one ISA.
#[derive(Clone)]
pub struct EngineModel {
    isa: Isa,
    rf: Vec<[U256; REGS]>,
    ucode: Vec<u32>,
    dec: Vec<Dec>,
}

impl fmt::Debug for EngineModel {
    fn fmt(&self, fm: &mut fmt::Formatter<'_>) -> fmt::Result {
        fm.debug_struct("EngineModel").field("isa", &self.isa).finish_non_exhaustive()
    }
}

impl EngineModel {
    /// A powered-up engine: RF and microcode RAM all zero.
    pub fn new(isa: Isa) -> EngineModel {
        let zero = decode(isa, 0);
        EngineModel {
            isa,
            rf: vec![[[0; 4]; REGS]; WINDOWS],
            ucode: vec![0; UCODE_WORDS],
            dec: vec![zero; UCODE_WORDS],
        }
    }

    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// Write `words` into the microcode RAM starting at word address `at`.
    pub fn load_program(&mut self, words: &[u32], at: usize) -> Result<(), ModelError> {
        if at > UCODE_WORDS || words.len() > UCODE_WORDS - at {
            return Err(ModelError::ProgramTooLong { at, len: words.len() });
        }
        for (k, &w) in words.iter().enumerate() {
            self.ucode[at + k] = w;
            self.dec[at + k] = decode(self.isa, w);
        }
        Ok(())
    }

    /// The microcode RAM.
    pub fn ucode(&self) -> &[u32] {
        &self.ucode
    }

    fn check_reg(window: usize, reg: usize) -> Result<(), ModelError> {
        if window >= WINDOWS {
            return Err(ModelError::BadWindow { window });
        }
        if reg >= REGS {
            return Err(ModelError::BadRegister { reg });
        }
        Ok(())
    }

    /// Write register `reg` of `window` (32 little-endian bytes).
    pub fn set_reg(&mut self, window: usize, reg: usize, value: &[u8; 32]) -> Result<(), ModelError> {
        Self::check_reg(window, reg)?;
        self.rf[window][reg] = f::from_bytes(value);
        Ok(())
    }

    /// Read register `reg` of `window` (32 little-endian bytes).
    pub fn reg(&self, window: usize, reg: usize) -> Result<[u8; 32], ModelError> {
        Self::check_reg(window, reg)?;
        Ok(f::to_bytes(&self.rf[window][reg]))
    }

    /// Write a register as 8 little-endian u32 words (the bus layout, LSW first).
    pub fn set_reg_words(&mut self, window: usize, reg: usize, words: &[u32; 8]) -> Result<(), ModelError> {
        Self::check_reg(window, reg)?;
        self.rf[window][reg] = f::from_words(words);
        Ok(())
    }

    /// Read a register as 8 little-endian u32 words.
    pub fn reg_words(&self, window: usize, reg: usize) -> Result<[u32; 8], ModelError> {
        Self::check_reg(window, reg)?;
        Ok(f::to_words(&self.rf[window][reg]))
    }

    /// Zero every register of a window.
    pub fn clear_window(&mut self, window: usize) -> Result<(), ModelError> {
        Self::check_reg(window, 0)?;
        self.rf[window] = [[0; 4]; REGS];
        Ok(())
    }

    /// Bus read of the memory window (byte offset from `isa::mem::BASE`), as the hardware
    /// answers it while idle: microcode, register file, or `UNDECODED_READ`.
    pub fn mem_read(&self, offset: u32) -> u32 {
        let m = (isa::mem::UCODE_OFFSET, isa::mem::RF_OFFSET);
        if offset.is_multiple_of(4) && offset >= m.0 && offset < m.0 + 4 * UCODE_WORDS as u32 {
            return self.ucode[((offset - m.0) / 4) as usize];
        }
        if let Some((w, r, k)) = rf_decode(offset) {
            return f::to_words(&self.rf[w][r])[k];
        }
        isa::mem::UNDECODED_READ
    }

    /// Bus write of the memory window (writes to undecoded addresses are ignored, as in hardware).
    pub fn mem_write(&mut self, offset: u32, value: u32) {
        let m = isa::mem::UCODE_OFFSET;
        if offset.is_multiple_of(4) && offset >= m && offset < m + 4 * UCODE_WORDS as u32 {
            let _ = self.load_program(&[value], ((offset - m) / 4) as usize);
        } else if let Some((w, r, k)) = rf_decode(offset) {
            let mut words = f::to_words(&self.rf[w][r]);
            words[k] = value;
            self.rf[w][r] = f::from_words(&words);
        }
    }

    fn check_job(job: &Job) -> Result<(), ModelError> {
        if job.window >= WINDOWS {
            return Err(ModelError::BadWindow { window: job.window });
        }
        if job.mplen == 0 || job.mpstart >= UCODE_WORDS || job.mplen > UCODE_WORDS - job.mpstart {
            return Err(ModelError::BadProgramRange { mpstart: job.mpstart, mplen: job.mplen });
        }
        Ok(())
    }

    /// Run a job to completion.
    pub fn run(&mut self, job: &Job) -> Result<RunOutcome, ModelError> {
        match self.run_limited(job, u64::MAX)? {
            RunStatus::Finished(o) => Ok(o),
            RunStatus::Paused(_) => unreachable!("u64::MAX instructions exceed any budget"),
        }
    }

    /// Run a job for at most `max_instructions` instructions; pause at that boundary.
    pub fn run_limited(&mut self, job: &Job, max_instructions: u64) -> Result<RunStatus, ModelError> {
        Self::check_job(job)?;
        let t0 = self.isa.info().go_cycles as u64;
        let timing = Timing { t: t0, ready: [0; REGS], unit_free: [[0; MAX_UNIT_INSTANCES]; 4] };
        self.exec(job, job.mpstart, timing, 0, max_instructions)
    }

    /// Resume a paused job (its registers are written back into its window first).
    pub fn resume(&mut self, p: &PausedJob, max_instructions: u64) -> Result<RunStatus, ModelError> {
        let bad = |reason: &str| Err(ModelError::BadPausedState { reason: reason.to_string() });
        if p.isa != self.isa.name() {
            return bad("paused on an engine of another ISA");
        }
        Self::check_job(&p.job)?;
        if p.mpc < p.job.mpstart || p.mpc >= p.job.mpstart + p.job.mplen {
            return bad("mpc outside the job's program");
        }
        let nunits: usize = tables(self.isa).units.len() * MAX_UNIT_INSTANCES;
        if p.ready.len() != REGS || p.regs.len() != REGS || p.unit_free.len() != nunits {
            return bad("scoreboard or register vector has the wrong length");
        }
        let mut timing = Timing { t: p.cycle, ready: [0; REGS], unit_free: [[0; MAX_UNIT_INSTANCES]; 4] };
        timing.ready.copy_from_slice(&p.ready);
        for (k, &v) in p.unit_free.iter().enumerate() {
            timing.unit_free[k / MAX_UNIT_INSTANCES][k % MAX_UNIT_INSTANCES] = v;
        }
        for (r, v) in p.regs.iter().enumerate() {
            self.rf[p.job.window][r] = f::from_bytes(v);
        }
        self.exec(&p.job, p.mpc, timing, p.instructions, max_instructions)
    }

    /// The interpreter loop.
    fn exec(
        &mut self,
        job: &Job,
        mut mpc: usize,
        mut tm: Timing,
        mut count: u64,
        max_instructions: u64,
    ) -> Result<RunStatus, ModelError> {
        let tbl = tables(self.isa);
        let consts: &[U256] = &tbl.consts;
        let unit_n: Vec<usize> = tbl.units.iter().map(|u| u.1).collect();
        let start = job.mpstart;
        let stop = job.mpstart + job.mplen - 1;
        let budget = job.cycle_budget;
        let regs = &mut self.rf[job.window];
        let dec = &self.dec;
        let mut executed: u64 = 0;
        loop {
            if executed >= max_instructions {
                let nunits = unit_n.len() * MAX_UNIT_INSTANCES;
                let unit_free =
                    (0..nunits).map(|k| tm.unit_free[k / MAX_UNIT_INSTANCES][k % MAX_UNIT_INSTANCES]).collect();
                return Ok(RunStatus::Paused(PausedJob {
                    isa: self.isa.name().to_string(),
                    job: *job,
                    mpc,
                    cycle: tm.t,
                    instructions: count,
                    ready: tm.ready.to_vec(),
                    unit_free,
                    regs: regs.iter().map(f::to_bytes).collect(),
                }));
            }
            let d = &dec[mpc];
            // ---- issue time (scoreboard)
            let mut t = tm.t;
            let drained = |t: u64, ready: &[u64; REGS]| ready.iter().fold(t, |a, &r| a.max(r));
            if d.op == Op::Illegal {
                let cycles = drained(t + tbl.illegal_cycles as u64, &tm.ready);
                return Err(ModelError::IllegalOpcode { mpc, word: self.ucode[mpc], cycles });
            }
            let mut touch = d.touch;
            while touch != 0 {
                let r = touch.trailing_zeros() as usize;
                touch &= touch - 1;
                t = t.max(tm.ready[r]);
            }
            if d.unit != u8::MAX {
                let u = d.unit as usize;
                let free = &mut tm.unit_free[u];
                let mut k = 0;
                for i in 1..unit_n[u] {
                    if free[i] < free[k] {
                        k = i;
                    }
                }
                t = t.max(free[k]);
                free[k] = t + d.latency as u64;
            }
            if d.op == Op::Fin {
                for &r in tm.ready.iter() {
                    t = t.max(r);
                }
            }
            let done = t + d.latency as u64;
            // ---- execute
            let rd = |s: u8, regs: &[U256; REGS]| -> U256 {
                if s & CONST_FLAG != 0 {
                    consts[(s & !CONST_FLAG) as usize]
                } else {
                    regs[s as usize]
                }
            };
            let mut next = mpc + 1;
            let mut fin = false;
            let mut to_end = false;
            match d.op {
                Op::Psa => regs[d.wd as usize] = rd(d.a, regs),
                Op::Psb => regs[d.wd as usize] = rd(d.b, regs),
                Op::Msk => regs[d.wd as usize] = f::msk(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Xor => regs[d.wd as usize] = f::xor(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Not => regs[d.wd as usize] = f::not(&rd(d.a, regs)),
                Op::Add => regs[d.wd as usize] = f::add(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Sub => regs[d.wd as usize] = f::sub(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Mul => regs[d.wd as usize] = f::mul(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Sqr => regs[d.wd as usize] = f::sqr(&rd(d.a, regs)),
                Op::Trd => regs[d.wd as usize] = f::trd(&rd(d.a, regs)),
                Op::Shl => regs[d.wd as usize] = f::shl(&rd(d.a, regs)),
                Op::Xbt => regs[d.wd as usize] = f::xbt(&rd(d.a, regs)),
                Op::Fadd => regs[d.wd as usize] = f::fadd(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Fsub => regs[d.wd as usize] = f::fsub(&rd(d.a, regs), &rd(d.b, regs)),
                Op::Cswap => {
                    // Ra is a register (ra_reg operand); condition = Rb[0]
                    if rd(d.b, regs)[0] & 1 == 1 {
                        regs.swap(d.wd as usize, d.a as usize);
                    }
                }
                Op::Brz => {
                    if rd(d.a, regs) == [0; 4] {
                        // the 10-bit program counter wraps (mod the microcode size)
                        let target = (mpc as i64 + d.imm as i64 + 1).rem_euclid(UCODE_WORDS as i64);
                        if target == stop as i64 {
                            to_end = true;
                        } else if target < start as i64 || target > stop as i64 {
                            return Err(ModelError::BranchOutOfProgram {
                                mpc,
                                target,
                                cycles: drained(t + d.cycles as u64, &tm.ready),
                            });
                        } else {
                            next = target as usize;
                        }
                    }
                }
                Op::Fin => fin = true,
                Op::Illegal => unreachable!(),
            }
            // ---- retire
            if d.writes {
                tm.ready[d.wd as usize] = done;
                if d.op == Op::Cswap {
                    tm.ready[d.a as usize] = done;
                }
            }
            tm.t = t + d.cycles as u64;
            executed += 1;
            count += 1;
            if tm.t > budget {
                return Err(ModelError::CycleBudgetExceeded { mpc, cycles: tm.t, budget });
            }
            if fin || to_end || (mpc == stop && next == mpc + 1) {
                let mut end = tm.t;
                for &r in tm.ready.iter() {
                    end = end.max(r);
                }
                if end > budget {
                    return Err(ModelError::CycleBudgetExceeded { mpc, cycles: end, budget });
                }
                return Ok(RunStatus::Finished(RunOutcome {
                    cycles: end,
                    instructions: count,
                    stop_reason: if fin {
                        StopReason::Fin
                    } else if to_end {
                        StopReason::BranchToEnd
                    } else {
                        StopReason::EndOfProgram
                    },
                    last_mpc: mpc,
                }));
            }
            mpc = next;
        }
    }
}

/// Decode a memory-window byte offset into (window, register, u32 word index).
fn rf_decode(offset: u32) -> Option<(usize, usize, usize)> {
    let base = isa::mem::RF_OFFSET;
    if !offset.is_multiple_of(4) || offset < base {
        return None;
    }
    let rel = offset - base;
    let w = (rel / isa::mem::WINDOW_STRIDE) as usize;
    let in_w = rel % isa::mem::WINDOW_STRIDE;
    let r = (in_w / isa::mem::REG_STRIDE) as usize;
    let k = ((in_w % isa::mem::REG_STRIDE) / 4) as usize;
    if w < WINDOWS && r < REGS && k < isa::REG_WORDS {
        Some((w, r, k))
    } else {
        None
    }
}
