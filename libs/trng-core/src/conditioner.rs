//! ChaCha20 conditioner, organised like the hardware block (docs/trng-gateware.md):
//!
//! - a 384-bit seeded state (`seed`, 12 words): words 0..8 = 256-bit key, words 8..10 = 64-bit
//!   block counter (low word first), words 10..12 = 64-bit iv. It is loaded word by word from raw
//!   entropy with XOR-then-rotate (`state[0] ^= w; rotate the 12 words left by one word`);
//! - a 512-bit blind (16 words) loaded from raw entropy after the seed, XORed onto every output block;
//! - reseed: every `reseed_interval` output blocks one more raw word is folded in the same way;
//! - user seed: `fold_user_seed` words are XORed into the next raw word that gets folded;
//! - self-mix: every `selfmix_interval` output blocks (when enabled) one extra block is computed and
//!   discarded (the software analogue of the core's idle extra rounds: the crate's core works on
//!   whole blocks, so we advance by blocks, not single rounds);
//! - valid flag: set once the seed and blind are loaded; cleared by [`Conditioner::invalidate`];
//! - fast key erasure (not in the hardware): after every output request the key (and iv) are
//!   replaced by keystream that is never output, so the current state does not allow recomputing
//!   earlier output.
//!
//! The ChaCha20 block function itself comes from the `chacha20` crate (RustCrypto). State words
//! map onto the RFC 8439 state as: words 4..12 = key, word 12 = counter low, words 13..16 =
//! (counter high, iv0, iv1), so [`chacha20_block`] can be checked against RFC 8439 vectors.

use chacha20::cipher::{KeyIvInit, StreamCipherCore, StreamCipherSeekCore};
use chacha20::ChaChaCore;
use zeroize::Zeroize;

use crate::spec;

/// Words in the seeded state (key + counter + iv).
pub const SEED_WORDS: usize = spec::conditioner::SEED_WORDS;
/// Words in the blind.
pub const BLIND_WORDS: usize = spec::conditioner::BLIND_WORDS;
/// Bytes per ChaCha20 block.
pub const BLOCK_BYTES: usize = 64;

const _: () = assert!(SEED_WORDS == 12 && BLIND_WORDS == 16 && spec::conditioner::ROUNDS == 20);

/// Conditioner configuration (defaults from `spec/trng.toml` `[conditioner]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConditionerConfig {
    /// Fold one raw word into the state every this many output blocks (>= 1).
    pub reseed_interval: u32,
    /// One extra discarded block every this many output blocks (>= 1) when `selfmix_enable`.
    pub selfmix_interval: u32,
    pub selfmix_enable: bool,
    pub fast_key_erasure: bool,
}

impl Default for ConditionerConfig {
    fn default() -> Self {
        ConditionerConfig {
            reseed_interval: spec::conditioner::RESEED_INTERVAL as u32,
            selfmix_interval: spec::conditioner::SELFMIX_INTERVAL as u32,
            selfmix_enable: spec::conditioner::SELFMIX_ENABLE,
            fast_key_erasure: spec::conditioner::FAST_KEY_ERASURE,
        }
    }
}

/// Why the conditioner produced nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CondError {
    /// Seed/blind not loaded yet (or invalidated): no output until reseeded.
    NotSeeded,
    /// The raw entropy supply failed (health test failure): no output.
    Entropy,
}

/// The ChaCha20 block function on our 12-word state: returns the 16 output words
/// (rounds applied, initial state added), little-endian word order as in RFC 8439.
pub fn chacha20_block(state: &[u32; SEED_WORDS]) -> [u32; 16] {
    let mut key = [0u8; 32];
    for (i, w) in state[0..8].iter().enumerate() {
        key[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    let mut nonce = [0u8; 12];
    for (i, w) in state[9..12].iter().enumerate() {
        nonce[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    let mut core = ChaChaCore::<chacha20::cipher::consts::U10>::new(&key.into(), &nonce.into());
    core.set_block_pos(state[8]);
    let mut block = chacha20::cipher::Block::<ChaChaCore<chacha20::cipher::consts::U10>>::default();
    core.write_keystream_block(&mut block);
    let mut out = [0u32; 16];
    for (i, w) in out.iter_mut().enumerate() {
        *w = u32::from_le_bytes([block[i * 4], block[i * 4 + 1], block[i * 4 + 2], block[i * 4 + 3]]);
    }
    key.zeroize();
    block.as_mut_slice().zeroize();
    out
}

/// Counters for statistics (not secret).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CondStats {
    pub blocks_out: u64,
    pub reseeds: u64,
    pub selfmix_blocks: u64,
    pub rekeys: u64,
    pub user_seeds: u64,
    pub full_seeds: u64,
    /// Raw words absorbed (seeding, reseeds, per-request fresh words).
    pub words_absorbed: u64,
}

/// The conditioner. All key material is zeroized on drop and on [`Conditioner::invalidate`].
pub struct Conditioner {
    cfg: ConditionerConfig,
    seed: [u32; SEED_WORDS],
    blind: [u32; BLIND_WORDS],
    /// Words absorbed since the last (re)start of seeding: 0..SEED_WORDS+BLIND_WORDS.
    loaded: usize,
    valid: bool,
    blocks_since_reseed: u32,
    blocks_since_selfmix: u32,
    user_seed: u32,
    user_seed_pending: bool,
    stats: CondStats,
}

impl Drop for Conditioner {
    fn drop(&mut self) {
        self.wipe();
    }
}

impl Conditioner {
    pub fn new(cfg: ConditionerConfig) -> Self {
        let cfg = ConditionerConfig {
            reseed_interval: cfg.reseed_interval.max(1),
            selfmix_interval: cfg.selfmix_interval.max(1),
            ..cfg
        };
        Conditioner {
            cfg,
            seed: [0; SEED_WORDS],
            blind: [0; BLIND_WORDS],
            loaded: 0,
            valid: false,
            blocks_since_reseed: 0,
            blocks_since_selfmix: 0,
            user_seed: 0,
            user_seed_pending: false,
            stats: CondStats::default(),
        }
    }

    pub fn config(&self) -> ConditionerConfig {
        self.cfg
    }

    pub fn stats(&self) -> CondStats {
        self.stats
    }

    /// The valid flag: seeded and not invalidated.
    pub fn is_valid(&self) -> bool {
        self.valid
    }

    /// Raw words still needed before the conditioner becomes valid.
    pub fn words_needed(&self) -> usize {
        (SEED_WORDS + BLIND_WORDS).saturating_sub(self.loaded)
    }

    fn wipe(&mut self) {
        self.seed.zeroize();
        self.blind.zeroize();
        self.user_seed.zeroize();
        self.user_seed_pending = false;
    }

    /// Forget all key material and require a full reseed (used when health tests fail).
    pub fn invalidate(&mut self) {
        self.wipe();
        self.loaded = 0;
        self.valid = false;
        self.blocks_since_reseed = 0;
        self.blocks_since_selfmix = 0;
    }

    fn fold(&mut self, w: u32) {
        self.seed[0] ^= w;
        self.seed.rotate_left(1);
    }

    /// Absorb one raw word: first the 12 seed words, then the 16 blind words, afterwards a reseed
    /// fold (with any pending user seed XORed in).
    pub fn absorb(&mut self, mut w: u32) {
        self.stats.words_absorbed += 1;
        if self.user_seed_pending {
            w ^= self.user_seed;
            self.user_seed.zeroize();
            self.user_seed_pending = false;
        }
        if self.loaded < SEED_WORDS {
            self.fold(w);
            self.loaded += 1;
        } else if self.loaded < SEED_WORDS + BLIND_WORDS {
            let i = self.loaded - SEED_WORDS;
            self.blind[i] ^= w;
            self.loaded += 1;
            if self.loaded == SEED_WORDS + BLIND_WORDS {
                self.valid = true;
                self.stats.full_seeds += 1;
            }
        } else {
            self.fold(w);
            self.stats.reseeds += 1;
        }
        w.zeroize();
    }

    /// Fold a user-supplied seed word in with the next raw word (never replaces raw entropy).
    pub fn fold_user_seed(&mut self, w: u32) {
        self.user_seed ^= w;
        self.user_seed_pending = true;
        self.stats.user_seeds += 1;
    }

    fn advance_counter(&mut self) {
        let c = ((self.seed[9] as u64) << 32 | self.seed[8] as u64).wrapping_add(1);
        self.seed[8] = c as u32;
        self.seed[9] = (c >> 32) as u32;
    }

    /// One extra discarded block (self-mix), also callable when the server is idle.
    pub fn self_mix(&mut self) {
        if !self.valid {
            return;
        }
        let mut b = chacha20_block(&self.seed);
        // feed the discarded block back into the key so the mix changes future output
        for i in 0..8 {
            self.seed[i] ^= b[i];
        }
        b.zeroize();
        self.advance_counter();
        self.stats.selfmix_blocks += 1;
    }

    /// Fast key erasure: replace key and iv with keystream that is never output.
    pub fn rekey(&mut self) {
        if !self.valid {
            return;
        }
        let mut b = chacha20_block(&self.seed);
        self.seed[0..8].copy_from_slice(&b[0..8]);
        self.seed[10..12].copy_from_slice(&b[8..10]);
        b.zeroize();
        self.advance_counter();
        self.stats.rekeys += 1;
    }

    /// Fill `out` with conditioned bytes. `raw` supplies fresh raw words for the periodic reseed;
    /// if it fails, the output produced so far in this call is wiped, the state is invalidated and
    /// `Err(Entropy)` returned: callers never see partial output from a failing request.
    /// After the request the key is erased (fast key erasure) when configured.
    pub fn generate(&mut self, out: &mut [u8], raw: &mut dyn FnMut() -> Option<u32>) -> Result<(), CondError> {
        if !self.valid {
            return Err(CondError::NotSeeded);
        }
        let mut pos = 0;
        while pos < out.len() {
            if self.blocks_since_reseed >= self.cfg.reseed_interval {
                match raw() {
                    Some(w) => self.absorb(w),
                    None => {
                        out.zeroize();
                        self.invalidate();
                        return Err(CondError::Entropy);
                    }
                }
                self.blocks_since_reseed = 0;
            }
            if self.cfg.selfmix_enable && self.blocks_since_selfmix >= self.cfg.selfmix_interval {
                self.self_mix();
                self.blocks_since_selfmix = 0;
            }
            let mut b = chacha20_block(&self.seed);
            self.advance_counter();
            self.blocks_since_reseed += 1;
            self.blocks_since_selfmix += 1;
            self.stats.blocks_out += 1;
            let n = (out.len() - pos).min(BLOCK_BYTES);
            let mut bytes = [0u8; BLOCK_BYTES];
            for i in 0..16 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&(b[i] ^ self.blind[i]).to_le_bytes());
            }
            out[pos..pos + n].copy_from_slice(&bytes[..n]);
            bytes.zeroize();
            b.zeroize();
            pos += n;
        }
        if self.cfg.fast_key_erasure {
            self.rekey();
        }
        Ok(())
    }

    /// Test/inspection hook: a copy of the current 384-bit state (used to prove fast key erasure).
    #[doc(hidden)]
    pub fn state_snapshot(&self) -> ([u32; SEED_WORDS], [u32; BLIND_WORDS]) {
        (self.seed, self.blind)
    }

    /// Test hook: a conditioner with a given state and blind, already valid.
    #[doc(hidden)]
    pub fn from_state(cfg: ConditionerConfig, seed: [u32; SEED_WORDS], blind: [u32; BLIND_WORDS]) -> Self {
        let mut c = Conditioner::new(cfg);
        c.seed = seed;
        c.blind = blind;
        c.loaded = SEED_WORDS + BLIND_WORDS;
        c.valid = true;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_le(hex: &str) -> Vec<u32> {
        let b: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        b.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    fn bytes(hex: &str) -> Vec<u8> {
        let hex: String = hex.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    }

    /// RFC 8439 state (key bytes, counter, 12-byte nonce) mapped onto our 12-word state.
    fn rfc_state(key: &[u8], counter: u32, nonce: &[u8]) -> [u32; 12] {
        let mut s = [0u32; 12];
        for i in 0..8 {
            s[i] = u32::from_le_bytes(key[i * 4..i * 4 + 4].try_into().unwrap());
        }
        s[8] = counter;
        for i in 0..3 {
            s[9 + i] = u32::from_le_bytes(nonce[i * 4..i * 4 + 4].try_into().unwrap());
        }
        s
    }

    #[test]
    fn rfc8439_2_3_2_block_function() {
        let key: Vec<u8> = (0u8..32).collect();
        let nonce = bytes("00:00:00:09:00:00:00:4a:00:00:00:00");
        let out = chacha20_block(&rfc_state(&key, 1, &nonce));
        // RFC 8439 section 2.3.2, "ChaCha state after 20 rounds" + original state (serialized block)
        let expect = bytes(
            "10 f1 e7 e4 d1 3b 59 15 50 0f dd 1f a3 20 71 c4 c7 d1 f4 c7 33 c0 68 03 04 22 aa 9a c3 d4 6c 4e
             d2 82 64 46 07 9f aa 09 14 c2 d7 05 d9 8b 02 a2 b5 12 9c d1 de 16 4e b9 cb d0 83 e8 a2 50 3c 4e",
        );
        let got: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn rfc8439_a1_vectors() {
        // Appendix A.1 test vector #1: all-zero key and nonce, counter 0
        let out = chacha20_block(&[0u32; 12]);
        let expect = words_le(
            "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586",
        );
        assert_eq!(out.to_vec(), expect);
        // test vector #2: all-zero key and nonce, counter 1
        let mut s = [0u32; 12];
        s[8] = 1;
        let expect2 = words_le(
            "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f",
        );
        assert_eq!(chacha20_block(&s).to_vec(), expect2);
        // test vector #3: key = 00..01 (last byte 1), nonce 0, counter 1
        let mut key = [0u8; 32];
        key[31] = 1;
        let expect3 = words_le(
            "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0",
        );
        assert_eq!(chacha20_block(&rfc_state(&key, 1, &[0u8; 12])).to_vec(), expect3);
    }

    #[test]
    fn rfc8439_2_4_2_keystream_through_conditioner() {
        // The conditioner with zero blind emits the raw keystream: check it against the RFC 8439
        // section 2.4.2 encryption example (ciphertext XOR plaintext = keystream, counter 1).
        let key: Vec<u8> = (0u8..32).collect();
        let nonce = bytes("00:00:00:00:00:00:00:4a:00:00:00:00");
        let cfg = ConditionerConfig {
            reseed_interval: 1000,
            selfmix_enable: false,
            fast_key_erasure: false,
            selfmix_interval: 1,
        };
        let mut c = Conditioner::from_state(cfg, rfc_state(&key, 1, &nonce), [0; 16]);
        let plain = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let cipher = bytes(
            "6e 2e 35 9a 25 68 f9 80 41 ba 07 28 dd 0d 69 81 e9 7e 7a ec 1d 43 60 c2 0a 27 af cc fd 9f ae 0b
             f9 1b 65 c5 52 47 33 ab 8f 59 3d ab cd 62 b3 57 16 39 d6 24 e6 51 52 ab 8f 53 0c 35 9f 08 61 d8
             07 ca 0d bf 50 0d 6a 61 56 a3 8e 08 8a 22 b6 5e 52 bc 51 4d 16 cc f8 06 81 8c e9 1a b7 79 37 36
             5a f9 0b bf 74 a3 5b e6 b4 0b 8e ed f2 78 5e 42 87 4d",
        );
        let mut ks = vec![0u8; plain.len()];
        c.generate(&mut ks, &mut || panic!("no reseed expected")).unwrap();
        let ct: Vec<u8> = plain.iter().zip(&ks).map(|(p, k)| p ^ k).collect();
        assert_eq!(ct, cipher);
    }

    #[test]
    fn blind_is_xored_onto_each_block() {
        let cfg = ConditionerConfig {
            reseed_interval: 1000,
            selfmix_enable: false,
            fast_key_erasure: false,
            selfmix_interval: 1,
        };
        let seed = [7u32; 12];
        let blind: [u32; 16] = core::array::from_fn(|i| 0x0101_0101 * i as u32 + 3);
        let mut a = Conditioner::from_state(cfg, seed, [0; 16]);
        let mut b = Conditioner::from_state(cfg, seed, blind);
        let (mut x, mut y) = ([0u8; 128], [0u8; 128]);
        a.generate(&mut x, &mut || None).unwrap();
        b.generate(&mut y, &mut || None).unwrap();
        for blk in 0..2 {
            for i in 0..16 {
                let o = blk * 64 + i * 4;
                let wx = u32::from_le_bytes(x[o..o + 4].try_into().unwrap());
                let wy = u32::from_le_bytes(y[o..o + 4].try_into().unwrap());
                assert_eq!(wx ^ wy, blind[i]);
            }
        }
    }

    #[test]
    fn seeding_sets_valid_after_seed_and_blind() {
        let mut c = Conditioner::new(ConditionerConfig::default());
        let mut out = [0u8; 8];
        assert_eq!(c.generate(&mut out, &mut || Some(1)), Err(CondError::NotSeeded));
        for i in 0..(SEED_WORDS + BLIND_WORDS) {
            assert!(!c.is_valid());
            assert_eq!(c.words_needed(), SEED_WORDS + BLIND_WORDS - i);
            c.absorb(0x1234_5678 ^ i as u32);
        }
        assert!(c.is_valid());
        c.generate(&mut out, &mut || Some(1)).unwrap();
        c.invalidate();
        assert!(!c.is_valid());
        assert_eq!(c.state_snapshot(), ([0; 12], [0; 16]));
        assert_eq!(c.generate(&mut out, &mut || Some(1)), Err(CondError::NotSeeded));
    }

    #[test]
    fn reseed_every_n_blocks_and_failure_wipes_output() {
        let cfg = ConditionerConfig {
            reseed_interval: 2,
            selfmix_enable: false,
            fast_key_erasure: false,
            selfmix_interval: 1,
        };
        let mut c = Conditioner::from_state(cfg, [1; 12], [2; 16]);
        let mut calls = 0;
        let mut out = vec![0u8; 64 * 10];
        c.generate(&mut out, &mut || {
            calls += 1;
            Some(calls)
        })
        .unwrap();
        // blocks 0,1 | reseed | 2,3 | reseed | ... : 10 blocks -> 4 reseeds (before blocks 2,4,6,8)
        assert_eq!(calls, 4);
        // a failing raw supply: no partial output, state invalidated
        let mut out = vec![0xAAu8; 64 * 10];
        assert_eq!(c.generate(&mut out, &mut || None), Err(CondError::Entropy));
        assert!(out.iter().all(|b| *b == 0));
        assert!(!c.is_valid());
    }

    #[test]
    fn reseed_and_user_seed_change_the_stream() {
        let cfg = ConditionerConfig {
            reseed_interval: 1,
            selfmix_enable: false,
            fast_key_erasure: false,
            selfmix_interval: 1,
        };
        let mut a = Conditioner::from_state(cfg, [5; 12], [6; 16]);
        let mut b = Conditioner::from_state(cfg, [5; 12], [6; 16]);
        b.fold_user_seed(0xDEAD_BEEF);
        let (mut x, mut y) = ([0u8; 192], [0u8; 192]);
        a.generate(&mut x, &mut || Some(9)).unwrap();
        b.generate(&mut y, &mut || Some(9)).unwrap();
        assert_eq!(x[..64], y[..64]); // first block before any reseed
        assert_ne!(x[64..], y[64..]); // user seed folded with the first reseed word
    }

    #[test]
    fn fast_key_erasure_changes_key_after_each_request() {
        let cfg = ConditionerConfig {
            reseed_interval: 1000,
            selfmix_enable: false,
            fast_key_erasure: true,
            selfmix_interval: 1,
        };
        let seed0: [u32; 12] = core::array::from_fn(|i| i as u32 * 77 + 1);
        let mut c = Conditioner::from_state(cfg, seed0, [0; 16]);
        let mut out = [0u8; 64];
        c.generate(&mut out, &mut || None).unwrap();
        let (s1, _) = c.state_snapshot();
        // the first output block was block(seed0); the new key is keystream of the (never output)
        // next block: it differs from the old key and the output.
        assert_ne!(s1[0..8], seed0[0..8]);
        let k = chacha20_block(&{
            let mut s = seed0;
            s[8] += 1;
            s
        });
        assert_eq!(s1[0..8], k[0..8]);
        assert_eq!(s1[10..12], k[8..10]);
        // the old key cannot be recomputed from the new state: re-running from the new state
        // never reproduces the first output
        let mut c2 = Conditioner::from_state(cfg, s1, [0; 16]);
        let mut again = [0u8; 64];
        c2.generate(&mut again, &mut || None).unwrap();
        assert_ne!(again, out);
    }

    #[test]
    fn selfmix_adds_discarded_blocks() {
        let cfg = ConditionerConfig {
            reseed_interval: 1000,
            selfmix_enable: true,
            fast_key_erasure: false,
            selfmix_interval: 4,
        };
        let mut c = Conditioner::from_state(cfg, [3; 12], [0; 16]);
        let mut out = [0u8; 64 * 9];
        c.generate(&mut out, &mut || None).unwrap();
        assert_eq!(c.stats().selfmix_blocks, 2);
        assert_eq!(c.stats().blocks_out, 9);
    }
}
