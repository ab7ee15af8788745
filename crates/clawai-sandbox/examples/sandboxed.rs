//! Runs a command in the `auto` sandbox, its input and output inherited, and says what
//! was in force: `cargo run -p clawai-sandbox --example sandboxed -- CMD ARGS…` (network
//! grants from `SANDBOX_NETWORK`, comma-separated). For trying a profile by hand.

#[cfg(target_os = "linux")]
fn main() {
    use std::os::unix::process::CommandExt;

    use clawai_sandbox::{Mode, NetworkGrant, Request, ServerContext, prepare};
    let command: Vec<String> = std::env::args().skip(1).collect();
    let network = std::env::var("SANDBOX_NETWORK").unwrap_or_default();
    let network: Vec<&str> = network.split(',').filter(|s| !s.is_empty()).collect();
    let request =
        Request { mode: Mode::Auto, network: NetworkGrant::parse_all(&network).unwrap(), ..Request::default() };
    let mut prepared = prepare(&request, &ServerContext::here(&command, None), true).unwrap();
    let mut child = std::process::Command::new(&command[0]);
    child.args(&command[1..]).envs(prepared.profile().env.iter().map(|(name, value, _)| (name, value)));
    // SAFETY: the stage is made for pre_exec.
    unsafe { child.pre_exec(prepared.child_stage()) };
    let mut child = child.spawn().unwrap();
    eprintln!("{}", prepared.finish().describe());
    std::process::exit(child.wait().unwrap().code().unwrap_or(1));
}

#[cfg(not(target_os = "linux"))]
fn main() {}
