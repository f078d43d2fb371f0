//! Any bytes as a `POST /sheets/rows` body: a row or a refusal naming its
//! field, never a panic; a row is always valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_ingest::sheet_rows::parse;

fuzz_target!(|body: &[u8]| {
    if let Ok(work) = parse(body, 1) {
        assert!(work.row.validate().is_ok(), "accepted an invalid row: {:?}", work.row);
    }
});
