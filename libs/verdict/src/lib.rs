//! The one line format in which hosted test programs (apps/hosted-tests, the smoke client) report
//! their verdict, and the one parser `cargo xtask` reads it with (docs/hosted.md).
//!
//! ```text
//! VERDICT <subject> <STATUS>[ <key>=<value>]*[ -- <detail>]
//! ```
//!
//! * `subject`: what is judged, one word: a program (`engine-load/3`, `smoke`) or one scripted
//!   step (`engine/x25519-rfc7748`).
//! * `STATUS`: `BEGIN` (a step starts; lets the harness name a step that hangs), `PASS` or `FAIL`.
//!   The program that ran the test decides PASS or FAIL itself, against its own limits; a reader
//!   never re-judges the figures.
//! * `key=value` fields: figures for the log and for benchmarks (`done=100 wrong=0`); keys and
//!   values contain no whitespace and no key repeats.
//! * `-- detail`: free text to the end of the line (the reason of a failure, debug output).
//!
//! The marker may follow other text on the line (an output prefix), but must start a word.

//! Without the default `std` feature the crate is `no_std`: the constants, [`Status`] and the
//! allocation-free line writers [`write_head`], [`write_field`], [`write_detail`] (bare-metal
//! firmware such as firmware/soc-bench prints its verdict with them); the parser and
//! [`Verdict`] need `std`.
//!
//! Benchmark figures have a line of their own, written and found with [`bench`]:
//!
//! ```text
//! BENCH-JSON {"<key>": <number>, ...}
//! ```
//!
//! one flat JSON object (key -> number) after the marker; `cargo xtask bench` merges every
//! provider's keys into one table.

#![cfg_attr(not(feature = "std"), no_std)]

use core::fmt;

/// The word every verdict line carries.
pub const MARKER: &str = "VERDICT";
/// Separates the fields from the free-text detail.
pub const DETAIL_SEPARATOR: &str = "--";

/// What a verdict line says about its subject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// A step starts (no judgement yet).
    Begin,
    Pass,
    Fail,
}

impl Status {
    /// Every status, for parsers and tests.
    pub const ALL: [Status; 3] = [Status::Begin, Status::Pass, Status::Fail];

    /// The word on the line.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Begin => "BEGIN",
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
        }
    }

    #[cfg(feature = "std")]
    fn from_word(w: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == w)
    }
}

#[cfg(feature = "std")]
/// One verdict line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub subject: String,
    pub status: Status,
    /// `key=value` fields in line order.
    pub fields: Vec<(String, String)>,
    /// Free text after ` -- ` (empty if none).
    pub detail: String,
}

#[cfg(feature = "std")]
/// Why a line that carries the marker is not a well-formed verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    MissingSubject,
    MissingStatus,
    UnknownStatus(String),
    /// A word between the status and ` -- ` that is not `key=value` with a non-empty key.
    BadField(String),
    DuplicateKey(String),
}

#[cfg(feature = "std")]
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::MissingSubject => write!(f, "{MARKER} line without a subject"),
            ParseError::MissingStatus => write!(f, "{MARKER} line without a status (BEGIN, PASS or FAIL)"),
            ParseError::UnknownStatus(s) => write!(f, "unknown {MARKER} status {s:?} (BEGIN, PASS or FAIL)"),
            ParseError::BadField(w) => write!(f, "{MARKER} field {w:?} is not key=value"),
            ParseError::DuplicateKey(k) => write!(f, "{MARKER} field {k:?} given twice"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ParseError {}

#[cfg(feature = "std")]
/// Field values and subjects are single words: whitespace becomes `_`, an empty one `-`.
fn word(s: &str) -> String {
    if s.is_empty() {
        return "-".into();
    }
    s.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect()
}

#[cfg(feature = "std")]
impl Verdict {
    pub fn new(subject: &str, status: Status) -> Verdict {
        Verdict { subject: word(subject), status, fields: Vec::new(), detail: String::new() }
    }

    /// PASS if `ok`, else FAIL.
    pub fn judged(subject: &str, ok: bool) -> Verdict {
        Verdict::new(subject, if ok { Status::Pass } else { Status::Fail })
    }

    /// Adds (or replaces) a `key=value` field; whitespace in either becomes `_`.
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> Verdict {
        let (k, v) = (word(key), word(&value.to_string()));
        match self.fields.iter_mut().find(|(fk, _)| *fk == k) {
            Some(f) => f.1 = v,
            None => self.fields.push((k, v)),
        }
        self
    }

    /// Sets the free-text detail (line breaks become spaces).
    pub fn detail(mut self, text: impl fmt::Display) -> Verdict {
        self.detail = text.to_string().replace(['\n', '\r'], " ");
        self
    }

    pub fn passed(&self) -> bool {
        self.status == Status::Pass
    }

    /// The value of field `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Field `key` as an unsigned number.
    pub fn num(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }

    /// The verdict in a line of text: `None` if the line carries no marker word, else the
    /// parsed verdict or why it is malformed.
    pub fn parse(line: &str) -> Option<Result<Verdict, ParseError>> {
        let rest = marker_tail(line)?;
        Some(parse_tail(rest))
    }
}

#[cfg(feature = "std")]
/// Byte range of the first occurrence of `word` in `text` that is a whole word (whitespace or
/// the ends of `text` on both sides).
fn find_word(text: &str, word: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let (at, end) = (from + i, from + i + word.len());
        let starts_word = text[..at].chars().next_back().map_or(true, char::is_whitespace);
        let ends_word = text[end..].chars().next().map_or(true, char::is_whitespace);
        if starts_word && ends_word {
            return Some((at, end));
        }
        from = end;
    }
    None
}

#[cfg(feature = "std")]
/// The text after the first marker word of `line`.
fn marker_tail(line: &str) -> Option<&str> {
    find_word(line, MARKER).map(|(_, end)| &line[end..])
}

#[cfg(feature = "std")]
fn parse_tail(rest: &str) -> Result<Verdict, ParseError> {
    let (head, detail) = match split_detail(rest) {
        Some((h, d)) => (h, d.trim().to_string()),
        None => (rest, String::new()),
    };
    let mut words = head.split_whitespace();
    let subject = words.next().ok_or(ParseError::MissingSubject)?;
    let status = words.next().ok_or(ParseError::MissingStatus)?;
    let status = Status::from_word(status).ok_or_else(|| ParseError::UnknownStatus(status.into()))?;
    let mut v = Verdict { subject: subject.into(), status, fields: Vec::new(), detail };
    for w in words {
        let (k, val) =
            w.split_once('=').filter(|(k, _)| !k.is_empty()).ok_or_else(|| ParseError::BadField(w.into()))?;
        if v.get(k).is_some() {
            return Err(ParseError::DuplicateKey(k.into()));
        }
        v.fields.push((k.into(), val.into()));
    }
    Ok(v)
}

#[cfg(feature = "std")]
/// Splits at the first word that is exactly the separator.
fn split_detail(rest: &str) -> Option<(&str, &str)> {
    find_word(rest, DETAIL_SEPARATOR).map(|(at, end)| (&rest[..at], &rest[end..]))
}

#[cfg(feature = "std")]
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_head(f, &self.subject, self.status)?;
        for (k, v) in &self.fields {
            write_field(f, k, v)?;
        }
        if !self.detail.is_empty() {
            write_detail(f, &self.detail)?;
        }
        Ok(())
    }
}

/// The benchmark line: `BENCH-JSON {"key": number, ...}` (see the crate doc).
pub mod bench {
    /// The word a benchmark line starts with.
    pub const MARKER: &str = "BENCH-JSON";

    /// The median of a sample set, the figure most bench keys report (sorts in place; the mean
    /// of the middle two for an even count). Panics on an empty set or a NaN.
    pub fn median(samples: &mut [f64]) -> f64 {
        samples.sort_unstable_by(|a, b| a.partial_cmp(b).expect("a NaN sample"));
        let n = samples.len();
        assert!(n > 0, "the median of no samples");
        if n % 2 == 1 {
            samples[n / 2]
        } else {
            (samples[n / 2 - 1] + samples[n / 2]) / 2.0
        }
    }

    /// The JSON object of a benchmark line: the text after its marker (None: no marker).
    pub fn json_of(line: &str) -> Option<&str> {
        line.split_once(MARKER).map(|(_, j)| j.trim())
    }

    /// A benchmark line being built: keys are lower-case ASCII words (`[a-z0-9_]`), values
    /// numbers with a given count of decimals.
    #[cfg(feature = "std")]
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct BenchLine {
        fields: Vec<(String, String)>,
    }

    #[cfg(feature = "std")]
    impl BenchLine {
        pub fn new() -> Self {
            Self::default()
        }

        /// `key` with `value` printed with `decimals` decimals. A non-finite value is written
        /// as `null`, which a reader refuses as not a number.
        pub fn num(mut self, key: &str, value: f64, decimals: usize) -> Self {
            let v = if value.is_finite() { format!("{value:.decimals$}") } else { "null".into() };
            self.push(key, v);
            self
        }

        /// `key` with an integer value.
        pub fn int(mut self, key: &str, value: u64) -> Self {
            self.push(key, value.to_string());
            self
        }

        fn push(&mut self, key: &str, v: String) {
            assert!(
                !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "bench key {key:?}"
            );
            assert!(!self.fields.iter().any(|(k, _)| k == key), "bench key {key} twice");
            self.fields.push((key.to_string(), v));
        }

        /// The JSON object alone.
        pub fn json(&self) -> String {
            let body: Vec<String> = self.fields.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            format!("{{{}}}", body.join(", "))
        }
    }

    #[cfg(feature = "std")]
    impl core::fmt::Display for BenchLine {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "{MARKER} {}", self.json())
        }
    }
}

/// Writes the start of a verdict line, `VERDICT <subject> <STATUS>` (no allocation; `subject`
/// must be one word).
pub fn write_head(out: &mut impl fmt::Write, subject: &str, status: Status) -> fmt::Result {
    write!(out, "{MARKER} {subject} {}", status.as_str())
}

/// Writes one ` key=value` field (both single words).
pub fn write_field(out: &mut impl fmt::Write, key: &str, value: impl fmt::Display) -> fmt::Result {
    write!(out, " {key}={value}")
}

/// Writes ` -- <detail>` (the detail runs to the end of the line).
pub fn write_detail(out: &mut impl fmt::Write, detail: impl fmt::Display) -> fmt::Result {
    write!(out, " {DETAIL_SEPARATOR} {detail}")
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn bench_lines_are_flat_json_after_the_marker() {
        let l = bench::BenchLine::new().num("a_us_p50", 1.23456, 2).int("n", 7).num("bad", f64::NAN, 1);
        assert_eq!(l.to_string(), "BENCH-JSON {\"a_us_p50\": 1.23, \"n\": 7, \"bad\": null}");
        assert_eq!(bench::json_of(&format!("prefix: {l}")), Some(l.json().as_str()));
        assert_eq!(bench::json_of("VERDICT x PASS"), None);
        assert_eq!(bench::median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(bench::median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(std::panic::catch_unwind(|| bench::BenchLine::new().int("Bad Key", 1)).is_err());
        assert!(std::panic::catch_unwind(|| bench::BenchLine::new().int("k", 1).int("k", 2)).is_err());
    }

    #[test]
    fn round_trips() {
        let v = Verdict::judged("engine-load/3", true).with("done", 100).with("wrong", 0).detail("first error: -");
        let line = v.to_string();
        assert_eq!(line, "VERDICT engine-load/3 PASS done=100 wrong=0 -- first error: -");
        assert_eq!(Verdict::parse(&line), Some(Ok(v.clone())));
        assert!(v.passed());
        assert_eq!(v.num("done"), Some(100));
        assert_eq!(v.get("missing"), None);
        for s in Status::ALL {
            let v = Verdict::new("x", s);
            assert_eq!(Verdict::parse(&v.to_string()), Some(Ok(v)));
        }
    }

    #[test]
    fn values_stay_single_words_and_keys_unique() {
        let v = Verdict::judged("a step", false)
            .with("why", "two words")
            .with("n", 1)
            .with("n", 2)
            .with("e", "")
            .detail("x\ny");
        assert_eq!(v.to_string(), "VERDICT a_step FAIL why=two_words n=2 e=- -- x y");
        assert_eq!(Verdict::parse(&v.to_string()), Some(Ok(v)));
    }

    #[test]
    fn finds_the_marker_after_a_prefix_only_as_a_word() {
        let v = Verdict::parse("INFO:kernel: VERDICT smoke PASS pass=3 fail=0").unwrap().unwrap();
        assert_eq!((v.subject.as_str(), v.num("pass")), ("smoke", Some(3)));
        assert_eq!(Verdict::parse("no marker here"), None);
        assert_eq!(Verdict::parse("VERDICTS are words"), None);
        assert_eq!(Verdict::parse("XVERDICT a PASS"), None);
        // a later marker word still counts
        assert!(Verdict::parse("VERDICTx VERDICT a PASS").unwrap().is_ok());
        // `--` inside a word is not the separator
        let v = Verdict::parse("VERDICT a FAIL opt=--x -- why").unwrap().unwrap();
        assert_eq!((v.get("opt"), v.detail.as_str()), (Some("--x"), "why"));
    }

    #[test]
    fn malformed_lines_are_errors_not_verdicts() {
        use ParseError::*;
        for (line, want) in [
            ("VERDICT", MissingSubject),
            ("VERDICT   ", MissingSubject),
            ("VERDICT -- PASS", MissingSubject),
            ("VERDICT smoke", MissingStatus),
            ("VERDICT smoke ok", UnknownStatus("ok".into())),
            ("VERDICT smoke pass", UnknownStatus("pass".into())),
            ("VERDICT smoke PASS done", BadField("done".into())),
            ("VERDICT smoke PASS =1", BadField("=1".into())),
            ("VERDICT smoke PASS n=1 n=2", DuplicateKey("n".into())),
        ] {
            assert_eq!(Verdict::parse(line), Some(Err(want.clone())), "{line:?}");
            assert!(!want.to_string().is_empty());
        }
        // an empty value is a value
        assert_eq!(Verdict::parse("VERDICT s FAIL k=").unwrap().unwrap().get("k"), Some(""));
    }
}
