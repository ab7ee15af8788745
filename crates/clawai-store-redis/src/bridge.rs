//! The connection, on a runtime of its own, and the two ways to use it: awaited from
//! async code, or waited for from the synchronous store traits.

use std::future::Future;
use std::time::Duration;

use clawai_store::Unavailable;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::breaker::{Admitted, Breaker};
use crate::{ConnectError, STEP_TIMEOUT, unreachable};

/// The connection manager and the runtime its connection is driven on.
pub(crate) struct Bridge {
    /// `Some` until dropped; shut down in the background, so that dropping the stores
    /// inside another runtime (a test) does not block it.
    runtime: Option<tokio::runtime::Runtime>,
    connection: ConnectionManager,
    /// Whether Redis answered lately: while it is away, steps fail at once.
    breaker: Breaker,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// How the connection comes back after Redis went away: attempts at most 250 ms apart
/// (recovery within 2 s of Redis returning, design §12), each given 500 ms, and replies
/// given 500 ms, so that no decision waits long on a Redis that is not there.
fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_millis(250))
        .set_number_of_retries(2)
        .set_connection_timeout(Some(Duration::from_millis(500)))
        .set_response_timeout(Some(Duration::from_millis(500)))
}

impl Bridge {
    pub(crate) fn connect(url: &str) -> Result<Bridge, ConnectError> {
        let client = redis::Client::open(url).map_err(|e| ConnectError::BadUrl(format!("not a Redis URL: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("clawai-redis")
            .enable_all()
            .build()
            .map_err(|e| ConnectError::Runtime(e.to_string()))?;
        let connecting = runtime.spawn(async move {
            let connecting = ConnectionManager::new_with_config(client, manager_config());
            tokio::time::timeout(Duration::from_secs(3), connecting).await
        });
        let connection = match wait(&runtime, connecting) {
            Ok(Ok(Ok(connection))) => connection,
            Ok(Ok(Err(error))) => return Err(ConnectError::Unreachable(error.to_string())),
            Ok(Err(_)) => return Err(ConnectError::Unreachable("no answer within 3 s".into())),
            Err(error) => return Err(ConnectError::Runtime(error)),
        };
        Ok(Bridge { runtime: Some(runtime), connection, breaker: Breaker::default() })
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives until the bridge is dropped")
    }

    /// The server's `redis_version`.
    pub(crate) fn server_version(&self) -> Result<String, ConnectError> {
        let info: String = self
            .block(|mut connection| async move { redis::cmd("INFO").arg("server").query_async(&mut connection).await })
            .map_err(|e| ConnectError::Unreachable(e.to_string()))?;
        Ok(info
            .lines()
            .find_map(|line| line.strip_prefix("redis_version:"))
            .map_or_else(|| "of unknown version".to_owned(), |version| version.trim().to_owned()))
    }

    /// Whether Redis answers a `PING` now. It always tries (`/healthz` says what is true
    /// now), and an answer closes the breaker.
    pub(crate) async fn ping(&self) -> bool {
        let joined = self
            .start(|mut connection| async move { redis::cmd("PING").query_async::<String>(&mut connection).await })
            .await
            .map_err(|error| error.to_string());
        self.breaker.record(Admitted::Normally, away(&joined));
        settle(joined).is_ok()
    }

    /// Runs `task` on the connection's runtime, in the background.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.runtime().spawn(task);
    }

    /// Starts one step on the connection's runtime, with its time limit (the timer is
    /// made there: the caller may be on no runtime).
    fn start<T, F, Fut>(&self, step: F) -> tokio::task::JoinHandle<Stepped<T>>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>> + Send + 'static,
    {
        let step = step(self.connection.clone());
        self.runtime().spawn(async move { tokio::time::timeout(STEP_TIMEOUT, step).await })
    }

    /// Runs one step on the connection's runtime and awaits it (from any runtime).
    pub(crate) async fn run<T, F, Fut>(&self, step: F) -> Result<T, Unavailable>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>> + Send + 'static,
    {
        let admitted = self.breaker.admit()?;
        let joined = self.start(step).await.map_err(|error| error.to_string());
        self.breaker.record(admitted, away(&joined));
        settle(joined)
    }

    /// Runs one step on the connection's runtime and waits for it, blocking this thread
    /// (for the synchronous store traits).
    pub(crate) fn block<T, F, Fut>(&self, step: F) -> Result<T, Unavailable>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>> + Send + 'static,
    {
        let admitted = self.breaker.admit()?;
        let (done, result) = std::sync::mpsc::sync_channel(1);
        let step = step(self.connection.clone());
        self.runtime().spawn(async move {
            let _ = done.send(tokio::time::timeout(STEP_TIMEOUT, step).await);
        });
        let joined = receive(&result);
        self.breaker.record(admitted, away(&joined));
        settle(joined)
    }
}

/// How long a thread that waits for a step first checks for its answer without
/// sleeping: a round trip to Redis on the same network usually ends within it, and
/// handing a runtime worker's tasks to another thread (`block_in_place`) costs more.
const SPIN: Duration = Duration::from_micros(150);

/// The answer of a step started by [`Bridge::block`].
fn receive<T>(result: &std::sync::mpsc::Receiver<Stepped<T>>) -> Result<Stepped<T>, String> {
    use std::sync::mpsc::TryRecvError;
    let started = std::time::Instant::now();
    while started.elapsed() < SPIN {
        match result.try_recv() {
            Ok(stepped) => return Ok(stepped),
            Err(TryRecvError::Empty) => std::thread::yield_now(),
            Err(TryRecvError::Disconnected) => return Err("the Redis client stopped".to_owned()),
        }
    }
    let receive = || result.recv().map_err(|_| "the Redis client stopped".to_owned());
    match tokio::runtime::Handle::try_current() {
        Ok(current) if current.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(receive)
        }
        _ => receive(),
    }
}

/// A step's result, or that its time ran out.
type Stepped<T> = Result<redis::RedisResult<T>, tokio::time::error::Elapsed>;

/// Whether a step found Redis away (no connection, no answer in time), as opposed to an
/// answer, an error of Redis's own included.
fn away<T>(joined: &Result<Stepped<T>, String>) -> bool {
    match joined {
        Ok(Ok(Ok(_))) => false,
        Ok(Ok(Err(error))) => {
            error.is_io_error() || error.is_timeout() || error.is_connection_dropped() || error.is_connection_refusal()
        }
        Ok(Err(_elapsed)) => true,
        Err(_joined) => true,
    }
}

/// What a step came to, for the caller: its value, or why Redis did not give it.
fn settle<T>(joined: Result<Stepped<T>, String>) -> Result<T, Unavailable> {
    match joined {
        Ok(Ok(result)) => result.map_err(unreachable),
        Ok(Err(_)) => Err(unreachable(format!("no answer within {STEP_TIMEOUT:?}"))),
        Err(error) => Err(unreachable(error)),
    }
}

/// Waits for a task of `runtime` from a thread that may be a worker of another runtime:
/// a multi-threaded runtime's worker hands its other tasks to another thread meanwhile.
fn wait<T: Send + 'static>(runtime: &tokio::runtime::Runtime, task: tokio::task::JoinHandle<T>) -> Result<T, String> {
    let (done, result) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = done.send(task.await.map_err(|e| e.to_string()));
    });
    let receive = move || result.recv().unwrap_or_else(|_| Err("the Redis client stopped".to_owned()));
    match tokio::runtime::Handle::try_current() {
        Ok(current) if current.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(receive)
        }
        _ => receive(),
    }
}
