//! The TRNG tester's sources and the dieharder levels, shared by the command, the steps and
//! the parsers.

/// Tester sources (names as in spec/trng.toml [tester.modes] and the tool's --source).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Cprng,
    Av,
    Ro,
    Both,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Cprng => "cprng",
            Source::Av => "av",
            Source::Ro => "ro",
            Source::Both => "both",
        }
    }
}

/// How much of dieharder to run.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// A few fast tests (~30 s): smoke level.
    Quick,
    /// The CI subset (docs/trng-tester-protocol.md), one process per test.
    Ci,
    /// `dieharder -a` (about an hour and ~250 GB of input).
    Full,
}
