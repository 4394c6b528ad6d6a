//! The option parser both servers use: every option is a command-line flag and, optionally, an
//! environment variable (hosted systems pass options either way). Arguments win over the
//! environment; an empty environment variable counts as unset. Every malformed input is a
//! clear error naming the flag or variable.
//!
//! ```
//! use service_ipc::options::{Opt, Takes, parse};
//! const OPTS: &[Opt] = &[
//!     Opt { flag: "--queue", env: Some("SVC_QUEUE"), takes: Takes::Value },
//!     Opt { flag: "--verbose", env: None, takes: Takes::Nothing },
//! ];
//! let args: Vec<String> = vec!["--queue=0x10".into()];
//! let p = parse(OPTS, &args, &|_| None).unwrap();
//! assert_eq!(p.u64("--queue").unwrap(), Some(16));
//! assert!(!p.is_set("--verbose"));
//! ```

/// What follows a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// `--flag` alone (a switch; its variable may hold any value, read with [`Parsed::get`])
    Nothing,
    /// `--flag VALUE` or `--flag=VALUE`
    Value,
    /// `--flag` or `--flag=VALUE` (never takes the next argument)
    OptionalValue,
}

/// One option.
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    pub flag: &'static str,
    pub env: Option<&'static str>,
    pub takes: Takes,
}

/// Parsed options: for each option given, its value and where it came from.
#[derive(Debug, Default)]
pub struct Parsed {
    given: Vec<(&'static str, Option<String>, String)>,
}

impl Parsed {
    fn entry(&self, flag: &str) -> Option<&(&'static str, Option<String>, String)> {
        self.given.iter().rev().find(|(f, _, _)| *f == flag)
    }
    /// True if the option was given (as a flag or a non-empty variable).
    pub fn is_set(&self, flag: &str) -> bool {
        self.entry(flag).is_some()
    }
    /// The option's value (None: not given, or given as a bare switch).
    pub fn get(&self, flag: &str) -> Option<&str> {
        self.entry(flag).and_then(|(_, v, _)| v.as_deref())
    }
    /// Where the option came from (the flag or the variable name), for error messages.
    pub fn source<'a>(&'a self, flag: &'a str) -> &'a str {
        self.entry(flag).map(|(_, _, s)| s.as_str()).unwrap_or(flag)
    }
    /// The value as a number (decimal or 0x hex, `_` separators allowed).
    pub fn u64(&self, flag: &str) -> Result<Option<u64>, String> {
        self.get(flag).map(|v| parse_u64(self.source(flag), v)).transpose()
    }
    /// The value checked against a list of names.
    pub fn one_of(&self, flag: &str, names: &[&str]) -> Result<Option<&str>, String> {
        match self.get(flag) {
            None => Ok(None),
            Some(v) if names.contains(&v) => Ok(Some(v)),
            Some(v) => Err(format!("{}: unknown value '{}' (expected {})", self.source(flag), v, names.join(", "))),
        }
    }
}

/// A number: decimal or `0x` hex, `_` separators allowed.
pub fn parse_u64(name: &str, v: &str) -> Result<u64, String> {
    let t = v.replace('_', "");
    let r = if let Some(h) = t.strip_prefix("0x") { u64::from_str_radix(h, 16) } else { t.parse() };
    r.map_err(|_| format!("{}: '{}' is not a number", name, v))
}

/// Parse `args` (after the program name) and the environment lookup `getenv` against `opts`.
pub fn parse(opts: &[Opt], args: &[String], getenv: &dyn Fn(&str) -> Option<String>) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    for o in opts {
        if let Some(var) = o.env {
            if let Some(v) = getenv(var).filter(|v| !v.is_empty()) {
                p.given.push((o.flag, Some(v), var.to_string()));
            }
        }
    }
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a, None),
        };
        let Some(o) = opts.iter().find(|o| o.flag == name) else {
            return Err(format!("unknown option '{}'", a));
        };
        let value = match (o.takes, inline) {
            (Takes::Nothing, Some(_)) => return Err(format!("{} takes no value", o.flag)),
            (Takes::Nothing, None) | (Takes::OptionalValue, None) => None,
            (_, Some(v)) => Some(v),
            (Takes::Value, None) => {
                i += 1;
                Some(args.get(i).cloned().ok_or_else(|| format!("{} needs a value", o.flag))?)
            }
        };
        p.given.push((o.flag, value, o.flag.to_string()));
        i += 1;
    }
    Ok(p)
}

/// Options of this process: `std::env::args()` and `std::env::var`.
pub fn parse_process(opts: &[Opt]) -> Result<Parsed, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    parse(opts, &args, &|k: &str| std::env::var(k).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        Opt { flag: "--n", env: Some("T_N"), takes: Takes::Value },
        Opt { flag: "--pace", env: Some("T_PACE"), takes: Takes::OptionalValue },
        Opt { flag: "--off", env: Some("T_OFF"), takes: Takes::Nothing },
        Opt { flag: "--mode", env: None, takes: Takes::Value },
    ];

    fn run(args: &[&str], env: &[(&str, &str)]) -> Result<Parsed, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        parse(OPTS, &args, &move |k| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn values_switches_and_precedence() {
        let p = run(&["--n", "1_000", "--pace", "--off"], &[]).unwrap();
        assert_eq!(p.u64("--n").unwrap(), Some(1000));
        assert!(p.is_set("--pace") && p.get("--pace").is_none());
        assert!(p.is_set("--off"));
        let p = run(&["--n=0x20", "--pace=5"], &[("T_N", "3"), ("T_OFF", "1")]).unwrap();
        assert_eq!((p.u64("--n").unwrap(), p.u64("--pace").unwrap(), p.get("--off")), (Some(32), Some(5), Some("1")));
        let p = run(&[], &[("T_N", "")]).unwrap();
        assert!(!p.is_set("--n"), "empty variable = unset");
        assert_eq!(run(&["--mode", "b"], &[]).unwrap().one_of("--mode", &["a", "b"]).unwrap(), Some("b"));
    }

    #[test]
    fn malformed_input_is_a_clear_error() {
        for (args, env, want) in [
            (&["--n"][..], &[][..], "--n needs a value"),
            (&["--x"][..], &[][..], "unknown option '--x'"),
            (&["-n", "3"][..], &[][..], "unknown option '-n'"),
            (&["--off=1"][..], &[][..], "--off takes no value"),
        ] {
            let e = run(args, env).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(want), "{args:?}: {e}");
        }
        let e = run(&["--n", "ten"], &[]).unwrap().u64("--n").unwrap_err();
        assert!(e.contains("--n: 'ten' is not a number"), "{e}");
        let e = run(&[], &[("T_N", "-1")]).unwrap().u64("--n").unwrap_err();
        assert!(e.contains("T_N: '-1' is not a number"), "{e}");
        let e = run(&["--mode", "z"], &[]).unwrap().one_of("--mode", &["a", "b"]).unwrap_err();
        assert!(e.contains("--mode: unknown value 'z' (expected a, b)"), "{e}");
    }
}
