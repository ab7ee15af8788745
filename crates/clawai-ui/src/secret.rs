//! Randomness from the operating system: the page's token (approval ids:
//! [`clawai_approvals::approval_id`]).

use ring::rand::{SecureRandom, SystemRandom};

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // The system's random source does not fail on Linux once the kernel has booted;
    // without it no token could be trusted, so stopping is the only safe answer.
    SystemRandom::new().fill(&mut bytes).expect("the operating system's random source failed");
    bytes
}

/// 32 random bytes as 64 hex digits: the web page's token.
pub(crate) fn token() -> String {
    random_bytes::<32>().iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two secrets in time that does not depend on where they differ.
pub(crate) fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_ids_have_their_shape_and_differ() {
        let (a, b) = (token(), token());
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(same_secret(a.as_bytes(), a.as_bytes()));
        assert!(!same_secret(a.as_bytes(), b.as_bytes()));
        assert!(!same_secret(b"ab", b"abc"));
    }
}
