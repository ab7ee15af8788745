//! `clawai gateway`: many MCP servers behind one guarded endpoint, over stdio or
//! Streamable HTTP (`--listen`). Runs in the `clawai-http` binary.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use clawai_gateway::{Gateway, GatewayConfig, GatewayOptions, ServerEntry};
use clawai_http::{Front, Upstream};
use clawai_proxy::AskOptions;
use clawai_proxy::{AuditLog, PolicyHandle};

mod check;

use crate::common_args::PolicyArg;
use crate::exit::ExitCode;
use crate::guarded::Guarded;
use crate::http_cmd::{FrontSettings, runtime, shutdown_signal};
use crate::listen_args::ListenArgs;

/// Options of `clawai gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// The servers: a JSON file with `mcpServers` (a Claude Desktop or Cursor file works
    /// as it is), or `tools.mcpServers`, and optionally `agent.allowedTools`.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    #[command(flatten)]
    served: ServedArgs,
    /// Seconds the calls in flight on a server removed from the configuration get to
    /// finish before they are cancelled and the server is stopped.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    drain: f64,
    /// Seconds a server gets to exit after its input closes (and again after SIGTERM).
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    grace: f64,
    /// The most tools (prompts, resources) on one page of a list.
    #[arg(long, default_value_t = 500, value_name = "N")]
    page_size: usize,
    /// Seconds a client session's own instance of a `"session": "per-client"` server may
    /// sit unused before it is stopped (its next call starts a new one).
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    per_client_idle: f64,
    /// The pin store: what each server listed when first seen, and what changed since
    /// (`clawai pins`) [default: $XDG_STATE_HOME/clawai/pins].
    #[arg(long = "pins", env = "CLAWAI_PINS", value_name = "DIR")]
    pins: Option<PathBuf>,
    /// Start the servers and the skills, report each server (state, tools), each skill
    /// and every problem (a server that cannot start, a skill that does not load, an
    /// `allowed-tools` pattern that matches no tool), then stop and exit: 1 when there is
    /// a problem.
    #[arg(long, conflicts_with = "listen")]
    check: bool,
    #[command(flatten)]
    front: ListenArgs,
}

/// Options of `clawai mcp-server`.
#[derive(Debug, Args)]
pub struct McpServerArgs {
    #[command(flatten)]
    served: ServedArgs,
}

/// What `clawai gateway` and `clawai mcp-server` share: the guards and the skills.
#[derive(Debug, Args)]
pub(crate) struct ServedArgs {
    #[command(flatten)]
    pub(crate) policy: PolicyArg,
    /// The audit trail [default: $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long, env = "CLAWAI_AUDIT", value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Rotate the audit trail when it reaches this many bytes.
    #[arg(long, default_value_t = AuditLog::DEFAULT_MAX_BYTES, value_name = "BYTES")]
    audit_max_bytes: u64,
    /// Seconds a call a `prompt` rule holds waits for a person's answer before it is
    /// denied.
    #[arg(long, default_value_t = 45.0, value_name = "SECONDS")]
    ask_timeout: f64,
    /// The calls a person allowed always (`clawai approve ID --always`, `clawai ui`).
    #[arg(long, value_name = "FILE", env = "CLAWAI_APPROVALS")]
    approvals: Option<PathBuf>,
    /// The largest message accepted in either direction, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024, value_name = "BYTES")]
    max_message_size: usize,
    /// Do not reload the policy, the configuration or the skills when their files change.
    #[arg(long)]
    no_reload: bool,
    /// A directory of skills (`NAME/SKILL.md` in it); repeatable. Also read:
    /// ./.clawai/skills, $XDG_CONFIG_HOME/clawai/skills and ./.claude/skills.
    #[arg(long = "skills", value_name = "DIR")]
    pub(crate) skills: Vec<PathBuf>,
    /// A local sentence-embedding model directory (sentence-transformers: config.json,
    /// tokenizer.json, model.safetensors) for search_tools, whose ranking then fuses
    /// meaning with words. Loaded in the background; never downloaded.
    #[arg(long, value_name = "DIR", env = "CLAWAI_EMBEDDINGS")]
    pub(crate) embeddings: Option<PathBuf>,
    #[command(flatten)]
    otlp: crate::telemetry_cmd::OtlpArgs,
}

/// The skill directories, in the order a name is taken from.
pub(crate) fn skill_dirs(explicit: &[PathBuf]) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let config_home = clawai_gateway::skills::config_home(|name| std::env::var(name).ok());
    let config_home = config_home.unwrap_or_else(|| cwd.join(".config"));
    clawai_gateway::skills::default_dirs(explicit, &cwd, &config_home)
}

/// Loads the skills, reporting each that cannot load (with its file and line).
pub(crate) fn load_skills(dirs: &[PathBuf]) -> clawai_gateway::skills::Loaded {
    let loaded = clawai_gateway::skills::load_dirs(dirs);
    for problem in &loaded.problems {
        tracing::warn!("skipped a skill: {problem}");
    }
    loaded
}

/// clawai's built-in tools and the skills over stdio, in process: a gateway whose one
/// server is the built-in tools, so they pass the same guards as any server's.
pub fn run_mcp_server(args: McpServerArgs) -> Result<ExitCode> {
    let mut config = GatewayConfig::default();
    config.servers.insert(clawai_gateway::BUILTIN_SERVER.to_owned(), ServerEntry::builtin(false));
    let options = GatewayOptions { page_size: 500, one_client: true, ..GatewayOptions::default() };
    serve(&args.served, "mcp-server", config, None, options, None)
}

/// Reads the configuration: a known client's file is read leniently (its other keys
/// are the client's business); clawai's own file strictly (a typo never widens
/// anything).
pub(crate) fn read_config(path: &Path) -> Result<GatewayConfig, String> {
    let lenient = !clawai_clients::known::explicit(path, None).custom;
    clawai_gateway::config::load(path, &|name| std::env::var(name).ok(), lenient).map_err(|error| error.to_string())
}

/// The gateway, in process.
pub fn run_gateway(args: GatewayArgs) -> Result<ExitCode> {
    if args.front.listen.is_none() && args.front.cluster.url.is_some() {
        // With --listen, the front's options join the cluster, with --replica-id.
        bail!(
            "--cluster is for replicas behind a balancer: give --listen ADDRESS and --replica-id ID as well (a gateway \
             over stdio serves one client, whose session lives and ends with it)"
        );
    }
    for (name, value, zero_ok) in [
        ("--drain", args.drain, true),
        ("--grace", args.grace, true),
        ("--per-client-idle", args.per_client_idle, false),
    ] {
        if !(value.is_finite() && (value > 0.0 || (zero_ok && value == 0.0)) && value <= 86_400.0) {
            bail!(
                "{name} must be a number of seconds{}, at most 86400 (a day)",
                if zero_ok { ", 0 or more" } else { ", more than 0" }
            );
        }
    }
    if args.page_size == 0 {
        bail!("--page-size must be 1 or more");
    }
    let config = match read_config(&args.config).map_err(anyhow::Error::msg).context("the gateway was not started") {
        Ok(config) => config,
        Err(error) if args.front.listen.is_none() => return crate::not_started::answer_with(error),
        Err(error) => return Err(error),
    };
    for warning in &config.warnings {
        tracing::warn!("{}: {warning}", args.config.display());
    }
    let grace = Duration::from_secs_f64(args.grace);
    let options = GatewayOptions {
        ask: AskOptions::default(),
        drain: Duration::from_secs_f64(args.drain),
        grace,
        max_message: args.served.max_message_size,
        page_size: args.page_size,
        pins_dir: Some(crate::paths::pins_dir(args.pins.as_ref())),
        per_client_idle: Duration::from_secs_f64(args.per_client_idle),
        // Over stdio the gateway has one client session: per-client servers run once.
        one_client: args.front.listen.is_none(),
        // Set by `serve`, from `--embeddings` or the configuration's `search.embeddings`.
        search_model: None,
    };
    if args.check {
        if let Some(dir) = args.served.embeddings.as_ref().or(config.embeddings.as_ref()) {
            check_model(dir)?;
        }
        return check::check(&args.served, config, &args.config, options);
    }
    let listen = match args.front.listen {
        Some(_) => Some(args.front.options(FrontSettings {
            grace,
            max_message: args.served.max_message_size,
            server: None,
            ask: args.served.ask_options(),
            pins: None,
        })?),
        None => None,
    };
    serve(&args.served, "gateway", config, Some(&args.config), options, listen)
}

impl ServedArgs {
    fn ask_options(&self) -> AskOptions {
        crate::guarded::ask_options(self.ask_timeout, self.approvals.as_ref())
    }
}

/// Starts the gateway of `config` and serves it over stdio, or on `listen`, until the
/// client goes or a signal comes; `command`: `gateway` or `mcp-server`, as telemetry
/// names it; `config_file`: where `config` was read, watched for changes.
fn serve(
    served: &ServedArgs,
    command: &str,
    config: GatewayConfig,
    config_file: Option<&Path>,
    mut options: GatewayOptions,
    listen: Option<(std::net::SocketAddr, clawai_http::ListenOptions)>,
) -> Result<ExitCode> {
    let ask_timeout = served.ask_timeout;
    if !(ask_timeout.is_finite() && ask_timeout > 0.0 && ask_timeout <= 86_400.0) {
        bail!("--ask-timeout must be a number of seconds, more than 0, at most 86400 (a day)");
    }
    let mut protect_also: Vec<PathBuf> = served.approvals.iter().cloned().collect();
    protect_also.extend(config_file.map(Path::to_owned));
    let guarded = Guarded::open_with(
        &served.policy,
        served.audit.as_ref(),
        served.audit_max_bytes,
        served.no_reload,
        options.pins_dir.as_deref(),
        &protect_also,
    );
    let embeddings = served.embeddings.as_ref().or(config.embeddings.as_ref());
    options.search_model = match embeddings.map(|dir| search_model(dir)).transpose() {
        Ok(model) => model,
        Err(error) if listen.is_none() => return crate::not_started::answer_with(error),
        Err(error) => return Err(error),
    };
    let mut guarded = match guarded {
        Ok(guarded) => guarded,
        Err(error) if listen.is_none() => return crate::not_started::answer_with(error),
        Err(error) => return Err(error),
    };
    // Flushed when dropped, after the runtime below has stopped.
    let _telemetry = crate::telemetry_cmd::start(&served.otlp, command, &mut guarded)?;
    // A replica's front joined the cluster: its guards ask as the front does.
    options.ask = listen.as_ref().map_or_else(|| served.ask_options(), |(_, front)| front.ask.clone());
    options.max_message = served.max_message_size;
    let grace = options.grace;
    crate::guarded::adopt_orphans();
    let rt = runtime()?;
    let checkpoints = crate::checkpoints::start(&guarded.audit);
    let code = rt.block_on(async move {
        let gateway = Gateway::start(&config, guarded.policy.clone(), guarded.audit.clone(), options)?;
        let dirs = skill_dirs(&served.skills);
        // Taken before the skills are read: an edit made meanwhile is picked up.
        let seen = clawai_gateway::reload::skill_files_now(&dirs);
        gateway.set_skills(load_skills(&dirs));
        if !served.no_reload {
            clawai_gateway::reload::watch_skills(&gateway, dirs, seen, Box::new(load_skills));
        }
        let serving = match &listen {
            Some((addr, options)) => format!("http://{addr}{}", options.path),
            None => "stdio".to_owned(),
        };
        // `clawai status` lists this gateway's servers while it runs.
        let _published = config_file
            .filter(|_| command == "gateway")
            .map(|path| crate::gateway_state::publish(Arc::clone(&gateway), path, serving));
        let _watcher = match config_file {
            Some(path) if !served.no_reload => clawai_gateway::reload::watch(&gateway, path, Box::new(read_config))
                .inspect_err(|error| {
                    tracing::warn!("cannot watch {} for changes ({error}); edits need a restart", path.display())
                })
                .ok(),
            _ => None,
        };
        let code = match listen {
            Some((addr, options)) => {
                // The HTTP front only checks that each message is valid JSON-RPC: the
                // gateway decides every message with its guards, on the servers' own names.
                let front_policy = PolicyHandle::new(
                    clawai_policy::load_str(
                        "[defaults]\naction = \"allow\"\n",
                        clawai_policy::Format::Toml,
                        "gateway front",
                    )
                    .expect("a fixed policy loads"),
                );
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr}; is the port in use?"))?;
                let local = listener.local_addr()?;
                eprintln!(
                    "clawai: gateway serving http://{local}{} for {} servers",
                    options.path,
                    config.servers.values().filter(|entry| !entry.disabled).count()
                );
                let front = Front::new(
                    options,
                    Upstream::InProcess(Arc::clone(&gateway) as Arc<dyn clawai_http::link::OpenLink>),
                    front_policy,
                    // What the front alone refuses (not JSON-RPC, too large, headers that
                    // disagree with the body) is recorded; the gateway records the rest.
                    guarded.audit.refusals_only(),
                );
                front.serve(listener, shutdown_signal()).await?;
                0
            }
            None => clawai_gateway::stdio::serve(&gateway, served.max_message_size).await?,
        };
        gateway.shutdown().await;
        tokio::task::spawn_blocking(move || clawai_proxy::process_tree::end_adopted(grace)).await?;
        anyhow::Ok(code)
    });
    // After the gateway stopped: its last lines are in the head this publishes.
    if let Some(checkpoints) = checkpoints {
        checkpoints.finish();
    }
    let code = code?;
    // stdin is read on a blocking thread that cannot be interrupted.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(ExitCode::Code(code))
}

/// The embedding model in `dir`, checked now (a wrong directory stops start-up) and
/// loaded in the background (start-up never waits for the weights).
#[cfg(feature = "embeddings")]
fn search_model(dir: &Path) -> Result<clawai_gateway::embeddings::SearchModel> {
    use clawai_gateway::embeddings::{Embed, SearchModel};
    struct Model(clawai_embed::Embedder);
    impl Embed for Model {
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            self.0.embed(texts).map_err(|error| error.to_string())
        }
        fn embed_query(&self, query: &str) -> Result<Vec<f32>, String> {
            self.0.embed_query(query).map_err(|error| error.to_string())
        }
        fn pass_ended(&self) {
            clawai_embed::return_freed_memory();
        }
    }
    check_model(dir)?;
    clawai_embed::few_allocator_arenas();
    let dir = dir.to_owned();
    Ok(SearchModel::start(Box::new(move || {
        let model = clawai_embed::Embedder::load(&dir).map_err(|error| error.to_string())?;
        Ok(std::sync::Arc::new(Model(model)) as std::sync::Arc<dyn Embed>)
    })))
}

/// Whether `dir` holds a model the gateway can load (its small files only).
#[cfg(feature = "embeddings")]
fn check_model(dir: &Path) -> Result<()> {
    clawai_embed::check(dir).context("the gateway was not started")
}

/// Built without the `embeddings` feature: no model can be run.
#[cfg(not(feature = "embeddings"))]
fn check_model(dir: &Path) -> Result<()> {
    Err(no_embeddings(dir))
}

/// Built without the `embeddings` feature: no model can be run.
#[cfg(not(feature = "embeddings"))]
fn search_model(dir: &Path) -> Result<clawai_gateway::embeddings::SearchModel> {
    Err(no_embeddings(dir))
}

#[cfg(not(feature = "embeddings"))]
fn no_embeddings(dir: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "the gateway was not started: --embeddings {} needs a clawai built with the `embeddings` feature",
        dir.display()
    )
}
