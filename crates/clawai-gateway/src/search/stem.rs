//! A tiny English suffix stripper: enough for plurals, `-ing` and `-ed` to meet their
//! base word, without a stemmer crate.
//!
//! Rules, in order, each applied at most once (`word` is already lower case):
//! 1. plurals: `-ies` → `-y` (`entries` → `entry`); `-sses`, `-xes`, `-ches`, `-shes`,
//!    `-zes` lose `-es` (`indexes` → `index`); any other final `s` goes unless the word
//!    ends in `ss`, `us` or `is` (`status`, `analysis`, `class` stay);
//! 2. `-ing` (stem of at least 3 letters) or `-ed` (stem of at least 4) goes, and a doubled
//!    final consonant other than `l`, `s`, `z` is undoubled (`running` → `run`,
//!    `embedded` → `embed`);
//! 3. a final `e` goes from words longer than 3 letters, so `store`, `stored` and
//!    `storing` all become `stor`.
//!
//! Words of 3 letters or fewer and words with anything but `a`–`z` (digits, accents) are
//! left alone. The result is not always a word; it only has to be the same for a word's
//! forms on both sides of a search.

/// The normalised form of `word` (lower case expected).
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    let mut w = strip_plural(word).to_owned();
    w = strip_verb_ending(&w);
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

fn strip_plural(word: &str) -> String {
    if let Some(base) = word.strip_suffix("ies")
        && base.len() >= 2
    {
        return format!("{base}y");
    }
    for suffix in ["sses", "xes", "ches", "shes", "zes"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_owned();
        }
    }
    let keeps_s = ["ss", "us", "is"].iter().any(|end| word.ends_with(end));
    match word.strip_suffix('s') {
        Some(base) if !keeps_s && base.len() >= 3 => base.to_owned(),
        _ => word.to_owned(),
    }
}

fn strip_verb_ending(word: &str) -> String {
    let base = match (word.strip_suffix("ing"), word.strip_suffix("ed")) {
        (Some(base), _) if base.len() >= 3 => base,
        (_, Some(base)) if base.len() >= 4 => base,
        _ => return word.to_owned(),
    };
    let bytes = base.as_bytes();
    let n = bytes.len();
    let doubled = n >= 2 && bytes[n - 1] == bytes[n - 2];
    let undouble = doubled && !b"aeioulsz".contains(&bytes[n - 1]);
    if undouble { base[..n - 1].to_owned() } else { base.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::stem;

    fn same(forms: &[&str]) {
        let first = stem(forms[0]);
        for form in forms {
            assert_eq!(stem(form), first, "{form} vs {}", forms[0]);
        }
    }

    #[test]
    fn plurals_meet_their_singular() {
        same(&["entry", "entries"]);
        same(&["index", "indexes"]);
        same(&["agent", "agents"]);
        same(&["patch", "patches"]);
        same(&["metric", "metrics"]);
        same(&["database", "databases"]);
    }

    #[test]
    fn ing_and_ed_meet_the_base_verb() {
        same(&["store", "stored", "storing", "stores"]);
        same(&["run", "running"]);
        same(&["embed", "embedded", "embedding", "embeddings"]);
        same(&["create", "created", "creating", "creates"]);
        same(&["spawn", "spawned", "spawning"]);
        same(&["schedule", "scheduled", "scheduling"]);
    }

    #[test]
    fn words_that_only_look_inflected_stay() {
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("analysis"), "analysis");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("need"), "need");
        assert_eq!(stem("ring"), "ring");
        assert_eq!(stem("bus"), "bus");
        assert_eq!(stem("p99"), "p99");
        assert_eq!(stem("sha256s"), "sha256s");
    }

    #[test]
    fn different_words_stay_apart() {
        assert_ne!(stem("store"), stem("restore"));
        assert_ne!(stem("list"), stem("lint"));
    }
}
