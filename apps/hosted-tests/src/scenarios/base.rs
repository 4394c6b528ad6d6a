//! Base services: xous-names brokers connections, the ticktimer counts and sleeps.

use hosted_tests::{Step, StepResult};

pub fn steps() -> Vec<Step> {
    vec![Step { name: "base/names-lookup", run: names_lookup }, Step { name: "base/ticktimer", run: ticktimer }]
}

fn names_lookup() -> StepResult {
    let xns = xous_api_names::XousNames::new().map_err(|e| format!("xous-names: {e:?}"))?;
    // The ticktimer registers itself under this name; a lookup of a name nobody registered must
    // fail rather than hand out a connection.
    let missing = xns.request_connection("_hosted-tests: nobody registers this name_");
    if missing.is_ok() {
        return Err("lookup of an unregistered name succeeded".into());
    }
    Ok(())
}

fn ticktimer() -> StepResult {
    let tt = xous_api_ticktimer::Ticktimer::new().map_err(|e| format!("ticktimer: {e:?}"))?;
    let t0 = tt.elapsed_ms();
    let w0 = std::time::Instant::now();
    tt.sleep_ms(20).map_err(|e| format!("sleep_ms: {e:?}"))?;
    let t1 = tt.elapsed_ms();
    let wall = w0.elapsed().as_millis() as u64;
    if t1 < t0 + 20 || wall < 19 {
        return Err(format!("sleep_ms(20): ticktimer {t0} -> {t1} ms, wall {wall} ms"));
    }
    Ok(())
}
