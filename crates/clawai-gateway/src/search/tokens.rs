//! Words of names and texts, as the index and the queries see them.
//!
//! A name (`claude-flow__getUserById`, `hive-mind_status`) is split on `__`, `_`, `-`,
//! `.`, `/`, spaces, any other punctuation and camelCase boundaries (`HTTPServer` →
//! `http`, `server`); a text is split on everything that is not a letter or a digit.
//! Both are lower-cased, lose common English function words and go through [`stem`].

use super::stem::stem;

/// Words too common in tool descriptions and queries to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "how", "i", "in", "into", "is", "it",
    "its", "me", "my", "of", "on", "or", "some", "that", "the", "their", "them", "then", "this", "to", "want", "what",
    "which", "with", "without", "you", "your", "all", "any", "please", "need", "tool",
];

/// The normalised words of `text`: names and prose alike.
pub fn words(text: &str) -> Vec<String> {
    raw_words(text).into_iter().filter(|word| !STOP_WORDS.contains(&word.as_str())).map(|word| stem(&word)).collect()
}

/// `text` split into lower-case words, before stop words and stemming.
///
/// A camelCase boundary is a lower-case letter or digit followed by an upper-case one
/// (`getUser`), or an upper-case letter followed by an upper-case one and a lower-case
/// one (`HTTPServer`: the boundary falls before `S`).
pub fn raw_words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            flush(&mut current, &mut out);
            continue;
        }
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary = prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_is_lower);
            if boundary {
                flush(&mut current, &mut out);
            }
        }
        current.extend(c.to_lowercase());
    }
    flush(&mut current, &mut out);
    out
}

fn flush(current: &mut String, out: &mut Vec<String>) {
    if !current.is_empty() {
        out.push(std::mem::take(current));
    }
}

#[cfg(test)]
mod tests {
    use super::{raw_words, words};

    #[test]
    fn names_split_on_separators_and_camel_case() {
        assert_eq!(raw_words("getUserById"), ["get", "user", "by", "id"]);
        assert_eq!(raw_words("HTTPServer"), ["http", "server"]);
        assert_eq!(raw_words("claude-flow__hive-mind_status"), ["claude", "flow", "hive", "mind", "status"]);
        assert_eq!(raw_words("fs.read/file name"), ["fs", "read", "file", "name"]);
        assert_eq!(raw_words("parseJSON2Xml"), ["parse", "json2", "xml"]);
    }

    #[test]
    fn texts_lose_punctuation_stop_words_and_suffixes() {
        assert_eq!(words("Store a value in the memory, with tags!"), ["stor", "valu", "memory", "tag"]);
    }

    #[test]
    fn non_ascii_text_is_kept_lower_cased() {
        assert_eq!(raw_words("Größe Ärger"), ["größe", "ärger"]);
    }
}
