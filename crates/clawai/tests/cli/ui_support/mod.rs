//! Runs `clawai ui` in a temporary home and talks to it like a proxy and a person.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use clawai_approvals::{Ask, Client, Pending};
use serde_json::json;

pub(crate) fn clawai() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clawai"))
}

/// A running `clawai ui` with its own XDG directories.
pub(crate) struct Ui {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub url: String,
    pub stderr: Option<std::process::ChildStderr>,
}

/// The XDG environment of a home in `dir`.
pub(crate) fn home_env(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    vec![
        ("HOME", dir.to_path_buf()),
        ("XDG_RUNTIME_DIR", dir.join("run")),
        ("XDG_STATE_HOME", dir.join("state")),
        ("XDG_CONFIG_HOME", dir.join("config")),
    ]
}

/// A `clawai` command in the home `dir`.
pub(crate) fn command(dir: &Path) -> Command {
    let mut cmd = Command::new(clawai());
    cmd.env_remove("CLAWAI_BROKER_SOCKET").env_remove("CLAWAI_AUDIT").env_remove("CLAWAI_GRANT_WINDOW_MS");
    for (key, value) in home_env(dir) {
        cmd.env(key, value);
    }
    cmd
}

impl Ui {
    pub(crate) fn start() -> Ui {
        Ui::start_with(&[])
    }

    pub(crate) fn start_with(env: &[(&str, &str)]) -> Ui {
        Ui::start_in(tempfile::tempdir().unwrap(), env)
    }

    pub(crate) fn start_in(dir: tempfile::TempDir, env: &[(&str, &str)]) -> Ui {
        let mut cmd = command(dir.path());
        cmd.args(["ui", "--listen", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd.spawn().expect("clawai ui starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let url = rx.recv_timeout(Duration::from_secs(20)).expect("clawai ui prints its URL").trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:") && url.contains("/?token="), "printed {url:?}");
        let stderr = child.stderr.take();
        Ui { child, dir, url, stderr }
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.path().join("run/clawai/broker.sock")
    }

    pub(crate) fn client(&self) -> Client {
        Client::connect_to(&self.socket()).expect("the broker answers")
    }

    /// Asks like a proxy would.
    pub(crate) fn ask(&self, key: &str) -> Pending {
        self.client().ask(&ask(key)).expect("the ask is taken")
    }

    /// `clawai ARGS` in this home.
    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        command(self.dir.path()).args(args).output().unwrap()
    }

    pub(crate) fn port(&self) -> u16 {
        self.url.trim_start_matches("http://127.0.0.1:").split('/').next().unwrap().parse().unwrap()
    }

    pub(crate) fn token(&self) -> String {
        self.url.split("token=").nth(1).unwrap().to_owned()
    }

    /// Stops it with SIGTERM and waits.
    pub(crate) fn stop(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        self.child.wait().unwrap()
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An ask for `write_file` on server `fs`, with a bidi character in its arguments.
pub(crate) fn ask(key: &str) -> Ask {
    Ask {
        session: "session-1".into(),
        server: Some("fs".into()),
        method: "tools/call".into(),
        name: Some("write_file".into()),
        arguments: json!({"path": "/tmp/evil\u{202e}txt.sh", "content": "x"}),
        rule: Some("ask-writes".into()),
        description: Some("writes need a person".into()),
        reason: "rule ask-writes asks a person".into(),
        key: key.into(),
        timeout_ms: 45_000,
        id: None,
    }
}

/// A raw HTTP/1.1 request to the page; returns the status and the body.
pub(crate) fn http(port: u16, request_head: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request_head.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

pub(crate) fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
