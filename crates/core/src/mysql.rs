//! MySQL and MariaDB into SQLite: the base tables of a database (or some of them, or a
//! query's result; views too, as tables of their rows, when asked) copied into a SQLite
//! file, all read inside one snapshot. Foreign keys between the copied tables are
//! declared when asked. Every object left behind (views, triggers, routines, events,
//! foreign keys, CHECKs, indexes SQLite cannot have) is named in the summary's notes.
//!
//! Each table is read on several connections that share one snapshot (see
//! `source::mysql::read`), in ranges of an integer primary key, with the binary
//! protocol, decoded straight into Arrow batches and written by the page writer into a
//! new file that is put in place only when every table is in (`atomic-new`): an
//! error, a cancel or a kill leaves no file. Into a file that exists, the tables go
//! through SQLite's insert path in one transaction (`balanced`).
//!
//! | MySQL / MariaDB | SQLite |
//! |---|---|
//! | TINYINT, SMALLINT, MEDIUMINT, INT, BIGINT, YEAR (0 for 0000), and unsigned but BIGINT | INTEGER |
//! | BIGINT UNSIGNED | declared BLOB (no affinity, so SQLite keeps each value as it comes): INTEGER, the TEXT of its digits past 2^63 - 1 |
//! | BIT(n) | INTEGER, the bits as an unsigned number (BIT(64): as BIGINT UNSIGNED) |
//! | FLOAT | REAL, the shortest decimal that reads back as the same float |
//! | DOUBLE | REAL |
//! | DECIMAL | TEXT, exact (`Decimals::Real`: REAL) |
//! | DATE | TEXT `YYYY-MM-DD` |
//! | DATETIME(p) | TEXT `YYYY-MM-DDTHH:MM:SS[.f]` (p digits), the value as written |
//! | TIMESTAMP(p) | TEXT, the instant in UTC: `YYYY-MM-DDTHH:MM:SS[.f]Z`, whatever the server's or session's zone |
//! | zero dates (`0000-00-00`, `2024-00-00`) | TEXT, the same layout with the zeros |
//! | TIME(p) | TEXT `[-]HH:MM:SS[.f]`, hours past 24 kept (-838 to 838) |
//! | CHAR, VARCHAR, TEXT, ENUM, SET, JSON | TEXT (UTF-8 whatever the column's character set: utf8mb3, utf8mb4, latin1, …) |
//! | BINARY, VARBINARY, BLOB | BLOB |
//! | GEOMETRY, POINT, … | BLOB, the WKB (the SRID MySQL stores before it dropped) |
//!
//! The session reads with `sql_mode` empty: CHAR values lose their trailing spaces as
//! MySQL returns them by default (`PAD_CHAR_TO_FULL_LENGTH` off), whatever the server's
//! `sql_mode`; zero dates that a strict mode would refuse to store are read as stored.
//!
//! Keys and indexes: a one-column signed integer primary key becomes the table's
//! INTEGER PRIMARY KEY (its rows are read in key order); any other primary key and every
//! UNIQUE index becomes a UNIQUE index, every other index on whole columns an index,
//! all built after the rows. Prefix, full-text, spatial and functional indexes are
//! skipped, each with a note. A column default SQLite stores as the copy stores the
//! column (an integer, a finite number, a string) is declared; any other is named.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::load_tables::load_tables;
use crate::options::ImportOptions;
use crate::plan::TableShape;
use crate::progress::Progress;
use crate::source::columnar::Decimals;
use crate::source::mysql::catalog;
use crate::source::mysql::connect::Server;
use crate::source::mysql::read::{Pool, Reader};
use crate::source::Input;
use crate::summary::{self, Summary};

pub use crate::source::mysql::is_mysql_url;

/// What to copy from a MySQL or MariaDB database, besides the load's [`ImportOptions`]
/// (whose `table` names a query's table, `read.decimals` says how DECIMALs are stored,
/// and whose engine, durability, verify and index memory apply as for any load).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct MysqlOptions {
    /// The database whose base tables are copied; `None`: the one the URI names.
    pub database: Option<String>,
    /// Only these tables, by their exact names; empty: all of them.
    pub tables: Vec<String>,
    /// Copy this query's rows instead, into the table that [`ImportOptions::table`]
    /// names.
    pub query: Option<String>,
    /// Connections that read at once; `None`: one per core, at most 8.
    pub connections: Option<usize>,
    /// Views copied too, each as a table of its rows (its SQL in the summary's notes);
    /// else each is named there as not copied.
    pub views: bool,
    /// Foreign keys between the copied tables declared in SQLite (one column, to a key
    /// or a UNIQUE column), the rows checked by `PRAGMA foreign_key_check` after the
    /// copy; the others, and all of them without this, named in the summary's notes.
    pub foreign_keys: bool,
}

/// Copies from the MySQL or MariaDB database at `url` (`mysql://USER@HOST:PORT/DB`,
/// `mariadb://…`; `?socket=`, `?ssl-mode=`, `?ssl-ca=`; the password from the URI,
/// `MYSQL_PWD` or the option files) into the SQLite database at `db`, what `my` names,
/// with `opts`. Every table is read inside one snapshot. On error the file is as it was
/// before (none, for a new one).
pub fn import_mysql(
    db: impl AsRef<Path>,
    url: &str,
    my: &MysqlOptions,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Summary> {
    let start = Instant::now();
    let db = db.as_ref();
    refuse_options(my, opts)?;
    let server = Server::parse(url)?;
    let decimals_real = opts.read.decimals == Decimals::Real;
    let mut main = server.connect()?;
    let mut notes = vec![];
    let mut checks: Vec<Vec<(String, String)>> = vec![];
    let mut foreign_keys: Vec<Vec<crate::table::ForeignKey>> = vec![];
    let mut defaults: Vec<Vec<(String, String)>> = vec![];
    let mut tables = match &my.query {
        Some(q) => {
            let name = opts.table.as_deref().ok_or_else(|| {
                Error::usage(
                    "a query's rows need a table to go to: name it in ImportOptions::table",
                )
            })?;
            vec![catalog::query(&mut main, &server, q, name, decimals_real)?]
        }
        None => {
            let database = my
                .database
                .clone()
                .or_else(|| server.database.clone())
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{}: name the database to copy (in the URI's path)",
                        server.shown
                    ))
                })?;
            let tables = catalog::tables(
                &mut main,
                &server,
                &database,
                &my.tables,
                my.views,
                decimals_real,
                &mut notes,
            )?;
            if tables.is_empty() {
                return Err(Error::usage(format!(
                    "database {database}: no base table to copy"
                )));
            }
            let copied: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
            defaults = catalog::defaults(&mut main, &server, &database, &tables, &mut notes)?;
            if my.foreign_keys {
                foreign_keys =
                    catalog::foreign_keys(&mut main, &server, &database, &tables, &mut notes)?;
            }
            let mut carried = vec![];
            checks = catalog::checks(&mut main, &server, &database, &tables, &mut carried)?;
            let flags = (my.views, my.foreign_keys);
            catalog::not_copied(
                &mut main, &server, &database, &copied, flags, &carried, &mut notes,
            )?;
            for t in tables.iter().filter(|t| !is_transactional(&t.engine)) {
                notes.push(format!(
                    "{}: a {} table has no snapshot; it was read as it stood",
                    t.shown, t.engine
                ));
            }
            tables
        }
    };
    drop(main);
    if let (None, Some(t), [one]) = (&my.query, &opts.table, tables.as_mut_slice()) {
        one.name.clone_from(t);
    }
    for t in &tables {
        if let Some(problem) = crate::schema::table_name_problem(&t.name) {
            return Err(Error::usage(format!("{}: {problem}", t.shown)));
        }
    }
    let workers = my
        .connections
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get().min(8)))
        .max(1);
    let locked: Vec<(String, String)> = tables.iter().filter_map(|t| t.on_server.clone()).collect();
    let (pool, single) = Pool::open(&server, workers, &locked)?;
    notes.extend(single);
    let pool = Arc::new(pool);
    let mut inputs = vec![];
    let mut shapes = vec![];
    {
        let mut conn = pool.take();
        let cut = tables.iter().enumerate().try_for_each(|(i, t)| {
            let pieces = catalog::pieces(&mut conn, &server, t, pool.size() * 4)?;
            let reader = Reader::new(
                t.shown.clone(),
                &t.columns,
                pieces,
                pool.clone(),
                opts.batch_rows,
                progress,
            );
            inputs.push(Input::record_batches(t.shown.clone(), reader));
            shapes.push(TableShape {
                table: t.name.clone(),
                rowid: t.rowid.map(|k| t.columns[k].0.clone()),
                indexes: t.indexes.clone(),
                constraints: crate::table::Constraints {
                    foreign_keys: foreign_keys.get(i).cloned().unwrap_or_default(),
                    defaults: defaults.get(i).cloned().unwrap_or_default(),
                    checks: checks.get(i).cloned().unwrap_or_default(),
                },
                ..TableShape::default()
            });
            Ok::<_, Error>(())
        });
        pool.give(conn);
        cut?;
    }
    let declared = shapes
        .iter()
        .any(|s| !s.constraints.foreign_keys.is_empty());
    let mut summary = load_tables(db, &inputs, shapes, workers.min(4), opts, progress, start)?;
    if declared {
        notes.extend(crate::load_tables::orphans(db, &summary.tables)?);
    }
    summary.notes.extend(notes);
    summary.bytes_read = progress.bytes_read.load(Ordering::Relaxed);
    summary::finish(&mut summary, start);
    Ok(summary)
}

/// Whether a table of `engine` is read inside the snapshot (InnoDB's multiversioning).
fn is_transactional(engine: &str) -> bool {
    engine.is_empty()
        || engine.eq_ignore_ascii_case("InnoDB")
        || engine.eq_ignore_ascii_case("XtraDB")
}

/// Options that a copy from a database cannot take.
fn refuse_options(my: &MysqlOptions, opts: &ImportOptions) -> Result<()> {
    let refused = if let Some(why) = crate::load_tables::refused_for_copy(opts) {
        Some(why)
    } else if my.query.is_some() && (my.views || my.foreign_keys) {
        Some("views and foreign keys are copied with a database's tables, not with a query")
    } else if my.query.is_some() && !my.tables.is_empty() {
        Some("a query or a list of tables, not both")
    } else if my.query.is_none() && opts.table.is_some() && my.tables.len() != 1 {
        Some("a table name goes with a query, or with one table to copy")
    } else {
        None
    };
    match refused {
        Some(why) => Err(Error::usage(format!("copying from MySQL: {why}"))),
        None => Ok(()),
    }
}
