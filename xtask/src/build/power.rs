//! Who may power a device image off: the PIDs of its system processes, computed from the
//! program list (the kernel and xous-susres are built with it), and the programs a simulated
//! system adds after the image's own.

use crate::build::target::{BASE_SERVICES, IMAGE_PROGRAMS, SYSTEM_BINS};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// A program laid out after the image's own (PID 9, 10, ...; only on the simulated Precursor):
/// an ordinary app, unless the system builder lets it power off (`system`): a run's harness,
/// or another copy of a system process.
#[derive(Clone, Debug)]
pub struct Extra {
    pub elf: PathBuf,
    pub may_power_off: bool,
}

impl Extra {
    pub fn app(elf: PathBuf) -> Extra {
        Extra { elf, may_power_off: false }
    }
    pub fn system(elf: PathBuf) -> Extra {
        Extra { elf, may_power_off: true }
    }
}

/// The PIDs of a device image allowed to power it off, suspend or reboot it (xous-susres) and
/// to call the kernel's Shutdown: the one list both are built with (`XOUS_POWER_PIDS`,
/// kernel-patches/device/0004 and xous-susres/0001; docs/security.md "Power-off and shutdown").
/// Computed from the program list, never written by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerPids(pub Vec<u32>);

impl PowerPids {
    /// PID 1 is the kernel; the programs follow in image order: [`BASE_SERVICES`], ours
    /// ([`IMAGE_PROGRAMS`], those in [`SYSTEM_BINS`] allowed), then `extras`.
    pub fn of_image(extras: &[Extra]) -> PowerPids {
        let first_ours = 2 + BASE_SERVICES.len();
        let ours = IMAGE_PROGRAMS
            .iter()
            .enumerate()
            .filter(|(_, (_, bin))| SYSTEM_BINS.contains(bin))
            .map(|(i, _)| first_ours + i);
        let first_extra = first_ours + IMAGE_PROGRAMS.len();
        let extra = extras.iter().enumerate().filter(|(_, e)| e.may_power_off).map(|(i, _)| first_extra + i);
        PowerPids(ours.chain(extra).map(|p| p as u32).collect())
    }

    /// The value of `XOUS_POWER_PIDS`: "8,9".
    pub fn env_value(&self) -> String {
        self.0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
    }

    /// The name of the builds made for this list: "power-8-9".
    pub fn tag(&self) -> String {
        if self.0.is_empty() {
            return "power-none".into();
        }
        format!("power-{}", self.0.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("-"))
    }

    /// Check the list against the PIDs and names the image really has (its PNam tag, or the
    /// layout): every allowed PID names a system program or an extra allowed to power off,
    /// and nothing else is allowed.
    pub fn check(&self, names: &[(u32, String)], extras: &[Extra]) -> Result<()> {
        let extra_names: Vec<String> = extras
            .iter()
            .filter(|e| e.may_power_off)
            .map(|e| e.elf.file_name().unwrap_or_default().to_string_lossy().into_owned())
            .collect();
        for p in &self.0 {
            let name = names
                .iter()
                .find(|(q, _)| q == p)
                .map(|(_, n)| n.as_str())
                .with_context(|| format!("power PID {p} is not in the image ({names:?})"))?;
            if !SYSTEM_BINS.contains(&name) && !extra_names.iter().any(|n| n == name) {
                bail!("power PID {p} is {name}, which is neither a system program nor an extra allowed to power off");
            }
        }
        for (p, name) in names {
            if SYSTEM_BINS.contains(&name.as_str()) && !self.0.contains(p) {
                bail!("{name} (PID {p}) is a system program but not allowed to power off ({:?})", self.0);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_pids_come_from_the_program_list() {
        // sysctl is the last of our programs: PID 2 + 4 base services + 2
        let flashed = PowerPids::of_image(&[]);
        assert_eq!(flashed.0, vec![8]);
        assert_eq!((flashed.env_value().as_str(), flashed.tag().as_str()), ("8", "power-8"));
        let extras = [Extra::system(PathBuf::from("/x/device-selftest")), Extra::app(PathBuf::from("/x/power-probe"))];
        let p = PowerPids::of_image(&extras);
        assert_eq!((p.env_value().as_str(), p.tag().as_str()), ("8,9", "power-8-9"));
        assert_eq!(PowerPids(vec![]).tag(), "power-none");
        let names: Vec<(u32, String)> = [
            "kernel",
            "xous-ticktimer",
            "xous-log",
            "xous-names",
            "xous-susres",
            "engine25519",
            "trng",
            "sysctl",
            "device-selftest",
            "power-probe",
        ]
        .iter()
        .enumerate()
        .map(|(i, n)| (i as u32 + 1, n.to_string()))
        .collect();
        p.check(&names, &extras).unwrap();
        // a list that names an app, or leaves out a system program, is refused
        let e = PowerPids(vec![8, 10]).check(&names, &extras).unwrap_err().to_string();
        assert!(e.contains("PID 10 is power-probe"), "{e}");
        let e = PowerPids(vec![9]).check(&names, &extras).unwrap_err().to_string();
        assert!(e.contains("sysctl (PID 8) is a system program"), "{e}");
        let e = PowerPids(vec![8, 11]).check(&names, &extras).unwrap_err().to_string();
        assert!(e.contains("not in the image"), "{e}");
    }
}
