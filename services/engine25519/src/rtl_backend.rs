//! `rtl` backend: the Verilated engine gateware (gateware/engine, docs/gateware.md) in a child
//! process, `python -m engine.serve --isa ISA` in the gateware directory, spoken to over a
//! line protocol on its stdin/stdout (documented in gateware/engine/serve.py).
//!
//! Where: `ENGINE25519_RTL_PYTHON` (the project venv's python) and `ENGINE25519_RTL_DIR` (the
//! repository's gateware/ directory); `cargo xtask run --engine rtl` sets both. Jobs run to
//! their end in one `run` call (the slice is not used: the child holds one engine, and a paused
//! v2 job's scoreboard cannot be parked while another window runs); cycle counts are the
//! RTL's own counter. If the child dies, every later call reports a fault.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use engine25519_core::isa::Isa;

use crate::api::BackendId;
use crate::backend::{EngineBackend, Launch, Reg, RunEnd};

pub struct RtlEngine {
    child: Option<(Child, ChildStdin, BufReader<ChildStdout>)>,
    error: Option<String>,
}

impl RtlEngine {
    pub fn new(isa: Isa) -> Result<Self, String> {
        let py = std::env::var("ENGINE25519_RTL_PYTHON").map_err(|_| {
            "rtl backend: ENGINE25519_RTL_PYTHON is not set (cargo xtask run --engine rtl sets it)".to_string()
        })?;
        let dir = std::env::var("ENGINE25519_RTL_DIR")
            .map_err(|_| "rtl backend: ENGINE25519_RTL_DIR is not set".to_string())?;
        let mut child = Command::new(&py)
            .args(["-m", "engine.serve", "--isa", isa.name()])
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("rtl backend: starting {py} -m engine.serve: {e}"))?;
        let stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).map_err(|e| format!("rtl backend: {e}"))?;
        if line.trim() != "ready" {
            let _ = child.kill();
            return Err(format!("rtl backend: the Verilated engine did not start ({:?})", line.trim()));
        }
        Ok(RtlEngine { child: Some((child, stdin, out)), error: None })
    }

    fn call(&mut self, req: &str) -> Result<String, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let (_, stdin, out) = self.child.as_mut().ok_or("rtl backend: no engine process")?;
        let mut line = String::new();
        let r = writeln!(stdin, "{req}").and_then(|_| stdin.flush()).and_then(|_| out.read_line(&mut line));
        match r {
            Ok(n) if n > 0 => {
                let line = line.trim().to_string();
                match line.strip_prefix("err ") {
                    Some(e) => Err(format!("rtl backend: {e}")),
                    None => Ok(line),
                }
            }
            Ok(_) => {
                self.error = Some("rtl backend: the engine process exited".into());
                Err(self.error.clone().unwrap())
            }
            Err(e) => {
                self.error = Some(format!("rtl backend: {e}"));
                Err(self.error.clone().unwrap())
            }
        }
    }
}

impl Drop for RtlEngine {
    fn drop(&mut self) {
        if let Some((mut c, stdin, _)) = self.child.take() {
            drop(stdin); // EOF: the child exits
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn hex(v: &Reg) -> String {
    hex::encode(v)
}

impl EngineBackend for RtlEngine {
    fn id(&self) -> BackendId {
        BackendId::Rtl
    }
    fn available(&self) -> Result<(), String> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
    fn write_ucode(&mut self, start: usize, words: &[u32]) {
        for (k, chunk) in words.chunks(64).enumerate() {
            let ws: Vec<String> = chunk.iter().map(|w| format!("{w:08x}")).collect();
            if let Err(e) = self.call(&format!("wu {} {}", start + 64 * k, ws.join(" "))) {
                log::error!("{e}");
            }
        }
    }
    fn read_ucode(&mut self, start: usize, out: &mut [u32]) {
        out.fill(0);
        match self.call(&format!("ru {start} {}", out.len())) {
            Ok(l) => {
                for (o, w) in out.iter_mut().zip(l.split_whitespace()) {
                    *o = u32::from_str_radix(w, 16).unwrap_or(0);
                }
            }
            Err(e) => log::error!("{e}"),
        }
    }
    fn write_reg(&mut self, window: usize, reg: usize, value: &Reg) {
        if let Err(e) = self.call(&format!("wr {window} {reg} {}", hex(value))) {
            log::error!("{e}");
        }
    }
    fn read_reg(&mut self, window: usize, reg: usize) -> Reg {
        let mut v = [0u8; 32];
        match self.call(&format!("rr {window} {reg}")) {
            Ok(l) if l.len() == 64 => {
                for (i, b) in v.iter_mut().enumerate() {
                    *b = u8::from_str_radix(&l[2 * i..2 * i + 2], 16).unwrap_or(0);
                }
            }
            Ok(l) => log::error!("rtl backend: bad register reply {l:?}"),
            Err(e) => log::error!("{e}"),
        }
        v
    }
    fn run(&mut self, l: Launch, resume_at: Option<u32>, _slice: u64, max_cycles: u64) -> RunEnd {
        if resume_at.is_some() {
            return RunEnd::Fault { cycles: 0, reason: "rtl backend: jobs run to their end; nothing to resume".into() };
        }
        let reply = match self.call(&format!("run {} {} {} {}", l.window, l.mpstart, l.mplen, max_cycles)) {
            Ok(r) => r,
            Err(reason) => return RunEnd::Fault { cycles: 0, reason },
        };
        let t: Vec<&str> = reply.split_whitespace().collect();
        let num = |i: usize| t.get(i).and_then(|x| x.parse::<u64>().ok());
        match (t.first().copied(), num(1)) {
            (Some("finished"), Some(c)) => RunEnd::Finished { cycles: c },
            (Some("illegal"), Some(c)) => RunEnd::Illegal { cycles: c, mpc: num(2).unwrap_or(0) as u32 },
            (Some("runaway"), Some(c)) => RunEnd::Runaway { cycles: c },
            _ => RunEnd::Fault { cycles: 0, reason: format!("rtl backend: bad reply {reply:?}") },
        }
    }
    fn reset(&mut self) {
        if let Err(e) = self.call("reset") {
            log::error!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    //! Run by the step `engine:rtl-backend` (it sets ENGINE25519_RTL_PYTHON / _DIR): ignored
    //! in a plain `cargo test`, which has no gateware tools.
    use super::*;
    use engine25519_core::model::{EngineModel, Job};
    use engine25519_core::programs::x25519_program;

    #[test]
    #[ignore = "needs the gateware venv: cargo xtask test --only engine:rtl-backend"]
    fn rtl_backend_x25519_matches_the_model_and_rejects_bad_requests() {
        for isa in [Isa::V1, Isa::V2] {
            let mut e = RtlEngine::new(isa).expect("the Verilated engine starts");
            let p = x25519_program(isa);
            e.write_ucode(0, p.words());
            let mut back = vec![0u32; p.words().len()];
            e.read_ucode(0, &mut back);
            assert_eq!(back, p.words());
            // RFC 7748 section 5.2, first vector
            let k = *b"\xa5\x46\xe3\x6b\xf0\x52\x7c\x9d\x3b\x16\x15\x4b\x82\x46\x5e\xdd\x62\x14\x4c\x0a\xc1\xfc\x5a\x18\x50\x6a\x22\x44\xba\x44\x9a\xc4";
            let u = *b"\xe6\xdb\x68\x67\x58\x30\x30\xdb\x35\x94\xc1\xa4\x24\xb1\x5f\x7c\x72\x66\x24\xec\x26\xb3\x35\x3b\x10\xa9\x03\xa6\xd0\xab\x1c\x4c";
            let want = *b"\xc3\xda\x55\x37\x9d\xe9\xc6\x90\x8e\x94\xea\x4d\xf2\x8d\x08\x4f\x32\xec\xcf\x03\x49\x1c\x71\xf7\x54\xb4\x07\x55\x77\xa2\x85\x52";
            let mut m = EngineModel::new(isa);
            m.load_program(p.words(), 0).unwrap();
            for (r, v) in [(31, &k), (24, &u)] {
                e.write_reg(3, r, v);
                m.set_reg(3, r, v).unwrap();
            }
            let o = m.run(&Job { window: 3, mpstart: 0, mplen: p.words().len(), cycle_budget: u64::MAX }).unwrap();
            let end = e.run(Launch { window: 3, mpstart: 0, mplen: p.words().len() }, None, 1000, 10_000_000);
            assert_eq!(end, RunEnd::Finished { cycles: o.cycles });
            assert_eq!(e.read_reg(3, 31), want);
            // an illegal word halts as in the model
            e.write_ucode(1000, &[engine25519_core::isa::UDF_WORD]);
            assert!(matches!(
                e.run(Launch { window: 0, mpstart: 1000, mplen: 1 }, None, 1, 100),
                RunEnd::Illegal { mpc: 1000, .. }
            ));
            // malformed requests: refused, the engine keeps serving
            assert!(e.call("wr 99 0 00").is_err());
            assert!(e.call("run 0 1020 10 5").is_err());
            assert!(e.call("nonsense").is_err());
            assert!(matches!(e.run(Launch { window: 0, mpstart: 0, mplen: 0 }, None, 1, 1), RunEnd::Fault { .. }));
            assert!(matches!(e.run(Launch { window: 0, mpstart: 0, mplen: 1 }, Some(0), 1, 1), RunEnd::Fault { .. }));
            assert_eq!(e.read_reg(3, 31), want);
            assert!(e.available().is_ok());
        }
    }
}
