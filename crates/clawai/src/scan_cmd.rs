//! `clawai scan (-- CMD ARGS… | --upstream URL | --config FILE)`: start the server(s),
//! list every tool, prompt and resource template (all pages), scan them for poisoning,
//! print the findings per tool, and optionally write a starter policy from the live tool
//! list. Runs in the `clawai-http` binary (a remote server needs the HTTP stack).

mod name;
mod report;
mod session;
mod starter;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use clawai_gateway::config::McpServerConfig;
use clawai_http::link::Link;
use clawai_http::{RemoteOptions, child, remote};
use clawai_scan::{Finding, ItemKind, Scanner, Severity};
use serde_json::Value;

use crate::exit::ExitCode;
use name::{NamedBy, default_name};
pub(crate) use report::one_line;
use session::{Listed, Session};
use starter::{ServerTools, starter_policy};

/// Options of `clawai scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Scan a remote server at this MCP endpoint (Streamable HTTP, or legacy SSE).
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// A header for --upstream, `Name: value`; a value may name `${VAR}`. Repeatable.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Scan every server of an MCP configuration file (Claude Desktop, Cursor, the
    /// gateway's): `mcpServers` with `command` or `url` entries.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The server's name in the report and the policy [default: what a client
    /// configuration would call it: the package's short name (`filesystem` for
    /// @modelcontextprotocol/server-filesystem), else the server's serverInfo.name].
    #[arg(long, value_name = "NAME")]
    server: Option<String>,
    /// Print the report as JSON: {"findings": [{server, kind, name, field, severity,
    /// class, evidence}], "servers": [{name, named_by, server_info, scanned, error,
    /// items: [{kind, name, status, findings}]}]}.
    #[arg(long)]
    json: bool,
    /// Exit with status 1 when a finding is at least this severe: info, warn or critical.
    #[arg(long, default_value = "warn", value_name = "SEVERITY")]
    fail_on: Severity,
    /// Write a starter policy from the listed tools to FILE (reads allowed, writes and
    /// destructive tools asked about, deletions, commands and tools with findings denied).
    #[arg(long, value_name = "FILE")]
    policy_out: Option<PathBuf>,
    /// Seconds a server gets to answer each request.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    timeout: f64,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// What `clawai scan` refuses before it starts anything (checked again in `clawai-http`).
pub(crate) fn check_args(args: &ScanArgs) -> Result<()> {
    let given = usize::from(!args.command.is_empty())
        + usize::from(args.upstream.is_some())
        + usize::from(args.config.is_some());
    if given != 1 {
        bail!(
            "give one server to scan: its command after `--` (`clawai scan -- npx -y @modelcontextprotocol/server-filesystem /tmp`), --upstream URL, or --config FILE"
        );
    }
    if !args.headers.is_empty() && args.upstream.is_none() {
        bail!("--header goes with --upstream URL");
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 86_400.0) {
        bail!("--timeout must be a number of seconds, more than 0");
    }
    if let Some(out) = &args.policy_out
        && out.exists()
    {
        bail!("{} exists; remove it or give --policy-out another file", out.display());
    }
    Ok(())
}

/// How to reach one server.
enum Transport {
    Command { line: Vec<String>, env: Vec<(String, String)>, cwd: Option<PathBuf> },
    Remote(RemoteOptions),
}

/// One server to scan.
struct Target {
    /// Its name when `--server` or the configuration gives it; else it is named once
    /// it answered ([`default_name`]).
    given: Option<(String, NamedBy)>,
    /// The command line it starts with (empty for a remote server).
    command: Vec<String>,
    /// A remote server's host.
    host: Option<String>,
    transport: Transport,
}

/// What one server listed, or why it could not be listed.
struct Scanned {
    name: String,
    named_by: NamedBy,
    listed: Result<Listed>,
}

/// `clawai scan`, in process.
pub fn run_scan(args: ScanArgs) -> Result<ExitCode> {
    check_args(&args)?;
    let targets = targets(&args)?;
    let timeout = Duration::from_secs_f64(args.timeout);
    let runtime = crate::http_cmd::runtime()?;
    let scanned: Vec<Scanned> = runtime.block_on(async {
        let mut scanned = Vec::new();
        for target in targets {
            let listed = list(target.transport, timeout).await;
            let (name, named_by) = target.given.unwrap_or_else(|| {
                let info = listed.as_ref().ok().and_then(|l| l.server_info.as_ref());
                default_name(&target.command, target.host.as_deref(), info)
            });
            scanned.push(Scanned { name, named_by, listed });
        }
        scanned
    });
    let findings = scan(&scanned);
    if args.json {
        println!("{}", report::json(&scanned, &findings));
    } else {
        print!("{}", report::text(&scanned, &findings, args.policy_out.is_some()));
    }
    let failed: Vec<String> =
        scanned.iter().filter_map(|s| s.listed.as_ref().err().map(|error| format!("{}: {error:#}", s.name))).collect();
    for failure in &failed {
        eprintln!("clawai scan: could not list {failure}");
    }
    if let Some(out) = &args.policy_out {
        write_policy(out, &scanned, &findings, args.fail_on)?;
        if !args.json {
            println!(
                "Starter policy written to {}; check it with `clawai policy check {}`.",
                out.display(),
                out.display()
            );
        }
    }
    if !failed.is_empty() {
        bail!("{} of {} servers could not be listed", failed.len(), scanned.len());
    }
    if findings.iter().any(|(_, f)| f.severity >= args.fail_on) { Ok(ExitCode::Failure) } else { Ok(ExitCode::Ok) }
}

/// The servers the arguments name.
fn targets(args: &ScanArgs) -> Result<Vec<Target>> {
    if let Some(url) = &args.upstream {
        let options =
            RemoteOptions::parse(url, &args.headers, |name| std::env::var(name).ok()).map_err(anyhow::Error::msg)?;
        let given = args.server.clone().map(|name| (name, NamedBy::Flag));
        let host = Some(options.url.host_str().unwrap_or("remote").to_owned());
        return Ok(vec![Target { given, command: Vec::new(), host, transport: Transport::Remote(options) }]);
    }
    if let Some(path) = &args.config {
        return config_targets(path);
    }
    let given = args.server.clone().map(|name| (name, NamedBy::Flag));
    let transport = Transport::Command { line: args.command.clone(), env: Vec::new(), cwd: None };
    Ok(vec![Target { given, command: args.command.clone(), host: None, transport }])
}

/// Every enabled server of a configuration file, read as the gateway reads it.
fn config_targets(path: &Path) -> Result<Vec<Target>> {
    let lenient = !clawai_clients::known::explicit(path, None).custom;
    let config = clawai_gateway::config::load(path, &|name| std::env::var(name).ok(), lenient)
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    for warning in &config.warnings {
        eprintln!("clawai scan: {warning}");
    }
    let mut targets = Vec::new();
    for (name, entry) in config.servers {
        if entry.disabled {
            eprintln!("clawai scan: {name} is disabled in {}; not scanned", path.display());
            continue;
        }
        let transport = match entry.transport {
            clawai_gateway::Transport::Builtin | clawai_gateway::Transport::InProcess(_) => {
                eprintln!("clawai scan: {name} is clawai's built-in tools; not scanned");
                continue;
            }
            clawai_gateway::Transport::Mcp(McpServerConfig::Stdio { command, args, env }) => {
                let mut line = vec![command];
                line.extend(args);
                Transport::Command { line, env: env.into_iter().collect(), cwd: entry.cwd }
            }
            clawai_gateway::Transport::Mcp(
                McpServerConfig::Http { url, headers } | McpServerConfig::Sse { url, headers },
            ) => {
                let lines: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                // The values were expanded when the configuration was read.
                let options =
                    RemoteOptions::parse(&url, &lines, |_| None).map_err(|error| anyhow::anyhow!("{name}: {error}"))?;
                Transport::Remote(options)
            }
        };
        targets.push(Target { given: Some((name, NamedBy::Config)), command: Vec::new(), host: None, transport });
    }
    if targets.is_empty() {
        bail!("{} has no server to scan", path.display());
    }
    Ok(targets)
}

/// The largest message read from a server.
const MAX_MESSAGE: usize = 64 << 20;

/// Starts or connects to one server and lists everything it has.
async fn list(transport: Transport, timeout: Duration) -> Result<Listed> {
    match transport {
        Transport::Command { line, env, cwd } => {
            let (link, server) = child::spawn_with(
                &line,
                |command| {
                    command.envs(env);
                    if let Some(cwd) = cwd {
                        command.current_dir(cwd);
                    }
                },
                MAX_MESSAGE,
            )
            .with_context(|| "the server did not start".to_string())?;
            let listed = list_over(link, timeout).await;
            server.shut_down(Duration::from_secs(2)).await;
            listed
        }
        Transport::Remote(options) => list_over(remote::connect(options, MAX_MESSAGE), timeout).await,
    }
}

async fn list_over(link: Link, timeout: Duration) -> Result<Listed> {
    let mut session = Session::new(link, timeout);
    let listed = session.list_everything().await;
    session.close();
    listed
}

/// Every finding of every server, with the server's name. Each server is scanned with
/// the other servers' tool names, for shadowing.
fn scan(scanned: &[Scanned]) -> Vec<(String, Finding)> {
    let names = |listed: &Listed| -> BTreeSet<String> {
        listed.tools.iter().filter_map(|t| t.get("name")?.as_str()).map(str::to_owned).collect()
    };
    let all: Vec<(usize, BTreeSet<String>)> =
        scanned.iter().enumerate().filter_map(|(i, s)| Some((i, names(s.listed.as_ref().ok()?)))).collect();
    let mut findings = Vec::new();
    for (index, server) in scanned.iter().enumerate() {
        let Ok(listed) = &server.listed else { continue };
        let own = names(listed);
        let others: BTreeSet<&str> = all
            .iter()
            .filter(|(i, _)| *i != index)
            .flat_map(|(_, names)| names.iter())
            .filter(|name| !own.contains(*name))
            .map(String::as_str)
            .collect();
        let scanner = Scanner::new(&others.into_iter().collect::<Vec<_>>());
        let mut found = scanner.scan_listing(ItemKind::Tool, &listed.tools);
        found.extend(scanner.scan_listing(ItemKind::Prompt, &listed.prompts));
        found.extend(scanner.scan_listing(ItemKind::ResourceTemplate, &listed.templates));
        if let Some(instructions) = &listed.instructions {
            found.extend(scanner.scan_item(ItemKind::Instructions, &Value::String(instructions.clone())));
        }
        findings.extend(found.into_iter().map(|f| (server.name.clone(), f)));
    }
    findings
}

/// Writes the starter policy, after checking it loads as `clawai policy check` loads it.
fn write_policy(out: &Path, scanned: &[Scanned], findings: &[(String, Finding)], fail_on: Severity) -> Result<()> {
    let servers: Vec<ServerTools<'_>> = scanned
        .iter()
        .filter_map(|server| {
            let listed = server.listed.as_ref().ok()?;
            let flagged: HashSet<&str> = findings
                .iter()
                .filter(|(s, f)| *s == server.name && f.kind == ItemKind::Tool && f.severity >= fail_on)
                .map(|(_, f)| f.name.as_str())
                .collect();
            Some(ServerTools { name: &server.name, tools: &listed.tools, flagged })
        })
        .collect();
    let text = starter_policy(&servers);
    let name = out.display().to_string();
    if let Err(error) = clawai_policy::load_str(&text, clawai_policy::Format::Toml, &name) {
        bail!("the starter policy did not load, so it was not written: {error}");
    }
    std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))
}
