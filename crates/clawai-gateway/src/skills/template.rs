//! A skill's body as a template: `{{variable}}` replaced, nothing else ever evaluated.
//!
//! `{{name}}` and `{{ name }}` (any whitespace inside the braces) stand for variable
//! `name`. A placeholder whose variable is declared is replaced by its value, inserted as
//! it is (a value holding `{{x}}` is not expanded again), or by nothing when it is not
//! given (the skill refuses to activate without a required one), so a model never reads
//! a literal placeholder; every other `{{…}}` stays as written, so text that merely looks
//! like a placeholder survives.

use serde_json::{Map, Value};

/// `body` with every placeholder of a `declared` variable found in `args` replaced.
pub(crate) fn render(body: &str, declared: impl Fn(&str) -> bool, args: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after_open = &rest[open + 2..];
        match placeholder(after_open).and_then(|(name, len)| Some((value(name, &declared, args)?, len))) {
            Some((value, len)) => {
                out.push_str(&value);
                rest = &after_open[len..];
            }
            None => {
                // Not ours: keep one brace and look again from the next character, so
                // `{{{task}}}` still finds `{{task}}` inside it.
                out.push('{');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// For the text just after `{{`: the variable name it holds and the length up to and
/// including the closing `}}`, when it is `  name  }}`.
fn placeholder(text: &str) -> Option<(&str, usize)> {
    let start = text.len() - text.trim_start().len();
    let name_len = text[start..].find(|c: char| !is_name_char(c)).unwrap_or(text.len() - start);
    if name_len == 0 {
        return None;
    }
    let name = &text[start..start + name_len];
    let after_name = &text[start + name_len..];
    let spaces = after_name.len() - after_name.trim_start().len();
    after_name[spaces..].starts_with("}}").then_some((name, start + name_len + spaces + 2))
}

/// The text a declared variable stands for: strings as they are, other JSON as its text,
/// nothing for a missing or null argument; `None` for an undeclared name.
fn value(name: &str, declared: impl Fn(&str) -> bool, args: &Map<String, Value>) -> Option<String> {
    if !declared(name) {
        return None;
    }
    match args.get(name) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => Some(other.to_string()),
    }
}

/// The characters of a variable name (and of a skill name): `[A-Za-z0-9_-]`.
pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn declared(name: &str) -> bool {
        ["task", "operation", "n"].contains(&name)
    }

    #[test]
    fn replaces_declared_variables_with_or_without_spaces_in_the_braces() {
        let given = args(json!({"task": "ship it", "operation": "store"}));
        assert_eq!(render("Do {{task}}; then {{ operation }}.", declared, &given), "Do ship it; then store.");
        assert_eq!(render("{{\ttask\n}}", declared, &given), "ship it");
        assert_eq!(render("{{task}}{{task}}", declared, &given), "ship itship it");
    }

    #[test]
    fn leaves_undeclared_placeholders_as_written_and_drops_declared_ones_not_given() {
        let given = args(json!({"task": "x", "other": "y"}));
        assert_eq!(render("{{other}} {{ nope }} [{{operation}}]", declared, &given), "{{other}} {{ nope }} []");
        assert_eq!(render("{{ task + 1 }} {{}} {{ }} {{task", declared, &given), "{{ task + 1 }} {{}} {{ }} {{task");
        assert_eq!(render("{task} {{{task}}} }}", declared, &given), "{task} {x} }}");
    }

    #[test]
    fn values_are_inserted_as_they_are_and_never_expanded_again() {
        let given = args(json!({"task": "{{operation}} $(rm -rf /) {{task}}", "operation": "no"}));
        assert_eq!(render("[{{task}}]", declared, &given), "[{{operation}} $(rm -rf /) {{task}}]");
    }

    #[test]
    fn non_string_values_render_as_json_and_null_counts_as_missing() {
        let given = args(json!({"task": 3, "operation": null, "n": true}));
        assert_eq!(render("{{task}} [{{operation}}] {{n}}", declared, &given), "3 [] true");
    }

    #[test]
    fn text_without_placeholders_is_unchanged_including_non_ascii() {
        let given = Map::new();
        let text = "Grüße {{ünïcode}} { {{";
        assert_eq!(render(text, declared, &given), text);
    }
}
