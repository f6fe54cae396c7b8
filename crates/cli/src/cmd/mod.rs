//! One module per command.

pub mod bench;
pub mod generate;
pub mod import;
pub mod info;
pub mod ingest;
pub mod kv;
pub mod rqlite;
pub mod sniff;

/// A flag value that parsed but makes no sense (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
