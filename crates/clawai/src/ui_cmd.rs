//! `clawai ui`: the approval broker and its web page, run by the `clawai-http` binary
//! (see [`crate::http_helper`]).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use crate::exit::ExitCode;

/// Options of `clawai ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// The page's address (`127.0.0.1:PORT`, or a bare port); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:7391", value_name = "ADDR")]
    listen: String,
    /// The audit trail shown live [default: $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long, env = "CLAWAI_AUDIT", value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Allow an address other than loopback (anyone who can reach it and has the token
    /// can answer approvals).
    #[arg(long)]
    public: bool,
    /// The pin store whose tools the page shows and approves (`clawai pins`'s).
    #[command(flatten)]
    pins: crate::pins_cmd::PinsDirArg,
}

/// The broker and page, in process (the `clawai-http` binary's runner).
pub fn run_ui(args: UiArgs) -> Result<ExitCode> {
    let listen = crate::http_cmd::listen_addr(&args.listen)?;
    let mut options = clawai_ui::UiOptions::new(listen, args.public, args.audit);
    options.chain = std::sync::Arc::new(AuditVerify);
    options.pins = args.pins.resolve();
    // Cluster mode: calls held in Redis by any replica are relayed to this broker.
    let relaying = match &args.pins.cluster.url {
        Some(url) => {
            crate::cluster::check_redis_url(url)?;
            let shown = clawai_audit_ship::redacted(url);
            let redis = clawai_store_redis::Redis::connect(url, "clawai-ui")
                .map_err(|error| anyhow::anyhow!("--cluster (CLAWAI_CLUSTER) {shown}: {error}"))?;
            // "Always" answers go to the approvals every replica reads.
            let always = clawai_store_redis::RedisAlways::new(redis.approvals(), clawai_store_redis::APPROVALS);
            options.always = Some(std::sync::Arc::new(always));
            // The pins view shows and approves the pins every replica reads.
            let pins = clawai_proxy::pins::store::PinStore::in_documents(redis.pins());
            options.shared_pins = Some((pins, format!("the cluster's shared pins (Redis at {shown})")));
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let relay = clawai_store_redis::relay(redis, clawai_approvals::socket_path(), stop.clone())
                .context("cannot start relaying the cluster's held calls")?;
            Some((stop, relay))
        }
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        // Installed before the URL is printed: whoever reads it may stop the broker
        // at once, and must find the socket and URL file removed.
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        let shutdown = async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
        };
        clawai_ui::run(options, shutdown).await.map_err(anyhow::Error::from)
    })?;
    // The audit follower is a plain thread; nothing else needs waiting for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    if let Some((stop, relay)) = relaying {
        // Its last step takes the mark that a ui runs away: replicas stop holding calls.
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = relay.join();
    }
    Ok(ExitCode::Ok)
}

/// The page's chain line, from `clawai audit verify`'s verifier.
struct AuditVerify;

impl clawai_ui::ChainCheck for AuditVerify {
    fn check(&self, trail: &std::path::Path) -> clawai_ui::ChainState {
        use clawai_ui::{ChainProblem, ChainState};
        let files = crate::audit_verify::trail_files(trail);
        let mut verifier = clawai_proxy::audit::verify::Verifier::new();
        for file in &files {
            let added = std::fs::File::open(file)
                .and_then(|f| verifier.add_file(&file.display().to_string(), std::io::BufReader::new(f)));
            match added {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return ChainState::unreadable(file, &e),
                Ok(()) => {}
            }
        }
        let verdict = verifier.finish(crate::audit_verify::older_files_missing(&files[0]));
        match verdict.problem {
            Some(p) => ChainState::broken(
                verdict.checked,
                verdict.unchained,
                ChainProblem { file: p.at.file, line: p.at.line, what: p.tamper.as_str().into(), detail: p.detail },
            ),
            None if verdict.checked == 0 => ChainState::no_chain(verdict.unchained),
            None => ChainState::verified(verdict.checked, verdict.unchained),
        }
    }
}
