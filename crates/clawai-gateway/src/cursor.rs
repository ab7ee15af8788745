//! Opaque cursors for the lists the gateway merges.
//!
//! A cursor says which list, which version of it (a digest of what this session saw
//! when the first page was served) and where the next page starts, sealed with a key
//! of this process: a forged cursor, one from another run, or one issued before the
//! list changed is refused with -32602, and the client lists again from the start.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;

/// Seals and opens cursors with a key made at start.
pub struct Cursors {
    key: hmac::Key,
}

/// Why a cursor is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum BadCursor {
    /// Not one of ours (made up, altered, from another list or another run).
    Forged,
    /// Ours, but the list changed since: list again from the start.
    Stale,
}

impl Cursors {
    /// Cursors sealed with a new random key.
    pub fn new() -> Cursors {
        use clawai_store::Keyring as _;
        Cursors::with_key(clawai_store::LocalKeyring::new().key(clawai_store::KeyPurpose::Cursors))
    }

    /// Cursors sealed with `key` (from the keyring in use).
    pub fn with_key(key: [u8; 32]) -> Cursors {
        Cursors { key: hmac::Key::new(hmac::HMAC_SHA256, &key) }
    }

    /// The cursor of the page of list `kind` that starts at `offset`, for the list whose
    /// version is `version`.
    pub fn seal(&self, kind: &str, version: u64, offset: usize) -> String {
        let body = format!("{kind}:{version:x}:{offset}");
        let tag = hmac::sign(&self.key, body.as_bytes());
        let mut bytes = body.into_bytes();
        bytes.push(b':');
        bytes.extend_from_slice(&tag.as_ref()[..16]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Where the page a cursor names starts, if it is ours, for list `kind`, and the
    /// list is still at `version`.
    pub fn open(&self, cursor: &str, kind: &str, version: u64) -> Result<usize, BadCursor> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| BadCursor::Forged)?;
        if bytes.len() < 17 {
            return Err(BadCursor::Forged);
        }
        let (body, tag) = bytes.split_at(bytes.len() - 16);
        let body = body.strip_suffix(b":").ok_or(BadCursor::Forged)?;
        let expected = hmac::sign(&self.key, body);
        // Compared in constant time: how much of a guess matched is not told.
        let differences = expected.as_ref()[..16].iter().zip(tag).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if differences != 0 {
            return Err(BadCursor::Forged);
        }
        let body = std::str::from_utf8(body).map_err(|_| BadCursor::Forged)?;
        let mut parts = body.split(':');
        let (Some(sealed_kind), Some(sealed_version), Some(offset), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(BadCursor::Forged);
        };
        if sealed_kind != kind {
            return Err(BadCursor::Forged);
        }
        let offset = offset.parse().map_err(|_| BadCursor::Forged)?;
        if u64::from_str_radix(sealed_version, 16).map_err(|_| BadCursor::Forged)? != version {
            return Err(BadCursor::Stale);
        }
        Ok(offset)
    }
}

impl Default for Cursors {
    fn default() -> Self {
        Cursors::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_cursor_opens_at_its_offset() {
        let cursors = Cursors::new();
        let cursor = cursors.seal("tools", 7, 100);
        assert_eq!(cursors.open(&cursor, "tools", 7), Ok(100));
    }

    #[test]
    fn forged_altered_foreign_and_stale_cursors_are_refused() {
        let cursors = Cursors::new();
        let cursor = cursors.seal("tools", 7, 100);
        assert_eq!(cursors.open("100", "tools", 7), Err(BadCursor::Forged));
        assert_eq!(cursors.open("", "tools", 7), Err(BadCursor::Forged));
        let mut altered = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        altered[8] ^= 1;
        assert_eq!(cursors.open(&URL_SAFE_NO_PAD.encode(altered), "tools", 7), Err(BadCursor::Forged));
        assert_eq!(cursors.open(&cursor, "prompts", 7), Err(BadCursor::Forged));
        assert_eq!(Cursors::new().open(&cursor, "tools", 7), Err(BadCursor::Forged));
        assert_eq!(cursors.open(&cursor, "tools", 8), Err(BadCursor::Stale));
    }
}
