//! The driver against a fake bus whose engine is the cycle-exact model (engine25519-core): CSR
//! semantics of the spec's register map (GO, POWER.pause_req / STATUS.pause_gnt, MPRESUME,
//! EV_PENDING write-1-to-clear), the model advancing a few instructions per STATUS read, and
//! a memory window that must not be touched while a job runs unpaused (the hardware stalls).

use engine25519_core::isa::{self, csr, mem, Isa};
use engine25519_core::model::{EngineModel, Job, ModelError, PausedJob, RunStatus};
use engine25519_core::programs;
use engine25519_driver::{Bus, Driver, Error, Launch, Paused, Stop};

struct ModelBus {
    model: EngineModel,
    window: u32,
    mpstart: u32,
    mplen: u32,
    mpresume: u32,
    on: bool,
    pause_req: bool,
    pending: u32,
    /// the job in flight, at an instruction boundary
    cur: Option<PausedJob>,
    paused: bool,
    halted_mpc: u32,
    /// instructions the model executes per STATUS read
    step: u64,
    /// CSR writes in order (offset, value)
    writes: Vec<(u32, u32)>,
    mem_accesses: usize,
}

impl ModelBus {
    fn new(isa: Isa, step: u64) -> ModelBus {
        ModelBus {
            model: EngineModel::new(isa),
            window: 0,
            mpstart: 0,
            mplen: 0,
            mpresume: 0,
            on: false,
            pause_req: false,
            pending: 0,
            cur: None,
            paused: false,
            halted_mpc: 0,
            step,
            writes: Vec::new(),
            mem_accesses: 0,
        }
    }

    fn running(&self) -> bool {
        self.cur.is_some()
    }

    fn halt(&mut self, event: isa::Field, mpc: u32) {
        self.cur = None;
        self.paused = false;
        self.halted_mpc = mpc;
        self.pending |= event.mask();
    }

    /// One STATUS read's worth of engine progress.
    fn advance(&mut self) {
        let Some(p) = self.cur.clone() else { return };
        if self.pause_req {
            self.paused = true;
            return;
        }
        assert!(self.on, "job runs with POWER.on clear");
        match self.model.resume(&p, self.step) {
            Ok(RunStatus::Paused(p)) => self.cur = Some(p),
            Ok(RunStatus::Finished(o)) => self.halt(csr::ev_pending::FINISHED, o.last_mpc as u32),
            Err(ModelError::IllegalOpcode { mpc, .. }) | Err(ModelError::BranchOutOfProgram { mpc, .. }) => {
                self.halt(csr::ev_pending::ILLEGAL_OPCODE, mpc as u32)
            }
            Err(e) => panic!("model: {e}"),
        }
    }

    fn mpc(&self) -> u32 {
        self.cur.as_ref().map(|p| p.mpc as u32).unwrap_or(self.halted_mpc)
    }

    fn mem_ok(&mut self) {
        assert!(!self.running() || self.paused, "memory window accessed while a job runs (the bus would stall)");
        self.mem_accesses += 1;
    }
}

impl Bus for ModelBus {
    fn csr_read(&mut self, offset: u32) -> u32 {
        match offset {
            csr::window::OFFSET => self.window,
            csr::mpstart::OFFSET => self.mpstart,
            csr::mplen::OFFSET => self.mplen,
            csr::mpresume::OFFSET => self.mpc(),
            csr::power::OFFSET => {
                csr::power::PAUSE_REQ.put(csr::power::ON.put(0, self.on as u32), self.pause_req as u32)
            }
            csr::status::OFFSET => {
                self.advance();
                let s = csr::status::RUNNING.put(0, self.running() as u32);
                let s = csr::status::MPC.put(s, self.mpc());
                csr::status::PAUSE_GNT.put(s, (self.running() && self.paused) as u32)
            }
            csr::ev_pending::OFFSET => self.pending,
            _ => mem::UNDECODED_READ,
        }
    }

    fn csr_write(&mut self, offset: u32, v: u32) {
        self.writes.push((offset, v));
        match offset {
            csr::window::OFFSET => self.window = csr::window::WINDOW.get(v),
            csr::mpstart::OFFSET => self.mpstart = csr::mpstart::MPSTART.get(v),
            csr::mplen::OFFSET => self.mplen = csr::mplen::MPLEN.get(v),
            csr::mpresume::OFFSET => self.mpresume = csr::mpresume::MPRESUME.get(v),
            csr::power::OFFSET => {
                self.on = csr::power::ON.get(v) != 0;
                self.pause_req = csr::power::PAUSE_REQ.get(v) != 0;
                if !self.pause_req {
                    self.paused = false;
                }
            }
            csr::ev_pending::OFFSET => self.pending &= !v,
            csr::control::OFFSET if csr::control::GO.get(v) != 0 => {
                if self.pause_req && self.running() {
                    // resume: GO with pause_req reloads mpc from MPRESUME
                    let mut p = self.cur.take().unwrap();
                    p.mpc = self.mpresume as usize;
                    self.cur = Some(p);
                    self.paused = false;
                } else {
                    let job = Job {
                        window: self.window as usize,
                        mpstart: self.mpstart as usize,
                        mplen: self.mplen as usize,
                        cycle_budget: 10_000_000,
                    };
                    match self.model.run_limited(&job, 0).expect("job parameters") {
                        RunStatus::Paused(p) => self.cur = Some(p),
                        RunStatus::Finished(_) => unreachable!(),
                    }
                    self.paused = false;
                }
            }
            _ => {}
        }
    }

    fn mem_read(&mut self, offset: u32) -> u32 {
        self.mem_ok();
        self.model.mem_read(offset)
    }

    fn mem_write(&mut self, offset: u32, v: u32) {
        self.mem_ok();
        self.model.mem_write(offset, v)
    }
}

const RFC7748_SCALAR: &str = "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4";
const RFC7748_U: &str = "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c";
const RFC7748_OUT: &str = "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552";

use engine25519_core::vectors::bytes32;

fn program(isa: Isa) -> &'static programs::MicroProgram {
    match isa {
        Isa::V1 => programs::x25519_v1(),
        _ => programs::x25519_v2(),
    }
}

/// Load the X25519 program at `at`, its operands into `window`, and return the launch.
fn load_x25519(d: &mut Driver<ModelBus>, isa: Isa, at: usize, window: usize, k: &[u8; 32], u: &[u8; 32]) -> Launch {
    let p = program(isa);
    d.write_ucode(at, p.words()).unwrap();
    d.write_reg(window, programs::X25519_SCALAR_REG, k).unwrap();
    d.write_reg(window, programs::X25519_U_REG, u).unwrap();
    Launch { window, mpstart: at, mplen: p.len() }
}

fn dalek(k: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
    x25519_dalek::x25519(*k, *u)
}

#[test]
fn x25519_rfc7748_and_dalek_on_v1_and_v2() {
    let (k, u) = (bytes32(RFC7748_SCALAR), bytes32(RFC7748_U));
    for isa in [Isa::V1, Isa::V2] {
        let mut d = Driver::new(ModelBus::new(isa, 97));
        assert!(d.present());
        let l = load_x25519(&mut d, isa, 5, 3, &k, &u);
        assert_eq!(d.run(l, 100_000), Ok(Stop::Finished), "{isa}");
        let out = d.read_reg(3, programs::RESULT_REG).unwrap();
        assert_eq!(out, bytes32(RFC7748_OUT), "{isa}: RFC 7748 vector");
        // more inputs, checked against x25519-dalek
        for i in 0..3u8 {
            let k: [u8; 32] = core::array::from_fn(|j| (j as u8).wrapping_mul(31).wrapping_add(i * 7 + 1));
            let u: [u8; 32] = core::array::from_fn(|j| (j as u8).wrapping_mul(17) ^ (i + 0x55));
            let l = load_x25519(&mut d, isa, 200, 15, &k, &u);
            assert_eq!(d.run(l, 100_000), Ok(Stop::Finished));
            assert_eq!(d.read_reg(15, programs::RESULT_REG).unwrap(), dalek(&k, &u), "{isa} input {i}");
        }
    }
}

#[test]
fn microcode_and_registers_round_trip_at_the_spec_offsets() {
    let mut d = Driver::new(ModelBus::new(Isa::V2, 1));
    let words: Vec<u32> = (0..isa::UCODE_WORDS as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    d.write_ucode(0, &words).unwrap();
    let mut back = vec![0u32; isa::UCODE_WORDS];
    d.read_ucode(0, &mut back).unwrap();
    assert_eq!(back, words);
    assert_eq!(d.bus().model.ucode(), &words[..], "words land at their addresses");
    let v: [u32; 8] = [1, 2, 3, 4, 5, 6, 7, 0x8000_0009];
    d.write_reg_words(7, 30, &v).unwrap();
    assert_eq!(d.read_reg_words(7, 30).unwrap(), v);
    assert_eq!(d.bus().model.reg_words(7, 30).unwrap(), v, "least significant word first");
    assert_eq!(d.read_reg(7, 30).unwrap()[..4], [1, 0, 0, 0]);
}

#[test]
fn start_programs_the_launch_registers_then_go() {
    let mut d = Driver::new(ModelBus::new(Isa::V1, 1000));
    d.write_ucode(10, &[isa::Isa::V1.by_mnemonic("fin").unwrap().code as u32]).unwrap();
    d.start(Launch { window: 9, mpstart: 10, mplen: 1 }).unwrap();
    let w = &d.bus().writes;
    let offsets: Vec<u32> = w.iter().map(|x| x.0).collect();
    assert_eq!(
        offsets,
        [
            csr::window::OFFSET,
            csr::mpstart::OFFSET,
            csr::mplen::OFFSET,
            csr::ev_pending::OFFSET,
            csr::power::OFFSET,
            csr::control::OFFSET
        ]
    );
    assert_eq!((w[0].1, w[1].1, w[2].1), (9, 10, 1));
    assert_eq!(w[4].1, csr::power::ON.mask(), "engine on, no pause");
    assert_eq!(d.wait(10), Ok(Stop::Finished));
    assert_eq!(d.bus().pending, 0, "events cleared");
}

#[test]
fn pause_and_resume_give_the_same_result() {
    let (k, u) = (bytes32(RFC7748_SCALAR), bytes32(RFC7748_U));
    for isa in [Isa::V1, Isa::V2] {
        let mut d = Driver::new(ModelBus::new(isa, 13));
        let l = load_x25519(&mut d, isa, 0, 1, &k, &u);
        d.start(l).unwrap();
        let mut pauses = 0;
        loop {
            // let it run a little, then pause
            for _ in 0..3 {
                if let Some(s) = d.poll() {
                    assert_eq!(s, Stop::Finished);
                }
            }
            match d.pause(10).unwrap() {
                Paused::At { mpc } => {
                    pauses += 1;
                    // the memory window is usable while paused
                    let _ = d.read_reg(1, 0).unwrap();
                    d.resume(l, mpc).unwrap();
                }
                Paused::Ended(s) => {
                    assert_eq!(s, Stop::Finished);
                    break;
                }
            }
            if !d.status().running {
                break;
            }
        }
        assert!(pauses > 5, "{isa}: paused {pauses} times");
        assert_eq!(d.read_reg(1, programs::RESULT_REG).unwrap(), bytes32(RFC7748_OUT), "{isa}");
    }
}

#[test]
fn illegal_opcode_reports_its_address() {
    let mut d = Driver::new(ModelBus::new(Isa::V1, 4));
    let psa = Isa::V1.by_mnemonic("psa").unwrap().code as u32;
    d.write_ucode(100, &[psa, psa, isa::UDF_WORD, psa]).unwrap();
    assert_eq!(d.run(Launch { window: 0, mpstart: 100, mplen: 4 }, 100), Ok(Stop::Illegal { mpc: 102 }));
    assert_eq!(d.bus().pending, 0, "events cleared");
    // the engine serves the next job normally
    let fin = Isa::V1.by_mnemonic("fin").unwrap().code as u32;
    d.write_ucode(0, &[fin]).unwrap();
    assert_eq!(d.run(Launch { window: 0, mpstart: 0, mplen: 1 }, 100), Ok(Stop::Finished));
}

#[test]
fn bad_requests_are_refused_before_touching_the_engine() {
    let mut d = Driver::new(ModelBus::new(Isa::V1, 1));
    let n = isa::UCODE_WORDS;
    assert_eq!(d.write_ucode(n - 1, &[0, 0]), Err(Error::BadRange { start: n - 1, len: 2 }));
    assert_eq!(d.write_ucode(usize::MAX, &[0]), Err(Error::BadRange { start: usize::MAX, len: 1 }));
    assert_eq!(d.read_ucode(n, &mut [0]), Err(Error::BadRange { start: n, len: 1 }));
    assert_eq!(d.write_reg(isa::WINDOWS, 0, &[0; 32]), Err(Error::BadWindow(isa::WINDOWS)));
    assert_eq!(d.read_reg(0, isa::REGS_PER_WINDOW), Err(Error::BadRegister(isa::REGS_PER_WINDOW)));
    assert_eq!(d.start(Launch { window: 16, mpstart: 0, mplen: 1 }), Err(Error::BadWindow(16)));
    assert_eq!(d.start(Launch { window: 0, mpstart: 0, mplen: 0 }), Err(Error::BadRange { start: 0, len: 0 }));
    assert_eq!(d.start(Launch { window: 0, mpstart: 1000, mplen: 25 }), Err(Error::BadRange { start: 1000, len: 25 }));
    let l = Launch { window: 0, mpstart: 10, mplen: 5 };
    assert_eq!(d.resume(l, 15), Err(Error::BadResume(15)));
    assert_eq!(d.resume(l, 9), Err(Error::BadResume(9)));
    assert!(d.bus().writes.is_empty(), "nothing written: {:?}", d.bus().writes);
    assert_eq!(d.bus().mem_accesses, 0);
    // an empty write is fine anywhere in range
    assert_eq!(d.write_ucode(n, &[]), Ok(()));
}

/// A bus whose engine never finishes: the driver gives up after its poll budget.
struct Stuck;
impl Bus for Stuck {
    fn csr_read(&mut self, offset: u32) -> u32 {
        if offset == csr::status::OFFSET {
            csr::status::RUNNING.mask()
        } else {
            0
        }
    }
    fn csr_write(&mut self, _: u32, _: u32) {}
    fn mem_read(&mut self, _: u32) -> u32 {
        0
    }
    fn mem_write(&mut self, _: u32, _: u32) {}
}

/// No engine behind the bus: every read is the undecoded pattern.
struct Absent;
impl Bus for Absent {
    fn csr_read(&mut self, _: u32) -> u32 {
        mem::UNDECODED_READ
    }
    fn csr_write(&mut self, _: u32, _: u32) {}
    fn mem_read(&mut self, _: u32) -> u32 {
        mem::UNDECODED_READ
    }
    fn mem_write(&mut self, _: u32, _: u32) {}
}

#[test]
fn a_hung_engine_times_out_and_an_absent_one_is_detected() {
    let mut d = Driver::new(Stuck);
    assert!(d.present());
    assert_eq!(d.run(Launch { window: 0, mpstart: 0, mplen: 1 }, 50), Err(Error::Timeout));
    assert_eq!(d.pause(50), Err(Error::Timeout));
    assert!(!Driver::new(Absent).present());
}
