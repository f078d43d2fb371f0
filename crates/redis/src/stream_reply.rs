//! Stream entries read straight out of a reply, moving each field's bytes
//! into its `String`. redis-rs's `StreamReadReply` clones the whole reply
//! before converting it (to try a second format), then nests it in hash
//! maps of `Value`s we copied again: a 500-entry batch of 1 KiB snapshots
//! went through three copies and ~10,000 allocations, most of the drain's
//! Redis-side CPU.
//!
//! Both reply shapes of RESP2 and RESP3: streams as `[[key, entries], …]`
//! or `{key: entries}`, an entry as `[id, [field, value, …]]` (or a map),
//! a nil for an entry deleted while pending (it comes back with no fields,
//! as before). A field whose value is not UTF-8 text is left out.

use crate::snapshot_store::StoredEntry;
use redis::{FromRedisValue, ParsingError, Value};

/// The entries of an XREADGROUP reply (every stream's, in order).
#[derive(Debug, Default)]
pub(crate) struct ReadEntries(pub Vec<StoredEntry>);

impl FromRedisValue for ReadEntries {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let streams = match v {
            Value::Nil => return Ok(Self::default()),
            Value::Array(streams) => streams.into_iter().map(pair).collect::<Result<Vec<_>, _>>()?,
            Value::Map(streams) => streams,
            other => return Err(format!("a stream read answered {other:?}").into()),
        };
        let mut out = Vec::new();
        for (_, entries) in streams {
            out.extend(entries_of(entries)?);
        }
        Ok(Self(out))
    }
}

/// The entries an XAUTOCLAIM took: `[next id, entries, deleted ids]`.
#[derive(Debug, Default)]
pub(crate) struct ClaimedEntries(pub Vec<StoredEntry>);

impl FromRedisValue for ClaimedEntries {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let Value::Array(parts) = v else { return Err(format!("XAUTOCLAIM answered {v:?}").into()) };
        let entries = parts.into_iter().nth(1).unwrap_or(Value::Nil);
        Ok(Self(entries_of(entries)?))
    }
}

fn pair(v: Value) -> Result<(Value, Value), ParsingError> {
    match v {
        Value::Array(pair) if pair.len() == 2 => {
            let mut pair = pair.into_iter();
            Ok((pair.next().unwrap_or(Value::Nil), pair.next().unwrap_or(Value::Nil)))
        }
        other => Err(format!("expected a [key, value] pair, got {other:?}").into()),
    }
}

/// A list of entries; a nil in it (Redis 6's XAUTOCLAIM of a deleted
/// entry) is skipped.
fn entries_of(v: Value) -> Result<Vec<StoredEntry>, ParsingError> {
    match v {
        Value::Nil => Ok(Vec::new()),
        Value::Array(entries) => {
            entries.into_iter().filter(|e| !matches!(e, Value::Nil)).map(entry).collect::<Result<Vec<_>, _>>()
        }
        other => Err(format!("expected a list of stream entries, got {other:?}").into()),
    }
}

fn entry(v: Value) -> Result<StoredEntry, ParsingError> {
    let (id, fields) = pair(v)?;
    let id = text(id).ok_or("a stream entry without an id")?;
    let pairs: Vec<(Value, Value)> = match fields {
        Value::Nil => Vec::new(),
        Value::Map(pairs) => pairs,
        Value::Array(flat) => {
            let mut flat = flat.into_iter();
            std::iter::from_fn(|| Some((flat.next()?, flat.next()?))).collect()
        }
        other => return Err(format!("a stream entry's fields are {other:?}").into()),
    };
    // Sized once: collecting from a filter grows the map two or three
    // times over an entry's fields.
    let mut fields = std::collections::HashMap::with_capacity(pairs.len());
    fields.extend(pairs.into_iter().filter_map(|(name, value)| Some((text(name)?, text(value)?))));
    Ok(StoredEntry { id, fields })
}

/// The value's text, its bytes moved, not copied.
fn text(v: Value) -> Option<String> {
    match v {
        Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
        Value::SimpleString(text) | Value::VerbatimString { text, .. } => Some(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn entry_value(id: &str, fields: &[(&str, &str)]) -> Value {
        let flat = fields.iter().flat_map(|(k, v)| [bulk(k), bulk(v)]).collect();
        Value::Array(vec![bulk(id), Value::Array(flat)])
    }

    #[test]
    fn both_protocols_shapes_read_as_the_same_entries() {
        let entries = Value::Array(vec![
            entry_value("1-0", &[("mall_id", "m1"), ("body", "{}")]),
            Value::Array(vec![bulk("2-0"), Value::Nil]),
        ]);
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("stream"), entries.clone()])]);
        let resp3 = Value::Map(vec![(bulk("stream"), entries)]);
        for reply in [resp2, resp3] {
            let ReadEntries(read) = ReadEntries::from_redis_value(reply).unwrap();
            assert_eq!(read.len(), 2);
            assert_eq!((read[0].id.as_str(), read[0].fields["mall_id"].as_str()), ("1-0", "m1"));
            assert!(read[1].fields.is_empty(), "deleted while pending: no fields");
        }
        assert!(ReadEntries::from_redis_value(Value::Nil).unwrap().0.is_empty());
    }

    #[test]
    fn a_claim_reads_its_entries_and_skips_nils() {
        let reply = Value::Array(vec![
            bulk("0-0"),
            Value::Array(vec![entry_value("3-0", &[("a", "b")]), Value::Nil]),
            Value::Array(vec![bulk("4-0")]),
        ]);
        let ClaimedEntries(claimed) = ClaimedEntries::from_redis_value(reply).unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].fields["a"], "b");
        let binary = Value::Array(vec![bulk("5-0"), Value::Array(vec![bulk("a"), Value::BulkString(vec![0xff])])]);
        assert!(entry(binary).unwrap().fields.is_empty(), "a value that is not text is left out");
    }
}
