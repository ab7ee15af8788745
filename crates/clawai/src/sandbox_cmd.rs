//! `--sandbox` and its grants (on `clawai proxy` and `clawai wrap`), and `clawai sandbox
//! explain -- CMD ARGS…`.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use clawai_proxy::sandbox::{Mode, NetworkGrant, Prepared, Request, ServerContext, prepare};

use crate::exit::ExitCode;

/// The sandbox of a server clawai starts.
#[derive(Debug, Clone, Args, Default)]
pub struct SandboxArgs {
    /// Run the server in a sandbox the kernel enforces (Linux: Landlock, namespaces):
    /// `auto` applies what this system can and says what it cannot; `require` refuses
    /// to start without all of it; `off` (the default) runs it as it is.
    #[arg(long = "sandbox", value_name = "auto|require|off", value_parser = parse_mode)]
    pub(crate) mode: Option<Mode>,
    /// A path the sandboxed server may read, besides what its profile grants
    /// (repeatable).
    #[arg(long = "sandbox-read", value_name = "PATH")]
    pub(crate) read: Vec<PathBuf>,
    /// A path the sandboxed server may read and write (repeatable).
    #[arg(long = "sandbox-write", value_name = "PATH")]
    pub(crate) write: Vec<PathBuf>,
    /// The network the sandboxed server may reach: none, loopback, HOST:PORT or any
    /// (repeatable; replaces the profile's default, which is none unless the server is
    /// known to need more).
    #[arg(long = "sandbox-network", value_name = "none|loopback|HOST:PORT|any")]
    pub(crate) network: Vec<String>,
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    Mode::parse(text).ok_or_else(|| format!("`{text}` is not a sandbox mode; use auto, require or off"))
}

impl SandboxArgs {
    /// The request these flags make; grants without `--sandbox` are an error (they would
    /// be silently unused).
    pub(crate) fn request(&self) -> Result<Request> {
        let network = NetworkGrant::parse_all(&self.network)?;
        let mode = self.mode.unwrap_or_default();
        if mode == Mode::Off && (!self.read.is_empty() || !self.write.is_empty() || !network.is_empty()) {
            bail!("--sandbox-read, --sandbox-write and --sandbox-network add to a sandbox; add `--sandbox auto`");
        }
        Ok(Request { mode, read: self.read.clone(), write: self.write.clone(), network })
    }

    /// The sandbox for `command`, prepared, when one is asked for.
    pub(crate) fn prepare(&self, command: &[String]) -> Result<Option<Prepared>> {
        let request = self.request()?;
        if !request.is_on() {
            return Ok(None);
        }
        let context = ServerContext::here(command, None);
        Ok(Some(prepare(&request, &context, true)?))
    }
}

/// What this system would enforce of the sandbox asked by a wrapped entry's options of
/// `clawai proxy` (`--sandbox auto --sandbox-read P …`), for `clawai status`; `None`
/// when the entry asks for none.
pub(crate) fn status_line(proxy_options: &[String], command: &[String]) -> Option<String> {
    // `--sandbox=auto` as `--sandbox auto`.
    let options: Vec<String> = proxy_options
        .iter()
        .flat_map(|option| match option.split_once('=') {
            Some((flag, value)) if flag.starts_with("--sandbox") => vec![flag.to_owned(), value.to_owned()],
            _ => vec![option.clone()],
        })
        .collect();
    let value = |i: usize| options.get(i + 1).cloned().unwrap_or_default();
    let mut args = SandboxArgs::default();
    for (i, option) in options.iter().enumerate() {
        match option.as_str() {
            "--sandbox" => args.mode = Mode::parse(&value(i)),
            "--sandbox-read" => args.read.push(value(i).into()),
            "--sandbox-write" => args.write.push(value(i).into()),
            "--sandbox-network" => args.network.push(value(i)),
            _ => {}
        }
    }
    let request = match args.request() {
        Ok(request) if request.is_on() => request,
        Ok(_) => return None,
        Err(error) => {
            return Some(format!("sandbox: the entry's options are wrong ({error}); the server will not start"));
        }
    };
    let context = ServerContext::here(command, None);
    Some(match clawai_proxy::sandbox::on_this_system(&request, &context) {
        Ok(report) => report.describe(),
        Err(error) => format!("sandbox: {error}"),
    })
}

/// `clawai sandbox …`.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Print what the sandbox of a server grants and why, and what this system enforces:
    /// `clawai sandbox explain [--sandbox-read P]… -- CMD ARGS…`.
    Explain(ExplainArgs),
}

/// `clawai sandbox explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD", required = true)]
    command: Vec<String>,
}

pub(crate) fn run(command: SandboxCommand) -> Result<ExitCode> {
    let SandboxCommand::Explain(mut args) = command;
    // What `--sandbox auto` would grant, unless another mode is given.
    let mode = args.sandbox.mode.get_or_insert(Mode::Auto);
    if *mode == Mode::Off {
        *mode = Mode::Auto;
    }
    let request = args.sandbox.request()?;
    let context = ServerContext::here(&args.command, None);
    let prepared = prepare(&request, &context, false)?;
    print!("{}", prepared.profile().explain());
    let expected = prepared.expected();
    println!("\nOn this system: {}", expected.describe());
    println!("Everything not listed above is refused by the kernel (Landlock), not by clawai.");
    Ok(ExitCode::Ok)
}
