//! `States.Base64Encode`, `States.Base64Decode` and `States.Hash`.

use super::{exactly, string};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use sha2::Digest;

/// Step Functions' limit on the input of these functions, in characters.
const MAX_CHARS: usize = 10_000;

const ALGORITHMS: [&str; 5] = ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"];

pub(super) fn is_hash_algorithm(name: &str) -> bool {
    ALGORITHMS.contains(&name)
}

fn limited<'v>(value: &'v Value, what: &str) -> Result<&'v str, String> {
    let text = string(value, what)?;
    let chars = text.chars().count();
    if chars > MAX_CHARS {
        return Err(format!("{what} has {chars} characters; at most {MAX_CHARS} are allowed"));
    }
    Ok(text)
}

pub(super) fn base64_encode(args: Vec<Value>) -> Result<Value, String> {
    let [data] = exactly(args)?;
    Ok(Value::String(STANDARD.encode(limited(&data, "the data")?)))
}

pub(super) fn base64_decode(args: Vec<Value>) -> Result<Value, String> {
    let [data] = exactly(args)?;
    let bytes = STANDARD.decode(limited(&data, "the data")?).map_err(|e| format!("not valid Base64: {e}"))?;
    String::from_utf8(bytes).map(Value::String).map_err(|_| "the decoded data is not UTF-8 text".to_owned())
}

/// The hex digest of a string (any other value is hashed as its JSON text).
pub(super) fn hash(args: Vec<Value>) -> Result<Value, String> {
    let [data, algorithm] = exactly(args)?;
    let text = match &data {
        Value::String(_) => limited(&data, "the data")?.to_owned(),
        other => other.to_string(),
    };
    let bytes = text.as_bytes();
    let digest = match string(&algorithm, "the algorithm")? {
        "MD5" => hex::encode(md5::Md5::digest(bytes)),
        "SHA-1" => hex::encode(sha1::Sha1::digest(bytes)),
        "SHA-256" => hex::encode(sha2::Sha256::digest(bytes)),
        "SHA-384" => hex::encode(sha2::Sha384::digest(bytes)),
        "SHA-512" => hex::encode(sha2::Sha512::digest(bytes)),
        other => return Err(format!("{other:?} is not a hash algorithm ({})", ALGORITHMS.join(", "))),
    };
    Ok(Value::String(digest))
}
