//! Which URIs a held resource template stands for (`clawai_pins::template::fits`): any
//! template and URI are matched without panicking, and a URI made from the template by
//! putting any text in place of each `{expression}` always fits it (a read of it is
//! refused while the template is held).
#![no_main]

use clawai_pins::template::fits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (template, value) = text.split_once('\n').unwrap_or((text, ""));
    let _ = fits(template, value);
    // Expand every closed expression with `value`, as a server would substitute it.
    let mut expanded = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        expanded.push_str(&rest[..open]);
        expanded.push_str(value);
        rest = &rest[open + close + 1..];
    }
    expanded.push_str(rest);
    assert!(fits(template, &expanded), "{template:?} with {value:?} gives {expanded:?}, which must fit");
});
