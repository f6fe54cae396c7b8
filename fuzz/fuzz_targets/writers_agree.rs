//! Random rows through the page writer and through SQLite must make the same database
//! (see `liteload_fuzzcheck::writers_agree`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = liteload_fuzzcheck::writers_agree(data) {
        panic!("{e}");
    }
});
