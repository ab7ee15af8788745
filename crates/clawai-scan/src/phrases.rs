//! The normalised pass: instruction-like text in the folded reading of a string.
//!
//! One `RegexSet` pass over all the strings of an item tells which detectors match at
//! all (most items: none); only those are run again for the places of the matches.
//! The text is the folded reading, ASCII-lowercased as it is joined (so patterns are
//! written in lowercase; `(?i)` would read the same at the same speed), and patterns
//! use ASCII word boundaries (the folded text is ASCII wherever an English phrase
//! could be).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use crate::encoded::BASE64;
use crate::finding::{Class, Severity};

/// One detector: what it finds, how bad, and its pattern.
struct Detector {
    class: Class,
    severity: Severity,
    detail: &'static str,
    pattern: &'static str,
    /// Text the pattern cannot match without one of these in it (lower-case), for
    /// results' quick test ([`result_may_match`]); empty when there is no such set.
    needs: &'static [&'static str],
    /// A quicker test of the same kind, where the literals are common in ordinary
    /// output (`<` in code and markup): false only where the pattern cannot match.
    lead: Option<fn(&str) -> bool>,
}

/// Tags addressed to a model. Only these names: `<example>` or `<b>` are ordinary markup.
const TAG: &str = r"<\s*/?\s*(?:important|system|system[ _-]?(?:prompt|message|instructions?)|instructions?|(?:ai|model|assistant|agent|tool|hidden|secret)[ _-]?instructions?|admin|override|hidden|secret|critical|priority|sudo)\s*/?\s*>|<\|\s*(?:im_start|im_end|system|endoftext)\s*\|>|<<\s*/?\s*sys\s*>>|\[/?inst\]|\[system\]";

const OVERRIDE: &str = r"(?-u:\b)(?:(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|of|my|these|those)\s+)*(?:previous|prior|above|earlier|preceding|former|original|system|safety|other)\s+(?:instructions?|rules|directions|directives|guidelines|prompts?|context|messages?|commands?|constraints|guardrails)|(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+(?:were|have\s+been)\s+told|(?:said|written|stated)\s+(?:above|before|earlier))|you\s+must\s+now|(?:new|updated|real)\s+system\s+(?:prompt|instructions?)|from\s+now\s+on,?\s+you\s+(?:must|will|shall|are)|you\s+are\s+now\s+(?:in\s+)?(?:developer|admin|god|jailbreak|dan|unrestricted)|(?:do\s+not|don't|never)\s+follow\s+(?:the\s+|your\s+|any\s+)?(?:previous|prior|system|original|other)\s+(?:instructions?|rules)|(?:overrides?|supersedes?|takes?\s+precedence\s+over)\s+(?:all\s+)?(?:other|previous|prior|system|your)\s+(?:instructions?|rules|prompts?))(?-u:\b)|(?-u:\b)new\s+instructions?\s*:";

const CONCEAL: &str = r"(?-u:\b)(?:(?:do\s+not|don't|dont|never|must\s+not|should\s+not|shouldn't)\s+(?:tell|mention|inform|notify|alert|show|reveal|disclose|explain|say|let)(?-u:\b)[^.\n]{0,80}?(?-u:\b)(?:the\s+)?users?(?-u:\b)|without\s+(?:telling|informing|notifying|alerting|letting)\s+(?:the\s+)?users?|(?:hide|conceal)\s+(?:this|it|these|that|them)\s+from\s+(?:the\s+)?users?|the\s+users?\s+(?:must|should|will|need)\s+(?:not|never)\s+(?:know|see|notice|find\s+out|be\s+told)|secretly|covertly)(?-u:\b)";

const CREDENTIAL: &str = r#"~/\.ssh(?-u:\b)|\.ssh/|(?:(?-u:\b)|_)id_(?:rsa|dsa|ecdsa|ed25519)(?:(?-u:\b)|_)|\.aws/(?:credentials|config)(?-u:\b)|/etc/(?:passwd|shadow|sudoers)(?-u:\b)|/\.env(?:\.[a-z]+)?(?-u:\b)|\.netrc(?-u:\b)|\.pgpass(?-u:\b)|\.git-credentials(?-u:\b)|\.docker/config\.json|\.kube/config(?-u:\b)|\.npmrc(?-u:\b)|\.pypirc(?-u:\b)|\.gnupg(?-u:\b)|(?-u:\b)credentials\.json(?-u:\b)|\.cursor/mcp\.json|claude_desktop_config\.json|\.claude\.json|\.config/gcloud(?-u:\b)|\.azure/|(?-u:\b)wallet\.dat(?-u:\b)|\.bash_history"#;

/// Stops at the NUL that separates an item's strings (see `text::SEPARATOR`).
const HTML_COMMENT: &str = r"<!--\s*[^\s\x00-][^\x00]*?(?:-->|\x00|$)";

/// Whitespace that pushes text out of view: far to the right on one line, or many
/// blank lines down. (Indented template literals, common in real descriptions, have a
/// line break and a few dozen spaces: not a finding.) The folded text has only ASCII
/// spaces: NFKC turns the Unicode ones into U+0020.
const WHITESPACE_RUN: &str = r"[ \t]{48,}[^\s\x00]|(?:[ \t]*\r?\n){10,}[ \t]*[^\s\x00]";

/// Everything is checked in what a server lists.
pub(crate) const LISTING: Checks =
    Checks { credential_paths: true, credential_requests: false, whitespace: true, html_comments: true };

/// Results are ordinary output: a directory listing names `.env`, a table has long
/// runs of spaces, an HTML file has comments. Only hidden characters and
/// instruction-like text are looked for.
/// A credential path is looked for only where the result asks for it back in a call
/// (result-side poisoning).
pub(crate) const RESULT: Checks =
    Checks { credential_paths: false, credential_requests: true, whitespace: false, html_comments: false };

const DETECTORS: &[Detector] = &[
    Detector {
        class: Class::InstructionTag,
        severity: Severity::Warn,
        detail: "a tag addressed to the model",
        pattern: TAG,
        needs: &["<", "["],
        lead: Some(tag_lead),
    },
    Detector {
        class: Class::OverridePhrase,
        severity: Severity::Critical,
        detail: "text telling the model to drop its instructions",
        pattern: OVERRIDE,
        needs: &[
            "ignore",
            "disregard",
            "forget",
            "override",
            "bypass",
            "must",
            "system",
            "now",
            "follow",
            "supersede",
            "precedence",
            "instruction",
        ],
        lead: None,
    },
    Detector {
        class: Class::Concealment,
        severity: Severity::Critical,
        detail: "text telling the model to hide something from the user",
        pattern: CONCEAL,
        needs: &["user", "secretly", "covertly"],
        lead: None,
    },
    Detector {
        class: Class::CredentialPath,
        severity: Severity::Warn,
        detail: "a path to credentials or secrets",
        pattern: CREDENTIAL,
        needs: &[
            ".ssh",
            "id_",
            ".aws/",
            "/etc/",
            "/.env",
            ".netrc",
            ".pgpass",
            ".git-credentials",
            ".docker/",
            ".kube/",
            ".npmrc",
            ".pypirc",
            ".gnupg",
            "credentials.json",
            ".cursor/",
            "claude_desktop_config",
            ".claude.json",
            "gcloud",
            ".azure/",
            "wallet.dat",
            ".bash_history",
        ],
        lead: None,
    },
    Detector {
        class: Class::HtmlComment,
        severity: Severity::Warn,
        detail: "an HTML comment, hidden when rendered but read by the model",
        pattern: HTML_COMMENT,
        needs: &["<!--"],
        lead: None,
    },
    Detector {
        class: Class::HiddenWhitespace,
        severity: Severity::Warn,
        detail: "a long run of whitespace that pushes the text after it out of view",
        pattern: WHITESPACE_RUN,
        needs: &[],
        lead: None,
    },
    Detector {
        class: Class::EncodedPayload,
        severity: Severity::Warn,
        detail: "base64 that decodes to text with findings",
        pattern: BASE64,
        needs: &[],
        lead: None,
    },
];

struct Compiled {
    /// All detectors in one leftmost-first regex: the lazy DFA reads text for it faster
    /// than for the set (no overlapping search) and stops at the first match, so text
    /// with no match at all (most items) is read once, at the faster speed.
    any: Regex,
    set: RegexSet,
    each: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns: Vec<&str> = DETECTORS.iter().map(|d| d.pattern).collect();
    let any: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
    Compiled {
        any: Regex::new(&any.join("|")).expect("scan patterns compile"),
        set: RegexSet::new(&patterns).expect("scan patterns compile"),
        each: patterns.iter().map(|p| Regex::new(p).expect("scan pattern compiles")).collect(),
    }
});

/// Which checks apply: listings get all of them; results leave out the ones that
/// ordinary output trips (paths in a directory listing, aligned columns, the comments of
/// an HTML file that was read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checks {
    pub credential_paths: bool,
    /// Credential paths only where the text asks for one to come back in a call (a
    /// poisoned result: "call add again with ~/.ssh/id_rsa in the `sidenote` argument").
    pub credential_requests: bool,
    pub whitespace: bool,
    pub html_comments: bool,
}

/// A detector that matched: what it finds, how bad, and its regex.
pub(crate) struct Matched {
    pub class: Class,
    pub severity: Severity,
    pub detail: &'static str,
    pub regex: &'static Regex,
}

/// Whether `checks` asks for the detector of `class`.
fn asked_for(class: Class, checks: Checks) -> bool {
    match class {
        Class::CredentialPath => checks.credential_paths || checks.credential_requests,
        Class::HiddenWhitespace => checks.whitespace,
        Class::HtmlComment => checks.html_comments,
        _ => true,
    }
}

/// The names [`TAG`] knows after `<` (and blanks and a `/`): every tag it matches
/// starts so, or with `<|` or `<<`, or is `[inst]`, `[/inst]` or `[system]`.
const TAG_NAMES: [&str; 15] = [
    "important",
    "system",
    "instruction",
    "ai",
    "model",
    "assistant",
    "agent",
    "tool",
    "hidden",
    "secret",
    "admin",
    "override",
    "critical",
    "priority",
    "sudo",
];

/// Whether the lower-cased plain ASCII `lowered` has a `<` or `[` that [`TAG`] can
/// match from: code and markup have `<` and `[` on every line, and a look at the few
/// bytes after each is much cheaper than the pattern's pass.
fn tag_lead(lowered: &str) -> bool {
    let bytes = lowered.as_bytes();
    memchr::memchr2_iter(b'<', b'[', bytes).any(|at| {
        let rest = &bytes[at + 1..];
        if bytes[at] == b'[' {
            return [&b"inst]"[..], b"/inst]", b"system]"].iter().any(|tag| rest.starts_with(tag));
        }
        if rest.starts_with(b"|") || rest.starts_with(b"<") {
            return true;
        }
        // `\s` on ASCII: blanks, line breaks and the vertical tab `trim_ascii` keeps.
        let blanks = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C);
        let rest = &rest[rest.iter().take_while(|b| blanks(b)).count()..];
        let rest = rest.strip_prefix(b"/").unwrap_or(rest);
        let rest = &rest[rest.iter().take_while(|b| blanks(b)).count()..];
        TAG_NAMES.iter().any(|name| rest.starts_with(name.as_bytes()))
    })
}

/// A detector of results (base64 payloads aside), and its quick test.
struct ResultDetector {
    needs: Regex,
    lead: Option<fn(&str) -> bool>,
    regex: Regex,
}

impl ResultDetector {
    /// Whether the detector's pattern can match `lowered` (see [`Detector::needs`]).
    fn may_match(&self, lowered: &str) -> bool {
        match self.lead {
            Some(lead) => lead(lowered),
            None => self.needs.is_match(lowered),
        }
    }
}

/// Every literal the [`RESULT_DETECTORS`] without a quicker test need, in one regex:
/// most results have none, and one search costs a small result less than one a
/// detector.
static RESULT_NEEDS: LazyLock<Regex> = LazyLock::new(|| {
    let needs: Vec<String> = DETECTORS
        .iter()
        .filter(|d| d.class != Class::EncodedPayload && d.lead.is_none() && asked_for(d.class, RESULT))
        .flat_map(|d| d.needs.iter().map(|literal| regex::escape(literal)))
        .collect();
    Regex::new(&needs.join("|")).expect("literals compile")
});

/// The detectors results are scanned with, base64 payloads aside (see
/// [`result_may_match`]).
static RESULT_DETECTORS: LazyLock<Vec<ResultDetector>> = LazyLock::new(|| {
    DETECTORS
        .iter()
        .filter(|d| d.class != Class::EncodedPayload && asked_for(d.class, RESULT))
        .map(|d| {
            assert!(!d.needs.is_empty(), "a detector of results lists the literals it needs");
            let needs: Vec<String> = d.needs.iter().map(|literal| regex::escape(literal)).collect();
            ResultDetector {
                needs: Regex::new(&needs.join("|")).expect("literals compile"),
                lead: d.lead,
                regex: Regex::new(d.pattern).expect("scan pattern compiles"),
            }
        })
        .collect()
});

/// False only when no detector results are scanned with can find anything in the plain
/// ASCII `text`: none matches its lower-cased reading (a detector is run only where a
/// literal it needs occurs: a search for a few literals skips through text several
/// times as fast as a pattern's), and no base64 run in it decodes to text (the base64
/// detector finds only what a run decodes to, and only a run of text is decoded).
pub(crate) fn result_may_match(text: &str) -> bool {
    let lowered = text.to_ascii_lowercase();
    let any_needed = RESULT_NEEDS.is_match(&lowered);
    RESULT_DETECTORS
        .iter()
        .filter(|d| d.lead.is_some() || any_needed)
        .any(|d| d.may_match(&lowered) && d.regex.is_match(&lowered))
        || crate::encoded::long_runs(text).any(|run| crate::encoded::decode_base64(run).is_some())
}

/// The detectors that match somewhere in `lowered` and that `checks` asks for.
pub(crate) fn matching(lowered: &str, checks: Checks) -> Vec<Matched> {
    let compiled = &*COMPILED;
    if !compiled.any.is_match(lowered) {
        return Vec::new();
    }
    compiled
        .set
        .matches(lowered)
        .iter()
        .map(|index| (&DETECTORS[index], &compiled.each[index]))
        .filter(|(detector, _)| asked_for(detector.class, checks))
        .map(|(detector, regex)| Matched {
            class: detector.class,
            severity: detector.severity,
            detail: detector.detail,
            regex,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::TestRunner;

    /// Every text a detector's pattern matches holds a literal the detector says it
    /// needs: texts drawn from each pattern (its word boundaries left out, which only
    /// widens what it matches) are checked, a thousand a detector.
    #[test]
    fn what_a_detector_needs_is_in_everything_it_matches() {
        let mut runner = TestRunner::deterministic();
        for detector in DETECTORS.iter().filter(|d| !d.needs.is_empty()) {
            let widened = detector.pattern.replace(r"(?-u:\b)", "").replace("|$)", "|)");
            let texts = proptest::string::string_regex(&widened).expect("the pattern generates texts");
            for _ in 0..1000 {
                let text = texts.new_tree(&mut runner).expect("a text").current().to_ascii_lowercase();
                // The tests on plain ASCII; `\s` is ASCII blanks there.
                let ascii = text.replace(|c: char| c.is_whitespace() && !c.is_ascii(), " ");
                if let Some(lead) = detector.lead {
                    assert!(lead(&ascii), "{:?} matches {ascii:?}, which its lead test refuses", detector.class);
                }
                assert!(
                    detector.needs.iter().any(|literal| text.contains(literal)),
                    "{:?} matches {text:?}, which has none of {:?}",
                    detector.class,
                    detector.needs
                );
            }
        }
    }
}
