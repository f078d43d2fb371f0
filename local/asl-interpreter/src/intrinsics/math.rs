//! `States.MathAdd` and `States.MathRandom`.

use super::integer;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

pub(super) fn add(args: Vec<Value>) -> Result<Value, String> {
    let mut sum: i64 = 0;
    for (i, value) in args.iter().enumerate() {
        sum = sum.checked_add(integer(value, &format!("argument {}", i + 1))?).ok_or("the sum overflows")?;
    }
    Ok(Value::from(sum))
}

/// A random integer from the start (inclusive) to the end (exclusive);
/// with a seed, the same one every time.
pub(super) fn random(args: Vec<Value>) -> Result<Value, String> {
    let start = integer(&args[0], "the start")?;
    let end = integer(&args[1], "the end")?;
    if start >= end {
        return Err(format!("the start ({start}) must be less than the end ({end})"));
    }
    let number = match args.get(2) {
        Some(seed) => StdRng::seed_from_u64(integer(seed, "the seed")? as u64).random_range(start..end),
        None => rand::rng().random_range(start..end),
    };
    Ok(Value::from(number))
}
