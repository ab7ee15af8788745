//! `clawai proxy`: run an MCP server behind the policy.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
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
    /// A remote MCP server (Streamable HTTP). Not available yet.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Serve Streamable HTTP on this address. Not available yet.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: ProxyArgs) -> Result<ExitCode> {
    if args.upstream.is_some() || args.listen.is_some() {
        bail!(
            "--upstream and --listen (HTTP transports) are not implemented yet; run a stdio server with `clawai proxy -- CMD ARGS…`"
        );
    }
    if args.command.is_empty() {
        bail!(
            "no server to run; write its command after `--`, e.g. `clawai proxy -- npx -y @modelcontextprotocol/server-filesystem /tmp`"
        );
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
    let guard = Arc::new(Guard::new(handle, audit, args.server));
    let options = StdioOptions {
        command: args.command,
        grace: Duration::from_secs_f64(args.grace),
        max_message: args.max_message_size,
    };
    let code = clawai_proxy::stdio::run(guard, &options)?;
    Ok(ExitCode::Code(code))
}
