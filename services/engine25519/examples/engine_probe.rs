//! Manual probe: connect, print version and stats, do one X25519 and compare with x25519-dalek.
//! Run under the hosted kernel: xous-kernel xous-names xous-ticktimer xous-log engine25519 engine_probe
fn main() {
    xous_api_log::init_wait().unwrap();
    let e = engine25519::Engine25519::new().unwrap();
    println!("PROBE version {:?}", e.version());
    let k = [7u8; 32];
    let u = x25519_dalek::X25519_BASEPOINT_BYTES;
    let r = e.x25519_detailed(&k, &u);
    let want = x25519_dalek::x25519(k, u);
    match r {
        Ok(r) => println!("PROBE x25519 ok={} backend={:?} cycles={}", r.result == want, r.backend, r.cycles),
        Err(err) => println!("PROBE x25519 error {err}"),
    }
    println!("PROBE stats {:?}", e.stats());
    println!("PROBE DONE");
}
