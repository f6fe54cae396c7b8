//! Appends through the page writer: the new rows are written as a side file beside the
//! database, then moved in by one `INSERT INTO main.t SELECT * FROM side.t`, which
//! SQLite runs with its transfer optimization (insert.c, `xferOptimization`): each
//! record is copied as bytes, never decoded and encoded again.
//!
//! When SQLite applies the transfer, and so when this path is taken:
//! - the destination has the same number of columns as the source, with the same
//!   affinities, collations and NOT NULL constraints, the same defaults and the same
//!   CHECK constraints, no triggers, no foreign keys while they are enforced, and both
//!   are rowid tables without an INTEGER PRIMARY KEY here; every index of the
//!   destination has a matching index in the source;
//! - a destination with indexes must be empty (SQLite tests that at run time and falls
//!   back to its row-by-row path when it is not).
//!
//! So two cases qualify: a table created by this load (its indexes are written into the
//! side file too, and created empty in the destination; also one that replaces a table
//! dropped in the same transaction), and an existing table whose
//! columns the side file's match in affinity with no constraint, default, collation or
//! trigger ([`plain_columns`]), into which the input's columns go in the table's order;
//! if it has indexes, only plain ones ([`plain_indexes`]) and only while it is empty
//! (the side file then gets the same indexes). Anything else stays on SQLite's insert
//! path. Before the statement runs, its `EXPLAIN` is read: a program without
//! `RowData` or `RowCell` would decode the rows, and the summary says so.
//!
//! Journal. Pages that lie past the end of the file when the transaction began are
//! never written to a rollback journal, so with one the new table is written once. In
//! WAL mode every page goes to the WAL and again into the file at checkpoint (10M rows
//! into a 1 GB file: 1.3-1.6 s against 3.1 s, bench/README.md). So the transfer runs
//! with a rollback journal for `balanced` and `durable` (synchronous FULL and EXTRA:
//! a crash leaves the file as of the last commit, and for `durable` a commit that
//! returned survives), and the file is put back in WAL mode after the commit, as those
//! profiles leave it. When another connection holds the file open in WAL mode, the
//! journal mode cannot change, and the transfer goes through the WAL.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::cancel::CancelWatch;
use crate::destination::{destination, merge_target, Destination, MergeTarget};
use crate::durability::{self, Durability};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::schema::quote_ident;
use crate::table::IfExists;

/// The name the side file of an append to `db` has while it exists.
pub(crate) fn side_path(db: &Path) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".liteload-append");
    PathBuf::from(s)
}

/// Rolls back the append's transaction on `db` (if it began) and removes its side file:
/// the database is as it was. For a load that failed or was dropped before its commit.
pub(crate) fn abandon(target: Option<Target>, db: &Path) {
    if let Some(target) = target {
        target.abort();
    }
    let _ = std::fs::remove_file(side_path(db));
}

/// The attached side file's schema name.
const SIDE: &str = "liteload_side";

/// An existing database open for an append, inside one write transaction (taken before
/// anything is read or built, so no other writer can change the table meanwhile).
pub(crate) struct Target {
    conn: Connection,
    durability: Durability,
    /// Whether the file was in WAL mode and taken out of it for this transaction: an
    /// abort puts it back.
    was_wal: bool,
    /// Whether the side file is attached.
    attached: std::cell::Cell<bool>,
    pub(crate) notes: Vec<String>,
    /// Interrupts a statement of the transaction when the load is cancelled; ended
    /// before the commit or the rollback, which are not to be cut short.
    watch: Option<CancelWatch>,
}

impl Target {
    /// Opens `db` (which exists) for an append under `durability` and begins the
    /// transaction. `atomic-new` does not apply to an existing file: the caller checks.
    pub(crate) fn open(db: &Path, durability: Durability, progress: &Progress) -> Result<Target> {
        // As on SQLite's path: a kill after a new file's link into place (before the
        // unlink) leaves its temp file beside the complete database.
        let mut notes: Vec<String> = durability::clear_stale(&durability::temp_path(db))?
            .into_iter()
            .collect();
        let ctx = |e| Error::sqlite(format!("preparing {}", db.display()), e);
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| Error::sqlite(format!("opening {}", db.display()), e))?;
        crate::sqlite_info::configure(&conn).map_err(ctx)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(ctx)?;
        let before: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(ctx)?;
        let mut was_wal = false;
        match durability {
            Durability::Unsafe => {
                conn.execute_batch(Durability::Unsafe.pragmas())
                    .map_err(ctx)?;
            }
            _ => {
                let sync = if durability == Durability::Durable {
                    "EXTRA"
                } else {
                    "FULL"
                };
                // Leaving WAL mode needs the only connection to the file; a reader
                // elsewhere keeps it in WAL mode (an error or the old mode back).
                let mode: String = conn
                    .query_row("PRAGMA journal_mode=DELETE", [], |r| r.get(0))
                    .unwrap_or_else(|_| "wal".into());
                if mode.eq_ignore_ascii_case("delete") {
                    was_wal = before.eq_ignore_ascii_case("wal");
                    conn.execute_batch(&format!("PRAGMA synchronous={sync};"))
                        .map_err(ctx)?;
                } else {
                    notes.push(format!(
                        "{}: another connection has the database open in WAL mode, so the \
                         new rows went through the WAL (written twice)",
                        db.display()
                    ));
                    conn.execute_batch(durability.pragmas()).map_err(ctx)?;
                }
            }
        }
        conn.execute_batch(if durability == Durability::Unsafe {
            "BEGIN EXCLUSIVE"
        } else {
            "BEGIN IMMEDIATE"
        })
        .map_err(ctx)?;
        Ok(Target {
            watch: Some(CancelWatch::new(&conn, progress)),
            conn,
            durability,
            was_wal,
            attached: std::cell::Cell::new(false),
            notes,
        })
    }

    /// What `table` is in the database under `if_exists` (see [`destination`]), read
    /// inside the append's transaction.
    pub(crate) fn destination(
        &self,
        table: &str,
        if_exists: IfExists,
    ) -> Result<Option<Destination>> {
        destination(&self.conn, table, if_exists)
    }

    /// `table` as a [`MergeTarget`] for `input` columns keyed by `key`, read inside the
    /// append's transaction (see [`merge_target`]).
    pub(crate) fn merge_target(
        &self,
        table: &str,
        input: &[String],
        key: &[String],
    ) -> Result<Option<MergeTarget>> {
        merge_target(&self.conn, table, input, key)
    }

    /// The connection, inside the append's transaction.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The database's page size: the side file's too, so that SQLite copies each cell
    /// as it is.
    pub(crate) fn page_size(&self) -> Result<u32> {
        self.conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .map_err(|e| Error::sqlite("reading the database's page size", e))
    }

    /// Moves table `table` of the side file at `side` (built by the page writer with
    /// `create_sql`, and the indexes in `indexes`) into the database: a new table
    /// (`create` true) is created with those indexes first, then one INSERT … SELECT
    /// copies the records. Returns whether SQLite's program copies records without
    /// decoding them (see the module docs), and how many rows it inserted.
    pub(crate) fn transfer(
        &self,
        side: &Path,
        table: &str,
        create_sql: Option<&str>,
        indexes: &[String],
    ) -> Result<Moved> {
        let run = |sql: &str| {
            self.conn
                .execute_batch(sql)
                .map_err(|e| Error::sqlite(format!("running {sql}"), e))
        };
        self.attach(side)?;
        if let Some(create) = create_sql {
            run(create)?;
            for sql in indexes {
                run(sql)?;
            }
        }
        let sql = transfer_sql(table);
        let copies_records = copies_records(&self.conn, &sql)
            .map_err(|e| Error::sqlite(format!("explaining {sql}"), e))?;
        let mut stmt = self
            .conn
            .prepare(&sql)
            .map_err(|e| Error::sqlite(format!("preparing {sql}"), e))?;
        let rows = stmt
            .execute([])
            .map_err(|e| Error::sqlite(format!("running {sql}"), e))? as u64;
        let vm_steps = stmt.get_status(rusqlite::StatementStatus::VmStep) as u64;
        Ok(Moved {
            rows,
            copies_records,
            vm_steps,
        })
    }

    /// Attaches the side file at `side` as `liteload_side` (once).
    pub(crate) fn attach(&self, side: &Path) -> Result<()> {
        if self.attached.get() {
            return Ok(());
        }
        // An absolute path: a name that starts with `file:` would be read as a URI.
        let side_name = std::path::absolute(side).unwrap_or_else(|_| side.to_path_buf());
        self.conn
            .execute(
                "ATTACH ?1 AS liteload_side",
                [side_name.to_string_lossy().as_ref()],
            )
            .map_err(|e| Error::sqlite(format!("attaching {}", side.display()), e))?;
        self.attached.set(true);
        // The side file is read once, front to back: mapped, its pages cost no read()
        // each (half the transfer's system calls; the other half writes the new pages).
        let _ = self
            .conn
            .execute_batch("PRAGMA liteload_side.mmap_size = 1099511627776");
        Ok(())
    }

    /// Whether every row of the attached side file's `table` keeps the NOT NULL, CHECK
    /// and STRICT rules of its definition (SQLite's `quick_check` of that table, which
    /// does not look at UNIQUE: the page writer does, as it builds those indexes).
    pub(crate) fn side_passes_checks(&self, table: &str) -> Result<bool> {
        let ctx = |e| {
            Error::sqlite(
                format!("checking the side file's {}", quote_ident(table)),
                e,
            )
        };
        let mut st = self
            .conn
            .prepare(&format!(
                "PRAGMA {SIDE}.quick_check({})",
                quote_ident(table)
            ))
            .map_err(ctx)?;
        let found = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(ctx)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(ctx)?;
        Ok(found.len() == 1 && found[0] == "ok")
    }

    /// Runs `sql`, an INSERT of the attached side file's row `?1` of `table`, for each
    /// of its rows 1..=`rows` in turn: each refused one (constraint, type) goes to
    /// `refused` with its rowid, SQLite's error and its fields, and the rest stay.
    /// Returns how many went in.
    pub(crate) fn insert_each(
        &self,
        sql: &str,
        table: &str,
        rows: u64,
        progress: &crate::progress::Progress,
        refused: &mut dyn FnMut(i64, rusqlite::Error, serde_json::Value) -> Result<()>,
    ) -> Result<u64> {
        let t = quote_ident(table);
        let ctx = |e| Error::sqlite(format!("running {sql}"), e);
        let mut insert = self.conn.prepare(sql).map_err(ctx)?;
        let mut read = self
            .conn
            .prepare(&format!("SELECT * FROM {SIDE}.{t} WHERE rowid = ?1"))
            .map_err(ctx)?;
        let mut taken = 0;
        for rowid in 1..=rows as i64 {
            if rowid % 65536 == 0 {
                progress.check()?;
            }
            match insert.execute([rowid]) {
                Ok(n) => taken += n as u64,
                Err(e) if crate::sink::sqlite::is_row_error(&e) => {
                    let fields = read
                        .query_row([rowid], |r| {
                            (0..r.as_ref().column_count())
                                .map(|i| {
                                    use rusqlite::types::ValueRef;
                                    Ok(match r.get_ref(i)? {
                                        ValueRef::Null => serde_json::Value::Null,
                                        ValueRef::Integer(v) => v.into(),
                                        ValueRef::Real(v) => v.into(),
                                        ValueRef::Text(v) => {
                                            String::from_utf8_lossy(v).into_owned().into()
                                        }
                                        ValueRef::Blob(v) => crate::source::convert::blob_json(v),
                                    })
                                })
                                .collect::<rusqlite::Result<Vec<_>>>()
                        })
                        .map_err(ctx)?;
                    refused(rowid, e, fields.into())?;
                }
                Err(e) => return Err(ctx(e)),
            }
        }
        Ok(taken)
    }

    /// Runs `sql` (one statement) inside the append's transaction; returns the rows it
    /// changed.
    pub(crate) fn execute(&self, sql: &str) -> rusqlite::Result<usize> {
        self.conn.execute(sql, [])
    }

    /// Runs `sql` inside the append's transaction.
    pub(crate) fn run(&self, sql: &str) -> rusqlite::Result<()> {
        self.conn.execute_batch(sql)
    }

    /// Commits, detaches the side file and puts the file back in the profile's journal
    /// mode. Returns notes for the user.
    pub(crate) fn commit(mut self) -> Result<Vec<String>> {
        self.watch = None;
        // SQLite reads back the schema the load leaves before it commits.
        if let Err(e) = crate::names::check_schema(&self.conn) {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(Error::sqlite("committing", e));
        }
        let _ = self.conn.execute_batch("DETACH liteload_side");
        // As SQLite's path leaves the file under these profiles.
        if matches!(self.durability, Durability::Balanced | Durability::Durable) {
            self.notes
                .extend(crate::durability::switch_to_wal(&self.conn));
        }
        self.conn
            .close()
            .map_err(|(_, e)| Error::sqlite("closing the database", e))?;
        Ok(self.notes)
    }

    /// Rolls back; the database is as before, its journal mode too (best effort: the
    /// data is as before either way). A refused or failed load leaves the file as it
    /// was, byte for byte, so a file an earlier killed append left in rollback-journal
    /// mode keeps it until a load commits.
    pub(crate) fn abort(mut self) {
        self.watch = None;
        let _ = self.conn.execute_batch("ROLLBACK");
        let _ = self.conn.execute_batch("DETACH liteload_side");
        if self.was_wal {
            let _ = self.conn.execute_batch("PRAGMA journal_mode=WAL");
        }
    }

    /// The profile in force.
    pub(crate) fn durability(&self) -> Durability {
        self.durability
    }
}

/// What one transfer did.
#[derive(Debug)]
pub(crate) struct Moved {
    /// Rows inserted.
    pub(crate) rows: u64,
    /// Whether SQLite's program copies records as bytes (`RowData`, `RowCell`) rather than decoding
    /// each row's columns.
    pub(crate) copies_records: bool,
    /// Virtual machine steps the statement took: a few per row and index when records
    /// are copied, one or more per column when they are decoded. The tests read it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) vm_steps: u64,
}

/// The statement that moves the side file's table into `main`.
fn transfer_sql(table: &str) -> String {
    let t = quote_ident(table);
    format!("INSERT INTO main.{t} SELECT * FROM {SIDE}.{t}")
}

/// Whether SQLite compiles `sql` (an INSERT … SELECT) with its transfer optimization:
/// only that program reads whole records, with `RowData` or (in newer versions, which
/// copy the cell as it is) `RowCell`.
fn copies_records(conn: &Connection, sql: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare(&format!("EXPLAIN {sql}"))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let op: String = r.get(1)?;
        if op == "RowData" || op == "RowCell" {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destination::tests::{plain_create, COLUMNS};

    const ROWS: i64 = 3000;

    /// A side file of ROWS rows in a table `t` made by `create`, with an index on `c0`.
    fn side_file(path: &Path, create: &str) -> rusqlite::Result<()> {
        let c = Connection::open(path)?;
        c.execute_batch(create)?;
        c.execute_batch("CREATE INDEX side_c0 ON t (c0)")?;
        let marks = ["?"; COLUMNS].join(", ");
        let mut st = c.prepare(&format!("INSERT INTO t VALUES ({marks})"))?;
        for i in 0..ROWS {
            let row: Vec<rusqlite::types::Value> = (0..COLUMNS as i64)
                .map(|k| match k % 3 {
                    0 => (i * k).into(),
                    1 => format!("t{i}-{k}-é\0").into(),
                    _ => ((i as f64) / 3.0).into(),
                })
                .collect();
            st.execute(rusqlite::params_from_iter(row))?;
        }
        Ok(())
    }

    /// SQLite copies the side file's records without decoding them, into a new table
    /// with an index and into an existing plain table: its program reads whole records
    /// (`EXPLAIN`), and it ran a few steps per row and index, where decoding would take
    /// one or more per column. A destination whose columns differ in affinity gets the
    /// row-by-row program, and the check says so.
    #[test]
    fn the_transfer_copies_records_and_the_check_sees_when_it_does_not() -> Result<()> {
        let d = tempfile::tempdir().map_err(|e| Error::io(None, e))?;
        let sq = |e| Error::sqlite("test", e);
        let side = d.path().join("side.db");
        side_file(&side, &plain_create("t")).map_err(sq)?;
        let db = d.path().join("db.db");
        Connection::open(&db)
            .and_then(|c| c.execute_batch("CREATE TABLE other (x); INSERT INTO other VALUES (1);"))
            .map_err(sq)?;
        let per_row_ceiling = |indexes: u64| ROWS as u64 * (4 + 4 * indexes) + 200;

        for durability in [
            Durability::Balanced,
            Durability::Durable,
            Durability::Unsafe,
        ] {
            let target = Target::open(&db, durability, &Progress::default())?;
            let new_table = plain_create("t");
            let moved = target.transfer(
                &side,
                "t",
                Some(&new_table),
                &["CREATE INDEX t_c0 ON t (c0)".to_string()],
            )?;
            assert!(moved.copies_records, "{durability:?}: {moved:?}");
            assert_eq!(moved.rows, ROWS as u64);
            assert!(
                moved.vm_steps <= per_row_ceiling(1),
                "{durability:?}: {moved:?}"
            );
            target.commit()?;
            let c = Connection::open(&db).map_err(sq)?;
            let (n, ok): (i64, String) = c
                .query_row("SELECT (SELECT count(*) FROM t), (SELECT integrity_check FROM pragma_integrity_check)", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .map_err(sq)?;
            assert_eq!((n, ok.as_str()), (ROWS, "ok"), "{durability:?}");
            c.execute_batch("DROP TABLE t").map_err(sq)?;
        }

        // Into an existing plain table without index: records copied, new rowids.
        let target = Target::open(&db, Durability::Balanced, &Progress::default())?;
        target.run(&plain_create("t")).map_err(sq)?;
        target.run("INSERT INTO t (c0) VALUES (-1)").map_err(sq)?;
        let moved = target.transfer(&side, "t", None, &[])?;
        assert!(moved.copies_records, "{moved:?}");
        assert!(moved.vm_steps <= per_row_ceiling(0), "{moved:?}");
        target.abort();

        // A destination whose first column has another affinity: decoded, and seen.
        let target = Target::open(&db, Durability::Balanced, &Progress::default())?;
        let other = plain_create("t").replacen("INTEGER", "TEXT", 1);
        let moved = target.transfer(&side, "t", Some(&other), &[])?;
        assert!(!moved.copies_records, "{moved:?}");
        assert!(moved.vm_steps > ROWS as u64 * COLUMNS as u64, "{moved:?}");
        target.abort();
        let c = Connection::open(&db).map_err(sq)?;
        let tables: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 't'",
                [],
                |r| r.get(0),
            )
            .map_err(sq)?;
        assert_eq!(tables, 0, "an aborted append left its table");
        Ok(())
    }
}
