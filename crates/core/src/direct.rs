//! The direct engine: a new database file written page by page by `liteload-btree`
//! instead of through SQLite's insert path, for a new table whose rows arrive in rowid
//! order.
//!
//! Durability is `atomic-new`, as for the SQLite path: the file is built at
//! [`durability::temp_path`], synced, optionally checked by SQLite (`verify`:
//! `PRAGMA integrity_check` must say ok), and only then linked into place. An error or a
//! kill leaves no file at the target.

use std::path::Path;

use liteload_btree::{DbWriter, RecordBuilder, SeqFile, TableWriter, Value as Cell};

use crate::batch::{Batch, Value};
use crate::durability;
use crate::error::{Error, Hint, Result};
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
    /// The page writer where it surely applies, else SQLite's insert path: `Direct` for a
    /// new file with the default durability (`atomic-new`) and, for `import`, one CSV/TSV
    /// input or typed inputs (Parquet, Arrow) of one schema, without a primary key or
    /// added columns (JSON may grow columns after the sample, which the page writer
    /// refuses). Both make the same table; the page writer is faster
    /// (bench/README.md).
    Auto,
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
    table: &'t mut TableWriter<'d, SeqFile>,
    next_rowid: i64,
    /// For each table column: the batch column it comes from, or `None` for the rowid
    /// alias. The batch columns appear in order: 0, 1, 2, …
    layout: Vec<Option<usize>>,
    /// Entries of the indexes to write after the table.
    indexes: Vec<IndexEntries>,
    /// The most bytes of index entries kept in memory (all indexes together).
    index_memory: usize,
    record: RecordBuilder,
}

/// One index's entries, gathered while its table is written: a record of the key columns
/// and the rowid per row, in an arena, until [`IndexEntries::sorted_int_keys`] orders them.
#[derive(Debug)]
pub struct IndexEntries {
    /// The table columns of the key, in key order.
    pub columns: Vec<usize>,
    data: Vec<u8>,
    ends: Vec<usize>,
    /// Set when the entries outgrew the memory allowed: they were dropped, and SQLite
    /// builds this index on the finished file instead.
    pub given_up: bool,
}

impl IndexEntries {
    /// Entries of the index on the table columns `columns`, none gathered yet.
    pub fn new(columns: Vec<usize>) -> Self {
        IndexEntries {
            columns,
            data: vec![],
            ends: vec![],
            given_up: false,
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len() + self.ends.len() * std::mem::size_of::<usize>()
    }

    /// The entries in SQLite's index order (key columns, then rowid), when the key is
    /// one integer column (every entry two integers): they sort as 128-bit numbers.
    /// Other keys give `None`: sorting them by decoding records measured slower than
    /// SQLite's own `CREATE INDEX` (an integer key: 5.7 s against 7.9 s for 10M rows; a
    /// text key: 16.1 s against 8.7 s), so SQLite builds those.
    pub fn sorted_int_keys(&self) -> Option<Vec<&[u8]>> {
        let mut v: Vec<&[u8]> = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for &end in &self.ends {
            v.push(&self.data[start..end]);
            start = end;
        }
        if v.len() >= u32::MAX as usize {
            return None;
        }
        // Order-preserving: i64 to u64 by flipping the sign bit.
        let flip = |i: i64| (i as u64) ^ (1 << 63);
        let mut keys: Vec<(u128, u32)> = v
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let (k, rowid) = liteload_btree::index::int_pair(r)?;
                Some((
                    (u128::from(flip(k)) << 64) | u128::from(flip(rowid)),
                    i as u32,
                ))
            })
            .collect::<Option<_>>()?;
        // On every core: 10% of the CPU of a 10M-row import with an integer index when
        // it ran on one thread.
        rayon::slice::ParallelSliceMut::par_sort_unstable_by_key(&mut keys[..], |k| k.0);
        Some(keys.iter().map(|&(_, i)| v[i as usize]).collect())
    }
}

impl<'t, 'd> DirectSink<'t, 'd> {
    /// A sink that writes rows through `table`, starting at rowid `first_rowid`; `layout` gives, for each table column, the batch column it comes from (in order) or `None` for NULL.
    pub fn new(
        table: &'t mut TableWriter<'d, SeqFile>,
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
            indexes: vec![],
            index_memory: usize::MAX,
            record: RecordBuilder::new(),
        }
    }

    /// Also gathers the entries of these indexes (see [`DirectSink::into_indexes`]).
    /// Entries beyond `memory` bytes in all are given up (see [`IndexEntries::given_up`]).
    pub fn with_indexes(mut self, indexes: Vec<IndexEntries>, memory: usize) -> Self {
        self.indexes = indexes;
        self.index_memory = memory;
        self
    }

    /// The index entries gathered.
    pub fn into_indexes(self) -> Vec<IndexEntries> {
        self.indexes
    }
}

impl Sink for DirectSink<'_, '_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        _bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        let indexing = self.indexes.iter().any(|ix| !ix.given_up);
        if let Some(records) = batch.records() {
            // Rows the source encoded already; in column order (a load's layout takes
            // every batch column in order), and nothing to index here.
            debug_assert!(!indexing && self.layout.iter().all(Option::is_some));
            for record in records.iter() {
                self.table
                    .push_record(self.next_rowid, record)
                    .map_err(|e| from_btree(e, None))?;
                self.next_rowid += 1;
            }
            return Ok(batch.rows() as u64);
        }
        let mut cells: Vec<Cell<'_>> = Vec::with_capacity(self.layout.len());
        for r in 0..batch.rows() {
            // The layout takes batch columns in order (checked in `new`), so one pass
            // over the row fills the table's columns.
            let mut row = batch.row(r);
            let record = &mut self.record;
            record.clear();
            cells.clear();
            for from in &self.layout {
                let cell = match from.and_then(|_| row.next()) {
                    None | Some(Value::Null) => Cell::Null,
                    Some(Value::Integer(i)) => Cell::Integer(i),
                    Some(Value::Real(f)) => Cell::Real(f),
                    Some(Value::Text(s)) => Cell::Text(s.as_bytes()),
                    Some(Value::Blob(b)) => Cell::Blob(b),
                };
                record.value(&cell);
                if indexing {
                    cells.push(cell);
                }
            }
            self.table
                .push_built(self.next_rowid, record)
                .map_err(|e| from_btree(e, None))?;
            for ix in self.indexes.iter_mut().filter(|ix| !ix.given_up) {
                let n = ix.columns.len();
                let rowid = Cell::Integer(self.next_rowid);
                if n < 8 {
                    let mut key = [Cell::Null; 8];
                    for (k, &c) in key.iter_mut().zip(&ix.columns) {
                        *k = cells[c];
                    }
                    key[n] = rowid;
                    liteload_btree::record::encode(&key[..=n], &mut ix.data);
                } else {
                    let key: Vec<Cell<'_>> = ix
                        .columns
                        .iter()
                        .map(|&c| cells[c])
                        .chain([rowid])
                        .collect();
                    liteload_btree::record::encode(&key, &mut ix.data);
                }
                ix.ends.push(ix.data.len());
            }
            self.next_rowid += 1;
        }
        let held: usize = self.indexes.iter().map(IndexEntries::bytes).sum();
        if held > self.index_memory {
            for ix in &mut self.indexes {
                *ix = IndexEntries {
                    given_up: true,
                    ..IndexEntries::new(std::mem::take(&mut ix.columns))
                };
            }
        }
        Ok(batch.rows() as u64)
    }

    fn add_columns(&mut self, _columns: &[(String, ColumnType)]) -> Result<()> {
        Err(
            Error::plan("the direct engine writes a fixed set of columns")
                .with_hint(Hint::SqliteEngine),
        )
    }
}

/// The direct engine only builds new files: an error if `db` exists.
pub fn refuse_existing(db: &Path) -> Result<()> {
    if db.exists() {
        return Err(Error::plan(format!(
            "{}: the direct engine builds a new file, but this one exists",
            db.display()
        ))
        .with_hint(Hint::SqliteEngine));
    }
    Ok(())
}

/// Builds a new database at `db` holding one table: `create_sql` names it `table`, and
/// `fill` pushes its rows (through a [`DirectSink`] or directly); `indexes` may then add
/// index b-trees to the file and returns SQL (CREATE INDEX …) for SQLite to run on the
/// finished file. With `verify`, SQLite checks the file. All of it happens before the
/// file is put in place, and only if `progress` was not cancelled. Returns what `fill`
/// returned.
#[allow(clippy::too_many_arguments)]
pub fn build_new<T>(
    db: &Path,
    page_size: u32,
    table: &str,
    create_sql: &str,
    verify: bool,
    progress: &crate::summary::Progress,
    fill: impl FnOnce(&mut TableWriter<'_, SeqFile>) -> Result<T>,
    indexes: impl FnOnce(&mut DbWriter<SeqFile>, &mut T) -> Result<Vec<String>>,
) -> Result<(T, Vec<String>)> {
    refuse_existing(db)?;
    let tmp = durability::temp_path(db);
    let notes: Vec<String> = durability::clear_stale(&tmp)?.into_iter().collect();
    let result = (|| -> Result<T> {
        let err = |e| from_btree(e, Some(&tmp));
        let mut w = DbWriter::create(&tmp, page_size).map_err(&err)?;
        let mut t = w.table(table, create_sql);
        let mut out = fill(&mut t)?;
        t.finish().map_err(&err)?;
        let after = indexes(&mut w, &mut out)?;
        w.finish().map_err(&err)?;
        if !after.is_empty() {
            // Indexes and the like: SQLite builds them on the finished file, still under
            // the temp name, journal in memory (a crash leaves no file at the target).
            let conn = rusqlite::Connection::open(&tmp)
                .map_err(|e| Error::sqlite("opening the written file", e))?;
            crate::sqlite_info::configure(&conn)
                .map_err(|e| Error::sqlite("configuring the connection", e))?;
            conn.execute_batch(crate::durability::Durability::AtomicNew.pragmas())
                .map_err(|e| Error::sqlite("setting up the written file", e))?;
            for sql in &after {
                progress.check()?;
                conn.execute_batch(sql).map_err(|e| {
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) {
                        // The data does not fit the index asked for: as on SQLite's path.
                        Error::plan(format!("{sql}: two rows have the same key ({e})"))
                    } else {
                        Error::sqlite(format!("running {sql}"), e)
                    }
                })?;
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
                    "verifying: SQLite's integrity_check found problems in the written file: {ok}"
                )));
            }
        }
        progress.check()?;
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
