//! The page writer as a sink ([`PageSink`]): one table's rows written page by page by
//! `liteload-btree` into a file nothing else sees yet, its indexes after them, then the
//! file put in place (a new database) or left for the side file's transfer (see
//! [`super::side_file`]).
//!
//! A new database is built at [`crate::durability::temp_path`], synced, optionally
//! checked by SQLite (`integrity_check` must say ok), and only then linked into place:
//! an error, a cancel or a kill leaves no file at the target.

mod entries;
pub(crate) mod file;
pub(crate) mod stored;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use liteload_btree::journal::{self, DiskFiles};
use liteload_btree::{
    DbWriter, DetachedTable, Existing, IndexRoot, RecordBuilder, SeqFile, TableEdge, TableWriter,
    Value as Cell,
};

use super::row_rules::{self, Origins, RowRules};
use super::{BatchSink, SampledTable, Sink, TablePlan, TableStart};
use crate::batch::{Batch, Value};
use crate::destination::{in_place_takes, side_file_takes, Destination, ExactIndex, ExactTable};
use crate::durability::{self, Durability};
use crate::error::{Error, Hint, Result};
use crate::names::Names;
use crate::plan::TableShape;
use crate::plan::WriteRules;
use crate::progress::{Progress, Stage};
use crate::schema::quote_ident;
use crate::summary::{Durable, EngineUsed, Summary};
use crate::table::{self, IndexSpec};
use crate::types::ColumnType;
use entries::{IndexEntries, SortedEntries};
use file::from_btree;

/// Where the page writer's file goes.
pub(crate) enum PageOut {
    /// A new database at this path, built beside it and moved into place.
    New(PathBuf),
    /// An append's side file at this path, written through the page cache and left
    /// there for the transfer (its owner removes it).
    Side(PathBuf),
    /// A new table in the existing database at this path, written in place past its
    /// end under a rollback journal (see [`InPlace`]), the file then left in the journal
    /// mode of this profile (WAL for `balanced` and `durable`, as every road leaves it).
    InPlace(PathBuf, Durability),
}

/// A database extended in place (see `liteload_btree::journal`): the new table's pages
/// past the file's end, page 1 and the schema's right edge changed in place after their
/// old contents went to a rollback journal. The connection holds SQLite's EXCLUSIVE lock
/// from before the file is read until the journal is removed (the commit point) or the
/// change is undone. Closing any descriptor of the file drops the process's POSIX locks
/// on it, so the descriptors this sink opens stay open while the change is under way,
/// and close once the file is consistent again but before the connection releases its
/// lock: a lock another connection of this process takes after that release is never
/// dropped by their closing. (In between, another process may find the file unlocked
/// and sees it committed, or plays back a journal left hot.)
struct InPlace {
    /// In a `BEGIN EXCLUSIVE` transaction until the end.
    conn: rusqlite::Connection,
    /// Whether `conn` is in SQLite's EXCLUSIVE locking mode (opened so for a file in WAL
    /// mode): its page cache does not see the change, so the file is read through
    /// another connection once it is committed.
    exclusive: bool,
    /// Whether the file is in WAL mode (checkpointed and emptied under the lock), which
    /// it stays in.
    wal: bool,
    files: DiskFiles,
    base: Existing,
    /// Whether a journal may exist that this sink must play back if it stops early.
    journaled: bool,
    /// The page writer's output once finished, held until the lock is released.
    out: Option<SeqFile>,
}

/// The page writer for the tables of a new file: one, or several with their shapes.
pub(crate) struct PageSink<'p> {
    out: PageOut,
    page_size: u32,
    /// Indexes built after the rows.
    indexes: Vec<IndexSpec>,
    /// Bytes of index entries held in memory before they spill to sorted runs.
    index_memory: usize,
    verify: bool,
    progress: &'p Progress,
    /// The file being written while it is this sink's to remove (a failed or dropped
    /// load removes it).
    writing: Option<PathBuf>,
    building: Option<Building>,
    /// Notes of the page writer (a stale temp file removed, …).
    notes: Vec<String>,
    /// The table's CREATE TABLE once finished (with the columns it gained).
    create: Option<String>,
    /// The definition to copy, for a side file of a table that exists (else the page
    /// writer's own CREATE TABLE and index names).
    given: Option<GivenSchema>,
    /// Whether a UNIQUE index of a given schema met two rows with one key (written all
    /// the same: such a side file is read row by row, never transferred).
    duplicate_keys: bool,
    /// The tables of a load of several, each begun in turn (empty: one table, with
    /// `indexes`).
    shapes: Vec<TableShape>,
    /// The file's writer once a table has ended and another may follow.
    between: Option<DbWriter<SeqFile>>,
    /// CREATE INDEX statements of ended tables whose entries were given up, for SQLite
    /// to run on the finished file.
    by_sqlite: Vec<String>,
    /// Whether the table being written takes its rowids from a column.
    keyed: bool,
    /// The names of the file's schema objects: its tables' (all of a load of several,
    /// claimed before any index is named) and its indexes' as they are named.
    names: Names,
    /// The database being extended in place, from its table's begin to its end.
    in_place: Option<InPlace>,
    /// What a load in place does with a table that exists (appends to it, or the load
    /// is refused).
    if_exists: crate::table::IfExists,
    /// For rows appended in place to a table that exists: its largest rowid before.
    appended_after: Option<i64>,
    /// How many of the indexes of the table appended to in place had entries, merged
    /// with the new ones.
    merged: usize,
    /// For a table made beforehand with constraints, filled in place: its rules and
    /// what the rows did to them.
    exact: Option<ExactInPlace>,
}

/// An empty table made beforehand with indexes or constraints (NOT NULL, STRICT, CHECK,
/// UNIQUE and PRIMARY KEY indexes), filled in place: its rows after its (empty) edge,
/// each of its indexes into its own root page. NOT NULL and STRICT are checked record by
/// record (with a CHECK constraint, every rule of the row by SQLite: each row put to a
/// copy of the table in memory, see [`row_rules::Checks`]), UNIQUE keys as the indexes
/// are built; a row that
/// breaks one fails the load before the commit point, with the reason SQLite's insert
/// path gives for the first row it would refuse (the plan takes this road only when bad
/// records are not set aside, which pages once written cannot do).
struct ExactInPlace {
    /// The table's actual name and definition.
    name: String,
    table: ExactTable,
    rules: RowRules,
    /// Whether each index (in the page writer's order) is the PRIMARY KEY's.
    primary: Vec<bool>,
    /// The input's name, for positions.
    source: Arc<str>,
    /// Where each row came from (row `rowid - 1`).
    origins: Origins,
    /// The first row that broke NOT NULL or STRICT: its rowid and SQLite's refusal.
    broken: Option<(i64, Error)>,
    /// The first row a UNIQUE index refuses: its rowid and the index (its position).
    repeated: Option<(i64, usize)>,
    /// For a table with CHECK constraints: each row put to a copy of it in memory
    /// (which holds the table's other rules too).
    checks: Option<row_rules::Checks>,
}

impl ExactInPlace {
    /// The first row SQLite's insert path would refuse, if any: its refusal.
    fn refusal(&mut self) -> Option<Error> {
        let repeat = self
            .repeated
            .filter(|&(rowid, _)| self.broken.as_ref().is_none_or(|(first, _)| rowid < *first));
        let Some((rowid, ix)) = repeat else {
            return self.broken.take().map(|(_, e)| e);
        };
        let index = &self.table.indexes[ix];
        let message = format!(
            "UNIQUE constraint failed: {}",
            index
                .columns
                .iter()
                .map(|c| format!("{}.{c}", self.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        // SQLITE_CONSTRAINT_PRIMARYKEY for the key, SQLITE_CONSTRAINT_UNIQUE otherwise.
        let code = if self.primary[ix] {
            1555
        } else {
            crate::error::UNIQUE
        };
        Some(Error::constraint(
            Some(code),
            Some(self.origins.position(rowid)),
            message,
        ))
    }
}

/// The connection holding SQLite's EXCLUSIVE lock on a file extended in place, and what
/// it found (see [`InPlace`]).
struct Locked {
    conn: rusqlite::Connection,
    wal: bool,
    exclusive: bool,
}

/// A table that exists, which a load in place adds rows to.
struct Appending {
    /// Its actual name and its columns.
    name: String,
    cols: Vec<(String, ColumnType)>,
    edge: TableEdge,
    /// For an empty table made beforehand with constraints: its definition, its indexes'
    /// roots to fill (in its order), and which index is the PRIMARY KEY's.
    exact: Option<(ExactTable, Vec<IndexRoot>, Vec<bool>)>,
}

/// For each index of `table` (named `name` in `conn`'s database), whether it is the
/// automatic index of its PRIMARY KEY (`PRAGMA index_list`'s origin `pk`).
fn primary_indexes(
    conn: &rusqlite::Connection,
    name: &str,
    table: &ExactTable,
) -> Result<Vec<bool>> {
    let ctx = |e| Error::sqlite(format!("reading the indexes of {}", quote_ident(name)), e);
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_index_list(?1) WHERE origin = 'pk'")
        .map_err(ctx)?;
    let pk: Vec<String> = stmt
        .query_map([name], |r| r.get(0))
        .map_err(ctx)?
        .collect::<rusqlite::Result<_>>()
        .map_err(ctx)?;
    Ok(table
        .indexes
        .iter()
        .map(|ix| pk.iter().any(|p| p == &ix.name))
        .collect())
}

/// An existing table's definition, which a side file repeats word for word so that
/// SQLite's transfer takes the two as the same (see [`crate::destination::Destination`]).
#[derive(Clone, Debug)]
pub(crate) struct GivenSchema {
    /// The table's CREATE TABLE as SQLite keeps it.
    pub(crate) create: String,
    /// For each index of the page writer (in its order): the name, and the CREATE INDEX
    /// text (`None` for an automatic index of a UNIQUE or PRIMARY KEY constraint).
    pub(crate) indexes: Vec<(String, Option<String>)>,
}

/// The table being built.
struct Building {
    db: DbWriter<SeqFile>,
    /// The table, set aside between calls (`None` only while a call holds it).
    table: Option<DetachedTable>,
    name: String,
    /// Its columns as begun.
    cols: Vec<(String, ColumnType)>,
    create: String,
    rows: Rows,
    spill_dir: PathBuf,
    /// Its indexes, built after its rows.
    indexes: Vec<IndexSpec>,
    /// For an existing table's empty indexes filled in place: their roots, one for each
    /// of `indexes` (empty otherwise: each index is a new one).
    fill: Vec<IndexRoot>,
}

impl<'p> PageSink<'p> {
    /// A page writer into `out` with pages of `page_size` bytes, building `indexes`
    /// after the rows (entries past `index_memory` bytes spill to sorted runs beside
    /// the file); with `verify`, SQLite checks the file before it is put in place.
    pub(crate) fn new(
        out: PageOut,
        page_size: u32,
        indexes: Vec<IndexSpec>,
        index_memory: usize,
        verify: bool,
        progress: &'p Progress,
    ) -> Self {
        PageSink {
            out,
            page_size,
            indexes,
            index_memory,
            verify,
            progress,
            writing: None,
            building: None,
            notes: vec![],
            create: None,
            given: None,
            duplicate_keys: false,
            shapes: vec![],
            between: None,
            by_sqlite: vec![],
            keyed: false,
            names: Names::new(),
            in_place: None,
            if_exists: crate::table::IfExists::Append,
            appended_after: None,
            merged: 0,
            exact: None,
        }
    }

    /// A page writer that adds a new table to the existing database `db` in place, rows
    /// after the last of a table there without index or constraint, or the rows of an
    /// empty table made beforehand with indexes or constraints (see `ExactInPlace`), as
    /// `rules` ask (indexes, index memory, verification; the file keeps its page size).
    pub(crate) fn in_place(
        db: &Path,
        durability: Durability,
        rules: &WriteRules,
        progress: &'p Progress,
    ) -> Self {
        let mut sink = PageSink::new(
            PageOut::InPlace(db.to_path_buf(), durability),
            rules.page_size.unwrap_or(file::DEFAULT_PAGE_SIZE),
            rules.indexes.clone(),
            rules.index_memory,
            rules.verify,
            progress,
        );
        sink.if_exists = rules.if_exists;
        sink
    }

    /// A page writer that makes the new file `db`, as `rules` ask (page size, indexes,
    /// index memory, verification).
    pub(crate) fn new_file(db: &Path, rules: &WriteRules, progress: &'p Progress) -> Self {
        PageSink::new(
            PageOut::New(db.to_path_buf()),
            rules.page_size.unwrap_or(file::DEFAULT_PAGE_SIZE),
            rules.indexes.clone(),
            rules.index_memory,
            rules.verify,
            progress,
        )
    }

    /// Writes several tables into the one file, each begun in turn with its shape (a
    /// table begun without one is refused).
    pub(crate) fn with_tables(mut self, shapes: Vec<TableShape>) -> Self {
        for s in &shapes {
            self.names.claim(&s.table);
        }
        self.shapes = shapes;
        self
    }

    /// Ends the table being written (its b-tree, then its indexes), keeping the file's
    /// writer for the next table.
    fn end_table(&mut self) -> Result<DbWriter<SeqFile>> {
        let Some(mut b) = self.building.take() else {
            return Err(Error::internal("the page writer finished without a table"));
        };
        let path = self.writing.clone().expect("a table begun has its file");
        let table = b
            .table
            .take()
            .expect("the table is set aside between calls");
        let given = self.given.as_ref().map(|g| g.indexes.as_slice());
        for (name, _) in given.unwrap_or_default() {
            self.names.claim(name);
        }
        let indexes = std::mem::take(&mut b.indexes);
        let written =
            b.db.attach(table)
                .finish()
                .map_err(|e| from_btree(e, Some(&path)))
                .and_then(|_| {
                    let file = self.in_place.as_mut().map(|ip| &*ip.files.db());
                    write_indexes(
                        &mut b,
                        &indexes,
                        given,
                        &mut self.names,
                        self.progress,
                        file,
                    )
                });
        let written = match written {
            Ok(w) => w,
            Err(e) => {
                // Kept for the end (its output holds descriptors of a file changed in
                // place, which close only once it is consistent again).
                self.building = Some(b);
                return Err(e);
            }
        };
        self.by_sqlite.extend(written.by_sqlite);
        self.duplicate_keys |= written.duplicates;
        if let (Some(x), Some(repeat)) = (self.exact.as_mut(), written.first_repeat) {
            x.repeated = Some(repeat);
        }
        // The table's text, with the columns it gained (the page writer stored the same).
        let grown = b.rows.columns().filter(|c| c.len() != b.cols.len());
        self.create = Some(match grown {
            Some(cols) => table::create_sql(&b.name, cols, &[]),
            None => std::mem::take(&mut b.create),
        });
        Ok(b.db)
    }

    /// Writes the table with `given`'s definition and index names instead of its own:
    /// `given.indexes` pairs with this writer's indexes, and the rows must be those of
    /// the table `given.create` makes, in its column order.
    pub(crate) fn with_schema(mut self, given: GivenSchema) -> Self {
        debug_assert_eq!(given.indexes.len(), self.indexes.len());
        self.given = Some(given);
        self
    }

    /// Whether a UNIQUE index of the given schema holds two rows with one key (known once
    /// [`Sink::finish`] returned).
    pub(crate) fn duplicate_keys(&self) -> bool {
        self.duplicate_keys
    }

    /// The table's CREATE TABLE as stored, once [`Sink::finish`] returned.
    pub(crate) fn create_sql(&self) -> Option<&str> {
        self.create.as_deref()
    }

    /// Runs `f` on the table writer, taken back from where it is set aside.
    fn with_table<T>(
        &mut self,
        f: impl FnOnce(&mut Rows, &mut TableWriter<'_, SeqFile>) -> Result<T>,
    ) -> Result<T> {
        let b = self
            .building
            .as_mut()
            .ok_or_else(|| Error::internal("rows came before the page writer's table"))?;
        let detached = b
            .table
            .take()
            .expect("the table is set aside between calls");
        let mut t = b.db.attach(detached);
        let out = f(&mut b.rows, &mut t);
        b.table = Some(t.detach());
        out
    }
}

impl Drop for PageSink<'_> {
    fn drop(&mut self) {
        if let Some(mut ip) = self.in_place.take() {
            // Not committed: the file as it was. What the writer holds goes out first,
            // so that nothing reaches the file after it is cut back.
            if let Some(b) = self.building.as_mut() {
                let _ = b.db.flush();
            }
            if let Some(db) = self.between.as_mut() {
                let _ = db.flush();
            }
            if ip.journaled {
                // Where this fails, the journal stays hot and SQLite plays it back.
                let _ = journal::roll_back(&mut ip.files, &ip.base);
            }
            // The file is as it was (or its journal hot): the descriptors close, then
            // the lock is released (see `InPlace`).
            self.building = None;
            self.between = None;
            let InPlace {
                conn, files, out, ..
            } = ip;
            drop((files, out));
            let _ = conn.execute_batch("ROLLBACK");
            self.writing = None;
            return;
        }
        // Not finished: nothing of it may stay.
        if let Some(path) = self.writing.take() {
            self.building = None;
            let _ = std::fs::remove_file(path);
        }
    }
}

impl BatchSink for PageSink<'_> {
    fn write_batch(
        &mut self,
        batch: &Batch,
        _bad: &mut dyn FnMut(usize, Error) -> Result<()>,
    ) -> Result<u64> {
        if let Some(x) = self.exact.as_mut() {
            // Written all the same: the load fails before its commit point if anything
            // broke a rule (see `ExactInPlace`), with the first row SQLite would refuse.
            let first = x.origins.len() as i64 + 1;
            x.origins.push(batch);
            if x.broken.is_none() {
                if let Some(checks) = x.checks.as_mut() {
                    if let Some((r, refused)) = checks.first_refused(batch, &x.source)? {
                        x.broken = Some((first + r as i64, refused));
                    }
                } else if let Some(r) = x.rules.first_broken(batch) {
                    let refused = row_rules::refusal(&x.table.create, &x.name, &x.source, batch, r);
                    x.broken = Some((first + r as i64, refused));
                }
            }
        }
        self.with_table(|rows, t| rows.write(t, batch))
    }

    fn add_columns(&mut self, columns: &[(String, ColumnType)]) -> Result<()> {
        self.with_table(|rows, t| rows.add_columns(t, columns))
    }
}

impl Sink for PageSink<'_> {
    fn begin(&mut self, sampled: &SampledTable<'_>) -> Result<TableStart> {
        if let PageOut::InPlace(db, _) = &self.out {
            let db = db.clone();
            if self.shapes.is_empty() {
                if self.building.is_some() || self.create.is_some() {
                    return Err(Error::internal("the page writer writes one table in place"));
                }
                return self.begin_in_place(&db, sampled);
            }
            if self.in_place.is_none() {
                // Several tables (a copy of a database): the file is locked and
                // journaled before the first, and each is then written as into a new
                // file, past the old end.
                let writer = self.open_in_place(&db, None)?;
                self.between = Some(writer);
            }
        }
        let (name, columns) = (sampled.table, sampled.columns);
        let shape = if self.shapes.is_empty() {
            if self.building.is_some() || self.create.is_some() {
                return Err(Error::internal("the page writer writes one table"));
            }
            self.names.claim(name);
            None
        } else {
            let shape = self
                .shapes
                .iter()
                .find(|s| s.table == name)
                .cloned()
                .ok_or_else(|| Error::internal(format!("no shape for table {name:?}")))?;
            if self.building.is_some() {
                let db = self.end_table()?;
                self.between = Some(db);
            }
            Some(shape)
        };
        let indexes = shape
            .as_ref()
            .map_or_else(|| self.indexes.clone(), |s| s.indexes.clone());
        let rowid = match shape.as_ref().and_then(|s| s.rowid.as_ref()) {
            Some(k) => Some(
                columns
                    .iter()
                    .position(|c| c.eq_ignore_ascii_case(k))
                    .filter(|&i| sampled.types[i] == ColumnType::Integer)
                    .ok_or_else(|| {
                        Error::internal(format!("the key {k:?} is no INTEGER column of {name:?}"))
                    })?,
            ),
            None => None,
        };
        self.keyed = rowid.is_some();
        check_columns(name, columns, &indexes)?;
        let cols: Vec<(String, ColumnType)> = columns
            .iter()
            .cloned()
            .zip(sampled.types.iter().copied())
            .collect();
        let declared = shape.as_ref().and_then(|s| s.declared.clone());
        let create = match (&self.given, declared) {
            (Some(given), _) => given.create.clone(),
            (None, Some(declared)) => declared,
            (None, None) => {
                crate::schema::check_new_table(name, columns.iter().map(String::as_str))?;
                let pk: Vec<String> = rowid.iter().map(|&i| columns[i].clone()).collect();
                let none = table::Constraints::default();
                let constraints = shape.as_ref().map_or(&none, |s| &s.constraints);
                table::create_sql_referencing(name, &cols, &pk, constraints)
            }
        };
        let (mut db, grows) = match self.between.take() {
            // The next table of a load of several, in the same file.
            Some(db) => (db, sampled.grows),
            None => (self.create_file()?, sampled.grows),
        };
        let path = self.writing.clone().expect("a table begun has its file");
        let spill_dir = spill_dir_of(&path);
        let mut rows = self.rows_for(&indexes, columns, rowid, &spill_dir, 1);
        if grows {
            let pk: Vec<String> = rowid.iter().map(|&i| columns[i].clone()).collect();
            let constraints = shape
                .as_ref()
                .map_or_else(Default::default, |s| s.constraints.clone());
            rows = rows.growing(name, cols.clone(), pk, constraints);
        }
        let table = db.table(name, &create).detach();
        Ok(self.building(
            Building {
                db,
                table: Some(table),
                name: name.to_string(),
                cols,
                create,
                rows,
                spill_dir,
                indexes,
                fill: vec![],
            },
            columns,
            sampled.types.to_vec(),
            grows,
        ))
    }

    fn take_pages(
        &mut self,
        src: &mut dyn crate::source::Source,
        progress: &Progress,
    ) -> Option<Result<u64>> {
        // A table whose rows fill its leaves in order and nothing else: no index to
        // gather entries for, no rowid taken from a column, no column to add.
        let b = self.building.as_ref()?;
        if !b.indexes.is_empty()
            || self.keyed
            || b.rows.columns().is_some()
            || self.appended_after.is_some()
        {
            return None;
        }
        let page_size = self.page_size;
        match self.with_table(|_, t| src.write_pages(t, page_size, progress).transpose()) {
            Ok(None) => None,
            Ok(Some(rows)) => Some(Ok(rows)),
            Err(e) => Some(Err(e)),
        }
    }

    fn wants_records(&self) -> bool {
        // The parser encodes the records on its threads instead of the writer (10M-row
        // TSV: see bench/README.md); index keys are read back from them. A table whose
        // rowids come from a column stores NULL there, which the record would not.
        !self.keyed
    }

    fn wants_numbered_records(&self) -> bool {
        // Rows numbered from 1 are the rowids a table begun at 1 gives them in order.
        !self.keyed
            || self.building.as_ref().is_some_and(|b| {
                b.rows.next_rowid == 1 && b.rows.layout.iter().all(Option::is_some)
            })
    }

    fn finish(&mut self, summary: &mut Summary) -> Result<()> {
        let db = self.end_table()?;
        if self.in_place.is_some() {
            return self.commit_in_place(db, summary);
        }
        let path = self.writing.clone().expect("a table begun has its file");
        db.finish().map_err(|e| from_btree(e, Some(&path)))?;
        file::complete(&path, &self.by_sqlite, self.verify, self.progress)?;
        summary.rows_per_statement = 0;
        summary.engine = Some(EngineUsed::Direct);
        summary.verified = self.verify;
        if let PageOut::New(db) = &self.out {
            durability::publish(&path, db)?;
            summary.durability = Durable::Profile(Durability::AtomicNew);
        }
        // Published, or a side file its owner removes.
        self.writing = None;
        summary.notes.append(&mut self.notes);
        Ok(())
    }
}

impl PageSink<'_> {
    /// Starts writing `b`, whose batches carry `columns` of `types`.
    fn building(
        &mut self,
        b: Building,
        columns: &[String],
        types: Vec<ColumnType>,
        may_alter: bool,
    ) -> TableStart {
        let table = b.name.clone();
        self.building = Some(b);
        TableStart::Write(TablePlan {
            table,
            columns: columns.to_vec(),
            types,
            may_alter,
        })
    }
}

/// Refuses a table of no columns, and an index on a column `columns` does not have.
fn check_columns(table: &str, columns: &[String], indexes: &[IndexSpec]) -> Result<()> {
    if columns.is_empty() {
        return Err(Error::usage(format!(
            "no columns for the new table {}: the input has no records to name them",
            quote_ident(table)
        )));
    }
    for ix in indexes {
        for c in &ix.columns {
            if !columns.iter().any(|k| k.eq_ignore_ascii_case(c)) {
                return Err(Error::usage(format!(
                    "index column {c:?}: table {} has no such column (columns: {})",
                    quote_ident(table),
                    columns.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// Where the index runs of a file at `path` spill: its directory.
fn spill_dir_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

impl PageSink<'_> {
    /// Creates the file the tables go to (a new database beside its name, a side file
    /// as its own name), which is this sink's to remove until it is finished.
    fn create_file(&mut self) -> Result<DbWriter<SeqFile>> {
        let path = match &self.out {
            PageOut::New(db) => {
                crate::destination::refuse_existing(db)?;
                let (tmp, note) = durability::new_file_temp(db)?;
                self.notes.extend(note);
                tmp
            }
            PageOut::Side(side) | PageOut::InPlace(side, _) => side.clone(),
        };
        let db = match self.out {
            PageOut::New(_) | PageOut::InPlace(..) => DbWriter::create(&path, self.page_size),
            PageOut::Side(_) => DbWriter::create_buffered(&path, self.page_size),
        }
        .map_err(|e| from_btree(e, Some(&path)))?;
        self.writing = Some(path);
        Ok(db)
    }

    /// Begins the load in place into the existing database `db`: takes SQLite's
    /// EXCLUSIVE lock, finds the table as the plan did (a name free in the file, a table
    /// without index or constraint whose columns the input has in order, or an empty
    /// table made beforehand with constraints SQLite need not evaluate; else it changed
    /// since the plan read it, and nothing is written), checks that the file can be
    /// extended, journals the pages the change may write in place, and starts the table's
    /// writer past the file's end: a new table, or rows after the table's last.
    fn begin_in_place(&mut self, db: &Path, sampled: &SampledTable<'_>) -> Result<TableStart> {
        let (table, columns) = (sampled.table, sampled.columns);
        check_columns(table, columns, &self.indexes)?;
        let (mut writer, target) = self.open_in_place_for(db, sampled)?;
        let spill_dir = spill_dir_of(db);
        let (name, cols, create, detached, rows, indexes, fill) = match target {
            Some(Appending {
                name,
                cols,
                edge,
                exact,
            }) => {
                let first = edge.max_rowid() + 1;
                self.appended_after = Some(edge.max_rowid());
                let detached = writer.append_to(edge).detach();
                let (indexes, fill) = match exact {
                    Some((table, roots, primary)) => {
                        let specs: Vec<IndexSpec> = table
                            .indexes
                            .iter()
                            .map(|ix| IndexSpec::new(ix.columns.iter().cloned(), ix.unique))
                            .collect();
                        let checks = if table.checks {
                            Some(row_rules::Checks::new(&table.create, &name, cols.len())?)
                        } else {
                            None
                        };
                        self.exact = Some(ExactInPlace {
                            checks,
                            name: name.clone(),
                            rules: RowRules {
                                not_null: table.not_null.clone(),
                                strict: table.strict.then(|| cols.iter().map(|c| c.1).collect()),
                            },
                            table,
                            primary,
                            source: sampled.name.into(),
                            origins: Origins::new(sampled.name.into()),
                            broken: None,
                            repeated: None,
                        });
                        self.merged = roots.iter().filter(|r| !r.is_empty()).count();
                        (specs, roots)
                    }
                    None => (vec![], vec![]),
                };
                let rows = self.rows_for(&indexes, columns, None, &spill_dir, first);
                (name, cols, String::new(), detached, rows, indexes, fill)
            }
            None => {
                crate::schema::check_new_table(table, columns.iter().map(String::as_str))?;
                let cols: Vec<(String, ColumnType)> = columns
                    .iter()
                    .cloned()
                    .zip(sampled.types.iter().copied())
                    .collect();
                let create = table::create_sql(table, &cols, &[]);
                let detached = writer.table(table, &create).detach();
                let indexes = self.indexes.clone();
                let mut rows = self.rows_for(&indexes, columns, None, &spill_dir, 1);
                if sampled.grows {
                    rows = rows.growing(table, cols.clone(), vec![], Default::default());
                }
                (
                    table.to_string(),
                    cols,
                    create,
                    detached,
                    rows,
                    indexes,
                    vec![],
                )
            }
        };
        let types: Vec<ColumnType> = cols.iter().map(|(_, t)| *t).collect();
        let may_alter = sampled.grows && self.appended_after.is_none();
        Ok(self.building(
            Building {
                db: writer,
                table: Some(detached),
                name,
                cols,
                create,
                rows,
                spill_dir,
                indexes,
                fill,
            },
            columns,
            types,
            may_alter,
        ))
    }

    /// [`PageSink::open_in_place`] for the one table of `sampled`: `None` when it is new,
    /// else the table rows are added to.
    fn open_in_place_for(
        &mut self,
        db: &Path,
        sampled: &SampledTable<'_>,
    ) -> Result<(DbWriter<SeqFile>, Option<Appending>)> {
        let mut target = None;
        let writer = self.open_in_place(db, Some((sampled, &mut target)))?;
        Ok((writer, target))
    }

    /// Takes SQLite's EXCLUSIVE lock on the existing database `db`, finds the tables as
    /// the plan did (the one of `one`: a name free in the file, or a table rows are added
    /// to, put in its second half; without `one`, every table of the shapes a name free
    /// there), else they changed since the plan read them and nothing is written; checks
    /// that the file can be extended, journals the pages the change may write in place,
    /// and returns the writer of pages past the file's end.
    fn open_in_place(
        &mut self,
        db: &Path,
        one: Option<(&SampledTable<'_>, &mut Option<Appending>)>,
    ) -> Result<DbWriter<SeqFile>> {
        let opening = |e| Error::sqlite(format!("opening {}", db.display()), e);
        let locking = |e| Error::sqlite(format!("locking {}", db.display()), e);
        // A file in WAL mode: this connection must be its only one (see
        // `sqlite_info::open_exclusive`), whose first read takes the EXCLUSIVE lock;
        // then everything in the WAL goes into the file, and the WAL is emptied.
        let exclusive = crate::sqlite_info::header_in_wal_mode(db)
            .map_err(|e| Error::io(Some(db.to_path_buf()), e))?;
        let conn = if exclusive {
            crate::sqlite_info::open_exclusive(db)
        } else {
            rusqlite::Connection::open(db)
                .and_then(|c| crate::sqlite_info::configure(&c).map(|_| c))
        }
        .map_err(opening)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(opening)?;
        let journal_mode = |conn: &rusqlite::Connection| -> Result<bool> {
            conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
                .map(|m| m.eq_ignore_ascii_case("wal"))
                .map_err(locking)
        };
        if exclusive {
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
                .map_err(locking)?;
            if journal_mode(&conn)? {
                conn.execute_batch("PRAGMA synchronous=FULL")
                    .map_err(locking)?;
                let (busy, left): (i64, i64) = conn
                    .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .map_err(locking)?;
                if busy != 0 || left != 0 {
                    return Err(Error::internal(format!(
                        "{}: the WAL was not emptied under the exclusive lock",
                        db.display()
                    )));
                }
            }
        }
        // The lock, and a read: a hot journal left by a crash is played back now, and
        // the file is read below only as SQLite has it.
        conn.execute_batch("BEGIN EXCLUSIVE; SELECT count(*) FROM sqlite_schema;")
            .map_err(locking)?;
        let wal = journal_mode(&conn)?;
        if wal && !exclusive {
            // Put in WAL mode by another connection after its header was read: this
            // connection's lock does not keep that one's readers out.
            return Err(Error::schema(format!(
                "{} was put in WAL mode after the load was planned; nothing was written: run \
                 the load again",
                db.display()
            )));
        }
        let locked = Locked {
            conn,
            wal,
            exclusive,
        };
        let conn = &locked.conn;
        let mut names = Names::of(conn)?;
        let Some((sampled, target)) = one else {
            for s in &self.shapes {
                if !names.claim(&s.table) {
                    return Err(crate::destination::changed_since_planned(&s.table));
                }
            }
            self.names = names;
            return self.journal_in_place(db, locked, None).map(|(w, _)| w);
        };
        let table = sampled.table;
        let changed = || crate::destination::changed_since_planned(table);
        let dest = crate::destination::destination(conn, table, self.if_exists)?;
        let root_of = |name: &str| -> Result<u32> {
            conn.query_row(
                "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .map_err(|e| Error::sqlite(format!("reading {}", quote_ident(name)), e))
        };
        // The table's name, columns and root page when rows are added to it, and for a
        // table made beforehand its definition, index roots and which is the key's.
        let appending = match dest {
            Some(Destination::New) if names.claim(table) => None,
            Some(
                ref d @ Destination::Plain {
                    ref name,
                    ref columns,
                    ref indexes,
                    ref index_names,
                    merged,
                },
            ) if self.indexes.is_empty()
                && in_place_takes(d, sampled.columns, sampled.grows, false) =>
            {
                // With indexes: each is written into its root, as a table made with
                // constraints is, with no rule to check; its entries are the new rows'
                // alone when it is empty, else merged with the ones it has.
                let fill = if indexes.is_empty() {
                    None
                } else {
                    let table = ExactTable {
                        create: String::new(),
                        indexes: index_names
                            .iter()
                            .zip(indexes)
                            .map(|(n, cols)| ExactIndex {
                                name: n.clone(),
                                sql: None,
                                columns: cols.clone(),
                                unique: false,
                            })
                            .collect(),
                        not_null: vec![false; columns.len()],
                        strict: false,
                        checks: false,
                    };
                    let roots = index_names
                        .iter()
                        .map(|n| root_of(n))
                        .collect::<Result<Vec<u32>>>()?;
                    Some((table, roots, vec![false; indexes.len()]))
                };
                Some((name.clone(), columns.clone(), root_of(name)?, fill, merged))
            }
            Some(
                ref d @ Destination::Exact {
                    ref name,
                    ref columns,
                    ref table,
                },
            ) if self.indexes.is_empty()
                && side_file_takes(d, sampled.columns, sampled.grows, false) =>
            {
                let primary = primary_indexes(conn, name, table)?;
                let roots = table
                    .indexes
                    .iter()
                    .map(|ix| root_of(&ix.name))
                    .collect::<Result<Vec<u32>>>()?;
                Some((
                    name.clone(),
                    columns.clone(),
                    root_of(name)?,
                    Some((table.clone(), roots, primary)),
                    false,
                ))
            }
            _ => return Err(changed()),
        };
        self.names = names;
        let (writer, found) = self.journal_in_place(
            db,
            locked,
            appending.as_ref().map(|(n, _, root, exact, merged)| {
                let index_roots = exact.as_ref().map_or(&[][..], |e| e.1.as_slice());
                (n.as_str(), *root, index_roots, *merged)
            }),
        )?;
        *target = appending
            .zip(found)
            .map(|((name, cols, _, exact, _), (edge, fill))| Appending {
                name,
                cols,
                edge,
                exact: exact.map(|(table, _, primary)| (table, fill, primary)),
            });
        Ok(writer)
    }

    /// The file part of [`PageSink::open_in_place`], `conn` holding the lock: the file
    /// read and checked, the right edge of `append`'s table (name, root page) and the
    /// roots of the existing indexes to fill read (empty ones, or with `merged` ones
    /// whose entries are merged with the new), the journal written, and the writer
    /// started past the end.
    #[allow(clippy::type_complexity)]
    fn journal_in_place(
        &mut self,
        db: &Path,
        locked: Locked,
        append: Option<(&str, u32, &[u32], bool)>,
    ) -> Result<(DbWriter<SeqFile>, Option<(TableEdge, Vec<IndexRoot>)>)> {
        let changed = || {
            crate::destination::changed_since_planned(append.map_or_else(
                || self.shapes.first().map_or("", |s| s.table.as_str()),
                |a| a.0,
            ))
        };
        // What a killed run of another road left beside the file, as those roads clear it.
        for stale in [durability::temp_path(db), super::target::side_path(db)] {
            self.notes.extend(durability::clear_stale(&stale)?);
        }
        let io = |e| Error::io(Some(db.to_path_buf()), e);
        let mut files = DiskFiles::open(db).map_err(io)?;
        let not_extensible = |e| match e {
            liteload_btree::Error::NotExtensible(_) => changed(),
            e => from_btree(e, Some(db)),
        };
        let mut base = if locked.wal {
            // Checkpointed and emptied under the lock (see `open_in_place`).
            Existing::read_checkpointed(files.db())
        } else {
            Existing::read(files.db())
        }
        .map_err(not_extensible)?;
        let found = match append {
            Some((_, root, index_roots, merged)) => {
                let edge = base.table_edge(files.db(), root).map_err(not_extensible)?;
                let fill = index_roots
                    .iter()
                    .map(|&r| {
                        if merged {
                            base.index_root(files.db(), r)
                        } else {
                            base.empty_index(files.db(), r)
                        }
                        .map_err(not_extensible)
                    })
                    .collect::<Result<Vec<_>>>()?;
                Some((edge, fill))
            }
            None => None,
        };
        let offset = u64::from(base.pages()) * u64::from(base.page_size());
        self.page_size = base.page_size();
        self.in_place = Some(InPlace {
            conn: locked.conn,
            exclusive: locked.exclusive,
            wal: locked.wal,
            files,
            base: base.clone(),
            journaled: true,
            out: None,
        });
        let ip = self.in_place.as_mut().expect("set above");
        journal::begin(&mut ip.files, &ip.base, journal::nonce()).map_err(io)?;
        let out = SeqFile::extend(db, offset).map_err(io)?;
        self.writing = Some(db.to_path_buf());
        Ok((DbWriter::extend(out, base), found))
    }

    /// Links the finished table into the database extended in place and commits: the
    /// new pages and the pages changed in place written and synced, then the journal
    /// removed; then the lock released, the schema read back and (with `verify`) the
    /// file checked by SQLite.
    fn commit_in_place(&mut self, db: DbWriter<SeqFile>, summary: &mut Summary) -> Result<()> {
        let path = self.writing.clone().expect("a table begun has its file");
        let (out, changed) = db
            .finish_in_place()
            .map_err(|e| from_btree(e, Some(&path)))?;
        let ip = self.in_place.as_mut().expect("checked by the caller");
        ip.out = Some(out);
        if let Some(refused) = self.exact.as_mut().and_then(ExactInPlace::refusal) {
            // Rolled back when the sink drops, its descriptors still open.
            return Err(refused);
        }
        if !self.by_sqlite.is_empty() {
            // Never so here (index entries spill to disk): SQLite's statements could not
            // be part of the change.
            return Err(Error::internal(
                "an index left to SQLite in a load in place",
            ));
        }
        self.progress.check()?;
        self.progress.set_stage(Stage::Committing);
        let io = |e| Error::io(Some(path.clone()), e);
        journal::commit(&mut ip.files, ip.base.page_size(), &changed).map_err(io)?;
        ip.journaled = false;
        // Committed: from here on nothing of the file is this sink's to undo or remove.
        let ip = self.in_place.take().expect("checked by the caller");
        self.writing = None;
        // Committed: the descriptors close, then the lock is released (see `InPlace`).
        let InPlace {
            conn,
            files,
            out,
            exclusive,
            wal,
            ..
        } = ip;
        drop((files, out));
        conn.execute_batch("COMMIT")
            .map_err(|e| Error::sqlite("ending the lock", e))?;
        let conn = if exclusive {
            // Its cache predates the change: read through a new connection.
            drop(conn);
            let opening = |e| Error::sqlite(format!("opening {}", path.display()), e);
            let c = rusqlite::Connection::open(&path).map_err(opening)?;
            crate::sqlite_info::configure(&c).map_err(opening)?;
            c.busy_timeout(std::time::Duration::from_secs(5))
                .map_err(opening)?;
            c
        } else {
            conn
        };
        if wal {
            self.notes.push(
                "the file is in WAL mode and no other connection had it open: its WAL was \
                 checkpointed under the load's lock, and the file stays in WAL mode"
                    .into(),
            );
        }
        crate::names::check_schema(&conn)?;
        if self.verify {
            let ok: String = conn
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .map_err(|e| Error::sqlite("running integrity_check", e))?;
            if ok != "ok" {
                return Err(Error::internal(format!(
                    "verifying: SQLite's integrity_check found problems in the extended file: {ok}"
                )));
            }
        }
        // As every road leaves the file under these profiles.
        if let PageOut::InPlace(_, Durability::Balanced | Durability::Durable) = self.out {
            summary.notes.extend(durability::switch_to_wal(&conn));
        }
        summary.rows_per_statement = 0;
        summary.engine = Some(EngineUsed::Direct);
        summary.verified = self.verify;
        summary.notes.push(match self.appended_after {
            Some(after) if self.merged > 0 => format!(
                "written in place: the rows in new pages past the file's end after rowid \
                 {after}, the table's {} index(es) merged with the new entries into new \
                 pages from their root pages (their old pages freed); {} page(s) and the \
                 header changed under a rollback journal",
                self.merged,
                changed.len()
            ),
            Some(_) if self.exact.is_some() => format!(
                "written in place: the rows in new pages past the file's end, the table made \
                 beforehand and its {} index(es) filled from their root pages; {} page(s) and \
                 the header changed under a rollback journal",
                self.exact.as_ref().map_or(0, |x| x.table.indexes.len()),
                changed.len()
            ),
            Some(after) => format!(
                "written in place: the rows in new pages past the file's end after rowid \
                 {after}, {} page(s) of the table's right edge and the header changed under a \
                 rollback journal",
                changed.len()
            ),
            None => format!(
                "written in place: the new pages past the file's end, {} page(s) of the \
                 schema and the header changed under a rollback journal",
                changed.len()
            ),
        });
        self.writing = None;
        summary.notes.append(&mut self.notes);
        Ok(())
    }

    /// What turns a table's batches (of `columns`) into its rows, gathering the entries
    /// of `indexes`; with `rowid`, that column's values are the rowids, else they count
    /// from `first_rowid`.
    fn rows_for(
        &self,
        indexes: &[IndexSpec],
        columns: &[String],
        rowid: Option<usize>,
        spill_dir: &Path,
        first_rowid: i64,
    ) -> Rows {
        let position = |c: &String| {
            columns
                .iter()
                .position(|k| k.eq_ignore_ascii_case(c))
                .expect("index columns were checked")
        };
        let gather: Vec<IndexEntries> = indexes
            .iter()
            .map(|ix| IndexEntries::new(ix.columns.iter().map(position).collect()))
            .collect();
        let mut rows = Rows::new(first_rowid, (0..columns.len()).map(Some).collect()).with_indexes(
            gather,
            self.index_memory,
            Some(spill_dir.to_path_buf()),
        );
        rows.rowid_column = rowid;
        rows
    }
}

/// What [`write_indexes`] did beyond the pages.
#[derive(Default)]
struct IndexesWritten {
    /// The CREATE INDEX of those whose entries were given up, for SQLite to build on the
    /// finished file.
    by_sqlite: Vec<String>,
    /// Whether a UNIQUE index of a given schema met a key twice.
    duplicates: bool,
    /// Filling existing indexes: the smallest rowid whose key an earlier row has under
    /// a UNIQUE index, and that index's position.
    first_repeat: Option<(i64, usize)>,
}

/// Writes the indexes of table `b` whose entries were gathered, named as `given` says
/// where it is set, else by `names`, or each into its existing root where `b.fill` has
/// them (see [`IndexesWritten`]; an existing index with entries gets them merged with
/// the new ones, read from `file`, the file extended in place). A UNIQUE index that meets
/// a key twice is an error unless `given` is set or the indexes are filled (then it is
/// reported).
fn write_indexes(
    b: &mut Building,
    indexes: &[IndexSpec],
    given: Option<&[(String, Option<String>)]>,
    names: &mut Names,
    progress: &Progress,
    file: Option<&std::fs::File>,
) -> Result<IndexesWritten> {
    progress.set_stage(Stage::Indexing);
    let gathered = std::mem::take(&mut b.rows.indexes);
    let (w, table_name, spill_dir) = (&mut b.db, &b.name, &b.spill_dir);
    let mut by_sqlite = vec![];
    let mut duplicates = false;
    let mut first_repeat: Option<(i64, usize)> = None;
    let filling = !b.fill.is_empty();
    let mut repeat_at = |rowid: Option<i64>, i: usize| {
        if let Some(r) = rowid {
            if first_repeat.is_none_or(|(f, _)| r < f) {
                first_repeat = Some((r, i));
            }
        }
    };
    for (i, (ix, mut entries)) in indexes.iter().zip(gathered).enumerate() {
        progress.check()?;
        if let Some(root) = b.fill.get(i) {
            w.fill_index(root.clone())
                .map_err(|e| Error::internal(format!("writing the index: {e}")))?;
        }
        let (name, sql) = match given.and_then(|g| g.get(i)) {
            Some((name, sql)) => (name.clone(), sql.clone().unwrap_or_default()),
            None => {
                let name = names.allocate(&ix.wanted_name(table_name));
                let sql = ix.create_sql(table_name, &name);
                (name, sql)
            }
        };
        if let Some(root) = b.fill.get(i).filter(|r| !r.is_empty()) {
            let file = file.ok_or_else(|| Error::internal("an index merged without its file"))?;
            if ix.unique {
                // A repeated key across the old entries and the new is not looked for.
                return Err(Error::internal("a UNIQUE index merged in place"));
            }
            merge_index(w, root, file, &mut entries, spill_dir, progress)?;
            continue;
        }
        let tolerate = given.is_some() || filling;
        let unique_error = || {
            Error::constraint(
                Some(crate::error::UNIQUE),
                None,
                format!(
                    "the index on {} ({}): two rows have the same key (UNIQUE constraint failed)",
                    quote_ident(table_name),
                    ix.columns.join(", ")
                ),
            )
        };
        if entries.spilled() {
            // Runs on disk, merged into the page writer one entry at a time.
            let keys = ix.columns.len();
            let mut builder = w.index_builder(&name, table_name, &sql);
            let mut last: Option<Vec<u8>> = None;
            let mut merged = 0u64;
            entries.merge(spill_dir, |rec| {
                merged += 1;
                if merged.is_multiple_of(1 << 20) {
                    // A long merge stays cancellable.
                    progress.check()?;
                }
                if ix.unique && (filling || !duplicates) {
                    if last
                        .as_deref()
                        .is_some_and(|l| liteload_btree::index::same_key(l, rec, keys))
                    {
                        if !tolerate {
                            return Err(unique_error());
                        }
                        duplicates = true;
                        if filling {
                            repeat_at(entries::entry_rowid(rec, keys), i);
                        }
                    }
                    last = Some(rec.to_vec());
                }
                builder
                    .push(rec)
                    .map_err(|e| Error::internal(format!("writing the index: {e}")))
            })?;
            builder
                .finish()
                .map_err(|e| Error::internal(format!("writing the index: {e}")))?;
            continue;
        }
        let sorted = match entries.sorted() {
            Some(sorted) => sorted,
            None if tolerate => {
                return Err(Error::internal(
                    "a side file's index entries were given up (they spill to disk)",
                ))
            }
            None => {
                by_sqlite.push(sql);
                continue;
            }
        };
        if ix.unique && sorted.has_equal_keys(ix.columns.len()) {
            if !tolerate {
                return Err(unique_error());
            }
            duplicates = true;
            if filling {
                repeat_at(sorted.first_repeat(ix.columns.len()), i);
            }
        }
        match &sorted {
            SortedEntries::IntPairs(pairs) => w.index_int_pairs(&name, table_name, &sql, pairs),
            SortedEntries::Records(records) => w.index(&name, table_name, &sql, records),
        }
        .map_err(|e| Error::internal(format!("writing the index: {e}")))?;
    }
    Ok(IndexesWritten {
        by_sqlite,
        duplicates,
        first_repeat,
    })
}

/// Writes the existing index whose root is `root` (filling it: [`DbWriter::fill_index`]
/// was called) as its entries, read from `file` in order, merged with the new rows'
/// `entries` (every rowid of which is larger than the old ones', so no two are equal),
/// and gives its old pages to the freelist. An old index that is not what SQLite writes
/// fails the load, which is then rolled back.
fn merge_index(
    w: &mut DbWriter<SeqFile>,
    root: &IndexRoot,
    file: &std::fs::File,
    entries: &mut IndexEntries,
    spill_dir: &Path,
    progress: &Progress,
) -> Result<()> {
    let writing = |e| Error::internal(format!("writing the index: {e}"));
    let reading = |e: liteload_btree::Error| match e {
        liteload_btree::Error::Io(io) => Error::io(None, io),
        e => Error::schema(format!("reading an index of the table to merge it: {e}")),
    };
    let mut old = root.entries(file);
    let mut builder = w.index_builder("", "", "");
    // The next old entry, copied out of the reader (`None` at its end).
    let mut next: Option<Vec<u8>> = old.next_entry().map_err(reading)?.map(<[u8]>::to_vec);
    let mut merged = 0u64;
    let mut push = |rec: &[u8]| -> Result<()> {
        while let Some(o) = next.as_mut() {
            if liteload_btree::index::compare(o, rec).is_gt() {
                break;
            }
            builder.push(o).map_err(writing)?;
            match old.next_entry().map_err(reading)? {
                Some(e) => {
                    o.clear();
                    o.extend_from_slice(e);
                }
                None => next = None,
            }
            merged += 1;
            if merged.is_multiple_of(1 << 20) {
                // A long merge stays cancellable.
                progress.check()?;
            }
        }
        builder.push(rec).map_err(writing)
    };
    if entries.spilled() {
        entries.merge(spill_dir, &mut push)?;
    } else {
        match entries.sorted() {
            Some(sorted) => sorted.each_record(&mut push)?,
            None => {
                return Err(Error::internal(
                    "a merged index's entries were given up (they spill to disk)",
                ))
            }
        }
    }
    // The old entries after the new ones' last (`push`, which borrowed them, is done).
    if let Some(o) = next {
        builder.push(&o).map_err(writing)?;
        while let Some(e) = old.next_entry().map_err(reading)? {
            builder.push(e).map_err(writing)?;
        }
    }
    builder.finish().map_err(writing)?;
    let freed = old.finish().map_err(reading)?;
    w.free(freed).map_err(writing)
}

/// A table that gains columns as its rows arrive: its `CREATE TABLE` is made again from
/// these, its key and reference kept.
struct Growth {
    name: String,
    columns: Vec<(String, ColumnType)>,
    pk: Vec<String>,
    constraints: crate::table::Constraints,
}

/// What turns batches into a table's rows for the page writer: row `i` of the load gets
/// rowid `first_rowid + i`, and its index entries are gathered as it goes.
struct Rows {
    next_rowid: i64,
    /// The batch column whose values are the rowids (an INTEGER PRIMARY KEY, stored as
    /// NULL in the record), or `None` for rowids counted from `next_rowid`.
    rowid_column: Option<usize>,
    /// For each table column: the batch column it comes from, or `None` for the rowid
    /// alias. The batch columns appear in order: 0, 1, 2, …
    layout: Vec<Option<usize>>,
    /// Entries of the indexes to write after the table.
    indexes: Vec<IndexEntries>,
    /// The most bytes of index entries kept in memory (all indexes together).
    index_memory: usize,
    /// Where sorted runs of index entries go past `index_memory`; without it the
    /// entries are given up instead.
    spill_dir: Option<PathBuf>,
    record: RecordBuilder,
    /// For a table that may gain columns as the rows arrive (JSON keys first seen after
    /// the sample): its name and columns so far (see [`Rows::growing`]).
    growth: Option<Growth>,
}

impl Rows {
    /// Rows from rowid `first_rowid` on; `layout` gives, for each table column, the
    /// batch column it comes from (in order) or `None` for NULL.
    fn new(first_rowid: i64, layout: Vec<Option<usize>>) -> Self {
        assert!(
            layout
                .iter()
                .flatten()
                .copied()
                .eq(0..layout.iter().flatten().count()),
            "the layout takes every batch column once, in order"
        );
        Rows {
            next_rowid: first_rowid,
            rowid_column: None,
            layout,
            indexes: vec![],
            index_memory: usize::MAX,
            spill_dir: None,
            record: RecordBuilder::new(),
            growth: None,
        }
    }

    /// Lets the table `name`, whose columns are `columns` (the layout's, in order),
    /// gain columns at its end (see [`BatchSink::add_columns`]): rows written before hold
    /// fewer columns, which SQLite reads as NULL, as after `ALTER TABLE ... ADD COLUMN`.
    /// The table's text is rewritten to name them all.
    fn growing(
        mut self,
        name: &str,
        columns: Vec<(String, ColumnType)>,
        pk: Vec<String>,
        constraints: crate::table::Constraints,
    ) -> Self {
        debug_assert_eq!(columns.len(), self.layout.len());
        self.growth = Some(Growth {
            name: name.to_string(),
            columns,
            pk,
            constraints,
        });
        self
    }

    /// The table's columns, those it gained included (`None` unless [`Rows::growing`]).
    fn columns(&self) -> Option<&[(String, ColumnType)]> {
        self.growth.as_ref().map(|g| g.columns.as_slice())
    }

    /// Also gathers the entries of these indexes (see [`Rows::into_indexes`]).
    /// Past `memory` bytes in all (see [`IndexEntries::bytes`]) they are spilled to
    /// sorted runs in `spill_dir` (see [`IndexEntries::merge`]), or without one given up
    /// (see [`IndexEntries::given_up`]).
    fn with_indexes(
        mut self,
        indexes: Vec<IndexEntries>,
        memory: usize,
        spill_dir: Option<PathBuf>,
    ) -> Self {
        self.indexes = indexes;
        self.index_memory = memory;
        self.spill_dir = spill_dir;
        self
    }

    /// Spills (or gives up) every index's entries once they hold more than the memory
    /// allowed.
    fn check_index_memory(&mut self) -> Result<()> {
        let held: usize = self.indexes.iter().map(IndexEntries::bytes).sum();
        if held <= self.index_memory {
            return Ok(());
        }
        for ix in &mut self.indexes {
            match &self.spill_dir {
                Some(dir) if !ix.given_up => ix.spill(dir)?,
                _ => ix.give_up(),
            }
        }
        Ok(())
    }
}

impl Rows {
    /// Writes `batch`'s rows into `table`.
    fn write(&mut self, table: &mut TableWriter<'_, SeqFile>, batch: &Batch) -> Result<u64> {
        let indexing = self.indexes.iter().any(|ix| !ix.given_up);
        if let Some(records) = batch.records() {
            // Rows the source encoded already, in column order (a load's layout takes
            // every batch column in order): the index keys are read back from them.
            debug_assert!(self.layout.iter().all(Option::is_some));
            // (A table keyed by a column takes records only where each row's key is its
            // number: see `wants_numbered_records`. Its record holds NULL there.)
            let mut key: Vec<Cell<'_>> = vec![];
            for record in records.iter() {
                table
                    .push_record(self.next_rowid, record)
                    .map_err(|e| from_btree(e, None))?;
                for ix in self.indexes.iter_mut().filter(|ix| !ix.given_up) {
                    key.clear();
                    key.extend(
                        ix.columns
                            .iter()
                            .map(|&c| match Some(c) == self.rowid_column {
                                true => Cell::Integer(self.next_rowid),
                                false => record.column(c).unwrap_or(Cell::Null),
                            }),
                    );
                    ix.push(&key, self.next_rowid);
                }
                self.next_rowid += 1;
            }
            self.check_index_memory()?;
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
                let value = from.and_then(|_| row.next());
                if *from == self.rowid_column && from.is_some() {
                    match value {
                        Some(Value::Integer(i)) => self.next_rowid = i,
                        _ => {
                            return Err(Error::internal(
                                "an INTEGER PRIMARY KEY value that is not an integer",
                            ))
                        }
                    }
                    record.value(&Cell::Null);
                    if indexing {
                        cells.push(Cell::Integer(self.next_rowid));
                    }
                    continue;
                }
                let cell = match value {
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
            table
                .push_built(self.next_rowid, record)
                .map_err(|e| from_btree(e, None))?;
            for ix in self.indexes.iter_mut().filter(|ix| !ix.given_up) {
                let n = ix.columns.len();
                if n <= 8 {
                    let mut key = [Cell::Null; 8];
                    for (k, &c) in key.iter_mut().zip(&ix.columns) {
                        *k = cells[c];
                    }
                    ix.push(&key[..n], self.next_rowid);
                } else {
                    let key: Vec<Cell<'_>> = ix.columns.iter().map(|&c| cells[c]).collect();
                    ix.push(&key, self.next_rowid);
                }
            }
            // A keyed table's next rowid is its next row's key (this one may be i64::MAX).
            if self.rowid_column.is_none() {
                self.next_rowid += 1;
            }
        }
        self.check_index_memory()?;
        Ok(batch.rows() as u64)
    }

    /// Adds `columns` at the table's end (see [`Rows::growing`]).
    fn add_columns(
        &mut self,
        table: &mut TableWriter<'_, SeqFile>,
        columns: &[(String, ColumnType)],
    ) -> Result<()> {
        let Some(Growth {
            name,
            columns: cols,
            pk,
            constraints,
        }) = &mut self.growth
        else {
            return Err(
                Error::usage("the direct engine writes a fixed set of columns")
                    .with_hint(Hint::SqliteEngine),
            );
        };
        if cols.len() + columns.len() > crate::schema::MAX_COLUMNS {
            return Err(Error::schema(format!(
                "table {} would have {} columns, more than SQLite's limit of {}",
                crate::schema::quote_ident(name),
                cols.len() + columns.len(),
                crate::schema::MAX_COLUMNS
            )));
        }
        cols.extend_from_slice(columns);
        crate::schema::check_new_table(name, cols.iter().map(|(c, _)| c.as_str()))?;
        // The batch columns stay in table order: the new ones come last in both.
        let first = self.layout.iter().flatten().count();
        self.layout.extend((first..first + columns.len()).map(Some));
        table.set_sql(&crate::table::create_sql_referencing(
            name,
            cols,
            pk,
            constraints,
        ));
        Ok(())
    }
}
