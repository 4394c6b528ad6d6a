//! Crates pinned by version and by the sha256 of the `.crate` crates.io publishes: downloaded
//! once into target/xous/download, checked, and unpacked fresh; and the stamp files that say a
//! cached build is current. Every pinned download of xtask (the hosted and the device Xous
//! builds) goes through here.

use crate::util;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A pinned crate: name, version, sha256 of the .crate as published on crates.io.
#[derive(Clone, Copy, Debug)]
pub struct Pinned {
    pub name: &'static str,
    pub version: &'static str,
    pub sha256: &'static str,
}

impl Pinned {
    /// `name-version`: the .crate's file stem and the directory it unpacks to.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }
}

/// Where the .crate files are kept.
pub fn download_dir() -> PathBuf {
    util::target_dir().join("xous").join("download")
}

/// Download a pinned crate (once) and check its sha256; a cached copy with another checksum is
/// downloaded again.
pub fn fetch(c: &Pinned) -> Result<PathBuf> {
    let path = download_dir().join(format!("{}.crate", c.stem()));
    if path.is_file() {
        let data = std::fs::read(&path)?;
        if util::sha256_hex(&data) == c.sha256 {
            return Ok(path);
        }
        eprintln!("xtask: {} has the wrong checksum; downloading again", path.display());
    }
    std::fs::create_dir_all(path.parent().unwrap())?;
    let url = format!("https://static.crates.io/crates/{0}/{1}.crate", c.name, c.stem());
    eprintln!("xtask: downloading {url}");
    let resp =
        ureq::get(&url).timeout(Duration::from_secs(120)).call().with_context(|| format!("downloading {url}"))?;
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut data)?;
    check(&url, &data, c.sha256)?;
    let tmp = path.with_extension("crate.tmp");
    std::fs::write(&tmp, &data)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

fn check(what: &str, data: &[u8], sha256: &str) -> Result<()> {
    let got = util::sha256_hex(data);
    if got != sha256 {
        bail!("{what}: sha256 {got} does not match the pinned {sha256}");
    }
    Ok(())
}

/// Unpack a pristine copy of a pinned crate into `dest` (replacing it).
pub fn unpack(c: &Pinned, dest: &Path) -> Result<PathBuf> {
    let crate_file = fetch(c)?;
    if dest.exists() {
        std::fs::remove_dir_all(dest)?;
    }
    let tmp = dest.parent().context("unpack destination without a parent")?.join(format!("{}.unpack", c.stem()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    std::fs::create_dir_all(&tmp)?;
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(&crate_file)?);
    let mut archive = tar::Archive::new(gz);
    // Fresh mtimes: the crate's own (old) mtimes would make cargo treat a re-unpacked or
    // re-patched tree as unchanged and reuse a stale binary.
    archive.set_preserve_mtime(false);
    archive.unpack(&tmp).with_context(|| format!("unpacking {}", crate_file.display()))?;
    std::fs::rename(tmp.join(c.stem()), dest)?;
    std::fs::remove_dir_all(&tmp).ok();
    Ok(dest.to_path_buf())
}

/// Build stamps under `root`/stamps: a cached build is reused only when its stamp holds the same
/// key (a hash of everything it was built from) and all its outputs exist.
pub fn stamp_ok(root: &Path, name: &str, key: &str, outputs: &[&Path]) -> bool {
    std::fs::read_to_string(stamp_path(root, name)).map(|s| s.trim() == key).unwrap_or(false)
        && outputs.iter().all(|p| p.is_file())
}

pub fn write_stamp(root: &Path, name: &str, key: &str) -> Result<()> {
    let p = stamp_path(root, name);
    std::fs::create_dir_all(p.parent().unwrap())?;
    std::fs::write(p, format!("{key}\n"))?;
    Ok(())
}

fn stamp_path(root: &Path, name: &str) -> PathBuf {
    root.join("stamps").join(format!("{name}.stamp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_with_another_checksum_is_refused() {
        let good = util::sha256_hex(b"crate");
        assert!(check("x", b"crate", &good).is_ok());
        let e = check("https://example/x.crate", b"crate!", &good).unwrap_err().to_string();
        assert!(e.contains("does not match the pinned") && e.contains("x.crate"), "{e}");
    }

    #[test]
    fn stamps_need_the_same_key_and_every_output() {
        let root = util::target_dir().join("xtask-test").join(format!("stamps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let out = root.join("out.bin");
        std::fs::create_dir_all(&root).unwrap();
        write_stamp(&root, "s", "k1").unwrap();
        assert!(!stamp_ok(&root, "s", "k1", &[&out]), "an output is missing");
        std::fs::write(&out, b"x").unwrap();
        assert!(stamp_ok(&root, "s", "k1", &[&out]));
        assert!(!stamp_ok(&root, "s", "k2", &[&out]), "another key");
        let _ = std::fs::remove_dir_all(&root);
    }
}
