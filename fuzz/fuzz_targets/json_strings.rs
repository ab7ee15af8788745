//! The string walk of results (`skim::strings`, `JsonString::text`): any bytes must be
//! walked without panicking, and for JSON a parser accepts, the walk must find exactly
//! the parser's strings, each read the same.
#![no_main]

use clawai_protocol::skim;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn collect(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| collect(item, out)),
        Value::Object(members) => members.iter().for_each(|(key, item)| {
            out.push(key.clone());
            collect(item, out);
        }),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let mut walked = Vec::new();
    let closed = skim::strings(data, |string| walked.push(string.text().map(|t| t.into_owned())));
    // Text a parser takes, written back in its order (no repeated keys to lose), is
    // walked to the same strings.
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        let written = serde_json::to_vec(&value).expect("a value encodes");
        let mut walked = Vec::new();
        skim::strings(&written, |string| walked.push(string.text().expect("escapes a parser wrote").into_owned()))
            .expect("strings a parser wrote are closed");
        let mut parsed = Vec::new();
        collect(&value, &mut parsed);
        assert_eq!(walked, parsed);
    }
    let _ = closed;
});
