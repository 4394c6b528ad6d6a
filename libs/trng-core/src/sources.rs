//! Raw noise-source models with fault injection.
//!
//! The models stand in for the hardware sources in hosted mode, tests and demos. Their "physics"
//! is a ChaCha8 keystream seeded by the caller (the server seeds it from the OS); what matters is
//! that the sample *structure* matches the hardware, so the health tests and the word folding are
//! exercised as on the device:
//!
//! - [`AvModel`]: avalanche generator, two 12-bit ADC channels, roughly Gaussian around mid-scale;
//!   32 sample pairs folded per word: `out = n0 ^ n1 ^ rotl(out, 5)`; each channel's samples are
//!   health-tested on their low `symbol_bits` bits.
//! - [`RoModel`]: ring oscillator, one bit per sample, 32 bits packed per word (LSB first).
//!
//! Faults ([`FaultSpec`]) are selected by a config string:
//! `TARGET:KIND[=VALUE][@START[+LEN]]`, several joined by `,`. TARGET = `av` (both channels),
//! `av0`, `av1`, `ro`. KIND = `stuck[=V]` (sample stuck at V, default 0x800 for av, 0 for ro),
//! `bias=P` (av: with probability P the sample is pinned to mid-scale; ro: P(bit = 1) = P),
//! `burst=L[/PERIOD]` (every PERIOD samples, default 4096, the sample is repeated L times).
//! START/LEN count the channel's samples from the moment the faults were set (default: from now,
//! forever). Empty string or `none` = no faults.

use chacha20::cipher::{KeyIvInit, StreamCipher};
use chacha20::ChaCha8;

use crate::health::SourceHealth;
use crate::spec;

pub const AV_SAMPLE_BITS: u32 = spec::health::av::SAMPLE_BITS as u32;
pub const AV_PAIRS_PER_WORD: usize = spec::health::av::PAIRS_PER_WORD;
pub const AV_FOLD_ROTATE: u32 = spec::health::av::FOLD_ROTATE as u32;
const AV_MID: u32 = 1 << (AV_SAMPLE_BITS - 1);
const AV_MAX: u32 = (1 << AV_SAMPLE_BITS) - 1;

/// Deterministic "physics" randomness for the models.
pub struct Physics {
    cipher: ChaCha8,
    pool: [u8; 4096],
    pos: usize,
}

impl Physics {
    pub fn new(seed: [u8; 32]) -> Self {
        let mut p = Physics { cipher: ChaCha8::new(&seed.into(), &[0u8; 12].into()), pool: [0; 4096], pos: 4096 };
        p.refill();
        p
    }
    fn refill(&mut self) {
        self.pool.fill(0);
        self.cipher.apply_keystream(&mut self.pool);
        self.pos = 0;
    }
    #[inline]
    pub fn u16(&mut self) -> u16 {
        if self.pos + 2 > self.pool.len() {
            self.refill();
        }
        let v = u16::from_le_bytes([self.pool[self.pos], self.pool[self.pos + 1]]);
        self.pos += 2;
        v
    }
    #[inline]
    pub fn u32(&mut self) -> u32 {
        (self.u16() as u32) << 16 | self.u16() as u32
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.u32() as f64 / 4294967296.0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Av,
    Av0,
    Av1,
    Ro,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    Stuck(Option<u32>),
    Bias(f64),
    Burst { len: u32, period: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fault {
    pub target: Target,
    pub kind: FaultKind,
    pub start: u64,
    pub len: Option<u64>,
}

/// A parsed fault configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultSpec {
    pub faults: Vec<Fault>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultParseError(pub String);

impl core::fmt::Display for FaultParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "bad fault spec: {}", self.0)
    }
}
impl std::error::Error for FaultParseError {}

fn parse_num(s: &str) -> Result<u64, FaultParseError> {
    let s = s.trim();
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(&h.replace('_', ""), 16)
    } else {
        s.replace('_', "").parse()
    };
    r.map_err(|_| FaultParseError(format!("not a number: {s:?}")))
}

impl FaultSpec {
    pub fn none() -> Self {
        FaultSpec::default()
    }

    pub fn parse(s: &str) -> Result<Self, FaultParseError> {
        let s = s.trim();
        let mut faults = Vec::new();
        if s.is_empty() || s.eq_ignore_ascii_case("none") {
            return Ok(FaultSpec { faults });
        }
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (target, rest) =
                item.split_once(':').ok_or_else(|| FaultParseError(format!("{item:?}: expected TARGET:KIND")))?;
            let target = match target.trim() {
                "av" => Target::Av,
                "av0" => Target::Av0,
                "av1" => Target::Av1,
                "ro" => Target::Ro,
                t => return Err(FaultParseError(format!("unknown target {t:?} (av, av0, av1, ro)"))),
            };
            let (kindval, window) = match rest.split_once('@') {
                Some((k, w)) => (k, Some(w)),
                None => (rest, None),
            };
            let (kind, val) = match kindval.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (kindval.trim(), None),
            };
            let kind = match kind {
                "stuck" => {
                    let v = val.map(parse_num).transpose()?;
                    let max = if target == Target::Ro { 1 } else { AV_MAX as u64 };
                    if let Some(v) = v {
                        if v > max {
                            return Err(FaultParseError(format!("stuck value {v} exceeds {max}")));
                        }
                    }
                    FaultKind::Stuck(v.map(|v| v as u32))
                }
                "bias" => {
                    let p: f64 = val
                        .ok_or_else(|| FaultParseError("bias needs =P".into()))?
                        .parse()
                        .map_err(|_| FaultParseError(format!("bad probability {val:?}")))?;
                    if !(0.0..=1.0).contains(&p) {
                        return Err(FaultParseError(format!("probability {p} not in [0, 1]")));
                    }
                    FaultKind::Bias(p)
                }
                "burst" => {
                    let v = val.ok_or_else(|| FaultParseError("burst needs =LEN[/PERIOD]".into()))?;
                    let (l, p) = match v.split_once('/') {
                        Some((l, p)) => (parse_num(l)?, parse_num(p)?),
                        None => (parse_num(v)?, 4096),
                    };
                    if l == 0 || p == 0 || l > p || p > u32::MAX as u64 {
                        return Err(FaultParseError(format!("burst length {l} / period {p} invalid")));
                    }
                    FaultKind::Burst { len: l as u32, period: p as u32 }
                }
                k => return Err(FaultParseError(format!("unknown fault kind {k:?} (stuck, bias, burst)"))),
            };
            let (start, len) = match window {
                None => (0, None),
                Some(w) => match w.split_once('+') {
                    Some((a, b)) => (parse_num(a)?, Some(parse_num(b)?)),
                    None => (parse_num(w)?, None),
                },
            };
            faults.push(Fault { target, kind, start, len });
        }
        Ok(FaultSpec { faults })
    }

    fn for_channel(&self, ch: Target) -> Vec<Fault> {
        self.faults
            .iter()
            .filter(|f| f.target == ch || (f.target == Target::Av && matches!(ch, Target::Av0 | Target::Av1)))
            .copied()
            .collect()
    }
}

/// One physical channel's fault state.
#[derive(Clone, Debug, Default)]
struct Channel {
    faults: Vec<Fault>,
    n: u64,
    held: u32,
}

impl Channel {
    /// Apply the active faults to a natural sample. `pinned` is the value a bias fault forces
    /// (av) and `stuck_default` the default stuck value.
    #[inline]
    fn apply(&mut self, natural: u32, phys: &mut Physics, is_bit: bool) -> u32 {
        let n = self.n;
        self.n += 1;
        let mut s = natural;
        for f in &self.faults {
            if n < f.start || f.len.is_some_and(|l| n >= f.start + l) {
                continue;
            }
            match f.kind {
                FaultKind::Stuck(v) => s = v.unwrap_or(if is_bit { 0 } else { AV_MID }),
                FaultKind::Bias(p) => {
                    if is_bit {
                        s = (phys.unit() < p) as u32;
                    } else if phys.unit() < p {
                        s = AV_MID;
                    }
                }
                FaultKind::Burst { len, period } => {
                    let k = ((n - f.start) % period as u64) as u32;
                    if k == 0 {
                        self.held = s;
                    } else if k < len {
                        s = self.held;
                    }
                }
            }
        }
        s
    }
}

/// Avalanche-generator model: two 12-bit channels.
pub struct AvModel {
    phys: Physics,
    ch: [Channel; 2],
    /// Noise amplitude: each sample is mid-scale plus the sum of four uniform values.
    spread: u32,
}

impl AvModel {
    pub fn new(seed: [u8; 32]) -> Self {
        AvModel { phys: Physics::new(seed), ch: [Channel::default(), Channel::default()], spread: 256 }
    }

    pub fn set_faults(&mut self, spec: &FaultSpec) {
        self.ch[0] = Channel { faults: spec.for_channel(Target::Av0), ..Channel::default() };
        self.ch[1] = Channel { faults: spec.for_channel(Target::Av1), ..Channel::default() };
    }

    /// Samples produced per channel since the faults were last set.
    pub fn samples(&self, channel: usize) -> u64 {
        self.ch[channel].n
    }

    #[inline]
    fn natural(&mut self) -> u32 {
        // sum of four uniforms in [0, spread): roughly Gaussian, sd ~ spread * 0.58
        let r = self.phys.u32();
        let mut acc = 0u32;
        for k in 0..4 {
            acc += ((r >> (8 * k)) & 0xFF) * self.spread / 256;
        }
        (AV_MID + acc).saturating_sub(2 * self.spread).min(AV_MAX)
    }

    /// One sample of channel `c` (0 or 1), faults applied.
    #[inline]
    pub fn sample(&mut self, c: usize) -> u32 {
        let nat = self.natural();
        self.ch[c].apply(nat, &mut self.phys, false) & AV_MAX
    }

    /// One folded 32-bit word; every sample goes through its channel's health test.
    /// Returns None (and the caller discards everything) if either test has a latched failure.
    pub fn next_word(&mut self, h0: &mut SourceHealth, h1: &mut SourceHealth) -> Option<u32> {
        let mut out = 0u32;
        let mut ok = true;
        for _ in 0..AV_PAIRS_PER_WORD {
            let n0 = self.sample(0);
            let n1 = self.sample(1);
            ok &= h0.feed(n0);
            ok &= h1.feed(n1);
            out = n0 ^ n1 ^ out.rotate_left(AV_FOLD_ROTATE);
        }
        ok.then_some(out)
    }
}

/// Ring-oscillator model: one bit per sample.
pub struct RoModel {
    phys: Physics,
    ch: Channel,
}

impl RoModel {
    pub fn new(seed: [u8; 32]) -> Self {
        RoModel { phys: Physics::new(seed), ch: Channel::default() }
    }

    pub fn set_faults(&mut self, spec: &FaultSpec) {
        self.ch = Channel { faults: spec.for_channel(Target::Ro), ..Channel::default() };
    }

    pub fn samples(&self) -> u64 {
        self.ch.n
    }

    /// 32 bits packed LSB first, each bit health-tested.
    pub fn next_word(&mut self, h: &mut SourceHealth) -> Option<u32> {
        let nat = self.phys.u32();
        let mut out = 0u32;
        let mut ok = true;
        if self.ch.faults.is_empty() {
            for i in 0..32 {
                let b = (nat >> i) & 1;
                ok &= h.feed(b);
            }
            self.ch.n += 32;
            out = nat;
        } else {
            for i in 0..32 {
                let b = self.ch.apply((nat >> i) & 1, &mut self.phys, true) & 1;
                ok &= h.feed(b);
                out |= b << i;
            }
        }
        ok.then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::HealthParams;

    #[test]
    fn parse_faults() {
        let f = FaultSpec::parse("av0:stuck=0x123@100+50, ro:bias=0.9, av:burst=30/1000@7").unwrap();
        assert_eq!(f.faults.len(), 3);
        assert_eq!(
            f.faults[0],
            Fault { target: Target::Av0, kind: FaultKind::Stuck(Some(0x123)), start: 100, len: Some(50) }
        );
        assert_eq!(f.faults[1].kind, FaultKind::Bias(0.9));
        assert_eq!(f.faults[2].kind, FaultKind::Burst { len: 30, period: 1000 });
        assert_eq!(FaultSpec::parse("").unwrap(), FaultSpec::none());
        assert_eq!(FaultSpec::parse("none").unwrap(), FaultSpec::none());
        for bad in [
            "av",
            "xx:stuck",
            "av:melt",
            "ro:stuck=2",
            "av:bias",
            "av:bias=1.5",
            "av:burst=0",
            "av:burst=10/5",
            "av:stuck@x",
            "av:stuck=0x1000",
        ] {
            assert!(FaultSpec::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn av_model_is_healthy_and_varied() {
        let mut m = AvModel::new([1; 32]);
        let (mut h0, mut h1) = (SourceHealth::new(HealthParams::av()), SourceHealth::new(HealthParams::av()));
        let mut ones = 0u64;
        for _ in 0..20_000 {
            let w = m.next_word(&mut h0, &mut h1).expect("healthy model must pass");
            ones += w.count_ones() as u64;
        }
        let frac = ones as f64 / (20_000.0 * 32.0);
        assert!((frac - 0.5).abs() < 0.01, "bit balance {frac}");
        assert!(h0.ok() && h1.ok());
        // samples stay within 12 bits and spread around mid-scale
        let s: Vec<u32> = (0..1000).map(|_| m.sample(0)).collect();
        assert!(s.iter().all(|v| *v <= AV_MAX));
        assert!(s.iter().max().unwrap() - s.iter().min().unwrap() > 300);
    }

    #[test]
    fn ro_model_is_healthy() {
        let mut m = RoModel::new([2; 32]);
        let mut h = SourceHealth::new(HealthParams::ro());
        for _ in 0..20_000 {
            m.next_word(&mut h).unwrap();
        }
        assert!(h.ok());
    }

    #[test]
    fn stuck_fault_trips_rct_within_cutoff() {
        for (target, spec) in [(0usize, "av0:stuck=0x555@1000"), (1, "av1:stuck@1000")] {
            let mut m = AvModel::new([3; 32]);
            m.set_faults(&FaultSpec::parse(spec).unwrap());
            let mut h = [SourceHealth::new(HealthParams::av()), SourceHealth::new(HealthParams::av())];
            let cutoff = h[target].rct_cutoff() as u64;
            loop {
                let [a, b] = &mut h;
                if m.next_word(a, b).is_none() {
                    break;
                }
            }
            assert_eq!(h[target].failure(), Some(crate::health::Failure::Rct));
            // detected within the word that contained the cutoff-th stuck sample
            let n = m.samples(target);
            assert!(n >= 1000 + cutoff - 1 && n <= 1000 + cutoff + AV_PAIRS_PER_WORD as u64, "detected after {n}");
        }
    }

    #[test]
    fn bias_and_burst_faults_are_detected() {
        let mut m = RoModel::new([4; 32]);
        m.set_faults(&FaultSpec::parse("ro:bias=0.95").unwrap());
        let mut h = SourceHealth::new(HealthParams::ro());
        let mut words = 0;
        while m.next_word(&mut h).is_some() {
            words += 1;
            assert!(words < 1000);
        }
        assert!(h.failure().is_some());

        let mut m = AvModel::new([5; 32]);
        m.set_faults(&FaultSpec::parse("av0:burst=40/2000").unwrap());
        let (mut h0, mut h1) = (SourceHealth::new(HealthParams::av()), SourceHealth::new(HealthParams::av()));
        while m.next_word(&mut h0, &mut h1).is_some() {}
        assert_eq!(h0.failure(), Some(crate::health::Failure::Rct));
        assert!(h1.failure().is_none());

        // a short burst (below the cutoff) passes
        let mut m = AvModel::new([6; 32]);
        m.set_faults(&FaultSpec::parse("av:burst=5/100").unwrap());
        let (mut h0, mut h1) = (SourceHealth::new(HealthParams::av()), SourceHealth::new(HealthParams::av()));
        for _ in 0..5000 {
            assert!(m.next_word(&mut h0, &mut h1).is_some());
        }
    }

    #[test]
    fn fault_window_ends() {
        let mut m = AvModel::new([7; 32]);
        m.set_faults(&FaultSpec::parse("av0:stuck=9@10+5").unwrap());
        let s: Vec<u32> = (0..20).map(|_| m.sample(0)).collect();
        assert!(s[10..15].iter().all(|v| *v == 9));
        assert!(s[15..].iter().any(|v| *v != 9));
    }
}
