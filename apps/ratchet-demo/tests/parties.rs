//! Alice and Bob over the relay's network model with every fault on, natively (x25519-dalek,
//! OsRng): reliable delivery, rejection of corrupted and replayed frames, and crash recovery from
//! the store. The hosted runs (cargo xtask smoke / test) do the same over the real services.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand_core::OsRng;
use ratchet::{CpuKem, DalekDh, KeyPair, Responder};
use ratchet_demo::dh::{dalek_fn, AsyncRunner, Device, DhRunner, Pacing, SyncRunner};
use ratchet_demo::party::{Dir, Event, Party, VerifiedBundle};
use ratchet_demo::relay_api::Faults;
use ratchet_demo::relay_net::Net;
use ratchet_demo::{ALICE, BOB};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("chat-parties-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn make_bob(path: &std::path::Path) -> Party {
    let mut p = Party::responder(path, BOB, || {
        let id = KeyPair::generate(&mut OsRng, &mut DalekDh).map_err(|e| e.to_string())?;
        let mut r = Responder::generate(id, 64, &mut OsRng, &mut DalekDh).map_err(|e| e.to_string())?;
        // PQXDH: a last-resort ML-KEM-1024 prekey and a few one-time ones (the sessions of the
        // crash tests use them up and then the last-resort one)
        r.add_pq_prekeys_with(1, false, &mut OsRng, &mut CpuKem).map_err(|e| e.to_string())?;
        r.add_pq_prekeys_with(4, true, &mut OsRng, &mut CpuKem).map_err(|e| e.to_string())?;
        Ok(r)
    })
    .unwrap();
    p.auto_reply = Some(Box::new(|seq, text| format!("re {seq}: {text}")));
    p.retry = Duration::from_millis(30);
    p
}

fn make_alice(path: &std::path::Path) -> Party {
    let mut p = Party::initiator(path, ALICE, BOB).unwrap();
    p.retry = Duration::from_millis(30);
    p
}

fn runner(sync: bool) -> Box<dyn DhRunner> {
    let dev = Device::new(Pacing::Off { clock_hz: 0 });
    if sync {
        Box::new(SyncRunner::new(dalek_fn(), dev))
    } else {
        Box::new(AsyncRunner::new(dalek_fn(), dev))
    }
}

struct World {
    net: Net,
    t0: Instant,
    alice: Party,
    bob: Party,
    da: Box<dyn DhRunner>,
    db: Box<dyn DhRunner>,
    pa: PathBuf,
    pb: PathBuf,
    alice_sent: u32,
}

impl World {
    fn new(name: &str, faults: Faults, seed: u64) -> World {
        let d = dir(name);
        let (pa, pb) = (d.join("alice.state"), d.join("bob.state"));
        let mut net = Net::new(seed);
        net.set_faults(faults);
        let bob = make_bob(&pb);
        net.put_bundle(BOB, &bob.responder_keys().unwrap().pqxdh_bundle().encode()).unwrap();
        World {
            net,
            t0: Instant::now(),
            alice: make_alice(&pa),
            bob,
            da: runner(false),
            db: runner(true),
            pa,
            pb,
            alice_sent: 0,
        }
    }

    fn now_ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// One round: both parties tick, frames go through the network.
    fn step(&mut self) {
        if let Some(peer) = self.alice.needs_bundle() {
            if let Ok(b) = self.net.get_bundle(peer) {
                self.alice.set_bundle(&b.to_vec()).unwrap();
            }
        }
        let now = Instant::now();
        self.alice.tick(now, self.da.as_mut(), &mut OsRng).unwrap();
        self.bob.tick(now, self.db.as_mut(), &mut OsRng).unwrap();
        for e in self.bob.take_events() {
            match e {
                Event::BundleChanged => {
                    let b = self.bob.responder_keys().unwrap().pqxdh_bundle().encode();
                    self.net.put_bundle(BOB, &b).unwrap();
                }
                _ => {}
            }
        }
        self.alice.take_events();
        let ms = self.now_ms();
        for (to, f) in self.alice.take_outgoing() {
            self.net.send(ALICE, to, &f, ms).unwrap();
        }
        for (to, f) in self.bob.take_outgoing() {
            self.net.send(BOB, to, &f, ms).unwrap();
        }
        while let Some(p) = self.net.recv(ALICE, ms).unwrap() {
            self.alice.deliver(p.from, p.data);
        }
        while let Some(p) = self.net.recv(BOB, ms).unwrap() {
            self.bob.deliver(p.from, p.data);
        }
        std::thread::sleep(Duration::from_micros(200));
    }

    fn send_alice(&mut self) {
        self.alice_sent += 1;
        let n = self.alice_sent;
        self.alice.queue_text(BOB, &format!("message {n} from Alice")).unwrap();
    }

    fn done(&self, n: u32) -> bool {
        let got_b = self.bob.history().iter().filter(|e| e.dir == Dir::In).count() as u32;
        let got_a = self.alice.history().iter().filter(|e| e.dir == Dir::In).count() as u32;
        got_b >= n && got_a >= n && self.alice.outbox_len() == 0 && self.bob.outbox_len() == 0
    }

    /// Every message arrived exactly once, with the text that was sent.
    fn check(&self, n: u32) {
        let mut at_bob: BTreeMap<u32, u32> = BTreeMap::new();
        for e in self.bob.history().iter().filter(|e| e.dir == Dir::In) {
            assert_eq!(e.text, format!("message {} from Alice", e.seq), "Bob accepted a text that was not sent");
            *at_bob.entry(e.seq).or_default() += 1;
        }
        assert_eq!(at_bob.len() as u32, n, "Bob got {} distinct messages of {n}", at_bob.len());
        assert!(at_bob.values().all(|&c| c == 1), "a message accepted twice at Bob: {at_bob:?}");
        let mut at_alice: BTreeMap<u32, u32> = BTreeMap::new();
        for e in self.alice.history().iter().filter(|e| e.dir == Dir::In) {
            let want_prefix = "re ";
            assert!(e.text.starts_with(want_prefix), "{:?}", e.text);
            *at_alice.entry(e.seq).or_default() += 1;
        }
        assert_eq!(at_alice.len() as u32, n);
        assert!(at_alice.values().all(|&c| c == 1), "a reply accepted twice at Alice");
    }
}

#[test]
fn two_hundred_messages_each_way_through_every_fault() {
    let faults = Faults { drop: 15, reorder: 15, duplicate: 15, corrupt: 15 };
    let mut w = World::new("faults", faults, 42);
    let n = 200;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !w.done(n) {
        assert!(Instant::now() < deadline, "not done: alice {:?} bob {:?}", w.alice.counters(), w.bob.counters());
        if w.alice_sent < n && w.alice.queued_texts() == 0 && w.alice.outbox_len() < 4 {
            w.send_alice();
        }
        w.step();
    }
    w.check(n);
    let (ca, cb) = (w.alice.counters(), w.bob.counters());
    let s = w.net.stats();
    eprintln!("alice {ca:?}\nbob {cb:?}\nrelay {s:?}");
    assert!(s.corrupted > 0 && s.duplicated > 0 && s.dropped > 0 && s.reordered > 0);
    assert!(ca.rej_replay + cb.rej_replay > 0, "no replay rejected");
    assert!(ca.rej_tampered + cb.rej_tampered + ca.rej_malformed + cb.rej_malformed > 0, "no corruption rejected");
    assert!(ca.dh_steps > 10 && cb.dh_steps > 10, "DH ratchet steps: alice {} bob {}", ca.dh_steps, cb.dh_steps);
    // the sessions were set up with PQXDH; Bob keeps its header, Alice dropped hers once he
    // answered
    let (sa, sb) = (w.alice.session(BOB).unwrap(), w.bob.session(ALICE).unwrap());
    assert!(sa.is_pqxdh() && sb.is_pqxdh());
    assert!(sa.pq_header().is_none() && sb.pq_header().is_some());
}

/// Alice refuses a bundle without a PQ prekey (an X3DH bundle, or a PQXDH one without it) and
/// one whose PQ prekey signature fails: PQXDH or nothing.
#[test]
fn alice_refuses_bundles_without_a_valid_pq_prekey() {
    let d = dir("bundles");
    let bob = make_bob(&d.join("bob.state"));
    let mut alice = make_alice(&d.join("alice.state"));
    let keys = bob.responder_keys().unwrap();
    let e = alice.set_bundle(&keys.bundle().encode()).unwrap_err();
    assert!(e.contains("unknown message type byte 0x03"), "{e}");
    let mut b = keys.pqxdh_bundle();
    b.pq_prekey.as_mut().unwrap().signature[0] ^= 1;
    assert!(alice.set_bundle(&b.encode()).unwrap_err().contains("post-quantum prekey signature"));
    b.pq_prekey = None;
    assert!(alice.set_bundle(&b.encode()).unwrap_err().contains("PQXDH requires one"));
    assert_eq!(alice.needs_bundle(), Some(BOB));
    // checked elsewhere (the device checks it on its network thread): the same refusals
    b.pq_prekey = keys.pqxdh_bundle().pq_prekey;
    b.signature[0] ^= 1;
    assert!(VerifiedBundle::check(&b.encode()).is_err());
    assert_eq!(alice.needs_bundle(), Some(BOB));
    alice.set_verified_bundle(VerifiedBundle::check(&keys.pqxdh_bundle().encode()).unwrap());
    assert_eq!(alice.needs_bundle(), None);
    let mut alice2 = make_alice(&d.join("alice2.state"));
    alice2.set_bundle(&keys.pqxdh_bundle().encode()).unwrap();
    assert_eq!(alice2.needs_bundle(), None);
}

#[test]
fn crashes_lose_nothing_and_accept_nothing_twice() {
    let faults = Faults { drop: 10, reorder: 10, duplicate: 10, corrupt: 5 };
    let mut w = World::new("crash", faults, 7);
    let n = 60;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut crashes = 0;
    let mut round = 0u64;
    // every sending key ever used, to show no key is reused after a restart
    let mut keys_alice = std::collections::HashSet::new();
    // at least three crashes even when the messages get through in fewer rounds (a loaded
    // machine gives each round more time: more retransmissions per round)
    while !w.done(n) || crashes < 3 {
        assert!(Instant::now() < deadline, "not done: alice {:?} bob {:?}", w.alice.counters(), w.bob.counters());
        round += 1;
        if w.alice_sent < n && w.alice.queued_texts() == 0 && w.alice.outbox_len() < 3 {
            w.send_alice();
        }
        w.step();
        if let Some(s) = w.alice.session(BOB) {
            // (ratchet key, n) pairs already used for sending: a restart must never go back
            keys_alice.insert((*s.our_ratchet_key().as_bytes(), s.sending_chain_length()));
        }
        // "kill -9": drop a party without letting it finish (DH in flight, frames not yet sent,
        // queued texts lost from memory), then restart it from its store.
        if round % 37 == 0 {
            crashes += 1;
            if round % 74 == 0 {
                w.bob = make_bob(&w.pb);
            } else {
                let before = w.alice.session(BOB).map(|s| (*s.our_ratchet_key().as_bytes(), s.sending_chain_length()));
                w.alice = make_alice(&w.pa);
                let after = w.alice.session(BOB).map(|s| (*s.our_ratchet_key().as_bytes(), s.sending_chain_length()));
                // the restored sending chain is where the store left it: never behind a key already used
                if let (Some(b), Some(a)) = (before, after) {
                    assert!(a.0 != b.0 || a.1 == b.1, "sending chain went back after a restart");
                }
            }
            w.da = runner(false);
        }
    }
    assert!(crashes >= 3, "only {crashes} crashes");
    w.check(n);
}

#[test]
fn a_damaged_store_is_refused_with_a_clear_error() {
    let d = dir("damaged");
    let p = d.join("alice.state");
    let mut a = make_alice(&p);
    a.queue_text(BOB, "x").unwrap();
    a.save().unwrap();
    let good = std::fs::read(&p).unwrap();
    for (i, bit) in [(0usize, 0u8), (7, 3), (good.len() / 2, 5), (good.len() - 1, 7)] {
        let mut bad = good.clone();
        bad[i] ^= 1 << bit;
        std::fs::write(&p, &bad).unwrap();
        let e = Party::initiator(&p, ALICE, BOB).err().expect("damaged store accepted");
        let msg = e.to_string();
        assert!(msg.contains("damaged") || msg.contains("version"), "{msg}");
    }
    std::fs::write(&p, &good[..good.len() - 10]).unwrap();
    assert!(Party::initiator(&p, ALICE, BOB).is_err());
    // a store of another party is refused too
    std::fs::write(&p, &good).unwrap();
    assert!(Party::initiator(&p, 3, BOB).err().unwrap().to_string().contains("party"));
}

/// The store holds the ratchet states without their own SHA-256: the file's seal covers them.
/// A live store (a PQXDH session after an exchange, the outbox, the history) with any one bit
/// flipped anywhere is refused with a clear error.
#[test]
fn the_store_seal_covers_the_sessions_inside_it() {
    let mut w = World::new("sealed", Faults::default(), 3);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !w.done(3) {
        assert!(Instant::now() < deadline, "not done");
        if w.alice_sent < 3 && w.alice.queued_texts() == 0 && w.alice.outbox_len() == 0 {
            w.send_alice();
        }
        w.step();
    }
    w.alice.save().unwrap();
    let good = std::fs::read(&w.pa).unwrap();
    let restored = make_alice(&w.pa);
    assert!(restored.session(BOB).unwrap().to_bytes() == w.alice.session(BOB).unwrap().to_bytes());
    assert!(w.alice.session(BOB).unwrap().pq_header().is_none(), "Alice dropped the PQXDH header");
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 1 << (i % 8);
        std::fs::write(&w.pa, &bad).unwrap();
        let e = Party::initiator(&w.pa, ALICE, BOB).err().unwrap_or_else(|| panic!("byte {i} flipped: accepted"));
        let msg = e.to_string();
        assert!(msg.contains("damaged") || msg.contains("version"), "byte {i}: {msg}");
    }
    std::fs::write(&w.pa, &good).unwrap();
}

/// The largest chat frame, a PQXDH prekey message (one-time curve prekey present) of the
/// longest text, fits a relay frame (docs/chat.md quotes its size), and so does the bundle.
#[test]
fn the_largest_pqxdh_frame_fits_the_relay() {
    use ratchet_demo::party::{MAX_TEXT, TAG_MSG};
    use ratchet_demo::relay_api::FRAME_DATA;
    let d = dir("frames");
    let bob = make_bob(&d.join("bob.state"));
    let bundle = bob.responder_keys().unwrap().pqxdh_bundle();
    assert!(bundle.one_time_prekey.is_some());
    assert!(bundle.encode().len() <= FRAME_DATA);
    let id = KeyPair::generate(&mut OsRng, &mut DalekDh).unwrap();
    let mut s = ratchet::pqxdh::initiate_with(&id, &bundle, &mut OsRng, &mut DalekDh, &mut CpuKem).unwrap();
    // plaintext = seq u32 | the longest text
    let wire = s.encrypt(&vec![b'x'; 4 + MAX_TEXT]).unwrap();
    let frame = 1 + wire.len();
    assert_eq!(TAG_MSG, 1);
    assert_eq!(frame, 2_304);
    assert!(frame <= FRAME_DATA);
    assert!(include_str!("../../../docs/chat.md").contains("2,304 bytes"));
}

/// A copy of a message Bob accepted long ago (more DH ratchet steps since than the ratchet
/// remembers old chains for: its acknowledgement was lost every time) is acknowledged again,
/// without a DH step; before, the ratchet refused it with a failed tag and Alice resent it
/// forever.
#[test]
fn an_old_copy_is_acknowledged_again_without_the_ratchet() {
    let mut w = World::new("old-copy", Faults::default(), 7);
    // the first message's frame, as Alice sends it
    w.send_alice();
    let mut first = None;
    let deadline = Instant::now() + Duration::from_secs(30);
    while first.is_none() {
        assert!(Instant::now() < deadline);
        if let Some(peer) = w.alice.needs_bundle() {
            let b = w.net.get_bundle(peer).unwrap().to_vec();
            w.alice.set_bundle(&b).unwrap();
        }
        w.alice.tick(Instant::now(), w.da.as_mut(), &mut OsRng).unwrap();
        for (to, f) in w.alice.take_outgoing() {
            first = Some(f.clone());
            w.net.send(ALICE, to, &f, 0).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let first = first.unwrap();
    // 40 more messages, one at a time: each reply and each message starts a new chain
    let n = 41;
    while !w.done(n) {
        assert!(Instant::now() < deadline, "not done");
        if w.alice_sent < n && w.alice.queued_texts() == 0 && w.alice.outbox_len() == 0 {
            w.send_alice();
        }
        w.step();
    }
    let before = w.bob.counters();
    assert!(before.dh_steps > 33, "more chains than the ratchet remembers: {before:?}");
    w.bob.deliver(ALICE, first.clone());
    w.bob.tick(Instant::now(), w.db.as_mut(), &mut OsRng).unwrap();
    let after = w.bob.counters();
    assert_eq!(after.rej_replay, before.rej_replay + 1);
    assert_eq!(
        (after.dh_steps, after.rej_tampered, after.accepted),
        (before.dh_steps, before.rej_tampered, before.accepted)
    );
    use sha2::Digest;
    let hash: [u8; 32] = sha2::Sha256::digest(&first[1..]).into();
    let mut ack = vec![ratchet_demo::party::TAG_ACK];
    ack.extend_from_slice(&hash);
    assert!(w.bob.take_outgoing().iter().any(|(to, f)| *to == ALICE && *f == ack), "no acknowledgement");
}

/// A store that fills up (the device keeps its store in a bounded RAM region): a text that
/// cannot be stored is refused with a clear message and not queued (the caller keeps it), no
/// frame leaves whose state could not be stored, and nothing Bob accepted is lost or doubled.
#[test]
fn a_full_store_refuses_texts_and_releases_no_frame_it_could_not_store() {
    use ratchet_demo::store::RamStore;
    let mut w = World::new("full-store", Faults::default(), 11);
    w.alice = Party::initiator_in(Box::new(RamStore::new(16 * 1024)), ALICE, BOB).unwrap();
    w.alice.retry = Duration::from_millis(30);
    let pad = "x".repeat(400);
    let mut queued = 0u32;
    let mut refused = None;
    let mut tick_full = 0u32;
    'outer: for n in 1..=100u32 {
        match w.alice.queue_text(BOB, &format!("message {n} {pad}")) {
            Ok(()) => queued = n,
            Err(e) => {
                assert_eq!(w.alice.queued_texts(), 0, "a refused text was queued");
                refused = Some(e);
                break;
            }
        }
        for _ in 0..5_000 {
            if let Some(peer) = w.alice.needs_bundle() {
                if let Ok(b) = w.net.get_bundle(peer) {
                    w.alice.set_bundle(&b.to_vec()).unwrap();
                }
            }
            let now = Instant::now();
            if let Err(e) = w.alice.tick(now, w.da.as_mut(), &mut OsRng) {
                assert!(e.to_string().contains("store full"), "{e}");
                tick_full += 1;
                // nothing whose state is not stored may leave
                assert!(w.alice.take_outgoing().is_empty(), "frames released after a failed store write");
                if tick_full > 20 {
                    break 'outer;
                }
            }
            w.bob.tick(now, w.db.as_mut(), &mut OsRng).unwrap();
            w.alice.take_events();
            w.bob.take_events();
            let ms = w.now_ms();
            for (to, f) in w.alice.take_outgoing() {
                w.net.send(ALICE, to, &f, ms).unwrap();
            }
            for (to, f) in w.bob.take_outgoing() {
                w.net.send(BOB, to, &f, ms).unwrap();
            }
            while let Some(p) = w.net.recv(ALICE, ms).unwrap() {
                w.alice.deliver(p.from, p.data);
            }
            while let Some(p) = w.net.recv(BOB, ms).unwrap() {
                w.bob.deliver(p.from, p.data);
            }
            let answered = w.alice.history().iter().filter(|e| e.dir == Dir::In).count() as u32;
            if answered >= n && w.alice.outbox_len() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let e =
        refused.or_else(|| (tick_full > 0).then(|| "store full during a tick".into())).expect("16 KiB never filled up");
    assert!(e.contains("store full"), "{e}");
    assert!(queued >= 2, "the store filled after {queued} messages");
    let mut seen = BTreeMap::new();
    for e in w.bob.history().iter().filter(|e| e.dir == Dir::In) {
        assert_eq!(e.text, format!("message {} {pad}", e.seq));
        assert!(e.seq <= queued, "Bob got #{} which was never queued", e.seq);
        *seen.entry(e.seq).or_insert(0) += 1;
    }
    assert!(seen.values().all(|&c| c == 1), "a message accepted twice: {seen:?}");
}

/// A responder says how long its owner may wait for an event: nothing to do (None), a frame
/// to handle now (zero), a reply waiting for its acknowledgement (its retransmission's time);
/// and his tick pauses between its pieces of work.
#[test]
fn a_responder_says_how_long_it_may_wait_and_pauses_between_pieces_of_work() {
    let mut w = World::new("wait-hint", Faults::default(), 9);
    // longer than a tick takes here (a debug build's PQXDH acceptance): no retransmission due yet
    w.bob.retry = Duration::from_secs(60);
    static PAUSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    fn pause() {
        PAUSES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    w.bob.pause = Some(pause);
    assert_eq!(w.bob.wait_hint(Instant::now()), None);
    w.send_alice();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut sent = false;
    while !sent {
        assert!(Instant::now() < deadline, "Alice sent nothing");
        if let Some(peer) = w.alice.needs_bundle() {
            let b = w.net.get_bundle(peer).unwrap().to_vec();
            w.alice.set_bundle(&b).unwrap();
        }
        w.alice.tick(Instant::now(), w.da.as_mut(), &mut OsRng).unwrap();
        for (_, f) in w.alice.take_outgoing() {
            w.bob.deliver(ALICE, f);
            sent = true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(w.bob.wait_hint(Instant::now()), Some(Duration::ZERO), "a frame waits in the inbox");
    w.bob.tick(Instant::now(), w.db.as_mut(), &mut OsRng).unwrap();
    let out = w.bob.take_outgoing();
    assert!(!out.is_empty(), "Bob sent no reply");
    // his tick paused between its pieces: before encrypting the reply and before the store write
    assert!(PAUSES.load(std::sync::atomic::Ordering::SeqCst) >= 2, "Bob's tick never paused");
    let h = w.bob.wait_hint(Instant::now()).expect("his reply waits for its acknowledgement");
    assert!(h > Duration::ZERO && h <= w.bob.retry, "{h:?}");
    for (to, f) in out {
        w.net.send(BOB, to, &f, w.now_ms()).unwrap();
    }
    while !w.done(1) {
        assert!(Instant::now() < deadline, "not done");
        w.step();
    }
    w.bob.tick(Instant::now(), w.db.as_mut(), &mut OsRng).unwrap();
    w.bob.take_outgoing();
    assert_eq!(w.bob.wait_hint(Instant::now()), None, "nothing left but events");
}

/// A store that can be made to refuse writes (as a full one does), shared with the test.
struct SwitchStore {
    inner: ratchet_demo::store::RamStore,
    refuse: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ratchet_demo::store::Storage for SwitchStore {
    fn load(&self) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, ratchet_demo::store::StoreError> {
        self.inner.load()
    }
    fn store(&mut self, body: &[u8]) -> Result<(), ratchet_demo::store::StoreError> {
        if self.refuse.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ratchet_demo::store::StoreError::Full { need: body.len(), cap: 0 });
        }
        self.inner.store(body)
    }
    fn describe(&self) -> String {
        "switch".into()
    }
}

/// A text typed while its session can send is encrypted in the store write that queues it
/// (one write, not two); when that write fails the encryption is undone: the session, the
/// outbox, the history and the counters are as before, no frame leaves, and the same text
/// typed again later is sent once with the next key.
#[test]
fn a_text_is_encrypted_in_the_write_that_queues_it_and_undone_if_that_write_fails() {
    use std::sync::atomic::Ordering;
    let refuse = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut w = World::new("queue-undo", Faults::default(), 5);
    let store = SwitchStore { inner: ratchet_demo::store::RamStore::new(1 << 20), refuse: refuse.clone() };
    w.alice = Party::initiator_in(Box::new(store), ALICE, BOB).unwrap();
    w.alice.retry = Duration::from_millis(30);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !w.done(1) {
        assert!(Instant::now() < deadline, "not done");
        if w.alice_sent < 1 && w.alice.queued_texts() == 0 {
            w.send_alice();
        }
        w.step();
    }
    // the session can send and nothing is in flight
    let s0 = w.alice.session(BOB).unwrap().to_bytes();
    let ns0 = w.alice.session(BOB).unwrap().sending_chain_length();
    let (c0, h0, saves0) = (w.alice.counters(), w.alice.history().len(), w.alice.saves);
    refuse.store(true, Ordering::SeqCst);
    let e = w.alice.queue_text(BOB, "message 2 from Alice").unwrap_err();
    assert!(e.contains("store full"), "{e}");
    assert!(w.alice.session(BOB).unwrap().to_bytes() == s0, "the encryption was not undone");
    assert_eq!(
        (w.alice.counters(), w.alice.history().len(), w.alice.outbox_len(), w.alice.queued_texts()),
        (c0, h0, 0, 0)
    );
    assert!(w.alice.take_events().iter().all(|e| !matches!(e, Event::Sent { .. })), "a Sent event of an undone text");
    let _ = w.alice.tick(Instant::now(), w.da.as_mut(), &mut OsRng);
    assert!(w.alice.take_outgoing().is_empty(), "a frame left whose state was never stored");
    // the store takes writes again: the text is encrypted in the one write that queues it
    refuse.store(false, Ordering::SeqCst);
    let saves1 = w.alice.saves;
    w.alice.queue_text(BOB, "message 2 from Alice").unwrap();
    w.alice_sent = 2;
    assert_eq!(w.alice.saves, saves1 + 1, "one store write");
    assert!(saves1 >= saves0);
    assert_eq!((w.alice.outbox_len(), w.alice.queued_texts()), (1, 0), "encrypted at once");
    assert_eq!(w.alice.session(BOB).unwrap().sending_chain_length(), ns0 + 1, "the next key, used once");
    while !w.done(2) {
        assert!(Instant::now() < deadline, "not done");
        w.step();
    }
    w.check(2);
}
