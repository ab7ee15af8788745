//! A private PostgreSQL for a test: Debian's binaries, `initdb` into a temporary
//! directory, the server on a free loopback port, stopped when the test ends. As root
//! (CI), PostgreSQL refuses to run: the data directory then belongs to `nobody`, and
//! the server runs as that user.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's PostgreSQL binaries: the newest version installed.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).expect(
        "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): run scripts/setup-test-peers, or apt-get install postgresql",
    )
}

fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

fn nobody() -> nix::unistd::User {
    nix::unistd::User::from_name("nobody").ok().flatten().expect("a user `nobody`")
}

/// A command run as the user who owns the data directory, from `dir`.
fn as_owner(program: &Path, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir);
    if is_root() {
        use std::os::unix::process::CommandExt;
        let nobody = nobody();
        command.uid(nobody.uid.as_raw()).gid(nobody.gid.as_raw());
    }
    command
}

/// A running private PostgreSQL.
pub(crate) struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    server: Option<Child>,
}

impl Postgres {
    /// `initdb`, then the server.
    pub(crate) fn start() -> Postgres {
        let bin = bin_dir();
        let dir = tempfile::tempdir().expect("temp dir");
        if is_root() {
            let nobody = nobody();
            nix::unistd::chown(dir.path(), Some(nobody.uid), Some(nobody.gid)).expect("chown the temp dir");
        }
        let data = dir.path().join("data");
        let status = as_owner(&bin.join("initdb"), dir.path())
            .arg("-D")
            .arg(&data)
            .args(["-U", "clawai", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .expect("run initdb");
        assert!(status.success(), "initdb failed: {status}");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().unwrap().port();
        let mut postgres = Postgres { dir, bin, port, server: None };
        postgres.resume();
        postgres
    }

    /// The URL clawai is given.
    pub(crate) fn url(&self) -> String {
        format!("postgres://clawai@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server again (after [`Postgres::stop`]), on the same port and data.
    pub(crate) fn resume(&mut self) {
        let server = as_owner(&self.bin.join("postgres"), self.dir.path())
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start postgres");
        self.server = Some(server);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.ready() {
            assert!(Instant::now() < deadline, "PostgreSQL did not start within 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn ready(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "clawai"])
            .status()
            .is_ok_and(|status| status.success())
    }

    /// Stops the server (a fast shutdown: sessions are cut) and waits until it is gone.
    pub(crate) fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let pid = nix::unistd::Pid::from_raw(server.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let _ = server.wait();
        }
    }

    /// Runs SQL with `psql` as `user`, whatever comes of it.
    pub(crate) fn psql_as(&self, user: &str, statement: &str) -> std::process::Output {
        Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", user, "-d", "postgres"])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", statement])
            .output()
            .expect("run psql")
    }

    /// Runs SQL with `psql` as the superuser; its output, unaligned, without headers.
    pub(crate) fn sql(&self, statement: &str) -> String {
        let output = self.psql_as("clawai", statement);
        assert!(output.status.success(), "psql {statement}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("UTF-8").trim().to_owned()
    }

    /// A number the SQL selects.
    pub(crate) fn count(&self, statement: &str) -> u64 {
        self.sql(statement).parse().unwrap_or_else(|_| panic!("{statement}: not a number"))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
