//! The chat's persistent store: one file per party, replaced atomically.
//!
//! File format (all integers big endian):
//! ```text
//! magic "XCP1" | version u16 | body length u32 | body | SHA-256(magic .. body) (32)
//! ```
//! A write goes to `<file>.tmp`, is flushed to disk (fsync), renamed over the file and the
//! directory is fsynced: a reader (or a restart after `kill -9` at any instant) sees either the
//! old or the new state, never a torn one. A damaged file (bad magic, version, length or
//! checksum, a field out of range) is refused with a clear error, never a panic.
//!
//! The body holds secrets (ratchet states, identity keys): it lives in `Zeroizing` buffers. The
//! file is not encrypted (on the device that is the storage layer's job, docs/chat.md).
//!
//! Where the body lives is a [`Storage`]: a file in the format above ([`FileStore`], hosted) or
//! a bounded region of RAM ([`RamStore`], the device image, which has no file system; it keeps
//! the body without header and checksum): a write that would not fit is refused with
//! [`StoreError::Full`] and the previous contents stay.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

pub const MAGIC: &[u8; 4] = b"XCP1";
pub const VERSION: u16 = 1;
/// Largest store file accepted.
pub const MAX_FILE: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    Io(String),
    Corrupt(String),
    Version(u16),
    /// The write needs `need` bytes, the store holds at most `cap`: nothing was written.
    Full {
        need: usize,
        cap: usize,
    },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Io(e) => write!(f, "store I/O: {e}"),
            StoreError::Corrupt(e) => write!(f, "store file is damaged: {e}"),
            StoreError::Version(v) => write!(f, "store file version {v}, this build reads {VERSION}"),
            StoreError::Full { need, cap } => {
                write!(f, "store full: the state needs {need} bytes, the store holds {cap}; nothing was written")
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// Appends fields to a body.
pub struct Writer(pub Zeroizing<Vec<u8>>);

impl Default for Writer {
    fn default() -> Self {
        Writer(Zeroizing::new(Vec::with_capacity(4096)))
    }
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    pub fn raw(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
    /// Length-prefixed bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.raw(b);
    }
}

/// Reads fields from a body; every read is bounds-checked.
pub struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0 }
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], StoreError> {
        if self.b.len() - self.pos < n {
            return Err(StoreError::Corrupt(format!("{what}: truncated at byte {}", self.pos)));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self, what: &str) -> Result<u8, StoreError> {
        Ok(self.take(1, what)?[0])
    }
    pub fn u32(&mut self, what: &str) -> Result<u32, StoreError> {
        Ok(u32::from_be_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    pub fn u64(&mut self, what: &str) -> Result<u64, StoreError> {
        Ok(u64::from_be_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    pub fn arr32(&mut self, what: &str) -> Result<[u8; 32], StoreError> {
        Ok(self.take(32, what)?.try_into().unwrap())
    }
    pub fn bytes(&mut self, what: &str) -> Result<&'a [u8], StoreError> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }
    /// A count of items, each at least `min_item` bytes (bounds allocation on damaged input).
    pub fn count(&mut self, what: &str, min_item: usize) -> Result<usize, StoreError> {
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_item.max(1)) > self.b.len() - self.pos {
            return Err(StoreError::Corrupt(format!("{what}: count {n} larger than the file")));
        }
        Ok(n)
    }
    pub fn flag(&mut self, what: &str) -> Result<bool, StoreError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(StoreError::Corrupt(format!("{what}: flag {v}"))),
        }
    }
    pub fn finish(&self) -> Result<(), StoreError> {
        if self.pos != self.b.len() {
            return Err(StoreError::Corrupt(format!("{} trailing bytes", self.b.len() - self.pos)));
        }
        Ok(())
    }
}

/// Wraps a body: magic, version, length, body, checksum.
pub fn seal(body: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut v = Zeroizing::new(Vec::with_capacity(body.len() + 42));
    v.extend_from_slice(MAGIC);
    v.extend_from_slice(&VERSION.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    let sum = Sha256::digest(&v[..]);
    v.extend_from_slice(&sum);
    v
}

/// Checks a sealed file and returns its body.
pub fn open(file: &[u8]) -> Result<&[u8], StoreError> {
    if file.len() < 4 + 2 + 4 + 32 {
        return Err(StoreError::Corrupt(format!("{} bytes, shorter than the header", file.len())));
    }
    if &file[..4] != MAGIC {
        return Err(StoreError::Corrupt("bad magic (not a chat store file)".into()));
    }
    let version = u16::from_be_bytes([file[4], file[5]]);
    if version != VERSION {
        return Err(StoreError::Version(version));
    }
    let len = u32::from_be_bytes(file[6..10].try_into().unwrap()) as usize;
    if file.len() != 10 + len + 32 {
        return Err(StoreError::Corrupt(format!("length field {len} does not match the file size {}", file.len())));
    }
    let sum = Sha256::digest(&file[..10 + len]);
    if sum[..] != file[10 + len..] {
        return Err(StoreError::Corrupt("checksum mismatch".into()));
    }
    Ok(&file[10..10 + len])
}

/// Where a party's state (the body of the format above) lives.
pub trait Storage: Send {
    /// The body last stored, checked, or None if nothing was ever written.
    fn load(&self) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError>;
    /// Replaces the stored body with `body`, all or nothing.
    fn store(&mut self, body: &[u8]) -> Result<(), StoreError>;
    /// For messages: the file, or what the region is.
    fn describe(&self) -> String;
}

/// A store file: the body sealed ([`seal`]: header and SHA-256) and replaced atomically
/// ([`write_atomic`]); a damaged file is refused when it is read ([`open`]).
pub struct FileStore(pub PathBuf);

impl Storage for FileStore {
    fn load(&self) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        let Some(file) = read(&self.0)? else { return Ok(None) };
        Ok(Some(Zeroizing::new(open(&file)?.to_vec())))
    }
    fn store(&mut self, body: &[u8]) -> Result<(), StoreError> {
        write_atomic(&self.0, &seal(body))
    }
    fn describe(&self) -> String {
        self.0.display().to_string()
    }
}

/// A store in RAM of at most `cap` bytes (the device image has no file system; its storage
/// layer, the PDDB on Precursor, is not part of it): lost at power-off. A write larger than
/// `cap` is refused with [`StoreError::Full`] and the previous contents stay. It keeps the body
/// as it is, without the file's header and checksum: those guard a file against a torn or
/// damaged write, which memory of the process itself cannot suffer (a crash takes the memory
/// with the process), and on the device's CPU the SHA-256 of every write was the largest cost
/// of a message (docs/chat.md).
pub struct RamStore {
    data: Option<Zeroizing<Vec<u8>>>,
    cap: usize,
}

impl RamStore {
    pub fn new(cap: usize) -> RamStore {
        RamStore { data: None, cap }
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
}

impl Storage for RamStore {
    fn load(&self) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        Ok(self.data.clone())
    }
    fn store(&mut self, data: &[u8]) -> Result<(), StoreError> {
        if data.len() > self.cap {
            return Err(StoreError::Full { need: data.len(), cap: self.cap });
        }
        self.data = Some(Zeroizing::new(data.to_vec()));
        Ok(())
    }
    fn describe(&self) -> String {
        format!("RAM, {} bytes at most", self.cap)
    }
}

/// The RAM store's size on the device: the largest state of the demo (Bob's PQ prekeys, a
/// session, 2,000 history entries of short texts) fits several times over.
pub const DEVICE_STORE_CAP: usize = 512 * 1024;

/// A party's store at `path`: the file, or on the device (no file system in the image) a
/// [`RamStore`] of [`DEVICE_STORE_CAP`] bytes.
pub fn backing(path: &Path) -> Box<dyn Storage> {
    if cfg!(target_os = "xous") {
        Box::new(RamStore::new(DEVICE_STORE_CAP))
    } else {
        Box::new(FileStore(path.to_path_buf()))
    }
}

/// Replaces `path` with `data` atomically (tmp file, fsync, rename, fsync of the directory).
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), StoreError> {
    let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", path.display()));
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io)?;
    let tmp = tmp_path(path);
    {
        let mut f = fs::File::create(&tmp).map_err(io)?;
        f.write_all(data).map_err(io)?;
        f.sync_data().map_err(io)?;
    }
    fs::rename(&tmp, path).map_err(io)?;
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Reads a store file: Ok(None) if there is none yet.
pub fn read(path: &Path) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
    match fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::Io(format!("{}: {e}", path.display()))),
        Ok(m) if m.len() > MAX_FILE as u64 => {
            return Err(StoreError::Corrupt(format!("{} is {} bytes, more than {MAX_FILE}", path.display(), m.len())))
        }
        Ok(_) => {}
    }
    fs::read(path).map(|v| Some(Zeroizing::new(v))).map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_round_trip_and_every_damage_is_refused() {
        let body = b"hello store".to_vec();
        let f = seal(&body);
        assert_eq!(open(&f).unwrap(), &body[..]);
        for i in 0..f.len() {
            for bit in 0..8 {
                let mut g = f.to_vec();
                g[i] ^= 1 << bit;
                assert!(open(&g).is_err(), "flip of byte {i} bit {bit} accepted");
            }
        }
        for n in 0..f.len() {
            assert!(open(&f[..n]).is_err(), "truncation to {n} accepted");
        }
        let mut longer = f.to_vec();
        longer.push(0);
        assert!(open(&longer).is_err());
        let mut v2 = f.to_vec();
        v2[5] = 2;
        assert!(matches!(open(&v2), Err(StoreError::Version(2))));
    }

    #[test]
    fn reader_bounds() {
        let mut w = Writer::default();
        w.u32(7);
        w.bytes(b"abc");
        w.u8(1);
        let mut r = Reader::new(&w.0);
        assert_eq!(r.u32("a").unwrap(), 7);
        assert_eq!(r.bytes("b").unwrap(), b"abc");
        assert!(r.flag("c").unwrap());
        r.finish().unwrap();
        assert!(r.u8("past the end").is_err());
        let mut r = Reader::new(&[0, 0, 0, 200]);
        assert!(r.bytes("long").is_err());
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff]);
        assert!(r.count("huge", 1).is_err());
    }

    #[test]
    fn a_full_ram_store_refuses_the_write_and_keeps_what_it_had() {
        let mut r = RamStore::new(8);
        assert_eq!(r.load().unwrap(), None);
        r.store(b"12345678").unwrap();
        let e = r.store(b"123456789").unwrap_err();
        assert_eq!(e, StoreError::Full { need: 9, cap: 8 });
        assert!(e.to_string().contains("store full"), "{e}");
        assert_eq!(&r.load().unwrap().unwrap()[..], b"12345678");
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_tmp() {
        let d = std::env::temp_dir().join(format!("chat-store-test-{}", std::process::id()));
        let p = d.join("a.state");
        assert_eq!(read(&p).unwrap(), None);
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(&read(&p).unwrap().unwrap()[..], b"two");
        assert!(!tmp_path(&p).exists());
        std::fs::remove_dir_all(&d).ok();
    }
}
