//! When clawai cannot start guarded (a policy or a gateway configuration that does not
//! load), it stays fail-closed: no server is started. But a desktop client launches
//! clawai over stdio and hides its stderr, so the person would only see "connection
//! closed". Over stdio, clawai therefore answers `initialize` and every other request
//! with an error that carries the message (file, line and column, and what to do), and
//! exits when the client closes its input. In a terminal it exits at once, as before.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use clawai_protocol::envelope::{Envelope, Kind};
use clawai_protocol::reply;

use crate::exit::ExitCode;

/// Reports `error` on stderr and, when a client speaks MCP on stdin, answers each of its
/// requests with it until the client closes stdin. Returns the error itself when stdin
/// is a terminal (a person reads stderr there).
pub(crate) fn answer_with(error: anyhow::Error) -> Result<ExitCode> {
    if std::io::stdin().is_terminal() {
        return Err(error);
    }
    let message = format!("clawai did not start the server: {error:#}");
    eprintln!("clawai: {error:#}");
    eprintln!("clawai: answering every request with this error until the client disconnects");
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.split(b'\n') {
        let Ok(line) = line else { break };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let id = match Envelope::parse(&line) {
            Ok(envelope) if envelope.kind == Kind::Request => envelope.id_text().map(str::to_owned),
            Ok(_) => continue,
            Err(refused) => refused.answer_id(&line).map(str::to_owned),
        };
        let Some(id) = id else { continue };
        let answer = reply::error(Some(&id), reply::NOT_STARTED, &message, None);
        if stdout.write_all(&answer).and_then(|()| stdout.flush()).is_err() {
            break;
        }
    }
    // The status a start-up error exits with anywhere else.
    Ok(ExitCode::Code(2))
}
