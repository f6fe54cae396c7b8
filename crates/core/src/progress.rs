//! What a running load shows: [`Progress`] (live counters, the stage, the stop switch),
//! shared by the job, its source's threads and its writer, for every job that loads rows.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

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
