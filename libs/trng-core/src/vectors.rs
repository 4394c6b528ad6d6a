//! Vector files shared with the TRNG gateware (docs/trng-gateware.md): the software is the
//! reference model, and the RTL must reproduce every case word for word and sample for sample.
//!
//! Two kinds of case:
//! * **conditioner**: a configuration, the raw words offered in order, user seed words tagged
//!   with the index of the raw word they are folded into, and the expected output words (whole
//!   blocks, fast key erasure off: the hardware has none). The model absorbs the first 28 raw
//!   words (seed, then blind), then one more before every `reseed_interval`-th block.
//! * **health**: SP 800-90B parameters (symbol width, RCT and APT cutoffs, APT window, start-up
//!   length), the samples, and every failure event the software tests raise (sample index and
//!   test), plus the index at which the start-up test completed.
//!
//! Text format (one case per `case` ... `end` block; numbers are hexadecimal without `0x` unless
//! noted; blank lines and `#` comments ignored):
//!
//! ```text
//! trng-vectors 1
//! case conditioner NAME
//! config reseed_interval=2 selfmix_interval=3 selfmix_enable=1     (decimal)
//! raw 1a2b3c4d 5e6f7081 ...
//! seed 29 deadbeef 00000001                                         (raw index in decimal)
//! out 9abcdef0 ...
//! end
//! case health NAME
//! params symbol_bits=5 rct_cutoff=21 apt_cutoff=410 apt_window=512 startup=1024   (decimal)
//! samples 7ff 800 ...
//! fail 1234 rct                                                     (index in decimal)
//! startup_done 1023                                                 (decimal; -1: never)
//! end
//! ```

use crate::conditioner::{Conditioner, ConditionerConfig, BLIND_WORDS, BLOCK_BYTES, SEED_WORDS};
use crate::health::{Failure, HealthParams, SourceHealth};

pub const HEADER: &str = "trng-vectors 1";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CondCase {
    pub name: String,
    pub reseed_interval: u32,
    pub selfmix_interval: u32,
    pub selfmix_enable: bool,
    pub raw: Vec<u32>,
    /// (raw word index, seed words folded in before that word is absorbed)
    pub seeds: Vec<(usize, Vec<u32>)>,
    pub out: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCase {
    pub name: String,
    pub symbol_bits: u32,
    pub rct_cutoff: u32,
    pub apt_cutoff: u32,
    pub apt_window: u32,
    pub startup: u32,
    pub samples: Vec<u32>,
    /// (sample index, test) for every failure the software raised
    pub fails: Vec<(usize, Failure)>,
    /// index of the sample that completed the start-up test (None: never completed)
    pub startup_done: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Case {
    Conditioner(CondCase),
    Health(HealthCase),
}

/// Raw words the conditioner model absorbs to produce `blocks` output blocks.
pub fn raw_words_needed(reseed_interval: u32, blocks: usize) -> usize {
    let r = reseed_interval.max(1) as usize;
    SEED_WORDS + BLIND_WORDS + blocks.saturating_sub(1) / r
}

/// Run the software conditioner over `raw` (with `seeds`) for `blocks` output blocks, fast key
/// erasure off. Returns the case with its expected output.
pub fn conditioner_case(
    name: &str,
    reseed_interval: u32,
    selfmix_interval: u32,
    selfmix_enable: bool,
    raw: &[u32],
    seeds: &[(usize, Vec<u32>)],
    blocks: usize,
) -> Result<CondCase, String> {
    let cfg = ConditionerConfig { reseed_interval, selfmix_interval, selfmix_enable, fast_key_erasure: false };
    let mut c = Conditioner::new(cfg);
    // user seeds tagged j are folded (once) before raw word j can be absorbed; a pending user
    // seed acts only on the next absorbed word, so folding it before a block that may or may
    // not reseed is the same as folding it just before the word is taken
    let fold_seeds = |c: &mut Conditioner, j: usize| {
        for (_, ws) in seeds.iter().filter(|(t, _)| *t == j) {
            for w in ws {
                c.fold_user_seed(*w);
            }
        }
    };
    let mut next = 0usize;
    while c.words_needed() > 0 {
        fold_seeds(&mut c, next);
        c.absorb(*raw.get(next).ok_or("not enough raw words to seed")?);
        next += 1;
    }
    let mut folded = next; // seeds of raw indices < folded are in
    let mut out = Vec::with_capacity(blocks * 16);
    let mut block = [0u8; BLOCK_BYTES];
    for _ in 0..blocks {
        if folded == next {
            fold_seeds(&mut c, next);
            folded = next + 1;
        }
        let (mut taken, mut missing) = (false, false);
        let w = raw.get(next).copied();
        c.generate(&mut block, &mut || {
            taken = true;
            missing = w.is_none();
            w
        })
        .map_err(|e| {
            if missing {
                "not enough raw words for the reseeds".to_string()
            } else {
                format!("generate: {e:?}")
            }
        })?;
        if taken {
            next += 1;
        }
        out.extend(block.chunks(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
    }
    Ok(CondCase {
        name: name.into(),
        reseed_interval,
        selfmix_interval,
        selfmix_enable,
        raw: raw[..next].to_vec(),
        seeds: seeds.iter().filter(|(j, _)| *j < next).cloned().collect(),
        out,
    })
}

/// Run the software health tests over `samples`.
pub fn health_case(name: &str, params: HealthParams, samples: &[u32]) -> HealthCase {
    let mut h = SourceHealth::new(params);
    let mut fails = Vec::new();
    let mut startup_done = None;
    for (i, s) in samples.iter().enumerate() {
        let before = h.counters();
        h.feed(*s);
        let after = h.counters();
        if after.rct_failures > before.rct_failures {
            fails.push((i, Failure::Rct));
        }
        if after.apt_failures > before.apt_failures {
            fails.push((i, Failure::Apt));
        }
        if startup_done.is_none() && h.startup_done() {
            startup_done = Some(i);
        }
    }
    HealthCase {
        name: name.into(),
        symbol_bits: params.symbol_bits,
        rct_cutoff: h.rct_cutoff(),
        apt_cutoff: h.apt_cutoff(),
        apt_window: params.apt_window,
        startup: params.startup_samples,
        samples: samples.to_vec(),
        fails,
        startup_done,
    }
}

fn hex_line(tag: &str, words: &[u32]) -> String {
    let mut s = String::with_capacity(tag.len() + words.len() * 9);
    s.push_str(tag);
    for w in words {
        s.push_str(&format!(" {w:x}"));
    }
    s
}

/// The text form of `cases` (module docs).
pub fn to_text(cases: &[Case]) -> String {
    let mut out = vec![HEADER.to_string()];
    for case in cases {
        match case {
            Case::Conditioner(c) => {
                out.push(format!("case conditioner {}", c.name));
                out.push(format!(
                    "config reseed_interval={} selfmix_interval={} selfmix_enable={}",
                    c.reseed_interval, c.selfmix_interval, c.selfmix_enable as u8
                ));
                out.push(hex_line("raw", &c.raw));
                for (j, ws) in &c.seeds {
                    out.push(hex_line(&format!("seed {j}"), ws));
                }
                out.push(hex_line("out", &c.out));
            }
            Case::Health(h) => {
                out.push(format!("case health {}", h.name));
                out.push(format!(
                    "params symbol_bits={} rct_cutoff={} apt_cutoff={} apt_window={} startup={}",
                    h.symbol_bits, h.rct_cutoff, h.apt_cutoff, h.apt_window, h.startup
                ));
                out.push(hex_line("samples", &h.samples));
                for (i, f) in &h.fails {
                    out.push(format!("fail {i} {}", if *f == Failure::Rct { "rct" } else { "apt" }));
                }
                out.push(format!("startup_done {}", h.startup_done.map(|i| i as i64).unwrap_or(-1)));
            }
        }
        out.push("end".into());
    }
    out.push(String::new());
    out.join("\n")
}

fn parse_hex(line_no: usize, items: &[&str]) -> Result<Vec<u32>, String> {
    items
        .iter()
        .map(|t| u32::from_str_radix(t, 16).map_err(|_| format!("line {line_no}: bad hex word {t:?}")))
        .collect()
}

fn kv(line_no: usize, items: &[&str], keys: &[&str]) -> Result<Vec<u64>, String> {
    let mut vals = Vec::new();
    for k in keys {
        let v = items
            .iter()
            .find_map(|t| t.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
            .ok_or_else(|| format!("line {line_no}: missing {k}="))?;
        vals.push(v.parse::<u64>().map_err(|_| format!("line {line_no}: bad value for {k}: {v:?}"))?);
    }
    if items.len() != keys.len() {
        return Err(format!("line {line_no}: expected exactly {}", keys.join(", ")));
    }
    Ok(vals)
}

/// Parse the text form; every malformed line is an error naming its line number.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut lines =
        text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    match lines.next() {
        Some((_, l)) if l == HEADER => {}
        Some((n, l)) => return Err(format!("line {n}: expected {HEADER:?}, got {l:?}")),
        None => return Err("empty vector file".into()),
    }
    let mut cases = Vec::new();
    let mut cur: Option<Case> = None;
    for (n, line) in lines {
        let items: Vec<&str> = line.split_whitespace().collect();
        let (tag, rest) = (items[0], &items[1..]);
        match (tag, cur.as_mut()) {
            ("case", None) => {
                let [kind, name] = rest else { return Err(format!("line {n}: expected `case KIND NAME`")) };
                cur = Some(match *kind {
                    "conditioner" => Case::Conditioner(CondCase {
                        name: name.to_string(),
                        reseed_interval: 0,
                        selfmix_interval: 0,
                        selfmix_enable: false,
                        raw: vec![],
                        seeds: vec![],
                        out: vec![],
                    }),
                    "health" => Case::Health(HealthCase {
                        name: name.to_string(),
                        symbol_bits: 0,
                        rct_cutoff: 0,
                        apt_cutoff: 0,
                        apt_window: 0,
                        startup: 0,
                        samples: vec![],
                        fails: vec![],
                        startup_done: None,
                    }),
                    other => return Err(format!("line {n}: unknown case kind {other:?}")),
                });
            }
            ("case", Some(_)) => return Err(format!("line {n}: `case` inside a case (missing `end`)")),
            ("end", Some(_)) => {
                let c = cur.take().unwrap();
                validate(&c).map_err(|e| format!("line {n}: {e}"))?;
                cases.push(c);
            }
            (_, None) => return Err(format!("line {n}: {tag:?} outside a case")),
            ("config", Some(Case::Conditioner(c))) => {
                let v = kv(n, rest, &["reseed_interval", "selfmix_interval", "selfmix_enable"])?;
                if v[0] == 0 || v[0] > 0xFFF || v[1] == 0 || v[1] > 0xFFFF || v[2] > 1 {
                    return Err(format!("line {n}: config out of range (intervals 1..=4095 / 1..=65535, enable 0|1)"));
                }
                (c.reseed_interval, c.selfmix_interval, c.selfmix_enable) = (v[0] as u32, v[1] as u32, v[2] == 1);
            }
            ("raw", Some(Case::Conditioner(c))) => c.raw.extend(parse_hex(n, rest)?),
            ("seed", Some(Case::Conditioner(c))) => {
                let j = rest
                    .first()
                    .and_then(|t| t.parse::<usize>().ok())
                    .ok_or_else(|| format!("line {n}: expected `seed INDEX WORD...`"))?;
                let ws = parse_hex(n, &rest[1..])?;
                if ws.is_empty() {
                    return Err(format!("line {n}: seed without words"));
                }
                c.seeds.push((j, ws));
            }
            ("out", Some(Case::Conditioner(c))) => c.out.extend(parse_hex(n, rest)?),
            ("params", Some(Case::Health(h))) => {
                let v = kv(n, rest, &["symbol_bits", "rct_cutoff", "apt_cutoff", "apt_window", "startup"])?;
                if !(1..=32).contains(&v[0]) || v.iter().skip(1).any(|x| *x > u32::MAX as u64) {
                    return Err(format!("line {n}: params out of range"));
                }
                (h.symbol_bits, h.rct_cutoff, h.apt_cutoff, h.apt_window, h.startup) =
                    (v[0] as u32, v[1] as u32, v[2] as u32, v[3] as u32, v[4] as u32);
            }
            ("samples", Some(Case::Health(h))) => h.samples.extend(parse_hex(n, rest)?),
            ("fail", Some(Case::Health(h))) => {
                let [i, t] = rest else { return Err(format!("line {n}: expected `fail INDEX rct|apt`")) };
                let i = i.parse::<usize>().map_err(|_| format!("line {n}: bad index {i:?}"))?;
                let f = match *t {
                    "rct" => Failure::Rct,
                    "apt" => Failure::Apt,
                    other => return Err(format!("line {n}: unknown test {other:?}")),
                };
                h.fails.push((i, f));
            }
            ("startup_done", Some(Case::Health(h))) => {
                let [i] = rest else { return Err(format!("line {n}: expected `startup_done INDEX`")) };
                let i = i.parse::<i64>().map_err(|_| format!("line {n}: bad index {i:?}"))?;
                h.startup_done = if i < 0 { None } else { Some(i as usize) };
            }
            (other, Some(_)) => return Err(format!("line {n}: unknown or misplaced line {other:?}")),
        }
    }
    if cur.is_some() {
        return Err("the last case has no `end`".into());
    }
    Ok(cases)
}

fn validate(c: &Case) -> Result<(), String> {
    match c {
        Case::Conditioner(c) => {
            if c.reseed_interval == 0 {
                return Err(format!("{}: no config line", c.name));
            }
            if c.out.is_empty() || c.out.len() % 16 != 0 {
                return Err(format!("{}: output must be whole 16-word blocks", c.name));
            }
            if c.raw.len() < raw_words_needed(c.reseed_interval, c.out.len() / 16) {
                return Err(format!("{}: fewer raw words than the output needs", c.name));
            }
            if let Some((j, _)) = c.seeds.iter().find(|(j, _)| *j >= c.raw.len()) {
                return Err(format!("{}: seed tagged with raw index {j} beyond the raw words", c.name));
            }
        }
        Case::Health(h) => {
            if h.symbol_bits == 0 {
                return Err(format!("{}: no params line", h.name));
            }
            if let Some((i, _)) = h.fails.iter().find(|(i, _)| *i >= h.samples.len()) {
                return Err(format!("{}: failure at index {i} beyond the samples", h.name));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(seed: u32, n: usize) -> Vec<u32> {
        let mut r = det_rng::XorShift32(seed);
        (0..n).map(|_| r.next()).collect()
    }

    #[test]
    fn conditioner_case_matches_a_direct_run() {
        // the case runner and a plain generate() call over the same words agree
        let raw = xorshift(7, 64);
        let case = conditioner_case("t", 2, 3, true, &raw, &[], 6).unwrap();
        assert_eq!(case.out.len(), 96);
        assert_eq!(case.raw.len(), raw_words_needed(2, 6));
        let cfg = ConditionerConfig {
            reseed_interval: 2,
            selfmix_interval: 3,
            selfmix_enable: true,
            fast_key_erasure: false,
        };
        let mut c = Conditioner::new(cfg);
        for w in &raw[..28] {
            c.absorb(*w);
        }
        let mut it = raw[28..].iter().copied();
        let mut bytes = vec![0u8; 6 * 64];
        c.generate(&mut bytes, &mut || it.next()).unwrap();
        let words: Vec<u32> = bytes.chunks(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        assert_eq!(words, case.out);
    }

    #[test]
    fn user_seeds_change_the_output_from_their_word_on() {
        let raw = xorshift(9, 64);
        let plain = conditioner_case("a", 1, 64, false, &raw, &[], 4).unwrap();
        // a seed folded into the first reseed word (index 28) changes blocks 2.. only
        let seeded = conditioner_case("b", 1, 64, false, &raw, &[(28, vec![0x1234_5678])], 4).unwrap();
        assert_eq!(plain.out[..16], seeded.out[..16]);
        assert_ne!(plain.out[16..32], seeded.out[16..32]);
        // two seed words before the same raw word are XORed together
        let a = conditioner_case("c", 1, 64, false, &raw, &[(5, vec![3, 5])], 2).unwrap();
        let b = conditioner_case("d", 1, 64, false, &raw, &[(5, vec![6])], 2).unwrap();
        assert_eq!(a.out, b.out);
        assert!(conditioner_case("e", 1, 64, false, &raw[..20], &[], 1).is_err());
    }

    #[test]
    fn health_case_reports_each_failure() {
        let p = HealthParams::new(5, 2.0, 40, 512, 16);
        let mut s = xorshift(3, 600);
        for v in s.iter_mut().skip(100).take(40) {
            *v = 0x13;
        }
        let h = health_case("stuck", p, &s);
        assert_eq!(h.rct_cutoff, 21);
        assert_eq!(h.fails[0], (99 + 21, Failure::Rct), "fires on the 21st repeat of the run starting at 100");
        assert_eq!(h.startup_done, Some(15));
    }

    #[test]
    fn text_round_trip_and_malformed_files() {
        let raw = xorshift(5, 40);
        let p = HealthParams::new(1, 0.5, 40, 1024, 8);
        let cases = vec![
            Case::Conditioner(conditioner_case("c1", 2, 3, true, &raw, &[(30, vec![0xdead_beef, 1])], 4).unwrap()),
            Case::Health(health_case("h1", p, &xorshift(1, 300).iter().map(|w| w & 1).collect::<Vec<_>>())),
        ];
        let text = to_text(&cases);
        assert_eq!(parse(&text).unwrap(), cases);
        let bad = [
            ("", "empty"),
            ("trng-vectors 2\n", "expected"),
            ("trng-vectors 1\ncase conditioner x\nconfig reseed_interval=0 selfmix_interval=1 selfmix_enable=0\nend\n", "out of range"),
            ("trng-vectors 1\ncase conditioner x\nend\n", "no config"),
            ("trng-vectors 1\ncase conditioner x\nraw zz\nend\n", "bad hex"),
            ("trng-vectors 1\ncase weird x\nend\n", "unknown case kind"),
            ("trng-vectors 1\nraw 1\n", "outside a case"),
            ("trng-vectors 1\ncase health h\nparams symbol_bits=5\nend\n", "missing"),
            ("trng-vectors 1\ncase health h\nfail x rct\nend\n", "bad index"),
            ("trng-vectors 1\ncase health h\nfail 1 xyz\nend\n", "unknown test"),
            ("trng-vectors 1\ncase health h\n", "no `end`"),
            ("trng-vectors 1\ncase health h\ncase health i\n", "inside a case"),
            ("trng-vectors 1\ncase conditioner x\nconfig reseed_interval=1 selfmix_interval=1 selfmix_enable=0\nraw 1 2\nout 1\nend\n", "whole 16-word"),
        ];
        for (t, want) in bad {
            let e = parse(t).err().unwrap_or_else(|| panic!("accepted {t:?}"));
            assert!(e.contains(want), "{t:?}: {e}");
        }
    }
}
