//! The chat demo (apps/ratchet-demo, preview) as a test step: the whole hosted system plus
//! `ratchet-demo --handshakes N --shutdown`; every handshake's shared secret must agree on both
//! sides (4 X25519 on the engine service, keys from the TRNG service), the UI loop must keep
//! running, and the system must shut down cleanly.

use std::time::Duration;

use anyhow::{bail, Result};

use crate::hosted::{shell_quote, Launch};
use crate::steps::TestStep;
use crate::xous::Flavor;
use crate::Ctx;

pub fn test_steps() -> Vec<TestStep> {
    vec![TestStep { name: "demo:handshakes", timeout: Duration::from_secs(180), run: handshakes }]
}

fn handshakes(ctx: &Ctx) -> Result<()> {
    let bins = ctx.xous()?.clone();
    let mut l = Launch::new(&bins, Flavor::Patched).echo(ctx.verbose).env("TRNG_TESTER", "0");
    for p in ctx.server_programs()? {
        l = l.program(p);
    }
    l = l.program(format!("{} --handshakes 5 --shutdown", shell_quote(&ctx.program("ratchet-demo")?)));
    let mut sys = l.start()?;
    let line = sys.wait_marker("DEMO-DONE", Duration::from_secs(120))?;
    eprintln!("demo: {}", line.text.trim());
    if !line.text.contains("DEMO-DONE ok handshakes=5 failures=0") {
        bail!("ratchet-demo reported: {}", line.text.trim());
    }
    sys.wait_exit(Duration::from_secs(30))?;
    Ok(())
}
