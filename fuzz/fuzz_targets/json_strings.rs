//! The string walk of results (`skim::strings`, `JsonString::text`) and the walk of an
//! array's elements (`skim::elements`, which finds a result's pictures): any bytes must
//! be walked without panicking, and for JSON a parser accepts, each walk must find
//! exactly what the parser finds.
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
    // An array's elements, as written, are the parser's elements.
    let mut elements = Vec::new();
    let whole = skim::elements(data, |element| elements.push(element));
    if let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(data) {
        assert!(whole, "an array a parser takes is walked whole");
        let read: Vec<Value> = elements.iter().map(|e| serde_json::from_slice(e).expect("an element is JSON")).collect();
        assert_eq!(read, items);
    }
});
