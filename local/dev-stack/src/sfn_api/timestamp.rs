//! Timestamps as AWS JSON 1.0 carries them: seconds since the epoch, a
//! JSON number with the milliseconds as its fraction.

use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

pub(super) fn epoch_seconds(time: SystemTime) -> Value {
    let millis = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    json!(millis as f64 / 1000.0)
}
