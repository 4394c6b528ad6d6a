//! The relay's network model, without the kernel: mailboxes, a prekey-bundle directory and fault
//! injection. The relay server (bin chat-relay) wraps it in IPC.
//!
//! Faults, each an independent percentage per frame sent:
//! - drop: the frame vanishes;
//! - corrupt: one random bit of the frame's bytes flips (anywhere: type byte, header, body, tag);
//! - duplicate: a copy is delivered again later (after 1-4 more frames to that mailbox, or after
//!   [`HOLD_MS`]), like a replay;
//! - reorder: the frame is held back and delivered after 1-4 later frames (or after [`HOLD_MS`]).
//!
//! The randomness is a seeded xorshift generator: this simulates a network, it protects nothing,
//! and a fixed seed makes a scripted run reproducible.

use std::collections::{BTreeMap, VecDeque};

use crate::relay_api::{Faults, RelayStats, Status, FRAME_DATA, MAX_MAILBOX, MAX_QUEUE};

/// A held-back frame is released at the latest after this many milliseconds.
pub const HOLD_MS: u64 = 400;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub from: u32,
    pub data: Vec<u8>,
}

struct Held {
    to: u32,
    pkt: Packet,
    /// frames to `to` still to pass before this one is released
    after: u32,
    /// release time at the latest (ms)
    deadline: u64,
}

pub struct Net {
    boxes: BTreeMap<u32, VecDeque<Packet>>,
    held: Vec<Held>,
    bundles: BTreeMap<u32, Vec<u8>>,
    faults: Faults,
    rng: u64,
    stats: RelayStats,
}

fn check_mailbox(m: u32) -> Result<(), Status> {
    if m == 0 || m > MAX_MAILBOX {
        Err(Status::BadMailbox)
    } else {
        Ok(())
    }
}

impl Net {
    pub fn new(seed: u64) -> Net {
        Net {
            boxes: BTreeMap::new(),
            held: Vec::new(),
            bundles: BTreeMap::new(),
            faults: Faults::default(),
            rng: seed | 1,
            stats: RelayStats::default(),
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn roll(&mut self, percent: u8) -> bool {
        percent > 0 && (self.next() % 100) < percent as u64
    }

    pub fn set_faults(&mut self, f: Faults) {
        self.faults = f;
    }
    pub fn faults(&self) -> Faults {
        self.faults
    }

    pub fn stats(&self) -> RelayStats {
        let mut s = self.stats;
        s.queued = self.boxes.values().map(|q| q.len() as u64).sum::<u64>() + self.held.len() as u64;
        s.drop = self.faults.drop as u32;
        s.reorder = self.faults.reorder as u32;
        s.duplicate = self.faults.duplicate as u32;
        s.corrupt = self.faults.corrupt as u32;
        s
    }

    pub fn put_bundle(&mut self, owner: u32, bundle: &[u8]) -> Result<(), Status> {
        check_mailbox(owner)?;
        if bundle.is_empty() || bundle.len() > FRAME_DATA {
            return Err(Status::BadLength);
        }
        self.bundles.insert(owner, bundle.to_vec());
        Ok(())
    }

    pub fn get_bundle(&self, owner: u32) -> Result<&[u8], Status> {
        check_mailbox(owner)?;
        self.bundles.get(&owner).map(|b| &b[..]).ok_or(Status::NoBundle)
    }

    /// A frame from `from` to `to` at time `now_ms`; faults apply.
    pub fn send(&mut self, from: u32, to: u32, data: &[u8], now_ms: u64) -> Result<(), Status> {
        check_mailbox(from)?;
        check_mailbox(to)?;
        if data.is_empty() || data.len() > FRAME_DATA {
            return Err(Status::BadLength);
        }
        let waiting =
            self.boxes.get(&to).map(|q| q.len()).unwrap_or(0) + self.held.iter().filter(|h| h.to == to).count();
        if waiting >= MAX_QUEUE {
            self.stats.refused += 1;
            return Err(Status::Full);
        }
        self.stats.sent += 1;
        // frames held for `to` move one step closer to release
        self.release(now_ms, Some(to));
        if self.roll(self.faults.drop) {
            self.stats.dropped += 1;
            return Ok(());
        }
        let mut pkt = Packet { from, data: data.to_vec() };
        if self.roll(self.faults.corrupt) {
            let bit = (self.next() % (pkt.data.len() as u64 * 8)) as usize;
            pkt.data[bit / 8] ^= 1 << (bit % 8);
            self.stats.corrupted += 1;
        }
        if self.roll(self.faults.duplicate) {
            let after = 1 + (self.next() % 4) as u32;
            self.held.push(Held { to, pkt: pkt.clone(), after, deadline: now_ms + HOLD_MS });
            self.stats.duplicated += 1;
        }
        if self.roll(self.faults.reorder) {
            let after = 1 + (self.next() % 4) as u32;
            self.held.push(Held { to, pkt, after, deadline: now_ms + HOLD_MS });
            self.stats.reordered += 1;
        } else {
            self.boxes.entry(to).or_default().push_back(pkt);
        }
        Ok(())
    }

    /// Moves held frames whose time has come into their mailboxes. `passing`: a frame to this
    /// mailbox is being sent (counts down its held frames).
    fn release(&mut self, now_ms: u64, passing: Option<u32>) {
        let mut i = 0;
        while i < self.held.len() {
            let h = &mut self.held[i];
            if Some(h.to) == passing {
                h.after = h.after.saturating_sub(1);
            }
            if h.after == 0 || now_ms >= h.deadline {
                let h = self.held.remove(i);
                self.boxes.entry(h.to).or_default().push_back(h.pkt);
            } else {
                i += 1;
            }
        }
    }

    /// The next frame for `to`, if any.
    pub fn recv(&mut self, to: u32, now_ms: u64) -> Result<Option<Packet>, Status> {
        check_mailbox(to)?;
        self.release(now_ms, None);
        let p = self.boxes.get_mut(&to).and_then(|q| q.pop_front());
        if p.is_some() {
            self.stats.delivered += 1;
        }
        Ok(p)
    }

    /// Puts a frame [`Self::recv`] gave out back at the head of `to`'s mailbox (its taker could
    /// not be answered): it is delivered next, and not counted as delivered.
    pub fn unrecv(&mut self, to: u32, pkt: Packet) {
        self.boxes.entry(to).or_default().push_front(pkt);
        self.stats.delivered = self.stats.delivered.saturating_sub(1);
    }

    /// The earliest time (ms) at which a held-back frame is released by the clock alone, if
    /// any is held: a relay that keeps receivers waiting must look again then.
    pub fn next_deadline(&self) -> Option<u64> {
        self.held.iter().map(|h| h.deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(n: &mut Net, to: u32, now: u64) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while let Some(p) = n.recv(to, now).unwrap() {
            v.push(p.data);
        }
        v
    }

    #[test]
    fn a_frame_put_back_comes_next_and_held_frames_name_their_deadline() {
        let mut n = Net::new(3);
        assert_eq!(n.next_deadline(), None);
        n.send(1, 2, &[1], 0).unwrap();
        n.send(1, 2, &[2], 0).unwrap();
        let p = n.recv(2, 0).unwrap().unwrap();
        n.unrecv(2, p);
        assert_eq!(n.stats().delivered, 0);
        assert_eq!(drain(&mut n, 2, 0), vec![vec![1], vec![2]]);
        n.set_faults(Faults { reorder: 100, ..Default::default() });
        n.send(1, 2, &[3], 10).unwrap();
        assert_eq!(n.next_deadline(), Some(10 + HOLD_MS));
        assert!(drain(&mut n, 2, 10 + HOLD_MS - 1).is_empty());
        assert_eq!(drain(&mut n, 2, 10 + HOLD_MS), vec![vec![3]]);
        assert_eq!(n.next_deadline(), None);
    }

    #[test]
    fn clean_network_delivers_in_order() {
        let mut n = Net::new(1);
        for i in 0..10u8 {
            n.send(1, 2, &[i], 0).unwrap();
        }
        assert_eq!(drain(&mut n, 2, 0), (0..10u8).map(|i| vec![i]).collect::<Vec<_>>());
        assert!(drain(&mut n, 1, 0).is_empty());
        let s = n.stats();
        assert_eq!((s.sent, s.delivered, s.dropped, s.queued), (10, 10, 0, 0));
    }

    #[test]
    fn bad_requests_get_clear_errors() {
        let mut n = Net::new(1);
        assert_eq!(n.send(0, 2, &[1], 0), Err(Status::BadMailbox));
        assert_eq!(n.send(1, MAX_MAILBOX + 1, &[1], 0), Err(Status::BadMailbox));
        assert_eq!(n.send(1, 2, &[], 0), Err(Status::BadLength));
        assert_eq!(n.send(1, 2, &vec![0; FRAME_DATA + 1], 0), Err(Status::BadLength));
        assert_eq!(n.recv(0, 0), Err(Status::BadMailbox));
        assert_eq!(n.get_bundle(2), Err(Status::NoBundle));
        assert_eq!(n.put_bundle(2, &[]), Err(Status::BadLength));
        n.put_bundle(2, b"bundle").unwrap();
        assert_eq!(n.get_bundle(2), Ok(&b"bundle"[..]));
        for _ in 0..MAX_QUEUE {
            n.send(1, 3, &[1], 0).unwrap();
        }
        assert_eq!(n.send(1, 3, &[1], 0), Err(Status::Full));
        assert_eq!(n.stats().refused, 1);
    }

    #[test]
    fn every_fault_happens_at_its_rate() {
        let mut n = Net::new(7);
        n.set_faults(Faults { drop: 20, reorder: 20, duplicate: 20, corrupt: 20 });
        let total = 1000u32;
        for i in 0..total {
            n.send(1, 2, &i.to_be_bytes(), i as u64).unwrap();
        }
        let got = drain(&mut n, 2, u64::MAX);
        let s = n.stats();
        for (name, v) in [
            ("dropped", s.dropped),
            ("reordered", s.reordered),
            ("duplicated", s.duplicated),
            ("corrupted", s.corrupted),
        ] {
            assert!((120..280).contains(&v), "{name} {v} of {total} at 20%");
        }
        assert_eq!(got.len() as u64, total as u64 - s.dropped + s.duplicated);
        assert_eq!(s.delivered, got.len() as u64);
        // reordering really changes the order; corruption really changes bytes
        let intact: Vec<u32> =
            got.iter().map(|d| u32::from_be_bytes(d[..].try_into().unwrap())).filter(|&v| v < total).collect();
        assert!(intact.windows(2).any(|w| w[0] > w[1]), "no reordering seen");
        let mut seen = std::collections::HashMap::new();
        for v in &intact {
            *seen.entry(*v).or_insert(0) += 1;
        }
        assert!(seen.values().any(|&c| c > 1), "no duplicate seen");
    }

    #[test]
    fn held_frames_are_released_by_time_alone() {
        let mut n = Net::new(3);
        n.set_faults(Faults { reorder: 100, ..Default::default() });
        n.send(1, 2, b"x", 1000).unwrap();
        assert!(drain(&mut n, 2, 1000).is_empty());
        assert_eq!(n.stats().queued, 1);
        assert_eq!(drain(&mut n, 2, 1000 + HOLD_MS), vec![b"x".to_vec()]);
    }

    #[test]
    fn faults_are_bounded() {
        assert_eq!(Faults::from_args([0, 0, 0, 101]), Err(Status::BadValue));
        let f = Faults::from_args([30, 0, 5, 100]).unwrap();
        assert_eq!(f.to_args(), [30, 0, 5, 100]);
    }
}
