#![warn(missing_docs)]
//! `clawai ui`: the approval broker and its local web page.
//!
//! Proxies holding a `prompt` call ask the broker over a Unix socket (see
//! `clawai_approvals` for the protocol and the client); a person answers in the page
//! (pending approvals, the live audit trail, counts per server) or with `clawai approve`.
//! The page also shows what the pin store holds ([`pins`]: changed and quarantined tools,
//! their diffs and the scan's findings) and approves the reviewed versions.
//! The page also shows the state of the trail's hash chain, as a [`ChainCheck`] finds it.

mod audit;
mod broker;
mod chain;
mod error;
mod notify;
pub mod pins;
mod secret;
mod socket;
mod web;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use broker::GRANT_WINDOW;
pub use chain::{ChainCheck, ChainFields, ChainProblem, ChainState, ChainStatus, trail_files};
pub use error::UiError;

/// How `clawai ui` runs.
#[derive(Debug, Clone)]
pub struct UiOptions {
    /// The web page's address; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Allow an address other than loopback.
    pub public: bool,
    /// The audit trail to show.
    pub audit: PathBuf,
    /// The broker's socket.
    pub socket: PathBuf,
    /// Where the page's URL is written.
    pub url_file: PathBuf,
    /// Where "always" answers go.
    pub approvals: PathBuf,
    /// What writes "always" answers instead of the approvals file (cluster mode: the
    /// approvals replicas share); `None`: the file.
    pub always: Option<Arc<dyn clawai_approvals::AlwaysWriter>>,
    /// How long after a timeout an approval still grants the retry, and how long the
    /// grant lasts.
    pub grant_window: Duration,
    /// The pin store whose items the page shows and approves (`clawai pins`'s).
    pub pins: PathBuf,
    /// The pins shown and approved instead of `pins` (cluster mode: the ones replicas
    /// share in Redis), with how the page names them.
    pub shared_pins: Option<(clawai_pins::store::PinStore, String)>,
    /// What checks the trail's hash chain for the page ([`ChainFields`] by default: it
    /// only tells whether the trail has a chain).
    pub chain: Arc<dyn ChainCheck>,
}

impl UiOptions {
    /// The options for `listen`, with the default paths (and `CLAWAI_GRANT_WINDOW_MS`,
    /// a knob for tests, shortening the grant window).
    pub fn new(listen: SocketAddr, public: bool, audit: Option<PathBuf>) -> UiOptions {
        let grant_window = std::env::var("CLAWAI_GRANT_WINDOW_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(GRANT_WINDOW, Duration::from_millis);
        UiOptions {
            listen,
            public,
            audit: audit.unwrap_or_else(clawai_approvals::audit_file),
            socket: clawai_approvals::socket_path(),
            url_file: clawai_approvals::url_file(),
            approvals: clawai_approvals::approvals_file(),
            always: None,
            pins: clawai_pins::store::default_dir(),
            shared_pins: None,
            grant_window,
            chain: Arc::new(ChainFields),
        }
    }
}

/// The URL a browser opens: loopback by name when listening on every address.
fn page_url(local: SocketAddr, token: &str) -> String {
    let host = match local.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) => ip.to_string(),
    };
    format!("http://{host}:{}/?token={token}", local.port())
}

/// Writes `text` to `path`, readable by its owner only.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(text.as_bytes())
}

/// Runs the broker and the page until `shutdown` resolves; prints the page's URL on
/// stdout once both listen. Removes the socket and the URL file on the way out.
pub async fn run(options: UiOptions, shutdown: impl Future<Output = ()>) -> Result<(), UiError> {
    if !options.listen.ip().is_loopback() && !options.public {
        return Err(UiError::NotLoopback(options.listen));
    }
    let unix = socket::bind(&options.socket, &options.url_file)?;
    let mut cleanup = socket::Cleanup(vec![options.socket.clone()]);
    let tcp = tokio::net::TcpListener::bind(options.listen).await.map_err(|error| UiError::Io {
        what: format!(
            "cannot listen on {}; is the port in use? (--listen 127.0.0.1:0 picks a free one)",
            options.listen
        ),
        error,
    })?;
    let local =
        tcp.local_addr().map_err(|error| UiError::Io { what: "cannot read the bound address".into(), error })?;
    let token = secret::token();
    let url = page_url(local, &token);
    write_private(&options.url_file, &format!("{url}\n"))
        .map_err(|error| UiError::Io { what: format!("cannot write {}", options.url_file.display()), error })?;
    cleanup.0.push(options.url_file.clone());

    let broker = Arc::new(match &options.always {
        Some(always) => broker::Broker::writing_to(Arc::clone(always), options.grant_window),
        None => broker::Broker::new(options.approvals.clone(), options.grant_window),
    });
    let feed = audit::AuditFeed::new();
    feed.follow(options.audit.clone());
    let hosts = (!options.public).then(|| {
        let port = local.port();
        vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")]
    });
    let chain = chain::ChainWatch::new(options.chain.clone(), options.audit.clone());
    let pins = match &options.shared_pins {
        Some((store, shown)) => pins::Pins::shared(store.clone(), shown),
        None => pins::Pins::dir(&options.pins),
    };
    let web = Arc::new(web::Web { broker: broker.clone(), feed, chain, token, hosts, pins });

    let sockets = tokio::spawn(socket::serve(unix, broker.clone()));
    let sweeper = {
        let broker = broker.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                broker.sweep();
            }
        })
    };
    println!("{url}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    eprintln!("clawai: approval broker on {}; audit trail {}", options.socket.display(), options.audit.display());
    // Not a graceful shutdown: the live streams never end by themselves, and nothing
    // they carry needs finishing.
    let served = tokio::select! {
        served = axum::serve(tcp, web::router(web)) => served.map_err(|error| UiError::Io { what: "the web page stopped".into(), error }),
        () = shutdown => Ok(()),
    };
    sockets.abort();
    sweeper.abort();
    drop(cleanup);
    served
}
