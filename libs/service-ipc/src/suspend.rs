//! System suspend and resume on the device: registration with xous-susres (the Xous convention
//! for a service with hardware state) and the thread that answers its suspend events, shared by
//! the engine25519 and trng servers. Each server passes only what it does around the power-down.

/// The scalar id of susres's suspend event on the private server this module creates.
const SUSPEND_EVENT: usize = 1;

/// Register `who` with xous-susres (`SuspendOrder::Normal`) and start the thread `<who>-susres`.
/// On each suspend event it calls `on_suspend` with a function that tells susres this server is
/// ready, blocks until the system has resumed and returns susres's verdict (`Ok(true)`: a clean
/// suspend). `on_suspend` quiesces its hardware before calling it and brings the hardware back
/// after it returns (the SoC, and the block with it, was powered down meanwhile).
///
/// Returns false, after logging `who` and `lost` (what a suspend would lose), if susres refuses
/// the registration; the server then keeps serving without the hook.
pub fn register<F>(who: &'static str, xns: &xous_api_names::XousNames, lost: &str, mut on_suspend: F) -> bool
where
    F: FnMut(&mut dyn FnMut() -> Result<bool, xous::Error>) + Send + 'static,
{
    let sid = xous::create_server().unwrap_or_else(|e| panic!("{who}: suspend server: {e:?}"));
    let cid = xous::connect(sid).unwrap_or_else(|e| panic!("{who}: suspend connection: {e:?}"));
    let order = Some(xous_api_susres::SuspendOrder::Normal);
    let mut susres = match xous_api_susres::Susres::new(order, xns, SUSPEND_EVENT as u32, cid) {
        Ok(s) => s,
        Err(e) => {
            log::error!("{who}: cannot register with xous-susres ({e:?}): {lost}");
            return false;
        }
    };
    log::info!("{who}: registered with xous-susres");
    std::thread::Builder::new()
        .name(format!("{who}-susres"))
        .spawn(move || loop {
            let Ok(env) = xous::receive_message(sid) else { continue };
            let Some(m) = env.body.scalar_message() else { continue };
            if m.id != SUSPEND_EVENT {
                continue;
            }
            let token = m.arg1;
            on_suspend(&mut || susres.suspend_until_resume(token));
        })
        .unwrap_or_else(|e| panic!("{who}: suspend thread: {e:?}"));
    true
}
