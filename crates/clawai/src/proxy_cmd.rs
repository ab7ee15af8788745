//! `clawai proxy`: run an MCP server behind the policy.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use clawai_http::{Front, ListenOptions, RemoteOptions, Upstream};
use clawai_protocol::origin::HostPolicy;
use clawai_proxy::{AuditLog, Guard, PolicyHandle, StdioOptions};

use crate::ExitCode;
use crate::paths;
use crate::policy_cmd::PolicyArg;

/// Options of `clawai proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    #[command(flatten)]
    policy: PolicyArg,
    /// The server's name, shown in the audit trail and matched by `server` rules.
    #[arg(long)]
    server: Option<String>,
    /// The audit trail [env: CLAWAI_AUDIT; default: $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long, env = "CLAWAI_AUDIT", value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Rotate the audit trail when it reaches this many bytes.
    #[arg(long, default_value_t = AuditLog::DEFAULT_MAX_BYTES, value_name = "BYTES")]
    audit_max_bytes: u64,
    /// Seconds the server gets to exit after its input closes (and again after SIGTERM).
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    grace: f64,
    /// The largest message accepted in either direction, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024, value_name = "BYTES")]
    max_message_size: usize,
    /// Do not reload the policy when its file changes.
    #[arg(long)]
    no_reload: bool,
    /// A remote MCP server (Streamable HTTP, or legacy HTTP+SSE) to relay to instead of
    /// a command.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// A header sent to the upstream with every request, `Name: value`; `${VAR}` in the
    /// value is taken from the environment (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "upstream")]
    headers: Vec<String>,
    /// Serve Streamable HTTP on this address (`127.0.0.1:8080`, or a bare port for
    /// 127.0.0.1) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// The endpoint path with --listen.
    #[arg(long = "path", default_value = "/mcp", value_name = "PATH", requires = "listen")]
    endpoint_path: String,
    /// With --listen: clients must send `Authorization: Bearer <token>`, the token being
    /// the value of this environment variable.
    #[arg(long, value_name = "VAR", requires = "listen")]
    auth_token_env: Option<String>,
    /// With --listen: also answer to this host name (`Host`/`Origin`); repeatable. By
    /// default a loopback address answers only to localhost, 127.0.0.1 and [::1].
    #[arg(long = "allowed-host", value_name = "HOST", requires = "listen")]
    allowed_hosts: Vec<String>,
    /// With --listen: close sessions unused for this many seconds.
    #[arg(long, default_value_t = 1800.0, value_name = "SECONDS", requires = "listen")]
    session_idle: f64,
    /// With --listen: the most sessions at once.
    #[arg(long, default_value_t = 1000, value_name = "N", requires = "listen")]
    max_sessions: usize,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: ProxyArgs) -> Result<ExitCode> {
    if args.upstream.is_some() && !args.command.is_empty() {
        bail!("give either --upstream URL or a command after `--`, not both");
    }
    if args.upstream.is_none() && args.command.is_empty() {
        bail!(
            "no server to run; write its command after `--`, e.g. `clawai proxy -- npx -y @modelcontextprotocol/server-filesystem /tmp`, or pass --upstream URL"
        );
    }
    let remote = match &args.upstream {
        Some(url) => Some(
            RemoteOptions::parse(url, &args.headers, |name| std::env::var(name).ok()).map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    if !(args.session_idle.is_finite() && args.session_idle > 0.0) {
        bail!("--session-idle must be a positive number of seconds");
    }
    if !(args.grace.is_finite() && args.grace >= 0.0) {
        bail!("--grace must be a number of seconds, 0 or more");
    }
    let policy_path = args.policy.resolve();
    if !policy_path.exists() {
        bail!(
            "no policy at {}; clawai will not run a server unguarded. Create one with `clawai policy init`, or pass --policy FILE (or set CLAWAI_POLICY)",
            policy_path.display()
        );
    }
    let policy =
        crate::policy_cmd::load(&policy_path).context("the policy is invalid, so the server was not started")?;
    let audit_path = args.audit.unwrap_or_else(|| paths::state_dir().join("audit.jsonl"));
    let audit = AuditLog::open(&audit_path, args.audit_max_bytes, AuditLog::DEFAULT_KEEP)
        .with_context(|| format!("cannot open the audit trail {}; pass --audit FILE", audit_path.display()))?;
    let handle = PolicyHandle::new(policy);
    let _watcher = if args.no_reload {
        None
    } else {
        match handle.watch(&policy_path) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("cannot watch {} for changes ({e}); edits need a restart", policy_path.display());
                None
            }
        }
    };
    let grace = Duration::from_secs_f64(args.grace);
    if let Some(listen) = &args.listen {
        let addr = listen_addr(listen)?;
        let auth_token = match &args.auth_token_env {
            Some(var) => Some(std::env::var(var).ok().filter(|t| !t.is_empty()).with_context(|| {
                format!("--auth-token-env {var}: the environment variable {var} is not set (or empty)")
            })?),
            None => None,
        };
        let host_policy = if args.allowed_hosts.is_empty() {
            HostPolicy::for_bind(addr.ip())
        } else {
            let mut names: Vec<String> = args.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
            if addr.ip().is_loopback() {
                names.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
            }
            HostPolicy::Named(names)
        };
        let options = ListenOptions {
            path: args.endpoint_path.clone(),
            host_policy,
            auth_token,
            session_idle: Duration::from_secs_f64(args.session_idle),
            max_sessions: args.max_sessions,
            grace,
            max_message: args.max_message_size,
            server: args.server.clone(),
        };
        let upstream = match remote {
            Some(remote) => Upstream::Remote(remote),
            None => Upstream::Command(args.command.clone()),
        };
        let target = args.upstream.clone().unwrap_or_else(|| args.command.join(" "));
        return runtime()?.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}; is the port in use?"))?;
            let local = listener.local_addr()?;
            eprintln!("clawai: serving http://{local}{} guarding {target}", options.path);
            let front = Front::new(options, upstream, handle, audit);
            front.serve(listener, shutdown_signal()).await?;
            Ok(ExitCode::Code(0))
        });
    }
    let guard = Arc::new(Guard::new(handle, audit, args.server));
    if let Some(remote) = remote {
        let max = args.max_message_size;
        let rt = runtime()?;
        let code = rt.block_on(async move {
            let link = clawai_http::remote::connect(remote, max);
            clawai_http::stdio_front::run(guard, link, max).await
        })?;
        // stdin is read on a blocking thread that cannot be interrupted.
        rt.shutdown_timeout(Duration::from_millis(100));
        return Ok(ExitCode::Code(code));
    }
    let options = StdioOptions { command: args.command, grace, max_message: args.max_message_size };
    let code = clawai_proxy::stdio::run(guard, &options)?;
    Ok(ExitCode::Code(code))
}

/// `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080` or a bare port (127.0.0.1).
fn listen_addr(text: &str) -> Result<std::net::SocketAddr> {
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port.parse().with_context(|| format!("--listen {text}: `{port}` is not a port"))?;
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().with_context(|| format!("--listen {text}: expected an address such as 127.0.0.1:8080 or a port"))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut terminate), Ok(mut interrupt)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
}
