//! The elements of an array, skimmed (the results stage finds a result's pictures with
//! them).

use crate::cursor::Cursor;

/// Calls `f` with each element of an array, as written, in order; false when the input
/// is not one well-formed array (the elements before the fault were given).
pub fn elements<'a>(array: &'a [u8], mut f: impl FnMut(&'a [u8])) -> bool {
    let mut c = Cursor::new(array);
    c.ws();
    if c.expect(b'[').is_none() {
        return false;
    }
    c.ws();
    if c.peek() == Some(b']') {
        c.i += 1;
        return c.only_ws_left();
    }
    loop {
        c.ws();
        let start = c.i;
        if c.value().is_none() {
            return false;
        }
        f(&c.b[start..c.i]);
        c.ws();
        match c.next() {
            Some(b',') => continue,
            Some(b']') => return c.only_ws_left(),
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_elements() {
        let mut found = Vec::new();
        assert!(elements(br#" [ {"a":[1,"]"]}, "x" ,3,[] ] "#, |e| found.push(e.to_vec())));
        assert_eq!(found, [br#"{"a":[1,"]"]}"#.to_vec(), br#""x""#.to_vec(), b"3".to_vec(), b"[]".to_vec()]);
        assert!(elements(b"[]", |_| panic!("no element")));
        for broken in [&b"[1,"[..], b"[1 2]", b"{}", b"[1]x", b"[\"a]"] {
            assert!(!elements(broken, |_| {}), "{}", String::from_utf8_lossy(broken));
        }
    }
}
