//! Redis Cluster's key-to-slot function: CRC16 (XMODEM: polynomial 0x1021,
//! initial value 0) of the key's hash tag modulo 16384. The hash tag is the
//! part between the first `{` and the next `}` when that part is non-empty;
//! otherwise the whole key.

/// The cluster slot `key` hashes to.
pub fn key_slot(key: &str) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(hash_tag(key.as_bytes())) % 16384
}

fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_cluster_spec_examples() {
        // The specification's test vector: CRC16 of "123456789" is 0x31C3.
        assert_eq!(key_slot("123456789"), 0x31C3);
        assert_eq!(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
        assert_eq!(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
    }
}
