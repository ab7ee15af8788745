//! `clawai approvals`, `clawai approve ID`, `clawai deny ID`: answer pending approvals
//! from a terminal, through the broker `clawai ui` runs. Blocking socket I/O only, so
//! these run in the small binary.

use anyhow::Result;
use clap::Args;
use clawai_approvals::{Client, Error, PendingItem, Scope, State};

use crate::exit::ExitCode;

/// Options of `clawai approvals`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Print the pending approvals as a JSON list.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) cluster: crate::cluster::ClusterArg,
}

/// Options of `clawai approve`.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The approval's id, as `clawai approvals` lists it.
    id: String,
    /// Also let the identical call through for the rest of its session.
    #[arg(long, conflicts_with = "always")]
    session: bool,
    /// Let calls of this tool on this server with the arguments shown (each exactly, a
    /// path by its directory) through from now on: the entry `clawai approvals` shows is
    /// written to approvals.toml (it never overrides a `deny` rule).
    #[arg(long)]
    always: bool,
    /// With --always: cover any arguments of this tool, not only those shown.
    #[arg(long, requires = "always")]
    any_arguments: bool,
    #[command(flatten)]
    pub(crate) cluster: crate::cluster::ClusterArg,
}

/// Options of `clawai deny`.
#[derive(Debug, Args)]
pub(crate) struct DenyArgs {
    /// The approval's id, as `clawai approvals` lists it.
    id: String,
    #[command(flatten)]
    pub(crate) cluster: crate::cluster::ClusterArg,
}

/// Runs `request` against the broker; a missing broker or a refusal is a message and
/// exit code 1, anything else an error.
fn with_broker<T>(request: impl FnOnce(Client) -> Result<T, Error>) -> Result<Result<T, ExitCode>> {
    let outcome = Client::connect().and_then(request);
    match outcome {
        Ok(value) => Ok(Ok(value)),
        Err(Error::NoBroker(_)) => {
            eprintln!("clawai: no approval broker is running; start one with `clawai ui`");
            Ok(Err(ExitCode::Failure))
        }
        Err(Error::Refused(message)) => {
            eprintln!("clawai: {message}");
            Ok(Err(ExitCode::Failure))
        }
        Err(e) => Err(e.into()),
    }
}

/// `clawai approvals [--json]`.
pub(crate) fn list(args: ListArgs) -> Result<ExitCode> {
    let items = match with_broker(Client::list)? {
        Ok(items) => items,
        Err(code) => return Ok(code),
    };
    print_pending(&items, args.json)
}

/// Prints the pending approvals (`--json`: as a JSON list).
pub(crate) fn print_pending(items: &[PendingItem], json: bool) -> Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string_pretty(&items)?);
    } else if items.is_empty() {
        println!("no approvals pending");
    } else {
        for item in items {
            println!("{}", line(item));
            // What "always" would write, shown before anyone chooses it.
            for rule_line in item.always.lines() {
                println!("    --always writes: {}", visible(rule_line));
            }
        }
        println!("answer with `clawai approve ID [--session | --always [--any-arguments]]` or `clawai deny ID`");
    }
    Ok(ExitCode::Ok)
}

/// One pending approval on one line, every text made safe for a terminal.
fn line(item: &PendingItem) -> String {
    let state = match item.state {
        State::Waiting => "waiting",
        State::Expired => "expired (approving lets the retry through once)",
    };
    let what = match &item.name {
        Some(name) => format!("{} {}", item.method, name),
        None => item.method.clone(),
    };
    let mut text =
        format!("{}  {}  {}  {}", item.id, item.asked_at, item.server.as_deref().unwrap_or("(no server name)"), what);
    if let Some(rule) = &item.rule {
        text.push_str(&format!("  rule {rule}"));
    }
    text.push_str(&format!("  {}  [{state}]", summary(&item.arguments)));
    visible(&text)
}

/// The arguments as compact JSON, cut to a line's worth.
fn summary(arguments: &serde_json::Value) -> String {
    const MAX: usize = 100;
    let text = arguments.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}… ({} bytes)", text.len())
}

/// `text` with control, bidi, zero-width and other hidden characters written as
/// `\u{...}` escapes, so a name or argument cannot rewrite the terminal or hide what it
/// says: the same rendering as the question a client shows.
pub(crate) fn visible(text: &str) -> String {
    clawai_proxy::ask::form::render_text(text)
}

impl ApproveArgs {
    /// How far the approval reaches.
    pub(crate) fn scope(&self) -> Scope {
        match (self.session, self.always, self.any_arguments) {
            (_, true, true) => Scope::AlwaysAnyArguments,
            (_, true, false) => Scope::Always,
            (true, _, _) => Scope::Session,
            _ => Scope::Once,
        }
    }

    /// The approval's id as typed, made canonical.
    pub(crate) fn id(&self) -> String {
        self.id.trim().to_ascii_uppercase()
    }
}

impl DenyArgs {
    /// The approval's id as typed, made canonical.
    pub(crate) fn id(&self) -> String {
        self.id.trim().to_ascii_uppercase()
    }
}

/// `clawai approve ID [--session | --always]`.
pub(crate) fn approve(args: ApproveArgs) -> Result<ExitCode> {
    let scope = args.scope();
    let id = args.id();
    Ok(match with_broker(|client| client.approve(&id, scope))? {
        Ok(()) => {
            let how = match scope {
                Scope::Once => "approved once",
                Scope::Session => "approved for the session",
                Scope::Always => "approved always for the arguments shown (written to approvals.toml)",
                Scope::AlwaysAnyArguments => "approved always for any arguments (written to approvals.toml)",
            };
            println!("{id}: {how}");
            ExitCode::Ok
        }
        Err(code) => code,
    })
}

/// `clawai deny ID`.
pub(crate) fn deny(args: DenyArgs) -> Result<ExitCode> {
    let id = args.id();
    Ok(match with_broker(|client| client.deny(&id))? {
        Ok(()) => {
            println!("{id}: denied");
            ExitCode::Ok
        }
        Err(code) => code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_escaped_for_the_terminal() {
        assert_eq!(visible("a\u{202e}b\u{200b}c\u{1b}[2J\nd é"), "a\\u{202E}b\\u{200B}c\\u{001B}[2J\\u{000A}d é");
    }
}
