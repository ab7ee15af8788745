//! The `clawai` command line: a thin layer over the policy, protocol and proxy crates.

mod paths;
mod policy_cmd;
mod proxy_cmd;

use clap::{Parser, Subcommand};

/// clawai: a firewall for the Model Context Protocol.
#[derive(Debug, Parser)]
#[command(name = "clawai", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write, check, test and explain policies.
    #[command(subcommand)]
    Policy(policy_cmd::PolicyCommand),
    /// Run an MCP server behind the policy: `clawai proxy [OPTIONS] -- CMD ARGS…`.
    Proxy(proxy_cmd::ProxyArgs),
}

/// How the process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok,
    /// The command ran and found a problem (a failed check or fixture).
    Failure,
    /// A specific code (the proxied server's, for example).
    Code(i32),
}

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CLAWAI_LOG")
                .unwrap_or_else(|_| "clawai=info,clawai_proxy=info".into()),
        )
        .with_target(false)
        .init();
    let result = match cli.command {
        Command::Policy(cmd) => policy_cmd::run(cmd),
        Command::Proxy(args) => proxy_cmd::run(args),
    };
    let code = match result {
        Ok(ExitCode::Ok) => 0,
        Ok(ExitCode::Failure) => 1,
        Ok(ExitCode::Code(c)) => c,
        Err(e) => {
            eprintln!("clawai: {e:#}");
            2
        }
    };
    std::process::exit(code);
}
