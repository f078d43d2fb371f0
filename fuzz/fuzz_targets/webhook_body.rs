//! Any bytes as a Cafe24 webhook body: parsed to work or refused, never a
//! panic; work is always a valid event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_ingest::TopicTable;
use sluice_ingest::webhook::parse;

fuzz_target!(|body: &[u8]| {
    let headers = axum::http::HeaderMap::new();
    if let Ok(work) = parse(&headers, body, &TopicTable::default(), 1) {
        assert!(work.event.validate().is_ok(), "accepted an invalid event: {:?}", work.event);
    }
});
