//! Which binary runs a command. The HTTP transports (`proxy --listen`, `--upstream`),
//! the OpenTelemetry export, `gateway`, `mcp-server`, `ui`, `scan`, `audit ship`,
//! `audit verify --postgres` and the `--cluster` commands live in a second binary,
//! `clawai-http`; the root of the CLI (`crate::main`) sends them there. Commands never
//! see this module: they are plain functions of their arguments.

use anyhow::{Context, Result, bail};

use crate::exit::ExitCode;

/// How the commands that need the HTTP stack, Redis or PostgreSQL run. They live in a
/// second binary, `clawai-http`, so that the stdio proxy (what clients launch for every server) stays small: the HTTP stack
/// (tokio, hyper, rustls) would add about 4 MB to its binary, 2 MiB to its memory and
/// half a millisecond to its start.
#[derive(Clone, Copy)]
pub enum HttpTransport {
    /// Replace this process with the `clawai-http` binary beside it (same arguments).
    Helper,
    /// Run them here (the `clawai-http` binary itself).
    InProcess(HttpRunners),
}

/// What the `clawai-http` binary runs in process: the commands that need the HTTP stack.
#[derive(Clone, Copy)]
pub struct HttpRunners {
    /// `clawai proxy --listen` / `--upstream` / `--otlp`.
    pub proxy: fn(crate::proxy_cmd::ProxyArgs) -> Result<ExitCode>,
    /// `clawai ui`.
    pub ui: fn(crate::ui_cmd::UiArgs) -> Result<ExitCode>,
    /// `clawai gateway`.
    pub gateway: fn(crate::gateway_cmd::GatewayArgs) -> Result<ExitCode>,
    /// `clawai mcp-server`.
    pub mcp_server: fn(crate::gateway_cmd::McpServerArgs) -> Result<ExitCode>,
    /// `clawai scan`.
    pub scan: fn(crate::scan_cmd::ScanArgs) -> Result<ExitCode>,
    /// `clawai audit ship`.
    pub audit_ship: fn(crate::audit_postgres::ShipArgs) -> Result<ExitCode>,
    /// `clawai audit verify --postgres URL`.
    pub audit_verify_postgres: fn(String) -> Result<ExitCode>,
    /// `clawai pins|approvals|approve|deny --cluster URL` (the Redis client lives here).
    pub shared: fn(crate::cluster_cmd::SharedCommand) -> Result<ExitCode>,
}

/// A command run in `clawai-http`, taking its arguments.
pub(crate) type Runner<A> = fn(A) -> Result<ExitCode>;

impl HttpTransport {
    /// Runs `args` with the runner `pick` names: here in `clawai-http`, or, in `clawai`,
    /// by replacing this process with `clawai-http` (which parses the same arguments).
    pub(crate) fn serve<A>(self, args: A, pick: fn(&HttpRunners) -> Runner<A>) -> Result<ExitCode> {
        match self {
            HttpTransport::Helper => exec_http_helper(),
            HttpTransport::InProcess(runners) => pick(&runners)(args),
        }
    }
}

/// Replaces this process with `clawai-http` (same pid, same stdin/stdout, same args).
fn exec_http_helper() -> Result<ExitCode> {
    use std::os::unix::process::CommandExt;
    let here = std::env::current_exe().context("cannot find the clawai binary's own path")?;
    let helper = here.with_file_name("clawai-http");
    if !helper.exists() {
        bail!(
            "--listen, --upstream, --otlp, `clawai gateway`, `clawai mcp-server`, `clawai ui` and `clawai audit ship` are served by `clawai-http`, which should be installed beside {} (cargo install --path crates/clawai installs both)",
            here.display()
        );
    }
    let error = std::process::Command::new(&helper).args(std::env::args_os().skip(1)).exec();
    Err(anyhow::Error::new(error).context(format!("cannot start {}", helper.display())))
}
