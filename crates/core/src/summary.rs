//! What a running load shows ([`Progress`]: live counters, the stop switch) and what a
//! finished one reports ([`Summary`]), for every job that loads rows: import, generate.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::durability::Durability;
use crate::error::{Error, Result};

/// Which writer made the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Writer {
    /// SQLite's own insert path.
    Sqlite,
    /// The direct page writer.
    Direct,
    /// Rows sent to an rqlite cluster in `?transaction` requests ([`crate::rqlite`]).
    Rqlite,
    /// A file built here, then sent whole to a new rqlite cluster (`/boot`).
    #[serde(rename = "rqlite-boot")]
    RqliteBoot,
}

impl Writer {
    /// Its name in summaries: `sqlite`, `direct`, `rqlite`, `rqlite-boot`.
    pub fn name(self) -> &'static str {
        match self {
            Writer::Sqlite => "sqlite",
            Writer::Direct => "direct",
            Writer::Rqlite => "rqlite",
            Writer::RqliteBoot => "rqlite-boot",
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

/// What an import is doing now, for progress displays. More stages may be added (match
/// with a wildcard arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
#[non_exhaustive]
pub enum Stage {
    /// Reading and writing rows.
    Loading = 0,
    /// Building indexes.
    Indexing = 1,
    /// Committing (and, for a new file, syncing and moving it into place).
    Committing = 2,
}

/// Live counters of a running load, safe to read from another thread while it runs
/// (they only grow; `Relaxed` loads are enough for a display), and its stop switch.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use liteload::{import, ErrorKind, ImportOptions, Input, Progress};
/// let dir = tempfile::tempdir()?;
/// let csv = dir.path().join("t.csv");
/// std::fs::write(&csv, "a\n1\n")?;
/// let db = dir.path().join("t.db");
/// let progress = Progress::default();
/// progress.cancel(); // from any thread, at any time: here before the load starts
/// let err = import(&db, &[Input::Path(csv)], &ImportOptions::default(), &progress).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Interrupted));
/// assert!(!db.exists()); // the target is as it was
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct Progress {
    /// Raw bytes read from the inputs (compressed bytes for `.gz`).
    pub bytes_read: Arc<AtomicU64>,
    /// Total input size, when every input is a regular file (else 0).
    pub bytes_total: AtomicU64,
    /// Rows to make in all, when known in advance (`generate`; else 0).
    pub rows_total: AtomicU64,
    /// Rows written so far.
    pub rows: AtomicU64,
    stage: AtomicU8,
    /// Shared with the load's readers, which stop at their next read once it is set.
    cancelled: Arc<AtomicBool>,
    /// The part being read, for a load of several named parts (see [`Progress::part`]).
    part: Arc<std::sync::Mutex<String>>,
}

impl Progress {
    /// Asks the load using these counters to stop. It stops at its next batch (or index,
    /// or page group), or within a few tens of milliseconds inside one of SQLite's
    /// statements on a connection of its own (a side file moved in, a merge, an index
    /// built; a caller's connection is not interrupted), and returns
    /// [`crate::ErrorKind::Interrupted`], leaving the target as it was before the load; a
    /// load that already committed is not undone.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`Progress::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Makes these counters ready for another load: the counts back to 0, the stage
    /// back to [`Stage::Loading`], and a cancel taken back. Until then, after a cancel,
    /// every load given these counters stops at once, and [`Progress::stage`] still says
    /// where the cancelled one stopped. Call it between loads, not during one.
    pub fn reset(&self) {
        self.bytes_read.store(0, Ordering::Relaxed);
        self.bytes_total.store(0, Ordering::Relaxed);
        self.rows_total.store(0, Ordering::Relaxed);
        self.rows.store(0, Ordering::Relaxed);
        self.set_stage(Stage::Loading);
        self.cancelled.store(false, Ordering::Relaxed);
        self.part.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// What is being read now, in a load of several named parts: the table a copy from
    /// a database reads (`public.orders`); empty otherwise.
    pub fn part(&self) -> String {
        self.part.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Where a reader says which part is being read now (see [`Progress::part`]).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn part_handle(&self) -> Arc<std::sync::Mutex<String>> {
        self.part.clone()
    }

    /// The stop switch, for readers that check it on each read.
    pub(crate) fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancelled.clone()
    }

    /// An error if the load was asked to stop.
    pub(crate) fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::interrupted());
        }
        Ok(())
    }

    /// What the load is doing now.
    pub fn stage(&self) -> Stage {
        match self.stage.load(Ordering::Relaxed) {
            1 => Stage::Indexing,
            2 => Stage::Committing,
            _ => Stage::Loading,
        }
    }

    pub(crate) fn set_stage(&self, s: Stage) {
        self.stage.store(s as u8, Ordering::Relaxed);
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
    pub engine: Option<Writer>,
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
