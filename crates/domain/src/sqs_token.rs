//! Tokens that SQS accepts as `MessageGroupId` and `MessageDeduplicationId`.
//!
//! SQS allows 1 to 128 characters, each printable ASCII from `!` to `~`.
//! Ids built by pasting fields together (`{shop}_{type}_None`, say) lose
//! events: different events produce the same id and SQS silently drops the
//! later ones as duplicates. The encoding here is
//! *injective* by construction:
//!
//! - the readable form is `kind:part:part…`, where each part keeps
//!   `[A-Za-z0-9._-]` and percent-escapes every other UTF-8 byte (including
//!   `:` and `%`), so the parts can be read back unambiguously;
//! - when the readable form would exceed 128 characters, the token is
//!   `kind#` followed by the SHA-256 of the readable form in hex. `#` never
//!   occurs in a readable form, so the two shapes cannot collide with each
//!   other, and SHA-256 collisions are not a practical concern.
//!
//! The same input always gives the same token (no randomness, no clock), so a
//! redelivered event carries the id of its first delivery.

use sha2::{Digest, Sha256};

/// The longest group or deduplication id SQS accepts.
pub const MAX_LEN: usize = 128;

/// Whether `s` is an id SQS accepts: 1..=128 characters from `!` to `~`.
pub fn is_valid(s: &str) -> bool {
    (1..=MAX_LEN).contains(&s.len()) && s.bytes().all(|b| (b'!'..=b'~').contains(&b))
}

/// A string offered as a group or deduplication id that SQS would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} {shown:?} is not a valid SQS id: it must be 1 to {MAX_LEN} characters, each printable ASCII from '!' to '~'"
)]
pub struct InvalidToken {
    /// What the string was offered as (e.g. `MessageGroupId`).
    pub what: &'static str,
    /// The offending string, cut to 140 characters so an error stays readable.
    pub shown: String,
}

/// Checks `s` with [`is_valid`], naming it `what` in the error.
pub fn check(what: &'static str, s: &str) -> Result<(), InvalidToken> {
    if is_valid(s) {
        return Ok(());
    }
    Err(InvalidToken { what, shown: s.chars().take(140).collect() })
}

/// Encodes a kind (a short lowercase tag saying what is identified) and the
/// identity's parts into an SQS-valid token. Injective over `(kind, parts)`.
pub fn encode(kind: &str, parts: &[&str]) -> String {
    debug_assert!(
        !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_lowercase()),
        "kind must be lowercase ASCII letters"
    );
    let mut readable = String::with_capacity(kind.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>());
    readable.push_str(kind);
    for part in parts {
        readable.push(':');
        escape_into(part, &mut readable);
    }
    if readable.len() <= MAX_LEN {
        return readable;
    }
    let digest = Sha256::digest(readable.as_bytes());
    format!("{kind}#{}", hex::encode(digest))
}

/// The kind and parts of a readable token (`encode`'s first shape); `None`
/// for a hashed one, or text that is no token.
pub fn decode(token: &str) -> Option<(String, Vec<String>)> {
    let mut pieces = token.split(':');
    let kind = pieces.next().filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase()))?;
    let parts = pieces.map(unescape).collect::<Option<Vec<_>>>()?;
    Some((kind.to_owned(), parts))
}

fn unescape(part: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(part.len());
    let mut rest = part.bytes();
    while let Some(b) = rest.next() {
        if b == b'%' {
            let hex = [rest.next()?, rest.next()?];
            bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            bytes.push(b);
        }
    }
    String::from_utf8(bytes).ok()
}

fn escape_into(part: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0x0f)] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_identities_stay_readable() {
        assert_eq!(encode("s", &["acme", "90001"]), "s:acme:90001");
        assert_eq!(encode("s", &["a:b", "c"]), "s:a%3Ab:c");
        assert_eq!(encode("s", &["a", "b:c"]), "s:a:b%3Ac");
        assert_eq!(encode("s", &["100%", "ü"]), "s:100%25:%C3%BC");
    }

    #[test]
    fn readable_tokens_decode_to_their_parts() {
        for parts in [vec!["acme", "90001"], vec!["a:b", "c"], vec!["100%", "ü", ""]] {
            let token = encode("r", &parts);
            assert_eq!(decode(&token), Some(("r".to_owned(), parts.iter().map(|p| (*p).to_owned()).collect())));
        }
        assert_eq!(decode(&encode("r", &["x".repeat(200).as_str()])), None, "a hashed token");
        assert_eq!(decode("r:%zz"), None);
        assert_eq!(decode("Row:x"), None);
    }

    #[test]
    fn long_identities_are_hashed_and_still_valid() {
        let long = "x".repeat(200);
        let token = encode("r", &[&long]);
        assert!(token.starts_with("r#"));
        assert_eq!(token.len(), 2 + 64);
        assert!(is_valid(&token));
    }

    #[test]
    fn validity_rule_matches_sqs() {
        assert!(is_valid("a"));
        assert!(is_valid(&"~".repeat(128)));
        assert!(!is_valid(""));
        assert!(!is_valid(&"a".repeat(129)));
        assert!(!is_valid("has space"));
        assert!(!is_valid("ümlaut"));
    }
}
