//! Array intrinsics, and `States.JsonMerge`.

use super::{exactly, integer};
use serde_json::Value;

/// Step Functions refuses `States.ArrayRange` results longer than this.
const MAX_RANGE_ITEMS: i64 = 1000;

fn array(value: Value, what: &str) -> Result<Vec<Value>, String> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(format!("{what} must be an array, found {other}")),
    }
}

pub(super) fn partition(args: Vec<Value>) -> Result<Value, String> {
    let [items, size] = exactly(args)?;
    let items = array(items, "the first argument")?;
    let size = integer(&size, "the chunk size")?;
    let size = usize::try_from(size).ok().filter(|s| *s > 0).ok_or("the chunk size must be a positive integer")?;
    Ok(Value::Array(items.chunks(size).map(|chunk| Value::Array(chunk.to_vec())).collect()))
}

pub(super) fn contains(args: Vec<Value>) -> Result<Value, String> {
    let [items, wanted] = exactly(args)?;
    Ok(Value::Bool(array(items, "the first argument")?.contains(&wanted)))
}

/// From the first to the last argument (inclusive when a step lands on
/// it), by the third; at most 1000 items.
pub(super) fn range(args: Vec<Value>) -> Result<Value, String> {
    let [first, last, step] = exactly(args)?;
    let (first, last, step) =
        (integer(&first, "the first value")?, integer(&last, "the last value")?, integer(&step, "the step")?);
    if step == 0 {
        return Err("the step must not be 0".to_owned());
    }
    let count = if (step > 0 && first > last) || (step < 0 && first < last) { 0 } else { (last - first) / step + 1 };
    if count > MAX_RANGE_ITEMS {
        return Err(format!("the range would have {count} items; at most {MAX_RANGE_ITEMS} are allowed"));
    }
    Ok(Value::Array((0..count).map(|i| Value::from(first + i * step)).collect()))
}

pub(super) fn get_item(args: Vec<Value>) -> Result<Value, String> {
    let [items, index] = exactly(args)?;
    let mut items = array(items, "the first argument")?;
    let index = integer(&index, "the index")?;
    let len = items.len();
    match usize::try_from(index).ok().filter(|i| *i < len) {
        Some(i) => Ok(items.swap_remove(i)),
        None => Err(format!("the index {index} is out of bounds for an array of {len} item(s)")),
    }
}

pub(super) fn length(args: Vec<Value>) -> Result<Value, String> {
    let [items] = exactly(args)?;
    Ok(Value::from(array(items, "the argument")?.len()))
}

/// Keeps the first of each group of equal items, in order.
pub(super) fn unique(args: Vec<Value>) -> Result<Value, String> {
    let [items] = exactly(args)?;
    let mut unique: Vec<Value> = Vec::new();
    for item in array(items, "the argument")? {
        if !unique.contains(&item) {
            unique.push(item);
        }
    }
    Ok(Value::Array(unique))
}

/// A shallow merge: the second object's fields replace the first's.
pub(super) fn json_merge(args: Vec<Value>) -> Result<Value, String> {
    let [first, second, deep] = exactly(args)?;
    if deep != Value::Bool(false) {
        return Err("the third argument must be false: only shallow merging is supported".to_owned());
    }
    match (first, second) {
        (Value::Object(mut merged), Value::Object(second)) => {
            merged.extend(second);
            Ok(Value::Object(merged))
        }
        (first, second) => Err(format!("both arguments must be objects, found {first} and {second}")),
    }
}
