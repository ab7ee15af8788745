//! What `search_tools` answers, sized for a model's context: each hit's name, server,
//! whether it is listed now and the skills that show it, with its description cut to a
//! sentence or two (a tool's description can run to 10,000 characters; the model lists
//! the tool to read it whole). `structuredContent` carries the same facts without the
//! description. Also what the arguments must be.

use std::fmt::Write as _;

use serde_json::{Value, json};

/// Results when the caller gives no `limit`, and the most it may ask for.
pub const DEFAULT_LIMIT: usize = 5;
/// The most results one search may ask for.
pub const MAX_LIMIT: usize = 20;

/// The longest description summary, in characters.
const SUMMARY_CHARS: usize = 120;
/// A first sentence shorter than this is followed by the second, when it fits.
const SHORT_SENTENCE: usize = 50;

/// A search's arguments, checked.
#[derive(Debug, PartialEq)]
pub struct Arguments<'a> {
    /// What the tool should do, in words.
    pub query: &'a str,
    /// How many results.
    pub limit: usize,
}

/// The arguments of a `search_tools` call (`params.arguments`), or why they are not
/// valid (the call gets -32602 with it).
pub fn arguments(arguments: Option<&Value>) -> Result<Arguments<'_>, String> {
    let expected =
        "search_tools takes {\"query\": \"what the tool should do, in words\", \"limit\": 1 to 20 (5 if left out)}";
    let arguments = match arguments {
        Some(Value::Object(arguments)) => arguments,
        None | Some(Value::Null) => return Err(format!("no arguments: {expected}")),
        Some(_) => return Err(format!("the arguments are not an object: {expected}")),
    };
    let query = match arguments.get("query") {
        Some(Value::String(query)) if !query.trim().is_empty() => query.as_str(),
        Some(Value::String(_)) => return Err(format!("`query` is empty: {expected}")),
        Some(_) => return Err(format!("`query` is not a string: {expected}")),
        None => return Err(format!("`query` is missing: {expected}")),
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(limit) => match limit.as_u64() {
            Some(limit @ 1..=20) => limit as usize,
            _ => return Err(format!("`limit` is {limit}: {expected}")),
        },
    };
    Ok(Arguments { query, limit })
}

/// One hit, as answered.
pub struct Found<'a> {
    /// The name it is listed (or would be listed) under.
    pub name: &'a str,
    /// Its server (`skill` for a skill).
    pub server: &'a str,
    /// Its full description.
    pub description: &'a str,
    /// Whether the session sees it now.
    pub visible: bool,
    /// The skills that would show it (listed names).
    pub skills: &'a [String],
    /// Its score.
    pub score: f32,
}

/// The answer: a text for the model and the same as `structuredContent`. `starting`:
/// servers whose tools are not searched because they are not up yet.
pub fn answer(results: &[Found], starting: &[String]) -> Value {
    let mut text = String::new();
    let mut structured = Vec::with_capacity(results.len());
    for hit in results {
        let _ = write!(text, "{} ({}", hit.name, hit.server);
        if !hit.visible {
            match hit.skills.is_empty() {
                true => text.push_str("; not listed now: end the active skill to use it"),
                false => {
                    let _ = write!(text, "; not listed now: activate {} to use it", hit.skills.join(" or "));
                }
            }
        }
        text.push(')');
        let summary = summary(hit.description);
        if !summary.is_empty() {
            text.push_str(": ");
            text.push_str(&summary);
        }
        text.push('\n');
        structured.push(json!({
            "name": hit.name, "server": hit.server, "visible": hit.visible, "skills": hit.skills,
            // Two decimals say the order; more would only take room.
            "score": (f64::from(hit.score) * 100.0).round() / 100.0,
        }));
    }
    if results.is_empty() {
        text.push_str("No tool matches.\n");
    }
    let mut content = json!({"results": structured});
    if !starting.is_empty() {
        let _ = write!(
            text,
            "Not searched yet, still starting: {}. The tool list changes when they are up: search again then.",
            starting.join(", ")
        );
        content["starting"] = json!(starting);
    }
    json!({
        "content": [{"type": "text", "text": text.trim_end()}],
        "structuredContent": content,
        "isError": false,
    })
}

/// A description cut to its first sentence (two when the first is short), at most
/// [`SUMMARY_CHARS`] characters, on one line.
pub fn summary(description: &str) -> String {
    // The first paragraph only: what follows a blank line is detail (usage, examples).
    let paragraph = description.trim().split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = paragraph.split_whitespace().collect();
    let flat = words.join(" ");
    let mut end = sentence_end(&flat, 0);
    if end.is_some_and(|end| end < SHORT_SENTENCE)
        && let Some(second) = end.and_then(|first| sentence_end(&flat, first))
        && flat[..second].chars().count() <= SUMMARY_CHARS
    {
        end = Some(second);
    }
    let cut = end.map_or(flat.as_str(), |end| &flat[..end]).trim_end();
    if cut.chars().count() <= SUMMARY_CHARS {
        return cut.to_owned();
    }
    let mut shortened: String = cut.chars().take(SUMMARY_CHARS - 1).collect();
    if let Some(space) = shortened.rfind(' ') {
        shortened.truncate(space);
    }
    shortened.trim_end_matches([',', ';', ':', ' ']).to_owned() + "…"
}

/// Where the sentence that starts at byte `from` of `text` ends (after its `.`, `!` or
/// `?` and before a space), if it does.
fn sentence_end(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    (from..bytes.len()).find_map(|at| {
        let ends = matches!(bytes[at], b'.' | b'!' | b'?') && bytes.get(at + 1).is_none_or(|next| *next == b' ');
        // "e.g." and "i.e." end no sentence.
        let abbreviation = at >= 3 && matches!(&bytes[at - 3..=at], b"e.g." | b"i.e.");
        (ends && !abbreviation && at > from).then_some(at + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_description_is_cut_to_its_first_sentence() {
        let long = format!(
            "Executes a given bash command in a persistent shell session, with a timeout. {}",
            "More. ".repeat(2000)
        );
        assert_eq!(summary(&long), "Executes a given bash command in a persistent shell session, with a timeout.");
    }

    #[test]
    fn a_short_first_sentence_is_followed_by_the_second() {
        assert_eq!(
            summary("Reads a file. Returns its lines with numbers.\n\nUsage: …"),
            "Reads a file. Returns its lines with numbers."
        );
        assert_eq!(summary("Store a value, e.g. a note. Then more."), "Store a value, e.g. a note. Then more.");
    }

    #[test]
    fn a_sentence_without_end_is_cut_at_a_word_with_an_ellipsis() {
        let cut = summary(&"word ".repeat(100));
        assert!(cut.ends_with('…') && cut.chars().count() <= SUMMARY_CHARS, "{cut}");
        assert!(!cut.contains("  ") && cut.trim_end_matches('…').ends_with("word"));
    }

    #[test]
    fn a_multi_line_paragraph_is_one_line() {
        assert_eq!(summary("Lists the\n  files of a directory"), "Lists the files of a directory");
        assert_eq!(summary(""), "");
        assert_eq!(summary("Not a sentence — e.g. this. Next."), "Not a sentence — e.g. this. Next.");
    }

    #[test]
    fn arguments_are_checked() {
        let ok = json!({"query": "run a shell command", "limit": 3});
        assert_eq!(arguments(Some(&ok)), Ok(Arguments { query: "run a shell command", limit: 3 }));
        assert_eq!(arguments(Some(&json!({"query": "x"}))).unwrap().limit, DEFAULT_LIMIT);
        for bad in [
            json!({}),
            json!({"query": ""}),
            json!({"query": 3}),
            json!({"query": "x", "limit": 0}),
            json!({"query": "x", "limit": 21}),
            json!({"query": "x", "limit": "5"}),
            json!("x"),
        ] {
            assert!(arguments(Some(&bad)).is_err(), "{bad}");
        }
        assert!(arguments(None).unwrap_err().contains("query"));
    }

    #[test]
    fn a_hidden_hit_names_its_skills_and_the_structured_results_carry_no_description() {
        let skills = vec!["skill__code-assist".to_owned()];
        let results = [Found {
            name: "claude-code__Bash",
            server: "claude-code",
            description: "Executes a command. Long detail follows.",
            visible: false,
            skills: &skills,
            score: 12.345_678,
        }];
        let answer = answer(&results, &["claude-flow".to_owned()]);
        let text = answer["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with("claude-code__Bash (claude-code; not listed now: activate skill__code-assist to use it): Executes a command."), "{text}");
        assert!(text.contains("still starting: claude-flow"), "{text}");
        let hit = &answer["structuredContent"]["results"][0];
        assert_eq!(
            hit,
            &json!({"name": "claude-code__Bash", "server": "claude-code", "visible": false, "skills": skills, "score": 12.35})
        );
        assert_eq!(answer["structuredContent"]["starting"], json!(["claude-flow"]));
    }
}
