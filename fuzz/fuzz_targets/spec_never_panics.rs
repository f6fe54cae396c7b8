//! Any generate column spec parses or is refused, never panics (see `liteload_fuzzcheck::parsers`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = liteload_fuzzcheck::parsers::spec_never_panics(data) { panic!("{e}"); }
});
