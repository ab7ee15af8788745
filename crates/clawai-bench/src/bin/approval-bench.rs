//! What asking a person in the client costs beyond the person's time:
//! `approval-bench [ROUNDS]` runs `clawai proxy` (release build, beside this binary) in
//! front of `mcp-echo`, with a client that declared elicitation and answers clawai's
//! question the moment it arrives. Per round, the two kinds of call take turns: an
//! allowed call, and a call a `prompt` rule holds (call → question → answer → result).
//! Prints the medians and their difference: what the question adds, which includes one
//! more round trip through the client's pipes.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

const POLICY: &str =
    "[[rule]]\nid = \"ask\"\naction = \"prompt\"\ntool = \"ask_me\"\n\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";

fn main() -> Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()
        .context("ROUNDS must be a number")?
        .unwrap_or(clawai_bench::scaled(2000, 20));
    let here = std::env::current_exe()?.parent().context("no directory")?.to_path_buf();
    let dir = tempfile::tempdir()?;
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY)?;
    let clawai: PathBuf = here.join("clawai");
    let mut child = Command::new(&clawai)
        .args(["proxy", "--server", "bench", "--policy"])
        .arg(&policy)
        .arg("--audit")
        .arg(dir.path().join("audit.jsonl"))
        .arg("--approvals")
        .arg(dir.path().join("none.toml"))
        .arg("--")
        .arg(here.join("mcp-echo"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", clawai.display()))?;
    let mut input = child.stdin.take().context("stdin")?;
    let mut output = BufReader::new(child.stdout.take().context("stdout")?);
    let mut line = String::new();
    let mut read = |output: &mut BufReader<_>| -> Result<Value> {
        line.clear();
        if output.read_line(&mut line)? == 0 {
            bail!("clawai closed its output");
        }
        Ok(serde_json::from_str(&line)?)
    };
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{"elicitation":{{}}}},"clientInfo":{{"name":"bench","version":"1"}}}}}}"#
    )?;
    read(&mut output)?;
    let (mut allowed, mut asked) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for n in 0..rounds {
        let start = Instant::now();
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"n":{n}}}}}}}"#,
            2 * n + 1
        )?;
        read(&mut output)?;
        allowed.push(start.elapsed());
        let start = Instant::now();
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"ask_me","arguments":{{"n":{n}}}}}}}"#,
            2 * n + 2
        )?;
        let question = read(&mut output)?;
        if question["method"] != "elicitation/create" {
            bail!("expected clawai's question, got {question}");
        }
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"accept","content":{{"decision":"allow_once"}}}}}}"#,
            question["id"]
        )?;
        let result = read(&mut output)?;
        if result["result"]["content"][0]["text"] != "ok" {
            bail!("the approved call did not complete: {result}");
        }
        asked.push(start.elapsed());
    }
    drop(input);
    let _ = child.wait();
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (a, q) = (median(&mut allowed), median(&mut asked));
    println!("allowed call, median round trip:            {:>8.1} µs", a.as_secs_f64() * 1e6);
    println!("asked call (question answered at once):     {:>8.1} µs", q.as_secs_f64() * 1e6);
    println!("what the question adds (target under 1 ms): {:>8.1} µs", (q.saturating_sub(a)).as_secs_f64() * 1e6);
    Ok(())
}
