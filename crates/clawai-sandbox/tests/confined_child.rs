//! Real children under the sandbox, on this machine's kernel: what the profile does not
//! grant is refused by the kernel; what a server leaves behind ends with it; `none` has
//! no network, `loopback` reaches the host's. (Linux with Landlock and namespaces; the
//! tests say so and pass vacuously nowhere: they fail when the kernel lacks them.)
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use clawai_sandbox::{Mode, NetworkGrant, Protection, Report, Request, ServerContext, prepare};

fn run(command: &[&str], cwd: &Path, request: &Request) -> (Output, Report) {
    let command: Vec<String> = command.iter().map(|s| (*s).to_owned()).collect();
    let context = ServerContext::here(&command, Some(cwd));
    let mut prepared = prepare(request, &context, false).expect("the sandbox is prepared");
    let mut child = Command::new(&command[0]);
    child.args(&command[1..]).current_dir(cwd).stdin(Stdio::null()).process_group(0);
    // SAFETY: the stage is made for pre_exec.
    unsafe { child.pre_exec(prepared.child_stage()) };
    let output = child.output().expect("the child runs");
    (output, prepared.finish())
}

fn auto() -> Request {
    Request { mode: Mode::Auto, ..Request::default() }
}

#[test]
fn everything_is_in_force_on_this_kernel_even_for_root() {
    let dir = tempfile::tempdir().unwrap();
    let (output, report) = run(&["true"], dir.path(), &auto());
    assert!(output.status.success());
    for protection in Protection::ALL {
        assert!(report.has(protection), "{protection:?} is not in force: {}", report.describe());
    }
}

#[test]
fn a_file_outside_the_grants_is_refused_by_the_kernel_and_one_inside_is_read() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::create_dir(&project).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), "SECRET KEY").unwrap();
    std::fs::write(project.join("notes.txt"), "project notes").unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh/id_rsa"), project.join("key")).unwrap();
    let script = "cat notes.txt; cat key; echo written > new.txt; cat new.txt";
    let (output, _) = run(&["sh", "-c", script, "sh", project.to_str().unwrap()], &project, &auto());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.contains("project notes"), "{stdout} {stderr}");
    assert!(!stdout.contains("SECRET"), "the key was read through the link: {stdout}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(stdout.contains("written"), "{stdout} {stderr}");
}

#[test]
fn what_the_server_detached_ends_when_it_exits() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker-sleeps");
    std::fs::write(&marker, "").unwrap();
    // `setsid` and a double fork leave the server's tree and group; the PID namespace
    // keeps them. The marker in their command lines finds them from here.
    let script = format!(
        "setsid sleep 300 {m} </dev/null >/dev/null 2>&1 & (sh -c 'sleep 301 {m}' </dev/null >/dev/null 2>&1 &) ; sleep 0.2",
        m = marker.display()
    );
    let (output, report) = run(&["sh", "-c", &script], dir.path(), &auto());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(report.has(Protection::PidNamespace));
    let left = processes_mentioning(&marker.display().to_string());
    assert!(left.is_empty(), "left alive after the server exited: {left:?}");
}

#[test]
fn network_none_cannot_reach_the_hosts_loopback_and_loopback_can() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.read(&mut [0u8; 16]);
            let _ = stream.write_all(b"pong");
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let probe = format!(
        "import socket; s = socket.create_connection(('127.0.0.1', {port}), 2); s.sendall(b'ping'); print(s.recv(4).decode())"
    );
    let python = which("python3");
    let (none, report) = run(&[&python, "-c", &probe], dir.path(), &auto());
    assert!(report.has(Protection::NetworkNamespace) && report.has(Protection::TcpPorts));
    assert!(!none.status.success(), "reached the host with network none");
    let loopback = Request { network: vec![NetworkGrant::Loopback], ..auto() };
    let (reached, _) = run(&[&python, "-c", &probe], dir.path(), &loopback);
    assert_eq!(String::from_utf8_lossy(&reached.stdout).trim(), "pong", "{}", String::from_utf8_lossy(&reached.stderr));
}

#[test]
fn require_refuses_what_the_kernel_cannot_enforce() {
    // The kernel here has TCP rules; the test hook takes them away, in a process of its
    // own so that the other tests keep them.
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "require_child", "--nocapture"])
        .env(clawai_sandbox::PRETEND_MISSING_VARIABLE, "landlock-tcp")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("REFUSED: --sandbox require: this system cannot enforce TCP ports"), "{text}");
}

/// Run by `require_refuses_what_the_kernel_cannot_enforce` in a process of its own, with
/// the test hook set.
#[test]
fn require_child() {
    if std::env::var_os(clawai_sandbox::PRETEND_MISSING_VARIABLE).is_none() {
        return;
    }
    let command = vec!["true".to_owned()];
    let context = ServerContext::here(&command, None);
    let request = Request { mode: Mode::Require, ..Request::default() };
    match prepare(&request, &context, false) {
        Ok(_) => println!("STARTED"),
        Err(error) => println!("REFUSED: {error}"),
    }
}

fn which(program: &str) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file()).unwrap().display().to_string()
}

fn processes_mentioning(word: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(word) && !cmdline.contains("confined_child") {
            found.push((pid, cmdline));
        }
    }
    found
}
