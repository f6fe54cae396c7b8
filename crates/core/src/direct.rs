//! The direct engine: a new database file written page by page by `liteload-btree`
//! instead of through SQLite's insert path, for a new table whose rows arrive in rowid
//! order.
//!
//! Durability is `atomic-new`, as for the SQLite path: the file is built at
//! [`durability::temp_path`], synced, optionally checked by SQLite (`verify`:
//! `PRAGMA integrity_check` must say ok), and only then linked into place. An error or a
//! kill leaves no file at the target.

use std::fs::File;
use std::path::Path;

use liteload_btree::{DbWriter, TableWriter, Value as Cell};

use crate::batch::{Batch, Value};
use crate::durability;
use crate::error::{Error, Result};
use crate::sink::Sink;
use crate::types::ColumnType;

/// Which writer loads the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Engine {
    /// SQLite's insert path (any target, any durability).
    #[default]
    Sqlite,
    /// The page writer (a new file, `atomic-new`).
    Direct,
}

/// SQLite's default page size, used when none is asked for.
pub const DEFAULT_PAGE_SIZE: u32 = 4096;

/// A page writer's error: I/O as I/O (with the file when known), the rest as a plan error.
fn from_btree(e: liteload_btree::Error, path: Option<&Path>) -> Error {
    match e {
        liteload_btree::Error::Io(io) => Error::io(path.map(Path::to_path_buf), io),
        other => Error::plan(other.to_string()),
    }
}

/// A sink that appends each batch's rows to a table being written directly. Row `i` of
/// the load gets rowid `first_rowid + i`; the column at `rowid_alias` (an INTEGER PRIMARY
/// KEY) is stored as NULL, as SQLite stores it.
pub struct DirectSink<'t, 'd> {
    table: &'t mut TableWriter<'d, File>,
    next_rowid: i64,
    /// For each table column: the batch column it comes from, or `None` for the rowid
    /// alias. The batch columns appear in order: 0, 1, 2, …
    layout: Vec<Option<usize>>,
}

impl<'t, 'd> DirectSink<'t, 'd> {
    pub fn new(
        table: &'t mut TableWriter<'d, File>,
        first_rowid: i64,
        layout: Vec<Option<usize>>,
    ) -> Self {
        assert!(
            layout
                .iter()
                .flatten()
                .copied()
                .eq(0..layout.iter().flatten().count()),
            "the layout takes every batch column once, in order"
        );
        DirectSink {
            table,
            next_rowid: first_rowid,
            layout,
        }
    }
}

impl Sink for DirectSink<'_, '_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        _bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        let mut cells: Vec<Cell<'_>> = Vec::with_capacity(self.layout.len());
        for r in 0..batch.rows() {
            // The layout takes batch columns in order (checked in `new`), so one pass
            // over the row fills the table's columns.
            let mut row = batch.row(r);
            cells.clear();
            cells.extend(
                self.layout
                    .iter()
                    .map(|from| match from.and_then(|_| row.next()) {
                        None | Some(Value::Null) => Cell::Null,
                        Some(Value::Integer(i)) => Cell::Integer(i),
                        Some(Value::Real(f)) => Cell::Real(f),
                        Some(Value::Text(s)) => Cell::Text(s.as_bytes()),
                    }),
            );
            self.table
                .push(self.next_rowid, &cells)
                .map_err(|e| from_btree(e, None))?;
            self.next_rowid += 1;
        }
        Ok(batch.rows() as u64)
    }

    fn add_columns(&mut self, _columns: &[(String, ColumnType)]) -> Result<()> {
        Err(Error::plan(
            "the direct engine writes a fixed set of columns; use --engine sqlite",
        ))
    }
}

/// Builds a new database at `db` holding one table: `create_sql` names it `table`, and
/// `fill` pushes its rows (through a [`DirectSink`] or directly). SQLite then runs the
/// statements in `after` (CREATE INDEX …) on the finished file and, with `verify`, checks
/// it, all before it is put in place. Returns what `fill` returned.
pub fn build_new<T>(
    db: &Path,
    page_size: u32,
    table: &str,
    create_sql: &str,
    after: &[String],
    verify: bool,
    fill: impl FnOnce(&mut TableWriter<'_, File>) -> Result<T>,
) -> Result<(T, Vec<String>)> {
    if db.exists() {
        return Err(Error::plan(format!(
            "{}: the direct engine builds a new file, but this one exists (use --engine sqlite to add to it)",
            db.display()
        )));
    }
    let tmp = durability::temp_path(db);
    let mut notes = vec![];
    if tmp.exists() {
        std::fs::remove_file(&tmp).map_err(|e| Error::io(Some(tmp.clone()), e))?;
        notes.push(format!(
            "removed {}, left by an interrupted run",
            tmp.display()
        ));
    }
    let result = (|| -> Result<T> {
        let err = |e| from_btree(e, Some(&tmp));
        let mut w = DbWriter::create(&tmp, page_size).map_err(&err)?;
        let mut t = w.table(table, create_sql);
        let out = fill(&mut t)?;
        t.finish().map_err(&err)?;
        w.finish().map_err(&err)?;
        if !after.is_empty() {
            // Indexes and the like: SQLite builds them on the finished file, still under
            // the temp name, journal in memory (a crash leaves no file at the target).
            let conn = rusqlite::Connection::open(&tmp)
                .map_err(|e| Error::sqlite("opening the written file", e))?;
            conn.execute_batch(crate::durability::Durability::AtomicNew.pragmas())
                .map_err(|e| Error::sqlite("setting up the written file", e))?;
            for sql in after {
                conn.execute_batch(sql)
                    .map_err(|e| Error::sqlite(format!("running {sql}"), e))?;
            }
            conn.close()
                .map_err(|(_, e)| Error::sqlite("closing the written file", e))?;
        }
        if verify {
            let conn = rusqlite::Connection::open(&tmp)
                .map_err(|e| Error::sqlite("opening the written file to verify it", e))?;
            let ok: String = conn
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .map_err(|e| Error::sqlite("running integrity_check", e))?;
            if ok != "ok" {
                return Err(Error::plan(format!(
                    "--verify: SQLite's integrity_check found problems in the written file: {ok}"
                )));
            }
        }
        Ok(out)
    })();
    match result {
        Ok(out) => {
            durability::publish(&tmp, db)?;
            Ok((out, notes))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
