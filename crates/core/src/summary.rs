//! What a finished load reports ([`Summary`]), for every job that loads rows: import,
//! generate; and which writer made the file.

use std::time::Instant;

use crate::durability::Durability;

/// The engine that wrote the load (the summary's `engine`): what [`crate::Engine`]
/// asked for, as the plan resolved it, or the cluster's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum EngineUsed {
    /// SQLite's own insert path.
    Sqlite,
    /// The direct page writer (a new file, or a side file SQLite's transfer copies in).
    Direct,
    /// Rows sent to an rqlite cluster in `?transaction` requests ([`crate::rqlite`]).
    Rqlite,
    /// A file built here, then sent whole to a new rqlite cluster (`/boot`).
    #[serde(rename = "rqlite-boot")]
    RqliteBoot,
}

/// The former name of [`EngineUsed`].
#[deprecated(note = "renamed EngineUsed: the writer choice is called the engine everywhere")]
pub type Writer = EngineUsed;

impl EngineUsed {
    /// Its name in summaries: `sqlite`, `direct`, `rqlite`, `rqlite-boot`.
    pub fn name(self) -> &'static str {
        match self {
            EngineUsed::Sqlite => "sqlite",
            EngineUsed::Direct => "direct",
            EngineUsed::Rqlite => "rqlite",
            EngineUsed::RqliteBoot => "rqlite-boot",
        }
    }
}

/// What a finished load promises about its data on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durable {
    /// Nothing was written (parsing or generating only).
    #[default]
    NotWritten,
    /// The file was written under this profile (see [`crate::durability`]).
    Profile(Durability),
    /// Written through the caller's connection, under its settings and transaction.
    Callers,
    /// Committed by an rqlite cluster: each request through Raft, on a majority of
    /// its nodes, under the cluster's own settings.
    Cluster,
}

impl Durable {
    /// How summaries name it: the profile's name, `the caller's`, or `none`.
    pub fn name(self) -> &'static str {
        match self {
            Durable::NotWritten => "none (nothing written)",
            Durable::Profile(d) => d.name(),
            Durable::Callers => "the caller's",
            Durable::Cluster => "the cluster's (each request committed through Raft)",
        }
    }
}

impl serde::Serialize for Durable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What sniffing found for one input.
#[derive(Clone, Debug, serde::Serialize)]
#[non_exhaustive]
pub struct Sniffed {
    /// The input's name.
    pub input: String,
    /// The dialect in words (`';'-separated, header, UTF-8 with BOM`).
    pub described: String,
    /// Whether sniffing changed anything from what the name and options alone give.
    pub changed: bool,
    /// The dialect.
    pub dialect: crate::source::sniff::Dialect,
}

/// The outcome of a successful import.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct Summary {
    /// Rows written.
    pub rows: u64,
    /// Tables written, in order.
    pub tables: Vec<String>,
    /// Seconds from start to commit.
    pub seconds: f64,
    /// Rows per second over that time.
    pub rows_per_second: f64,
    /// Raw bytes read from the inputs.
    pub bytes_read: u64,
    /// Bad records skipped.
    pub rejects: u64,
    /// The first few bad records skipped, as messages.
    pub reject_samples: Vec<String>,
    /// Values stored in another type than their column's (SQLite's flexible typing).
    pub type_mismatches: u64,
    /// The first of them, with its position.
    pub first_type_mismatch: Option<String>,
    /// Size of the database file afterwards (0 with `parse_only`).
    pub db_bytes: u64,
    /// What the load promises about its data on disk.
    pub durability: Durable,
    /// Which writer made the file; `None` when nothing was written.
    pub engine: Option<EngineUsed>,
    /// The direct engine had SQLite check the file (`--verify`) before putting it in place.
    pub verified: bool,
    /// The cap on rows per INSERT statement (0 for the page writer).
    pub rows_per_statement: usize,
    /// The version of the SQLite linked in.
    pub sqlite_version: String,
    /// Things the user should know: renamed columns, a stale temp file removed, …
    pub notes: Vec<String>,
    /// What sniffing found for each input it ran on (see [`crate::source::sniff`]).
    pub sniffed: Vec<Sniffed>,
    /// Columns whose values look like decimal-comma numbers or dates in a locale's
    /// format, loaded as text because no [`crate::source::locale::Locale`] was given.
    pub locale_hints: Vec<crate::source::locale::LocaleHint>,
    /// Each file loaded alone into its table, with its rows: what a cluster booted with
    /// the built file records as finished ([`crate::rqlite::PROGRESS_TABLE`]), so that
    /// running the load again writes nothing, as after a load by statements.
    #[serde(skip)]
    pub(crate) files: Vec<LoadedFile>,
}

/// A file that one load read alone, into `table`. Read by the rqlite target only.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "network"), allow(dead_code))]
pub(crate) struct LoadedFile {
    pub input: String,
    pub table: String,
    pub bytes: Option<u64>,
    pub rows: u64,
}

/// Fills in the timing and SQLite version of a finished run.
pub(crate) fn finish(s: &mut Summary, start: Instant) {
    s.seconds = start.elapsed().as_secs_f64();
    s.rows_per_second = if s.seconds > 0.0 {
        s.rows as f64 / s.seconds
    } else {
        0.0
    };
    s.sqlite_version = rusqlite::version().to_string();
}
