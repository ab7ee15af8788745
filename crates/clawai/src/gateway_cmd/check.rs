//! `clawai gateway --check`: starts the configuration, waits for every server to come
//! up or fail, prints each server (state, tools), each skill and every problem, stops
//! everything and exits: 0 when there is no problem, 1 when there is.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use clawai_gateway::{Gateway, GatewayConfig, GatewayOptions};
use clawai_proxy::AuditLog;

use super::ServedArgs;
use crate::exit::ExitCode;
use crate::guarded::Guarded;
use crate::http_cmd::runtime;

/// How long the check waits for servers that are still starting.
const STARTING_WAIT: Duration = Duration::from_secs(60);

/// Runs the check of `config`, read from `config_file`.
pub(crate) fn check(
    served: &ServedArgs,
    config: GatewayConfig,
    config_file: &Path,
    options: GatewayOptions,
) -> Result<ExitCode> {
    // The policy decides the servers' traffic as it would when serving; nothing is
    // recorded, and nothing is pinned (a check is not a first use of the servers).
    let guarded = Guarded::open_with(&served.policy, None, AuditLog::DEFAULT_MAX_BYTES, true, None, &[])
        .map(|guarded| (guarded.policy, AuditLog::disabled()));
    let (policy, audit) = match guarded {
        Ok(guarded) => guarded,
        Err(error) => {
            println!("problems (1):\n  - {error:#}");
            return Ok(ExitCode::Failure);
        }
    };
    let options = GatewayOptions { pins_dir: None, one_client: true, ..options };
    crate::guarded::adopt_orphans();
    let grace = options.grace;
    let rt = runtime()?;
    let report = rt.block_on(async move {
        let gateway = Gateway::start(&config, policy, audit, options)?;
        gateway.set_skills(super::load_skills(&super::skill_dirs(&served.skills)));
        gateway.wait_until_started(STARTING_WAIT).await;
        let report = gateway.report();
        gateway.shutdown().await;
        tokio::task::spawn_blocking(move || clawai_proxy::process_tree::end_adopted(grace)).await?;
        anyhow::Ok(report)
    })?;
    rt.shutdown_timeout(Duration::from_millis(100));
    let mut text = format!("{}:\n", config_file.display());
    for warning in &config_warnings(config_file) {
        text.push_str(&format!("  warning: {warning}\n"));
    }
    text.push_str(&report.render());
    print!("{text}");
    Ok(if report.problems().is_empty() { ExitCode::Ok } else { ExitCode::Failure })
}

/// What reading the configuration warned of (skipped entries), read again to say it here.
fn config_warnings(config_file: &Path) -> Vec<String> {
    super::read_config(config_file).map(|config| config.warnings).unwrap_or_default()
}
