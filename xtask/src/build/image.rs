//! A signed `xous.img` for Precursor (docs/device.md); `cargo xtask device-image` and the step
//! `device:image` are in areas/device/.
//!
//! The image holds the device kernel, the base services (xous-ticktimer, xous-log, xous-names,
//! xous-susres) and our servers, all built by xtask (device_xous.rs, device.rs). It is made by xous-tools
//! 0.1.2 from crates.io: `xous-create-image` writes the argument tags and payloads,
//! `xous-sign-image` wraps them in the signed container the loader verifies. Before that, every
//! ELF is checked here (present, 32-bit little-endian RISC-V, no overlapping loadable segments,
//! the kernel linked at its high address) because the tools panic on such input; afterwards the
//! signed result is checked independently: container header, Ed25519ph signature with the
//! development key, version trailer, every tag's CRC-16, payload bounds, and the fit in the
//! kernel's flash region.
//!
//! The signing key is a development key generated once into target/xous/device/devkey/dev.key
//! (PKCS#8 PEM, mode 0600); it is never committed.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha512};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::build::device_xous;
use crate::build::power::PowerPids;
use crate::build::target::BASE_SERVICES;
use crate::util;

/// Where Precursor's SPI flash holds xous.img (usb_update.py's LOC_KERNEL) and how long that
/// region is: the next region starts 0x0140_0000 later, and its last 4 KiB sector holds the
/// backup flag (usb_update.py --clear-backup erases it), so the image must end before it.
pub const KERNEL_FLASH_OFFSET: u32 = 0x0098_0000;
pub const KERNEL_FLASH_REGION: usize = 0x0140_0000;
pub const KERNEL_IMAGE_MAX: usize = KERNEL_FLASH_REGION - 0x1000;
/// The signed container: one 4 KiB sector of header, then the signed bytes.
pub const SIG_SECTOR: usize = 4096;
/// Container version written by `xous-sign-image --kernel-output` (Ed25519 over SHA-512 prehash).
pub const VERSION_LOADER_PREHASH: u32 = 2;
/// The kernel is linked at and above this address (xous-create-image refuses lower ones).
pub const KERNEL_TEXT_MIN: u32 = 0xff00_0000;
/// The minimum Xous version recorded in the image (xous-sign-image's default).
pub const MIN_XOUS_VER: &str = "v0.9.8-790";

pub fn default_out() -> PathBuf {
    device_xous::device_dir().join("xous.img")
}

pub fn key_path() -> PathBuf {
    device_xous::device_dir().join("devkey").join("dev.key")
}

// ---------------------------------------------------------------------------------------------
// ELF checks

// One ELF parser for the image and the RAM layout (tools/xous-layout): present, ELF32
// little-endian RISC-V executable, loadable segments inside the file and not overlapping in
// memory, the entry point inside one of them; each defect is a one-line error naming the file.
pub use xous_layout::elf::{load as check_elf, Elf};
#[cfg(test)]
use xous_layout::elf::{parse as parse_elf, EM_RISCV};

/// Bytes an ELF adds to the image (its loadable file contents, page-rounded per segment).
fn payload_estimate(e: &Elf) -> usize {
    e.segments.iter().map(|s| (s.data.len() + 4095) & !4095).sum()
}

/// Check the kernel and every program, and that their payloads can fit the flash region.
pub fn check_inputs(kernel: &Path, programs: &[PathBuf], limit: usize) -> Result<()> {
    let k = check_elf(kernel).context("kernel")?;
    if let Some(s) = k.segments.iter().find(|s| s.vaddr < KERNEL_TEXT_MIN) {
        bail!("kernel {}: segment at {:#010x} is below {KERNEL_TEXT_MIN:#010x} (not linked with the kernel's linker script)", kernel.display(), s.vaddr);
    }
    if k.entry < KERNEL_TEXT_MIN {
        bail!("kernel {}: entry point {:#010x} is below {KERNEL_TEXT_MIN:#010x}", kernel.display(), k.entry);
    }
    let mut total = payload_estimate(&k);
    for p in programs {
        let e = check_elf(p)?;
        total += payload_estimate(&e);
    }
    if total + SIG_SECTOR > limit {
        bail!("oversized image: the programs need at least {total} bytes, more than the {limit}-byte kernel flash region allows");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The signed image

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub name: String,
    pub offset: usize,
    pub data: Vec<u8>,
}

#[derive(Debug)]
pub struct ImageReport {
    pub total_len: usize,
    pub signed_len: usize,
    pub semver: String,
    pub tags: Vec<Tag>,
    /// (pid, name) from the PNam tag.
    pub names: Vec<(u32, String)>,
    pub kernel_entry: u32,
    pub programs: usize,
}

fn word(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

fn semver_string(b: &[u8]) -> String {
    let h = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let commit = word(b, 8);
    if word(b, 12) == 1 {
        // the tag's hash is 8 hex digits (semver_tag: rev-parse --short=8), leading zeros included
        format!("v{}.{}.{}-{}-g{:08x}", h(0), h(2), h(4), h(6), commit)
    } else {
        format!("v{}.{}.{}-{}", h(0), h(2), h(4), h(6))
    }
}

/// Parse the argument tags at the start of an unsigned image (tools/xous-layout's parser:
/// every CRC, the XArg size), with each tag's offset, and check the XArg version.
pub fn parse_tags(img: &[u8]) -> Result<Vec<Tag>> {
    let tags = xous_layout::tags::decode(img)?;
    let xarg = &tags[0].data;
    if xarg.len() < 5 || xarg[1] != 1 {
        bail!("bad tags: XArg tag of {} words, version {}", xarg.len(), xarg.get(1).copied().unwrap_or(0));
    }
    let mut offset = 0;
    Ok(tags
        .into_iter()
        .map(|t| {
            let tag = Tag { name: t.name_str(), offset, data: t.data.iter().flat_map(|w| w.to_le_bytes()).collect() };
            offset += 8 + 4 * t.data.len();
            tag
        })
        .collect())
}

/// Check a signed image: container, signature by `pubkey`, trailer, tags, payload bounds, fit.
pub fn check_signed_image(d: &[u8], pubkey: &[u8; 32], limit: usize, programs: usize) -> Result<ImageReport> {
    if d.len() > limit {
        bail!("oversized image: {} bytes do not fit the {limit}-byte kernel flash region", d.len());
    }
    if d.len() < SIG_SECTOR + 48 {
        bail!("bad header: {} bytes is too short for a signed image", d.len());
    }
    let version = word(d, 0);
    if version != VERSION_LOADER_PREHASH {
        bail!("bad header: container version {version}, expected {VERSION_LOADER_PREHASH}");
    }
    let signed_len = word(d, 4) as usize;
    if SIG_SECTOR + signed_len != d.len() {
        bail!("bad header: signed length {signed_len} + {SIG_SECTOR} != file length {}", d.len());
    }
    let sig: [u8; 64] = d[8..72].try_into().unwrap();
    let key_in_header: [u8; 32] = d[72..104].try_into().unwrap();
    if &key_in_header != pubkey {
        bail!("signature: the image names a different public key than the development key");
    }
    let signed = &d[SIG_SECTOR..];
    let vk = ed25519_dalek::VerifyingKey::from_bytes(pubkey).context("development public key")?;
    let mut h = Sha512::new();
    h.update(signed);
    vk.verify_prehashed(h, None, &ed25519_dalek::Signature::from_bytes(&sig))
        .map_err(|e| anyhow::anyhow!("signature: does not verify ({e})"))?;
    // trailer: minver(16) semver(16) version(4) length-before-this-field(4)
    let n = signed.len();
    if word(signed, n - 4) as usize != n - 4 || word(signed, n - 8) != VERSION_LOADER_PREHASH {
        bail!("bad trailer: version/length words do not match the container");
    }
    let semver = semver_string(&signed[n - 24..n - 8]);
    let img = &signed[..n - 40];
    let tags = parse_tags(img)?;
    let mut names = Vec::new();
    let mut kernel_entry = None;
    let mut inie = 0;
    for t in &tags {
        match t.name.as_str() {
            "XKrn" => {
                if t.data.len() != 28 {
                    bail!("XKrn tag: {} bytes, expected 28", t.data.len());
                }
                let (load, text, text_size, data_size, entry) =
                    (word(&t.data, 0), word(&t.data, 4), word(&t.data, 8), word(&t.data, 16), word(&t.data, 24));
                if load as usize % 4096 != 0 || load as usize + text_size as usize + data_size as usize > img.len() {
                    bail!(
                        "XKrn tag: payload at {load:#x} (+{:#x}) is misaligned or outside the image",
                        text_size + data_size
                    );
                }
                if text < KERNEL_TEXT_MIN || entry < text || entry >= text + text_size {
                    bail!("XKrn tag: entry {entry:#010x} is not in the kernel text {text:#010x}+{text_size:#x}");
                }
                kernel_entry = Some(entry);
            }
            "IniE" | "IniF" => {
                let load = word(&t.data, 0) as usize;
                let size: usize = t.data[8..].chunks(8).map(|c| (word(c, 4) & 0x00ff_ffff) as usize).sum();
                if load % 4096 != 0 || load > img.len() {
                    bail!("{} tag at {:#x}: payload offset {load:#x} misaligned or outside the image ({size} bytes of sections)", t.name, t.offset);
                }
                inie += 1;
            }
            "PNam" => {
                let mut o = 0;
                while o + 8 <= t.data.len() {
                    let pid = word(&t.data, o);
                    let len = word(&t.data, o + 4) as usize;
                    let s = t.data.get(o + 8..o + 8 + len).context("PNam tag: name runs past the tag")?;
                    names.push((pid, String::from_utf8_lossy(s).into_owned()));
                    o += 8 + ((len + 3) & !3);
                }
            }
            _ => {}
        }
    }
    let kernel_entry = kernel_entry.context("no XKrn tag: the image has no kernel")?;
    if inie != programs {
        bail!("the image holds {inie} programs, expected {programs}");
    }
    if names.len() != programs + 1 {
        bail!("PNam tag names {} processes, expected {} (the kernel and every program)", names.len(), programs + 1);
    }
    Ok(ImageReport { total_len: d.len(), signed_len, semver, tags, names, kernel_entry, programs: inie })
}

// ---------------------------------------------------------------------------------------------
// Key and semver

/// PKCS#8 v1 prefix of an Ed25519 private key (RFC 8410): the 32-byte seed follows.
const PKCS8_ED25519_PREFIX: [u8; 16] =
    [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];

pub fn key_pem(seed: &[u8; 32]) -> String {
    use base64::Engine;
    let mut der = PKCS8_ED25519_PREFIX.to_vec();
    der.extend_from_slice(seed);
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(der)
    )
}

pub fn seed_from_pem(text: &str) -> Result<[u8; 32]> {
    use base64::Engine;
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let der =
        base64::engine::general_purpose::STANDARD.decode(body.trim()).context("development key: not base64 PEM")?;
    if der.len() != 48 || der[..16] != PKCS8_ED25519_PREFIX {
        bail!("development key: not a PKCS#8 Ed25519 private key");
    }
    Ok(der[16..].try_into().unwrap())
}

/// Load a signing key; returns (path, public key).
pub fn load_key(path: &Path) -> Result<(PathBuf, [u8; 32])> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the signing key {}", path.display()))?;
    let seed = seed_from_pem(&text).with_context(|| path.display().to_string())?;
    let pk = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key().to_bytes();
    Ok((path.to_path_buf(), pk))
}

/// The development key (generated on first use); returns (path, public key).
pub fn ensure_key() -> Result<(PathBuf, [u8; 32])> {
    let path = key_path();
    if !path.is_file() {
        std::fs::create_dir_all(path.parent().unwrap())?;
        let mut seed = [0u8; 32];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut seed)?;
        let tmp = path.with_extension("tmp");
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
            std::io::Write::write_all(&mut f, key_pem(&seed).as_bytes())?;
        }
        std::fs::rename(&tmp, &path)?;
        eprintln!("device-image: generated a development signing key in {}", path.display());
    }
    load_key(&path)
}

pub fn key_for(arg: &Option<PathBuf>) -> Result<(PathBuf, [u8; 32])> {
    match arg {
        Some(p) => load_key(p),
        None => ensure_key(),
    }
}

/// `git describe` output xous-sign-image records: our workspace version, commits since the
/// repository's root, and the commit (`v0.1.0-N-gHASH`).
pub fn semver_tag() -> String {
    let root = util::root();
    let git = |args: &[&str]| -> Option<String> {
        let o = Command::new("git").args(args).current_dir(&root).output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let count =
        git(&["rev-list", "--count", "HEAD"]).and_then(|s| s.parse::<u32>().ok()).unwrap_or(0).min(u16::MAX as u32);
    let hash = git(&["rev-parse", "--short=8", "HEAD"]).unwrap_or_else(|| "0".into());
    format!("v{}-{count}-g{hash}", env!("CARGO_PKG_VERSION"))
}

/// A scratch git repository whose `git describe` prints `tag` (xous-sign-image runs it).
fn semver_repo(tag: &str) -> Result<PathBuf> {
    let dir = device_xous::device_dir().join("semver-git");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let git = |args: &[&str]| -> Result<()> {
        let o = Command::new("git")
            .args(["-c", "user.name=xtask", "-c", "user.email=xtask@localhost", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(&dir)
            .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .context("running git")?;
        if !o.status.success() {
            bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
        }
        Ok(())
    };
    git(&["init", "-q"])?;
    git(&["commit", "-q", "--allow-empty", "-m", "version"])?;
    git(&["tag", "-a", tag, "-m", tag])?;
    Ok(dir)
}

// ---------------------------------------------------------------------------------------------
// Building

pub struct BuiltImage {
    pub path: PathBuf,
    pub report: ImageReport,
    /// The kernel and the programs' ELFs it holds, in PID order after the kernel.
    pub kernel: PathBuf,
    pub programs: Vec<PathBuf>,
}

/// Create + sign + check the image from given inputs.
pub fn make_image(
    tools: &device_xous::XousTools,
    kernel: &Path,
    programs: &[PathBuf],
    svd: &Path,
    out: &Path,
    key: &Option<PathBuf>,
) -> Result<BuiltImage> {
    check_inputs(kernel, programs, KERNEL_IMAGE_MAX)?;
    let (key, pk) = key_for(key)?;
    let presign = out.with_extension("presign.img");
    std::fs::create_dir_all(out.parent().unwrap())?;
    let abs = |p: &Path| std::fs::canonicalize(p).with_context(|| p.display().to_string());
    let mut c = Command::new(&tools.create_image);
    c.arg("--kernel").arg(abs(kernel)?);
    for p in programs {
        c.arg("--init").arg(abs(p)?);
    }
    c.arg("--svd").arg(abs(svd)?).arg("--swap-key").arg(&key).arg(&presign);
    crate::supervisor::run_capture(&mut c, Duration::from_secs(120), "xous-create-image")?;
    let tag = semver_tag();
    let repo = semver_repo(&tag)?;
    let mut s = Command::new(&tools.sign_image);
    s.arg("--kernel-image")
        .arg(&presign)
        .arg("--kernel-key")
        .arg(&key)
        .arg("--kernel-output")
        .arg(out)
        .arg("--min-xous-ver")
        .arg(MIN_XOUS_VER)
        .current_dir(&repo);
    crate::supervisor::run_capture(&mut s, Duration::from_secs(120), "xous-sign-image")?;
    let data = std::fs::read(out)?;
    let report = check_signed_image(&data, &pk, KERNEL_IMAGE_MAX, programs.len())
        .with_context(|| format!("checking {}", out.display()))?;
    if report.semver != tag {
        bail!("{}: records version {}, expected {tag}", out.display(), report.semver);
    }
    Ok(BuiltImage { path: out.to_path_buf(), report, kernel: kernel.to_path_buf(), programs: programs.to_vec() })
}

/// Every device ELF of the image, in PID order after the kernel: base services (xous-susres
/// built for `power`), then ours (built with `features`).
pub fn image_programs(power: &PowerPids, features: &[&str], verbose: bool) -> Result<Vec<PathBuf>> {
    let services = device_xous::ensure_services(power, verbose)?;
    let by = |n: &str| services.iter().find(|p| p.file_name().unwrap() == n).cloned().unwrap();
    let mut v: Vec<PathBuf> = BASE_SERVICES.iter().map(|n| by(n)).collect();
    crate::build::device::build_all(features)?;
    v.extend(device_xous::our_programs());
    Ok(v)
}

/// The flashed image: no extras, only the system's own processes may power off.
pub fn build(out: &Path, key: &Option<PathBuf>, verbose: bool) -> Result<BuiltImage> {
    build_for(out, key, &PowerPids::of_image(&[]), &[], verbose)
}

/// The image's programs (our device programs with cargo `features`) with the kernel and
/// xous-susres built for `power`.
pub fn build_for(
    out: &Path,
    key: &Option<PathBuf>,
    power: &PowerPids,
    features: &[&str],
    verbose: bool,
) -> Result<BuiltImage> {
    let tools = device_xous::ensure_tools(verbose)?;
    let kernel = device_xous::ensure_kernel(power, verbose)?;
    let programs = image_programs(power, features, verbose)?;
    // the simulated SoC's CPU has no C extension: every ELF must be free of compressed code
    crate::setup::require_apt(crate::setup::apt::RISCV_BINUTILS)?;
    for p in std::iter::once(&kernel).chain(programs.iter()) {
        let n = device_xous::compressed_instructions(p)?;
        if n != 0 {
            bail!("{}: {n} compressed instructions (device builds use {})", p.display(), device_xous::DEVICE_RUSTFLAGS);
        }
    }
    let svd = device_xous::precursor_svd()?;
    let built = make_image(&tools, &kernel, &programs, &svd, out, key)?;
    // the image builder's PIDs (PNam) against the list the kernel and susres were built with
    // (a list for a simulated system also names its extras, which this image does not hold)
    let names = &built.report.names;
    PowerPids(power.0.iter().copied().filter(|p| names.iter().any(|(q, _)| q == p)).collect()).check(names, &[])?;
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xous_layout::tags::crc16_x25;

    /// A minimal ELF32 with the given machine/class and PT_LOAD segments (vaddr, memsz, filesz),
    /// read + execute, entry at the first segment.
    pub fn elf(class: u8, machine: u16, segs: &[(u32, u32, u32)]) -> Vec<u8> {
        let s: Vec<(u32, u32, u32, u32)> = segs.iter().map(|&(v, m, f)| (v, m, f, xous_layout::elf::PF_X)).collect();
        xous_layout::elf::testelf::elf(class, machine, segs.first().map(|s| s.0).unwrap_or(0), &s)
    }

    fn scratch(name: &str) -> PathBuf {
        let d = util::target_dir().join("xtask-test").join(format!("image-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn crc16_x25_check_value() {
        assert_eq!(crc16_x25(b"123456789"), 0x906e);
    }

    #[test]
    fn good_elf_parses() {
        let e = parse_elf(&elf(1, EM_RISCV, &[(0x2000_0000, 0x100, 0x80), (0x2000_1000, 0x200, 0x10)])).unwrap();
        assert_eq!(e.segments.len(), 2);
        assert_eq!(e.entry, 0x2000_0000);
    }

    #[test]
    fn missing_elf_is_named() {
        let e = check_elf(Path::new("/nonexistent/xous-names")).unwrap_err().to_string();
        assert!(e.contains("missing ELF") && e.contains("/nonexistent/xous-names"), "{e}");
    }

    #[test]
    fn wrong_architecture_is_refused() {
        let e = format!("{:#}", parse_elf(&elf(1, 62, &[(0x1000, 0x10, 0x10)])).unwrap_err());
        assert!(e.contains("wrong architecture") && e.contains("x86-64"), "{e}");
        let e = format!("{:#}", parse_elf(&elf(2, EM_RISCV, &[(0x1000, 0x10, 0x10)])).unwrap_err());
        assert!(e.contains("wrong architecture") && e.contains("64-bit"), "{e}");
        let e = format!(
            "{:#}",
            parse_elf(b"#!/bin/sh\necho not an elf\n.................................................").unwrap_err()
        );
        assert!(e.contains("not an ELF"), "{e}");
    }

    #[test]
    fn overlapping_segments_are_refused() {
        let e = format!(
            "{:#}",
            parse_elf(&elf(1, EM_RISCV, &[(0x2000_0000, 0x2000, 0x10), (0x2000_1000, 0x100, 0x10)])).unwrap_err()
        );
        assert!(e.contains("overlapping segments") && e.contains("0x20001000"), "{e}");
    }

    #[test]
    fn truncated_segment_is_refused() {
        let mut d = elf(1, EM_RISCV, &[(0x2000_0000, 0x100, 0x80)]);
        d.truncate(d.len() - 10);
        let e = format!("{:#}", parse_elf(&d).unwrap_err());
        assert!(e.contains("past the end of the file"), "{e}");
    }

    #[test]
    fn oversized_inputs_are_refused_before_building() {
        let d = scratch("oversized");
        let k = d.join("kernel");
        std::fs::write(&k, elf(1, EM_RISCV, &[(0xffd0_0000, 0x1000, 0x1000)])).unwrap();
        let big = d.join("big");
        std::fs::write(&big, elf(1, EM_RISCV, &[(0x2000_0000, 0x40_0000, 0x40_0000)])).unwrap();
        let e = format!("{:#}", check_inputs(&k, &[big.clone()], 0x20_0000).unwrap_err());
        assert!(e.contains("oversized image"), "{e}");
        check_inputs(&k, &[big], 0x80_0000).unwrap();
        // a kernel linked low is refused
        let low = d.join("low-kernel");
        std::fs::write(&low, elf(1, EM_RISCV, &[(0x4000_0000, 0x1000, 0x1000)])).unwrap();
        let e = format!("{:#}", check_inputs(&low, &[], 0x80_0000).unwrap_err());
        assert!(e.contains("below 0xff000000"), "{e}");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn key_pem_round_trips_and_bad_keys_are_refused() {
        let seed = [7u8; 32];
        assert_eq!(seed_from_pem(&key_pem(&seed)).unwrap(), seed);
        assert!(seed_from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err());
    }

    /// A synthetic signed image built the way xous-sign-image lays it out, to test the checker.
    fn signed(img: &[u8], seed: &[u8; 32]) -> Vec<u8> {
        use ed25519_dalek::SigningKey;
        let sk = SigningKey::from_bytes(seed);
        let mut src = img.to_vec();
        src.extend_from_slice(&[0u8; 16]);
        let mut sv = [0u8; 16];
        sv[0..2].copy_from_slice(&0u16.to_le_bytes());
        sv[2..4].copy_from_slice(&1u16.to_le_bytes());
        src.extend_from_slice(&sv);
        src.extend_from_slice(&VERSION_LOADER_PREHASH.to_le_bytes());
        let l = src.len() as u32;
        src.extend_from_slice(&l.to_le_bytes());
        let mut h = Sha512::new();
        h.update(&src);
        let sig = sk.sign_prehashed(h, None).unwrap().to_bytes();
        let mut out = Vec::new();
        out.extend_from_slice(&VERSION_LOADER_PREHASH.to_le_bytes());
        out.extend_from_slice(&(src.len() as u32).to_le_bytes());
        out.extend_from_slice(&sig);
        out.extend_from_slice(&sk.verifying_key().to_bytes());
        out.resize(SIG_SECTOR, 0);
        out.extend_from_slice(&src);
        out
    }

    fn tag(name: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut v = name.to_vec();
        v.extend_from_slice(&crc16_x25(data).to_le_bytes());
        v.extend_from_slice(&((data.len() / 4) as u16).to_le_bytes());
        v.extend_from_slice(data);
        v
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn synthetic_image() -> Vec<u8> {
        let pnam = {
            let mut v = words(&[1, 6]);
            v.extend_from_slice(b"kernel\0\0");
            v.extend(words(&[2, 4]));
            v.extend_from_slice(b"prog");
            v
        };
        let xkrn = words(&[0x1000, 0xffd0_0000, 0x800, 0xff80_0000, 0x100, 0x100, 0xffd0_0010]);
        let inie = words(&[0x2000, 0x2000_0000, 0x2000_0000, 0x100]);
        let body_len = 8 + 20 + 8 + xkrn.len() + 8 + inie.len() + 8 + pnam.len();
        let mut img = tag(b"XArg", &words(&[(body_len / 4) as u32, 1, 0x4000_0000, 0x100_0000, 0x6d617273]));
        img.extend(tag(b"XKrn", &xkrn));
        img.extend(tag(b"IniE", &inie));
        img.extend(tag(b"PNam", &pnam));
        img.resize(0x3000, 0);
        img
    }

    #[test]
    fn checker_accepts_a_good_image_and_names_each_defect() {
        let seed = [3u8; 32];
        let pk = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key().to_bytes();
        let good = signed(&synthetic_image(), &seed);
        let r = check_signed_image(&good, &pk, KERNEL_IMAGE_MAX, 1).unwrap();
        assert_eq!(r.names, vec![(1, "kernel".into()), (2, "prog".into())]);
        assert_eq!(r.kernel_entry, 0xffd0_0010);
        assert_eq!(r.semver, "v0.1.0-0");

        let err = |d: &[u8], limit: usize| format!("{:#}", check_signed_image(d, &pk, limit, 1).unwrap_err());
        // oversized for the region
        assert!(err(&good, good.len() - 1).contains("oversized image"));
        // payload bit: signature
        let mut d = good.clone();
        d[SIG_SECTOR + 0x2800] ^= 1;
        assert!(err(&d, KERNEL_IMAGE_MAX).contains("signature"));
        // a different key
        let other = signed(&synthetic_image(), &[4u8; 32]);
        assert!(err(&other, KERNEL_IMAGE_MAX).contains("different public key"));
        // header version and length
        let mut d = good.clone();
        d[0] = 1;
        assert!(err(&d, KERNEL_IMAGE_MAX).contains("container version 1"));
        let mut d = good.clone();
        d.push(0);
        assert!(err(&d, KERNEL_IMAGE_MAX).contains("signed length"));
        // a tag CRC (re-signed so only the CRC is wrong)
        let mut img = synthetic_image();
        let xkrn_at = 8 + 20;
        img[xkrn_at + 8 + 4] ^= 1;
        assert!(err(&signed(&img, &seed), KERNEL_IMAGE_MAX).contains("XKrn at 0x1c: CRC-16 mismatch"));
        // not tags at all
        let mut img = synthetic_image();
        img[0] = b'Y';
        assert!(err(&signed(&img, &seed), KERNEL_IMAGE_MAX).contains("does not start with an XArg"));
        // wrong program count
        assert!(format!("{:#}", check_signed_image(&good, &pk, KERNEL_IMAGE_MAX, 2).unwrap_err())
            .contains("holds 1 programs, expected 2"));
    }

    /// A commit hash with a leading zero reads back as the tag wrote it (git's "042547fe", not
    /// "42547fe": every 16th commit failed device:image before).
    #[test]
    fn semver_keeps_a_leading_zero_of_the_commit() {
        let mut b = [0u8; 16];
        b[0] = 0; // 0.1.0-240
        b[2] = 1;
        b[6..8].copy_from_slice(&240u16.to_le_bytes());
        b[8..12].copy_from_slice(&0x0425_47feu32.to_le_bytes());
        b[12..16].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(semver_string(&b), "v0.1.0-240-g042547fe");
    }
}
