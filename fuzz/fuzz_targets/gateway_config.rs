//! Gateway configuration files, strict and lenient: any text must load or be refused
//! without panicking; a refusal inside the file says where (line and column from 1); and
//! what loads keeps the promises the gateway relies on: server names that prefix tool
//! names unambiguously, header values of one line, no NUL reaching the system.
#![no_main]

use std::path::Path;

use clawai_gateway::Transport;
use clawai_gateway::config::{McpServerConfig, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let lenient = selector & 1 == 1;
    // Some variables set, some empty, some unset, some holding what looks like a reference
    // or a line break, so expansion sees every case.
    let env = |name: &str| match name.len() % 4 {
        0 => None,
        1 => Some(String::new()),
        2 => Some(format!("${{{name}}}")),
        _ => Some(format!("v\r\n{name}")),
    };
    let loaded = parse(text, Path::new("fuzz.json"), &env, lenient);
    let again = parse(text, Path::new("fuzz.json"), &env, lenient);
    match loaded {
        Err(error) => {
            assert!(again.is_err());
            let message = error.to_string();
            if let Some(at) = error.location() {
                assert!(at.line >= 1 && at.column >= 1);
                assert!(message.starts_with(&format!("fuzz.json:{}:{}: ", at.line, at.column)));
            }
        }
        Ok(config) => {
            assert_eq!(again.ok().as_ref(), Some(&config), "loading is deterministic");
            for (name, entry) in &config.servers {
                assert!(!name.is_empty() && !name.contains("__") && !name.ends_with('_'));
                assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
                match &entry.transport {
                    Transport::Mcp(McpServerConfig::Stdio { command, args, env }) => {
                        assert!(!command.is_empty() && !command.contains('\0'));
                        assert!(args.iter().all(|a| !a.contains('\0')));
                        assert!(env.keys().all(|k| !k.is_empty() && !k.contains(['=', '\0'])));
                        if !entry.disabled {
                            assert!(env.values().all(|v| !v.contains('\0')));
                        }
                    }
                    Transport::Mcp(McpServerConfig::Sse { url, headers } | McpServerConfig::Http { url, headers }) => {
                        assert!(!url.is_empty() && entry.cwd.is_none());
                        if !entry.disabled {
                            assert!(headers.values().all(|v| !v.contains(['\r', '\n', '\0'])));
                        }
                    }
                    // clawai's own tools: no command or URL from the file to check.
                    Transport::Builtin | Transport::InProcess(_) => {}
                }
            }
        }
    }
});
