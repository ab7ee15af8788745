//! The terminal commands in cluster mode (`clawai pins … --cluster`, `clawai approvals
//! --cluster`, `clawai approve|deny ID --cluster`), run by the `clawai-http` binary so
//! that the Redis client stays out of the small one.

use anyhow::{Result, bail};
use clawai_approvals::{AlwaysEntry, AlwaysWriter as _, Answer, AskedVia, By, Covered, Outcome, Scope};
use clawai_proxy::pins::store::PinStore;

use crate::approvals_cmd::{ApproveArgs, DenyArgs, ListArgs};
use crate::exit::ExitCode;
use crate::pins_cmd::PinsCommand;

/// A terminal command given `--cluster`.
pub struct SharedCommand(Shared);

/// What [`SharedCommand`] carries.
pub(crate) enum Shared {
    Pins(PinsCommand),
    Approvals(ListArgs),
    Approve(ApproveArgs),
    Deny(DenyArgs),
}

impl SharedCommand {
    pub(crate) fn new(shared: Shared) -> SharedCommand {
        SharedCommand(shared)
    }
}

/// The name a terminal command gives itself in Redis (it owns no session).
const CLI: &str = "clawai-cli";

/// Connects to the Redis of `--cluster`.
fn connect(cluster: &crate::cluster::ClusterArg) -> Result<clawai_store_redis::Redis> {
    let url = cluster.url.as_deref().expect("run only with --cluster");
    crate::cluster::check_redis_url(url)?;
    clawai_store_redis::Redis::connect(url, CLI)
        .map_err(|error| anyhow::anyhow!("--cluster (CLAWAI_CLUSTER) {}: {error}", clawai_audit_ship::redacted(url)))
}

/// Runs a terminal command on the cluster's Redis (the `clawai-http` binary's runner).
pub fn run_shared(command: SharedCommand) -> Result<ExitCode> {
    match command.0 {
        Shared::Pins(cmd) => {
            let (PinsCommand::List { pins, .. }
            | PinsCommand::Diff { pins, .. }
            | PinsCommand::Approve { pins, .. }
            | PinsCommand::Reset { pins, .. }) = &cmd;
            let shared = connect(&pins.cluster)?.pins();
            let store = PinStore::in_documents(shared.clone());
            match cmd {
                PinsCommand::Reset { server, .. } => {
                    crate::pins_cmd::reset_shared(&store, server.as_deref(), |name| Ok(shared.reset(name)?))
                }
                cmd => crate::pins_cmd::run_in(&store, cmd),
            }
        }
        Shared::Approvals(args) => {
            let redis = connect(&args.cluster)?;
            crate::approvals_cmd::print_pending(&clawai_store_redis::pending(&redis), args.json)
        }
        Shared::Approve(args) => {
            let redis = connect(&args.cluster)?;
            let id = args.id();
            let outcome = match args.scope() {
                Scope::Once => Outcome::AllowOnce,
                Scope::Session => Outcome::AllowSession,
                scope @ (Scope::Always | Scope::AlwaysAnyArguments) => {
                    write_always(&redis, &id, scope)?;
                    Outcome::AllowAlways
                }
            };
            answer(redis, &id, outcome)
        }
        Shared::Deny(args) => answer(connect(&args.cluster)?, &args.id(), Outcome::Deny),
    }
}

/// Appends the "always" entry for held call `id` to the approvals every replica reads,
/// before it is answered (as the broker does: no answer when the entry cannot be written).
fn write_always(redis: &clawai_store_redis::Redis, id: &str, scope: Scope) -> Result<()> {
    let Some(item) = clawai_store_redis::pending(redis).into_iter().find(|item| item.id == id) else {
        bail!("{id} does not wait for an answer in the cluster; `clawai approvals --cluster URL` lists what waits");
    };
    let covered = if scope == Scope::Always { Covered::Shown } else { Covered::Any };
    let entry = AlwaysEntry::for_call(item.server, item.method, item.name, &item.arguments, AskedVia::Cli, covered)?;
    let always = clawai_store_redis::RedisAlways::new(redis.approvals(), clawai_store_redis::APPROVALS);
    always.append(&entry)?;
    Ok(())
}

/// Answers held call `id` in Redis: it wins only while its replica still waits.
fn answer(redis: clawai_store_redis::Redis, id: &str, outcome: Outcome) -> Result<ExitCode> {
    let held = clawai_store_redis::RedisHeld::new(redis);
    let won = held.answer(id, &Answer { id: id.to_owned(), outcome, by: By::Cli })?;
    if !won {
        eprintln!(
            "clawai: {id} does not wait for an answer in the cluster (it was answered, its replica stopped \
             waiting, or it was withdrawn); `clawai approvals --cluster URL` lists what waits"
        );
        return Ok(ExitCode::Failure);
    }
    let how = match outcome {
        Outcome::AllowOnce => "approved once",
        Outcome::AllowSession => "approved for the session",
        Outcome::AllowAlways => "approved always",
        Outcome::Deny => "denied",
    };
    println!("{id}: {how}");
    Ok(ExitCode::Ok)
}
