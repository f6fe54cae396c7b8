//! What every job that writes rows into a file through SQLite's path does around its
//! rows, in one place (import and generate): open the target under its durability
//! profile, run the load in its transaction, then commit (unless cancelled) or abort,
//! and fill in the summary. A failure or a cancel leaves the target as it was.

use std::path::Path;
use std::time::Instant;

use rusqlite::Connection;

use crate::cancel::CancelWatch;
use crate::durability::{self, Durability, FileSettings};
use crate::error::Result;
use crate::progress::{Progress, Stage};
use crate::summary::{self, Durable, EngineUsed, Summary};

/// Runs `load` through SQLite's insert path on the database at `db`, in the one
/// transaction of `durability`'s profile, and commits it; `load` fills in what it wrote
/// (rows, tables, …) and this the rest (profile, writer, notes, size, timing).
pub(crate) fn through_sqlite(
    db: &Path,
    durability: Option<Durability>,
    file: FileSettings,
    progress: &Progress,
    start: Instant,
    mut summary: Summary,
    load: impl FnOnce(&Connection, &mut Summary) -> Result<()>,
) -> Result<Summary> {
    let target = durability::open(db, durability, file)?;
    let watch = CancelWatch::new(&target.conn, progress);
    let loaded = load(&target.conn, &mut summary)
        .and_then(|()| progress.check())
        // SQLite reads back the schema the load leaves before it commits.
        .and_then(|()| crate::names::check_schema(&target.conn));
    drop(watch);
    if let Err(e) = loaded {
        target.abort();
        return Err(e);
    }
    summary.durability = Durable::Profile(target.durability);
    summary.engine = Some(EngineUsed::Sqlite);
    summary.notes.splice(0..0, target.notes.clone());
    progress.set_stage(Stage::Committing);
    target.commit()?;
    Ok(finish_file(summary, db, start))
}

/// The file's size and the timing.
fn finish_file(mut summary: Summary, db: &Path, start: Instant) -> Summary {
    summary.db_bytes = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    summary::finish(&mut summary, start);
    summary
}
