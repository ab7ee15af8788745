//! The message reader: framing, the strict envelope (and its shortcut for the usual
//! decided request), the skim and the strict parse must never panic, and must agree with
//! each other on what a message is.
#![no_main]

use std::io::Cursor;

use clawai_protocol::envelope::{Envelope, EnvelopeError, Params};
use clawai_protocol::framing::{Frame, LineReader};
use clawai_protocol::{quick, skim, strict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = LineReader::with_capacity(13, Cursor::new(data), 512);
    // Lines lent from the read buffer and lines assembled across reads, joined, are the
    // input again (when none was over the limit).
    let mut joined = Vec::new();
    let mut cut = false;
    while let Ok(Some(frame)) = reader.next_frame() {
        let line = match frame {
            Frame::Line(line) => line,
            Frame::Oversize { prefix, length } => {
                assert!(length > 512 && prefix.len() <= length);
                // A reply carries the id as written: it must be one JSON string or number.
                if let Some(id) = skim::leading_id(&prefix) {
                    assert!(serde_json::from_slice::<serde::de::IgnoredAny>(id).is_ok());
                }
                cut = true;
                continue;
            }
        };
        assert!(!line.is_empty() && line.len() <= 513 && !line[..line.len() - 1].contains(&b'\n'));
        joined.extend_from_slice(&line);
        let envelope = Envelope::parse(&line);
        let skimmed = skim::skim(&line);
        let strictly = strict::parse(&line);
        if let (Ok(e), Some(s)) = (&envelope, &skimmed) {
            // When both readers accept a message they must agree on its method and id.
            assert_eq!(e.method.as_deref(), s.method);
            assert_eq!(e.id.map(|i| i.get().as_bytes()), s.id);
        }
        // Reading the params in the same pass sees what reading them afterwards sees.
        match (&envelope, Envelope::parse_deciding(&line, |_| true)) {
            (Ok(e), Ok(d)) => {
                assert_eq!((e.kind, e.id_text(), e.method.as_deref()), (d.kind, d.id_text(), d.method.as_deref()));
                match (e.params, d.params) {
                    (None, None) => {}
                    (Some(raw), Some(Params::Decoded(decoded))) => {
                        assert_eq!(strict::parse(raw.get().as_bytes()).ok(), decoded.ok())
                    }
                    // `params` before `method`, or no method: left as written.
                    (Some(raw), Some(Params::Raw(same))) => assert_eq!(raw.get(), same.get()),
                    other => panic!("{other:?}"),
                }
            }
            // The same-pass reading refuses more only for what the strict parse refuses,
            // and for `params` nested one level short of serde_json's limit of 128 (the
            // message's own object counts as one level there).
            (Ok(e), Err(refused)) => assert!(
                e.params.is_some_and(|raw| strict::parse(raw.get().as_bytes()).is_err())
                    || matches!(&refused, EnvelopeError::Parse(why) if why.contains("recursion limit")),
                "{refused:?}"
            ),
            (Err(_), Ok(_)) => panic!("the same-pass reading accepted a message the envelope refuses"),
            (Err(_), Err(_)) => {}
        }
        // The shortcut for the usual decided request reads what the full reader reads.
        let decides = |m: &str| m.len() % 2 == 0;
        if let Some(quick) = quick::read_decided(&line, &decides) {
            let full = Envelope::parse_deciding_in_full(&line, decides).expect("the full reader accepts it too");
            assert_eq!(
                (quick.kind, quick.id_text(), quick.method.as_deref()),
                (full.kind, full.id_text(), full.method.as_deref())
            );
            match (quick.params, full.params) {
                (None, None) => {}
                (Some(Params::Decoded(Ok(q))), Some(Params::Decoded(Ok(f)))) => assert_eq!(q, f),
                other => panic!("{other:?}"),
            }
        }
        if let Some(s) = &skimmed
            && let Some(result) = s.result
        {
            // The result's members read during the skim are those a second pass reads.
            let [is_error, result_type] = skim::members_named(result, [&b"isError"[..], b"resultType"]);
            assert_eq!((s.result_is_error, s.result_type), (is_error, result_type));
        }
        // What a refused message still says of itself: an id a reply can carry, and the
        // id and shape the envelope reads when it accepts the message.
        let salvaged = skim::salvage(&line);
        if let Some(id) = salvaged.id {
            assert!(serde_json::from_slice::<serde::de::IgnoredAny>(id).is_ok());
        }
        if let Ok(e) = &envelope {
            // The salvage also reads names with blanks around them, so it may see more
            // members (and then withhold the id), never fewer.
            if salvaged.id.is_some() {
                assert_eq!(salvaged.id, e.id.map(|i| i.get().as_bytes()));
            }
            assert!(if e.method.is_some() { salvaged.request } else { salvaged.response });
        }
        if let (Ok(value), Ok(e)) = (&strictly, &envelope) {
            assert_eq!(value.get("method").and_then(|m| m.as_str()), e.method.as_deref());
        }
    }
    if !cut {
        assert_eq!(joined, data);
    }
});
