//! `clawai proxy --listen` and `--upstream`, and the stdio proxy with `--otlp`: what
//! the `clawai-http` binary runs (see [`crate::http_helper`]).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clawai_http::{Front, ListenOptions, RemoteOptions, Upstream};
use clawai_protocol::origin::HostPolicy;
use clawai_proxy::Guard;

use crate::exit::ExitCode;
use crate::listen_args::ListenArgs;
use crate::proxy_cmd::ProxyArgs;

/// Runs the HTTP transport the arguments ask for, or the stdio proxy exporting to an
/// OpenTelemetry collector.
pub fn run_http(args: ProxyArgs) -> Result<ExitCode> {
    let remote = match &args.upstream {
        Some(url) => Some(
            RemoteOptions::parse(url, &args.headers, |name| std::env::var(name).ok()).map_err(anyhow::Error::msg)?,
        ),
        None => None,
    };
    let mut guarded = match args.open_guarded() {
        Ok(guarded) => guarded,
        // A client on stdio reads why in its own window; an HTTP front has none yet.
        Err(error) if args.front.listen.is_none() => return crate::not_started::answer_with(error),
        Err(error) => return Err(error),
    };
    // Flushed when dropped, after the transport below has stopped.
    let _telemetry = crate::telemetry_cmd::start(&args.otlp, "proxy", &mut guarded)?;
    if args.front.listen.is_none() && remote.is_none() {
        return crate::proxy_cmd::run_stdio(args, guarded);
    }
    let (handle, audit) = (guarded.policy.clone(), guarded.audit.clone());
    let grace = Duration::from_secs_f64(args.grace);
    if args.front.listen.is_some() {
        // Before the pins are opened: in cluster mode they are the ones in Redis.
        args.front.cluster.join(args.front.replica_id.as_deref())?;
    }
    let pins = args.pin_tracker(&handle)?;
    if args.front.listen.is_some() {
        let (addr, mut options) = args.front.options(FrontSettings {
            grace,
            max_message: args.max_message_size,
            server: args.server.clone(),
            ask: args.ask_options(),
            pins,
        })?;
        options.sandbox = args.sandbox.request()?;
        let upstream = match remote {
            Some(remote) => Upstream::Remote(remote),
            None => Upstream::Command(args.command.clone()),
        };
        let target = args.upstream.clone().unwrap_or_else(|| args.command.join(" "));
        crate::guarded::adopt_orphans();
        let checkpoints = crate::checkpoints::start(&audit);
        let served = runtime()?.block_on(async move {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}; is the port in use?"))?;
            let local = listener.local_addr()?;
            eprintln!("clawai: serving http://{local}{} guarding {target}", options.path);
            let front = Front::new(options, upstream, handle, audit);
            front.serve(listener, shutdown_signal()).await?;
            tokio::task::spawn_blocking(move || clawai_proxy::process_tree::end_adopted(grace)).await?;
            Ok(ExitCode::Code(0))
        });
        // After the front stopped: its last lines are in the head this publishes.
        if let Some(checkpoints) = checkpoints {
            checkpoints.finish();
        }
        return served;
    }
    if let Some(remote) = remote {
        let ask = args.ask_options();
        let mut guard = Guard::new(handle, audit, args.server).for_remote_server().with_ask_options(ask);
        if let Some(pins) = pins {
            guard = guard.with_pins(pins);
        }
        let guard = Arc::new(guard);
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
    bail!("clawai-http serves --listen or --upstream; run a stdio server with `clawai proxy -- CMD`")
}

/// `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080` or a bare port (127.0.0.1).
pub(crate) fn listen_addr(text: &str) -> Result<std::net::SocketAddr> {
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        let port: u16 = port.parse().with_context(|| format!("--listen {text}: `{port}` is not a port"))?;
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().with_context(|| format!("--listen {text}: expected an address such as 127.0.0.1:8080 or a port"))
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
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

/// `--public-url`: an http(s) origin (a path, if given, is not part of it).
fn public_origin(url: Option<&str>) -> Result<Option<String>> {
    let Some(url) = url else { return Ok(None) };
    let parsed = reqwest::Url::parse(url).with_context(|| format!("--public-url {url}: not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        bail!("--public-url {url}: expected an http(s) URL such as https://mcp.example.com");
    }
    Ok(Some(parsed.origin().ascii_serialization()))
}

/// What a front takes from its command besides [`ListenArgs`].
pub(crate) struct FrontSettings {
    pub(crate) grace: Duration,
    pub(crate) max_message: usize,
    pub(crate) server: Option<String>,
    pub(crate) ask: clawai_proxy::AskOptions,
    /// The server's pins, shared by every session.
    pub(crate) pins: Option<Arc<clawai_proxy::pins::Tracker>>,
}

impl ListenArgs {
    /// The address to listen on and the front's options.
    pub(crate) fn options(&self, settings: FrontSettings) -> Result<(std::net::SocketAddr, ListenOptions)> {
        let listen = self.listen.as_deref().context("no --listen address")?;
        if !(self.session_idle.is_finite() && self.session_idle > 0.0) {
            bail!("--session-idle must be a positive number of seconds");
        }
        if !(self.shutdown_drain.is_finite() && (0.0..=3600.0).contains(&self.shutdown_drain)) {
            bail!("--shutdown-drain must be a number of seconds, 0 to 3600");
        }
        if self.endpoint_path == clawai_http::listen::HEALTH_PATH {
            bail!(
                "--path {}: that path answers health checks; choose another (the default is /mcp)",
                self.endpoint_path
            );
        }
        let mut ask = settings.ask;
        if let Some(shared) = self.cluster.join(self.replica_id.as_deref())? {
            if let Some(held) = crate::stores::cluster_held() {
                ask.held = held;
            }
            if let Some(approvals) = &shared.approvals {
                let document =
                    clawai_policy::ApprovalsDocument::new(Arc::clone(approvals), clawai_store_redis::APPROVALS);
                ask.standing = Some(Arc::new(document));
            }
            ask.stores = shared;
        }
        let addr = listen_addr(listen)?;
        let auth_token = match &self.auth_token_env {
            Some(var) => Some(std::env::var(var).ok().filter(|t| !t.is_empty()).with_context(|| {
                format!("--auth-token-env {var}: the environment variable {var} is not set (or empty)")
            })?),
            None => None,
        };
        let public_origin = public_origin(self.public_url.as_deref())?;
        // The public URL's host is one clients use: it is allowed like --allowed-host.
        let public_host = public_origin
            .as_deref()
            .and_then(|origin| reqwest::Url::parse(origin).ok())
            .and_then(|url| url.host_str().map(|host| host.trim_matches(['[', ']']).to_ascii_lowercase()));
        let host_policy = if self.allowed_hosts.is_empty() && public_host.is_none() {
            HostPolicy::for_bind(addr.ip())
        } else {
            let mut names: Vec<String> = self.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
            names.extend(public_host);
            if addr.ip().is_loopback() {
                names.extend(["localhost", "127.0.0.1", "::1"].map(String::from));
            }
            HostPolicy::Named(names)
        };
        if !addr.ip().is_loopback() && auth_token.is_none() {
            tracing::warn!(
                "listening on {addr}, beyond this machine, without --auth-token-env: anyone who can reach it can call the server (within the policy)"
            );
        }
        let options = ListenOptions {
            path: self.endpoint_path.clone(),
            host_policy,
            auth_token,
            session_idle: Duration::from_secs_f64(self.session_idle),
            max_sessions: self.max_sessions,
            grace: settings.grace,
            max_message: settings.max_message,
            server: settings.server,
            public_origin,
            ask,
            pins: settings.pins,
            replica_id: self.replica_id.clone(),
            drain: Duration::from_secs_f64(self.shutdown_drain),
            sandbox: Default::default(),
        };
        Ok((addr, options))
    }
}
