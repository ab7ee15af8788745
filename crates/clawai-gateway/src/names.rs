//! How the gateway names what its servers offer.
//!
//! * Tools and prompts of server `S` are listed as `S__name`, always; the client's name
//!   is routed back through the catalog, so a name is never guessed from its spelling.
//! * A namespaced name longer than [`MAX_NAME`] characters (clients and models reject
//!   longer tool names) is listed as its first 55 characters, `_`, and 8 hex digits of
//!   the SHA-256 of the whole namespaced name: the same name gives the same short form
//!   in every session and every run, and two long names of one prefix differ.
//! * Resources and resource templates of server `S` are listed under
//!   `clawai://S/<the server's URI as it wrote it>`: two servers may use one URI, and a
//!   template stays a template (its `{variables}` are in the part kept as written).

use std::fmt::Write as _;

/// What separates a server's name from its tool's or prompt's name.
pub const SEPARATOR: &str = "__";
/// The longest tool name the gateway lists.
pub const MAX_NAME: usize = 64;
/// The scheme of the URIs the gateway lists resources under.
pub const RESOURCE_SCHEME: &str = "clawai://";

/// The name a client sees for `name` of server `server`.
pub fn namespaced(server: &str, name: &str) -> String {
    let full = format!("{server}{SEPARATOR}{name}");
    if full.chars().count() <= MAX_NAME {
        return full;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, full.as_bytes());
    let mut short: String = full.chars().take(MAX_NAME - 9).collect();
    short.push('_');
    for byte in &digest.as_ref()[..4] {
        let _ = write!(short, "{byte:02x}");
    }
    short
}

/// The URI a client sees for `uri` (a resource's, or a template's) of server `server`.
pub fn resource_uri(server: &str, uri: &str) -> String {
    format!("{RESOURCE_SCHEME}{server}/{uri}")
}

/// The server and its own URI, for a URI the gateway listed; `None` for any other URI.
pub fn split_resource_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(RESOURCE_SCHEME)?;
    let (server, original) = rest.split_once('/')?;
    (!server.is_empty() && valid_server_name(server)).then_some((server, original))
}

/// True for a name a server may have (see [`server_name_problem`]).
pub fn valid_server_name(name: &str) -> bool {
    server_name_problem(name).is_none()
}

/// What is wrong with a server's name, if anything: it must be ASCII letters, digits,
/// `_` and `-`, without `__`, and must not end with `_` (server `a_` with tool `x` and
/// server `a` with tool `_x` would both be listed as `a___x`).
pub fn server_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty")
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        Some("has a character other than ASCII letters, digits, `_` and `-`")
    } else if name.contains(SEPARATOR) {
        Some("contains `__`, which separates the server's name from the tool's in tool names")
    } else if name.ends_with('_') {
        Some("ends with `_`, which would run into the `__` after it in tool names")
    } else if name == "skill" || name == "builtin" {
        Some("is reserved: `skill__…` names the skills and `builtin__…` clawai's own tools")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_the_server_and_the_name() {
        assert_eq!(namespaced("github", "create_issue"), "github__create_issue");
    }

    #[test]
    fn long_names_get_a_deterministic_short_form_of_the_longest_length() {
        let long = "a".repeat(70);
        let short = namespaced("srv", &long);
        assert_eq!(short.chars().count(), MAX_NAME);
        assert_eq!(short, namespaced("srv", &long));
        assert!(short.starts_with("srv__aaaa"));
        // Two long names that share their first 55 characters differ.
        assert_ne!(short, namespaced("srv", &format!("{long}b")));
        // 64 characters exactly are kept as they are.
        let exact = "b".repeat(64 - 5);
        assert_eq!(namespaced("srv", &exact), format!("srv__{exact}"));
    }

    #[test]
    fn resource_uris_keep_the_original_and_templates_as_written() {
        assert_eq!(resource_uri("fs", "file:///tmp/a b"), "clawai://fs/file:///tmp/a b");
        assert_eq!(split_resource_uri("clawai://fs/file:///tmp/x"), Some(("fs", "file:///tmp/x")));
        assert_eq!(split_resource_uri("clawai://m/mem://item/{id}"), Some(("m", "mem://item/{id}")));
        assert_eq!(split_resource_uri("file:///tmp/x"), None);
        assert_eq!(split_resource_uri("clawai://a__b/x"), None);
        assert_eq!(split_resource_uri("clawai:///x"), None);
    }

    #[test]
    fn server_names_are_checked() {
        assert!(valid_server_name("github-2_x"));
        for bad in ["", "a__b", "a b", "é", "a/b", "a_", "skill", "builtin"] {
            assert!(!valid_server_name(bad), "{bad}");
        }
    }
}
