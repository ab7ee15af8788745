//! Policies tests start from.

/// Allows every call and method.
pub const ALLOW_ALL: &str = "[[rule]]\nid = \"all\"\naction = \"allow\"\nmethod = \"**\"\n";

/// `ALLOW_ALL` with `rules` before it (the first rule that matches decides).
pub fn before_allow_all(rules: &str) -> String {
    format!("{rules}\n{ALLOW_ALL}")
}
