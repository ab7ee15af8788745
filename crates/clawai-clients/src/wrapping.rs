//! What a wrapped entry is: `command` = clawai, `args` = `proxy --server NAME [--policy P]
//! [FLAGS…] -- <original command> <original args…>` (FLAGS: what `clawai wrap` was asked to
//! add, such as `--sandbox auto`). Everything the original needs is after `--`,
//! so any clawai (any path, any version) can recognise and undo a wrap. A remote entry
//! becomes `proxy --server NAME [--policy P] --upstream URL [--header 'Name: value']…`.

use std::path::Path;

/// True when `command` is a clawai binary, wherever it is installed.
pub fn is_clawai(command: &str) -> bool {
    let base = command.rsplit(['/', '\\']).next().unwrap_or(command);
    matches!(base, "clawai" | "clawai.exe")
}

/// A stdio entry as clawai sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wrap {
    /// Not wrapped: the original command and arguments.
    Plain {
        /// The command.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Wrapped by clawai.
    Wrapped {
        /// The clawai binary in the entry.
        clawai: String,
        /// The `--policy` given to the proxy, if any.
        policy: Option<String>,
        /// The proxy's options, before `--` (`--server NAME`, `--sandbox auto`…).
        options: Vec<String>,
        /// The original command.
        command: String,
        /// The original arguments.
        args: Vec<String>,
    },
    /// A remote server wrapped by clawai.
    Upstream {
        /// The clawai binary in the entry.
        clawai: String,
        /// The `--policy` given to the proxy, if any.
        policy: Option<String>,
        /// The server's URL.
        url: String,
        /// The headers, as `Name: value`.
        headers: Vec<String>,
    },
}

/// Reads an entry's command and arguments.
pub fn read(command: &str, args: &[String]) -> Wrap {
    if is_clawai(command)
        && args.first().is_some_and(|a| a == "proxy")
        && let Some(split) = args.iter().position(|a| a == "--")
        && let Some((original, rest)) = args[split + 1..].split_first()
    {
        let options = &args[1..split];
        let policy = options.iter().position(|a| a == "--policy").and_then(|i| options.get(i + 1)).cloned();
        return Wrap::Wrapped {
            clawai: command.to_owned(),
            policy,
            options: options.to_vec(),
            command: original.clone(),
            args: rest.to_vec(),
        };
    }
    if is_clawai(command) && args.first().is_some_and(|a| a == "proxy") && !args.iter().any(|a| a == "--") {
        let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
        if let Some(url) = value("--upstream") {
            let headers = args.windows(2).filter(|w| w[0] == "--header").map(|w| w[1].clone()).collect();
            return Wrap::Upstream { clawai: command.to_owned(), policy: value("--policy"), url, headers };
        }
    }
    Wrap::Plain { command: command.to_owned(), args: args.to_vec() }
}

/// The arguments of a wrapped remote entry.
pub fn upstream_args(name: &str, policy: Option<&Path>, url: &str, headers: &[(String, String)]) -> Vec<String> {
    let mut out = vec!["proxy".to_owned(), "--server".to_owned(), name.to_owned()];
    if let Some(p) = policy {
        out.push("--policy".to_owned());
        out.push(p.display().to_string());
    }
    out.push("--upstream".to_owned());
    out.push(url.to_owned());
    for (header, value) in headers {
        out.push("--header".to_owned());
        out.push(format!("{header}: {value}"));
    }
    out
}

/// The arguments of a wrapped entry.
pub fn wrapped_args(
    name: &str,
    policy: Option<&Path>,
    flags: &[String],
    command: &str,
    args: &[String],
) -> Vec<String> {
    let mut out = vec!["proxy".to_owned(), "--server".to_owned(), name.to_owned()];
    if let Some(p) = policy {
        out.push("--policy".to_owned());
        out.push(p.display().to_string());
    }
    out.extend(flags.iter().cloned());
    out.push("--".to_owned());
    out.push(command.to_owned());
    out.extend(args.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let args = vec!["-y".to_owned(), "--".to_owned(), "x".to_owned()];
        let flags = ["--sandbox".to_owned(), "auto".to_owned()];
        let wrapped = wrapped_args("fs", Some(Path::new("/p.toml")), &flags, "npx", &args);
        assert_eq!(wrapped[5..7], flags, "the flags go before `--`");
        assert_eq!(
            read("/usr/local/bin/clawai", &wrapped),
            Wrap::Wrapped {
                clawai: "/usr/local/bin/clawai".into(),
                policy: Some("/p.toml".into()),
                options: wrapped[1..7].to_vec(),
                command: "npx".into(),
                args
            }
        );
        assert!(matches!(read("npx", &["proxy".into()]), Wrap::Plain { .. }));
        let headers = [("Authorization".to_owned(), "Bearer ${TOKEN}".to_owned())];
        let remote = upstream_args("gh", None, "https://example.com/mcp", &headers);
        assert_eq!(
            read("/opt/clawai", &remote),
            Wrap::Upstream {
                clawai: "/opt/clawai".into(),
                policy: None,
                url: "https://example.com/mcp".into(),
                headers: vec!["Authorization: Bearer ${TOKEN}".into()]
            }
        );
        assert!(is_clawai("C:\\tools\\clawai.exe"));
        assert!(!is_clawai("/usr/bin/clawai-old"));
    }
}
