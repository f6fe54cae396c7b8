//! PostgreSQL into SQLite: the base tables of a schema (or some of them, or a query's
//! result; views and materialized views too, as tables of their rows, when asked)
//! copied into a SQLite file, all read inside one snapshot. Constant defaults and the
//! CHECK constraints SQLite evaluates as PostgreSQL does are declared; every object left
//! behind (views, sequences, functions, foreign keys, other CHECKs and defaults,
//! triggers) is named in the summary's notes.
//!
//! Each table is read with `COPY … TO STDOUT (FORMAT binary)` on several connections
//! that share the snapshot the first one exports (`pg_export_snapshot`), cut into block
//! ranges (or key ranges of an integer primary key), decoded straight into Arrow
//! batches and written by the page writer into a new file that is put in place only
//! when every table is in (`atomic-new`): an error, a cancel or a kill leaves no file.
//! Into a file that exists, the tables go through SQLite's insert path in one
//! transaction (`balanced`).
//!
//! | PostgreSQL | SQLite |
//! |---|---|
//! | smallint, integer, bigint, oid | INTEGER |
//! | real, double precision | REAL (NaN is NULL, ±Infinity kept; real as the shortest decimal PostgreSQL prints) |
//! | numeric | TEXT, exact (`Decimals::Real`: REAL) |
//! | boolean | INTEGER 0/1 |
//! | text, varchar, char(n), name | TEXT |
//! | bytea | BLOB |
//! | uuid | TEXT |
//! | date | TEXT `YYYY-MM-DD` |
//! | timestamp | TEXT `YYYY-MM-DDTHH:MM:SS[.ffffff]` |
//! | timestamptz | TEXT, the instant in UTC: `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` |
//! | time | TEXT `HH:MM:SS[.ffffff]` |
//! | json, jsonb | TEXT, the JSON |
//! | arrays | TEXT, a JSON array (nested for several dimensions, NULL elements `null`) |
//! | enum, inet, cidr, interval, money | TEXT as PostgreSQL prints it |
//! | anything else | TEXT as PostgreSQL prints it, with a note in the summary |
//!
//! `infinity` and `-infinity` dates and timestamps are those words; a year before 1 is
//! written as PostgreSQL writes it, with ` BC`. A domain is its base type.
//!
//! Keys and indexes: a one-column integer primary key becomes the table's INTEGER
//! PRIMARY KEY (its rows are read in key order); any other primary key and every
//! UNIQUE index becomes a UNIQUE index, and every other b-tree index on columns an
//! index, all built by the page writer after the rows. Expression, partial and
//! non-b-tree indexes are skipped, each with a note.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::load_tables::load_tables;
use crate::options::ImportOptions;
use crate::plan::TableShape;
use crate::progress::Progress;
use crate::source::columnar::Decimals;
use crate::source::postgres::catalog;
use crate::source::postgres::connect::Server;
use crate::source::postgres::copy::{CopyReader, Pool};
use crate::source::postgres::decode;
use crate::source::Input;
use crate::summary::{self, Summary};

pub use crate::source::postgres::is_postgres_url;

/// What to copy from a PostgreSQL database, besides the load's [`ImportOptions`] (whose
/// `table` names a query's table, `read.decimals` says how numerics are stored, and
/// whose engine, durability, verify and index memory apply as for any load).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PgOptions {
    /// The schema whose base tables are copied; `None`: `public`.
    pub schema: Option<String>,
    /// Only these tables of the schema, by their exact names; empty: all of them.
    pub tables: Vec<String>,
    /// Copy this query's rows instead, into the table that [`ImportOptions::table`]
    /// names.
    pub query: Option<String>,
    /// Connections that copy at once; `None`: one per core, at most 8.
    pub connections: Option<usize>,
    /// Views and materialized views of the schema copied too, each as a table of its
    /// rows (its SQL in the summary's notes); else each is named there as not copied.
    pub views: bool,
    /// Foreign keys between the copied tables declared in SQLite (one column, to a key
    /// or a UNIQUE column), the rows checked by `PRAGMA foreign_key_check` after the
    /// copy; the others, and all of them without this, named in the summary's notes.
    pub foreign_keys: bool,
}

/// Copies from the PostgreSQL database at `url` (a libpq URI:
/// `postgresql://USER@HOST:PORT/DBNAME`, `?host=/socket/dir`, `sslmode=…`; the password
/// from the URI, `PGPASSWORD` or the password file) into the SQLite database at `db`,
/// what `pg` names, with `opts`. Every table is read inside one snapshot. On error the
/// file is as it was before (none, for a new one).
pub fn import_postgres(
    db: impl AsRef<Path>,
    url: &str,
    pg: &PgOptions,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let db = db.as_ref();
    refuse_options(pg, opts)?;
    let server = Server::parse(url)?;
    // A table whose statistics say its heap is in key order is read in block order, and
    // its keys checked as they come; if they are not in order after all, nothing was
    // put in place, and the copy runs again reading such tables in key order.
    let broken = Arc::new(AtomicBool::new(false));
    match copy_once(db, &server, pg, opts, progress, &broken) {
        Err(_) if broken.load(Ordering::SeqCst) && !progress.is_cancelled() => {
            progress.rows.store(0, Ordering::Relaxed);
            progress.bytes_read.store(0, Ordering::Relaxed);
            let mut summary = copy_once(db, &server, pg, opts, progress, &broken)?;
            summary.notes.push(
                "a table's statistics said its rows were in the order of its key, and they \
                 were not: the copy ran again, in key order (ANALYZE the table to avoid this)"
                    .into(),
            );
            Ok(summary)
        }
        result => result,
    }
}

/// One copy (see [`import_postgres`]): with `broken` unset, tables whose heap is in key
/// order by their statistics are read in block order, and `broken` is set if their keys
/// are not; with it set, every keyed table is read in key order.
fn copy_once(
    db: &Path,
    server: &Server,
    pg: &PgOptions,
    opts: &ImportOptions,
    progress: &Progress,
    broken: &Arc<AtomicBool>,
) -> Result<Summary> {
    let start = Instant::now();
    let trust_heap_order = !broken.load(Ordering::SeqCst);
    let server = server.clone();
    let mut main = server.connect()?;
    main.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .map_err(|e| server.error("beginning the snapshot", &e))?;
    let snapshot: String = main
        .query_one("SELECT pg_export_snapshot()", &[])
        .map_err(|e| server.error("exporting the snapshot", &e))?
        .get(0);
    let decimals_real = opts.read.decimals == Decimals::Real;
    let mut notes = vec![];
    let mut foreign_keys: Vec<Vec<crate::table::ForeignKey>> = vec![];
    let mut defaults: Vec<Vec<(String, String)>> = vec![];
    let mut checks: Vec<Vec<(String, String)>> = vec![];
    let mut tables = match &pg.query {
        Some(q) => {
            let name = opts.table.as_deref().ok_or_else(|| {
                Error::usage(
                    "a query's rows need a table to go to: name it in ImportOptions::table",
                )
            })?;
            vec![catalog::query(
                &mut main,
                &server,
                q,
                name,
                decimals_real,
                &mut notes,
            )?]
        }
        None => {
            let schema = pg.schema.as_deref().unwrap_or("public");
            let tables = catalog::tables(
                &mut main,
                &server,
                schema,
                &pg.tables,
                pg.views,
                decimals_real,
                &mut notes,
            )?;
            let copied: Vec<String> = tables
                .iter()
                .map(|t| t.shown[schema.len() + 1..].to_string())
                .collect();
            let mut carried = vec![];
            defaults = catalog::defaults(&mut main, &server, schema, &tables, &mut carried)?;
            checks = catalog::checks(&mut main, &server, schema, &tables, &mut carried)?;
            if pg.foreign_keys {
                let fks = catalog::foreign_keys(
                    &mut main,
                    &server,
                    schema,
                    &tables,
                    &mut carried,
                    &mut notes,
                )?;
                foreign_keys = fks;
            }
            catalog::not_copied(
                &mut main, &server, schema, &copied, pg.views, &carried, &mut notes,
            )?;
            tables
        }
    };
    if let (None, Some(t), [one]) = (&pg.query, &opts.table, tables.as_mut_slice()) {
        one.name.clone_from(t);
    }
    // PostgreSQL tells "T" from "t"; SQLite does not (load_tables names them apart).
    for t in &tables {
        if let Some(problem) = crate::schema::table_name_problem(&t.name) {
            return Err(Error::usage(format!("{}: {problem}", t.shown)));
        }
    }
    let workers = pg
        .connections
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(8)))
        .max(1);
    let pool = Arc::new(Pool::new(server.clone(), snapshot));
    let mut inputs = vec![];
    let mut shapes = vec![];
    for (i, t) in tables.iter().enumerate() {
        // Four pieces a connection, and no piece of more than 128 MB of heap.
        let want = (workers * 4).max(usize::try_from(t.blocks / 16_384).unwrap_or(0));
        let pieces = catalog::pieces(&mut main, &server, t, want, trust_heap_order)?;
        let columns: Vec<(String, decode::Kind)> =
            t.columns.iter().map(|c| (c.name.clone(), c.kind)).collect();
        let mut reader = CopyReader::new(
            t.shown.clone(),
            &columns,
            pieces,
            pool.clone(),
            workers,
            opts.batch_rows,
            progress,
        );
        if let (Some(k), true) = (t.rowid, trust_heap_order && t.heap_in_key_order) {
            reader = reader.ascending(k, broken.clone());
        }
        inputs.push(Input::record_batches(t.shown.clone(), reader));
        shapes.push(TableShape {
            table: t.name.clone(),
            rowid: t.rowid.map(|k| t.columns[k].name.clone()),
            indexes: t.indexes.clone(),
            constraints: crate::table::Constraints {
                foreign_keys: foreign_keys.get(i).cloned().unwrap_or_default(),
                defaults: defaults.get(i).cloned().unwrap_or_default(),
                checks: checks.get(i).cloned().unwrap_or_default(),
            },
            ..TableShape::default()
        });
    }
    let declared = shapes
        .iter()
        .any(|s| !s.constraints.foreign_keys.is_empty());
    let mut summary = load_tables(db, &inputs, shapes, workers.min(4), opts, progress, start)?;
    if declared {
        notes.extend(crate::load_tables::orphans(db, &summary.tables)?);
    }
    // The snapshot ends; the copy's connections close with the pool.
    let _ = main.batch_execute("COMMIT");
    summary.notes.extend(notes);
    summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// Options that a copy from a database cannot take.
fn refuse_options(pg: &PgOptions, opts: &ImportOptions) -> Result<()> {
    let refused = if let Some(why) = crate::load_tables::refused_for_copy(opts) {
        Some(why)
    } else if pg.query.is_some() && (pg.views || pg.foreign_keys) {
        Some("views and foreign keys are copied with a schema's tables, not with a query")
    } else if pg.query.is_some() && !pg.tables.is_empty() {
        Some("a query or a list of tables, not both")
    } else if pg.query.is_none() && opts.table.is_some() && pg.tables.len() != 1 {
        Some("a table name goes with a query, or with one table to copy")
    } else {
        None
    };
    match refused {
        Some(why) => Err(Error::usage(format!("copying from PostgreSQL: {why}"))),
        None => Ok(()),
    }
}
