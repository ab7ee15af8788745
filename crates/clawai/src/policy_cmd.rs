//! `clawai policy init|check|test|explain|import`.

use clawai_protocol::methods;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use clawai_policy::{
    Action, Call, FollowLinks, Format, ToolAnnotations, convert, fixture, load_file, starter::STARTER_POLICY,
};
use serde_json::{Map, Value, json};

use crate::common_args::{PolicyArg, load};
use crate::exit::ExitCode;
use crate::paths;

/// Write, check and test policies.
#[derive(Debug, Subcommand)]
pub(crate) enum PolicyCommand {
    /// Write a commented starter policy (refuses to overwrite).
    Init {
        /// Where to write it [default: $XDG_CONFIG_HOME/clawai/policy.toml].
        #[arg(long)]
        path: Option<PathBuf>,
    },
    /// Validate a policy: syntax, keys, actions, globs, regexes, unreachable rules.
    #[command(after_help = "Exit status: 0 when the policy loads, 1 when it does not (as `clawai policy test`).")]
    Check {
        /// The policy file [default: --policy, $CLAWAI_POLICY, then the default path].
        file: Option<PathBuf>,
        #[command(flatten)]
        policy: PolicyArg,
    },
    /// Decide recorded calls (fixtures) and compare with what they expect.
    #[command(
        after_help = "Exit status: 0 when every fixture passes; 1 when the policy does not load (as `clawai policy check`) or a fixture fails; 2 when a fixture cannot be read."
    )]
    Test(TestArgs),
    /// Show every rule considered for one call, why it matched or not, and the decision.
    Explain(Box<ExplainArgs>),
    /// Decide every call recorded in the audit trail with a candidate policy and list what
    /// would change (allow → deny, deny → allow, → prompt), before rolling it out.
    #[command(
        after_help = "Exit status: 0 when no recorded call would be decided differently; 1 when any would (for CI); 2 when the policy or the trail cannot be read."
    )]
    Replay(crate::policy_replay::ReplayArgs),
    /// Convert an AgentShield YAML or mcp-gov rules.json policy to clawai TOML (stdout).
    Import {
        /// The policy to convert.
        file: PathBuf,
        /// Its format [default: from the extension: .yaml/.yml AgentShield, .json mcp-gov].
        #[arg(long, value_enum)]
        from: Option<ImportFormat>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ImportFormat {
    Agentshield,
    Mcpgov,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    #[command(flatten)]
    policy: PolicyArg,
    /// One fixture file.
    #[arg(long, conflicts_with = "fixture_dir", required_unless_present = "fixture_dir")]
    fixture: Option<PathBuf>,
    /// Every *.json fixture in a directory.
    #[arg(long)]
    fixture_dir: Option<PathBuf>,
    /// The decision every fixture must get (overrides the fixtures' `expected`).
    #[arg(long, value_parser = parse_action)]
    expect: Option<Action>,
    /// A fixture without an `expected` decision fails (when --expect is not given).
    /// On by default when the CI environment variable is set and not empty;
    /// `--require-expected=false` turns it off.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_name = "BOOL")]
    require_expected: Option<bool>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: OutputFormat,
}

#[derive(Debug, Args)]
pub(crate) struct ExplainArgs {
    #[command(flatten)]
    policy: PolicyArg,
    /// A tools/call of this tool.
    #[arg(long, group = "target")]
    tool: Option<String>,
    /// A resources/read of this URI.
    #[arg(long, group = "target")]
    resource: Option<String>,
    /// A prompts/get of this prompt.
    #[arg(long, group = "target")]
    prompt: Option<String>,
    /// Any other method (sampling/createMessage, elicitation/create, …).
    #[arg(long, group = "target")]
    method: Option<String>,
    /// An argument, KEY=VALUE; dotted keys nest; VALUE is JSON when it parses as JSON.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    args: Vec<String>,
    /// All arguments as one JSON value (instead of --arg).
    #[arg(long, conflicts_with = "args", value_name = "JSON")]
    args_json: Option<String>,
    /// The server the call goes to.
    #[arg(long)]
    server: Option<String>,
    /// The tool's annotations as JSON, e.g. '{"readOnlyHint":true}'.
    #[arg(long, value_name = "JSON")]
    annotations: Option<String>,
    /// The standing approvals consulted when a rule asks (default:
    /// ~/.config/clawai/approvals.toml).
    #[arg(long, value_name = "FILE", env = "CLAWAI_APPROVALS")]
    approvals: Option<PathBuf>,
    /// Explain the call in a session carrying this label (rules with `tainted`);
    /// repeatable.
    #[arg(long = "tainted", value_name = "LABEL")]
    tainted: Vec<String>,
    /// The pin store whose held tools the proxy refuses (with --server) [default:
    /// $XDG_STATE_HOME/clawai/pins].
    #[arg(long, env = "CLAWAI_PINS", value_name = "DIR")]
    pins: Option<PathBuf>,
    /// The audit trail the proxy writes, protected from tool calls [default:
    /// $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long, env = "CLAWAI_AUDIT", value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Explain the call after N earlier calls counted by the rate rule RULE (its id, or
    /// #N) in its window; repeatable.
    #[arg(long = "prior-calls", value_name = "RULE=N")]
    prior_calls: Vec<String>,
}

fn parse_action(s: &str) -> Result<Action, String> {
    s.parse()
}

pub(crate) fn run(cmd: PolicyCommand) -> Result<ExitCode> {
    match cmd {
        PolicyCommand::Init { path } => init(path.unwrap_or_else(paths::default_policy)),
        PolicyCommand::Check { file, policy } => check(&file.unwrap_or_else(|| policy.resolve())),
        PolicyCommand::Test(args) => test(args),
        PolicyCommand::Explain(args) => explain(*args),
        PolicyCommand::Import { file, from } => import(&file, from),
        PolicyCommand::Replay(args) => crate::policy_replay::run(args),
    }
}

fn init(path: PathBuf) -> Result<ExitCode> {
    if path.exists() {
        bail!(
            "{} already exists; clawai does not overwrite a policy. Check it with `clawai policy check {}`, or pass --path to write the starter elsewhere",
            path.display(),
            path.display()
        );
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // create_new: never replace a file that appeared meanwhile.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(STARTER_POLICY.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    println!("Wrote the starter policy to {}.", path.display());
    println!(
        "It denies credential files, asks before writes, deletes and commands, and lets reads through, marked in the audit trail."
    );
    println!("Next: edit it, then `clawai policy check {}`, and try a call each way:", path.display());
    println!("  clawai policy explain --tool read_file --arg path=/home/me/project/README.md   # allowed (audit)");
    println!("  clawai policy explain --tool read_file --arg path=/home/me/.ssh/id_rsa        # denied");
    Ok(ExitCode::Ok)
}

fn check(path: &Path) -> Result<ExitCode> {
    match load_file(path) {
        Ok(policy) => {
            println!(
                "{}: ok, {} rule{}, default {}.",
                path.display(),
                policy.rules().len(),
                if policy.rules().len() == 1 { "" } else { "s" },
                policy.default_action()
            );
            print_notes(path, policy.notes());
            Ok(ExitCode::Ok)
        }
        Err(e) => not_loaded(path, &e),
    }
}

/// A policy that does not load, for `check` and `test` alike: the errors, what to do,
/// and exit status 1.
fn not_loaded(path: &Path, error: &clawai_policy::PolicyError) -> Result<ExitCode> {
    eprintln!("{error}");
    eprintln!(
        "The policy was not loaded; fix the errors above and run `clawai policy check {}` again.",
        paths::shell_word(&path.display().to_string())
    );
    Ok(ExitCode::Failure)
}

/// `--require-expected`, else on when the CI environment variable is set and not empty.
fn expected_required(flag: Option<bool>) -> bool {
    flag.unwrap_or_else(|| std::env::var_os("CI").is_some_and(|v| !v.is_empty()))
}

fn test(args: TestArgs) -> Result<ExitCode> {
    let policy_path = args.policy.resolve();
    let policy = match load_file(&policy_path) {
        Ok(policy) => policy,
        Err(e) => return not_loaded(&policy_path, &e),
    };
    let require = expected_required(args.require_expected);
    let paths = match (&args.fixture, &args.fixture_dir) {
        (Some(f), _) => vec![f.clone()],
        (None, Some(d)) => fixture::in_dir(d).map_err(anyhow::Error::msg)?,
        (None, None) => bail!("pass --fixture FILE or --fixture-dir DIR"),
    };
    let mut results = Vec::new();
    for path in &paths {
        let f = fixture::read(path).map_err(anyhow::Error::msg)?;
        results.push(fixture::run(&policy, path, &f, args.expect).map_err(anyhow::Error::msg)?);
    }
    // Without an expected decision a fixture checks nothing; where that is required, it fails.
    let lacks = |r: &fixture::FixtureResult| r.expected.is_none() && require;
    let passes = |r: &fixture::FixtureResult| r.passed() && !lacks(r);
    let failed = results.iter().filter(|r| !passes(r)).count();
    let missing = results.iter().filter(|r| lacks(r)).count();
    let unchecked = results.iter().filter(|r| r.expected.is_none() && !require).count();
    let passed = results.len() - failed - unchecked;
    if args.format == OutputFormat::Json {
        let items: Vec<Value> = results
            .iter()
            .map(|r| {
                json!({
                    "fixture": r.path.display().to_string(),
                    "decision": r.actual.as_str(),
                    "expected": r.expected.map(Action::as_str),
                    "passed": passes(r),
                    "missing_expected": lacks(r),
                    "rule": r.rule_id,
                    "reason": r.reason,
                })
            })
            .collect();
        let summary = json!({"policy": policy_path.display().to_string(), "passed": passed, "failed": failed, "unchecked": unchecked, "results": items});
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        for r in &results {
            let status = match (r.expected, passes(r)) {
                (None, _) if require => "FAIL",
                (None, _) => "----",
                (Some(_), true) => "PASS",
                (Some(_), false) => "FAIL",
            };
            let expectation = match r.expected {
                Some(e) if e != r.actual => format!(" (expected {e})"),
                None if require => " (no expected decision)".to_owned(),
                _ => String::new(),
            };
            println!("{status} {}: {}{expectation} ({})", r.path.display(), r.actual, r.reason);
        }
        println!(
            "{passed} passed, {failed} failed, {unchecked} without an expected decision ({} fixtures, policy {}).",
            results.len(),
            policy_path.display()
        );
        if missing > 0 {
            println!(
                "{missing} fixture{} no expected decision, and one is required{}: add \"expected\": \"allow\" (or deny, prompt, audit) to {}, or pass --expect ACTION.",
                if missing == 1 { " has" } else { "s have" },
                if args.require_expected.is_none() { " because the CI variable is set" } else { "" },
                if missing == 1 { "it" } else { "each" }
            );
        }
        if failed > missing {
            println!(
                "A failed fixture means the policy decides differently from what the fixture expects: fix the policy or the fixture."
            );
        }
    }
    Ok(if failed > 0 { ExitCode::Failure } else { ExitCode::Ok })
}

/// `a.b=c` → {"a": {"b": "c"}}; values that parse as JSON are JSON.
fn build_args(pairs: &[String]) -> Result<Value> {
    let mut root = Map::new();
    for pair in pairs {
        let (key, raw) = pair.split_once('=').with_context(|| format!("--arg {pair}: write KEY=VALUE"))?;
        let value = serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
        let mut parts: Vec<&str> = key.split('.').collect();
        let last = parts.pop().unwrap_or_default();
        let mut node = &mut root;
        for part in parts {
            let entry = node.entry(part.to_owned()).or_insert_with(|| Value::Object(Map::new()));
            node = entry.as_object_mut().with_context(|| format!("--arg {pair}: `{part}` is already a value"))?;
        }
        node.insert(last.to_owned(), value);
    }
    Ok(Value::Object(root))
}

fn explain(args: ExplainArgs) -> Result<ExitCode> {
    let policy_path = args.policy.resolve();
    let policy = load(&policy_path)?;
    let arguments = match &args.args_json {
        Some(text) => serde_json::from_str(text).context("--args-json is not valid JSON")?,
        None => build_args(&args.args)?,
    };
    let (method, params) = if let Some(tool) = &args.tool {
        (methods::TOOLS_CALL.to_owned(), json!({"name": tool, "arguments": arguments}))
    } else if let Some(uri) = &args.resource {
        (methods::RESOURCES_READ.to_owned(), json!({"uri": uri}))
    } else if let Some(prompt) = &args.prompt {
        (methods::PROMPTS_GET.to_owned(), json!({"name": prompt, "arguments": arguments}))
    } else if let Some(method) = &args.method {
        (method.clone(), arguments)
    } else {
        bail!("say what to explain: --tool NAME, --resource URI, --prompt NAME or --method METHOD");
    };
    let annotations = match &args.annotations {
        Some(text) => {
            Some(ToolAnnotations::from_json(&serde_json::from_str(text).context("--annotations is not valid JSON")?))
        }
        None => None,
    };
    let params_json = clawai_protocol::Json::from(&params);
    let call = Call::from_params(&method, Some(&params_json))
        .with_server(args.server.as_deref())
        .with_annotations(annotations)
        // As the proxy decides for a server on this machine.
        .with_links_followed(policy.follows_links().then_some(clawai_proxy::links::follow as FollowLinks));
    let mut calls = std::collections::BTreeMap::new();
    for pair in &args.prior_calls {
        let (rule, count) = pair.split_once('=').with_context(|| format!("--prior-calls {pair}: write RULE=N"))?;
        let count = count.parse::<u32>().with_context(|| format!("--prior-calls {pair}: N is not a count"))?;
        calls.insert(rule.to_owned(), count);
    }
    let described = fixture::FixtureSession { labels: args.tainted.clone(), calls };
    let session = fixture::session_of(&policy, Some(&described)).map_err(|e| anyhow::anyhow!("--prior-calls: {e}"))?;
    let (explanation, labels_added) = policy.explain_in(&call, &session);
    println!(
        "Policy {} ({} rules), call: {method} {}",
        policy_path.display(),
        policy.rules().len(),
        serde_json::to_string(&params)?
    );
    if annotations.is_none() && method == methods::TOOLS_CALL {
        println!("(no --annotations: the tool counts as destructive and not read-only, as for a tool never listed)");
    }
    if policy.reads_session() && args.tainted.is_empty() && args.prior_calls.is_empty() {
        println!("(a new session: no labels, no earlier calls; --tainted LABEL and --prior-calls RULE=N set them)");
    }
    for step in &explanation.steps {
        let verdict = match &step.outcome {
            Ok(()) => "MATCH".to_owned(),
            Err(miss) => format!("no: {miss}"),
        };
        println!("  rule {} [{}] {} -> {verdict}", step.label, step.action, step.summary);
    }
    if !labels_added.is_empty() {
        let labels: Vec<String> = labels_added.iter().map(|l| format!("{l:?}")).collect();
        println!("  the call touches what a `taint` rule describes: the session is then tainted {}", labels.join(", "));
    }
    // The guards beyond the rules, as the proxy runs them: self-protection first,
    // pinning after the policy, then the arguments stage.
    let pins = crate::paths::pins_dir(args.pins.as_ref());
    let audit = args.audit.clone().unwrap_or_else(|| crate::paths::state_dir().join("audit.jsonl"));
    let also: Vec<PathBuf> = args.approvals.iter().cloned().collect();
    let protection = crate::protected::self_protection(&policy_path, &audit, Some(&pins), &also);
    let alone = clawai_proxy::guard::decide_alone(&policy, Some(&protection), &call, &session);
    if alone.protected {
        println!("Decision: DENY (self-protection, before any rule: {})", alone.reason());
        return Ok(ExitCode::Ok);
    }
    if alone.decision.action != Action::Deny
        && let Some(why) = held_by_pins(&pins, args.server.as_deref(), &method, &params)
    {
        println!("Decision: DENY (pinning: {why})");
        return Ok(ExitCode::Ok);
    }
    if alone.credential.is_some() {
        println!("Decision: {} ({})", alone.decision.action.as_str().to_uppercase(), alone.reason());
        return Ok(ExitCode::Ok);
    }
    let d = &explanation.decision;
    if d.action == Action::Prompt {
        let path = crate::paths::approvals_path(args.approvals.as_ref());
        let approvals = clawai_policy::Approvals::load(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some((index, entry)) = approvals.approving(&call) {
            println!("Decision: PROMPT ({}), but ALLOW without asking:", d.reason());
            println!(
                "  approval {} (line {}) of {} allows it always [{}]",
                entry.label(index),
                entry.line,
                path.display(),
                entry.summary()
            );
            return Ok(ExitCode::Ok);
        }
    }
    println!("Decision: {} ({})", d.action.as_str().to_uppercase(), d.reason());
    Ok(ExitCode::Ok)
}

/// Why the proxy refuses a `tools/call` or `prompts/get` of an item the pin store holds
/// for `server` (any store file of that name), if it does.
fn held_by_pins(pins: &Path, server: Option<&str>, method: &str, params: &serde_json::Value) -> Option<String> {
    use clawai_proxy::pins::{Kind, Refusal};
    let kind = match method {
        methods::TOOLS_CALL => Kind::Tool,
        methods::PROMPTS_GET => Kind::Prompt,
        _ => return None,
    };
    let name = params.get("name")?.as_str()?;
    let files = clawai_proxy::pins::review::files_of(pins, server?).ok()?;
    files.into_iter().find_map(|(_, file)| {
        let why = match file.refusal(kind, name)? {
            Refusal::Blocked { .. } => "the server's instructions are held, so all of it is".to_owned(),
            Refusal::Quarantined { finding, .. } => {
                format!("quarantined by the scan: {} ({})", finding.class, finding.severity)
            }
            Refusal::Held => "changed since it was approved".to_owned(),
        };
        let (server, what) = (&file.server, if kind == Kind::Tool { "tool" } else { "prompt" });
        Some(format!("{what} `{name}` of server `{server}`: {why}; review it with `clawai pins diff {server} {name}`"))
    })
}

fn import(path: &Path, from: Option<ImportFormat>) -> Result<ExitCode> {
    let format = match from {
        Some(ImportFormat::Agentshield) => Format::AgentShield,
        Some(ImportFormat::Mcpgov) => Format::McpGov,
        None => match Format::from_path(path) {
            Format::Toml => bail!(
                "{}: cannot tell the format from the extension; pass --from agentshield or --from mcpgov",
                path.display()
            ),
            f => f,
        },
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path.display().to_string();
    let converted = convert(&text, format, &name).map_err(|e| anyhow::anyhow!("{e}"))?;
    // Prove the result loads before handing it over.
    clawai_policy::load_str(&text, format, &name).map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("{}", converted.toml);
    print_notes(path, &converted.notes);
    Ok(ExitCode::Ok)
}

/// What a conversion from another format shaped or left out, on stderr (the TOML goes
/// to stdout, and carries the same notes as comments).
fn print_notes(path: &Path, notes: &[String]) {
    for note in notes {
        eprintln!("{}: note: {note}", path.display());
    }
}
