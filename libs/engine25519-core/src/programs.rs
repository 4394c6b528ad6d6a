//! The engine's microcode programs (assembly sources in `libs/engine25519-core/programs/*.s`),
//! assembled once on first use, and convenience runners that execute them on the model.
//!
//! Code shared by several programs lives once, in an include fragment under the same directory
//! ([`FRAGMENTS`]), pulled in with `.include "name.s"`: `x25519_invert.s` (the inversion
//! z2^(p-2) and the affine result) is the common tail of `x25519_v1.s` and `x25519_v2.s`;
//! `x25519_v2_ladder.s` (clamping, ladder, final swap) is the ladder of `x25519_v2.s`;
//! `x25519_v2_ladder_sched.s`, the same ladder with the (z2, z3) swap moved onto the previous
//! step's MUL operands and the step rescheduled (69 instead of 73 eng_clk), is the ladder of
//! `x25519_batch_v2.s` (which runs its jobs' inversions interleaved, in its own code). Fragments
//! are not programs themselves.
//!
//! # Register conventions
//! * X25519 (`x25519_v1.s`, `x25519_v2.s`): in `%31` = scalar (raw 32 bytes, clamped by the
//!   microcode), `%24` = u-coordinate (raw 32 bytes: bit 255 ignored, non-canonical values
//!   reduced); out `%31` = X25519(scalar, u). Every other register of the window is clobbered.
//! * X25519 batch (`x25519_batch_v2.s`, ISA v2 only, name `x25519_batch`): up to
//!   [`X25519_BATCH_MAX`] X25519 in one run. Job j's scalar in `X25519_BATCH_SLOTS[2 j]`, its u
//!   in `X25519_BATCH_SLOTS[2 j + 1]`, N - 1 in [`X25519_BATCH_COUNT_REG`] (public); job j's
//!   result in [`x25519_batch_result_reg`]`(N, j)`. Its `inputs` are the six slots and the counter.
//! * Field operations (`field_*.s`): in `%0` = a, `%1` = b, out `%31`; add/sub expect a, b in
//!   [0, p) and may clobber `%30`; mul accepts any 256-bit operands (bit 255 ignored).

use crate::asm;
use crate::isa::Isa;
use crate::model::{EngineModel, Job, ModelError, RunOutcome};
use std::sync::OnceLock;

/// Register holding the scalar on input and the result on output (X25519 programs).
pub const X25519_SCALAR_REG: usize = 31;
/// Register holding the u-coordinate on input (X25519 programs).
pub const X25519_U_REG: usize = 24;
/// Register holding the result (all programs).
pub const RESULT_REG: usize = 31;
/// The batch program's ring of operand slots (`x25519_batch_v2.s`): job j's scalar in slot 2 j,
/// its u in slot 2 j + 1. Slots 0 and 1 are the X25519 program's scalar and u registers.
pub const X25519_BATCH_SLOTS: [usize; 6] = [X25519_SCALAR_REG, X25519_U_REG, 21, 22, 23, 29];
/// The batch program's job counter: N - 1 for a run of N jobs (public: the program branches on
/// it).
pub const X25519_BATCH_COUNT_REG: usize = 30;
/// Jobs one run of the batch program can take (three scalar / u pairs fit the ring).
pub const X25519_BATCH_MAX: usize = X25519_BATCH_SLOTS.len() / 2;

/// Why a batch program run cannot be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchError {
    /// N outside 1..=[`X25519_BATCH_MAX`]
    BadCount(usize),
    /// job index j >= N
    BadJob { n: usize, job: usize },
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchError::BadCount(n) => {
                write!(f, "the X25519 batch program runs 1..={X25519_BATCH_MAX} jobs, not {n}")
            }
            BatchError::BadJob { n, job } => write!(f, "job {job} of a batch of {n} does not exist"),
        }
    }
}

impl std::error::Error for BatchError {}

/// The value of [`X25519_BATCH_COUNT_REG`] for a run of `n` jobs (N - 1, little-endian).
pub fn x25519_batch_count_value(n: usize) -> Result<[u8; 32], BatchError> {
    if !(1..=X25519_BATCH_MAX).contains(&n) {
        return Err(BatchError::BadCount(n));
    }
    let mut v = [0u8; 32];
    v[0] = (n - 1) as u8;
    Ok(v)
}

/// Where job `job` of a run of `n` jobs leaves its result: the ring turns by two slots after
/// each job's ladder but the last, taking the job's x2 to slot 4 (and z2 to slot 5), so job j's
/// x2 waits in slot 4 (N - 1 - j) mod 6 and its result is written over it (the last job's x2
/// stays where the ladder made it; its result goes to slot 0).
pub fn x25519_batch_result_reg(n: usize, job: usize) -> Result<usize, BatchError> {
    if !(1..=X25519_BATCH_MAX).contains(&n) {
        return Err(BatchError::BadCount(n));
    }
    if job >= n {
        return Err(BatchError::BadJob { n, job });
    }
    Ok(X25519_BATCH_SLOTS[4 * (n - 1 - job) % X25519_BATCH_SLOTS.len()])
}

/// Input registers of the field-operation programs (a, b).
pub const FIELD_A_REG: usize = 0;
pub const FIELD_B_REG: usize = 1;

/// An assembled microcode program.
#[derive(Debug)]
pub struct MicroProgram {
    /// Short name ("x25519", "field_mul", ...).
    pub name: &'static str,
    pub isa: Isa,
    /// File name under `libs/engine25519-core/programs/`.
    pub file: &'static str,
    /// The assembly source (its `.include`s resolve through [`resolve_fragment`]).
    pub source: &'static str,
    /// Assembled words and labels.
    pub program: asm::Program,
    /// Input registers, in argument order.
    pub inputs: &'static [usize],
    /// Output register.
    pub output: usize,
}

impl MicroProgram {
    /// Instruction words (load anywhere: branches are PC-relative).
    pub fn words(&self) -> &[u32] {
        &self.program.words
    }
    /// Number of instruction words.
    pub fn len(&self) -> usize {
        self.program.words.len()
    }
    pub fn is_empty(&self) -> bool {
        self.program.words.is_empty()
    }
    /// Word address of a label within the program.
    pub fn label(&self, name: &str) -> Option<usize> {
        self.program.label(name)
    }
}

struct Src {
    name: &'static str,
    file: &'static str,
    isa: Isa,
    source: &'static str,
    inputs: &'static [usize],
}

const X25519_IN: &[usize] = &[X25519_SCALAR_REG, X25519_U_REG];
const FIELD_IN: &[usize] = &[FIELD_A_REG, FIELD_B_REG];
const X25519_BATCH_IN: &[usize] = &[
    X25519_BATCH_SLOTS[0],
    X25519_BATCH_SLOTS[1],
    X25519_BATCH_SLOTS[2],
    X25519_BATCH_SLOTS[3],
    X25519_BATCH_SLOTS[4],
    X25519_BATCH_SLOTS[5],
    X25519_BATCH_COUNT_REG,
];

const SOURCES: &[Src] = &[
    Src {
        name: "x25519",
        file: "x25519_v1.s",
        isa: Isa::V1,
        source: include_str!("../programs/x25519_v1.s"),
        inputs: X25519_IN,
    },
    Src {
        name: "x25519",
        file: "x25519_v2.s",
        isa: Isa::V2,
        source: include_str!("../programs/x25519_v2.s"),
        inputs: X25519_IN,
    },
    Src {
        name: "x25519_batch",
        file: "x25519_batch_v2.s",
        isa: Isa::V2,
        source: include_str!("../programs/x25519_batch_v2.s"),
        inputs: X25519_BATCH_IN,
    },
    Src {
        name: "field_mul",
        file: "field_mul.s",
        isa: Isa::V1,
        source: include_str!("../programs/field_mul.s"),
        inputs: FIELD_IN,
    },
    Src {
        name: "field_mul",
        file: "field_mul.s",
        isa: Isa::V2,
        source: include_str!("../programs/field_mul.s"),
        inputs: FIELD_IN,
    },
    Src {
        name: "field_add",
        file: "field_add_v1.s",
        isa: Isa::V1,
        source: include_str!("../programs/field_add_v1.s"),
        inputs: FIELD_IN,
    },
    Src {
        name: "field_sub",
        file: "field_sub_v1.s",
        isa: Isa::V1,
        source: include_str!("../programs/field_sub_v1.s"),
        inputs: FIELD_IN,
    },
    Src {
        name: "field_add",
        file: "field_add_v2.s",
        isa: Isa::V2,
        source: include_str!("../programs/field_add_v2.s"),
        inputs: FIELD_IN,
    },
    Src {
        name: "field_sub",
        file: "field_sub_v2.s",
        isa: Isa::V2,
        source: include_str!("../programs/field_sub_v2.s"),
        inputs: FIELD_IN,
    },
];

/// Include fragments (`.include "name"` in the programs above): name -> text, each file under
/// `libs/engine25519-core/programs/`.
pub const FRAGMENTS: &[(&str, &str)] = &[
    ("x25519_invert.s", include_str!("../programs/x25519_invert.s")),
    ("x25519_v2_ladder.s", include_str!("../programs/x25519_v2_ladder.s")),
    ("x25519_v2_ladder_sched.s", include_str!("../programs/x25519_v2_ladder_sched.s")),
];

/// The include resolver of the built-in programs: a lookup in [`FRAGMENTS`].
pub fn resolve_fragment(name: &str) -> Option<String> {
    FRAGMENTS.iter().find(|(n, _)| *n == name).map(|(_, text)| text.to_string())
}

fn assembled() -> &'static [MicroProgram] {
    static P: OnceLock<Vec<MicroProgram>> = OnceLock::new();
    P.get_or_init(|| {
        SOURCES
            .iter()
            .map(|s| {
                let program = asm::assemble_with(s.source, s.isa, &resolve_fragment)
                    .unwrap_or_else(|e| panic!("programs/{} ({}): {e}", s.file, s.isa));
                MicroProgram {
                    name: s.name,
                    isa: s.isa,
                    file: s.file,
                    source: s.source,
                    program,
                    inputs: s.inputs,
                    output: RESULT_REG,
                }
            })
            .collect()
    })
}

/// Every program, for every ISA it is written for.
pub fn all() -> &'static [MicroProgram] {
    assembled()
}

/// Program `name` for `isa` ("x25519", "field_mul", "field_add", "field_sub").
pub fn get(name: &str, isa: Isa) -> Option<&'static MicroProgram> {
    assembled().iter().find(|p| p.name == name && p.isa == isa)
}

/// X25519 microcode for ISA v1 (Precursor-compatible).
pub fn x25519_v1() -> &'static MicroProgram {
    get("x25519", Isa::V1).unwrap()
}

/// X25519 microcode for ISA v2.
pub fn x25519_v2() -> &'static MicroProgram {
    get("x25519", Isa::V2).unwrap()
}

/// X25519 microcode for `isa`.
pub fn x25519_program(isa: Isa) -> &'static MicroProgram {
    get("x25519", isa).expect("an X25519 program exists for every ISA")
}

/// Default cycle budget of the convenience runners (far above any X25519).
pub const DEFAULT_BUDGET: u64 = 10_000_000;

/// An engine with one program preloaded at address 0 (what the service does: load once, run
/// many jobs on window 0).
#[derive(Clone, Debug)]
pub struct Runner {
    pub engine: EngineModel,
    pub program: &'static MicroProgram,
    pub window: usize,
}

impl Runner {
    /// Load `program` into a fresh engine of its ISA.
    pub fn new(program: &'static MicroProgram) -> Runner {
        let mut engine = EngineModel::new(program.isa);
        engine.load_program(program.words(), 0).expect("programs fit the microcode RAM");
        Runner { engine, program, window: 0 }
    }

    /// The job that runs the preloaded program on this runner's window.
    pub fn job(&self) -> Job {
        Job { window: self.window, mpstart: 0, mplen: self.program.len(), cycle_budget: DEFAULT_BUDGET }
    }

    /// Write the inputs, run, return (output register, outcome).
    pub fn run(&mut self, inputs: &[[u8; 32]]) -> Result<([u8; 32], RunOutcome), ModelError> {
        assert_eq!(inputs.len(), self.program.inputs.len(), "{}: wrong number of inputs", self.program.name);
        for (&reg, v) in self.program.inputs.iter().zip(inputs) {
            self.engine.set_reg(self.window, reg, v)?;
        }
        let job = self.job();
        let out = self.engine.run(&job)?;
        Ok((self.engine.reg(self.window, self.program.output)?, out))
    }
}

/// The engine cycles of one X25519 on `isa`, checked: the model runs the ladder microcode on
/// every RFC 7748 5.2/6.1 vector, each result must equal the RFC's and every run must take the
/// same count (the ladder is constant time). For build scripts that bake the count into a
/// device program (which cannot afford to run the model).
pub fn x25519_cycles_checked(isa: Isa) -> u64 {
    let mut cycles = None;
    for (k, u, want) in crate::vectors::RFC7748 {
        let (got, c) = x25519(isa, &crate::vectors::bytes32(k), &crate::vectors::bytes32(u));
        assert_eq!(got, crate::vectors::bytes32(want), "model X25519 ({isa}) disagrees with RFC 7748");
        match cycles {
            None => cycles = Some(c),
            Some(prev) => assert_eq!(prev, c, "X25519 cycles depend on the input ({isa})"),
        }
    }
    cycles.expect("RFC 7748 has vectors")
}

/// X25519(scalar, u) computed by running the real microcode of `isa` on the model.
/// Returns the shared secret / public key bytes and the engine cycle count.
pub fn x25519(isa: Isa, scalar: &[u8; 32], u: &[u8; 32]) -> ([u8; 32], u64) {
    thread_local! {
        static RUNNERS: std::cell::RefCell<Vec<Runner>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    RUNNERS.with(|r| {
        let mut r = r.borrow_mut();
        let idx = match r.iter().position(|x| x.program.isa == isa) {
            Some(i) => i,
            None => {
                r.push(Runner::new(x25519_program(isa)));
                r.len() - 1
            }
        };
        let runner = &mut r[idx];
        let (out, o) = runner.run(&[*scalar, *u]).expect("the X25519 microcode runs without error");
        // do not leave the secret scalar's intermediates in the window
        let _ = runner.engine.clear_window(runner.window);
        (out, o.cycles)
    })
}

/// The X25519 batch program of `isa` (`x25519_batch_v2.s`): ISA v2 only (v1's ladder uses %29
/// as a temporary, which leaves too few registers for the ring).
pub fn x25519_batch_program(isa: Isa) -> Option<&'static MicroProgram> {
    get("x25519_batch", isa)
}

/// The inputs of one batch program run over `jobs` (scalar, u), in the program's `inputs` order
/// (the six ring slots, zero where no job is, then the counter).
pub fn x25519_batch_inputs(jobs: &[([u8; 32], [u8; 32])]) -> Result<Vec<[u8; 32]>, BatchError> {
    let count = x25519_batch_count_value(jobs.len())?;
    let mut v = vec![[0u8; 32]; X25519_BATCH_SLOTS.len()];
    for (j, (k, u)) in jobs.iter().enumerate() {
        v[2 * j] = *k;
        v[2 * j + 1] = *u;
    }
    v.push(count);
    Ok(v)
}

/// Runs `jobs` (1..=[`X25519_BATCH_MAX`] pairs of scalar and u) as ONE run of the batch program
/// of `isa` on `runner`'s engine (its program must be that program): the results in job order
/// and the run's outcome. The window is left as the run left it.
pub fn run_x25519_batch(
    runner: &mut Runner,
    jobs: &[([u8; 32], [u8; 32])],
) -> Result<(Vec<[u8; 32]>, RunOutcome), Box<dyn std::error::Error>> {
    let inputs = x25519_batch_inputs(jobs)?;
    let n = jobs.len();
    let (_, out) = runner.run(&inputs)?;
    let mut results = Vec::with_capacity(n);
    for j in 0..n {
        results.push(runner.engine.reg(runner.window, x25519_batch_result_reg(n, j)?)?);
    }
    Ok((results, out))
}

/// The engine cycles of one run of the batch program of `isa` with `n` jobs, checked: runs of
/// `n` consecutive RFC 7748 5.2/6.1 vectors (every start, wrapping around) must give the RFC's
/// results, and every run the same count. For build scripts, as [`x25519_cycles_checked`].
pub fn x25519_batch_cycles_checked(isa: Isa, n: usize) -> u64 {
    use crate::vectors::{bytes32, RFC7748};
    let prog = x25519_batch_program(isa).unwrap_or_else(|| panic!("no X25519 batch program for {isa}"));
    let mut runner = Runner::new(prog);
    let mut cycles = None;
    for start in 0..RFC7748.len() {
        let pick: Vec<_> = (0..n).map(|j| RFC7748[(start + j) % RFC7748.len()]).collect();
        let jobs: Vec<_> = pick.iter().map(|(k, u, _)| (bytes32(k), bytes32(u))).collect();
        let (got, o) = run_x25519_batch(&mut runner, &jobs).unwrap_or_else(|e| panic!("batch of {n} ({isa}): {e}"));
        for (j, (_, _, want)) in pick.iter().enumerate() {
            assert_eq!(got[j], bytes32(want), "model X25519 batch ({isa}, {n} jobs, job {j}) disagrees with RFC 7748");
        }
        let _ = runner.engine.clear_window(runner.window);
        match cycles {
            None => cycles = Some(o.cycles),
            Some(prev) => assert_eq!(prev, o.cycles, "X25519 batch cycles depend on the input ({isa}, {n} jobs)"),
        }
    }
    cycles.expect("RFC 7748 has vectors")
}
