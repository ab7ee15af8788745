//! A `redis-server` of a test's own (the Debian package that `./scripts/setup-test-peers`
//! installs), on a free loopback port.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clawai_store::Stores;
use clawai_store_redis::Redis;

/// A `redis-server` of this test's own, without persistence.
pub(crate) struct RedisServer {
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    pub(crate) fn start() -> RedisServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut server = RedisServer { port, child: None };
        server.restart();
        server
    }

    pub(crate) fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server is installed (./scripts/setup-test-peers)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    #[allow(dead_code, reason = "tests/redis.rs does not use it")]
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    #[allow(dead_code, reason = "tests/held.rs does not use it")]
    pub(crate) fn replica(&self, id: &str) -> Stores {
        Redis::connect(&self.url(), id).expect("connects").stores().expect("the stores open")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
