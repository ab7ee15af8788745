//! The physical lower bound for any stdio proxy: spawn the server and copy lines both
//! ways, nothing else. `byte-relay -- CMD ARGS…`

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn main() {
    let args: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let mut child =
        Command::new(&args[0]).args(&args[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    let mut child_in = child.stdin.take().unwrap();
    let child_out = child.stdout.take().unwrap();
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
