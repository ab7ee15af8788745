//! `exec_shell`: run a program for the agent, bounded in time and output.
//!
//! The program runs directly with its arguments; a shell only with `shell: true` (so
//! `;`, `|`, `$(…)` in an argument are only characters unless the caller asked for a
//! shell, and the policy sees that it did). It gets a minimal environment (PATH, HOME,
//! USER, LANG, …: never the API keys in clawai's own), no input, and its own process
//! group, which is killed whole when the time is up or the call is cancelled.

use std::process::Stdio;
use std::time::Duration;

use clawai_sdk::{ToolResult, claw_tool};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

/// The time a program gets when the call names none.
const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
/// The most time a call may give.
const MAX_TIMEOUT_SECONDS: f64 = 600.0;
/// The most bytes kept of each of stdout and stderr; the rest is read and dropped.
pub(crate) const OUTPUT_MAX_BYTES: usize = 512 * 1024;

/// Run a program on this machine and return its exit status, stdout and stderr. The
/// program runs directly with `args`; set `shell: true` to run `command` as a line of
/// `sh` instead. It is stopped after `timeout_seconds` (default 30, at most 600); each
/// output is cut at 512 KiB.
#[claw_tool(name = "exec_shell")]
pub(crate) async fn exec_shell(
    /// The program to run (with `shell: true`, the whole command line).
    command: String,
    /// The program's arguments, each as one string (not used with `shell: true`).
    args: Option<Vec<String>>,
    /// Run `command` with `sh -c` (pipes, redirections, `&&`); default false.
    shell: Option<bool>,
    /// The directory to run in (default: the one clawai runs in).
    cwd: Option<String>,
    /// Seconds before the program is stopped (default 30, at most 600).
    timeout_seconds: Option<f64>,
) -> ToolResult {
    let args = args.unwrap_or_default();
    let shell = shell.unwrap_or(false);
    let timeout = timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    if !(timeout.is_finite() && timeout > 0.0) {
        return ToolResult::error("`timeout_seconds` must be a number of seconds above 0");
    }
    let timeout = Duration::from_secs_f64(timeout.min(MAX_TIMEOUT_SECONDS));
    if shell && !args.is_empty() {
        return ToolResult::error("with `shell: true`, write the whole line in `command` and leave `args` out");
    }
    if command.trim().is_empty() {
        return ToolResult::error("`command` is empty; name the program to run");
    }
    let mut process = if shell {
        let mut process = Command::new("sh");
        process.arg("-c").arg(&command);
        process
    } else {
        let mut process = Command::new(&command);
        process.args(&args);
        process
    };
    clawai_http::child::minimal_environment(&mut process);
    if let Some(dir) = &cwd {
        process.current_dir(dir);
    }
    process.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).kill_on_drop(true);
    // Registered as clawai's own while it runs: a gateway that adopts orphans never
    // reaps it from under tokio.
    let (mut child, _own) = match clawai_proxy::process_tree::spawn_own(|| process.spawn(), Child::id) {
        Ok(started) => started,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !shell && command.contains(' ') => {
            return ToolResult::error(format!(
                "there is no program named `{command}`: give the program alone in `command` and its arguments in \
                 `args`, or set `shell: true` to run the line with sh"
            ));
        }
        Err(error) => {
            let place = cwd.map(|dir| format!(" in `{dir}`")).unwrap_or_default();
            return ToolResult::error(format!("cannot run `{command}`{place}: {error}"));
        }
    };
    // Dropped on every way out (the call cancelled included): the whole group goes.
    let _group = child.id().and_then(|id| i32::try_from(id).ok()).map(|id| KillGroup(Pid::from_raw(id)));
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let run = async { tokio::join!(child.wait(), keep_start(stdout), keep_start(stderr)) };
    let (status, (out, out_dropped), (err, err_dropped)) = match tokio::time::timeout(timeout, run).await {
        Ok((Ok(status), out, err)) => (status, out, err),
        Ok((Err(error), ..)) => return ToolResult::error(format!("waiting for `{command}` failed: {error}")),
        Err(_) => {
            return ToolResult::error(format!(
                "`{command}` was stopped after {} seconds (raise `timeout_seconds`, at most {MAX_TIMEOUT_SECONDS})",
                timeout.as_secs_f64()
            ));
        }
    };
    let how = match status.code() {
        Some(code) => format!("exit status {code}"),
        None => "killed by a signal".to_owned(),
    };
    let mut text = how;
    for (name, bytes, dropped) in [("stdout", out, out_dropped), ("stderr", err, err_dropped)] {
        if bytes.is_empty() && dropped == 0 {
            continue;
        }
        text.push_str(&format!("\n--- {name} ---\n"));
        text.push_str(&String::from_utf8_lossy(&bytes));
        if dropped > 0 {
            text.push_str(&format!("\n[{dropped} more bytes not shown]"));
        }
    }
    if status.success() { ToolResult::text(text) } else { ToolResult::error(text) }
}

/// Reads `stream` to its end, keeping its first [`OUTPUT_MAX_BYTES`] and counting the
/// rest (read all the same, so the program never blocks on a full pipe).
async fn keep_start(mut stream: impl AsyncRead + Unpin) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut dropped = 0;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return (kept, dropped),
            Ok(n) => {
                let room = OUTPUT_MAX_BYTES - kept.len();
                kept.extend_from_slice(&buffer[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
}

/// Kills a process group when dropped.
struct KillGroup(Pid);

impl Drop for KillGroup {
    fn drop(&mut self) {
        // The group may be gone already; nothing to do then.
        let _ = killpg(self.0, Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    async fn run(args: Value) -> (bool, String) {
        let result = exec_shell().call(args).await.unwrap();
        let text = serde_json::to_value(&result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
        (result.failed(), text)
    }

    #[tokio::test]
    async fn arguments_are_not_read_by_a_shell_unless_asked() {
        let (failed, text) = run(json!({"command": "echo", "args": ["a; echo injected", "$(id)"]})).await;
        assert!(!failed);
        assert_eq!(text, "exit status 0\n--- stdout ---\na; echo injected $(id)\n");
        let (failed, text) = run(json!({"command": "echo a; echo b", "shell": true})).await;
        assert!(!failed);
        assert_eq!(text, "exit status 0\n--- stdout ---\na\nb\n");
        let (failed, text) = run(json!({"command": "echo a; echo b"})).await;
        assert!(failed && text.contains("set `shell: true`"), "{text}");
        let (failed, text) = run(json!({"command": "echo", "args": ["x"], "shell": true})).await;
        assert!(failed && text.contains("leave `args` out"), "{text}");
    }

    #[tokio::test]
    async fn a_failing_program_reports_its_status_and_stderr() {
        let (failed, text) = run(json!({"command": "sh", "args": ["-c", "echo oops >&2; exit 3"]})).await;
        assert!(failed);
        assert_eq!(text, "exit status 3\n--- stderr ---\noops\n");
    }

    #[tokio::test]
    async fn the_environment_holds_no_secrets_of_clawai() {
        // cargo sets it for the test process; a program run for an agent must not see it.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let (_, text) = run(json!({"command": "env"})).await;
        assert!(!text.contains("CARGO_MANIFEST_DIR="), "{text}");
        assert!(text.contains("PATH="), "{text}");
    }

    #[tokio::test]
    async fn a_program_past_its_time_is_stopped_with_its_children() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("late");
        let line = format!("(sleep 1; touch {}) & sleep 30", marker.display());
        let started = std::time::Instant::now();
        let (failed, text) = run(json!({"command": line, "shell": true, "timeout_seconds": 0.3})).await;
        assert!(failed && text.contains("stopped after 0.3 seconds"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "the background child was killed with the group");
    }

    #[tokio::test]
    async fn output_past_the_cap_is_counted_not_kept() {
        let (_, text) = run(json!({"command": "head -c 600000 /dev/zero | tr '\\0' a", "shell": true})).await;
        assert!(
            text.ends_with(&format!("[{} more bytes not shown]", 600_000 - OUTPUT_MAX_BYTES)),
            "{}",
            &text[text.len() - 60..]
        );
    }
}
