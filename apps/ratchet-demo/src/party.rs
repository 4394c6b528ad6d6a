//! One chat party (Alice the initiator, or Bob the responder): sessions, reliable delivery over
//! a lossy relay, persistence. Kernel-free: X25519 and ML-KEM go through a [`DhRunner`],
//! randomness through any `CryptoRngCore`, frames in and out through plain queues. The app drives
//! it with [`Party::tick`] once per frame; nothing in `tick` blocks (with an async runner and a
//! pool RNG).
//!
//! Sessions start with PQXDH (X3DH + ML-KEM-1024, docs/ratchet.md): Alice needs a bundle with a
//! signed PQ prekey (one without is refused, no fall-back to X3DH); her encapsulation and Bob's
//! decapsulation are KEM jobs submitted with the X25519 jobs of the same step. Bob also accepts
//! X3DH prekey messages (older initiators).
//!
//! Frames on the relay (first byte):
//! - `0x01 | ratchet wire message`: a chat message; its plaintext is `seq u32 BE | UTF-8 text`;
//! - `0x02 | SHA-256(ratchet wire message)`: the receiver has it (acknowledgement).
//!
//! Delivery and crash rules (docs/chat.md):
//! - A message is encrypted, put in the outbox and the store is written *before* the frame
//!   leaves: a crash can never make the ratchet encrypt twice with one key.
//! - The outbox resends the same ciphertext until its acknowledgement arrives: a frame lost by
//!   the relay, or by a crash of either side or of the relay, is resent.
//! - A received message is accepted (history, ratchet state) and the store written before its
//!   acknowledgement is sent; a copy that arrives again is a replay for the ratchet (rejected)
//!   and is acknowledged again.
//! - Acknowledgements are not authenticated: a forged one can only make a sender stop resending,
//!   which a relay that drops frames achieves anyway.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use rand_core::CryptoRngCore;
use ratchet::x25519_dalek::{PublicKey, StaticSecret};
use ratchet::{
    pqxdh, Decrypted, DhJob, Envelope, Error as RError, KeyPair, PendingAccept, PendingDecrypt, PendingInitiate,
    PqxdhBundle, Responder, Session,
};
use sha2::{Digest, Sha256};

use crate::dh::{DhBatch, DhRunner};
use crate::store::{FileStore, Reader, Storage, StoreError, Writer};

pub const TAG_MSG: u8 = 1;
pub const TAG_ACK: u8 = 2;
/// Longest chat text (bytes of UTF-8).
pub const MAX_TEXT: usize = 512;
/// Resend an unacknowledged message after this long.
pub const RETRY: Duration = Duration::from_millis(1200);
/// History entries kept (oldest dropped).
pub const MAX_HISTORY: usize = 2_000;
/// (PQ)XDH ephemeral keys remembered by a responder (a replayed prekey message is refused).
pub const MAX_SEEN_X3DH: usize = 256;
/// Hashes of accepted messages remembered in memory (a copy is acknowledged again at once).
pub const MAX_ACCEPTED_HASHES: usize = 2_000;
/// Inbox frames processed per tick at most (bounds the work of one frame).
const INBOX_PER_TICK: usize = 16;

/// A PQXDH bundle whose two signatures verified and which carries a PQ prekey: the only form
/// Alice takes a bundle in. Checking costs two XEdDSA verifications (about 90 ms each on the
/// device's CPU), so a UI can check it on another thread and hand the result over.
#[derive(Debug, Clone)]
pub struct VerifiedBundle(PqxdhBundle);

impl VerifiedBundle {
    pub fn check(bytes: &[u8]) -> Result<VerifiedBundle, String> {
        let b = PqxdhBundle::parse(bytes).map_err(|e| format!("prekey bundle: {e}"))?;
        b.verify().map_err(|e| format!("prekey bundle: {e}"))?;
        Ok(VerifiedBundle(b))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
}

/// DH work a message needed, in device time (engine cycles at its clock, or the software
/// figure) and host time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DhInfo {
    pub jobs: u32,
    pub cycles: u64,
    pub device_us: u64,
    pub host_us: u64,
}

impl DhInfo {
    pub fn from_batch(b: &DhBatch) -> DhInfo {
        DhInfo {
            jobs: b.jobs as u32,
            cycles: b.cycles,
            device_us: b.device.as_micros() as u64,
            host_us: b.host.as_micros() as u64,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub dir: Dir,
    pub peer: u32,
    pub seq: u32,
    pub text: String,
    pub unix_ms: u64,
    pub dh: Option<DhInfo>,
    /// outgoing: acknowledged by the peer
    pub acked: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub accepted: u64,
    pub sent: u64,
    pub acked: u64,
    pub retransmits: u64,
    pub dh_steps: u64,
    pub rej_replay: u64,
    pub rej_tampered: u64,
    pub rej_malformed: u64,
}

impl Counters {
    pub fn rejected(&self) -> u64 {
        self.rej_replay + self.rej_tampered + self.rej_malformed
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    Replay,
    Tampered,
    Malformed,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Received {
        peer: u32,
        seq: u32,
        text: String,
        dh: Option<DhInfo>,
    },
    Sent {
        peer: u32,
        seq: u32,
    },
    Acked {
        peer: u32,
        seq: u32,
    },
    Retransmit {
        peer: u32,
        seq: u32,
    },
    Rejected {
        peer: u32,
        kind: Reject,
        why: String,
    },
    /// the responder's published bundle changed (publish it again)
    BundleChanged,
    SessionReady {
        peer: u32,
    },
    Info(String),
    Error(String),
}

struct OutMsg {
    peer: u32,
    seq: u32,
    wire: Vec<u8>,
    hash: [u8; 32],
    last_sent: Option<Instant>,
}

/// The state one encryption changes (session, sequence number, outbox, history, counters,
/// events), as it was before it ([`Party::queue_text`]).
struct Undo {
    peer: u32,
    session: Option<Session>,
    next_seq: Option<u32>,
    outbox: usize,
    history: usize,
    oldest: Option<Entry>,
    counters: Counters,
    events: usize,
}

enum Role {
    Initiator { peer: u32 },
    Responder,
}

enum InFlight {
    Identity { secret: StaticSecret },
    Initiate { peer: u32, pending: PendingInitiate },
    Decrypt { peer: u32, pending: PendingDecrypt, hash: [u8; 32], wire: Vec<u8> },
    Accept { peer: u32, pending: PendingAccept, hash: [u8; 32], ek: [u8; 32], wire: Vec<u8> },
}

pub struct Party {
    store: Box<dyn Storage>,
    role: Role,
    me: u32,
    identity: Option<KeyPair>,
    responder: Option<Responder>,
    /// The responder's encoding (its `to_bytes_unsealed`), kept between store writes: Bob's
    /// prekeys are most of his store and change only when a prekey is used or added. Dropped
    /// wherever the responder may change.
    responder_enc: Option<zeroize::Zeroizing<Vec<u8>>>,
    sessions: BTreeMap<u32, Session>,
    next_seq: BTreeMap<u32, u32>,
    outbox: Vec<OutMsg>,
    history: Vec<Entry>,
    seen_x3dh: VecDeque<[u8; 32]>,
    counters: Counters,
    // volatile
    /// SHA-256 of the messages accepted in this run (newest last): a copy is a replay, and is
    /// acknowledged again without the ratchet, however many DH ratchet steps happened since.
    accepted_hashes: VecDeque<[u8; 32]>,
    inflight: Option<(u64, InFlight)>,
    inbox: VecDeque<(u32, Vec<u8>)>,
    to_send: VecDeque<(u32, String)>,
    pending_out: Vec<(u32, Vec<u8>)>,
    outgoing: Vec<(u32, Vec<u8>)>,
    events: Vec<Event>,
    bundle: Option<PqxdhBundle>,
    dirty: bool,
    retry_after: Option<Instant>,
    pub retry: Duration,
    pub last_dh: Option<DhInfo>,
    /// The last batch's ML-KEM work: (jobs, host time on the worker).
    pub last_kem: Option<(u32, Duration)>,
    /// Bob: the reply to an accepted message, queued in the same store write as the acceptance
    /// (a crash can never lose a reply).
    pub auto_reply: Option<Box<dyn Fn(u32, &str) -> String + Send>>,
    /// Called between the pieces of work of one [`Self::tick`] (before each further frame, each
    /// text to encrypt, the store write): Bob on the device passes the core on there
    /// (`xous::yield_slice`), so a process that woke meanwhile (Alice's UI) need not wait for
    /// his whole tick or quantum. None: no pauses.
    pub pause: Option<fn()>,
    pub saves: u64,
    /// the store writes' time (hosted only: not measured on the device, where each clock
    /// reading is a call to the ticktimer service)
    pub save_time: Duration,
}

/// Wall-clock time of an entry in ms since 1970; on the device (which has no real-time clock
/// service in its image) ms since this process started.
#[cfg(not(target_os = "xous"))]
fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
#[cfg(target_os = "xous")]
fn unix_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

fn classify(e: &RError) -> Reject {
    match e {
        RError::Duplicate { .. } => Reject::Replay,
        RError::Authentication => Reject::Tampered,
        _ => Reject::Malformed,
    }
}

/// The error is about our side (no entropy yet, a session changed underneath): try again later.
fn transient(e: &RError) -> bool {
    matches!(e, RError::Rng(_) | RError::StalePending | RError::Dh(_))
}

impl Party {
    /// Alice: talks to `peer`, whose prekey bundle comes from the relay ([`Self::set_bundle`]).
    /// Loads the store at `path` if there is one.
    pub fn initiator(path: &Path, me: u32, peer: u32) -> Result<Party, StoreError> {
        Party::initiator_in(Box::new(FileStore(path.to_path_buf())), me, peer)
    }

    /// [`Self::initiator`] with its store in `store`.
    pub fn initiator_in(store: Box<dyn Storage>, me: u32, peer: u32) -> Result<Party, StoreError> {
        let mut p = Party::empty(store, me, Role::Initiator { peer });
        p.load()?;
        Ok(p)
    }

    /// Bob: answers prekey messages with `responder`'s keys. If the store exists its responder
    /// is used and `make` is not called.
    pub fn responder(path: &Path, me: u32, make: impl FnOnce() -> Result<Responder, String>) -> Result<Party, String> {
        Party::responder_in(Box::new(FileStore(path.to_path_buf())), me, make)
    }

    /// [`Self::responder`] with its store in `store`.
    pub fn responder_in(
        store: Box<dyn Storage>,
        me: u32,
        make: impl FnOnce() -> Result<Responder, String>,
    ) -> Result<Party, String> {
        let mut p = Party::empty(store, me, Role::Responder);
        p.load().map_err(|e| e.to_string())?;
        if p.responder.is_none() {
            p.responder = Some(make()?);
            p.responder_enc = None;
            p.dirty = true;
            p.save().map_err(|e| e.to_string())?;
        }
        Ok(p)
    }

    fn empty(store: Box<dyn Storage>, me: u32, role: Role) -> Party {
        Party {
            store,
            role,
            me,
            identity: None,
            responder: None,
            responder_enc: None,
            sessions: BTreeMap::new(),
            next_seq: BTreeMap::new(),
            outbox: Vec::new(),
            history: Vec::new(),
            seen_x3dh: VecDeque::new(),
            counters: Counters::default(),
            accepted_hashes: VecDeque::new(),
            inflight: None,
            inbox: VecDeque::new(),
            to_send: VecDeque::new(),
            pending_out: Vec::new(),
            outgoing: Vec::new(),
            events: Vec::new(),
            bundle: None,
            dirty: false,
            retry_after: None,
            retry: RETRY,
            last_dh: None,
            last_kem: None,
            auto_reply: None,
            pause: None,
            saves: 0,
            save_time: Duration::ZERO,
        }
    }

    pub fn me(&self) -> u32 {
        self.me
    }
    /// Where the store lives (for messages).
    pub fn store_desc(&self) -> String {
        self.store.describe()
    }
    pub fn history(&self) -> &[Entry] {
        &self.history
    }
    pub fn counters(&self) -> Counters {
        self.counters
    }
    pub fn outbox_len(&self) -> usize {
        self.outbox.len()
    }
    pub fn queued_texts(&self) -> usize {
        self.to_send.len()
    }
    pub fn dh_in_flight(&self) -> bool {
        self.inflight.is_some()
    }
    pub fn session(&self, peer: u32) -> Option<&Session> {
        self.sessions.get(&peer)
    }
    pub fn has_identity(&self) -> bool {
        self.identity.is_some()
    }
    pub fn responder_mut(&mut self) -> Option<&mut Responder> {
        self.dirty = true;
        self.responder_enc = None;
        self.responder.as_mut()
    }
    pub fn responder_keys(&self) -> Option<&Responder> {
        self.responder.as_ref()
    }
    /// Alice: does she still need the peer's bundle?
    pub fn needs_bundle(&self) -> Option<u32> {
        match self.role {
            Role::Initiator { peer } if self.bundle.is_none() && !self.sessions.contains_key(&peer) => Some(peer),
            _ => None,
        }
    }
    /// A PQXDH bundle from the relay: both signatures must verify and it must carry a PQ
    /// prekey (refused otherwise).
    pub fn set_bundle(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.set_verified_bundle(VerifiedBundle::check(bytes)?);
        Ok(())
    }
    /// A bundle checked elsewhere (e.g. on a network thread, off the UI's).
    pub fn set_verified_bundle(&mut self, b: VerifiedBundle) {
        self.bundle = Some(b.0);
    }

    /// A frame from the relay.
    pub fn deliver(&mut self, from: u32, data: Vec<u8>) {
        self.inbox.push_back((from, data));
    }

    /// Queues a text for `peer` (sent as soon as a session can send) and writes the store: once
    /// this returns Ok the text survives a crash. If the store cannot be written (e.g. it is
    /// full) the text is not queued: the caller still has it (the input line stays).
    ///
    /// When nothing is queued or in flight and the session can send, the text is encrypted at
    /// once and goes into the outbox in that same store write (one write per typed message,
    /// not one to queue it and one to encrypt it); its frame leaves with the next
    /// [`Self::tick`]. A write that fails undoes the encryption too: the session is back where
    /// it was and no ciphertext of that key exists outside this call.
    pub fn queue_text(&mut self, peer: u32, text: &str) -> Result<(), String> {
        check_text(text)?;
        let now = self.to_send.is_empty() && self.inflight.is_none() && self.retry_after.is_none();
        self.to_send.push_back((peer, text.to_string()));
        let undo = (now && self.can_encrypt()).then(|| self.undo_point(peer));
        if undo.is_some() {
            self.encrypt_next();
        }
        self.dirty = true;
        if let Err(e) = self.save() {
            match undo {
                Some(u) => self.undo(u),
                None => {
                    self.to_send.pop_back();
                }
            }
            return Err(e.to_string());
        }
        Ok(())
    }

    /// What [`Self::encrypt_next`] changes for `peer`, to undo it if the store write fails.
    fn undo_point(&self, peer: u32) -> Undo {
        Undo {
            peer,
            session: self.sessions.get(&peer).cloned(),
            next_seq: self.next_seq.get(&peer).copied(),
            outbox: self.outbox.len(),
            history: self.history.len(),
            oldest: (self.history.len() >= MAX_HISTORY).then(|| self.history[0].clone()),
            counters: self.counters,
            events: self.events.len(),
        }
    }

    fn undo(&mut self, u: Undo) {
        match u.session {
            Some(s) => self.sessions.insert(u.peer, s),
            None => self.sessions.remove(&u.peer),
        };
        match u.next_seq {
            Some(n) => self.next_seq.insert(u.peer, n),
            None => self.next_seq.remove(&u.peer),
        };
        let encrypted = self.outbox.len() > u.outbox;
        self.outbox.truncate(u.outbox);
        if let (true, Some(e)) = (encrypted, u.oldest) {
            // the entry pushed made the oldest one go
            self.history.pop();
            self.history.insert(0, e);
        }
        self.history.truncate(u.history);
        self.counters = u.counters;
        self.events.truncate(u.events);
        self.to_send.clear();
    }

    pub fn take_outgoing(&mut self) -> Vec<(u32, Vec<u8>)> {
        std::mem::take(&mut self.outgoing)
    }
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// One step of work; never blocks with an async runner and a pool RNG. Frames to send are
    /// available afterwards from [`Self::take_outgoing`] (only once the store holds the state
    /// they depend on).
    pub fn tick(&mut self, now: Instant, dh: &mut dyn DhRunner, rng: &mut dyn CryptoRngCore) -> Result<(), StoreError> {
        self.poll_inflight(dh);
        let waiting = self.retry_after.map(|t| now < t).unwrap_or(false);
        if !waiting {
            self.retry_after = None;
            if self.inflight.is_none() {
                self.setup(dh, rng);
            }
            let mut n = 0;
            while self.inflight.is_none() && n < INBOX_PER_TICK && self.retry_after.is_none() {
                let Some((from, data)) = self.inbox.pop_front() else { break };
                if n > 0 {
                    self.pause();
                }
                n += 1;
                self.handle_frame(from, data, dh, rng, now);
                // a synchronous runner finishes at once
                self.poll_inflight(dh);
            }
            let mut n = 0;
            while self.inflight.is_none() && n < INBOX_PER_TICK {
                if !self.can_encrypt() {
                    break;
                }
                self.pause();
                if !self.encrypt_next() {
                    break;
                }
                n += 1;
            }
        }
        if self.dirty {
            self.pause();
            self.save()?;
        }
        // the store holds everything these depend on: release them
        self.outgoing.append(&mut self.pending_out);
        for m in self.outbox.iter_mut() {
            let due = m.last_sent.map(|t| now.duration_since(t) >= self.retry).unwrap_or(true);
            if due {
                if m.last_sent.is_some() {
                    self.counters.retransmits += 1;
                    self.events.push(Event::Retransmit { peer: m.peer, seq: m.seq });
                }
                m.last_sent = Some(now);
                let mut f = Vec::with_capacity(m.wire.len() + 1);
                f.push(TAG_MSG);
                f.extend_from_slice(&m.wire);
                self.outgoing.push((m.peer, f));
            }
        }
        Ok(())
    }

    fn pause(&self) {
        if let Some(p) = self.pause {
            p();
        }
    }

    /// The next queued text can be encrypted now (its session can send).
    fn can_encrypt(&self) -> bool {
        self.to_send.front().is_some_and(|(peer, _)| self.sessions.get(peer).is_some_and(|s| s.can_send()))
    }

    /// How long a responder's owner may wait for an event (a frame, a finished DH batch: they
    /// wake it anyway) before [`Self::tick`] has work that only the clock brings: `Some(ZERO)`
    /// when there is work now, a retransmission's or a retry's due time, or `None` when only an
    /// event can bring work. An initiator's set-up (identity, session) is not counted: its owner
    /// ticks on its own clock (Alice's UI every frame). A store write that failed is retried
    /// after 100 ms.
    pub fn wait_hint(&self, now: Instant) -> Option<Duration> {
        if !self.pending_out.is_empty() {
            return Some(Duration::ZERO);
        }
        let mut best: Option<Duration> = self.dirty.then_some(Duration::from_millis(100));
        let mut at = |d: Duration| best = Some(best.map_or(d, |b| b.min(d)));
        for m in &self.outbox {
            match m.last_sent {
                None => return Some(Duration::ZERO),
                Some(t) => at((t + self.retry).saturating_duration_since(now)),
            }
        }
        match self.retry_after {
            // tick takes nothing from the inbox or the texts before then
            Some(t) if now < t => at(t - now),
            _ if self.inflight.is_none() => {
                if !self.inbox.is_empty() || self.can_encrypt() {
                    return Some(Duration::ZERO);
                }
            }
            _ => {}
        }
        best
    }

    fn setup(&mut self, dh: &mut dyn DhRunner, rng: &mut dyn CryptoRngCore) {
        let Role::Initiator { peer } = self.role else { return };
        if self.identity.is_none() {
            match ratchet::generate_secret(rng) {
                Ok(secret) => {
                    let t = dh.submit(vec![DhJob::public_key(&secret)], vec![]);
                    self.inflight = Some((t, InFlight::Identity { secret }));
                    self.poll_inflight(dh);
                }
                Err(_) => {} // no entropy yet: next tick
            }
            return;
        }
        if self.sessions.contains_key(&peer) {
            return;
        }
        let Some(bundle) = self.bundle.clone() else { return };
        match pqxdh::initiate(self.identity.as_ref().unwrap(), &bundle, rng) {
            Ok(pending) => {
                let t = dh.submit(pending.jobs().to_vec(), pending.kem_jobs().to_vec());
                self.inflight = Some((t, InFlight::Initiate { peer, pending }));
                self.poll_inflight(dh);
            }
            Err(e) if transient(&e) => {}
            Err(e) => {
                self.events.push(Event::Error(format!("PQXDH with {peer}: {e}; fetching the bundle again")));
                self.bundle = None;
            }
        }
    }

    fn poll_inflight(&mut self, dh: &mut dyn DhRunner) {
        let Some((ticket, _)) = &self.inflight else { return };
        let Some(r) = dh.poll(*ticket) else { return };
        let (_, job) = self.inflight.take().unwrap();
        let batch = match r {
            Ok(b) => b,
            Err(e) => {
                self.events.push(Event::Error(format!("DH failed: {e}; retrying")));
                // put the message back (if any) and wait a little
                match job {
                    InFlight::Decrypt { peer, wire, .. } | InFlight::Accept { peer, wire, .. } => {
                        self.inbox.push_front((peer, msg_frame(&wire)))
                    }
                    _ => {}
                }
                self.retry_after = Some(Instant::now() + Duration::from_millis(500));
                return;
            }
        };
        let info = DhInfo::from_batch(&batch);
        self.last_dh = Some(info);
        self.last_kem = (batch.kem_jobs > 0).then_some((batch.kem_jobs as u32, batch.kem_host));
        let kem = &batch.kem_outputs;
        self.counters.dh_steps += 1;
        let out = &batch.outputs;
        match job {
            InFlight::Identity { secret } => {
                if out.len() == 1 && out[0].iter().any(|&b| b != 0) {
                    self.identity = Some(KeyPair::from_parts(secret, PublicKey::from(*out[0])));
                    self.dirty = true;
                    self.events
                        .push(Event::Info("identity key generated (TRNG secret, public key on the engine)".into()));
                }
            }
            InFlight::Initiate { peer, pending } => match pending.complete_with_kem(out, kem) {
                Ok(s) => {
                    self.sessions.insert(peer, s);
                    self.dirty = true;
                    self.events.push(Event::SessionReady { peer });
                    self.events.push(Event::Info(format!(
                        "PQXDH session with {peer} set up ({} X25519 on the engine, ML-KEM-1024 encapsulation on the worker in {} us)",
                        info.jobs,
                        batch.kem_host.as_micros()
                    )));
                }
                Err(e) => {
                    self.events.push(Event::Error(format!("PQXDH with {peer}: {e}")));
                    self.bundle = None;
                }
            },
            InFlight::Decrypt { peer, pending, hash, wire } => {
                let session = self.sessions.get_mut(&peer).expect("a pending decrypt has its session");
                match session.complete_decrypt(pending, out) {
                    Ok(pt) => self.accept(peer, &pt, Some(info), hash),
                    Err(e) if transient(&e) => self.inbox.push_front((peer, msg_frame(&wire))),
                    Err(e) => self.reject(peer, &e, hash),
                }
            }
            InFlight::Accept { peer, pending, hash, ek, wire } => {
                self.responder_enc = None;
                let r = self.responder.as_mut().expect("a responder").complete_accept_with_kem(pending, out, kem);
                match r {
                    Ok((s, pt)) => {
                        self.sessions.insert(peer, s);
                        self.seen_x3dh.push_back(ek);
                        while self.seen_x3dh.len() > MAX_SEEN_X3DH {
                            self.seen_x3dh.pop_front();
                        }
                        self.events.push(Event::SessionReady { peer });
                        self.events.push(Event::BundleChanged);
                        self.accept(peer, &pt, Some(info), hash);
                    }
                    Err(e) if transient(&e) => self.inbox.push_front((peer, msg_frame(&wire))),
                    Err(e) => self.reject(peer, &e, hash),
                }
            }
        }
    }

    fn handle_frame(
        &mut self,
        from: u32,
        data: Vec<u8>,
        dh: &mut dyn DhRunner,
        rng: &mut dyn CryptoRngCore,
        _now: Instant,
    ) {
        match data.first() {
            Some(&TAG_ACK) if data.len() == 33 => {
                let h: [u8; 32] = data[1..].try_into().unwrap();
                if let Some(i) = self.outbox.iter().position(|m| m.peer == from && m.hash == h) {
                    let m = self.outbox.remove(i);
                    self.counters.acked += 1;
                    if let Some(e) =
                        self.history.iter_mut().rev().find(|e| e.dir == Dir::Out && e.peer == from && e.seq == m.seq)
                    {
                        e.acked = true;
                    }
                    self.events.push(Event::Acked { peer: from, seq: m.seq });
                    self.dirty = true;
                }
                // an acknowledgement matching nothing: already acknowledged (a copy), or damaged
            }
            Some(&TAG_MSG) => {
                let wire = &data[1..];
                let hash: [u8; 32] = Sha256::digest(wire).into();
                self.decrypt_incoming(from, wire, hash, dh, rng);
            }
            _ => {
                self.counters.rej_malformed += 1;
                self.dirty = true;
                self.events.push(Event::Rejected {
                    peer: from,
                    kind: Reject::Malformed,
                    why: "unknown frame type".into(),
                });
            }
        }
    }

    fn decrypt_incoming(
        &mut self,
        from: u32,
        wire: &[u8],
        hash: [u8; 32],
        dh: &mut dyn DhRunner,
        rng: &mut dyn CryptoRngCore,
    ) {
        // A copy of a message accepted in this run (its acknowledgement got lost): the ratchet
        // would refuse it too, as a duplicate while its chain is among the peer's last 32
        // ratchet keys, but with a failed tag (after a useless DH step) once more chains went
        // by; either way it is acknowledged again.
        if self.accepted_hashes.contains(&hash) {
            return self.reject(from, &RError::Duplicate { ratchet_key_prefix: [0; 4], n: 0 }, hash);
        }
        if matches!(self.role, Role::Responder) {
            match Envelope::parse(wire) {
                Err(e) => return self.reject(from, &e, hash),
                Ok(Envelope::Ratchet(_)) => {}
                // a prekey message (PQXDH, or X3DH from an older initiator)
                Ok(env) => {
                    let known = self.sessions.get(&from).map(|s| s.started_by(&env)).unwrap_or(false);
                    if !known {
                        let ek = env.x3dh().expect("a prekey message").ephemeral_key;
                        if self.seen_x3dh.contains(&ek) {
                            return self.reject(
                                from,
                                &RError::Duplicate {
                                    ratchet_key_prefix: [ek[0], ek[1], ek[2], ek[3]],
                                    n: env.ratchet().header.n,
                                },
                                hash,
                            );
                        }
                        let r = self.responder.as_ref().expect("a responder").accept(wire, rng);
                        match r {
                            Ok(pending) => {
                                let t = dh.submit(pending.jobs().to_vec(), pending.kem_jobs().to_vec());
                                self.inflight =
                                    Some((t, InFlight::Accept { peer: from, pending, hash, ek, wire: wire.to_vec() }));
                            }
                            Err(e) if transient(&e) => self.defer(from, wire),
                            Err(e) => self.reject(from, &e, hash),
                        }
                        return;
                    }
                }
            }
        }
        let Some(session) = self.sessions.get_mut(&from) else {
            return self.reject(from, &RError::Malformed("no session with this sender"), hash);
        };
        match session.decrypt(wire, rng) {
            Ok(Decrypted::Plaintext(pt)) => self.accept(from, &pt, None, hash),
            Ok(Decrypted::NeedsDh(pending)) => {
                let t = dh.submit(pending.jobs().to_vec(), vec![]);
                self.inflight = Some((t, InFlight::Decrypt { peer: from, pending, hash, wire: wire.to_vec() }));
            }
            Err(e) if transient(&e) => self.defer(from, wire),
            Err(e) => self.reject(from, &e, hash),
        }
    }

    /// No entropy yet: keep the message, try again shortly.
    fn defer(&mut self, from: u32, wire: &[u8]) {
        self.inbox.push_front((from, msg_frame(wire)));
        self.retry_after = Some(Instant::now() + Duration::from_millis(5));
    }

    fn accept(&mut self, peer: u32, pt: &[u8], dh: Option<DhInfo>, hash: [u8; 32]) {
        let (seq, text) = if pt.len() >= 4 {
            (u32::from_be_bytes(pt[..4].try_into().unwrap()), String::from_utf8_lossy(&pt[4..]).into_owned())
        } else {
            (0, String::from_utf8_lossy(pt).into_owned())
        };
        self.push_history(Entry { dir: Dir::In, peer, seq, text: text.clone(), unix_ms: unix_ms(), dh, acked: true });
        self.counters.accepted += 1;
        self.dirty = true;
        if let Some(f) = &self.auto_reply {
            let reply = f(seq, &text);
            if check_text(&reply).is_ok() {
                self.to_send.push_back((peer, reply));
            }
        }
        self.events.push(Event::Received { peer, seq, text, dh });
        self.pending_out.push((peer, ack_frame(&hash)));
        self.accepted_hashes.push_back(hash);
        while self.accepted_hashes.len() > MAX_ACCEPTED_HASHES {
            self.accepted_hashes.pop_front();
        }
    }

    fn reject(&mut self, peer: u32, e: &RError, hash: [u8; 32]) {
        let kind = classify(e);
        match kind {
            Reject::Replay => {
                self.counters.rej_replay += 1;
                // a copy of a message we have (or a resend whose acknowledgement got lost)
                self.pending_out.push((peer, ack_frame(&hash)));
            }
            Reject::Tampered => self.counters.rej_tampered += 1,
            Reject::Malformed => self.counters.rej_malformed += 1,
        }
        self.dirty = true;
        log::debug!("rejected a frame from {peer}: {e}");
        self.events.push(Event::Rejected { peer, kind, why: e.to_string() });
    }

    fn push_history(&mut self, e: Entry) {
        self.history.push(e);
        if self.history.len() > MAX_HISTORY {
            let extra = self.history.len() - MAX_HISTORY;
            self.history.drain(..extra);
        }
    }

    /// Encrypts the next queued text if its session can send; false if nothing was done.
    fn encrypt_next(&mut self) -> bool {
        let Some((peer, _)) = self.to_send.front() else { return false };
        let peer = *peer;
        let Some(session) = self.sessions.get_mut(&peer) else { return false };
        if !session.can_send() {
            return false;
        }
        let (_, text) = self.to_send.pop_front().unwrap();
        let seq = *self.next_seq.get(&peer).unwrap_or(&1);
        let mut pt = zeroize::Zeroizing::new(Vec::with_capacity(4 + text.len()));
        pt.extend_from_slice(&seq.to_be_bytes());
        pt.extend_from_slice(text.as_bytes());
        match session.encrypt(&pt) {
            Ok(wire) => {
                self.next_seq.insert(peer, seq + 1);
                let hash: [u8; 32] = Sha256::digest(&wire).into();
                self.outbox.push(OutMsg { peer, seq, wire, hash, last_sent: None });
                self.push_history(Entry { dir: Dir::Out, peer, seq, text, unix_ms: unix_ms(), dh: None, acked: false });
                self.counters.sent += 1;
                self.dirty = true;
                self.events.push(Event::Sent { peer, seq });
            }
            Err(e) => self.events.push(Event::Error(format!("encrypt: {e}"))),
        }
        true
    }

    // ---------------------------------------------------------------- persistence

    /// Writes the state (atomically) if it changed.
    pub fn save(&mut self) -> Result<(), StoreError> {
        // timed for the hosted statistics only: on the device each clock reading is a call to
        // the ticktimer service (0.1-0.2 ms), two per write on the party's thread
        #[cfg(not(target_os = "xous"))]
        let t0 = Instant::now();
        if self.responder_enc.is_none() {
            self.responder_enc = self.responder.as_ref().map(|r| r.to_bytes_unsealed());
        }
        let body = self.encode();
        self.store.store(&body.0)?;
        self.dirty = false;
        self.saves += 1;
        #[cfg(not(target_os = "xous"))]
        {
            self.save_time += t0.elapsed();
        }
        Ok(())
    }

    fn encode(&self) -> Writer {
        let mut w = Writer::default();
        w.u32(self.me);
        match &self.role {
            Role::Initiator { peer } => {
                w.u8(1);
                w.u32(*peer);
            }
            Role::Responder => {
                w.u8(2);
                w.u32(0);
            }
        }
        match &self.identity {
            Some(k) => {
                w.u8(1);
                w.raw(&k.secret.to_bytes());
                w.raw(k.public.as_bytes());
            }
            None => w.u8(0),
        }
        match (&self.responder, &self.responder_enc) {
            (Some(_), Some(enc)) => {
                w.u8(1);
                w.bytes(enc);
            }
            (Some(r), None) => {
                w.u8(1);
                w.bytes(&r.to_bytes_unsealed());
            }
            (None, _) => w.u8(0),
        }
        w.u32(self.sessions.len() as u32);
        // the ratchet states without their own SHA-256: the file store seals the whole body
        // (store::seal), the RAM store cannot tear it
        for (peer, s) in &self.sessions {
            w.u32(*peer);
            w.bytes(&s.to_bytes_unsealed());
        }
        w.u32(self.next_seq.len() as u32);
        for (peer, n) in &self.next_seq {
            w.u32(*peer);
            w.u32(*n);
        }
        w.u32(self.outbox.len() as u32);
        for m in &self.outbox {
            w.u32(m.peer);
            w.u32(m.seq);
            w.bytes(&m.wire);
        }
        w.u32(self.to_send.len() as u32);
        for (peer, text) in &self.to_send {
            w.u32(*peer);
            w.bytes(text.as_bytes());
        }
        w.u32(self.history.len() as u32);
        for e in &self.history {
            w.u8(match e.dir {
                Dir::In => 0,
                Dir::Out => 1,
            });
            w.u32(e.peer);
            w.u32(e.seq);
            w.u64(e.unix_ms);
            w.u8(e.acked as u8);
            w.bytes(e.text.as_bytes());
            match e.dh {
                Some(d) => {
                    w.u8(1);
                    w.u32(d.jobs);
                    w.u64(d.cycles);
                    w.u64(d.device_us);
                    w.u64(d.host_us);
                }
                None => w.u8(0),
            }
        }
        w.u32(self.seen_x3dh.len() as u32);
        for k in &self.seen_x3dh {
            w.raw(k);
        }
        let c = &self.counters;
        for v in [c.accepted, c.sent, c.acked, c.retransmits, c.dh_steps, c.rej_replay, c.rej_tampered, c.rej_malformed]
        {
            w.u64(v);
        }
        w
    }

    fn load(&mut self) -> Result<(), StoreError> {
        let Some(body) = self.store.load()? else { return Ok(()) };
        let body = &body[..];
        let corrupt = |what: &str, e: RError| StoreError::Corrupt(format!("{what}: {e}"));
        let mut r = Reader::new(body);
        let me = r.u32("party number")?;
        if me != self.me {
            return Err(StoreError::Corrupt(format!("the store belongs to party {me}, not {}", self.me)));
        }
        let role = r.u8("role")?;
        let peer = r.u32("peer")?;
        match (&self.role, role) {
            (Role::Initiator { peer: p }, 1) if *p == peer => {}
            (Role::Responder, 2) => {}
            _ => return Err(StoreError::Corrupt("the store belongs to another role or peer".into())),
        }
        if r.flag("identity")? {
            let s = StaticSecret::from(r.arr32("identity secret")?);
            let p = PublicKey::from(r.arr32("identity public")?);
            self.identity = Some(KeyPair::from_parts(s, p));
        }
        if r.flag("responder")? {
            self.responder = Some(Responder::from_bytes(r.bytes("responder")?).map_err(|e| corrupt("responder", e))?);
            self.responder_enc = None;
        }
        for _ in 0..r.count("sessions", 8)? {
            let peer = r.u32("session peer")?;
            let s = Session::from_bytes(r.bytes("session")?).map_err(|e| corrupt("session", e))?;
            self.sessions.insert(peer, s);
        }
        for _ in 0..r.count("sequence numbers", 8)? {
            let peer = r.u32("peer")?;
            let n = r.u32("next sequence number")?;
            self.next_seq.insert(peer, n);
        }
        for _ in 0..r.count("outbox", 12)? {
            let peer = r.u32("outbox peer")?;
            let seq = r.u32("outbox seq")?;
            let wire = r.bytes("outbox message")?.to_vec();
            let hash: [u8; 32] = Sha256::digest(&wire).into();
            self.outbox.push(OutMsg { peer, seq, wire, hash, last_sent: None });
        }
        for _ in 0..r.count("queued texts", 8)? {
            let peer = r.u32("queued peer")?;
            let text = String::from_utf8(r.bytes("queued text")?.to_vec())
                .map_err(|_| StoreError::Corrupt("queued text is not UTF-8".into()))?;
            self.to_send.push_back((peer, text));
        }
        for _ in 0..r.count("history", 27)? {
            let dir = match r.u8("direction")? {
                0 => Dir::In,
                1 => Dir::Out,
                v => return Err(StoreError::Corrupt(format!("history direction {v}"))),
            };
            let peer = r.u32("history peer")?;
            let seq = r.u32("history seq")?;
            let unix_ms = r.u64("history time")?;
            let acked = r.flag("history acked")?;
            let text = String::from_utf8(r.bytes("history text")?.to_vec())
                .map_err(|_| StoreError::Corrupt("history text is not UTF-8".into()))?;
            let dh = if r.flag("history DH")? {
                Some(DhInfo {
                    jobs: r.u32("DH jobs")?,
                    cycles: r.u64("DH cycles")?,
                    device_us: r.u64("DH device")?,
                    host_us: r.u64("DH host")?,
                })
            } else {
                None
            };
            self.history.push(Entry { dir, peer, seq, text, unix_ms, dh, acked });
        }
        for _ in 0..r.count("X3DH keys", 32)? {
            self.seen_x3dh.push_back(r.arr32("X3DH key")?);
        }
        let mut c = [0u64; 8];
        for v in c.iter_mut() {
            *v = r.u64("counters")?;
        }
        self.counters = Counters {
            accepted: c[0],
            sent: c[1],
            acked: c[2],
            retransmits: c[3],
            dh_steps: c[4],
            rej_replay: c[5],
            rej_tampered: c[6],
            rej_malformed: c[7],
        };
        r.finish()
    }
}

fn check_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_TEXT {
        return Err(format!("message too long: {} bytes, at most {MAX_TEXT}", text.len()));
    }
    if text.is_empty() {
        return Err("empty message".into());
    }
    Ok(())
}

fn msg_frame(wire: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(wire.len() + 1);
    f.push(TAG_MSG);
    f.extend_from_slice(wire);
    f
}

fn ack_frame(hash: &[u8; 32]) -> Vec<u8> {
    let mut f = Vec::with_capacity(33);
    f.push(TAG_ACK);
    f.extend_from_slice(hash);
    f
}
