//! Reaching a server: a child process with a minimal environment in its own process
//! group, or a remote endpoint through the `--upstream` client; then the handshake and
//! the first listing.

use clawai_protocol::methods;
use std::io;
use std::sync::Arc;

use clawai_http::child::{self, ChildServer};
use clawai_http::framing::{Frame, next_frame};
use clawai_http::link::{FromServer, Link};
use clawai_http::{RemoteOptions, remote};
use clawai_sdk::SdkMcpServerImpl;
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::sync::watch;

use super::{INITIALIZE_TIMEOUT, Status, Upstream, Writer, lock};
use crate::config::{McpServerConfig, Transport};
use crate::lists::ListKind;

/// Where the server's messages come from: a child's stdout, read by the server's own
/// task (no task or channel in between), or a remote session's link.
pub(crate) enum Source {
    /// A child's stdout (or an in-process server's output), and the largest message
    /// taken.
    Pipe(Box<dyn AsyncBufRead + Send + Unpin>, usize),
    /// A remote server's link.
    Link(mpsc::Receiver<FromServer>),
}

impl Source {
    async fn next(&mut self) -> Option<FromServer> {
        match self {
            Source::Link(from_server) => from_server.recv().await,
            Source::Pipe(stdout, max_message) => loop {
                return Some(match next_frame(stdout, *max_message).await {
                    Ok(None) => FromServer::Closed("the server closed its output".into()),
                    Ok(Some(Frame::Line(line))) if line.iter().all(u8::is_ascii_whitespace) => continue,
                    Ok(Some(Frame::Line(line))) => FromServer::Message(line),
                    Ok(Some(Frame::Oversize { prefix, length })) => FromServer::Oversize { prefix, length },
                    Err(error) => FromServer::Closed(format!("reading the server's output failed: {error}")),
                });
            },
        }
    }
}

/// Connects to an SDK server in this process as to a child: one pipe each way, so that
/// dropping the gateway's end of the input ends the server's input, as a child's stdin
/// closing does. The server answers requests concurrently and honours cancellations.
fn in_process(server: Arc<SdkMcpServerImpl>, max_message: usize) -> (Writer, Source, Option<ChildServer>) {
    const PIPE_BYTES: usize = 256 * 1024;
    let (mut to_server, server_input) = tokio::io::duplex(PIPE_BYTES);
    let (server_output, from_server) = tokio::io::duplex(PIPE_BYTES);
    let name = server.name.clone();
    tokio::spawn(async move {
        if let Err(error) = clawai_sdk::serve_io(server, server_input, server_output).await {
            tracing::warn!("in-process server `{name}` stopped: {error}");
        }
    });
    let (link, mut outgoing, incoming) = Link::pair();
    tokio::spawn(async move {
        while let Some(mut message) = outgoing.recv().await {
            message.push(b'\n');
            if to_server.write_all(&message).await.is_err() {
                break;
            }
        }
        // `to_server` drops here: the server sees the end of its input and finishes.
    });
    tokio::spawn(async move {
        let mut source = Source::Pipe(Box::new(BufReader::new(from_server)), max_message);
        while let Some(item) = source.next().await {
            let closed = matches!(item, FromServer::Closed(_));
            if incoming.send(item).await.is_err() || closed {
                break;
            }
        }
    });
    (Writer::Link(link.to_server), Source::Link(link.from_server), None)
}

/// The revision the gateway proposes to its servers.
const PROPOSED_VERSION: &str = "2025-11-25";

impl Upstream {
    /// Starts the child, or opens the remote session.
    pub(super) fn connect(self: &Arc<Self>) -> io::Result<(Writer, Source, Option<ChildServer>)> {
        if let Some(problem) = self.pins_problem() {
            return Err(io::Error::other(problem));
        }
        self.listen_for_approvals();
        let max_message = self.context.options.max_message;
        match &self.entry.transport {
            Transport::Builtin => Ok(in_process(Arc::new(clawai_builtin::server()), max_message)),
            Transport::InProcess(server) => Ok(in_process(Arc::clone(&server.0), max_message)),
            Transport::Mcp(McpServerConfig::Stdio { command, args, env }) => {
                let mut line = vec![command.clone()];
                line.extend(args.iter().cloned());
                let cwd = self.entry.cwd.clone();
                let sandbox = self.prepare_sandbox(&line, env)?;
                let (stdin, stdout, mut child, report) = child::spawn_piped_sandboxed(
                    &line,
                    |command| {
                        // What a program needs to run, never the gateway's API keys.
                        child::minimal_environment(command);
                        command.envs(env);
                        if let Some(cwd) = &cwd {
                            command.current_dir(cwd);
                        }
                        // Held while it starts: a server that cannot start is told once.
                        command.stderr(std::process::Stdio::piped());
                    },
                    sandbox,
                )?;
                if let Some(stderr) = child.take_stderr() {
                    self.take_stderr(stderr);
                }
                if let Some(report) = report {
                    clawai_proxy::sandboxed::announce(&self.guard, &report);
                }
                let writer = Writer::Pipe(Arc::new(tokio::sync::Mutex::new(stdin)));
                Ok((writer, Source::Pipe(Box::new(BufReader::new(stdout)), max_message), Some(child)))
            }
            Transport::Mcp(McpServerConfig::Http { url, headers } | McpServerConfig::Sse { url, headers }) => {
                let lines: Vec<String> = headers.iter().map(|(name, value)| format!("{name}: {value}")).collect();
                // The values were expanded when the configuration was read.
                let options = RemoteOptions::parse(url, &lines, |_| None).map_err(io::Error::other)?;
                let Link { to_server, from_server } = remote::connect(options, max_message);
                Ok((Writer::Link(to_server), Source::Link(from_server), None))
            }
        }
    }

    /// The sandbox of this stdio server, prepared for `command` (with the environment it
    /// gets), when its entry asks for one. Under `require`, a system that cannot enforce
    /// it refuses the start (the reason is logged, and the server is tried again later).
    fn prepare_sandbox(
        &self,
        command: &[String],
        env: &std::collections::BTreeMap<String, String>,
    ) -> io::Result<Option<clawai_proxy::sandbox::Prepared>> {
        use clawai_proxy::sandbox::{ServerContext, prepare};
        let request = &self.entry.sandbox;
        if !request.is_on() {
            return Ok(None);
        }
        let mut context = ServerContext::here(command, self.entry.cwd.as_deref());
        context.vars.retain(|(name, _)| child::inherited_variable(name));
        context.vars.extend(env.iter().map(|(name, value)| (name.clone(), value.clone())));
        // `die_with_parent`: the sandbox is killed when the thread that starts it ends.
        // This runs in an async task, on one of the runtime's workers, which live as long
        // as the runtime (never on the blocking pool, whose threads end when idle): the
        // sandbox goes when the gateway goes, even killed.
        let prepared = prepare(request, &context, true)
            .map_err(|error| io::Error::other(format!("server `{}`: {error}", self.name)))?;
        Ok(Some(prepared))
    }

    /// Relays the server's messages until it goes away or is stopped; meanwhile the
    /// handshake and the first listing run. Returns why it ended.
    pub(super) async fn serve(
        self: &Arc<Self>,
        writer: Writer,
        mut source: Source,
        stop: &mut watch::Receiver<bool>,
    ) -> String {
        *lock(&self.sender) = Some(writer);
        let setup = tokio::spawn(Arc::clone(self).set_up());
        let reason = loop {
            // Cancelling a read loses what it read: only when the server is left anyway.
            let item = tokio::select! {
                item = source.next() => item,
                _ = stop.wait_for(|stop| *stop) => break "stopped by the gateway".to_owned(),
                () = self.restart.notified() => break self.failures.not_initialized(),
            };
            match item {
                Some(FromServer::Message(message)) => self.on_message(message).await,
                Some(FromServer::Oversize { prefix, length }) => self.oversize(&prefix, length).await,
                Some(FromServer::Closed(reason)) => break reason,
                None => break "the server's output ended".to_owned(),
            }
        };
        setup.abort();
        reason
    }

    /// `initialize`, `notifications/initialized`, then every list the server has.
    async fn set_up(self: Arc<Self>) {
        let params = json!({
            "protocolVersion": PROPOSED_VERSION,
            // A client's roots change is told to the servers that asked that client.
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}},
            "clientInfo": {"name": "clawai-gateway", "version": env!("CARGO_PKG_VERSION")},
        });
        self.modern.store(false, std::sync::atomic::Ordering::SeqCst);
        let answered = match self.request(methods::INITIALIZE, Some(params), INITIALIZE_TIMEOUT).await {
            // The server answered `initialize` with an error: it may speak 2026-07-28 only.
            Err(why) if why.starts_with("`initialize` failed (") => match self.discover().await {
                Ok(result) => Ok(result),
                Err(discover) => Err(format!("{why}; and {discover}")),
            },
            answered => answered,
        };
        let result = match answered {
            Ok(result) => result,
            Err(why) => {
                // The run ends (the child is stopped) and starts again after a wait; why
                // is told then, once.
                self.failures.initialize_failed(why);
                self.restart.notify_one();
                return;
            }
        };
        let result = self.approved_initialize(result);
        *self.initialized.write().unwrap_or_else(|p| p.into_inner()) = Some(result.clone());
        if !self.speaks_modern() {
            self.notify(methods::INITIALIZED, None).await;
        }
        for kind in ListKind::ALL {
            if result.pointer(&format!("/capabilities/{}", kind.capability())).is_some_and(|c| !c.is_null()) {
                self.refresh(kind).await;
            }
        }
        if matches!(self.status(), Status::Starting) {
            self.set_status(Status::Up);
        }
        self.came_up();
        // A 2026-07-28 server says what changes only on a subscription (`follow`).
        self.follow();
        let this = Arc::clone(&self);
        tokio::spawn(async move { this.resubscribe_resources().await });
        if self.is_own_instance() {
            // Its items are its lister's, in the catalog already.
            tracing::info!("server `{}`: a client session's instance is up", self.name);
            return;
        }
        let tools = self.lists().items[ListKind::Tools.index()].len();
        match self.held_now() {
            (_, true) => tracing::warn!(
                "server `{}` is up, and held whole: its instructions wait for a review (`clawai pins diff {}`)",
                self.name,
                self.name
            ),
            (0, false) => tracing::info!("server `{}` is up: {tools} tools", self.name),
            (held, false) => tracing::info!(
                "server `{}` is up: {tools} tools listed, {held} held by pinning (`clawai status` lists them)",
                self.name
            ),
        }
        self.context.reports.tell(&self, super::events::Event::ListsChanged);
    }
}
