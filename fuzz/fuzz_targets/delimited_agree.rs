//! The sequential reader, the parallel reader and the reference read delimited text alike (see `liteload_fuzzcheck::parsers`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = liteload_fuzzcheck::parsers::delimited_agree(data).map_err(|e| panic!("{e}"));
});
