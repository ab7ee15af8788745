#![warn(missing_docs)]
//! The `clawai` command line: a thin layer over the policy, protocol, proxy and HTTP
//! crates. Two binaries share it: `clawai` (everything, with the stdio proxy) and
//! `clawai-http` (the same commands, able to run the HTTP transports itself).

mod approvals_cmd;
mod audit_cmd;
mod audit_follow;
pub mod audit_postgres;
mod audit_verify;
mod checkpoints;
mod clients_cmd;
mod cluster;
pub mod cluster_cmd;
mod common_args;
mod exit;
pub mod gateway_cmd;
mod gateway_state;
mod guarded;
pub mod http_cmd;
mod http_helper;
mod listen_args;
mod not_started;
mod paths;
mod pins_cmd;
mod policy_cmd;
mod policy_in_use;
mod policy_replay;
mod protected;
pub mod proxy_cmd;
pub mod sandbox_cmd;
pub mod scan_cmd;
mod stores;
mod telemetry_cmd;
pub mod ui_cmd;

pub use exit::ExitCode;
pub use http_helper::{HttpRunners, HttpTransport};

use clap::{Parser, Subcommand};

/// clawai: a firewall for the Model Context Protocol.
#[derive(Debug, Parser)]
#[command(name = "clawai", version, about, long_about = None, after_help = GET_STARTED)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The first steps, shown under the command list of `clawai --help`.
const GET_STARTED: &str = "Get started:
  clawai policy init        write the starter policy (~/.config/clawai/policy.toml)
  clawai status             the MCP servers your clients (Claude Desktop, Claude Code, Cursor, ...) launch
  clawai wrap --all         make them start through clawai; `clawai unwrap --all` undoes it
  clawai audit tail         what was decided";

#[derive(Debug, Subcommand)]
enum Command {
    /// Write, check, test and explain policies.
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCommand),
    /// Run an MCP server behind the policy: `clawai proxy [OPTIONS] -- CMD ARGS…`.
    Proxy(proxy_cmd::ProxyArgs),
    /// Many MCP servers behind one guarded endpoint: `clawai gateway --config FILE`.
    Gateway(gateway_cmd::GatewayArgs),
    /// Serve clawai's built-in tools (read_file, write_file, list_directory, exec_shell,
    /// web_fetch) and the skills over stdio, decided by the policy like any server's.
    McpServer(gateway_cmd::McpServerArgs),
    /// Read the audit trail.
    #[command(subcommand)]
    Audit(audit_cmd::AuditCommand),
    /// Rewrite client configurations so their servers start through `clawai proxy`.
    Wrap(clients_cmd::ChangeArgs),
    /// Restore the original entries of wrapped servers.
    Unwrap(clients_cmd::ChangeArgs),
    /// Every client configuration found, its servers, wrapped or not.
    Status(clients_cmd::StatusArgs),
    /// Keep every configuration wrapped as clients add servers.
    Watch(clients_cmd::WatchArgs),
    /// Wrap what is unwrapped, then start a client: `clawai run -- claude`. The
    /// configurations stay wrapped after the client exits (`clawai unwrap --all` undoes it).
    Run(clients_cmd::RunArgs),
    /// Start the approval broker and its web page: pending approvals for `prompt`
    /// rules, the live audit trail, pinned tools to review and approve. Prints the
    /// page's URL.
    Ui(ui_cmd::UiArgs),
    /// The calls waiting for a person's approval.
    Approvals(approvals_cmd::ListArgs),
    /// Approve a pending call: once, for its session (--session), or always (--always).
    Approve(approvals_cmd::ApproveArgs),
    /// Refuse a pending call.
    Deny(approvals_cmd::DenyArgs),
    /// Review and approve tools, prompts and instructions that changed since a server
    /// first listed them (a changed tool is held until approved).
    #[command(subcommand)]
    Pins(pins_cmd::PinsCommand),
    /// List a server's tools, prompts and resource templates and scan them for hidden
    /// instructions: `clawai scan -- CMD ARGS…`, `--upstream URL` or `--config FILE`.
    Scan(scan_cmd::ScanArgs),
    /// The sandbox of stdio servers: `clawai sandbox explain -- CMD ARGS…` prints what
    /// it grants and why.
    #[command(subcommand)]
    Sandbox(sandbox_cmd::SandboxCommand),
}

/// For commands whose output is for a person: end quietly when the reader of stdout goes
/// away (`clawai audit query | head`), as other command-line tools do. Rust ignores
/// SIGPIPE, so a print to the closed pipe would otherwise panic. The proxy keeps it
/// ignored: its stdout is the protocol, and when the client goes away the server must
/// still be shut down.
fn stop_quietly_when_the_reader_goes() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: the default action, set before any other thread of this process exists.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// An empty `CLAWAI_POLICY`, `CLAWAI_AUDIT`, `CLAWAI_CLUSTER` or `OTEL_EXPORTER_OTLP_ENDPOINT`
/// (`"env": {"CLAWAI_AUDIT": ""}` in a client configuration) means the default, as an
/// unset one does; clap would read it as the flag given without a value and stop with
/// an error about a flag nobody typed.
fn forget_empty_settings() {
    for name in ["CLAWAI_POLICY", "CLAWAI_AUDIT", "CLAWAI_PINS", "CLAWAI_CLUSTER", "OTEL_EXPORTER_OTLP_ENDPOINT"] {
        if std::env::var_os(name).is_some_and(|value| value.is_empty()) {
            // SAFETY: called before any other thread of this process exists.
            unsafe { std::env::remove_var(name) };
        }
    }
}

/// Runs `command`: here, or in `clawai-http` when it needs the HTTP stack, Redis or
/// PostgreSQL (see [`http_helper`]). The one place that decides which: the commands
/// themselves are plain functions of their arguments.
fn run(command: Command, http: HttpTransport) -> anyhow::Result<ExitCode> {
    use audit_cmd::AuditCommand;
    use audit_verify::VerifyArgs;
    use cluster_cmd::{Shared, SharedCommand};
    match command {
        Command::Policy(cmd) => policy_cmd::run(cmd),
        Command::Proxy(args) => {
            proxy_cmd::check(&args)?;
            if args.needs_http() { http.serve(args, |r| r.proxy) } else { proxy_cmd::run(args) }
        }
        Command::Gateway(args) => http.serve(args, |r| r.gateway),
        Command::McpServer(args) => http.serve(args, |r| r.mcp_server),
        Command::Audit(AuditCommand::Ship(args)) => http.serve(args, |r| r.audit_ship),
        Command::Audit(AuditCommand::Verify(VerifyArgs { postgres: Some(url), .. })) => {
            http.serve(url, |r| r.audit_verify_postgres)
        }
        Command::Audit(cmd) => audit_cmd::run(cmd),
        Command::Wrap(args) => clients_cmd::change(args, true),
        Command::Unwrap(args) => clients_cmd::change(args, false),
        Command::Status(args) => clients_cmd::status(args),
        Command::Watch(args) => clients_cmd::watch(args),
        Command::Run(args) => clients_cmd::run(args),
        Command::Ui(args) => http.serve(args, |r| r.ui),
        Command::Approvals(args) if args.cluster.url.is_some() => {
            http.serve(SharedCommand::new(Shared::Approvals(args)), |r| r.shared)
        }
        Command::Approvals(args) => approvals_cmd::list(args),
        Command::Approve(args) if args.cluster.url.is_some() => {
            http.serve(SharedCommand::new(Shared::Approve(args)), |r| r.shared)
        }
        Command::Approve(args) => approvals_cmd::approve(args),
        Command::Deny(args) if args.cluster.url.is_some() => {
            http.serve(SharedCommand::new(Shared::Deny(args)), |r| r.shared)
        }
        Command::Deny(args) => approvals_cmd::deny(args),
        Command::Pins(cmd) if cmd.in_cluster() => http.serve(SharedCommand::new(Shared::Pins(cmd)), |r| r.shared),
        Command::Pins(cmd) => pins_cmd::run(cmd),
        Command::Scan(args) => {
            scan_cmd::check_args(&args)?;
            http.serve(args, |r| r.scan)
        }
        Command::Sandbox(cmd) => sandbox_cmd::run(cmd),
    }
}

/// Parses the command line, runs the command and exits with its code.
pub fn main(http: HttpTransport) -> ! {
    forget_empty_settings();
    let cli = Cli::parse();
    // CLAWAI_LOG=error|warn|info|debug|trace; logs go to stderr, stdout is the protocol.
    // A plain level, not an EnvFilter: EnvFilter turns on regex-automata's full DFA
    // builder for the whole binary, which made every policy load several times slower.
    let level = std::env::var("CLAWAI_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing_subscriber::filter::LevelFilter>().ok())
        .unwrap_or(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(level)
        .with_target(false)
        .init();
    if matches!(
        cli.command,
        Command::Policy(_)
            | Command::Audit(_)
            | Command::Status(_)
            | Command::Approvals(_)
            | Command::Pins(_)
            | Command::Scan(_)
            | Command::Sandbox(_)
    ) {
        stop_quietly_when_the_reader_goes();
    }
    let result = run(cli.command, http);
    let code = match result {
        Ok(ExitCode::Ok) => 0,
        Ok(ExitCode::Failure) => 1,
        Ok(ExitCode::Code(c)) => c,
        Err(e) => {
            eprintln!("clawai: {e:#}");
            2
        }
    };
    std::process::exit(code);
}
