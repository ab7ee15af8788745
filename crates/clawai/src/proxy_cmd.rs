//! `clawai proxy`: run an MCP server behind the policy.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use clawai_proxy::pins::{Identity, Tracker};
use clawai_proxy::{AskOptions, AuditLog, FileStamp, Guard, PolicyHandle, StdioOptions};

use crate::ExitCode;
use crate::paths;
use crate::policy_cmd::PolicyArg;

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
    pub(crate) front: crate::http_cmd::ListenArgs,
    #[command(flatten)]
    pub(crate) otlp: crate::telemetry_cmd::OtlpArgs,
    #[command(flatten)]
    pub(crate) sandbox: crate::sandbox_cmd::SandboxArgs,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// How `clawai proxy` runs the HTTP transports (`--listen`, `--upstream`) and the
/// OpenTelemetry export (`--otlp`). They live in a second binary, `clawai-http`, so that
/// the stdio proxy (what clients launch for every server) stays small: the HTTP stack
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
    pub proxy: fn(ProxyArgs) -> Result<ExitCode>,
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

    /// How a call a `prompt` rule holds is asked about.
    pub(crate) fn ask_options(&self) -> AskOptions {
        ask_options(self.ask_timeout, self.approvals.as_ref())
    }
}

/// How a call a `prompt` rule holds is asked about: `--ask-timeout`, `--approvals`,
/// and the stores chosen for this process.
pub(crate) fn ask_options(timeout: f64, approvals: Option<&PathBuf>) -> AskOptions {
    crate::stores::ask_options(Duration::from_secs_f64(timeout), paths::approvals_path(approvals))
}

/// `clawai proxy`: guards one server (a command, or `--upstream URL`) for one client.
pub fn run(args: ProxyArgs, http: HttpTransport) -> Result<ExitCode> {
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
    if args.front.listen.is_some() || args.upstream.is_some() || args.otlp.wanted() {
        return match http {
            HttpTransport::Helper => exec_http_helper(),
            HttpTransport::InProcess(runners) => (runners.proxy)(args),
        };
    }
    let guarded = match Guarded::open(&args) {
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
    adopt_orphans();
    let code = clawai_proxy::stdio::run_sandboxed(guard, &options, sandbox)?;
    clawai_proxy::process_tree::end_adopted(options.grace);
    Ok(ExitCode::Code(code))
}

/// From now on, what the servers start and orphan is clawai's to end (see
/// [`clawai_proxy::process_tree`]); without it, a server's tree is its process group.
pub(crate) fn adopt_orphans() {
    if let Err(error) = clawai_proxy::process_tree::adopt_orphans() {
        tracing::warn!(
            "cannot adopt the processes servers leave behind ({error}); only their process groups are ended"
        );
    }
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

/// Replaces this process with `clawai-http` (same pid, same stdin/stdout, same args).
pub(crate) fn exec_http_helper() -> Result<ExitCode> {
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

/// What every transport needs: the policy in force (reloaded on change) and the audit
/// trail.
pub(crate) struct Guarded {
    pub(crate) policy: PolicyHandle,
    pub(crate) audit: AuditLog,
}

impl Guarded {
    /// Loads the policy (refusing to start without a valid one) and opens the trail.
    pub(crate) fn open(args: &ProxyArgs) -> Result<Guarded> {
        let also: Vec<PathBuf> = args.approvals.iter().cloned().collect();
        let pins = paths::pins_dir(args.pins.as_ref());
        Guarded::open_with(&args.policy, args.audit.as_ref(), args.audit_max_bytes, args.no_reload, Some(&pins), &also)
    }

    /// [`Guarded::open`] from the options themselves (`clawai gateway` has them too);
    /// `pins`: the pin store; `protect_also`: files besides the policy and the trail that
    /// no tool call may change.
    pub(crate) fn open_with(
        policy: &PolicyArg,
        audit: Option<&PathBuf>,
        audit_max_bytes: u64,
        no_reload: bool,
        pins: Option<&Path>,
        protect_also: &[PathBuf],
    ) -> Result<Guarded> {
        let policy_path = policy.resolve();
        if !policy_path.exists() {
            bail!(
                "no policy at {}; clawai will not run a server unguarded. Create one with `{}`, or pass --policy FILE (or set CLAWAI_POLICY)",
                policy_path.display(),
                paths::init_command(&policy_path)
            );
        }
        // Taken before the file is read: an edit after this moment is reloaded.
        let read = FileStamp::of(&policy_path);
        let policy =
            crate::policy_cmd::load(&policy_path).context("the policy is invalid, so the server was not started")?;
        let audit_path = audit.cloned().unwrap_or_else(|| paths::state_dir().join("audit.jsonl"));
        let audit = AuditLog::open(&audit_path, audit_max_bytes, AuditLog::DEFAULT_KEEP)
            .with_context(|| format!("cannot open the audit trail {}; pass --audit FILE", audit_path.display()))?;
        let protection = crate::protected::self_protection(&policy_path, &audit_path, pins, protect_also);
        let handle = PolicyHandle::new(policy).with_self_protection(protection);
        if !no_reload && let Err(e) = handle.watch_in_background(&policy_path, read) {
            tracing::warn!("cannot watch {} for changes ({e}); edits need a restart", policy_path.display());
        }
        Ok(Guarded { policy: handle, audit })
    }
}
