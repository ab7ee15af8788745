//! `clawai wrap`, `unwrap`, `status`, `watch`, `run`: put clawai in front of the servers
//! of every MCP client, and take it out again.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use clawai_clients::known::{self, Dirs};
use clawai_clients::{Client, ClientError, KnownFile, Options, Scope, Selection, ops};

use crate::exit::ExitCode;
use crate::paths::{self, home_relative};
use crate::policy_in_use::{self, PolicyState};

/// Which files to work on.
#[derive(Debug, Args)]
pub(crate) struct Targets {
    /// Only this client's files (claude-desktop, claude-code, cursor, vscode, windsurf,
    /// gemini, codex, zed, cline, roo, lmstudio, kiro).
    #[arg(long, value_parser = parse_client)]
    client: Option<Client>,
    /// Only this file (which client's it is, and its layout, come from its path or
    /// content, or from --client).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Only user-wide or only project files (the project is the current directory).
    #[arg(long, value_enum)]
    scope: Option<ScopeArg>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ScopeArg {
    User,
    Project,
}

fn parse_client(s: &str) -> Result<Client, String> {
    Client::from_id(s).ok_or_else(|| {
        let ids: Vec<&str> = Client::ALL.iter().map(|c| c.id()).collect();
        format!("unknown client `{s}`; known: {}", ids.join(", "))
    })
}

/// `clawai wrap` / `clawai unwrap`.
#[derive(Debug, Args)]
pub(crate) struct ChangeArgs {
    /// Server names (as in the client's configuration).
    names: Vec<String>,
    /// Every server.
    #[arg(long, conflicts_with = "names")]
    all: bool,
    #[command(flatten)]
    targets: Targets,
    /// Show the change as a diff and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Pin this policy in wrapped entries [default: the policy at
    /// $XDG_CONFIG_HOME/clawai/policy.toml, checked before wrapping].
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Wrap even when that policy is missing or does not load (the servers will not
    /// start until it does).
    #[arg(long)]
    force: bool,
    /// `clawai wrap --sandbox auto`: the wrapped stdio servers run in a sandbox (written
    /// into each entry as `clawai proxy --sandbox auto …`).
    #[command(flatten)]
    sandbox: crate::sandbox_cmd::SandboxArgs,
}

/// `clawai status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    targets: Targets,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// The pin store whose held tools are shown [default: $XDG_STATE_HOME/clawai/pins].
    #[arg(long, env = "CLAWAI_PINS", value_name = "DIR")]
    pins: Option<PathBuf>,
}

/// `clawai watch`.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    #[command(flatten)]
    targets: Targets,
    /// Pin this policy in wrapped entries [default: the policy at
    /// $XDG_CONFIG_HOME/clawai/policy.toml, checked before wrapping].
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Wrap even when that policy is missing or does not load (the servers will not
    /// start until it does).
    #[arg(long)]
    force: bool,
    /// `clawai wrap --sandbox auto`: the wrapped stdio servers run in a sandbox (written
    /// into each entry as `clawai proxy --sandbox auto …`).
    #[command(flatten)]
    sandbox: crate::sandbox_cmd::SandboxArgs,
}

/// `clawai run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Pin this policy in wrapped entries [default: the policy at
    /// $XDG_CONFIG_HOME/clawai/policy.toml, checked before wrapping].
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Wrap even when that policy is missing or does not load (the servers will not
    /// start until it does).
    #[arg(long)]
    force: bool,
    /// The client to start, and its arguments.
    #[arg(last = true, required = true, value_name = "CLIENT")]
    command: Vec<String>,
}

fn files(targets: &Targets) -> Vec<KnownFile> {
    if let Some(path) = &targets.config {
        return vec![known::explicit(path, targets.client)];
    }
    known::files(&Dirs::from_env())
        .into_iter()
        .filter(|f| targets.client.is_none_or(|c| c == f.client))
        .filter(|f| match targets.scope {
            Some(ScopeArg::User) => f.scope == Scope::User,
            Some(ScopeArg::Project) => f.scope == Scope::Project,
            None => true,
        })
        .filter(|f| f.path.exists() || targets.config.is_some())
        .collect()
}

/// The settings of a change.
fn options(policy: Option<PathBuf>, dry_run: bool) -> Result<Options> {
    let clawai = std::env::current_exe().context("cannot find the clawai binary's path")?;
    let clawai = std::fs::canonicalize(&clawai).unwrap_or(clawai);
    let policy = match policy {
        // A pinned path must not depend on the directory the client starts in.
        Some(p) => Some(std::fs::canonicalize(&p).or_else(|_| std::path::absolute(&p))?),
        None => None,
    };
    Ok(Options { clawai, policy, proxy_flags: Vec::new(), dry_run, state_dir: paths::state_dir() })
}

/// The settings of a wrap, once the policy the wrapped entries will use is checked: a
/// server wrapped without a usable policy does not start, and the client loses it.
fn wrap_options(policy: Option<PathBuf>, dry_run: bool, force: bool) -> Result<Options> {
    let options = options(policy, dry_run)?;
    policy_in_use::check_before_wrapping(&policy_in_use::for_entries(options.policy.as_deref()), force, dry_run)?;
    Ok(options)
}

/// Refuses names that are in none of `files`, listing the servers there are, before
/// anything changes: a mistyped name must not leave the command half done.
fn refuse_unknown_names(names: &[String], files: &[KnownFile], verb: &str) -> Result<()> {
    let mut existing = Vec::new();
    for file in files {
        match ops::status(file) {
            Ok((servers, _)) => existing.extend(servers.into_iter().map(|s| s.name)),
            // An unreadable file may hold the name; the change reports that file's error.
            Err(_) => return Ok(()),
        }
    }
    let unknown: Vec<String> = names.iter().filter(|n| !existing.contains(n)).map(|n| format!("`{n}`")).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    existing.sort();
    existing.dedup();
    let there = match existing.is_empty() {
        true => "they have no server".to_owned(),
        false => format!("the servers there are: {}", existing.join(", ")),
    };
    bail!(
        "no server named {} in the {} configuration file{} clawai looked at; {there}. Nothing was {verb}ped; `clawai status` shows each server and its file",
        unknown.join(", "),
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    )
}

fn nothing_found(targets: &Targets) -> Result<ExitCode> {
    let looked: Vec<String> = known::files(&Dirs::from_env())
        .into_iter()
        .filter(|f| targets.client.is_none_or(|c| c == f.client))
        .map(|f| format!("  {:<15} {}", f.client.display(), home_relative(&f.path)))
        .collect();
    eprintln!("No MCP client configuration found. clawai looked in:\n{}", looked.join("\n"));
    eprintln!("Pass --config FILE for a file elsewhere.");
    Ok(ExitCode::Ok)
}

pub(crate) fn change(args: ChangeArgs, wrap: bool) -> Result<ExitCode> {
    let verb = if wrap { "wrap" } else { "unwrap" };
    if !args.all && args.names.is_empty() {
        bail!("say which servers to {verb}: `clawai {verb} NAME…` or `clawai {verb} --all`");
    }
    let selection = if args.all { Selection::All } else { Selection::Names(args.names.clone()) };
    let files = files(&args.targets);
    if files.is_empty() {
        return nothing_found(&args.targets);
    }
    refuse_unknown_names(&args.names, &files, verb)?;
    let sandbox = args.sandbox.request()?;
    if !wrap && sandbox.is_on() {
        bail!("--sandbox is for `clawai wrap`; `clawai unwrap` restores the entries as they were");
    }
    let opts = match wrap {
        true => Options {
            proxy_flags: if sandbox.is_on() { sandbox.to_args() } else { Vec::new() },
            ..wrap_options(args.policy.clone(), args.dry_run, args.force)?
        },
        // Unwrapping writes no entry that needs a policy.
        false => options(args.policy.clone(), args.dry_run)?,
    };
    let mut failed = false;
    let mut changed = 0;
    for file in &files {
        let result = if wrap { ops::wrap(file, &selection, &opts) } else { ops::unwrap(file, &selection, &opts) };
        let report = match result {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                failed = true;
                continue;
            }
        };
        let where_ = format!("{} ({})", home_relative(&file.path), file.label());
        for w in &report.warnings {
            eprintln!("warning: {where_}: {w}");
        }
        if let Some(diff) = &report.diff
            && args.dry_run
        {
            print!("{diff}");
        }
        if !report.changed.is_empty() {
            changed += report.changed.len();
            let done = if args.dry_run { format!("would {verb}") } else { format!("{verb}ped") };
            println!("{where_}: {done} {}", report.changed.join(", "));
            if let Some(b) = &report.backup {
                println!("  original backed up to {}", home_relative(b));
            }
        }
        for (name, why) in report.skipped.iter().filter(|(_, why)| !why.starts_with("no server")) {
            println!("{where_}: not {verb}ped {name}: {why}");
        }
    }
    if changed == 0 && !failed {
        println!(
            "Nothing to {verb}: {}",
            if wrap { "every stdio server is already wrapped." } else { "no server is wrapped." }
        );
    } else if args.dry_run {
        println!("Dry run: nothing was written. Run the same command without --dry-run to apply it.");
    } else if wrap {
        println!(
            "Restart the clients above so they start their servers through clawai. `clawai status` shows what is guarded; `clawai unwrap --all` undoes this."
        );
    } else {
        println!("Restart the clients above so they start their servers directly again.");
    }
    Ok(if failed { ExitCode::Failure } else { ExitCode::Ok })
}

pub(crate) fn status(args: StatusArgs) -> Result<ExitCode> {
    let files = files(&args.targets);
    if files.is_empty() && !args.json {
        let code = nothing_found(&args.targets);
        print!("{}", crate::gateway_state::report());
        return code;
    }
    let mut failed = false;
    let mut json = Vec::new();
    let mut policies = PolicyStates::default();
    let mut wrappable = false;
    for file in &files {
        let (servers, warnings) = match ops::status(file) {
            Ok(found) => found,
            Err(e) => {
                failed = true;
                if args.json {
                    json.push(serde_json::json!({"client": client_id(file), "path": file.path.display().to_string(), "error": e.to_string()}));
                } else {
                    eprintln!("error: {e}");
                }
                continue;
            }
        };
        wrappable |= servers.iter().any(|s| s.wrappable);
        if args.json {
            let servers: Vec<serde_json::Value> = servers
                .iter()
                .map(|s| {
                    let mut value = serde_json::to_value(s).unwrap_or_default();
                    if let Some(line) = sandbox_of(s) {
                        value["sandbox"] = line.into();
                    }
                    if let Some(pinned) = s.policy.as_deref() {
                        let (path, state) = policies.of(pinned);
                        value["policy_file"] = path.display().to_string().into();
                        value["policy_state"] = match state {
                            PolicyState::Usable => "ok".into(),
                            PolicyState::Missing => "missing".into(),
                            PolicyState::Invalid(why) => format!("invalid: {why}").into(),
                        };
                    }
                    value
                })
                .collect();
            json.push(serde_json::json!({
                "client": client_id(file),
                "label": file.label(),
                "path": file.path.display().to_string(),
                "scope": if file.scope == Scope::User { "user" } else { "project" },
                "servers": servers,
                "warnings": warnings,
            }));
            continue;
        }
        println!("{} — {}", file.label(), home_relative(&file.path));
        for w in warnings {
            println!("  warning: {w}");
        }
        if servers.is_empty() {
            println!("  (no servers)");
        }
        for s in servers {
            let scope = if s.scope.contains('[') { format!(" [{}]", s.scope) } else { String::new() };
            let detail = match s.state.as_str() {
                "wrapped" | "stale" => {
                    let (path, state) = policies.of(s.policy.as_deref().unwrap_or(DEFAULT_POLICY));
                    format!(
                        "{} via {} (policy: {}{}) -> {}",
                        s.state,
                        s.clawai.as_deref().unwrap_or("?"),
                        home_relative(&path),
                        state.remark(&path),
                        s.command.as_deref().unwrap_or("?")
                    )
                }
                _ => format!("{}{}", s.state, s.command.as_deref().map(|c| format!(" ({c})")).unwrap_or_default()),
            };
            println!("  {}{scope}: {detail}", s.name);
            if let Some(line) = sandbox_of(&s) {
                println!("    {line}");
            }
            if let Some(note) = s.note {
                println!("    {note}");
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        if wrappable {
            println!("`clawai wrap --all --dry-run` shows what wrapping would change.");
        }
        print!("{}", crate::gateway_state::report());
        print!("{}", held_report(&paths::pins_dir(args.pins.as_ref())));
    }
    Ok(if failed { ExitCode::Failure } else { ExitCode::Ok })
}

/// What a wrapped entry's sandbox enforces on this system, if it asks for one.
fn sandbox_of(entry: &clawai_clients::EntryStatus) -> Option<String> {
    let command: Vec<String> = entry.command.iter().chain(&entry.args).cloned().collect();
    crate::sandbox_cmd::status_line(&entry.proxy_options, &command)
}

/// What pinning holds across the pin store: each held tool, prompt, template or
/// server's instructions, why, and the command that reviews it (empty when nothing is).
fn held_report(dir: &Path) -> String {
    use std::fmt::Write as _;
    let files = match clawai_proxy::pins::store::load_all(dir) {
        Ok(files) => files,
        Err(e) => return format!("\nHeld by pinning: the pin store cannot be read ({e})\n"),
    };
    let mut out = String::new();
    for (_, file) in &files {
        for row in clawai_proxy::pins::review::rows(file).into_iter().filter(|row| row.entry.state().is_held()) {
            if out.is_empty() {
                out.push_str("\nHeld by pinning (calls refused until a person approves):\n");
            }
            let server = crate::scan_cmd::one_line(&file.server);
            let name = crate::scan_cmd::one_line(row.name);
            let why = match row.entry.quarantined_by() {
                Some(f) => format!(": {} ({})", f.class, f.severity),
                None => String::new(),
            };
            let target =
                if row.kind == clawai_proxy::pins::review::INSTRUCTIONS { String::new() } else { format!(" {name}") };
            let _ = writeln!(
                out,
                "  {server} {} {name}: {}{why}; review: clawai pins diff {server}{target}",
                row.kind,
                clawai_proxy::pins::review::state_word(row.kind, row.entry),
            );
        }
    }
    out
}

/// What `status` reports as the policy of an entry that pins none.
const DEFAULT_POLICY: &str = "default";

/// `--client` id of a file, or `custom` for a file of no known client.
fn client_id(file: &KnownFile) -> &'static str {
    if file.custom { "custom" } else { file.client.id() }
}

/// The state of each policy file wrapped entries use, each loaded once.
#[derive(Default)]
struct PolicyStates(std::collections::HashMap<PathBuf, PolicyState>);

impl PolicyStates {
    /// The file an entry's policy (`default`, or the pinned path) is, and its state.
    fn of(&mut self, pinned: &str) -> (PathBuf, PolicyState) {
        let path = policy_in_use::for_entries((pinned != DEFAULT_POLICY).then_some(Path::new(pinned)));
        let state = self.0.entry(path.clone()).or_insert_with(|| PolicyState::of(&path)).clone();
        (path, state)
    }
}

fn wrap_quietly(file: &KnownFile, opts: &Options) -> Result<Vec<String>, ClientError> {
    ops::wrap(file, &Selection::All, opts).map(|r| r.changed)
}

pub(crate) fn watch(args: WatchArgs) -> Result<ExitCode> {
    let opts = wrap_options(args.policy.clone(), false, args.force)?;
    let all: Vec<KnownFile> = if args.targets.config.is_some() {
        files(&args.targets)
    } else {
        known::files(&Dirs::from_env())
            .into_iter()
            .filter(|f| args.targets.client.is_none_or(|c| c == f.client))
            .collect()
    };
    let (tx, rx) = mpsc::channel::<Option<PathBuf>>();
    let signal_tx = tx.clone();
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = signal_tx.send(None);
        }
    });
    let watch_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Reads (access events) are not changes; clients read these files all the time.
        if let Some(event) = event.ok().filter(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
            for path in event.paths {
                let _ = watch_tx.send(Some(path));
            }
        }
    })?;
    let mut dirs: Vec<PathBuf> = all.iter().filter_map(|f| f.path.parent().map(Path::to_owned)).collect();
    dirs.sort();
    dirs.dedup();
    let mut watched = 0;
    for dir in &dirs {
        if dir.is_dir() && notify::Watcher::watch(&mut watcher, dir, notify::RecursiveMode::NonRecursive).is_ok() {
            watched += 1;
        }
    }
    eprintln!(
        "clawai watch: keeping {} configuration files wrapped ({} directories watched); Ctrl-C or SIGTERM stops",
        all.len(),
        watched
    );
    let report = |file: &KnownFile| {
        if !file.path.exists() {
            return;
        }
        match wrap_quietly(file, &opts) {
            Ok(changed) if !changed.is_empty() => {
                eprintln!("clawai watch: wrapped {} in {}", changed.join(", "), home_relative(&file.path))
            }
            Ok(_) => {}
            Err(e) => eprintln!("clawai watch: {e}"),
        }
    };
    all.iter().for_each(report);
    while let Ok(Some(first)) = rx.recv() {
        // Debounce: apps write these files in bursts (temp file, rename, chmod…).
        let mut touched = vec![first];
        let mut stop = false;
        let settle_by = std::time::Instant::now() + Duration::from_secs(2);
        while let Ok(next) = rx.recv_timeout(Duration::from_millis(300)) {
            match next {
                Some(p) => touched.push(p),
                None => stop = true,
            }
            if std::time::Instant::now() > settle_by {
                break;
            }
        }
        for file in &all {
            let name = file.path.file_name();
            let parent = file.path.parent();
            if touched.iter().any(|p| p.file_name() == name && p.parent() == parent) {
                report(file);
            }
        }
        if stop {
            break;
        }
    }
    eprintln!("clawai watch: stopped");
    Ok(ExitCode::Ok)
}

pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    let opts = wrap_options(args.policy.clone(), false, args.force)?;
    for file in known::files(&Dirs::from_env()).iter().filter(|f| f.path.exists()) {
        match wrap_quietly(file, &opts) {
            Ok(changed) if !changed.is_empty() => {
                eprintln!("clawai: wrapped {} in {}", changed.join(", "), home_relative(&file.path))
            }
            Ok(_) => {}
            Err(e) => eprintln!("clawai: {e} (continuing)"),
        }
    }
    let (program, rest) = args.command.split_first().context("no client to run")?;
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(program).args(rest).exec();
    bail!("cannot start `{program}`: {err}")
}
