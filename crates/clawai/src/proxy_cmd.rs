//! `clawai proxy`: run an MCP server behind the policy.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use clawai_proxy::pins::{Identity, Tracker};
use clawai_proxy::{AskOptions, AuditLog, Guard, PolicyHandle, StdioOptions};

use crate::common_args::PolicyArg;
use crate::exit::ExitCode;
use crate::guarded::Guarded;
use crate::paths;

/// Options of `clawai proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    #[command(flatten)]
    pub(crate) policy: PolicyArg,
    /// The server's name, shown in the audit trail and matched by `server` rules.
    #[arg(long)]
    pub(crate) server: Option<String>,
    /// The audit trail [default: $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long, env = "CLAWAI_AUDIT", value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
    /// Rotate the audit trail when it reaches this many bytes.
    #[arg(long, default_value_t = AuditLog::DEFAULT_MAX_BYTES, value_name = "BYTES")]
    pub(crate) audit_max_bytes: u64,
    /// Seconds the server gets to exit after its input closes (and again after SIGTERM).
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub(crate) grace: f64,
    /// Seconds a call a `prompt` rule holds waits for a person's answer before it is
    /// denied (most clients give up on a call after 60).
    #[arg(long, default_value_t = 45.0, value_name = "SECONDS")]
    pub(crate) ask_timeout: f64,
    /// The calls a person allowed always (`clawai approve ID --always`, `clawai ui`):
    /// they pass a `prompt` rule without asking (never a `deny`).
    #[arg(long, value_name = "FILE", env = "CLAWAI_APPROVALS")]
    pub(crate) approvals: Option<PathBuf>,
    /// The pin store: what each server listed when first seen, and what changed since
    /// (`clawai pins`) [default: $XDG_STATE_HOME/clawai/pins].
    #[arg(long = "pins", env = "CLAWAI_PINS", value_name = "DIR")]
    pub(crate) pins: Option<PathBuf>,
    /// The largest message accepted in either direction, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024, value_name = "BYTES")]
    pub(crate) max_message_size: usize,
    /// Do not reload the policy when its file changes.
    #[arg(long)]
    pub(crate) no_reload: bool,
    /// A remote MCP server (Streamable HTTP, or legacy HTTP+SSE) to relay to instead of
    /// a command.
    #[arg(long, value_name = "URL")]
    pub(crate) upstream: Option<String>,
    /// A header sent to the upstream with every request, `Name: value`; `${VAR}` in the
    /// value is taken from the environment (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE", requires = "upstream")]
    pub(crate) headers: Vec<String>,
    #[command(flatten)]
    pub(crate) front: crate::listen_args::ListenArgs,
    #[command(flatten)]
    pub(crate) otlp: crate::telemetry_cmd::OtlpArgs,
    #[command(flatten)]
    pub(crate) sandbox: crate::sandbox_cmd::SandboxArgs,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

impl ProxyArgs {
    /// The server's pins: its identity is its name (`--server`, else the program's or
    /// the URL host's name) and its command line or URL. A pin file that cannot be read
    /// stops the proxy while pinning is on (it is never pinned anew silently).
    pub(crate) fn pin_tracker(&self, policy: &PolicyHandle) -> Result<Option<Arc<Tracker>>> {
        let identity = match &self.upstream {
            Some(url) => {
                let host = reqwest_free_host(url);
                Identity::url(self.server.clone().unwrap_or(host), url.clone())
            }
            None => {
                let program = self.command.first().map(std::path::Path::new);
                let name = program.and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
                Identity::command(self.server.clone().or(name).unwrap_or_else(|| "server".into()), &self.command)
            }
        };
        // In cluster mode (joined by now) the pins every replica reads.
        let store = match crate::stores::chosen().pins {
            Some(shared) => clawai_proxy::pins::store::PinStore::in_documents(shared),
            None => clawai_proxy::pins::store::PinStore::dir(&paths::pins_dir(self.pins.as_ref())),
        };
        match Tracker::open_in(store, identity) {
            Ok(tracker) => Ok(Some(Arc::new(tracker))),
            Err(e) if policy.current().guards().pinning => {
                Err(anyhow::Error::new(e).context("pinning is on, so the server was not started"))
            }
            Err(e) => {
                tracing::warn!("{e}; pinning is off in the policy, so the server starts without it");
                Ok(None)
            }
        }
    }

    /// Loads the policy (refusing to start without a valid one) and opens the trail.
    pub(crate) fn open_guarded(&self) -> Result<Guarded> {
        let also: Vec<PathBuf> = self.approvals.iter().cloned().collect();
        let pins = paths::pins_dir(self.pins.as_ref());
        Guarded::open_with(&self.policy, self.audit.as_ref(), self.audit_max_bytes, self.no_reload, Some(&pins), &also)
    }

    /// How a call a `prompt` rule holds is asked about.
    pub(crate) fn ask_options(&self) -> AskOptions {
        crate::guarded::ask_options(self.ask_timeout, self.approvals.as_ref())
    }
}

/// `clawai proxy`: guards one server (a command, or `--upstream URL`) for one client.
pub(crate) fn check(args: &ProxyArgs) -> Result<()> {
    if args.upstream.is_some() && !args.command.is_empty() {
        bail!("give either --upstream URL or a command after `--`, not both");
    }
    if args.upstream.is_none() && args.command.is_empty() {
        bail!(
            "no server to run; write its command after `--`, e.g. `clawai proxy -- npx -y @modelcontextprotocol/server-filesystem /tmp`, or pass --upstream URL"
        );
    }
    if !(args.grace.is_finite() && args.grace >= 0.0) {
        bail!("--grace must be a number of seconds, 0 or more");
    }
    if !(args.ask_timeout.is_finite() && args.ask_timeout > 0.0 && args.ask_timeout <= 86_400.0) {
        bail!("--ask-timeout must be a number of seconds, more than 0 (45 by default)");
    }
    // Wrong sandbox options stop here, before the policy is even looked for.
    args.sandbox.request()?;
    if args.sandbox.mode.is_some_and(|mode| mode != clawai_proxy::sandbox::Mode::Off) && args.upstream.is_some() {
        bail!(
            "--sandbox applies to a stdio server clawai starts itself (`clawai proxy --sandbox auto -- CMD`), \
             not to a remote server (--upstream): that process is not clawai's to confine"
        );
    }
    Ok(())
}

impl ProxyArgs {
    /// Whether the command needs the HTTP stack (`--listen`, `--upstream`, `--otlp`): it
    /// then runs in the `clawai-http` binary (see [`crate::http_helper`]).
    pub(crate) fn needs_http(&self) -> bool {
        self.front.listen.is_some() || self.upstream.is_some() || self.otlp.wanted()
    }
}

/// `clawai proxy -- CMD` over stdio, after [`check`].
pub(crate) fn run(args: ProxyArgs) -> Result<ExitCode> {
    let guarded = match args.open_guarded() {
        Ok(guarded) => guarded,
        Err(error) => return crate::not_started::answer_with(error),
    };
    run_stdio(args, guarded)
}

/// The stdio proxy, with the guards given: `clawai proxy -- CMD` (and, in `clawai-http`,
/// the same with `--otlp`).
pub(crate) fn run_stdio(args: ProxyArgs, guarded: Guarded) -> Result<ExitCode> {
    let mut guard =
        Guard::new(guarded.policy.clone(), guarded.audit, args.server.clone()).with_ask_options(args.ask_options());
    if let Some(pins) = args.pin_tracker(&guarded.policy)? {
        guard = guard.with_pins(pins);
    }
    let sandbox = match args.sandbox.prepare(&args.command) {
        Ok(sandbox) => sandbox,
        Err(error) => return crate::not_started::answer_with(error),
    };
    let guard = Arc::new(guard);
    let options = StdioOptions {
        command: args.command,
        grace: Duration::from_secs_f64(args.grace),
        max_message: args.max_message_size,
    };
    crate::guarded::adopt_orphans();
    let code = clawai_proxy::stdio::run_sandboxed(guard, &options, sandbox)?;
    clawai_proxy::process_tree::end_adopted(options.grace);
    Ok(ExitCode::Code(code))
}

/// The host of a URL (`https://mcp.example.com/x` → `mcp.example.com`), read without a
/// URL parser (the small binary has none): a name for pins, not a decision.
fn reqwest_free_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if host.starts_with('[') { host } else { host.split(':').next().unwrap_or(host) };
    if host.is_empty() { "server".to_owned() } else { host.to_owned() }
}
