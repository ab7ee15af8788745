//! One server entry: its name, its transport (given by `type` or inferred from `command`
//! and `url`), and the checks that keep a slip from starting something other than what
//! was meant.

use std::collections::BTreeMap;
use std::path::PathBuf;

use jsonc_parser::ast::ObjectProp;
use jsonc_parser::common::Ranged;

use super::error::ConfigError;
use super::expand::{ExpandError, expand};
use super::json::{Doc, Fields, Key, StringMember, prop_name};
use super::{McpServerConfig, ServerEntry, SessionMode, Transport};

/// The one name a server of `"type": "builtin"` has: its tools are listed as
/// `builtin__read_file`, `builtin__exec_shell`, ….
pub const BUILTIN_NAME: &str = "builtin";

/// The keys of a server entry in every file.
const SERVER_KEYS: [Key; 11] = [
    Key::one("type"),
    Key::one("command"),
    Key::one("args"),
    Key::one("env"),
    Key::one("cwd"),
    Key::one("url"),
    Key::one("headers"),
    Key::two("internalOnly", "internal_only"),
    Key::one("disabled"),
    Key::one("session"),
    Key::one("sandbox"),
];

/// Where other MCP clients put a remote server's address (Windsurf: `serverUrl`, Gemini
/// CLI: `httpUrl`); read in those clients' files, so they work as they are.
const CLIENT_URL_KEYS: [Key; 2] = [Key::one("serverUrl"), Key::one("httpUrl")];

/// Spellings other tools use, pointed at the gateway's own key in an unknown-key error.
const HINTS: &[(&str, &str)] = &[
    ("serverUrl", "url"),
    ("httpUrl", "url"),
    ("transport", "type"),
    ("internal", "internalOnly"),
    ("environment", "env"),
    ("workingDirectory", "cwd"),
];

/// How a server is reached.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Sse,
    Http,
    Builtin,
}

/// Reads one member of the servers object. `Ok(None)`: the entry has neither a command
/// nor a URL and is skipped (a warning says so).
pub(super) fn read(
    doc: &Doc,
    prop: &ObjectProp,
    env: &dyn Fn(&str) -> Option<String>,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<(String, ServerEntry)>, ConfigError> {
    let name = prop_name(prop);
    // `builtin` is reserved for clawai's own tools; whether this entry is them is known
    // once its `type` is read.
    if name != BUILTIN_NAME {
        check_name(doc, name, prop.range.start)?;
    }
    let section = format!("server `{name}`");
    let object = doc.object(&prop.value, &section)?;
    let known: Vec<Key> =
        if lenient { SERVER_KEYS.iter().chain(&CLIENT_URL_KEYS).copied().collect() } else { SERVER_KEYS.to_vec() };
    let fields = Fields::read(doc, object, &section, &known, HINTS, lenient)?;
    let what = |key: &str| format!("`{key}` of server `{name}`");
    let string = |key: &str| -> Result<Option<(String, usize)>, ConfigError> {
        fields.get(key).map(|p| doc.string(&p.value, &what(key)).map(|s| (s.to_owned(), p.range.start))).transpose()
    };
    let members = |key: &str| -> Result<Vec<StringMember>, ConfigError> {
        fields.get(key).map(|p| doc.string_members(&p.value, &what(key))).transpose().map(Option::unwrap_or_default)
    };
    let flag = |key: &str, default: bool| -> Result<bool, ConfigError> {
        fields.get(key).map_or(Ok(default), |p| doc.boolean(&p.value, &what(prop_name(p))))
    };

    let given = match fields.get("type") {
        None => None,
        Some(p) => Some(match doc.string(&p.value, &what("type"))? {
            "stdio" => Kind::Stdio,
            "sse" => Kind::Sse,
            // Streamable HTTP, under the names other MCP clients write for it.
            "http" | "streamable-http" | "streamableHttp" | "streamable_http" => Kind::Http,
            "builtin" => Kind::Builtin,
            other => {
                return Err(doc.invalid(
                    p.value.start(),
                    format!(
                        "`type` of server `{name}` is `{other}`; use `stdio`, `sse` or `http`, or leave `type` \
                         out to choose by `command` or `url`"
                    ),
                ));
            }
        }),
    };
    let command = string("command")?.filter(|(c, _)| !c.is_empty());
    let args = fields.get("args").map(|p| doc.strings(&p.value, &what("args"))).transpose()?.unwrap_or_default();
    let env_members = members("env")?;
    let header_members = members("headers")?;
    let cwd = string("cwd")?;
    let url = address(doc, &fields, name)?;
    // clawai's own tools are listed unless the entry says otherwise; a server's only
    // when it says so, in clawai's own file. A client's file served as it is lists its
    // servers' tools as that client did: `internalOnly` is no key of the client's.
    let internal_only = flag("internalOnly", !lenient && given != Some(Kind::Builtin))?;
    let disabled = flag("disabled", false)?;
    let session = fields.get("session").map_or(Ok(SessionMode::Shared), |p| session_mode(doc, p, name))?;
    match (&given, name == BUILTIN_NAME) {
        (Some(Kind::Builtin), false) => {
            return Err(doc.invalid(
                prop.range.start,
                format!(
                    "server `{name}` has `\"type\": \"builtin\"`, and clawai's built-in tools are always the \
                     server `{BUILTIN_NAME}` (listed as `{BUILTIN_NAME}__read_file`…); rename `{name}` to `{BUILTIN_NAME}`"
                ),
            ));
        }
        (Some(Kind::Builtin), true) => {
            for key in ["command", "args", "env", "cwd", "url", "headers", "sandbox"] {
                if let Some(p) = fields.get(key) {
                    return Err(doc.invalid(
                        p.range.start,
                        format!(
                            "`{key}` has no use for server `{name}`, which is clawai's built-in tools; remove `{key}`"
                        ),
                    ));
                }
            }
            let entry = ServerEntry {
                transport: Transport::Builtin,
                cwd: None,
                internal_only,
                disabled,
                session,
                sandbox: Default::default(),
            };
            return Ok(Some((name.to_owned(), entry)));
        }
        (_, true) => check_name(doc, name, prop.range.start)?,
        (_, false) => {}
    }

    let kind = match (given, &command, &url) {
        (Some(kind), _, _) => kind,
        (None, Some(_), Some(url)) => {
            return Err(doc.invalid(
                url.at,
                format!("server `{name}` has both `command` and `{}`; remove the one it should not use", url.key),
            ));
        }
        (None, Some(_), None) => Kind::Stdio,
        (None, None, Some(_)) => Kind::Http,
        (None, None, None) => {
            warnings.push(format!(
                "{}: server `{name}` has neither a `command` nor a `url` and was skipped; give it one of them",
                doc.at(prop.range.start)
            ));
            return Ok(None);
        }
    };
    let unused = |key: &str, at: usize, how: &str| {
        doc.invalid(at, format!("`{key}` has no use for server `{name}`, which {how}; remove `{key}`"))
    };
    let transport = match kind {
        Kind::Stdio => {
            const HOW: &str = "runs a command over stdio";
            let Some((command, command_at)) = command else {
                return Err(doc.invalid(
                    prop.range.start,
                    format!("server `{name}` is a stdio server but has no `command`; add the program to run"),
                ));
            };
            if let Some(url) = url {
                return Err(unused(url.key, url.at, HOW));
            }
            if let Some(first) = header_members.first() {
                return Err(unused("headers", first.key_at, HOW));
            }
            refuse_nul(doc, &command, command_at, &what("command"))?;
            let mut checked = Vec::with_capacity(args.len());
            for (arg, at) in args {
                refuse_nul(doc, &arg, at, &what("args"))?;
                checked.push(arg);
            }
            let mut env_values = BTreeMap::new();
            for member in env_members {
                if member.key.is_empty() || member.key.contains(['=', '\0']) {
                    return Err(doc.invalid(
                        member.key_at,
                        format!(
                            "`{}` in `env` of server `{name}` cannot be an environment variable's name \
                             (it is empty or has `=` or a NUL character); rename it",
                            member.key
                        ),
                    ));
                }
                let key = format!("env.{}", member.key);
                let value = expanded(doc, env, disabled, name, &key, &member)?;
                refuse_nul(doc, &value, member.value_at, &format!("`{key}` of server `{name}`"))?;
                env_values.insert(member.key, value);
            }
            Transport::Mcp(McpServerConfig::Stdio { command, args: checked, env: env_values })
        }
        Kind::Builtin => unreachable!("a built-in entry returned above"),
        Kind::Sse | Kind::Http => {
            const HOW: &str = "is reached at its URL";
            let Some(url) = url else {
                return Err(doc.invalid(
                    prop.range.start,
                    format!("server `{name}` is a remote (HTTP or SSE) server but has no `url`; add its address"),
                ));
            };
            if let Some((_, at)) = command {
                return Err(unused("command", at, HOW));
            }
            let has_sandbox = fields.get("sandbox").is_some();
            for (key, present) in [
                ("args", !args.is_empty()),
                ("env", !env_members.is_empty()),
                ("cwd", cwd.is_some()),
                ("sandbox", has_sandbox),
            ] {
                if present {
                    let at = fields.get(key).map_or(prop.range.start, |p| p.range.start);
                    return Err(unused(key, at, HOW));
                }
            }
            check_url(doc, &url, name)?;
            let mut headers = BTreeMap::new();
            for member in header_members {
                check_header_name(doc, &member, name)?;
                if headers.keys().any(|k: &String| k.eq_ignore_ascii_case(&member.key)) {
                    return Err(doc.invalid(
                        member.key_at,
                        format!(
                            "header `{}` of server `{name}` is given twice (header names ignore case); keep one",
                            member.key
                        ),
                    ));
                }
                let key = format!("headers.{}", member.key);
                let value = expanded(doc, env, disabled, name, &key, &member)?;
                if value.contains(['\r', '\n', '\0']) {
                    return Err(doc.invalid(
                        member.value_at,
                        format!(
                            "`{key}` of server `{name}` contains a line break or NUL character (after expanding \
                             variables); a header value must be one line"
                        ),
                    ));
                }
                headers.insert(member.key, value);
            }
            Transport::Mcp(match kind {
                Kind::Sse => McpServerConfig::Sse { url: url.value, headers },
                _ => McpServerConfig::Http { url: url.value, headers },
            })
        }
    };
    let cwd = match cwd {
        Some((dir, at)) if dir.is_empty() => {
            return Err(doc.invalid(
                at,
                format!("`cwd` of server `{name}` is empty; give a directory, or remove `cwd` to use the gateway's"),
            ));
        }
        Some((dir, at)) => {
            refuse_nul(doc, &dir, at, &what("cwd"))?;
            Some(PathBuf::from(dir))
        }
        None => None,
    };
    let sandbox = fields.get("sandbox").map(|p| super::sandbox::read(doc, p, name)).transpose()?.unwrap_or_default();
    Ok(Some((name.to_owned(), ServerEntry { transport, cwd, internal_only, disabled, session, sandbox })))
}

/// `session`: `"shared"` or `"per-client"`.
fn session_mode(doc: &Doc, prop: &ObjectProp, name: &str) -> Result<SessionMode, ConfigError> {
    let value = doc.string(&prop.value, &format!("`session` of server `{name}`"))?;
    if let Some((_, mode)) = SessionMode::NAMES.iter().find(|(spelled, _)| *spelled == value) {
        return Ok(*mode);
    }
    Err(doc.invalid(
        prop.value.start(),
        format!(
            "`session` of server `{name}` is `{value}`; use `shared` (the default: every client session shares \
             one session of the server) or `per-client` (each client session gets its own)"
        ),
    ))
}

/// A server name becomes the prefix of its tools' names (`S__tool`), split at the first
/// `__`: so no `__` inside it, and no `_` at its end (`a_` + `__x` would split as `a`).
fn check_name(doc: &Doc, name: &str, at: usize) -> Result<(), ConfigError> {
    let Some(why) = crate::names::server_name_problem(name) else { return Ok(()) };
    Err(ConfigError::ServerName { at: doc.at(at), name: name.to_owned(), why })
}

/// A remote server's address and the key it was given under.
struct Address {
    value: String,
    key: &'static str,
    at: usize,
}

/// The server's non-empty `url` (or, in a client's file, `serverUrl` / `httpUrl`).
fn address(doc: &Doc, fields: &Fields, name: &str) -> Result<Option<Address>, ConfigError> {
    let mut found: Option<Address> = None;
    for key in ["url", "serverUrl", "httpUrl"] {
        let Some(p) = fields.get(key) else { continue };
        let value = doc.string(&p.value, &format!("`{key}` of server `{name}`"))?;
        if let Some(first) = &found {
            return Err(doc.invalid(
                p.range.start,
                format!("server `{name}` has both `{}` and `{key}`; keep one of them", first.key),
            ));
        }
        if !value.is_empty() {
            found = Some(Address { value: value.to_owned(), key, at: p.range.start });
        }
    }
    Ok(found)
}

fn check_url(doc: &Doc, url: &Address, name: &str) -> Result<(), ConfigError> {
    let problem = match url::Url::parse(&url.value) {
        Ok(parsed) if !matches!(parsed.scheme(), "http" | "https") => {
            format!("uses `{}:`, and only http:// and https:// addresses are supported", parsed.scheme())
        }
        Ok(parsed) if parsed.host_str().is_none_or(str::is_empty) => "has no host".to_owned(),
        Ok(_) => return Ok(()),
        Err(e) => format!("is not a URL ({e})"),
    };
    Err(doc.invalid(
        url.at,
        format!("`{}` of server `{name}` {problem}; write it as https://HOST/PATH or http://HOST:PORT/PATH", url.key),
    ))
}

/// Header names are HTTP tokens (RFC 9110 §5.6.2).
fn check_header_name(doc: &Doc, member: &StringMember, name: &str) -> Result<(), ConfigError> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !member.key.is_empty() && member.key.bytes().all(token) {
        return Ok(());
    }
    Err(doc.invalid(
        member.key_at,
        format!(
            "`{}` in `headers` of server `{name}` is not a header name (letters, digits and !#$%&'*+-.^_`|~ only); \
             rename it",
            member.key
        ),
    ))
}

/// Programs, arguments and paths cannot carry a NUL character to the system.
fn refuse_nul(doc: &Doc, value: &str, at: usize, what: &str) -> Result<(), ConfigError> {
    if value.contains('\0') {
        return Err(doc.invalid(at, format!("{what} contains a NUL character (\\u0000); remove it")));
    }
    Ok(())
}

/// A value with its `${VAR}`s replaced. A disabled server's values are kept as written:
/// it does not run, and a variable it needs may well be unset for that very reason.
fn expanded(
    doc: &Doc,
    env: &dyn Fn(&str) -> Option<String>,
    disabled: bool,
    server: &str,
    key: &str,
    member: &StringMember,
) -> Result<String, ConfigError> {
    if disabled {
        return Ok(member.value.clone());
    }
    expand(&member.value, env).map_err(|e| match e {
        ExpandError::Unset(variable) => ConfigError::UnsetVariable {
            at: doc.at(member.value_at),
            server: server.to_owned(),
            key: key.to_owned(),
            variable,
        },
        ExpandError::Unterminated => doc.invalid(
            member.value_at,
            format!("`{key}` of server `{server}` has a `${{` with no `}}` after it; close the variable with `}}`"),
        ),
        ExpandError::NotAName(inside) => doc.invalid(
            member.value_at,
            format!(
                "`${{{inside}}}` in `{key}` of server `{server}` is not a variable name (letters, digits and `_`, \
                 not starting with a digit); fix it"
            ),
        ),
    })
}
