//! libs/ratchet interop: the crate against independent implementations (PyPI DoubleRatchet
//! 1.3.0, x3dh 1.3.0, xeddsa 1.2.0; PQXDH written from the spec over kyber-py 1.2.0 and
//! `cryptography`) driven as Python peers from the project venv (tools/requirements.txt pins
//! them), and ML-KEM-1024 against NIST's ACVP FIPS 203 vectors. The tests live in
//! libs/ratchet/tests/interop.rs and mlkem_acvp.rs and are `#[ignore]`d in plain `cargo test`
//! because they need the venv and the vector files; this step provides both.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::ctx::Ctx;
use crate::steps::{step, TestStep};
use crate::supervisor;
use crate::{setup, util};

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("ratchet:interop", 20 * 60, interop)]
}

/// The PyPI source distribution that ships NIST's ACVP ML-KEM vector sets (assets/), pinned.
const ACVP_SDIST: &str = "kyber_py-1.2.0.tar.gz";
const ACVP_SDIST_REQ: &str = "kyber-py==1.2.0";
const ACVP_SDIST_SHA256: &str = "9062b7c307b4b84980ec6b775091558d60c488985c4e8081eeb66fd4bb29a354";
const ACVP_SETS: [&str; 2] = ["ML-KEM-keyGen-FIPS203", "ML-KEM-encapDecap-FIPS203"];

/// target/acvp/kyber_py-1.2.0/assets with the two ML-KEM vector sets (downloaded once with pip,
/// checked against the pinned SHA-256, unpacked).
fn acvp_dir(py: &std::path::Path) -> Result<PathBuf> {
    let base = util::target_dir().join("acvp");
    let assets = base.join("kyber_py-1.2.0").join("assets");
    if ACVP_SETS.iter().all(|s| assets.join(s).join("expectedResults.json").is_file()) {
        return Ok(assets);
    }
    std::fs::create_dir_all(&base)?;
    let sdist = base.join(ACVP_SDIST);
    if !sdist.is_file() {
        let mut c = Command::new(py);
        c.args(["-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:", ACVP_SDIST_REQ, "-d"])
            .arg(&base);
        supervisor::run(
            &mut c,
            Duration::from_secs(300),
            &format!("pip download {ACVP_SDIST_REQ} (sdist with the ACVP files)"),
        )?;
    }
    let data = std::fs::read(&sdist).with_context(|| format!("{}", sdist.display()))?;
    let got = util::sha256_hex(&data);
    if got != ACVP_SDIST_SHA256 {
        let _ = std::fs::remove_file(&sdist);
        bail!("{}: sha256 {got} does not match the pinned {ACVP_SDIST_SHA256}", sdist.display());
    }
    let mut c = Command::new("tar");
    c.arg("-xzf").arg(&sdist).arg("-C").arg(&base);
    for s in ACVP_SETS {
        c.arg(format!("kyber_py-1.2.0/assets/{s}/prompt.json"));
        c.arg(format!("kyber_py-1.2.0/assets/{s}/expectedResults.json"));
    }
    supervisor::run(&mut c, Duration::from_secs(60), "tar -xzf kyber_py-1.2.0.tar.gz (ACVP files)")?;
    Ok(assets)
}

fn interop(ctx: &Ctx) -> Result<()> {
    let py = setup::venv()?;
    let acvp = acvp_dir(&py)?;
    let mut cmd = util::cargo();
    cmd.args(["test", "-p", "ratchet", "--release", "--test", "interop", "--test", "mlkem_acvp"]);
    if !ctx.verbose {
        cmd.arg("--quiet");
    }
    cmd.args(["--", "--ignored"]).env("RATCHET_INTEROP_PYTHON", &py).env("RATCHET_ACVP_DIR", &acvp);
    supervisor::run(
        &mut cmd,
        Duration::from_secs(15 * 60),
        "cargo test -p ratchet --test interop --test mlkem_acvp -- --ignored",
    )
}

/// Bench provider `ratchet`: the native `ratchet-bench` binary of libs/ratchet (ML-KEM-1024
/// keygen/encaps/decaps as KEM jobs, whole PQXDH and X3DH initiations, the PQXDH responder; host
/// CPU, medians).
pub fn bench_providers() -> Vec<crate::steps::BenchProvider> {
    vec![crate::steps::BenchProvider { name: "ratchet", timeout: Duration::from_secs(600), run: bench }]
}

fn bench(_ctx: &Ctx) -> Result<crate::steps::BenchResults> {
    let mut c = util::cargo();
    c.args(["run", "--quiet", "--release", "-p", "ratchet", "--features", "bench", "--bin", "ratchet-bench"]);
    crate::bench::native_provider(&mut c, Duration::from_secs(580), "ratchet-bench")
}
