//! A stdio MCP server run as a child process behind a [`Link`] (one per HTTP session).
//!
//! The child leads its own process group and carries a tag of its own in its
//! environment ([`clawai_proxy::process_tree`]), so that shutting it down reaches the
//! grandchildren `npx` starts, and those that left its tree: close stdin, wait a grace
//! period, SIGTERM the tree, wait again, SIGKILL the tree.

use std::io;
use std::os::fd::AsFd;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use clawai_proxy::pipe::enlarge_pipe;
use clawai_proxy::process_tree::{OwnChild, ServerTag, ServerTree, TAG_VARIABLE, spawn_own};
use clawai_proxy::sandbox::{Prepared, Report};
use nix::sys::signal::Signal;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::framing::{Frame, next_frame};
use crate::link::{FromServer, Link};

/// The variables a child started on an agent's behalf inherits (besides those it is
/// given): what a program needs to run, never the API keys in clawai's own environment.
const INHERITED: [&str; 8] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "SHELL"];

/// True for a variable a child inherits: [`INHERITED`] and the locale's `LC_*`.
pub fn inherited_variable(name: &str) -> bool {
    INHERITED.contains(&name) || name.starts_with("LC_")
}

/// Clears `command`'s environment down to the variables a child inherits.
pub fn minimal_environment(command: &mut Command) {
    command.env_clear();
    command.envs(std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(inherited_variable)));
}

/// A running child server.
pub struct ChildServer {
    child: Child,
    /// The server and everything it started.
    tree: Option<ServerTree>,
    /// Registered as clawai's own until reaped (dropped after `child`).
    _own: Option<OwnChild>,
    /// Shut down and reaped: nothing is left to end when it is dropped.
    ended: bool,
}

/// Starts `command` and links it. Messages larger than `max_message` bytes are not
/// relayed.
pub fn spawn(command: &[String], max_message: usize) -> io::Result<(Link, ChildServer)> {
    spawn_with(command, |_| {}, max_message)
}

/// Starts `command` as [`spawn`] does, in `sandbox` (prepared for this command); returns
/// what the sandbox had in force.
pub fn spawn_sandboxed(
    command: &[String],
    sandbox: Option<Prepared>,
    max_message: usize,
) -> io::Result<(Link, ChildServer, Option<Report>)> {
    let (stdin, stdout, child, report) = spawn_piped_sandboxed(command, |_| {}, sandbox)?;
    let (link, child) = link(stdin, stdout, child, max_message);
    Ok((link, child, report))
}

/// Starts `command` as [`spawn`] does, after `prepare` set what else it needs (its
/// environment, its working directory).
pub fn spawn_with(
    command: &[String],
    prepare: impl FnOnce(&mut Command),
    max_message: usize,
) -> io::Result<(Link, ChildServer)> {
    let (stdin, stdout, child) = spawn_piped(command, prepare)?;
    Ok(link(stdin, stdout, child, max_message))
}

/// Starts `command` as [`spawn_with`] does, and gives its pipes as they are: for a
/// transport that writes and reads them itself, without a task and a channel each way.
pub fn spawn_piped(
    command: &[String],
    prepare: impl FnOnce(&mut Command),
) -> io::Result<(ChildStdin, ChildStdout, ChildServer)> {
    spawn_piped_sandboxed(command, prepare, None).map(|(stdin, stdout, child, _)| (stdin, stdout, child))
}

/// [`spawn_piped`], with the child in `sandbox` (prepared for this command); returns
/// what the sandbox had in force.
pub fn spawn_piped_sandboxed(
    command: &[String],
    prepare: impl FnOnce(&mut Command),
    sandbox: Option<Prepared>,
) -> io::Result<(ChildStdin, ChildStdout, ChildServer, Option<Report>)> {
    let (program, args) = command.split_first().ok_or_else(|| io::Error::other("no server command"))?;
    let mut command = Command::new(program);
    command.args(args);
    // Before `prepare`, which may take the server's stderr for itself.
    command.stderr(Stdio::inherit());
    prepare(&mut command);
    // Set after `prepare`, which may clear the environment: everything the server
    // starts inherits it, and that is how what leaves its tree is found.
    let tag = ServerTag::new();
    command.env(TAG_VARIABLE, tag.value());
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).process_group(0).kill_on_drop(true);
    let mut sandbox = sandbox;
    #[cfg(target_os = "linux")]
    if let Some(prepared) = sandbox.as_mut() {
        command.envs(prepared.profile().env.iter().map(|(name, value, _)| (name, value)));
        // SAFETY: the stage is made to run between fork and exec.
        unsafe { command.pre_exec(prepared.child_stage()) };
    }
    let inside = if sandbox.is_some() { " in its sandbox" } else { "" };
    let spawn = || {
        command
            .spawn()
            .map_err(|error| io::Error::new(error.kind(), format!("cannot start `{program}`{inside}: {error}")))
    };
    let spawned = spawn_own(spawn, Child::id);
    let report = sandbox.map(Prepared::finish);
    let (mut child, own) = spawned?;
    let tree = child.id().map(|id| ServerTree::new(id, tag));
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    enlarge_pipe(stdin.as_fd());
    enlarge_pipe(stdout.as_fd());
    Ok((stdin, stdout, ChildServer { child, tree, _own: own, ended: false }, report))
}

/// The link of a started child: a task writes what the link sends to its stdin, another
/// reads its stdout into the link.
fn link(mut stdin: ChildStdin, stdout: ChildStdout, child: ChildServer, max_message: usize) -> (Link, ChildServer) {
    let (link, mut to_server, from_server) = Link::pair();

    tokio::spawn(async move {
        while let Some(message) = to_server.recv().await {
            let written = async {
                stdin.write_all(&message).await?;
                if !message.ends_with(b"\n") {
                    stdin.write_all(b"\n").await?;
                }
                stdin.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
        // Dropping stdin closes it: the server's cue to exit.
    });

    tokio::spawn(async move {
        let mut stdout = BufReader::new(stdout);
        let reason = loop {
            let item = match next_frame(&mut stdout, max_message).await {
                Ok(None) => break "the server closed its output".to_string(),
                Ok(Some(Frame::Line(line))) if line.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Some(Frame::Line(line))) => FromServer::Message(line),
                Ok(Some(Frame::Oversize { prefix, length })) => FromServer::Oversize { prefix, length },
                Err(error) => break format!("reading the server's output failed: {error}"),
            };
            if from_server.send(item).await.is_err() {
                return;
            }
        };
        let _ = from_server.send(FromServer::Closed(reason)).await;
    });

    (link, child)
}

impl ChildServer {
    /// The child's stderr, when `prepare` piped it (else it is the caller's own).
    pub fn take_stderr(&mut self) -> Option<tokio::process::ChildStderr> {
        self.child.stderr.take()
    }

    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Ends the child once its stdin is closed (drop the link's senders first): waits
    /// `grace`, then SIGTERM to its tree, `grace` again, then SIGKILL; then what is left
    /// of the tree (grandchildren, those that left it) gets SIGTERM, `grace`, SIGKILL.
    pub async fn shut_down(mut self, grace: Duration) -> Option<ExitStatus> {
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => self.terminate(grace).await,
        };
        self.ended = true;
        if let Some(tree) = self.tree.clone() {
            let ended = tokio::task::spawn_blocking(move || tree.end_left(grace)).await;
            if let Err(error) = ended {
                tracing::warn!("ending what a server started failed: {error}");
            }
        }
        status
    }

    /// SIGTERM to the tree, `grace`, SIGKILL; returns once the child is reaped.
    async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal_all(Signal::SIGTERM);
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            return status.ok();
        }
        self.signal_all(Signal::SIGKILL);
        self.child.wait().await.ok()
    }

    fn signal_all(&self, signal: Signal) {
        if let Some(tree) = &self.tree {
            tree.signal_all(signal);
        }
    }
}

impl Drop for ChildServer {
    /// Dropped without [`ChildServer::shut_down`] (its session given up, the runtime
    /// stopping): the tree is killed at once, nothing waited for; the adopted zombies are
    /// reaped later.
    fn drop(&mut self) {
        if !self.ended {
            self.signal_all(Signal::SIGKILL);
        }
    }
}
