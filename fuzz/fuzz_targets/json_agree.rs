//! NDJSON and JSON arrays keep exactly the objects serde_json reads (see `liteload_fuzzcheck::parsers`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = liteload_fuzzcheck::parsers::json_agree(data) { panic!("{e}"); }
});
