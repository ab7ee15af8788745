//! How one condition tests one argument value: a glob on its readings (`args.NAME`,
//! `any_arg`), a regular expression (`args_regex.NAME`, `any_arg_regex`), numeric bounds
//! (`args_number.NAME`) or a glob on the host of a URL (`args_host.NAME`,
//! `any_arg_host`).
//!
//! Every test reads a value the way its action needs: a deny-like condition holds when
//! any reading a server might make of the value matches (see [`crate::normalize`]); an
//! allow only when every reading of the value as written does.

use std::fmt;

use clawai_protocol::Json;
use regex::Regex;

use crate::call::FollowLinks;
use crate::glob::Glob;
use crate::normalize::{is_plain, normalize, other_names_match, readings, spelled_path};
use crate::urls;

/// How a condition combines several readings or array elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quantifier {
    Any,
    Every,
}

impl Quantifier {
    /// `Any` for `Every` and the reverse.
    pub(crate) fn opposite(self) -> Quantifier {
        match self {
            Quantifier::Any => Quantifier::Every,
            Quantifier::Every => Quantifier::Any,
        }
    }

    pub(crate) fn over<T>(self, items: impl IntoIterator<Item = T>, mut test: impl FnMut(T) -> bool) -> bool {
        let mut seen = false;
        for item in items {
            seen = true;
            let hit = test(item);
            match self {
                Quantifier::Any if hit => return true,
                Quantifier::Every if !hit => return false,
                _ => {}
            }
        }
        // `Every` over nothing is not a match: an allow needs something to match.
        self == Quantifier::Every && seen
    }
}

/// What a condition requires of one value.
#[derive(Debug, Clone)]
pub(crate) enum ValueTest {
    /// A glob on the value's readings (numbers, booleans and null as their JSON text).
    Glob(Glob),
    /// A regular expression that must find a match in the value (unanchored).
    Regex(Regex),
    /// Bounds on a number.
    Number(Bounds),
    /// A glob on the host of the URL the value is.
    Host(Glob),
}

/// Numeric bounds: every bound given must hold.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Bounds {
    pub(crate) gt: Option<f64>,
    pub(crate) gte: Option<f64>,
    pub(crate) lt: Option<f64>,
    pub(crate) lte: Option<f64>,
}

impl Bounds {
    fn hold(&self, x: f64) -> bool {
        self.gt.is_none_or(|b| x > b)
            && self.gte.is_none_or(|b| x >= b)
            && self.lt.is_none_or(|b| x < b)
            && self.lte.is_none_or(|b| x <= b)
    }

    /// True when no number satisfies every bound (`gt = 5, lt = 3`).
    pub(crate) fn is_empty(&self) -> bool {
        let low = self.gt.into_iter().chain(self.gte).fold(f64::NEG_INFINITY, f64::max);
        let high = self.lt.into_iter().chain(self.lte).fold(f64::INFINITY, f64::min);
        let open = (self.gt == Some(low) && self.gt.is_some()) || (self.lt == Some(high) && self.lt.is_some());
        low > high || (low == high && open)
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [("> ", self.gt), (">= ", self.gte), ("< ", self.lt), ("<= ", self.lte)]
            .into_iter()
            .filter_map(|(op, b)| b.map(|b| format!("{op}{b}")))
            .collect();
        f.write_str(&parts.join(" and "))
    }
}

impl ValueTest {
    /// The test on a leaf of the arguments (not an array or object).
    pub(crate) fn leaf(&self, value: &Json, q: Quantifier, follow: Option<FollowLinks>) -> bool {
        match self {
            ValueTest::Glob(glob) => glob_leaf(value, glob, q, follow),
            ValueTest::Number(bounds) => number(value, q).is_some_and(|x| bounds.hold(x)),
            ValueTest::Regex(_) | ValueTest::Host(_) => match value {
                Json::String(s) => self.string(s, q, follow),
                Json::Number(n) if matches!(self, ValueTest::Regex(_)) => {
                    // A deny-like test also sees the integer a server reads (`22.0` is 22).
                    self.string(&n.to_string(), q, follow)
                        || (q == Quantifier::Any && integer_text(n).is_some_and(|whole| self.string(&whole, q, follow)))
                }
                Json::Bool(b) if matches!(self, ValueTest::Regex(_)) => {
                    self.string(if *b { "true" } else { "false" }, q, follow)
                }
                _ => false,
            },
        }
    }

    /// The test on one string (what `any_arg*` conditions look at).
    pub(crate) fn string(&self, s: &str, q: Quantifier, follow: Option<FollowLinks>) -> bool {
        match self {
            ValueTest::Glob(glob) => string_matches(s, glob, q, follow),
            ValueTest::Regex(re) => {
                q.over(readings(s), |r| re.is_match(&r))
                    || (q == Quantifier::Any && urls::canonical_url(s).is_some_and(|u| re.is_match(&u)))
            }
            ValueTest::Host(glob) => {
                // The host as a WHATWG parser (Node, browsers) and as an RFC 3986 parser
                // (Python, Go, curl) read it: a deny-like test holds when either matches,
                // an allow needs every host read to match.
                let host_matches = |r: &str| {
                    let hosts = [urls::host(r), urls::rfc3986_host(r)];
                    let test =
                        |h: &String| glob.is_match(h) || (q == Quantifier::Any && glob.matches_only_ignoring_case(h));
                    q.over(hosts.iter().flatten(), test)
                };
                q.over(readings(s), |r| host_matches(&r))
            }
            ValueTest::Number(bounds) => number(&Json::String(s.into()), q).is_some_and(|x| bounds.hold(x)),
        }
    }

    /// The key the condition is written with, before `.NAME` (`args`, `args_regex`…).
    pub(crate) fn args_key(&self) -> &'static str {
        match self {
            ValueTest::Glob(_) => "args",
            ValueTest::Regex(_) => "args_regex",
            ValueTest::Number(_) => "args_number",
            ValueTest::Host(_) => "args_host",
        }
    }

    /// The `any_arg` key the condition is written with.
    pub(crate) fn any_arg_key(&self) -> &'static str {
        match self {
            ValueTest::Glob(_) => "any_arg",
            ValueTest::Regex(_) => "any_arg_regex",
            ValueTest::Host(_) => "any_arg_host",
            ValueTest::Number(_) => "any_arg_number",
        }
    }
}

impl fmt::Display for ValueTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueTest::Glob(g) => write!(f, "{g}"),
            ValueTest::Regex(r) => write!(f, "/{}/", r.as_str()),
            ValueTest::Number(b) => write!(f, "{b}"),
            ValueTest::Host(g) => write!(f, "host {g}"),
        }
    }
}

/// The number a value stands for. An allow reads JSON numbers only; a deny-like test also
/// reads a string that holds nothing but a number (`"1e6"`, `" 250 "`, `"0x10"`), as a
/// server that coerces its input (`Number(x)`, `float(x)`, zod's `coerce`) would.
fn number(value: &Json, q: Quantifier) -> Option<f64> {
    let x = match value {
        Json::Number(n) => n.as_f64(),
        Json::String(s) if q == Quantifier::Any => {
            // Python reads `1_000` as 1000; `inf` and `1e999` are beyond any bound.
            let t: String = s.trim().chars().filter(|c| *c != '_').collect();
            match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as f64),
                None => t.parse::<f64>().ok().filter(|x| !x.is_nan()),
            }
        }
        _ => None,
    }?;
    // An allow takes finite JSON numbers only (which is all JSON has).
    (q == Quantifier::Any || x.is_finite()).then_some(x)
}

fn glob_leaf(value: &Json, glob: &Glob, q: Quantifier, follow: Option<FollowLinks>) -> bool {
    match value {
        Json::String(s) => string_matches(s, glob, q, follow),
        Json::Number(n) => {
            let text = n.to_string();
            glob.is_match(&text)
                || (q == Quantifier::Any && integer_text(n).is_some_and(|whole| whole != text && glob.is_match(&whole)))
        }
        Json::Bool(b) => glob.is_match(if *b { "true" } else { "false" }),
        Json::Null => glob.is_match("null"),
        Json::Array(_) | Json::Object(_) => false,
    }
}

/// A number written with a fraction or an exponent (`22.0`, `2.2e1`) whose value is a
/// whole number, as that number's integer text (`22`): a server reads it as 22, so a
/// deny-like `args.port = "22"` must see it too. An allow keeps the text as written.
fn integer_text(n: &serde_json::Number) -> Option<String> {
    // Integers (i64/u64) are already written as their integer text.
    let value = n.as_f64().filter(|_| n.is_f64())?;
    // Beyond 2^63 the integer text would not be exact; such values are no port or count.
    (value.is_finite() && value.fract() == 0.0 && value.abs() < 9.2e18).then(|| format!("{}", value as i64))
}

pub(crate) fn string_matches(s: &str, glob: &Glob, q: Quantifier, follow: Option<FollowLinks>) -> bool {
    // A deny-like condition also holds when a reading matches ignoring case: on macOS
    // and Windows `~/.SSH/id_rsa` opens `~/.ssh/id_rsa`. (Elsewhere that only denies a
    // differently spelled name too.) An allow keeps exact case: folding would widen it.
    // It also holds on the other names a server may open for a reading (`~/x` in the
    // home directory, the path of a `file:` URL and the reverse, where symbolic links
    // lead when the caller follows them), and on the URL a URL parser makes of a reading
    // (`HTTP://user@Evil.example.:80/` is `http://evil.example/`).
    // An allow, when links are followed, also needs where a path leads to match, so
    // that a link inside an allowed directory does not let a call out of it.
    let deny_like = q == Quantifier::Any;
    let by_case = |r: &str| glob.matches_only_ignoring_case(r);
    let by_other_name =
        |r: &str| other_names_match(r, glob.names_file_urls(), follow, |name| glob.is_match(name) || by_case(name));
    let by_url = |r: &str| {
        [urls::canonical_url(r), urls::rfc3986_url(r)]
            .into_iter()
            .flatten()
            .any(|url| glob.is_match(&normalize(&url)) || by_case(&url))
    };
    let matches = |r: &str| glob.is_match(r) && (deny_like || linked_matches(r, glob, follow));
    if is_plain(s) {
        // The only reading is the text itself (most arguments): no list to build.
        return matches(s) || (deny_like && (by_case(s) || by_other_name(s) || by_url(s)));
    }
    // Each reading is folded, not the text: `%53` reads as `S`.
    let readings = readings(s);
    q.over(&readings, |r| matches(r))
        || (deny_like && readings.iter().any(|r| by_case(r) || by_other_name(r) || by_url(r)))
}

/// For an allow: true unless `reading` is an absolute path or `file:` URL that leads,
/// through symbolic links, somewhere `glob` does not match (spelled the same way: a
/// path as a path, a URL as a URL). Always true when links are not followed.
fn linked_matches(reading: &str, glob: &Glob, follow: Option<FollowLinks>) -> bool {
    let Some(follow) = follow else { return true };
    match spelled_path(reading) {
        Some((path, true)) => follow(path).is_none_or(|real| glob.is_match(&format!("file://{real}"))),
        Some((path, false)) => follow(path).is_none_or(|real| glob.is_match(&real)),
        None => true,
    }
}
