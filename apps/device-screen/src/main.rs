//! device-screen: draws known text on the memory LCD through libs/memlcd (the block mapped into
//! this ordinary process, as xous-core's graphics server maps it on Precursor), sends the dirty
//! lines to the panel, and says what it drew; `cargo xtask sim-screen` then reads the text back
//! from what the simulated panel received (docs/sim.md, "The screen"). Also draws one line
//! partly outside the screen: clipped and counted, not a crash. On the device it then powers
//! the SoC off (it is laid out as the run's system test process).

use memlcd::{check::ROWS, text, FrameBuffer};

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() -> ! {
    xous_api_log::init_wait().unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let mut fb = FrameBuffer::new();
    for (x, y, s) in ROWS {
        text::draw(&mut fb, *x, *y, s);
    }
    run(&mut fb);
    let sid = xous::create_server().expect("private server");
    loop {
        let _ = xous::receive_message(sid);
    }
}

#[cfg(target_os = "xous")]
fn run(fb: &mut FrameBuffer) {
    let clipped = fb.clipped();
    match memlcd::device::Memlcd::map() {
        Ok(mut lcd) => {
            let sent = lcd.flush(fb);
            say(&format!("SCREEN-DRAWN lines={sent} clipped={clipped}"));
        }
        Err(e) => say(&format!("SCREEN-FAILED map: {e:?}")),
    }
    let r = xous_api_names::XousNames::new()
        .and_then(|xns| xous_api_susres::Susres::new_without_hook(&xns))
        .and_then(|s| s.immediate_poweroff());
    if let Err(e) = r {
        say(&format!("SCREEN-POWEROFF-FAILED {e:?}"));
    }
}

/// Hosted: there is no display; say what would be sent.
#[cfg(not(target_os = "xous"))]
fn run(fb: &mut FrameBuffer) {
    say(&format!("SCREEN-NO-DISPLAY lines={} clipped={}", fb.dirty_lines().count(), fb.clipped()));
}
