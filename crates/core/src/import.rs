//! `import`: plan, then inputs → typed batches (parser threads) → one sink (the calling
//! thread).
//!
//! The plan ([`crate::plan`]) checks the options, reads how each input is read and which
//! table it goes to, and chooses the writer. Then, per load: open the input and read its
//! sample (columns and types), let the sink create or check the table (before any row
//! is written, so a table problem leaves the database untouched), and stream the rows.
//! The sink builds the indexes after every row is in, then commits, publishes or
//! transfers (see [`crate::durability`] for what that means on disk for each profile).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::options::{Engine, ImportOptions};
use crate::pipeline::{self, Rejects};
use crate::plan::{self, cause_hint, Dest, ImportPlan, Road};
use crate::progress::Progress;
use crate::sink::page::PageSink;
use crate::sink::side_file::SideFileSink;
use crate::sink::sqlite::file as run;
use crate::sink::sqlite::SqliteSink;
use crate::sink::{Begun, NullSink, Sampled, Sink};
use crate::source::Input;
use crate::summary::{self, Durable, Summary, Writer};

/// Loads `inputs` into the database at `db`. On error the database is as it was before
/// the call (see [`crate::durability`]); a rejects file may hold what was skipped.
/// `progress` is read from other threads while the load runs ([`Progress`]); pass
/// `&Progress::default()` when nothing watches.
pub fn import(
    db: impl AsRef<Path>,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let db = db.as_ref();
    if let Some(r) = &opts.rejects {
        crate::source::input::refuse_overwriting(r, inputs, Some(db))?;
    }
    inputs.iter().for_each(|i| i.watch(&progress.cancel_flag()));
    let mut summary = import_with(db, inputs, opts, progress)
        .map_err(|e| cause_hint(e, inputs, opts).in_file(db))?;
    summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
    Ok(summary)
}

/// Loads `inputs` through `conn`, a connection the program already holds, with SQLite's
/// insert path: inside the caller's transaction if one is open (the caller then commits
/// or rolls back, and after a rollback nothing of the load remains), else in a
/// transaction of its own that commits on success. On error nothing the load did
/// remains, and the caller's transaction goes on. The connection's settings are the
/// caller's: `durability`, `file` and the engine of `opts` do not apply (the page writer
/// only builds new files).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use liteload::{import_into_connection, ImportOptions, Input, Progress};
/// let dir = tempfile::tempdir()?;
/// let csv = dir.path().join("people.csv");
/// std::fs::write(&csv, "name,age\nAda,36\nAlan,41\n")?;
/// let mut conn = rusqlite::Connection::open(dir.path().join("app.db"))?;
/// let input = [Input::Path(csv)];
/// let (opts, progress) = (ImportOptions::default(), Progress::default());
///
/// let tx = conn.transaction()?;
/// import_into_connection(&tx, &input, &opts, &progress)?;
/// tx.rollback()?; // nothing of the load remains
/// let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
/// assert_eq!(tables, 0);
///
/// let tx = conn.transaction()?;
/// let summary = import_into_connection(&tx, &input, &opts, &progress)?;
/// tx.commit()?;
/// assert_eq!(summary.rows, 2);
/// let age: i64 = conn.query_row("SELECT age FROM people WHERE name = 'Ada'", [], |r| r.get(0))?;
/// assert_eq!(age, 36);
/// # Ok(()) }
/// ```
pub fn import_into_connection(
    conn: &Connection,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    plan::validate_options(opts, inputs)?;
    if opts.parse_only {
        return Err(Error::usage(
            "a load into a connection writes rows; parsing alone needs no connection",
        ));
    }
    if let Some(r) = &opts.rejects {
        crate::source::input::refuse_overwriting(r, inputs, conn.path().map(Path::new))?;
    }
    inputs.iter().for_each(|i| i.watch(&progress.cancel_flag()));
    // A savepoint: nested in the caller's transaction, or a transaction of its own.
    conn.execute_batch("SAVEPOINT liteload_import")
        .map_err(|e| Error::sqlite("beginning the load", e))?;
    let loaded = plan::plan(Dest::Connection, inputs, opts, progress).and_then(|mut plan| {
        let mut sink = SqliteSink::new(conn, opts, progress);
        load(&mut plan, &mut sink, opts, progress)?.done()
    });
    match loaded
        .and_then(|s| progress.check().map(|()| s))
        .map_err(|e| cause_hint(e, inputs, opts))
    {
        Ok(mut summary) => {
            conn.execute_batch("RELEASE liteload_import")
                .map_err(|e| Error::sqlite("ending the load", e))?;
            summary.engine = Some(Writer::Sqlite);
            summary.durability = Durable::Callers;
            summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
            summary::finish(&mut summary, start);
            Ok(summary)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK TO liteload_import; RELEASE liteload_import");
            Err(e)
        }
    }
}

fn import_with(
    db: &Path,
    inputs: &[Input],
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    let total: Option<u64> = inputs.iter().map(|i| i.size()).sum();
    progress
        .bytes_total
        .store(total.unwrap_or(0), Ordering::Relaxed);
    let mut plan = plan::plan(Dest::File(db), inputs, opts, progress)?;
    let loaded = match plan.road {
        Road::Null => load(&mut plan, &mut NullSink::default(), opts, progress)?,
        Road::NewFile => load(
            &mut plan,
            &mut PageSink::new_file(db, opts, progress),
            opts,
            progress,
        )?,
        Road::SideFile(durability) => {
            let mut sink = SideFileSink::new(db.to_path_buf(), durability, opts, progress);
            load(&mut plan, &mut sink, opts, progress)?
        }
        Road::Merge(durability) => {
            let mut sink =
                crate::sink::merge::MergeSink::new(db.to_path_buf(), durability, opts, progress);
            load(&mut plan, &mut sink, opts, progress)?
        }
        Road::Sqlite => return import_with_sqlite(db, &mut plan, opts, progress, start),
    };
    let mut summary = match loaded {
        Loaded::Done(summary) => *summary,
        // The side file's table is not the sample's: the direct engine refuses; the
        // default one takes SQLite's path, reading the input again (the plan took the
        // side file only for inputs that can be).
        Loaded::Declined if opts.engine == Engine::Direct => {
            return Err(plan::side_file_refusal(db))
        }
        Loaded::Declined if plan.rereadable() => {
            plan.road = Road::Sqlite;
            return import_with_sqlite(db, &mut plan, opts, progress, start);
        }
        Loaded::Declined => {
            return Err(Error::schema(format!(
                "{}: the table changed while the load was planned, and the input cannot be \
                 read again: run the load again",
                db.display()
            )))
        }
    };
    if plan.road != Road::Null {
        summary.db_bytes = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    }
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// The load of `plan` through SQLite's insert path, in one transaction on the file.
fn import_with_sqlite(
    db: &Path,
    plan: &mut ImportPlan<'_>,
    opts: &ImportOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    run::through_sqlite(
        db,
        opts.durability,
        opts.file,
        progress,
        start,
        Summary::default(),
        |conn, summary| {
            let mut sink = SqliteSink::new(conn, opts, progress);
            *summary = load(plan, &mut sink, opts, progress)?.done()?;
            Ok(())
        },
    )
}

/// What a load through a sink ends in.
pub(crate) enum Loaded {
    /// The summary of what was read and written.
    Done(Box<Summary>),
    /// The sink did not take a table ([`Begun::Declined`]): nothing was written.
    Declined,
}

impl Loaded {
    /// The summary of a sink that never declines.
    pub(crate) fn done(self) -> Result<Summary> {
        match self {
            Loaded::Done(summary) => Ok(*summary),
            Loaded::Declined => Err(Error::internal(
                "a writer that takes every table declined one",
            )),
        }
    }
}

/// Runs every load of `plan` through `sink`: open the input and read its sample, begin
/// its table, stream its rows; then finish the sink. The summary holds what was read
/// and written; the caller adds timing and the file's size.
pub(crate) fn load(
    plan: &mut ImportPlan<'_>,
    sink: &mut dyn Sink,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Loaded> {
    let mut summary = Summary {
        rows_per_statement: 1,
        sniffed: plan.sniffed.clone(),
        notes: plan.notes.clone(),
        locale_hints: plan.locale_hints.clone(),
        ..Summary::default()
    };
    let rejects = Mutex::new(Rejects::new(opts.rejects.as_deref(), opts.max_errors)?);
    for load in &mut plan.loads {
        let mut src = load.source(opts, progress, &mut summary)?;
        let sampled = Sampled {
            input: &load.inputs[0],
            table: &load.table,
            columns: &load.columns,
            types: &load.types,
            grows: load.read.format.may_add_columns(),
        };
        let plan = match sink.begin(&sampled)? {
            Begun::Table(plan) => plan,
            Begun::Declined => return Ok(Loaded::Declined),
            Begun::Skipped(plan) => {
                if !summary.tables.contains(&plan.table) {
                    summary.tables.push(plan.table);
                }
                continue;
            }
        };
        src.set_types(plan.types.clone());
        if sink.wants_records() {
            src.make_records();
        }
        let rows = pipeline::run(
            src.as_mut(),
            sink,
            opts.batch_rows,
            progress,
            &rejects,
            &mut summary,
        )?;
        summary.rows += rows;
        if let [input @ Input::Path(_)] = load.inputs {
            summary.files.push(crate::summary::LoadedFile {
                input: input.display_name(),
                table: plan.table.clone(),
                bytes: input.size(),
                rows,
            });
        }
        if !summary.tables.contains(&plan.table) {
            summary.tables.push(plan.table.clone());
        }
    }
    progress.check()?;
    sink.settle(&mut summary, &mut |b| {
        rejects.lock().unwrap_or_else(|p| p.into_inner()).record(b)
    })?;
    let (count, samples) = rejects
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .finish()?;
    summary.rejects = count;
    summary.reject_samples = samples;
    sink.finish(&mut summary)?;
    Ok(Loaded::Done(Box::new(summary)))
}
