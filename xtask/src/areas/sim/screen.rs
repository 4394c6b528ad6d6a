//! Step `sim:screen` and `cargo xtask sim-screen`: a Xous program draws on the simulated
//! Precursor's memory LCD and the host reads the text back from what the panel received
//! (docs/sim.md, "The screen").
//!
//! apps/device-screen (laid out after the device image, PID 9, the run's system test process)
//! maps the memlcd block through libs/memlcd, draws `memlcd::check::ROWS` with the project's
//! font, sends the dirty lines (`UpdateDirty`), prints `SCREEN-DRAWN lines=N clipped=M` and
//! powers the SoC off. The host rebuilds the panel from the run's panel log
//! (`memlcd::check::panel_from_log`) and reads every row back glyph by glyph
//! (`memlcd::text::read`): each must be there, the row that runs off the edge cut at the
//! edge, and exactly the lines the program sent in the log.

use crate::build::power::Extra;
use crate::ctx::Ctx;
use crate::harness::precursor::{self, Phase, RunOptions};
use crate::steps::{step, TestStep};
use anyhow::{bail, Context, Result};

/// The package and its binary.
pub const PACKAGE: &str = "device-screen";
/// Wall-clock limit of the simulated run (the boot, one draw, the power-off).
const SIM_TIMEOUT_S: u64 = 900;

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("sim:screen", SIM_TIMEOUT_S + 30 * 60, |ctx: &Ctx| check(ctx.verbose))]
}

/// `cargo xtask sim-screen` and the step.
pub fn check(verbose: bool) -> Result<()> {
    crate::build::device::build_packages(&[PACKAGE.to_string()], &[])?;
    let elf = crate::util::target_dir().join(crate::build::target::TARGET).join("release").join(PACKAGE);
    let n = crate::build::device_xous::compressed_instructions(&elf)?;
    if n != 0 {
        bail!("{}: {n} compressed instructions (the simulated CPU has no C extension)", elf.display());
    }
    // what the program must report: the same drawing on the host gives its dirty lines and
    // clipped pixels exactly
    let host = expected();
    let (lines, clipped) = (host.dirty_lines().count(), host.clipped());
    let drawn = Phase::new("drawn", &format!(r"^SCREEN-DRAWN lines={lines} clipped={clipped}$"));
    // the program draws as soon as it runs and then powers off: the kernel, the log server (its
    // lines) and the name server (its way to susres) are all it needs; our servers may not be
    // up yet
    let mut phases = precursor::boot_phases();
    phases.retain(|p| ["kernel", "log", "names"].contains(&p.name.as_str()));
    phases.push(drawn);
    let r = precursor::smoke_run_with(
        &[Extra::system(elf)],
        &phases,
        false,
        SIM_TIMEOUT_S,
        verbose,
        &RunOptions::default(),
    )?;
    precursor::report(&r);
    if !r.ok {
        let missing: Vec<&str> = r.phases.iter().filter(|p| p.at.is_none()).map(|p| p.name.as_str()).collect();
        bail!(
            "sim:screen: end {}, phases not reached: [{}], failure lines: {:?}",
            r.reason,
            missing.join(", "),
            r.failed_lines
        );
    }
    let log_path = precursor::memlcd_log();
    let log = std::fs::read_to_string(&log_path).with_context(|| log_path.display().to_string())?;
    let (panel, sent) = memlcd::check::panel_from_log(&log).map_err(anyhow::Error::msg)?;
    judge(&panel, sent, lines)?;
    eprintln!("sim:screen: {sent} lines on the panel, {clipped} pixels clipped at the edge, every row read back");
    Ok(())
}

/// The drawing of apps/device-screen, made on the host.
fn expected() -> memlcd::FrameBuffer {
    let mut fb = memlcd::FrameBuffer::new();
    for (x, y, s) in memlcd::check::ROWS {
        memlcd::text::draw(&mut fb, *x, *y, s);
    }
    fb
}

/// The panel must show every row (the last cut at the right edge) and have received the
/// program's dirty lines, each once.
fn judge(panel: &memlcd::FrameBuffer, sent: usize, lines: usize) -> Result<()> {
    if sent != lines {
        bail!("the program sent {lines} lines, the panel received {sent}");
    }
    let cell = memlcd::text::FONT.character_size.width as i32 + memlcd::text::FONT.character_spacing as i32;
    for (x, y, s) in memlcd::check::ROWS {
        let fit = ((memlcd::WIDTH as i32 - x) / cell).clamp(0, s.len() as i32) as usize;
        let got = memlcd::text::read(panel, *x, *y, fit);
        eprintln!("sim:screen: row at ({x}, {y}): {got:?}");
        if got != s[..fit] {
            bail!("the panel shows {got:?} at ({x}, {y}), the program drew {:?}", &s[..fit]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_judge_reads_rows_and_refuses_a_wrong_panel() {
        let fb = expected();
        let n = fb.dirty_lines().count();
        assert!(judge(&fb, n, n).is_ok());
        assert!(judge(&fb, n - 1, n).is_err());
        assert!(judge(&memlcd::FrameBuffer::new(), n, n).is_err());
        assert!(fb.clipped() > 0);
    }
}
