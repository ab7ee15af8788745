//! A stdio MCP server run as a child process behind a [`Link`] (one per HTTP session).
//!
//! The child leads its own process group, so that shutting it down reaches the
//! grandchildren `npx` starts: close stdin, wait a grace period, SIGTERM the group, wait
//! again, SIGKILL the group.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::link::{FromServer, Link};

/// How much of an oversize message is kept to find its id.
const OVERSIZE_PREFIX: usize = 4096;

/// A running child server.
pub struct ChildServer {
    child: Child,
    group: Option<Pid>,
}

/// Starts `command` and links it. Messages larger than `max_message` bytes are not
/// relayed.
pub fn spawn(command: &[String], max_message: usize) -> io::Result<(Link, ChildServer)> {
    let (program, args) = command.split_first().ok_or_else(|| io::Error::other("no server command"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| io::Error::new(error.kind(), format!("cannot start `{program}`: {error}")))?;
    let group = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
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
        let mut line = Vec::new();
        let reason = loop {
            line.clear();
            let limit = max_message as u64 + 1;
            match (&mut stdout).take(limit).read_until(b'\n', &mut line).await {
                Ok(0) => break "the server closed its output".to_string(),
                Ok(_) if line.len() > max_message && !line.ends_with(b"\n") => {
                    let prefix = line[..line.len().min(OVERSIZE_PREFIX)].to_vec();
                    let mut length = line.len();
                    let mut rest = Vec::new();
                    loop {
                        rest.clear();
                        match (&mut stdout).take(1 << 20).read_until(b'\n', &mut rest).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => length += n,
                        }
                        if rest.ends_with(b"\n") {
                            break;
                        }
                    }
                    if from_server.send(FromServer::Oversize { prefix, length }).await.is_err() {
                        return;
                    }
                }
                Ok(_) => {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    if from_server.send(FromServer::Message(std::mem::take(&mut line))).await.is_err() {
                        return;
                    }
                }
                Err(error) => break format!("reading the server's output failed: {error}"),
            }
        };
        let _ = from_server.send(FromServer::Closed(reason)).await;
    });

    Ok((link, ChildServer { child, group }))
}

impl ChildServer {
    /// Ends the child once its stdin is closed (drop the link's senders first): waits
    /// `grace`, then SIGTERM to the group, `grace` again, then SIGKILL.
    pub async fn shut_down(mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            self.kill_group(Signal::SIGKILL); // grandchildren left behind
            return status.ok();
        }
        self.kill_group(Signal::SIGTERM);
        if let Ok(status) = tokio::time::timeout(grace, self.child.wait()).await {
            self.kill_group(Signal::SIGKILL);
            return status.ok();
        }
        self.kill_group(Signal::SIGKILL);
        self.child.wait().await.ok()
    }

    fn kill_group(&self, signal: Signal) {
        if let Some(group) = self.group {
            let _ = killpg(group, signal);
        }
    }
}
