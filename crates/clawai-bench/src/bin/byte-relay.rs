//! The physical lower bound for any stdio proxy: spawn the server and copy lines both
//! ways, nothing else. `byte-relay -- CMD ARGS…`
//!
//! Its pipes get the room clawai gives its own (256 KiB instead of Linux's 64 KiB), so
//! that the comparison measures clawai's work per message and not a pipe setting.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::{Command, Stdio};

fn main() {
    let args: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let mut child =
        Command::new(&args[0]).args(&args[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    let mut child_in = child.stdin.take().unwrap();
    let child_out = child.stdout.take().unwrap();
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    for pipe in [child_in.as_fd(), child_out.as_fd(), stdin.as_fd(), stdout.as_fd()] {
        enlarge(pipe);
    }
    std::thread::spawn(move || {
        let mut r = BufReader::with_capacity(1 << 16, child_out);
        let mut out = std::io::stdout().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            if r.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                return;
            }
            if out.write_all(&line).and_then(|_| out.flush()).is_err() {
                return;
            }
        }
    });
    let mut r = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            break;
        }
        if child_in.write_all(&line).and_then(|_| child_in.flush()).is_err() {
            break;
        }
    }
    drop(child_in);
    let _ = child.wait();
}

/// The same room as `clawai_proxy::pipe::PIPE_CAPACITY`; a failure only costs speed.
fn enlarge(pipe: BorrowedFd<'_>) {
    let _ = nix::fcntl::fcntl(pipe, nix::fcntl::FcntlArg::F_SETPIPE_SZ(256 * 1024));
}
