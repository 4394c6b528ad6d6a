//! Options shared by the chat programs (flags, or environment variables set by xtask).
//!
//! | flag | variable | meaning |
//! |---|---|---|
//! | `--store DIR` | `CHAT_STORE` | where the party's store file lives (xtask: target/chat) |
//! | `--engine v1\|v2\|software` | `CHAT_ENGINE` | what the DH device is; pacing follows it |
//! | `--clock-hz N` | `CHAT_ENGINE_HZ` | the engine clock (xtask passes spec/engine25519.toml's eng_clk_hz) |
//! | `--no-pace` | `CHAT_NO_PACE` | deliver DH results as soon as they exist (throughput benchmark) |

use std::path::PathBuf;

use service_ipc::options::{Opt, Parsed, Takes};

use crate::dh::{Pacing, SOFTWARE_DH};

/// A program's options: its command line; on the device, whose image gives processes no
/// command line, the options its build baked in (`baked`: the program's `option_env!`, set by
/// `cargo xtask run --device`).
pub fn process_args(baked: Option<&'static str>) -> Vec<String> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.is_empty() && cfg!(target_os = "xous") {
        return baked.unwrap_or("").split_whitespace().map(String::from).collect();
    }
    a
}

pub const COMMON: &[Opt] = &[
    Opt { flag: "--store", env: Some("CHAT_STORE"), takes: Takes::Value },
    Opt { flag: "--engine", env: Some("CHAT_ENGINE"), takes: Takes::Value },
    Opt { flag: "--clock-hz", env: Some("CHAT_ENGINE_HZ"), takes: Takes::Value },
    Opt { flag: "--no-pace", env: Some("CHAT_NO_PACE"), takes: Takes::Nothing },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineMode {
    V1,
    V2,
    Software,
}

impl EngineMode {
    pub fn name(self) -> &'static str {
        match self {
            EngineMode::V1 => "v1",
            EngineMode::V2 => "v2",
            EngineMode::Software => "software",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Common {
    pub store: PathBuf,
    pub engine: EngineMode,
    pub clock_hz: u64,
    pub pace: bool,
}

impl Common {
    pub fn from(p: &Parsed) -> Result<Common, String> {
        let store = PathBuf::from(p.get("--store").ok_or("--store DIR (or CHAT_STORE) is required")?);
        let engine = match p.one_of("--engine", &["v1", "v2", "software"])? {
            Some("v1") => EngineMode::V1,
            Some("software") => EngineMode::Software,
            _ => EngineMode::V2,
        };
        let clock_hz = p.u64("--clock-hz")?.unwrap_or(0);
        if engine != EngineMode::Software && clock_hz == 0 && !p.is_set("--no-pace") {
            return Err(format!(
                "--engine {} paces to the engine clock: give --clock-hz N (or CHAT_ENGINE_HZ)",
                engine.name()
            ));
        }
        Ok(Common { store, engine, clock_hz, pace: !p.is_set("--no-pace") })
    }

    pub fn pacing(&self) -> Pacing {
        match (self.pace, self.engine) {
            (false, _) => Pacing::Off { clock_hz: self.clock_hz },
            (true, EngineMode::Software) => Pacing::Software { per_dh: SOFTWARE_DH },
            (true, _) => Pacing::Engine { clock_hz: self.clock_hz },
        }
    }

    pub fn describe(&self) -> String {
        match self.pacing() {
            Pacing::Engine { clock_hz } => {
                format!("engine {} paced at {:.0} MHz", self.engine.name(), clock_hz as f64 / 1e6)
            }
            Pacing::Software { per_dh } => format!(
                "software X25519, {:.1} ms per DH (x25519-dalek on the simulated 100 MHz Precursor)",
                per_dh.as_secs_f64() * 1e3
            ),
            Pacing::Off { .. } => format!("engine {} unpaced", self.engine.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Common, String> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let p = service_ipc::options::parse(COMMON, &a, &|_| None)?;
        Common::from(&p)
    }

    #[test]
    fn options_and_their_errors() {
        let c = parse(&["--store", "/tmp/x", "--engine", "v1", "--clock-hz", "50000000"]).unwrap();
        assert_eq!((c.engine, c.pacing()), (EngineMode::V1, Pacing::Engine { clock_hz: 50_000_000 }));
        let c = parse(&["--store", "/tmp/x", "--engine", "software"]).unwrap();
        assert_eq!(c.pacing(), Pacing::Software { per_dh: SOFTWARE_DH });
        assert!(parse(&["--engine", "v2"]).unwrap_err().contains("--store"));
        assert!(parse(&["--store", "d", "--engine", "v3"]).is_err());
        assert!(parse(&["--store", "d", "--engine", "v2"]).unwrap_err().contains("--clock-hz"));
        assert!(parse(&["--store", "d", "--clock-hz", "fast"]).is_err());
    }
}
