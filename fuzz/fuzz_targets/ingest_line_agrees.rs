//! An ingest line is good only when serde_json reads an object with a usable key (see `liteload_fuzzcheck::parsers`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = liteload_fuzzcheck::parsers::ingest_line_agrees(data) { panic!("{e}"); }
});
