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
use crate::options::ImportOptions;
use crate::pipeline::{self, Rejects};
use crate::plan::{self, cause_hint, Dest, EngineRoute, ImportPlan};
use crate::progress::Progress;
use crate::sink::merge::MergeSink;
use crate::sink::page::PageSink;
use crate::sink::side_file::SideFileSink;
use crate::sink::sqlite::file as run;
use crate::sink::sqlite::SqliteSink;
use crate::sink::{NullSink, SampledTable, Sink, TableStart};
use crate::source::Input;
use crate::summary::{self, Durable, EngineUsed, Summary};

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
    if let Some(dbs) = crate::sqlite_files::sqlite_inputs(inputs)? {
        let sq = crate::sqlite_files::SqliteOptions::default();
        return crate::sqlite_files::import_sqlite(db, &dbs, &sq, opts, progress)
            .map_err(|e| e.in_file(db));
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
        let rules = plan.rules.clone();
        let mut sink = SqliteSink::new(conn, &rules, progress);
        load(&mut plan, &mut sink, opts, progress)
    });
    match loaded
        .and_then(|s| progress.check().map(|()| s))
        .map_err(|e| cause_hint(e, inputs, opts))
    {
        Ok(mut summary) => {
            conn.execute_batch("RELEASE liteload_import")
                .map_err(|e| Error::sqlite("ending the load", e))?;
            summary.engine = Some(EngineUsed::Sqlite);
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
    write(db, &mut plan, opts, progress, start)
}

/// Runs `plan` into the database file `db` through the writer the plan chose (for a
/// load of several tables, each shaped as the plan says), then fills in the summary's
/// timing and the file's size. `start` is when the load began.
pub(crate) fn write(
    db: &Path,
    plan: &mut ImportPlan<'_>,
    opts: &ImportOptions,
    progress: &Progress,
    start: Instant,
) -> Result<Summary> {
    // The writer is told the plan's rules, never the options.
    let (shapes, rules) = (plan.shapes.clone(), plan.rules.clone());
    let mut summary = match plan.engine {
        EngineRoute::Null => load(plan, &mut NullSink::default(), opts, progress)?,
        EngineRoute::NewFile => {
            let mut sink = PageSink::new_file(db, &rules, progress);
            if !shapes.is_empty() {
                sink = sink.with_tables(shapes);
            }
            load(plan, &mut sink, opts, progress)?
        }
        EngineRoute::SideFile(durability) => {
            let mut sink = SideFileSink::new(db.to_path_buf(), durability, &rules, progress);
            load(plan, &mut sink, opts, progress)?
        }
        EngineRoute::InPlace(durability) => {
            let mut sink = PageSink::in_place(db, durability, &rules, progress);
            if !shapes.is_empty() {
                sink = sink.with_tables(shapes);
            }
            let mut summary = load(plan, &mut sink, opts, progress)?;
            summary.durability = crate::summary::Durable::Profile(durability);
            summary
        }
        EngineRoute::Merge(durability) => {
            let mut sink = MergeSink::new(db.to_path_buf(), durability, &rules, progress);
            load(plan, &mut sink, opts, progress)?
        }
        EngineRoute::Sqlite => {
            return run::through_sqlite(
                db,
                opts.durability,
                opts.file,
                progress,
                start,
                Summary::default(),
                |conn, summary| {
                    let mut sink = SqliteSink::new(conn, &rules, progress).with_tables(shapes);
                    *summary = load(plan, &mut sink, opts, progress)?;
                    Ok(())
                },
            )
        }
    };
    if plan.engine != EngineRoute::Null {
        summary.db_bytes = std::fs::metadata(db).map(|m| m.len()).unwrap_or(0);
    }
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// Runs every load of `plan` through `sink`: open the input and read its sample, begin
/// its table, stream its rows; then finish the sink. The summary holds what was read
/// and written; the caller adds timing and the file's size.
pub(crate) fn load(
    plan: &mut ImportPlan<'_>,
    sink: &mut dyn Sink,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let mut summary = Summary {
        rows_per_statement: 1,
        sniffed: plan.sniffed.clone(),
        notes: plan.notes.clone(),
        locale_hints: plan.locale_hints.clone(),
        ..Summary::default()
    };
    let rejects = Mutex::new(Rejects::new(opts.rejects.as_deref(), opts.max_errors)?);
    for bad in std::mem::take(&mut plan.rejected) {
        rejects
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(bad)?;
    }
    for load in &mut plan.loads {
        let mut src = load.source(opts, progress, &mut summary)?;
        let sampled = SampledTable {
            name: &load.name,
            input: load.inputs.first(),
            table: &load.table,
            columns: &load.columns,
            types: &load.types,
            grows: load.read.format.may_add_columns(),
        };
        let plan = match sink.begin(&sampled)? {
            TableStart::Write(plan) => plan,
            TableStart::AlreadyLoaded(plan) => {
                if !summary.tables.contains(&plan.table) {
                    summary.tables.push(plan.table);
                }
                continue;
            }
        };
        src.set_types(plan.types.clone());
        if sink.wants_records() || (src.numbers_rowids() && sink.wants_numbered_records()) {
            src.make_records();
        }
        // A source that writes its own pages (generate's) hands them to a writer that
        // takes them (the page writer's new table); every other pair goes by batches.
        let rows = match sink.take_pages(src.as_mut(), progress) {
            Some(rows) => rows?,
            None => pipeline::run(
                src.as_mut(),
                sink,
                opts.batch_rows,
                progress,
                &rejects,
                &mut summary,
            )?,
        };
        summary.notes.extend(src.notes());
        summary.rows += rows;
        let listed = match (&load.listed, &*load.inputs) {
            (Some(input), _) | (None, [input]) => Some(input),
            _ => None,
        };
        if let Some(input @ Input::Path(_)) = listed {
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
    Ok(summary)
}

/// The plan decides the writer once: a table another connection changes between the
/// plan and the writer's transaction fails the load, with nothing written, instead of
/// sending it down another road after a writer was touched.
#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::sink::target::side_path;

    type R<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

    /// Plans loading `csv` into table `t` of `db` with `opts`, lets `change` run on
    /// another connection, then writes: the load must fail as changed after the plan,
    /// and the file must be what `change` left (SQLite's check ok, no side file).
    fn changed_after_plan(
        db: &Path,
        csv: &str,
        opts: &ImportOptions,
        engine: fn(EngineRoute) -> bool,
        change: &str,
    ) -> R {
        let inputs = [Input::bytes("t.csv", csv.as_bytes().to_vec())];
        let progress = Progress::default();
        let mut plan = plan::plan(Dest::File(db), &inputs, opts, &progress)?;
        assert!(engine(plan.engine), "{:?}", plan.engine);
        let before = {
            let conn = Connection::open(db)?;
            conn.execute_batch(change)?;
            dump(&conn)?
        };
        let e = write(db, &mut plan, opts, &progress, Instant::now())
            .expect_err("the table changed after the plan");
        assert!(
            e.to_string().contains("changed after the load was planned"),
            "{e}"
        );
        let conn = Connection::open(db)?;
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        assert_eq!(ok, "ok");
        assert_eq!(dump(&conn)?, before, "nothing of the load was written");
        assert!(!side_path(db).exists(), "no side file is left");
        let mut journal = db.as_os_str().to_owned();
        journal.push("-journal");
        assert!(!Path::new(&journal).exists(), "no journal is left");
        Ok(())
    }

    /// The schema and every row of table `t`, as text.
    fn dump(conn: &Connection) -> R<Vec<String>> {
        let mut out: Vec<String> = conn
            .prepare("SELECT sql FROM sqlite_schema ORDER BY name")?
            .query_map([], |r| r.get::<_, Option<String>>(0))?
            .map(|s| s.map(|s| s.unwrap_or_default()))
            .collect::<rusqlite::Result<_>>()?;
        let rows: Vec<String> = conn
            .prepare("SELECT quote(a) || ',' || quote(b) FROM t ORDER BY rowid")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        out.extend(rows);
        Ok(out)
    }

    /// On both roads into an existing table: in place (a file in rollback mode, or in
    /// WAL mode that no other connection has open) and through a side file (WAL mode,
    /// with a reader holding the file open while the load is planned).
    #[test]
    fn a_side_files_table_changed_after_the_plan_fails_with_nothing_written() -> R {
        let dir = tempfile::tempdir()?;
        let in_place = |r: EngineRoute| matches!(r, EngineRoute::InPlace(_));
        let side = |r: EngineRoute| matches!(r, EngineRoute::SideFile(_));
        for (mode, road, held) in [
            ("DELETE", in_place as fn(_) -> _, false),
            ("WAL", in_place, false),
            ("WAL", side, true),
        ] {
            let table = |name: &str| -> R<std::path::PathBuf> {
                let db = dir.path().join(format!("{name}-{mode}-{held}.db"));
                Connection::open(&db)?.execute_batch(&format!(
                    "PRAGMA journal_mode={mode}; CREATE TABLE t(a INTEGER, b TEXT); \
                     INSERT INTO t VALUES (1, 'x')"
                ))?;
                Ok(db)
            };
            let changed_after_plan = |db: &Path,
                                      csv: &str,
                                      opts: &ImportOptions,
                                      road: fn(EngineRoute) -> bool,
                                      change: &str|
             -> R {
                // A reader that has the file open (in WAL mode, its SHARED lock).
                let reader = Connection::open(db)?;
                reader.query_row("SELECT count(*) FROM t", [], |_| Ok(()))?;
                if !held {
                    drop(reader);
                    return changed_after_plan(db, csv, opts, road, change);
                }
                changed_after_plan(db, csv, opts, road, change)
            };
            // A column added: the input no longer has the table's columns.
            changed_after_plan(
                &table("a")?,
                "a,b\n2,é\n",
                &ImportOptions::default(),
                road,
                "ALTER TABLE t ADD COLUMN c",
            )?;
            // A trigger made: neither road applies.
            changed_after_plan(
                &table("b")?,
                "a,b\n2,é\n",
                &ImportOptions::default(),
                road,
                "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END",
            )?;
        }
        Ok(())
    }

    #[test]
    fn a_merges_table_changed_after_the_plan_fails_with_nothing_written() -> R {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("m.db");
        Connection::open(&db)?.execute_batch(
            "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t VALUES (1, 'x')",
        )?;
        let opts = ImportOptions {
            on_conflict: crate::OnConflict::Update,
            key: vec!["a".into()],
            ..ImportOptions::default()
        };
        // A second UNIQUE index: merging in key order is no longer what SQLite does.
        changed_after_plan(
            &db,
            "a,b\n1,y\n2,z\n",
            &opts,
            |r| matches!(r, EngineRoute::Merge(_)),
            "CREATE UNIQUE INDEX u ON t(b)",
        )
    }
}
