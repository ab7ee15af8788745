//! Property: for generated configurations, `unwrap ∘ wrap` is the identity on the bytes,
//! and wrapping changes nothing outside the wrapped entries' command and args.

use std::path::PathBuf;

use clawai_clients::known::{self, Client, Dirs};
use clawai_clients::{Options, Selection, ops};
use proptest::prelude::*;

fn arg() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9/._-]{0,12}", "[ -~]{0,8}", Just("--".to_string()), Just("ünï\"cødé\\".to_string())]
}

fn server() -> impl Strategy<Value = (String, Option<Vec<String>>, bool)> {
    ("[a-z][a-z0-9_-]{0,8}", prop::option::of(prop::collection::vec(arg(), 0..4)), any::<bool>())
}

fn render(servers: &[(String, Option<Vec<String>>, bool)], indent: bool, syntax_toml: bool) -> String {
    if syntax_toml {
        let mut out = String::from("# generated\nmodel = \"x\"\n");
        for (name, args, _) in servers {
            out.push_str(&format!("\n[mcp_servers.{name}]\ncommand = \"cmd-{name}\"  # c\n"));
            if let Some(args) = args {
                let items: Vec<String> = args.iter().map(|a| toml_edit::Value::from(a.as_str()).to_string()).collect();
                out.push_str(&format!("args = [{}]\n", items.join(",")));
            }
        }
        return out;
    }
    let (nl, pad) = if indent { ("\n", "    ") } else { ("", "") };
    let entries: Vec<String> = servers
        .iter()
        .map(|(name, args, env)| {
            let mut members = vec![format!("\"command\":{}", serde_json::to_string(&format!("cmd-{name}")).unwrap())];
            if let Some(args) = args {
                members.push(format!("\"args\": {}", serde_json::to_string(args).unwrap()));
            }
            if *env {
                members.push("\"env\": {\"K\": \"v\"}".into());
            }
            format!("{pad}{}: {{{}}}", serde_json::to_string(name).unwrap(), members.join(", "))
        })
        .collect();
    format!(
        "{{{nl}  \"other\": [1, 2],{nl}  \"mcpServers\": {{{nl}{}{nl}  }}{nl}}}{nl}",
        entries.join(&format!(",{nl}"))
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn unwrap_after_wrap_is_the_identity(
        servers in prop::collection::btree_map("[a-z][a-z0-9_-]{0,8}", server(), 1..5),
        indent in any::<bool>(),
        toml in any::<bool>(),
    ) {
        let servers: Vec<(String, Option<Vec<String>>, bool)> = servers.into_iter().map(|(k, (_, a, e))| (k, a, e)).collect();
        let dir = tempfile::tempdir().unwrap();
        let dirs = Dirs { home: dir.path().join("h"), config: dir.path().join("c"), project: dir.path().join("p") };
        let client = if toml { Client::Codex } else { Client::Cursor };
        let file = known::files(&dirs).into_iter().find(|f| f.client == client).unwrap();
        let original = render(&servers, indent, toml);
        std::fs::create_dir_all(file.path.parent().unwrap()).unwrap();
        std::fs::write(&file.path, &original).unwrap();
        let options = Options { clawai: PathBuf::from("/x/clawai"), policy: None, proxy_flags: Vec::new(), dry_run: false, state_dir: dir.path().join("s") };
        let report = ops::wrap(&file, &Selection::All, &options).unwrap();
        prop_assert_eq!(report.changed.len(), servers.len());
        let (statuses, _) = ops::status(&file).unwrap();
        prop_assert!(statuses.iter().all(|s| s.state == "wrapped" || s.state == "stale"));
        ops::unwrap(&file, &Selection::All, &options).unwrap();
        prop_assert_eq!(std::fs::read_to_string(&file.path).unwrap(), original);
    }
}
