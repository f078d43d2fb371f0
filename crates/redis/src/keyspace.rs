//! Key names. Every key sluice writes has the shape
//!
//! ```text
//! {prefix}{<tag>}:<kind>:<name>
//! ```
//!
//! The `{<tag>}` is a Redis Cluster hash tag: only the part between the first
//! `{` and the next `}` decides the slot, so every key of one tag lives in
//! one slot and a Lua script may touch several of them at once. The prefix
//! therefore must not contain `{` (it would become the hash tag itself);
//! tests give each test its own prefix.

use crate::error::Error;

/// The default prefix of every key sluice writes.
pub const DEFAULT_PREFIX: &str = "sluice:";

/// Where this process's keys live: a prefix shared by all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyspace {
    prefix: String,
}

impl Keyspace {
    /// A keyspace under `prefix`, which must not contain `{` or `}`.
    pub fn new(prefix: impl Into<String>) -> Result<Self, Error> {
        let prefix = prefix.into();
        if prefix.contains(['{', '}']) {
            return Err(Error::Config(format!(
                "key prefix {prefix:?} must not contain '{{' or '}}': it would become the cluster hash tag"
            )));
        }
        Ok(Self { prefix })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of `kind` (e.g. `win`, `bkt`, `lock`) named `name` under `tag`.
    pub fn key(&self, tag: &Tag, kind: &str, name: &str) -> String {
        format!("{}{{{}}}:{kind}:{name}", self.prefix, tag.0)
    }
}

impl Default for Keyspace {
    fn default() -> Self {
        Self { prefix: DEFAULT_PREFIX.to_owned() }
    }
}

/// A hash tag: the scope whose keys must share a slot (a mall, a Google
/// project, a sheet). Built from any string; `{`, `}` and `%` are
/// percent-escaped so that distinct scopes stay distinct tags. The empty
/// scope is `%` (which no other scope gives: every other `%` is followed
/// by two hex digits), because Redis hashes a key with an empty tag `{}`
/// whole, which would scatter the scope's keys over the slots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag(String);

impl Tag {
    pub fn new(scope: &str) -> Self {
        if scope.is_empty() {
            return Self("%".to_owned());
        }
        // '%' first, so the escapes' own '%' are not escaped again.
        Self(scope.replace('%', "%25").replace('{', "%7B").replace('}', "%7D"))
    }

    /// The scope of one Cafe24 mall: its bucket, lock, tokens and
    /// coalescing gates share this tag.
    pub fn for_mall(mall_id: &str) -> Self {
        Self::new(&format!("mall:{mall_id}"))
    }

    /// The scope of one Google Sheet (its FIFO group key): its buffer,
    /// lock, flush gate and header flag share this tag.
    pub fn for_sheet(group_key: &str) -> Self {
        Self::new(&format!("sheet:{group_key}"))
    }

    /// The scope of one Google credential: its tokens and rejected flag.
    pub fn for_credential(credential_id: &str) -> Self {
        Self::new(&format!("gcred:{credential_id}"))
    }

    /// The scope of one Google Cloud project: every credential's write
    /// limit is checked here together with the project's, atomically.
    pub fn for_google_project(project: &str) -> Self {
        Self::new(&format!("gproject:{project}"))
    }

    /// The scope of one event: its trace and ingest dedup gate.
    pub fn for_event(event_id: &str) -> Self {
        Self::new(&format!("ev:{event_id}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// FNV-1a of `text`: a hash fixed by its definition, unlike std's
/// `DefaultHasher`, whose algorithm may change between Rust releases. What
/// picks a shard must give the same answer in every process and every
/// build, or two deployables would look for the same thing in two places.
pub fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stable_hash_is_fnv1a_as_published() {
        // Test vectors of the FNV-1a 64-bit definition.
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(stable_hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn keys_carry_the_tag_as_hash_tag() {
        let ks = Keyspace::default();
        assert_eq!(ks.key(&Tag::new("acme"), "bkt", "admin"), "sluice:{acme}:bkt:admin");
    }

    #[test]
    fn braces_in_scopes_cannot_break_the_hash_tag() {
        assert_eq!(Tag::new("a}b{c").as_str(), "a%7Db%7Bc");
        assert_ne!(Tag::new("%7D"), Tag::new("}"));
    }

    /// Scopes a sender controls (mall, credential, sheet, event ids), built
    /// to break key names.
    const HOSTILE: [&str; 16] =
        ["", "a", "a}{b", "a{b}", "{a}", "}{", "{", "}", "{}", "a/b", "a:b", "a b", ":", "%", "a%7D%7Bb", "a}"];

    #[test]
    fn hostile_scopes_are_distinct_tags_whose_keys_share_one_slot() {
        let ks = Keyspace::new("p:").unwrap();
        let builders: [fn(&str) -> Tag; 6] =
            [Tag::new, Tag::for_mall, Tag::for_sheet, Tag::for_credential, Tag::for_google_project, Tag::for_event];
        let mut all = std::collections::BTreeSet::new();
        for build in builders {
            for scope in HOSTILE {
                let tag = build(scope);
                assert!(all.insert(tag.clone()), "{tag:?} (from {scope:?}) is some other scope's tag too");
                // Names are free text as well: none may move a key out of
                // its tag's slot.
                let keys = [ks.key(&tag, "gate", "order:a}{b"), ks.key(&tag, "trace", ""), ks.key(&tag, "x", "{y}")];
                let slot = sluice_testkit::key_slot(&keys[0]);
                for key in &keys {
                    assert_eq!(sluice_testkit::key_slot(key), slot, "{key:?} left the slot of {tag:?}");
                }
            }
        }
    }

    #[test]
    fn the_empty_scope_still_has_a_tag() {
        let key = Keyspace::default().key(&Tag::new(""), "q", "x");
        assert_eq!(key, "sluice:{%}:q:x");
    }

    #[test]
    fn prefixes_with_braces_are_refused() {
        let err = Keyspace::new("x{y}:").unwrap_err();
        assert!(err.to_string().contains("hash tag"), "{err}");
    }
}
